"""Activation functions with TensorFlow's names, definitions and gradients (``tw.nn.*``).

Each one is a composition of elementwise ops, so the cpu target fuses it into the loop of
its neighbours and autodiff differentiates it. The compositions are chosen for their
gradients as much as for their values:
- branches are `where`s whose untaken side stays finite (``expm1(minimum(x, 0))``), so
  a large input cannot turn a zero gradient into ``0 * inf = nan``;
- at the kinks the gradient is TensorFlow's (``relu6'(6) = 0``, ``elu'(0) = 1``,
  ``selu'(0) = scale``, ``softplus'(0) = 0.5``), where ``max``/``abs`` compositions would
  give a one-sided or zero derivative;
- exponentials only ever see non-positive arguments (softplus, the cross entropy), so
  nothing overflows in float32.
NaN inputs give NaN.
"""

from __future__ import annotations

import math as _pymath
from typing import Any

from ...errors import ShapeError
from ..building import convert_operands, convert_to_tensor, user_location
from . import math as m

TensorLike = Any

# SELU's constants (Klambauer et al. 2017), as TensorFlow spells them
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SQRT_2_OVER_PI = _pymath.sqrt(2.0 / _pymath.pi)


def relu6(features: TensorLike, name: str | None = None) -> Any:
    """``min(max(features, 0), 6)``; the gradient is 1 strictly between 0 and 6, else 0."""
    x = convert_to_tensor(features)
    return m.where(x >= 6, 6, m.relu(x), name=name)


def elu(features: TensorLike, name: str | None = None) -> Any:
    """Exponential linear unit: `features` where >= 0, else ``exp(features) - 1``."""
    x = convert_to_tensor(features)
    return m.where(x >= 0, x, m.expm1(m.minimum(x, 0)), name=name)


def selu(features: TensorLike, name: str | None = None) -> Any:
    """Scaled ELU: ``scale * (x if x >= 0 else alpha * (exp(x) - 1))`` with SELU's
    self-normalizing constants (alpha ~ 1.6733, scale ~ 1.0507)."""
    x = convert_to_tensor(features)
    neg = m.expm1(m.minimum(x, 0)) * _SELU_ALPHA
    return m.multiply(m.where(x >= 0, x, neg), _SELU_SCALE, name=name)


def softplus(features: TensorLike, name: str | None = None) -> Any:
    """``log(exp(features) + 1)``, computed stably as ``max(x, 0) + log1p(exp(-|x|))``
    (no overflow for large x, full precision for very negative x); its gradient is
    ``sigmoid(x)``."""
    x = convert_to_tensor(features)
    nonneg = x >= 0
    # where() rather than relu/abs: at 0 these give the two one-sided slopes that add
    # up to sigmoid(0) = 0.5, where relu'(0) = abs'(0) = 0 would give 0
    positive_part = m.where(nonneg, x, 0)
    minus_abs = m.where(nonneg, -x, x)
    return m.add(positive_part, m.log1p(m.exp(minus_abs)), name=name)


def softsign(features: TensorLike, name: str | None = None) -> Any:
    """``features / (abs(features) + 1)``."""
    x = convert_to_tensor(features)
    return m.divide(x, m.abs(x) + 1, name=name)


def leaky_relu(features: TensorLike, alpha: float = 0.2, name: str | None = None) -> Any:
    """`features` where > 0, else ``alpha * features``; integers are computed in float32,
    as in TensorFlow."""
    x = convert_to_tensor(features)
    if x.dtype.is_integer:
        x = m.cast(x, "float32")
    return m.where(x > 0, x, x * alpha, name=name)


def gelu(features: TensorLike, approximate: bool = False, name: str | None = None) -> Any:
    """Gaussian error linear unit ``x * P(X <= x)`` for standard normal X:
    ``0.5 * x * (1 + erf(x / sqrt(2)))``, or with ``approximate=True`` the tanh form
    ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``."""
    x = convert_to_tensor(features)
    if approximate:
        inner = m.tanh((x + m.square(x) * x * 0.044715) * _SQRT_2_OVER_PI)
    else:
        inner = m.erf(x * (1 / _pymath.sqrt(2.0)))
    return m.multiply(x * 0.5, inner + 1, name=name)


def silu(features: TensorLike, beta: float = 1.0, name: str | None = None) -> Any:
    """Sigmoid linear unit (swish): ``features * sigmoid(beta * features)``."""
    x = convert_to_tensor(features)
    return m.multiply(x, m.sigmoid(x * beta if beta != 1.0 else x), name=name)


swish = silu


def sigmoid_cross_entropy_with_logits(labels: TensorLike = None, logits: TensorLike = None,
                                      name: str | None = None) -> Any:
    """Elementwise logistic loss ``-labels * log(sigmoid(logits)) - (1 - labels) *
    log(1 - sigmoid(logits))``, computed as TensorFlow does, stably:
    ``max(x, 0) - x * z + log1p(exp(-abs(x)))``. `labels` and `logits` have one shape."""
    if labels is None or logits is None:
        raise ValueError("sigmoid_cross_entropy_with_logits needs both labels= and logits=")
    x, z = convert_operands(logits, labels)
    if not x.shape.is_compatible_with(z.shape):  # (an unknown rank is compatible)
        loc = user_location()
        raise ShapeError(f"logits and labels must have the same shape, got logits {x.type} "
                         f"and labels {z.type}", op="tw.nn.sigmoid_cross_entropy_with_logits",
                         location=str(loc) if loc else None)
    nonneg = x >= 0
    positive_part = m.where(nonneg, x, 0)
    minus_abs = m.where(nonneg, -x, x)
    return m.add(positive_part - x * z, m.log1p(m.exp(minus_abs)), name=name)


__all__ = ["relu6", "elu", "selu", "softplus", "softsign", "leaky_relu", "gelu", "silu",
           "swish", "sigmoid_cross_entropy_with_logits"]
