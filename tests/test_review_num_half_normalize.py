"""Adversarial review: l2_normalize of half-precision tensors. Its squared sum was taken
in float16, where squares of ordinary values leave the format: [300, 400] (squares
250000 > 65504) normalized to [0, 0], [1e-4, 0, 0] (square 1e-8, below the smallest
subnormal) to [inf, nan, nan], and zeros to NaN (epsilon 1e-12 is 0 in float16), although
every answer is representable. The module's rule for half precision (moments, layer and
batch norm) is TensorFlow's: reduce in float32 and round the result back."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tensorweave as tw
from tests.helpers import TARGETS

HALF = [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)]
CASES = {
    "overflowing squares": [[300.0, 400.0, 0.0], [-6e4, 0.0, 6e4]],
    "underflowing squares": [[1e-4, 0.0, 0.0], [3e-4, -4e-4, 0.0]],
    "zeros": [[0.0, 0.0, 0.0], [1.0, 2.0, 2.0]],
}


def _want(x: np.ndarray, axis) -> np.ndarray:
    x32 = x.astype(np.float32)
    norm = np.sqrt(np.maximum(np.sum(x32 * x32, axis=axis, keepdims=True), 1e-12))
    return (x32 / norm).astype(x.dtype)


@pytest.mark.parametrize("target", ["eager", *TARGETS])
@pytest.mark.parametrize("dtype", HALF, ids=str)
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("axis", [1, None])
def test_half_precision_l2_normalize_is_computed_in_float32(target, dtype, case, axis):
    x = np.array(CASES[case], np.float32).astype(dtype)
    fn = lambda t: tw.math.l2_normalize(t, axis=axis)  # noqa: E731
    got = fn(tw.constant(x)).numpy() if target == "eager" else tw.compile(fn, target=target)(x)
    got = np.asarray(got)
    assert got.dtype == dtype
    want = _want(x, axis)
    assert np.all(np.isfinite(got.astype(np.float32))), got
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2,
                               atol=1e-3)


@pytest.mark.parametrize("target", TARGETS)
def test_half_precision_l2_normalize_gradient_matches_float32(target):
    x = np.array([[300.0, 400.0, 0.0], [1e-2, -2e-2, 2e-2]], np.float32)
    w = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], np.float32)

    def loss(t):
        return tw.reduce_sum(tw.cast(tw.math.l2_normalize(t, axis=1), tw.float32) * w)

    got = tw.compile(tw.grad(loss), target=target)(x.astype(np.float16))
    want = tw.compile(tw.grad(lambda t: tw.reduce_sum(tw.math.l2_normalize(t, axis=1) * w)),
                      target=target)(x)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-2, atol=1e-3)
