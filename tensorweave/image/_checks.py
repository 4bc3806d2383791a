"""Argument checks shared by the ``tw.image`` functions: image ranks, static sizes and
the errors that name the function and the user's line."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DTypeError, InvalidArgumentError, ShapeError
from ..frontend.building import convert_to_tensor, user_location
from ..frontend.ops.array import _const_array
from ..frontend.tensor import EagerTensor, Tensor


def shape_error(fn: str, message: str) -> ShapeError:
    """A ShapeError (a ValueError, as TensorFlow raises) naming ``tw.image.<fn>`` and the
    user's line."""
    loc = user_location()
    return ShapeError(message, op=f"tw.image.{fn}", location=str(loc) if loc else None)


def value_error(fn: str, message: str) -> InvalidArgumentError:
    """An InvalidArgumentError (a ValueError) for a bad argument value of
    ``tw.image.<fn>``, naming the user's line."""
    loc = user_location()
    return InvalidArgumentError(message, op=f"tw.image.{fn}",
                                location=str(loc) if loc else None)


def type_error(fn: str, message: str) -> DTypeError:
    """A DTypeError (a TypeError) naming ``tw.image.<fn>`` and the user's line."""
    loc = user_location()
    return DTypeError(message, op=f"tw.image.{fn}", location=str(loc) if loc else None)


def image_tensor(image: Any, fn: str, ranks: tuple[int, ...] = (3, 4),
                 arg: str = "image") -> Any:
    """`image` as a tensor whose rank is one of `ranks` (``(3, 4)``: one ``[h, w, c]``
    image or a ``[batch, h, w, c]`` batch); anything else is a ShapeError."""
    x = convert_to_tensor(image)
    if x.ndim not in ranks:
        raise _rank_error(fn, arg, x, " or ".join(str(r) for r in ranks))
    return x


def at_least_3d(image: Any, fn: str, arg: str = "image") -> Any:
    """`image` as a tensor of rank 3 or more (the last three are height, width and
    channels)."""
    x = convert_to_tensor(image)
    if x.ndim < 3:
        raise _rank_error(fn, arg, x, "at least 3")
    return x


def _rank_error(fn: str, arg: str, x: Any, want: str) -> ShapeError:
    return shape_error(fn, f"'{arg}' (shape {list(x.shape)}) must have {want} dimensions "
                           f"([height, width, channels] or [batch, height, width, "
                           f"channels]), got rank {x.ndim}")


def static_hw(x: Any, fn: str, what: str = "height and width") -> tuple[int, int]:
    """The static height and width of an image tensor (``x.shape[-3:-1]``): the sampling
    tables are computed while the graph is built, so unknown sizes are refused."""
    h, w = x.shape[-3], x.shape[-2]
    if h is None or w is None:
        raise shape_error(fn, f"the image {what} must be known when the graph is built "
                              f"(tensorweave computes the sampling positions then), got "
                              f"shape {list(x.shape)}; give the input a static shape "
                              f"(a TensorSpec with known height and width)")
    return int(h), int(w)


def static_int(value: Any, fn: str, arg: str) -> int:
    """A Python int from an int, a NumPy integer or a constant tensor."""
    if isinstance(value, bool):
        raise type_error(fn, f"`{arg}` must be an integer, got {value!r}")
    arr = _const_array(value) if isinstance(value, (Tensor, EagerTensor)) \
        else np.asarray(value)
    if arr is None:
        raise type_error(fn, f"`{arg}` must be known when the graph is built (a Python "
                             f"int or a constant), got the computed tensor {value!r}")
    if arr.ndim != 0 or arr.dtype.kind not in "iu":
        raise type_error(fn, f"`{arg}` must be an integer scalar, got {value!r}")
    return int(arr)


def static_float(value: Any, fn: str, arg: str) -> float:
    """A Python float from a number, a NumPy scalar or a constant tensor."""
    arr = _const_array(value) if isinstance(value, (Tensor, EagerTensor)) \
        else np.asarray(value)
    if arr is None:
        raise type_error(fn, f"`{arg}` must be known when the graph is built (a Python "
                             f"number or a constant), got the computed tensor {value!r}")
    if arr.ndim != 0 or arr.dtype.kind not in "iuf":
        raise type_error(fn, f"`{arg}` must be a number, got {value!r}")
    return float(arr)


def factor_bounds(fn: str, lower: Any, upper: Any) -> tuple[float, float]:
    """A random factor's range [lower, upper) (random_contrast, random_saturation): Python
    numbers with 0 <= lower < upper, as TensorFlow checks them."""
    lo, hi = static_float(lower, fn, "lower"), static_float(upper, fn, "upper")
    if hi <= lo:
        raise value_error(fn, f"upper must be > lower, got lower={lo}, upper={hi}")
    if lo < 0:
        raise value_error(fn, f"lower must be non-negative, got {lo}")
    return lo, hi
