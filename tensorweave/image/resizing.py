"""``tw.image.resize`` (TensorFlow 2) and TensorFlow 1's ``resize_images``,
``resize_bilinear``, ``resize_nearest_neighbor``, ``resize_bicubic`` and
``resize_area``.

The image's height and width and the new size must be known when the graph is built:
the sampling tables (`sampling`) are computed then, and the resize is a composition of
gathers and arithmetic (`resample`). Every method but nearest returns float32, whatever
the input dtype (integers and float64 too), as TensorFlow's kernels do; nearest keeps the
dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.dtypes import float32
from ..frontend.building import convert_to_tensor
from ..frontend.context import name_scope
from ..frontend.ops.array import _const_array, identity
from ..frontend.ops.math import cast
from ..frontend.tensor import EagerTensor, Tensor
from . import graph_sampling, resample, sampling
from ._checks import image_tensor, shape_error, static_hw, type_error, value_error

TensorLike = Any


class ResizeMethod:
    """The `method` names of ``tw.image.resize`` (``tf.image.ResizeMethod``)."""
    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


class ResizeMethodV1:
    """TensorFlow 1's `method` numbers of ``resize_images``."""
    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


_V1_METHODS = {0: "bilinear", 1: "nearest", 2: "bicubic", 3: "area",
               "bilinear": "bilinear", "nearest": "nearest", "bicubic": "bicubic",
               "area": "area"}
_SCALE_AND_TRANSLATE = ("lanczos3", "lanczos5", "gaussian", "mitchellcubic")


def _new_size(size: Any, fn: str) -> tuple[int, int]:
    """`size` as (new_height, new_width): two positive ints known at build time."""
    arr = _const_array(size) if isinstance(size, (Tensor, EagerTensor)) else None
    if isinstance(size, Tensor) and arr is None:
        raise type_error(fn, f"'size' must be known when the graph is built (Python ints "
                             f"or a constant), got the computed tensor {size!r}")
    if arr is None:
        try:
            arr = np.asarray(size)
        except (TypeError, ValueError):
            raise type_error(fn, f"'size' must be a 1-D int32 Tensor, got {size!r}") from None
    if arr.dtype.kind not in "iu" and not (arr.dtype.kind == "f" and arr.size == 0):
        raise type_error(fn, f"'size' must be a 1-D int32 Tensor, got {size!r}")
    if arr.shape != (2,):
        raise shape_error(fn, f"'size' must be a 1-D Tensor of 2 elements: new_height, "
                              f"new_width, got shape {list(arr.shape)}")
    oh, ow = (int(v) for v in arr)
    if oh <= 0 or ow <= 0:
        raise value_error(fn, f"the new size must be positive, got [{oh}, {ow}]")
    return oh, ow


def _aspect_preserving(h: int, w: int, oh: int, ow: int) -> tuple[int, int]:
    """The size that fits in (oh, ow) keeping h:w, computed as TensorFlow does: float32
    scale factors, the smaller one, rounded half to even."""
    f = np.float32
    scale = min(f(oh) / f(h), f(ow) / f(w))
    return int(np.round(scale * f(h))), int(np.round(scale * f(w)))


def _numeric(x: Any, fn: str) -> Any:
    """`x` if its dtype is a number type (TensorFlow's resize kernels take no bool)."""
    if not (x.dtype.is_integer or x.dtype.is_floating):
        raise type_error(fn, f"images must be of an integer or floating-point dtype, got "
                             f"{x.dtype.name}")
    return x


def _as_float32(x: Any) -> Any:
    return x if x.dtype == float32 else cast(x, float32)


