"""The cpu target's float32 erf (`elementwise.erf_f32`): a rational approximation with a
stated error bound, exact at the special values, and consistent with its gradient."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tensorweave.targets.cpu import elementwise, jit
from tests.helpers import check_gradients

_erf64 = np.vectorize(math.erf, otypes=[np.float64])


def _max_ulp() -> float:
    """The bound for this host: its FMAs round once where a host without FMA rounds the
    product and the sum (over every float32: 5.54 and 7.21 ulp)."""
    has_fma = "+fma" in jit.host_info().features.split(",")
    return elementwise.ERFF_MAX_ULP if has_fma else elementwise.ERFF_MAX_ULP_NO_FMA


def _ulp_error(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """|y - erf(x)| in units of the float32 spacing at float64 erf(x)."""
    want = _erf64(x.astype(np.float64))
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return np.abs(y.astype(np.float64) - want) / ulp


def _sample() -> np.ndarray:
    """Every 997th positive float32 below 5 (with denormals), both signs, dense runs
    around where float32 erf starts to round to 1 (3.9192), around 1, and around 3.7845
    (the largest error over every float32), and normal values times 3."""
    lo, hi = np.float32(1e-45).view(np.int32), np.float32(5.0).view(np.int32)
    grid = np.arange(lo, hi, 997, dtype=np.int32).view(np.float32)
    near = np.concatenate([np.float32(v) + np.arange(-300, 300, dtype=np.float32)
                           * np.spacing(np.float32(v)) for v in (1.0, 3.784521, 3.9192059)])
    wide = np.abs(np.random.default_rng(7).standard_normal(4096).astype(np.float32) * 3)
    x = np.concatenate([grid, near, wide])
    return np.concatenate([x, -x])


@pytest.fixture(scope="module")
def erf_cpu():
    return tw.compile(tw.math.erf, target="cpu")


def test_float32_erf_within_the_stated_bound(erf_cpu):
    x = _sample()
    y = erf_cpu(x)
    assert y.dtype == np.float32
    err = _ulp_error(x, y)
    assert err.max() <= _max_ulp(), (err.max(), x[err.argmax()])
    # (not a loose bound everywhere: nearly all results are within 1 ulp)
    assert np.mean(err <= 1.0) > 0.97
    assert (np.abs(y) <= 1.0).all()


def test_float32_erf_is_odd_bit_for_bit(erf_cpu):
    x = _sample()
    x = x[x > 0]
    assert erf_cpu(-x).tobytes() == (-erf_cpu(x)).tobytes()


def test_float32_erf_special_values(erf_cpu):
    big = np.array([3.9192059, 3.92, 4.0, 10.0, 1e20, 3.4e38, np.inf], np.float32)
    assert (erf_cpu(big) == 1.0).all() and (erf_cpu(-big) == -1.0).all()
    y = erf_cpu(np.array([0.0, -0.0, np.nan, -np.nan], np.float32))
    assert y[0] == 0 and not np.signbit(y[0]) and y[1] == 0 and np.signbit(y[1])
    assert np.isnan(y[2:]).all()
    # tiny x: x / (sqrt(pi) / 2) rounded once, denormals too
    tiny = np.array([1e-45, 1e-42, 1e-40, 1.2e-38, 1e-20, 1e-8], np.float32)
    for sign in (1, -1):
        got = erf_cpu(sign * tiny)
        assert (np.sign(got) == sign).all()
        assert _ulp_error(sign * tiny, got).max() <= 1.0


def test_float32_erf_just_below_one():
    """Below 3.9192059 erf rounds to 1 - 2**-24 or less in float32: the result stays
    within the bound there, and at the last float32 below the threshold too."""
    f = tw.compile(tw.math.erf, target="cpu")
    x = np.array([3.5, 3.8, 3.9, np.nextafter(np.float32(3.9192059), np.float32(0))],
                 np.float32)
    assert _ulp_error(x, f(x)).max() <= _max_ulp()


@pytest.mark.parametrize("n", [1, 3, 7, 8, 9, 17, 33])
def test_float32_erf_same_bits_in_the_vector_loop_and_the_remainder(n, erf_cpu):
    """The loop's vector body and its scalar remainder evaluate the same expression."""
    x = np.linspace(-4.5, 4.5, 64 + n).astype(np.float32)
    whole = erf_cpu(x)
    one_by_one = np.concatenate([erf_cpu(x[i:i + 1]) for i in range(len(x))])
    assert whole.tobytes() == one_by_one.tobytes()


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float32, st.integers(0, 40),
                  elements=st.floats(width=32, allow_nan=True, allow_infinity=True)))
def test_float32_erf_against_the_reference_target(x):
    got = tw.compile(tw.math.erf, target="cpu")(x)
    want = tw.compile(tw.math.erf, target="reference")(x)
    assert got.dtype == want.dtype == np.float32 and got.shape == want.shape
    nan = np.isnan(x)
    assert (np.isnan(got) == nan).all() and (np.isnan(want) == nan).all()
    assert _ulp_error(x[~nan], got[~nan]).max(initial=0.0) <= _max_ulp()
    # the reference rounds float64 erf to float32 (0.5 ulp)
    ulp = np.spacing(np.abs(want[~nan]))
    assert (np.abs(got[~nan] - want[~nan]) <= (_max_ulp() + 0.5) * ulp).all()
    assert (np.signbit(got[x == 0]) == np.signbit(x[x == 0])).all()


def test_float64_erf_stays_libm():
    x = np.linspace(-5, 5, 101)
    got = tw.compile(tw.math.erf, target="cpu")(x)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, _erf64(x))


def test_erf_gradient_and_gelu():
    """d erf / dx = 2 / sqrt(pi) * exp(-x**2) (float32 within float32 rounding of it; float64
    against central differences), and the exact gelu through the float32 erf."""
    x = np.linspace(-4, 4, 41).astype(np.float32)

    def value_and_grad(x):
        with tw.GradientTape() as tape:
            tape.watch(x)
            y = tw.math.erf(x)
        return y, tape.gradient(y, x)

    _, dy = tw.compile(value_and_grad, target="cpu")(x)
    want = 2 / np.sqrt(np.pi) * np.exp(-x.astype(np.float64) ** 2)
    np.testing.assert_allclose(dy, want, rtol=1e-6, atol=1e-12)
    check_gradients(tw.math.erf, np.linspace(-3, 3, 17), target="cpu")
    check_gradients(tw.nn.gelu, np.linspace(-3, 3, 17), target="cpu")
    xs = np.linspace(-6, 6, 257).astype(np.float32)
    g = tw.compile(tw.nn.gelu, target="cpu")(xs)
    g64 = 0.5 * xs.astype(np.float64) * (1 + _erf64(xs.astype(np.float64) / np.sqrt(2)))
    # 1 + erf(x / sqrt(2)) cancels for negative x (in TensorFlow's float32 gelu too): the
    # error is erf's, in ulps of 1, times |x| / 2, plus roundings of the result
    bound = 4e-7 * np.abs(g64) + np.abs(xs) * (_max_ulp() + 1) * 2.0 ** -24
    assert (np.abs(g - g64) <= bound).all()
