"""The cpu target's float32 tanh (`elementwise.tanh_f32`): a rational approximation with
a stated error bound, exact at the special values, and consistent with its gradient."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tensorweave.targets.cpu import elementwise, jit
from tests.helpers import check_gradients


def _max_ulp() -> float:
    """The bound for this host: the evaluation's FMAs round once where a host without FMA
    rounds the product and the sum (over every float32: 4.93 and 6.03 ulp)."""
    has_fma = "+fma" in jit.host_info().features.split(",")
    return elementwise.TANHF_MAX_ULP if has_fma else elementwise.TANHF_MAX_ULP_NO_FMA


def _ulp_error(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """|y - tanh(x)| in units of the float32 spacing at float64 tanh(x)."""
    want = np.tanh(x.astype(np.float64))
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return np.abs(y.astype(np.float64) - want) / ulp


def _dense_sample() -> np.ndarray:
    """Every 997th positive float32 up to 12, both signs, and dense runs around the
    clamp (9.02), where float32 tanh starts to round to 1 (9.0109), and 0.5, and
    normal values times 30."""
    lo, hi = np.float32(1e-45).view(np.int32), np.float32(12.0).view(np.int32)
    grid = np.arange(lo, hi, 997, dtype=np.int32).view(np.float32)
    near = np.concatenate([np.float32(v) + np.arange(-300, 300, dtype=np.float32)
                           * np.spacing(np.float32(v)) for v in (0.5, 9.0109, 9.02)])
    wide = np.abs(np.random.default_rng(11).standard_normal(4096).astype(np.float32) * 30)
    x = np.concatenate([grid, near, wide])
    return np.concatenate([x, -x])


def test_float32_tanh_within_the_stated_bound():
    x = _dense_sample()
    y = tw.compile(tw.tanh, target="cpu")(x)
    assert y.dtype == np.float32
    err = _ulp_error(x, y)
    assert err.max() <= _max_ulp(), (err.max(), x[err.argmax()])
    # (not a loose bound everywhere: most results are correctly rounded or 1 ulp off)
    assert np.mean(err <= 1.0) > 0.9
    assert (np.abs(y) <= 1.0).all()


def test_float32_tanh_is_odd_bit_for_bit():
    x = _dense_sample()
    x = x[x > 0]
    f = tw.compile(tw.tanh, target="cpu")
    assert f(-x).tobytes() == (-f(x)).tobytes()


def test_float32_tanh_special_values():
    f = tw.compile(tw.tanh, target="cpu")
    big = np.array([9.02, 9.1, 10.0, 88.0, 1e20, 3.4e38, np.inf], np.float32)
    assert (f(big) == 1.0).all() and (f(-big) == -1.0).all()
    y = f(np.array([0.0, -0.0, np.nan, -np.nan], np.float32))
    assert y[0] == 0 and not np.signbit(y[0]) and y[1] == 0 and np.signbit(y[1])
    assert np.isnan(y[2:]).all()
    # tanh(x) rounds to x below |x| = 2.9e-4: tiny inputs and denormals come back exactly
    tiny = np.array([1e-45, 1e-40, 1.2e-38, 1e-20, 1e-8, 2.0 ** -13, 1e-4], np.float32)
    assert f(tiny).tobytes() == tiny.tobytes()
    assert f(-tiny).tobytes() == (-tiny).tobytes()


@pytest.mark.parametrize("n", [1, 3, 7, 8, 9, 17, 33])
def test_float32_tanh_same_bits_in_the_vector_loop_and_the_remainder(n):
    """The loop's vector body and its scalar remainder evaluate the same expression."""
    x = np.linspace(-9.5, 9.5, 64 + n).astype(np.float32)
    f = tw.compile(tw.tanh, target="cpu")
    whole = f(x)
    one_by_one = np.concatenate([f(x[i:i + 1]) for i in range(len(x))])
    assert whole.tobytes() == one_by_one.tobytes()


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float32, st.integers(0, 40),
                  elements=st.floats(width=32, allow_nan=True, allow_infinity=True)))
def test_float32_tanh_against_the_reference_target(x):
    got = tw.compile(tw.tanh, target="cpu")(x)
    want = tw.compile(tw.tanh, target="reference")(x)
    assert got.dtype == want.dtype == np.float32 and got.shape == want.shape
    nan = np.isnan(x)
    assert (np.isnan(got) == nan).all() and (np.isnan(want) == nan).all()
    # the reference is NumPy's float32 tanh (within 1 ulp); ours within the bound of
    # float64 tanh, so the two are within the bound plus 1 ulp of each other
    assert _ulp_error(x[~nan], got[~nan]).max(initial=0.0) <= _max_ulp()
    ulp = np.spacing(np.abs(want[~nan]))
    assert (np.abs(got[~nan] - want[~nan]) <= (_max_ulp() + 1) * ulp).all()
    assert (np.signbit(got[x == 0]) == np.signbit(x[x == 0])).all()


def test_float32_tanh_gradient_is_one_minus_the_square_of_the_result():
    """d tanh / dx = 1 - y**2 with the y the forward pass computed (float32), and in
    float64 (the accurate libm path) it matches central differences."""
    x = np.linspace(-4, 4, 41).astype(np.float32)

    def value_and_grad(x):
        with tw.GradientTape() as tape:
            tape.watch(x)
            y = tw.tanh(x)
        return y, tape.gradient(y, x)

    y, dy = tw.compile(value_and_grad, target="cpu")(x)
    # (1 - y * y may be one FMA: within a rounding of the exact value from this y)
    np.testing.assert_allclose(dy, 1 - y.astype(np.float64) ** 2, rtol=0, atol=2.0 ** -24)
    assert (np.abs(dy - (1 - np.tanh(x.astype(np.float64)) ** 2)) < 1e-6).all()
    check_gradients(tw.tanh, np.linspace(-4, 4, 17), target="cpu")
