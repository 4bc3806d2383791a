"""Adversarial review: the gradient of reduce_mean over 65520 or more float16 elements.
Its rule divided by the element count converted to the gradient's dtype, and 70000 has
no float16 value: building the gradient failed ("expected a value that f16 can hold, got
the Python int 70000"), although the forward mean works and the gradient, 1/70000, is a
float16 number. The division is now done in float32 for half-precision gradients."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tensorweave as tw
from tests.helpers import TARGETS


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)], ids=str)
@pytest.mark.parametrize("shape, axis", [((70000,), None), ((70000, 2), 0), ((3, 300),
                                                                            None)])
def test_half_precision_mean_gradient_over_many_elements(target, dtype, shape, axis):
    x = np.ones(shape, dtype)
    w = np.arange(1, 1 + (2 if axis == 0 else 1), dtype=np.float32)

    def loss(t):
        return tw.reduce_sum(tw.cast(tw.reduce_mean(t, axis=axis), tw.float32) * w)

    got = np.asarray(tw.compile(tw.grad(loss), target=target)(x))
    count = shape[0] if axis == 0 else int(np.prod(shape))
    want = np.broadcast_to(w / count if axis == 0 else w[0] / count, shape)
    assert got.dtype == dtype
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-2)
