"""Pixel-value adjustments (``tf.image.adjust_brightness``, ``adjust_contrast``,
``adjust_gamma``, their random versions, ``per_image_standardization``) and channel
conversions (``rgb_to_grayscale``, ``grayscale_to_rgb``). As in TensorFlow, the
adjustments work in float32 (other dtypes are converted with `convert_image_dtype`, so
uint8 pixels become [0, 1]) and convert back to the image's dtype, saturating."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.dtypes import float16, float32
from ..frontend.building import constant, convert_to_tensor
from ..frontend.context import name_scope
from ..frontend.ops.array import expand_dims, tile
from ..frontend.ops.einsum import tensordot
from ..frontend.ops.math import cast, divide, maximum, multiply, reduce_mean, reduce_std, subtract
from ..frontend.ops.math import pow as _pow
from ..frontend.ops.random import stateless_uniform, uniform
from ._checks import at_least_3d, factor_bounds, shape_error, static_float, type_error, value_error
from .convert import convert_image_dtype

TensorLike = Any


def _as_float(x: Any) -> Any:
    """float16 and float32 images as they are, others converted to float32 pixels."""
    return x if x.dtype in (float16, float32) else convert_image_dtype(x, float32)


def adjust_brightness(image: TensorLike, delta: Any) -> TensorLike:
    """`delta` added to every pixel, in float (``tf.image.adjust_brightness``): a uint8
    image gains ``delta * 255`` levels, saturating at 0 and 255."""
    with name_scope("adjust_brightness"):
        x = convert_to_tensor(image)
        flt = _as_float(x)
        adjusted = flt + cast(convert_to_tensor(delta), flt.dtype)
        return convert_image_dtype(adjusted, x.dtype, saturate=True)


def adjust_contrast(images: TensorLike, contrast_factor: Any) -> TensorLike:
    """Each channel of each image moved away from its mean: ``(x - mean) * factor +
    mean``, the mean over height and width (``tf.image.adjust_contrast``; images of rank 3
    or more)."""
    with name_scope("adjust_contrast"):
        x = at_least_3d(images, "adjust_contrast", "images")
        flt = _as_float(x)
        mean = reduce_mean(flt, axis=[-3, -2], keepdims=True)
        factor = cast(convert_to_tensor(contrast_factor), flt.dtype)
        adjusted = (flt - mean) * factor + mean
        return convert_image_dtype(adjusted, x.dtype, saturate=True)


def adjust_gamma(image: TensorLike, gamma: Any = 1, gain: Any = 1) -> TensorLike:
    """``gain * image ** gamma`` on the float pixels (``tf.image.adjust_gamma``); `gamma`
    must be non-negative."""
    with name_scope("adjust_gamma"):
        x = convert_to_tensor(image)
        flt = _as_float(x)
        try:
            g = static_float(gamma, "adjust_gamma", "gamma")
        except TypeError:
            g = None  # a computed gamma: not checked, as TensorFlow checks only at run time
        if g is not None and g < 0:
            raise value_error("adjust_gamma", f"Gamma should be a non-negative real number, "
                                              f"got {g}")
        adjusted = multiply(cast(convert_to_tensor(gain), flt.dtype),
                            _pow(flt, cast(convert_to_tensor(gamma), flt.dtype)))
        return convert_image_dtype(adjusted, x.dtype, saturate=True)


def per_image_standardization(image: TensorLike) -> TensorLike:
    """Each image (the last three dims) scaled to mean 0 and variance 1:
    ``(x - mean) / max(stddev, 1 / sqrt(N))`` in float32, N its number of values
    (``tf.image.per_image_standardization``; integer pixels are cast, not rescaled)."""
    with name_scope("per_image_standardization"):
        x = cast(at_least_3d(image, "per_image_standardization"), float32)
        dims = x.shape[-3:]
        if any(d is None for d in dims):
            raise shape_error("per_image_standardization",
                              f"the image size must be known when the graph is built, got "
                              f"{list(x.shape)}")
        num_pixels = int(np.prod([int(d) for d in dims]))
        mean = reduce_mean(x, axis=[-1, -2, -3], keepdims=True)
        stddev = reduce_std(x, axis=[-1, -2, -3], keepdims=True)
        # rsqrt of the float32 count, as TensorFlow computes it
        min_stddev = constant(np.float32(1) / np.sqrt(np.float32(num_pixels)))
        return divide(subtract(x, mean), maximum(stddev, min_stddev))


def random_brightness(image: TensorLike, max_delta: float, seed: int | None = None) -> TensorLike:
    """`adjust_brightness` by a delta drawn uniformly from [-max_delta, max_delta)
    (``tf.image.random_brightness``)."""
    max_delta = static_float(max_delta, "random_brightness", "max_delta")
    if max_delta < 0:
        raise value_error("random_brightness", f"max_delta must be non-negative, got "
                                               f"{max_delta}")
    return adjust_brightness(image, uniform([], -max_delta, max_delta, seed=seed))


def stateless_random_brightness(image: TensorLike, max_delta: float, seed: Any) -> TensorLike:
    """`random_brightness` as a pure function of `seed` (``[a, b]``)."""
    max_delta = static_float(max_delta, "stateless_random_brightness", "max_delta")
    if max_delta < 0:
        raise value_error("stateless_random_brightness", f"max_delta must be non-negative, "
                                                         f"got {max_delta}")
    return adjust_brightness(image, stateless_uniform([], seed, -max_delta, max_delta))


def random_contrast(image: TensorLike, lower: float, upper: float,
                    seed: int | None = None) -> TensorLike:
    """`adjust_contrast` by a factor drawn uniformly from [lower, upper)
    (``tf.image.random_contrast``)."""
    lo, hi = factor_bounds("random_contrast", lower, upper)
    return adjust_contrast(image, uniform([], lo, hi, seed=seed))


def stateless_random_contrast(image: TensorLike, lower: float, upper: float,
                              seed: Any) -> TensorLike:
    """`random_contrast` as a pure function of `seed` (``[a, b]``)."""
    lo, hi = factor_bounds("stateless_random_contrast", lower, upper)
    return adjust_contrast(image, stateless_uniform([], seed, lo, hi))


_GRAY_WEIGHTS = np.array([0.2989, 0.5870, 0.1140], np.float32)


def rgb_to_grayscale(images: TensorLike, name: str | None = None) -> TensorLike:
    """RGB images (last dim 3) as grayscale (last dim 1, same dtype and rank):
    ``0.2989 R + 0.5870 G + 0.1140 B`` on the float pixels
    (``tf.image.rgb_to_grayscale``)."""
    with name_scope(name or "rgb_to_grayscale"):
        x = convert_to_tensor(images)
        if x.ndim < 1 or x.shape[-1] not in (3, None):
            raise shape_error("rgb_to_grayscale", f"the last dimension of RGB images must be "
                                                  f"3, got shape {list(x.shape)}")
        flt = convert_image_dtype(x, float32)
        gray = expand_dims(tensordot(flt, constant(_GRAY_WEIGHTS), [[-1], [-1]]), -1)
        return convert_image_dtype(gray, x.dtype)


def grayscale_to_rgb(images: TensorLike, name: str | None = None) -> TensorLike:
    """Grayscale images (last dim 1) with the value repeated in 3 channels
    (``tf.image.grayscale_to_rgb``)."""
    with name_scope(name or "grayscale_to_rgb"):
        x = convert_to_tensor(images)
        if x.ndim < 2:
            raise shape_error("grayscale_to_rgb", f"A grayscale image (shape "
                                                  f"{list(x.shape)}) must be at least two-"
                                                  f"dimensional.")
        if x.shape[-1] not in (1, None):
            raise shape_error("grayscale_to_rgb", f"Last dimension of a grayscale image "
                                                  f"should be size 1, got shape "
                                                  f"{list(x.shape)}")
        return tile(x, [1] * (x.ndim - 1) + [3])


# TensorFlow's color-space matrices (rows: input channel, columns: output channel)
_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
               [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
               [0.6208248, -0.64720424, 1.70423049]]
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
               [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]


def _color_matrix(images: TensorLike, matrix: list, fn: str) -> TensorLike:
    """The last dimension (3 channels) of float `images` times `matrix`, in their dtype."""
    with name_scope(fn):
        x = convert_to_tensor(images)
        if x.ndim < 1 or x.shape[-1] not in (3, None):
            raise shape_error(fn, f"the last dimension of the images must be 3, got shape "
                                  f"{list(x.shape)}")
        if not x.dtype.is_floating:
            raise type_error(fn, f"images must be floating-point (pixels in [0, 1]), got "
                                 f"{x.dtype.name}; convert_image_dtype them first")
        return tensordot(x, constant(np.asarray(matrix, x.dtype.np)), [[x.ndim - 1], [0]])


def rgb_to_yiq(images: TensorLike) -> TensorLike:
    """RGB images (floats in [0, 1]) in YIQ (``tf.image.rgb_to_yiq``)."""
    return _color_matrix(images, _RGB_TO_YIQ, "rgb_to_yiq")


def yiq_to_rgb(images: TensorLike) -> TensorLike:
    """YIQ images back in RGB (``tf.image.yiq_to_rgb``)."""
    return _color_matrix(images, _YIQ_TO_RGB, "yiq_to_rgb")


def rgb_to_yuv(images: TensorLike) -> TensorLike:
    """RGB images (floats in [0, 1]) in YUV (``tf.image.rgb_to_yuv``)."""
    return _color_matrix(images, _RGB_TO_YUV, "rgb_to_yuv")


def yuv_to_rgb(images: TensorLike) -> TensorLike:
    """YUV images back in RGB (``tf.image.yuv_to_rgb``)."""
    return _color_matrix(images, _YUV_TO_RGB, "yuv_to_rgb")
