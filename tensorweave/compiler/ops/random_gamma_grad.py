"""RandomGammaGrad: the derivative of a Gamma(alpha, 1) sample with respect to alpha
(TensorFlow's op of that name), the implicit reparameterization gradient of Figurnov et
al. (2018): a sample ``x`` with CDF ``P(alpha, x)`` (the regularized lower incomplete
gamma function) moves with alpha as

    dx/dalpha = -(dP/dalpha)(alpha, x) / p(x; alpha),   p = x**(alpha-1) e**-x / Gamma(alpha)

``dP/dalpha`` is computed as TensorFlow (Eigen's ``igamma_der_a``) does: forward-mode
differentiation of Cephes' series for P where ``x <= 1`` or ``x < alpha``, and of Cephes'
continued fraction for ``Q = 1 - P`` elsewhere. Both are divided by the density
analytically (the series' prefactor is ``p * x / alpha``, the fraction's ``p * x``), so
no exp under- or overflows however far in the tail x lies. Computed in float64 for every
dtype, rounded once.

Broadcasting elementwise op; alpha <= 0 or NaN, or x < 0 or NaN, give NaN; x = 0 gives 0
(the sample cannot move below 0); x = inf gives NaN as in TensorFlow.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import float16, float32, float64
from ..registry import def_op, not_differentiable
from ..types import TensorType
from .common import broadcast_shapes, check_dtype, expect_tensor, same_dtype

RandomGammaGrad = def_op("RandomGammaGrad", ["alpha", "sample"],
                         doc="d sample / d alpha of Gamma(alpha, 1) samples (implicit "
                             "reparameterization); broadcasts alpha with sample.")

_EPS = np.finfo(np.float64).eps
_MAX_ITERATIONS = 2000  # (Eigen's bound for double; both expansions converge far sooner)
_BIG = 4503599627370496.0  # 2**52: Cephes' rescaling threshold for the fraction
_BIGINV = 2.22044604925031308085e-16


def _series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """-(dP/da) / p for the series ``P = p x / a * S``, ``S = sum_n x**n / ((a+1)...(a+n))``."""
    from scipy.special import digamma
    term = np.ones_like(x)
    dterm = np.zeros_like(x)   # d term / da
    s, ds = term.copy(), dterm.copy()
    n_a = a.copy()
    active = np.ones(x.shape, bool)
    for _ in range(_MAX_ITERATIONS):
        n_a = n_a + 1.0
        # term_n = term_{n-1} * x / (a + n): d/da by the product rule
        dterm = np.where(active, dterm * x / n_a - term * x / (n_a * n_a), dterm)
        term = np.where(active, term * x / n_a, term)
        s = np.where(active, s + term, s)
        ds = np.where(active, ds + dterm, ds)
        active &= ~(np.abs(term) <= _EPS * np.abs(s))
        if not active.any():
            break
    # P = exp(a ln x - x - lgamma(a + 1)) * S, so dP/da = pref * (S (ln x - psi(a+1)) + dS)
    # and pref = p * x / a
    return -(x / a) * (s * (np.log(x) - digamma(a + 1.0)) + ds)


def _fraction(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """-(dP/da) / p = (dQ/da) / p for Cephes' continued fraction ``Q = p x * ans``."""
    from scipy.special import digamma
    y = 1.0 - a
    z = x + y + 1.0
    c = np.zeros_like(x)
    pkm2, qkm2 = np.ones_like(x), x.copy()
    pkm1, qkm1 = x + 1.0, z * x
    dpkm2, dqkm2 = np.zeros_like(x), np.zeros_like(x)
    dpkm1, dqkm1 = np.zeros_like(x), -x          # d(z x)/da, dz/da = -1
    ans = pkm1 / qkm1
    dans = (dpkm1 - ans * dqkm1) / qkm1
    active = np.ones(x.shape, bool)
    for _ in range(_MAX_ITERATIONS):
        c = c + 1.0
        y = y + 1.0
        z = z + 2.0
        yc = y * c
        dyc = -c                                    # dy/da = -1
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        dpk = dpkm1 * z - pkm1 - dpkm2 * yc - pkm2 * dyc   # dz/da = -1
        dqk = dqkm1 * z - qkm1 - dqkm2 * yc - qkm2 * dyc
        safe_qk = np.where(qk != 0, qk, 1.0)
        r = pk / safe_qk
        dr = (dpk - r * dqk) / safe_qk
        step = np.where(qk != 0, np.abs(dr - dans), np.inf)
        ans = np.where(active & (qk != 0), r, ans)
        dans = np.where(active & (qk != 0), dr, dans)
        pkm2, pkm1 = np.where(active, pkm1, pkm2), np.where(active, pk, pkm1)
        qkm2, qkm1 = np.where(active, qkm1, qkm2), np.where(active, qk, qkm1)
        dpkm2, dpkm1 = np.where(active, dpkm1, dpkm2), np.where(active, dpk, dpkm1)
        dqkm2, dqkm1 = np.where(active, dqkm1, dqkm2), np.where(active, dqk, dqkm1)
        # rescale (values and derivatives together) before they overflow
        big = active & (np.abs(pk) > _BIG)
        scale = np.where(big, _BIGINV, 1.0)
        pkm2, pkm1, qkm2, qkm1 = pkm2 * scale, pkm1 * scale, qkm2 * scale, qkm1 * scale
        dpkm2, dpkm1 = dpkm2 * scale, dpkm1 * scale
        dqkm2, dqkm1 = dqkm2 * scale, dqkm1 * scale
        # converged when the derivative (what is returned) has settled
        active &= ~(step <= _EPS * np.abs(dans))
        if not active.any():
            break
    # Q = exp(a ln x - x - lgamma(a)) * ans = p x ans, so dQ/da = p x (dans + ans (ln x - psi(a)))
    return x * (dans + ans * (np.log(x) - digamma(a)))


def gamma_sample_der_alpha(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dx/dalpha of Gamma(alpha, 1) samples x, in float64 (module docstring)."""
    a, x = np.broadcast_arrays(np.asarray(alpha, np.float64), np.asarray(x, np.float64))
    a, x = a.reshape(-1), x.reshape(-1)
    out = np.full(x.shape, np.nan)
    valid = (a > 0) & (x >= 0) & np.isfinite(x) & np.isfinite(a)
    out[valid & (x == 0)] = 0.0
    use_series = valid & (x > 0) & ((x <= 1) | (x < a))
    use_fraction = valid & (x > 0) & ~use_series
    with np.errstate(all="ignore"):
        if use_series.any():
            out[use_series] = _series(a[use_series], x[use_series])
        if use_fraction.any():
            out[use_fraction] = _fraction(a[use_fraction], x[use_fraction])
    return out


@RandomGammaGrad.infer
def _random_gamma_grad_infer(alpha, sample):
    roles = ("alpha", "sample")
    a, x = expect_tensor(alpha, roles[0]), expect_tensor(sample, roles[1])
    dtype = same_dtype([a, x], roles)
    check_dtype(a, (float16, float32, float64), "alpha")
    return TensorType(dtype, broadcast_shapes(a.shape, x.shape))


@RandomGammaGrad.kernel("reference")
def _random_gamma_grad_kernel(alpha, sample):
    shape = np.broadcast_shapes(alpha.shape, sample.shape)
    return gamma_sample_der_alpha(alpha, sample).reshape(shape).astype(alpha.dtype)


# TensorFlow registers no gradient for it either (a second derivative of a sample)
not_differentiable("RandomGammaGrad")
