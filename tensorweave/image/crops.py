"""Crops and pads of images: ``central_crop``, ``crop_to_bounding_box``,
``pad_to_bounding_box``, ``resize_with_crop_or_pad``, ``resize_with_pad``,
``random_crop``. Boxes are static (Python ints or constants) and checked against the
image's static size when the graph is built, with TensorFlow's messages."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.dtypes import int32
from ..frontend.building import constant, convert_to_tensor
from ..frontend.context import name_scope
from ..frontend.ops.array import _static_ints, gather, pad
from ..frontend.ops.array import slice as _slice
from ..frontend.ops.math import add, floormod
from ..frontend.ops.random import stateless_uniform, uniform
from ._checks import (
    image_tensor,
    shape_error,
    static_float,
    static_hw,
    static_int,
    value_error,
)

TensorLike = Any


def _box(fn: str, **values: Any) -> dict[str, int]:
    return {k: static_int(v, fn, k) for k, v in values.items()}


def crop_to_bounding_box(image: TensorLike, offset_height: int, offset_width: int,
                         target_height: int, target_width: int) -> TensorLike:
    """The ``target_height x target_width`` block of `image` whose top-left pixel is
    (`offset_height`, `offset_width`) (``tf.image.crop_to_bounding_box``)."""
    fn = "crop_to_bounding_box"
    with name_scope(fn):
        x = image_tensor(image, fn)
        b = _box(fn, offset_height=offset_height, offset_width=offset_width,
                 target_height=target_height, target_width=target_width)
        for cond, msg in ((b["offset_width"] >= 0, "offset_width must be >= 0."),
                          (b["offset_height"] >= 0, "offset_height must be >= 0."),
                          (b["target_width"] > 0, "target_width must be > 0."),
                          (b["target_height"] > 0, "target_height must be > 0.")):
            if not cond:
                raise value_error(fn, f"{msg} Got {b}")
        h, w = x.shape[-3], x.shape[-2]
        if w is not None and w < b["target_width"] + b["offset_width"]:
            raise value_error(fn, f"width must be >= target + offset. Got image "
                                  f"{list(x.shape)} and {b}")
        if h is not None and h < b["target_height"] + b["offset_height"]:
            raise value_error(fn, f"height must be >= target + offset. Got image "
                                  f"{list(x.shape)} and {b}")
        lead = [0] * (x.ndim - 3)
        return _slice(x, [*lead, b["offset_height"], b["offset_width"], 0],
                      [*[-1] * (x.ndim - 3), b["target_height"], b["target_width"], -1])


def pad_to_bounding_box(image: TensorLike, offset_height: int, offset_width: int,
                        target_height: int, target_width: int) -> TensorLike:
    """`image` placed at (`offset_height`, `offset_width`) of a zero image of
    ``target_height x target_width`` (``tf.image.pad_to_bounding_box``)."""
    fn = "pad_to_bounding_box"
    with name_scope(fn):
        x = image_tensor(image, fn)
        h, w = static_hw(x, fn)
        b = _box(fn, offset_height=offset_height, offset_width=offset_width,
                 target_height=target_height, target_width=target_width)
        after_w = b["target_width"] - b["offset_width"] - w
        after_h = b["target_height"] - b["offset_height"] - h
        for cond, msg in ((b["offset_height"] >= 0, "offset_height must be >= 0"),
                          (b["offset_width"] >= 0, "offset_width must be >= 0"),
                          (after_w >= 0, "width must be <= target - offset"),
                          (after_h >= 0, "height must be <= target - offset")):
            if not cond:
                raise value_error(fn, f"{msg}; got image {list(x.shape)} and {b}")
        paddings = [[0, 0]] * (x.ndim - 3) + [[b["offset_height"], after_h],
                                              [b["offset_width"], after_w], [0, 0]]
        return pad(x, paddings)


def resize_with_crop_or_pad(image: TensorLike, target_height: int,
                            target_width: int) -> TensorLike:
    """`image` centrally cropped or zero-padded (each axis on its own) to
    ``target_height x target_width`` (``tf.image.resize_with_crop_or_pad``; an odd
    difference puts the extra pixel of a crop at the top/left offset, of a pad after)."""
    fn = "resize_with_crop_or_pad"
    with name_scope(fn):
        x = image_tensor(image, fn)
        h, w = static_hw(x, fn)
        th, tw_ = static_int(target_height, fn, "target_height"), \
            static_int(target_width, fn, "target_width")
        if tw_ <= 0 or th <= 0:
            raise value_error(fn, f"target_width and target_height must be > 0, got "
                                  f"{th} x {tw_}")
        width_diff, height_diff = tw_ - w, th - h
        cropped = crop_to_bounding_box(x, max(-height_diff // 2, 0), max(-width_diff // 2, 0),
                                       min(th, h), min(tw_, w))
        return pad_to_bounding_box(cropped, max(height_diff // 2, 0), max(width_diff // 2, 0),
                                   th, tw_)


def central_crop(image: TensorLike, central_fraction: float) -> TensorLike:
    """The central `central_fraction` (in (0, 1]) of `image`'s height and width
    (``tf.image.central_crop``): the crop starts at ``int((size - size * fraction) / 2)``
    in float64 and keeps ``size - 2 * start`` pixels."""
    fn = "central_crop"
    with name_scope(fn):
        fraction = static_float(central_fraction, fn, "central_fraction")
        if fraction <= 0.0 or fraction > 1.0:
            raise value_error(fn, f"central_fraction must be within (0, 1], got {fraction}")
        x = image_tensor(image, fn)
        if fraction == 1.0:
            return x
        h, w = static_hw(x, fn)
        top = int((float(h) - float(h) * fraction) / 2)
        left = int((float(w) - float(w) * fraction) / 2)
        lead = [0] * (x.ndim - 3)
        return _slice(x, [*lead, top, left, 0],
                      [*[-1] * (x.ndim - 3), h - 2 * top, w - 2 * left, -1])


def random_crop(value: TensorLike, size: Any, seed: int | None = None,
                name: str | None = None) -> TensorLike:
    """A block of shape `size` (static, one entry per dimension) of `value` at a random
    offset, uniform over the positions where it fits (``tf.image.random_crop``: an
    int32 uniform modulo the number of positions; tensorweave's numbers, not
    TensorFlow's). `seed` follows ``tw.random``'s rules."""
    return _random_crop(value, size, "random_crop", name,
                        lambda n: uniform([n], 0, int(np.iinfo(np.int32).max), int32, seed=seed))


def stateless_random_crop(value: TensorLike, size: Any, seed: Any,
                          name: str | None = None) -> TensorLike:
    """`random_crop` as a pure function of `seed` (``[a, b]``;
    ``tf.image.stateless_random_crop``)."""
    return _random_crop(value, size, "stateless_random_crop", name,
                        lambda n: stateless_uniform([n], seed, 0, int(np.iinfo(np.int32).max),
                                                    int32))


def _random_crop(value: TensorLike, size: Any, fn: str, name: str | None, draw: Any) -> Any:
    with name_scope(name or fn):
        x = convert_to_tensor(value)
        sizes = list(_static_ints(size, fn, "size"))
        if len(sizes) != x.ndim:
            raise shape_error(fn, f"`size` needs one entry per dimension of the value "
                                  f"(rank {x.ndim}), got {sizes}")
        if any(d is None for d in x.shape):
            raise shape_error(fn, f"the value's shape must be known when the graph is "
                                  f"built, got {list(x.shape)}")
        if any(s > d or s < 0 for s, d in zip(sizes, x.shape)):
            raise value_error(fn, f"Need value.shape >= size, got {list(x.shape)} and "
                                  f"{sizes}")
        limits = [int(d) - s + 1 for s, d in zip(sizes, x.shape)]
        offsets = floormod(draw(len(sizes)), constant(np.array(limits, np.int32)))
        out = x
        for axis, (s, limit) in enumerate(zip(sizes, limits)):
            if limit == 1:  # the block spans the whole axis
                continue
            rows = add(gather(offsets, axis), constant(np.arange(s, dtype=np.int32)))
            out = gather(out, rows, axis=axis)
        return out


def resize_with_pad(image: TensorLike, target_height: int, target_width: int,
                    method: str = "bilinear", antialias: bool = False) -> TensorLike:
    """`image` resized to fit ``target_height x target_width`` keeping its aspect
    ratio, then zero-padded to that size, centred (``tf.image.resize_with_pad``)."""
    return _resize_with_pad(image, target_height, target_width, "resize_with_pad",
                            lambda x, size: _resizing().resize(x, size, method=method,
                                                               antialias=antialias))


def resize_image_with_pad_v1(image: TensorLike, target_height: int, target_width: int,
                             method: Any = 0, align_corners: bool = False) -> TensorLike:
    """TensorFlow 1's ``tf.image.resize_image_with_pad``: `resize_with_pad` with the
    legacy resize (``resize_images``, method numbers, `align_corners`)."""
    return _resize_with_pad(image, target_height, target_width, "resize_image_with_pad",
                            lambda x, size: _resizing().resize_images(
                                x, size, method=method, align_corners=align_corners))


def _resizing() -> Any:
    from . import resizing
    return resizing


def _resize_with_pad(image: TensorLike, target_height: Any, target_width: Any, fn: str,
                     resize_fn: Any) -> Any:
    """TensorFlow's ``_resize_image_with_pad_common``: the float32 ratios, the larger one
    decides, floor of size / ratio for the resized size, half the difference (floored)
    padded before (of the unrounded resized size, as TensorFlow)."""
    with name_scope(fn):
        x = image_tensor(image, fn)
        h, w = static_hw(x, fn)
        th = static_int(target_height, fn, "target_height")
        tw_ = static_int(target_width, fn, "target_width")
        if th <= 0 or tw_ <= 0:
            raise value_error(fn, f"target_width and target_height must be > 0, got "
                                  f"{th} x {tw_}")
        f = np.float32
        ratio = max(f(w) / f(tw_), f(h) / f(th))
        rh = int(np.floor(f(h) / ratio))
        rw = int(np.floor(f(w) / ratio))
        pad_h = max(0, int(np.floor((f(th) - f(h) / ratio) / f(2))))
        pad_w = max(0, int(np.floor((f(tw_) - f(w) / ratio) / f(2))))
        resized = resize_fn(x, [rh, rw])
        return pad_to_bounding_box(resized, pad_h, pad_w, th, tw_)
