"""Differences between neighboring pixels: ``tf.image.total_variation`` and
``tf.image.image_gradients``."""

from __future__ import annotations

from typing import Any

from ..frontend.context import name_scope
from ..frontend.ops.array import concat, zeros_like
from ..frontend.ops.math import abs as _abs
from ..frontend.ops.math import reduce_sum
from ._checks import image_tensor, type_error

TensorLike = Any


def total_variation(images: TensorLike, name: str | None = None) -> TensorLike:
    """The sum of absolute differences between vertically and horizontally neighboring
    pixels (``tf.image.total_variation``): a scalar for one ``[h, w, c]`` image, one value
    per image of a ``[batch, h, w, c]`` batch."""
    with name_scope(name or "total_variation"):
        x = image_tensor(images, "total_variation", arg="images")
        if x.dtype.is_unsigned or x.dtype.is_bool:
            # differences of unsigned pixels would wrap around; TensorFlow has no Abs for
            # them and refuses too
            raise type_error("total_variation", f"images of dtype {x.dtype.name} have no "
                                                f"signed differences; cast them to a float "
                                                f"or signed integer dtype first")
        if x.ndim == 3:
            dy = x[1:, :, :] - x[:-1, :, :]
            dx = x[:, 1:, :] - x[:, :-1, :]
            axis = None
        else:
            dy = x[:, 1:, :, :] - x[:, :-1, :, :]
            dx = x[:, :, 1:, :] - x[:, :, :-1, :]
            axis = [1, 2, 3]
        return reduce_sum(_abs(dy), axis=axis) + reduce_sum(_abs(dx), axis=axis)


def image_gradients(image: TensorLike) -> tuple[TensorLike, TensorLike]:
    """(dy, dx): each pixel's forward difference to the pixel below and to the right,
    0 on the last row / column, both of the image's shape (``tf.image.image_gradients``,
    ``[batch, h, w, d]`` images)."""
    with name_scope("image_gradients"):
        x = image_tensor(image, "image_gradients", ranks=(4,))
        dy = x[:, 1:, :, :] - x[:, :-1, :, :]
        dx = x[:, :, 1:, :] - x[:, :, :-1, :]
        dy = concat([dy, zeros_like(x[:, :1, :, :])], 1)
        dx = concat([dx, zeros_like(x[:, :, :1, :])], 2)
        return dy, dx
