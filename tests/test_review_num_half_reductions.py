"""Adversarial review: composite reductions of half-precision tensors whose float16
intermediates left the format although the result is representable.
reduce_logsumexp summed exp(x - max) in float16, so over 70000 zeros it gave inf where
log(70000) = 11.16 (log_softmax and the cross entropies of the same logits were right);
reduce_std squared deviations in float16, so std([-300, 300]) was inf, not 300. They
are now computed in float32 and rounded back, as moments and layer norm are."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tensorweave as tw
from tests.helpers import TARGETS

F16, BF16 = np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)


def _run(fn, target, x):
    if target == "eager":
        return np.asarray(fn(tw.constant(x)))
    return np.asarray(tw.compile(fn, target=target)(x))


@pytest.mark.parametrize("target", ["eager", *TARGETS])
@pytest.mark.parametrize("axis", [None, 1])
def test_float16_logsumexp_of_many_elements(target, axis):
    x = np.zeros((2, 70000), F16)
    if axis is not None:
        x[1, :5] = 3.0  # a row whose max is not 0
    got = _run(lambda t: tw.reduce_logsumexp(t, axis=axis), target, x)
    x64 = x.astype(np.float64)
    want = np.log(np.sum(np.exp(x64), axis=axis))
    assert got.dtype == F16
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-3)


@pytest.mark.parametrize("target", ["eager", *TARGETS])
@pytest.mark.parametrize("dtype", [F16, BF16], ids=str)
def test_half_precision_std_and_variance_of_large_deviations(target, dtype):
    x = np.array([[-300.0, 300.0], [250.0, -50.0]], np.float32).astype(dtype)
    x64 = x.astype(np.float64)
    std = _run(lambda t: tw.reduce_std(t, axis=1), target, x)
    var = _run(lambda t: tw.reduce_variance(t, axis=1), target, x)
    assert std.dtype == dtype and var.dtype == dtype
    np.testing.assert_allclose(std.astype(np.float64), np.std(x64, axis=1), rtol=1e-2)
    # 90000 has no float16 value: inf is its rounding; 22500 is representable
    with np.errstate(over="ignore"):
        want_var = np.var(x64, axis=1).astype(dtype).astype(np.float64)
    np.testing.assert_allclose(var.astype(np.float64), want_var, rtol=1e-2)


@pytest.mark.parametrize("target", TARGETS)
def test_float16_std_gradient_matches_float32(target):
    x = np.array([[-300.0, 300.0, 20.0]], np.float32)

    def loss(t):
        return tw.reduce_sum(tw.cast(tw.reduce_std(t, axis=1), tw.float32))

    got = tw.compile(tw.grad(loss), target=target)(x.astype(F16))
    want = tw.compile(tw.grad(lambda t: tw.reduce_sum(tw.reduce_std(t, axis=1))),
                      target=target)(x)
    assert got.dtype == F16
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-2, atol=1e-4)
