"""Review of the special functions' signed zeros on every target: erfinv(-0.0) is +0.0
on the reference target and in TensorFlow 2.21 (which computes ndtri((x + 1) / 2) /
sqrt(2)); the cpu and gpu kernels gave -0.0 (copysign of the central branch's result),
alone and inside a fused cluster, at every lane position of a vector and its tail. The gpu target:
tests/gpu/sim/test_review_new2_special_signed_zero_gpu.py."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tests.helpers import TARGETS

SIZES = (1, 3, 8, 9, 17)


def _signs(fn, target, x):
    """The sign bits of fn(x) on `target`, False at NaN (a NaN's sign is not a value)."""
    with np.errstate(all="ignore"):
        y = np.asarray(tw.compile(fn, target=target)(x))
    return np.signbit(y) & ~np.isnan(y)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("n", SIZES)
def test_erfinv_of_minus_zero_is_plus_zero_on_every_target(n, dtype):
    x = np.resize(np.array([-0.0, 0.0, -0.25, 0.25, -0.75, np.nan], dtype), n)
    x[-1] = -0.0  # the last lane: the scalar tail of a vector loop
    want = _signs(tw.math.erfinv, "reference", x)
    assert not want[x == 0].any()  # TensorFlow's +0.0
    for target in TARGETS:
        np.testing.assert_array_equal(_signs(tw.math.erfinv, target, x), want, err_msg=target)
        # fused with other elementwise ops: erfinv(x) * 2 + 0 * x keeps the sign of erfinv
        np.testing.assert_array_equal(
            _signs(lambda v: tw.math.erfinv(v) * 2.0 + tw.abs(v) * 0.0, target, x), want,
            err_msg=f"{target} fused")

