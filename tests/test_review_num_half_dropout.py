"""Adversarial review: dropout of half-precision tensors dropped the wrong fraction.
The mask compared a uniform drawn in x's dtype with the rate, and a bfloat16 uniform has
7 random bits (multiples of 1/128), a float16 one 10: rate 0.001 dropped 1/128 of a
bfloat16 tensor (7.8 times the rate) and 2/1024 of a float16 one, and rate 0.1 kept
0.8984 of a bfloat16 tensor, so the expected value was off by 0.3% per layer. (TensorFlow
draws in x's dtype too.) The uniform is now drawn in float32 for float16/bfloat16 x."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tensorweave as tw
from tests.helpers import TARGETS

N = 1 << 17


@pytest.mark.parametrize("target", ["eager", *TARGETS])
@pytest.mark.parametrize("dtype", [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)], ids=str)
@pytest.mark.parametrize("rate", [0.001, 0.1, 0.3])
def test_half_precision_dropout_drops_the_rate(target, dtype, rate):
    x = np.ones(N, dtype)
    fn = lambda t: tw.nn.dropout(t, rate=rate, seed=5)  # noqa: E731
    y = np.asarray(fn(tw.constant(x)) if target == "eager" else tw.compile(fn, target=target)(x))
    assert y.dtype == dtype
    dropped = float(np.mean(y.astype(np.float32) == 0))
    # 6 binomial standard deviations (fixed seed: this either always passes or never)
    assert abs(dropped - rate) < 6 * np.sqrt(rate * (1 - rate) / N), dropped
    kept = y[y.astype(np.float32) != 0].astype(np.float64)
    # the scale 1 / (1 - rate), rounded to the dtype
    np.testing.assert_allclose(kept, float(np.asarray(1 / (1 - rate)).astype(dtype)), rtol=0)


def test_a_half_precision_rate_tensor_still_works():
    x = np.ones(N, np.float16)
    y = tw.compile(lambda t, r: tw.nn.dropout(t, rate=r, seed=5), target="reference")(
        x, np.float16(0.25))
    dropped = float(np.mean(y == 0))
    assert abs(dropped - 0.25) < 6 * np.sqrt(0.25 * 0.75 / N)
    np.testing.assert_allclose(y[y != 0].astype(np.float64), 1 / 0.75, rtol=1e-3)
