"""Special functions with TensorFlow's names (``tw.math.lgamma``, ``tw.math.digamma``,
``tw.math.xlogy`` ...): the log-likelihoods, KL terms and entropies of probabilistic
models need them. Floating-point operands only (an integer tensor is a DTypeError naming
the function and the user's line, as TensorFlow refuses them); the binary functions
broadcast like ``tw.add``. The ops are declared in `compiler/ops/special.py`, their
gradients in `frontend/grads/special.py`; ``log_sigmoid`` and ``lbeta`` are compositions
of other ops, as in TensorFlow.
"""

from __future__ import annotations

import math
from typing import Any

from ...errors import DTypeError
from ..building import convert_to_tensor, user_location
from . import activations
from . import math as m
from .math import Result, TensorLike, _binary, _unary


def lgamma(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``log(|gamma(x)|)``; +inf at 0 and the negative integers."""
    return _unary("Lgamma", x, name)


def digamma(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``psi(x)``, the derivative of ``lgamma``; NaN at 0 and the negative
    integers (TensorFlow's values)."""
    return _unary("Digamma", x, name)


def polygamma(a: TensorLike, x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``psi^(a)(x)``, the a-th derivative of ``digamma`` (``a = 0``: digamma,
    ``a = 1``: trigamma); `a` is a float tensor holding integers, broadcast with `x`. NaN
    where `a` is negative or not an integer."""
    return _binary("Polygamma", a, x, name)


def erfc(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``1 - erf(x)``, without the cancellation for large `x`."""
    return _unary("Erfc", x, name)


def erfinv(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise inverse of ``erf``: ``erf(erfinv(x)) = x`` on (-1, 1), +-inf at +-1,
    NaN beyond."""
    return _unary("Erfinv", x, name)


def ndtri(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise inverse of the standard normal CDF (the probit): -inf at 0, +inf at 1,
    NaN outside [0, 1]."""
    return _unary("Ndtri", x, name)


def erfcinv(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise inverse of ``erfc``: ``-ndtri(x / 2) / sqrt(2)``, as TensorFlow builds
    it (x / 2 is exact, so nothing is lost near 0 or 2): +inf at 0, -inf at 2, NaN outside
    [0, 2]."""
    x = _float_operand("erfcinv", x)
    return m.multiply(ndtri(x * 0.5), -math.sqrt(0.5), name=name)


def bessel_i0e(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``exp(-|x|) * I0(x)``, the scaled modified Bessel function of order 0
    (finite for every finite x, where I0 itself overflows)."""
    return _unary("BesselI0e", x, name)


def bessel_i1e(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``exp(-|x|) * I1(x)``, the scaled modified Bessel function of order 1."""
    return _unary("BesselI1e", x, name)


def xlogy(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x * log(y)``, exactly 0 where ``x == 0`` whatever `y` is (the entropy
    convention ``0 log 0 = 0``); broadcasts."""
    return _binary("Xlogy", x, y, name)


def xlog1py(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x * log1p(y)``, exactly 0 where ``x == 0`` whatever `y` is."""
    return _binary("Xlog1py", x, y, name)


def xdivy(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x / y``, exactly 0 where ``x == 0`` whatever `y` is (0 / 0 too)."""
    return _binary("Xdivy", x, y, name)


def _float_operand(fn: str, x: TensorLike) -> Any:
    """`x` as a tensor; a DTypeError naming ``tw.math.<fn>`` and the user's line unless it
    is floating point."""
    x = convert_to_tensor(x)
    if x.dtype.kind != "float":
        loc = user_location()
        raise DTypeError(f"expects a floating-point dtype (f16, bf16, f32, f64), got x is "
                         f"{x.type}", op=f"tw.math.{fn}", location=str(loc) if loc else None)
    return x


def log_sigmoid(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``log(sigmoid(x)) = -softplus(-x)``, computed stably: no overflow for
    very negative x (where it is about x) and full precision for large x (where it is
    about ``-exp(-x)``); its gradient is ``sigmoid(-x)``."""
    x = _float_operand("log_sigmoid", x)
    return m.negative(activations.softplus(-x), name=name)


def lbeta(x: TensorLike, name: str | None = None) -> Result:
    """``log(|B(x)|)`` of the multivariate beta function along the last axis:
    ``sum(lgamma(x), -1) - lgamma(sum(x, -1))``, as TensorFlow computes it (an empty last
    axis gives -inf)."""
    x = _float_operand("lbeta", x)
    log_prod_gamma = m.reduce_sum(lgamma(x), axis=-1)
    log_gamma_sum = lgamma(m.reduce_sum(x, axis=-1))
    return m.subtract(log_prod_gamma, log_gamma_sum, name=name)


__all__ = ["lgamma", "digamma", "polygamma", "erfc", "erfinv", "erfcinv", "ndtri", "bessel_i0e",
           "bessel_i1e", "xlogy", "xlog1py", "xdivy", "log_sigmoid", "lbeta"]
