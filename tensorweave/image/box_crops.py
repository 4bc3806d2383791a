"""``tw.image.crop_and_resize`` (TensorFlow 2's ``tf.image.crop_and_resize``; TensorFlow
1's with the ``box_ind`` name): crops at boxes computed in the graph, resampled to one
size. The sampling positions depend on the boxes' values, so they are computed in the
graph, in float32 step by step as TensorFlow's CropAndResize kernel, and the pixels are
read with `gather_nd` (gradients reach the image, and the boxes through the weights)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.dtypes import float32, float64, int32
from ..frontend.building import constant, convert_to_tensor
from ..frontend.context import name_scope
from ..frontend.ops.array import reshape, stack, unstack
from ..frontend.ops.indexing import gather_nd
from ..frontend.ops.math import (
    cast,
    ceil,
    floor,
    greater,
    greater_equal,
    less,
    logical_or,
    maximum,
    minimum,
    where,
)
from ._checks import image_tensor, shape_error, static_float, value_error
from .float32_steps import f32_product, f32_sum
from .resizing import _new_size

TensorLike = Any


def _positions(lo: Any, hi: Any, size_in: int, size_out: int) -> Any:
    """``[boxes, size_out]`` float32 positions along one axis (CropAndResize):
    ``lo * (in - 1) + o * ((hi - lo) * (in - 1) / (out - 1))``, each operation rounded
    to float32 as the kernel's, or the box's centre ``0.5 * (lo + hi) * (in - 1)`` (a
    double product in the kernel) for one output."""
    span = np.float32(size_in - 1)
    if size_out > 1:
        scale = f32_product(hi - lo, span) / np.float32(size_out - 1)
        steps = constant(np.arange(size_out, dtype=np.float32).reshape(1, -1))
        return f32_sum(reshape(f32_product(lo, span), [-1, 1]),
                        f32_product(steps, reshape(scale, [-1, 1])))
    centre = cast(0.5 * cast(lo + hi, float64) * float(size_in - 1), float32)
    return reshape(centre, [-1, 1])


def crop_and_resize(image: TensorLike, boxes: TensorLike, box_indices: TensorLike,
                    crop_size: Any, method: str = "bilinear", extrapolation_value: float = 0.0,
                    name: str | None = None) -> TensorLike:
    """For each of the `boxes` (``[num_boxes, 4]`` float ``[y1, x1, y2, x2]`` in
    normalized coordinates, 0 and 1 the first and last pixel centres; y1 > y2 flips) a
    ``crop_size`` (``[crop_h, crop_w]``, static) crop of image ``box_indices[i]`` of the
    ``[batch, h, w, d]`` `image`, sampled bilinearly or at the nearest pixel (rounded half
    away from zero); positions outside the image get `extrapolation_value`. The result is
    float32 ``[num_boxes, crop_h, crop_w, d]`` (``tf.image.crop_and_resize``)."""
    fn = "crop_and_resize"
    with name_scope(name or fn):
        x = image_tensor(image, fn, ranks=(4,))
        h, w = x.shape[1], x.shape[2]
        if h is None or w is None:
            raise shape_error(fn, f"the image height and width must be known when the graph "
                                  f"is built, got shape {list(x.shape)}")
        h, w = int(h), int(w)
        ch, cw = _new_size(crop_size, fn)
        if method not in ("bilinear", "nearest"):
            raise value_error(fn, f"method must be 'bilinear' or 'nearest', got {method!r}")
        boxes = cast(convert_to_tensor(boxes), float32)
        box_indices = cast(convert_to_tensor(box_indices), int32)
        if boxes.ndim != 2 or boxes.shape[1] not in (4, None):
            raise shape_error(fn, f"boxes must be [num_boxes, 4], got shape "
                                  f"{list(boxes.shape)}")
        if box_indices.ndim != 1 or (None not in (box_indices.shape[0], boxes.shape[0]) and
                                     box_indices.shape[0] != boxes.shape[0]):
            raise shape_error(fn, f"box_indices must be [num_boxes] (boxes are "
                                  f"{list(boxes.shape)}), got shape {list(box_indices.shape)}")
        fill = static_float(extrapolation_value, fn, "extrapolation_value")
        y1, x1, y2, x2 = unstack(boxes, num=4, axis=1)
        ys = _positions(y1, y2, h, ch)                      # [n, ch]
        xs = _positions(x1, x2, w, cw)                      # [n, cw]
        outside_y = logical_or(less(ys, 0.0), greater(ys, float(h - 1)))
        outside_x = logical_or(less(xs, 0.0), greater(xs, float(w - 1)))
        outside = logical_or(reshape(outside_y, [-1, ch, 1, 1]),
                             reshape(outside_x, [-1, 1, cw, 1]))
        # [n, ch, cw] grids by broadcasting against zeros (the box count may be unknown)
        zeros = constant(np.zeros((1, ch, cw), np.int32))
        image_of_box = reshape(box_indices, [-1, 1, 1]) + zeros

        def read(rows: Any, cols: Any) -> Any:
            # clamped, so that a position outside the image (filled below) reads a pixel
            r = cast(minimum(maximum(rows, 0.0), float(h - 1)), int32)
            c = cast(minimum(maximum(cols, 0.0), float(w - 1)), int32)
            idx = stack([image_of_box, reshape(r, [-1, ch, 1]) + zeros,
                         reshape(c, [-1, 1, cw]) + zeros], axis=-1)
            return cast(gather_nd(x, idx), float32)

        if method == "nearest":
            # roundf: halves away from zero (positions read are >= 0)
            out = read(_round_half_up(ys), _round_half_up(xs))
        else:
            top, bottom, y_lerp = floor(ys), ceil(ys), ys - floor(ys)
            left, right, x_lerp = floor(xs), ceil(xs), xs - floor(xs)
            x_w = reshape(x_lerp, [-1, 1, cw, 1])
            y_w = reshape(y_lerp, [-1, ch, 1, 1])
            tl, tr = read(top, left), read(top, right)
            bl, br = read(bottom, left), read(bottom, right)
            upper = tl + (tr - tl) * x_w
            lower = bl + (br - bl) * x_w
            out = upper + (lower - upper) * y_w
        return where(outside, np.float32(fill), out)


def _round_half_up(v: Any) -> Any:
    f = floor(v)
    return where(greater_equal(v - f, 0.5), f + 1.0, f)


def crop_and_resize_v1(image: TensorLike, boxes: TensorLike, box_ind: TensorLike = None,
                       crop_size: Any = None, method: str = "bilinear",
                       extrapolation_value: float = 0.0, name: str | None = None,
                       box_indices: TensorLike = None) -> TensorLike:
    """TensorFlow 1's ``tf.image.crop_and_resize``: the box indices are `box_ind`."""
    return crop_and_resize(image, boxes, box_ind if box_indices is None else box_indices,
                           crop_size, method, extrapolation_value, name)
