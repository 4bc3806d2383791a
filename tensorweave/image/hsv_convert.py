"""``tf.image.rgb_to_hsv`` and ``hsv_to_rgb``: elementwise compositions that follow
TensorFlow's kernel (``colorspace_op.h``) operation by operation, in the image's own
float dtype (float16 and bfloat16 round after every operation, as Eigen's half types
do), so the results are TensorFlow's bit for bit.

Both differentiate through their ops. Where the kernel divides by a zero (a gray pixel's
range, a black pixel's value) and then discards the quotient, the denominator is made
safe first, so no inf or NaN reaches a gradient through the discarded branch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.dtypes import FLOAT_DTYPES
from ..frontend.building import convert_to_tensor
from ..frontend.context import name_scope
from ..frontend.ops.array import stack, unstack
from ..frontend.ops.math import abs as _abs
from ..frontend.ops.math import equal, greater, less, maximum, minimum, where
from ._checks import shape_error, type_error

TensorLike = Any


def _channels(images: TensorLike, fn: str) -> tuple[Any, list[Any]]:
    x = convert_to_tensor(images)
    if x.dtype not in FLOAT_DTYPES:
        raise type_error(fn, f"images must be float16, bfloat16, float32 or float64 (convert "
                             f"integer images with tw.image.convert_image_dtype), got "
                             f"{x.dtype.name}")
    if x.ndim < 1 or x.shape[-1] != 3:
        raise shape_error(fn, f"the last dimension of images must be 3 (the channels), got "
                              f"shape {list(x.shape)}")
    return x, unstack(x, axis=-1)


def _const(x: Any, value: float) -> Any:
    """`value` rounded to x's dtype, as the kernel's ``T(value)``."""
    return np.asarray(value, x.dtype.np)


def rgb_to_hsv(images: TensorLike, name: str | None = None) -> TensorLike:
    """RGB pixels (the last dimension, values in [0, 1]) as hue, saturation and value, each
    in [0, 1] (``tf.image.rgb_to_hsv``; hue 0 is red, 1/3 green, 2/3 blue). Float
    images only, as in TensorFlow."""
    with name_scope(name or "rgb_to_hsv"):
        x, (r, g, b) = _channels(images, "rgb_to_hsv")
        zero, one = _const(x, 0), _const(x, 1)
        v = maximum(maximum(r, g), b)
        rng = v - minimum(minimum(r, g), b)
        s = where(greater(v, zero), rng / where(greater(v, zero), v, one), zero)
        # norm = range.inverse() * (T(1) / T(6)): a reciprocal, then a product
        positive = greater(rng, zero)
        norm = (one / where(positive, rng, one)) * (one / _const(x, 6))
        two_sixths = _const(x, 2) / _const(x, 6)
        four_sixths = _const(x, 4) / _const(x, 6)
        h = where(equal(r, v), norm * (g - b),
                  where(equal(g, v), norm * (b - r) + two_sixths, norm * (r - g) + four_sixths))
        h = where(positive, h, zero)
        h = where(less(h, zero), h + one, h)
        return stack([h, s, v], axis=-1)


def hsv_to_rgb(images: TensorLike, name: str | None = None) -> TensorLike:
    """HSV pixels (the last dimension: hue, saturation, value in [0, 1]) as RGB
    (``tf.image.hsv_to_rgb``). Float images only, as in TensorFlow."""
    with name_scope(name or "hsv_to_rgb"):
        x, (h, s, v) = _channels(images, "hsv_to_rgb")
        zero, one, two = _const(x, 0), _const(x, 1), _const(x, 2)

        def clamp(t: Any) -> Any:
            return minimum(maximum(t, zero), one)

        dh = h * _const(x, 6)
        dr = clamp(_abs(dh - _const(x, 3)) - one)
        dg = clamp(-_abs(dh - two) + two)
        db = clamp(-_abs(dh - _const(x, 4)) + two)
        one_s = -s + one
        return stack([(one_s + s * dr) * v, (one_s + s * dg) * v, (one_s + s * db) * v],
                     axis=-1)


__all__ = ["rgb_to_hsv", "hsv_to_rgb"]