def _resample(x: Any, method: str, oh: int, ow: int, *, align_corners: bool = False,
              half_pixel: bool = True, antialias: bool = False) -> Any:
    """`x` (rank 3 or 4) resized to (oh, ow) with `method`, in x's own dtype (the callers
    cast to float32 first where TensorFlow does). Bilinear and nearest take a height or
    width known only at run time (their tables are then computed in the graph); the
    other methods need both when the graph is built."""
    h, w = x.shape[-3], x.shape[-2]
    axes = (x.ndim - 3, x.ndim - 2)
    if method == "nearest":
        return resample.nearest(x, *(
            sampling.nearest(int(n), size, align_corners, half_pixel) if n is not None else
            graph_sampling.nearest(x, axis, size, align_corners, half_pixel)
            for n, axis, size in zip((h, w), axes, (oh, ow))))
    if method == "bilinear" and not antialias:
        if (oh, ow) == (h, w):
            # TensorFlow's ResizeBilinear copies an image it does not resize (its
            # arithmetic would turn an inf pixel into NaN: inf + (inf - inf) * 0)
            return identity(x)
        return resample.bilinear(x, *(
            sampling.linear(int(n), size, align_corners, half_pixel) if n is not None else
            graph_sampling.linear(x, axis, size, align_corners, half_pixel)
            for n, axis, size in zip((h, w), axes, (oh, ow))))
    h, w = static_hw(x, "resize", f"height and width (for method {method!r}; bilinear and "
                                  f"nearest also take sizes known only at run time)")
    if method == "bicubic" and not antialias:
        return resample.weighted(x, sampling.cubic(h, oh, align_corners, half_pixel),
                                 sampling.cubic(w, ow, align_corners, half_pixel))
    if method == "area":
        return resample.weighted(x, sampling.area(h, oh, align_corners),
                                 sampling.area(w, ow, align_corners))
    kernel = {"bilinear": "triangle", "bicubic": "keyscubic"}.get(method, method)
    return resample.weighted(x, sampling.scale_and_translate(kernel, h, oh, antialias),
                             sampling.scale_and_translate(kernel, w, ow, antialias))


def resize(images: TensorLike, size: Any, method: str = ResizeMethod.BILINEAR,
           preserve_aspect_ratio: bool = False, antialias: bool = False,
           name: str | None = None) -> TensorLike:
    """`images` (``[h, w, c]`` or ``[batch, h, w, c]``) resized to `size` ``[new_h,
    new_w]`` (``tf.image.resize``): `method` is one of ``ResizeMethod``'s names
    (bilinear, nearest, bicubic, area, lanczos3, lanczos5, gaussian, mitchellcubic), with
    half-pixel centers. `antialias` widens the bilinear and bicubic kernels when
    downsampling (and applies to the lanczos/gaussian/mitchellcubic kernels); area and
    nearest ignore it. `preserve_aspect_ratio` fits the image inside `size` instead.
    The result is float32 except for nearest, which keeps the dtype."""
    fn = "resize"
    method = str(method).lower() if isinstance(method, str) else method
    if method not in ("bilinear", "nearest", "bicubic", "area", *_SCALE_AND_TRANSLATE):
        raise value_error(fn, f"Resize method is not implemented: {method!r}; expected one "
                              f"of bilinear, nearest, bicubic, area, lanczos3, lanczos5, "
                              f"gaussian, mitchellcubic")
    with name_scope(name or "resize"):
        x = _numeric(image_tensor(images, fn, arg="images"), fn)
        oh, ow = _new_size(size, fn)
        if preserve_aspect_ratio:
            oh, ow = _aspect_preserving(*static_hw(x, fn), oh, ow)
        if method != "nearest":
            x = _as_float32(x)
        return _resample(x, method, oh, ow, antialias=bool(antialias))


