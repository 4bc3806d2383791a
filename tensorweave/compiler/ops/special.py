"""Special functions (TensorFlow's tf.math.lgamma, digamma, polygamma, erfc, erfinv, ndtri,
bessel_i0e, bessel_i1e, xlogy, xdivy, xlog1py) as elementwise ops.

Conventions (those of `math.py`: floating-point operands only, binary ops broadcast and
take one dtype) and TensorFlow's values where the functions are singular:
- Lgamma is log|gamma(x)|: +inf at 0, the negative integers and -inf;
- Digamma is NaN at 0 and the negative integers (Eigen's psi, not SciPy's +-inf);
- Polygamma(n, x) is NaN unless n is a non-negative integer; order 0 is Digamma;
- Erfinv is +-inf at +-1 and NaN beyond; Ndtri is -inf at 0, +inf at 1, NaN outside [0, 1];
- Xlogy(x, y) is 0 where x == 0, whatever y is (NaN and 0 included), else x * log(y);
  Xdivy and Xlog1py alike with x / y and x * log1p(y).

The reference kernels evaluate float64 functions and round once to the operands' dtype, so
half-precision and float32 results are the correctly rounded values wherever the float64
value is within half an ulp of the narrower format: C's erfc (Python's math module),
SciPy's special functions for the rest (SciPy is a dependency already: the cpu
target's BLAS), digamma with an argument reduction of our own for x < 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .math import _FLOAT, _declare_binary, _declare_unary


def _special():
    import scipy.special  # imported on first use: ~50 ms that `import tensorweave` skips
    return scipy.special


def _in_float64(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """`fn` computed on float64 copies of its operands (the declaring helpers round the
    result to the operands' dtype once)."""
    def compute(*args: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return fn(*(np.asarray(a, np.float64) for a in args))
    return compute


def _non_positive_integer(x: np.ndarray) -> np.ndarray:
    return (x <= 0) & (np.floor(x) == x)


def _stdlib(fn: Callable[[float], float], x: np.ndarray) -> np.ndarray:
    """Python's `fn` (C's libm) on each element, as float64."""
    return np.asarray(np.frompyfunc(fn, 1, 1)(x), np.float64)


def lgamma_reference(x: np.ndarray) -> np.ndarray:
    """log|gamma(x)| in float64: SciPy's gammaln (within 5e-16 of mpmath, relative where
    |lgamma| >= 1, absolute below; Python's math.lgamma is CPython's own, within 1.1e-15),
    +inf at the poles and at -inf as C's lgamma and TensorFlow (gammaln gives -inf)."""
    return np.where(x == -np.inf, np.inf, _special().gammaln(x))


def erfc_reference(x: np.ndarray) -> np.ndarray:
    """1 - erf(x) in float64: C's erfc (Python's math.erfc), within an ulp of the exact
    value; SciPy's erfc is off by up to 6e-14 relative in the tail (x > 10)."""
    return _stdlib(math.erfc, x)


def digamma_reference(x: np.ndarray) -> np.ndarray:
    """psi(x) in float64; NaN at the poles (0 and the negative integers), as TensorFlow.

    Negative x go through the reflection psi(x) = psi(1 - x) - pi / tan(pi r) with r = x
    minus its nearest integer (exact): SciPy's psi takes tan(pi x) of x itself, whose
    rounded product pi * x costs up to ~1e-13 relative next to the poles (psi(-1.99941)
    is off by 1.7e-13 there; mpmath agrees with the reduced form to 1e-16)."""
    psi = _special().psi
    p = np.floor(x)
    r = x - p
    r = np.where(r > 0.5, x - (p + 1), r)
    cot = np.where(r == 0.5, 0.0, np.pi / np.tan(np.pi * r))
    result = np.where(x < 0, psi(1 - x) - cot, psi(x))
    return np.where(_non_positive_integer(x), np.nan, result)


# Polygamma of order >= 1 sums zeta(n + 1, x) = sum_k (x + k)^-(n+1) directly from x up
# to 9, so x = -1e10 would take 1e10 steps (SciPy's zeta, Eigen's and so TensorFlow's
# never return); below this bound every target gives NaN instead.
POLYGAMMA_MIN_X = -float(2 ** 20)


def polygamma_reference(n: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The n-th derivative of psi at x in float64: (-1)^(n+1) n! zeta(n+1, x) for integer
    n >= 1, psi for n = 0, NaN for any other n (TensorFlow's polygamma), and NaN for
    x < POLYGAMMA_MIN_X or x = -inf with n >= 1. At the poles (0 and the negative
    integers) odd orders give +inf; even orders change sign across the pole and give NaN,
    as TensorFlow (SciPy's zeta gives -inf)."""
    sp = _special()
    n, x = np.broadcast_arrays(n, x)
    valid = (n >= 0) & (np.floor(n) == n)
    order = np.where(valid, n, 1.0)
    in_range = (x >= POLYGAMMA_MIN_X) | np.isnan(x)
    zeta = np.where(in_range, sp.zeta(order + 1, np.where(in_range, x, 1.0)), np.nan)
    higher = (-1.0) ** (order + 1) * sp.gamma(order + 1) * zeta
    result = np.where(order == 0, digamma_reference(x), higher)
    even_at_pole = (x <= 0) & (np.floor(x) == x) & (order % 2 == 0)
    return np.where(valid & ~even_at_pole, result, np.nan)


def _xlogy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(x == 0, 0.0, x * np.log(y))


def _xlog1py(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(x == 0, 0.0, x * np.log1p(y))


def _xdivy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(x == 0, 0.0, x / y)


Lgamma = _declare_unary("Lgamma", _in_float64(lgamma_reference), _FLOAT,
                        "Elementwise log|gamma(x)| (+inf at 0 and the negative integers).")
Digamma = _declare_unary("Digamma", _in_float64(digamma_reference), _FLOAT,
                         "Elementwise psi(x) = d/dx lgamma(x) (NaN at 0 and the negative "
                         "integers).")
Polygamma = _declare_binary("Polygamma", _in_float64(polygamma_reference), _FLOAT,
                            "Elementwise n-th derivative of digamma at x; NaN unless n is a "
                            "non-negative integer.", inputs=("a", "x"))
Erfc = _declare_unary("Erfc", _in_float64(erfc_reference), _FLOAT,
                      "Elementwise complementary error function 1 - erf(x), accurate where "
                      "erf(x) is close to 1.")
Erfinv = _declare_unary("Erfinv", _in_float64(lambda x: _special().erfinv(x)), _FLOAT,
                        "Elementwise inverse error function (+-inf at +-1, NaN beyond).")
Ndtri = _declare_unary("Ndtri", _in_float64(lambda x: _special().ndtri(x)), _FLOAT,
                       "Elementwise inverse of the standard normal CDF (-inf at 0, +inf "
                       "at 1, NaN outside [0, 1]).")
BesselI0e = _declare_unary("BesselI0e", _in_float64(lambda x: _special().i0e(x)), _FLOAT,
                           "Elementwise exponentially scaled modified Bessel function of "
                           "order 0: exp(-|x|) I0(x).")
BesselI1e = _declare_unary("BesselI1e", _in_float64(lambda x: _special().i1e(x)), _FLOAT,
                           "Elementwise exponentially scaled modified Bessel function of "
                           "order 1: exp(-|x|) I1(x).")
Xlogy = _declare_binary("Xlogy", _in_float64(_xlogy), _FLOAT,
                        "Elementwise x * log(y), 0 where x == 0 (whatever y is).")
Xlog1py = _declare_binary("Xlog1py", _in_float64(_xlog1py), _FLOAT,
                          "Elementwise x * log1p(y), 0 where x == 0 (whatever y is).")
Xdivy = _declare_binary("Xdivy", _in_float64(_xdivy), _FLOAT,
                        "Elementwise x / y, 0 where x == 0 (whatever y is).")
