"""The special functions on the gpu target (numba's simulator here; the device on a GPU):
Lgamma, Digamma, Erfc, Xlogy, Xlog1py and Xdivy run as GPU kernels and match the
reference target, poles, infinities and NaN included; the special ops with no GPU code
yet (Polygamma, Erfinv, Ndtri, the Bessel functions) run on the host in the same step
and give the reference's results too."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tests.gpu.cases import tolerance
from tests.gpu.plans import plan_of

EDGES = [0.0, -0.0, -1.0, -2.5, 0.5, 1.0, 1.4616321449683622, 3.0, 30.0, 1e-30, -1e-30,
         1e30, np.inf, -np.inf, np.nan]
UNARY = {"lgamma": tw.math.lgamma, "digamma": tw.math.digamma, "erfc": tw.math.erfc}
BINARY = {"xlogy": tw.math.xlogy, "xlog1py": tw.math.xlog1py, "xdivy": tw.math.xdivy}


def _same(got, want, dtype):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), equal_nan=True,
                               **tolerance(np.dtype(dtype)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_kernels_match_the_reference(name, dtype):
    x = np.array(EDGES, dtype)
    fn = UNARY[name]
    plan = plan_of(fn, [x])
    assert plan.kernels and not plan.fallbacks, plan.fallbacks
    with np.errstate(all="ignore"):
        want = tw.compile(fn, target="reference")(x)
    _same(tw.compile(fn, target="gpu")(x), want, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_kernels_match_the_reference(name, dtype):
    x = np.array([[0.0], [-0.0], [2.0], [-1.5], [np.nan], [0.0]], dtype)
    y = np.array([0.0, 3.0, -1.0, np.inf], dtype)
    fn = BINARY[name]
    plan = plan_of(fn, [x, y])
    assert plan.kernels and not plan.fallbacks, plan.fallbacks
    with np.errstate(all="ignore"):
        want = tw.compile(fn, target="reference")(x, y)
    _same(tw.compile(fn, target="gpu")(x, y), want, dtype)


def test_fused_with_other_ops_and_host_fallbacks_in_one_step():
    def f(x):
        return (tw.math.lgamma(x * 2.0) + tw.math.digamma(x) - tw.math.xlogy(x, x + 1.0),
                tw.math.erfinv(x * 0.1) + tw.math.bessel_i1e(x)
                + tw.math.polygamma(tw.ones_like(x), x))

    x = np.array([0.3, 1.7, 4.0], np.float64)
    want = tw.compile(f, target="reference")(x)
    got = tw.compile(f, target="gpu")(x)
    for g, w in zip(got, want):
        _same(g, w, np.float64)
