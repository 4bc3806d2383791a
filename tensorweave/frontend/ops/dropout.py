"""Dropout (``tw.nn.dropout``, TensorFlow 2's semantics).

Each element of `x` (or each slice, with a `noise_shape` that has 1s) is kept with
probability ``1 - rate`` and scaled by ``1 / (1 - rate)``, so the expected value is
unchanged; dropped ones become 0. The mask comes from one `RandomUniformLike` node (the
counter-based generator of `compiler/ops/random.py`): its shape follows `x` at run time,
so an unknown batch size works, every target draws the same mask for the same seeds, and
the gradient, ``g * mask / (1 - rate)``, uses the mask of the forward pass because
autodiff reuses that node's value. `rate` may be a tensor (a placeholder fed at run
time), as TensorFlow 1's ``keep_prob`` often is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...compiler.dtypes import float32
from ...errors import DTypeError, InvalidArgumentError, ShapeError, UnimplementedError
from ..building import apply_op1, convert_to_tensor, user_location
from ..context import name_scope
from ..tensor import EagerTensor, Tensor
from . import math as m
from .random import get_seed

TensorLike = Any


def _noise_attr(noise_shape: Any, x_shape: Sequence[int | None]) -> tuple[int, ...] | None:
    """`noise_shape` as RandomUniformLike's attribute: -1 where the dim follows `x`
    (None entries, as Keras allows, and dims equal to x's known ones)."""
    if noise_shape is None:
        return None
    if isinstance(noise_shape, Tensor):
        if noise_shape.op is None or noise_shape.op.op != "Const":
            raise UnimplementedError(
                "tw.nn.dropout: noise_shape must be known when the graph is built; write "
                "None for a dim that follows x (e.g. [None, 1, 1, C])",
                location=str(user_location()))
        noise_shape = noise_shape.op.attrs["value"]
    elif isinstance(noise_shape, EagerTensor):
        noise_shape = noise_shape.numpy()
    dims = list(np.asarray(noise_shape, dtype=object).reshape(-1)) \
        if not isinstance(noise_shape, (list, tuple)) else list(noise_shape)
    if len(dims) != len(x_shape):
        raise ShapeError(f"tw.nn.dropout: noise_shape {list(dims)} must have x's rank "
                         f"{len(x_shape)}", location=str(user_location()))
    out = []
    for n, d in zip(dims, x_shape):
        if n is None or (d is not None and int(n) == d):
            out.append(-1)
        elif int(n) != 1 and d is not None:
            raise ShapeError(f"tw.nn.dropout: noise_shape {list(dims)} does not broadcast "
                             f"to x's shape {list(x_shape)}", location=str(user_location()))
        else:
            out.append(int(n))
    return None if all(n == -1 for n in out) else tuple(out)


def _is_number(rate: Any) -> bool:
    return isinstance(rate, (int, float, np.integer, np.floating))


def _check_rate(rate: Any, what: str) -> None:
    """Python-number rates are checked now; tensors are the caller's business (as in TF)."""
    if _is_number(rate) and not 0 <= rate < 1:
        raise InvalidArgumentError(f"tw.nn.dropout: {what} must be in [0, 1), got {rate}",
                                   location=str(user_location()))


def dropout(x: TensorLike, rate: TensorLike = None, noise_shape: Any = None,
            seed: int | None = None, name: str | None = None) -> Tensor:
    """Zero each element of `x` with probability `rate` and scale the rest by
    ``1 / (1 - rate)`` (``tf.nn.dropout``).

    `rate` is a Python number in [0, 1) or a scalar tensor (fed at run time). `noise_shape`
    (x's rank) gives the shape of the random mask, broadcast against `x`: 1 shares one
    draw along that dim, None or x's dim draws per element, e.g. ``[None, 1, 1, C]`` drops
    whole channels. `seed` follows TensorFlow's seed rules (`tw.random.set_seed`). A rate
    of exactly 0 (a Python number) returns `x` unchanged.
    """
    if rate is None:
        raise InvalidArgumentError("tw.nn.dropout: pass rate= (the fraction to drop)",
                                   location=str(user_location()))
    _check_rate(rate, "rate")
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise DTypeError(f"tw.nn.dropout: x must be a floating-point tensor, got {x.dtype!r}",
                         location=str(user_location()))
    if _is_number(rate) and rate == 0:
        return x
    noise = _noise_attr(noise_shape, x.shape)
    with name_scope(name or "dropout"):
        seed1, seed2 = get_seed(seed)
        attrs = {"noise_shape": noise, "seed": seed1, "seed2": seed2}
        if m._is_half(x.dtype):
            # a uniform in x's dtype has 7 (bfloat16) or 10 (float16) random bits, so the
            # fraction dropped would be the rate rounded up to a multiple of 1/128 (1/1024):
            # draw, compare and scale in float32
            uniform = apply_op1("RandomUniformLike", [x], {**attrs, "dtype": float32})
            rate_t = convert_to_tensor(rate, dtype=float32) if _is_number(rate) else \
                m.cast(convert_to_tensor(rate, dtype=x.dtype), float32)
            keep = m.cast(m.greater_equal(uniform, rate_t), x.dtype)
            return _shaped_like(x * m.cast(m.reciprocal(1 - rate_t), x.dtype) * keep, x)
        uniform = apply_op1("RandomUniformLike", [x], attrs)
        rate_t = convert_to_tensor(rate, dtype=x.dtype)
        keep = m.cast(m.greater_equal(uniform, rate_t), x.dtype)
        return _shaped_like(x * m.reciprocal(1 - rate_t) * keep, x)


def _shaped_like(out: Any, x: Any) -> Any:
    """`out` with `x`'s static shape where a rate of unknown rank (a v1 placeholder made
    without a shape, a scalar when fed) left it unknown, as TensorFlow sets it."""
    if out.shape.rank is None and x.shape.rank is not None:
        out.set_shape(x.shape)
    return out


def dropout_v1(x: TensorLike, keep_prob: TensorLike = None, noise_shape: Any = None,
               seed: int | None = None, name: str | None = None,
               rate: TensorLike = None) -> Tensor:
    """TensorFlow 1's ``tf.nn.dropout``: keep each element with probability `keep_prob`
    (a Python number in (0, 1] or a tensor such as a placeholder fed at run time) and
    scale kept ones by ``1 / keep_prob``; ``rate=`` may be given instead."""
    if (keep_prob is None) == (rate is None):
        raise InvalidArgumentError("tf.nn.dropout: pass exactly one of keep_prob and rate",
                                   location=str(user_location()))
    if rate is None:
        if isinstance(keep_prob, (int, float, np.integer, np.floating)):
            if not 0 < keep_prob <= 1:
                raise InvalidArgumentError(f"tf.nn.dropout: keep_prob must be in (0, 1], got "
                                           f"{keep_prob}", location=str(user_location()))
            rate = 1 - keep_prob
        else:
            x = convert_to_tensor(x)
            rate = 1 - convert_to_tensor(keep_prob, dtype=x.dtype)
    return dropout(x, rate=rate, noise_shape=noise_shape, seed=seed, name=name)


__all__ = ["dropout"]
