"""Differences between pixels: ``tf.image.total_variation``, ``image_gradients``,
``sobel_edges`` and ``psnr``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.dtypes import float32
from ..frontend.building import constant, convert_to_tensor
from ..frontend.context import name_scope
from ..frontend.ops.array import concat, pad, reshape, stack, zeros_like
from ..frontend.ops.math import abs as _abs
from ..frontend.ops.math import (
    cast,
    log,
    reduce_mean,
    reduce_sum,
    squared_difference,
    subtract,
)
from ..frontend.ops.nn import depthwise_conv2d
from ._checks import at_least_3d, image_tensor, shape_error, type_error
from .convert import convert_image_dtype

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


def psnr(a: TensorLike, b: TensorLike, max_val: Any, name: str | None = None) -> TensorLike:
    """Peak signal-to-noise ratio between two batches of images (the last three dims are
    one image; ``tf.image.psnr``): ``20 log10(max_val) - 10 log10(mse)`` in float32, the
    images and `max_val` (in a's dtype) converted with `convert_image_dtype` first. Equal
    images give inf."""
    fn = "psnr"
    with name_scope(name or "PSNR"):
        a = at_least_3d(a, fn, "a")
        b = at_least_3d(b, fn, "b")
        if a.dtype != b.dtype:
            raise type_error(fn, f"a and b must have the same dtype, got {a.dtype.name} and "
                                 f"{b.dtype.name}")
        sa, sb = list(a.shape[-3:]), list(b.shape[-3:])
        if any(x is not None and y is not None and x != y for x, y in zip(sa, sb)):
            raise shape_error(fn, f"the last three dimensions of a and b must match, got "
                                  f"{list(a.shape)} and {list(b.shape)}")
        peak = convert_image_dtype(cast(convert_to_tensor(max_val), a.dtype), float32)
        fa, fb = convert_image_dtype(a, float32), convert_image_dtype(b, float32)
        mse = reduce_mean(squared_difference(fa, fb), axis=[-3, -2, -1])
        return subtract(20.0 * log(peak) / log(constant(np.float32(10.0))),
                        constant(np.float32(10 / np.log(10))) * log(mse))


_SOBEL = np.array([[[-1, -2, -1], [0, 0, 0], [1, 2, 1]],     # vertical change (dy)
                   [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]])    # horizontal change (dx)


def sobel_edges(image: TensorLike) -> TensorLike:
    """The Sobel responses of each channel of ``[batch, h, w, d]`` images: ``[batch, h,
    w, d, 2]`` holding (dy, dx), with the images mirrored by one pixel at the borders
    (REFLECT), as ``tf.image.sobel_edges`` (a depthwise convolution)."""
    fn = "sobel_edges"
    with name_scope(fn):
        x = image_tensor(image, fn, ranks=(4,))
        depth = x.shape[-1]
        if depth is None:
            raise shape_error(fn, f"the number of channels must be known when the graph is "
                                  f"built, got shape {list(x.shape)}")
        if not x.dtype.is_floating:
            raise type_error(fn, f"images must be floating-point, got {x.dtype.name}")
        kernels = np.transpose(_SOBEL, (1, 2, 0))[:, :, None, :]        # [3, 3, 1, 2]
        kernels = np.tile(kernels, (1, 1, int(depth), 1)).astype(x.dtype.np)
        padded = pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
        out = depthwise_conv2d(padded, constant(kernels), [1, 1, 1, 1], "VALID")
        if any(d is None for d in x.shape[1:3]):
            # height or width known only at run time (reshape wants a static shape):
            # channel c's responses are out's channels 2c (dy) and 2c + 1 (dx)
            return stack([out[..., 0::2], out[..., 1::2]], axis=-1)
        return reshape(out, [-1 if x.shape[0] is None else int(x.shape[0]), *[
            int(d) for d in x.shape[1:]], 2])