def resize_images(images: TensorLike, size: Any, method: Any = ResizeMethodV1.BILINEAR,
                  align_corners: bool = False, preserve_aspect_ratio: bool = False,
                  name: str | None = None) -> TensorLike:
    """TensorFlow 1's ``tf.image.resize_images`` (``tf.compat.v1.image.resize``):
    `method` 0-3 (bilinear, nearest, bicubic, area; or their names), the legacy sampling
    (no half-pixel centers; `align_corners` maps corner pixels onto corner pixels). An
    image already of the new size comes back unchanged (its own dtype)."""
    fn = "resize_images"
    if method not in _V1_METHODS:
        raise value_error(fn, f"Resize method is not implemented: {method!r}; expected "
                              f"0 (bilinear), 1 (nearest), 2 (bicubic) or 3 (area)")
    with name_scope(name or "resize"):
        x = _numeric(image_tensor(images, fn, arg="images"), fn)
        oh, ow = _new_size(size, fn)
        if preserve_aspect_ratio:
            oh, ow = _aspect_preserving(*static_hw(x, fn), oh, ow)
        if (oh, ow) == tuple(x.shape[-3:-1]):
            return x
        kind = _V1_METHODS[method]
        if kind != "nearest":
            x = _as_float32(x)
        return _resample(x, kind, oh, ow, align_corners=bool(align_corners), half_pixel=False)


def _v1_kernel(kind: str, fn: str, images: TensorLike, size: Any, align_corners: bool,
               half_pixel_centers: bool, name: str | None) -> TensorLike:
    """TensorFlow 1's raw resize ops: 4-D images only; align_corners and
    half_pixel_centers exclude each other."""
    with name_scope(name or fn):
        x = _numeric(image_tensor(images, fn, ranks=(4,), arg="images"), fn)
        oh, ow = _new_size(size, fn)
        if align_corners and half_pixel_centers:
            raise value_error(fn, "If half_pixel_centers is True, align_corners must be False.")
        if kind != "nearest":
            x = _as_float32(x)
        return _resample(x, kind, oh, ow, align_corners=bool(align_corners),
                         half_pixel=bool(half_pixel_centers))


def resize_bilinear(images: TensorLike, size: Any, align_corners: bool = False,
                    name: str | None = None, half_pixel_centers: bool = False) -> TensorLike:
    """TensorFlow 1's ``tf.image.resize_bilinear`` (the ResizeBilinear op): 4-D images,
    float32 result; legacy sampling unless `half_pixel_centers`."""
    return _v1_kernel("bilinear", "resize_bilinear", images, size, align_corners,
                      half_pixel_centers, name)


def resize_nearest_neighbor(images: TensorLike, size: Any, align_corners: bool = False,
                            name: str | None = None,
                            half_pixel_centers: bool = False) -> TensorLike:
    """TensorFlow 1's ``tf.image.resize_nearest_neighbor``: 4-D images, the input's dtype;
    legacy sampling unless `half_pixel_centers` (`align_corners` rounds instead of
    flooring)."""
    return _v1_kernel("nearest", "resize_nearest_neighbor", images, size, align_corners,
                      half_pixel_centers, name)


def resize_bicubic(images: TensorLike, size: Any, align_corners: bool = False,
                   name: str | None = None, half_pixel_centers: bool = False) -> TensorLike:
    """TensorFlow 1's ``tf.image.resize_bicubic``: 4-D images, float32 result; the legacy
    kernel (a = -0.75, edge taps clamped) unless `half_pixel_centers` (Keys, a = -0.5)."""
    return _v1_kernel("bicubic", "resize_bicubic", images, size, align_corners,
                      half_pixel_centers, name)


def resize_area(images: TensorLike, size: Any, align_corners: bool = False,
                name: str | None = None) -> TensorLike:
    """TensorFlow 1's ``tf.image.resize_area``: 4-D images, float32 result, each output
    pixel the average of the input area it covers."""
    return _v1_kernel("area", "resize_area", images, size, align_corners, False, name)


def _core_for_tests(images: TensorLike, size: Any, method: str, align_corners: bool = False,
                    half_pixel: bool = True) -> TensorLike:
    """The resampling in the images' own dtype (no float32 cast): lets the tests check
    gradients in float64, where finite differences are accurate."""
    x = convert_to_tensor(images)
    return _resample(x, method, *_new_size(size, "resize"), align_corners=align_corners,
                     half_pixel=half_pixel)


__all__ = ["ResizeMethod", "ResizeMethodV1", "resize", "resize_images", "resize_bilinear",
           "resize_nearest_neighbor", "resize_bicubic", "resize_area"]

