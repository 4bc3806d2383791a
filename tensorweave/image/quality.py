"""``tw.image.ssim``: structural similarity of two batches of images, TensorFlow's
construction (an 11x11 Gaussian window applied by a depthwise convolution, VALID)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.dtypes import float32
from ..frontend.building import constant, convert_to_tensor
from ..frontend.context import name_scope
from ..frontend.ops.array import reshape
from ..frontend.ops.math import cast, reduce_mean, square
from ..frontend.ops.nn import depthwise_conv2d
from ._checks import at_least_3d, shape_error, static_float, static_int, type_error
from .convert import convert_image_dtype

TensorLike = Any


def _gaussian_window(size: int, sigma: float) -> np.ndarray:
    """TensorFlow's ``_fspecial_gauss`` in float32: exp(-(dy^2 + dx^2) / (2 sigma^2))
    normalized to sum 1 (a softmax of the exponents), ``[size, size, 1, 1]``."""
    f = np.float32
    coords = np.arange(size, dtype=f) - f(size - 1) / f(2.0)
    g = np.square(coords) * (f(-0.5) / np.square(f(sigma)))
    g = (g.reshape(1, -1) + g.reshape(-1, 1)).reshape(-1)
    e = np.exp(g - g.max())
    return (e / e.sum(dtype=f)).astype(f).reshape(size, size, 1, 1)


def ssim(img1: TensorLike, img2: TensorLike, max_val: Any, filter_size: int = 11,
         filter_sigma: float = 1.5, k1: float = 0.01, k2: float = 0.03,
         return_index_map: bool = False) -> TensorLike:
    """The SSIM of each image of `img1` against `img2` (the last three dims are one image,
    averaged over its channels; ``tf.image.ssim``): luminance x contrast-structure
    terms from Gaussian-weighted local means (`filter_size`, `filter_sigma`), averaged
    over the valid window positions, or the map of them with `return_index_map`. Images
    are converted with `convert_image_dtype` to float32, `max_val` too (in img1's dtype).
    Height and width must be at least `filter_size`."""
    fn = "ssim"
    with name_scope("SSIM"):
        a = at_least_3d(img1, fn, "img1")
        b = at_least_3d(img2, fn, "img2")
        if a.dtype != b.dtype:
            raise type_error(fn, f"img1 and img2 must have the same dtype, got "
                                 f"{a.dtype.name} and {b.dtype.name}")
        if list(a.shape[-3:]) != list(b.shape[-3:]) or None in a.shape[-3:]:
            raise shape_error(fn, f"the last three dimensions of img1 and img2 must be known "
                                  f"and equal, got {list(a.shape)} and {list(b.shape)}")
        size = static_int(filter_size, fn, "filter_size")
        h, w, depth = (int(d) for d in a.shape[-3:])
        if h < size or w < size:
            raise shape_error(fn, f"the images ({h}x{w}) must be at least filter_size "
                                  f"({size}) in height and width")
        sigma = static_float(filter_sigma, fn, "filter_sigma")
        peak = convert_image_dtype(cast(convert_to_tensor(max_val), a.dtype), float32)
        x, y = convert_image_dtype(a, float32), convert_image_dtype(b, float32)
        kernel = constant(np.tile(_gaussian_window(size, sigma), (1, 1, depth, 1)))
        lead = [int(d) if d is not None else -1 for d in a.shape[:-3]]

        def local_mean(v: Any) -> Any:
            flat = reshape(v, [-1, h, w, depth])
            out = depthwise_conv2d(flat, kernel, [1, 1, 1, 1], "VALID")
            return reshape(out, [*lead, h - size + 1, w - size + 1, depth])

        c1 = square(peak * np.float32(k1))
        c2 = square(peak * np.float32(k2))
        mean0, mean1 = local_mean(x), local_mean(y)
        num0 = mean0 * mean1 * 2.0
        den0 = square(mean0) + square(mean1)
        luminance = (num0 + c1) / (den0 + c1)
        num1 = local_mean(x * y) * 2.0
        den1 = local_mean(square(x) + square(y))
        cs = (num1 - num0 + c2) / (den1 - den0 + c2)
        per_channel = luminance * cs
        if not return_index_map:
            per_channel = reduce_mean(per_channel, axis=[-3, -2])
        return reduce_mean(per_channel, axis=[-1])
