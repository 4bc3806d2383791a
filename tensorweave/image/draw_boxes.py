"""``tf.image.draw_bounding_boxes``: box outlines drawn on images, as TensorFlow's kernel
(``draw_bounding_box_op.cc``) draws them, composed of comparisons and gathers.

Box ``[y_min, x_min, y_max, x_max]`` (fractions of the image) covers rows
``trunc(y * (height - 1))`` (the product in float32, truncated toward zero) and columns
likewise; an inverted box or one wholly outside the image is not drawn; of the others
each of the four one-pixel lines is drawn when its row (column) lies in the image, over
the box's span clamped to the image. Box ``k`` takes color ``k % len(colors)``; a later
box paints over an earlier one. The boxes are tensors (known at run time); the image
sizes and the number of boxes must be known when the graph is built.

A box with a NaN coordinate is not drawn (TensorFlow's conversion of NaN to an integer is
undefined behaviour in C++).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.dtypes import float16, float32, int32
from ..frontend.building import convert_to_tensor
from ..frontend.context import name_scope
from ..frontend.ops import array as a
from ..frontend.ops import math as m
from ._checks import shape_error, type_error

TensorLike = Any

# TensorFlow's DefaultColorTable (RGBA): yellow, blue, red, lime, purple, olive, maroon,
# navy blue, aqua, fuchsia
_DEFAULT_COLORS = np.array([[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1],
                            [0.5, 0, 0.5, 1], [0.5, 0.5, 0, 1], [0.5, 0, 0, 1],
                            [0, 0, 0.5, 1], [0, 1, 1, 1], [1, 0, 1, 1]], np.float32)


def _color_table(colors: Any, depth: int, fn: str) -> Any:
    """The [n, depth] float32 color table: `colors`' first `depth` columns, or (None or
    empty) TensorFlow's defaults, whose first channel is 1 for gray images."""
    if colors is not None:
        c = convert_to_tensor(colors, dtype=float32)
        if c.ndim != 2:
            raise shape_error(fn, f"colors must be a 2-D matrix [num_colors, channels], got "
                                  f"shape {list(c.shape)}")
        if c.shape[1] is not None and c.shape[1] < depth:
            raise shape_error(fn, f"colors must have at least as many channels as the images "
                                  f"({depth}), got shape {list(c.shape)}")
        if c.shape[0] is None or c.shape[1] is None:
            raise shape_error(fn, f"the shape of colors must be known when the graph is "
                                  f"built, got {list(c.shape)}")
        if c.shape[0] > 0:
            return a.slice(c, [0, 0], [c.shape[0], depth]) if c.shape[1] != depth else c
    table = _DEFAULT_COLORS[:, :depth].copy()
    if depth == 1:
        table[:, 0] = 1
    return convert_to_tensor(table)


def _pixel(coord: Any, size: int) -> Any:
    """``static_cast<int64>(float(coord) * (size - 1))``: truncation toward zero, clamped
    to +-2**30 first (far outside any image; C++ leaves larger values undefined)."""
    p = coord * np.float32(size - 1)
    return m.cast(m.minimum(m.maximum(p, np.float32(-2**30)), np.float32(2**30)), int32)


def draw_bounding_boxes(images: TensorLike, boxes: TensorLike, colors: TensorLike = None,
                        name: str | None = None) -> TensorLike:
    """`images` ([batch, height, width, depth], depth 1, 3 or 4; float32 or float16) with
    the outline of each box of `boxes` ([batch, num_boxes, 4] as ``[y_min, x_min, y_max,
    x_max]`` fractions) drawn in color ``colors[k % num_colors]`` (a [num_colors, >= depth]
    float matrix; TensorFlow's table of 10 colors when None or empty)
    (``tf.image.draw_bounding_boxes``)."""
    fn = "draw_bounding_boxes"
    with name_scope(name or fn):
        x = convert_to_tensor(images)
        if x.dtype not in (float32, float16):
            raise type_error(fn, f"images must be float32 or float16 (as TensorFlow's kernel), "
                                 f"got {x.dtype.name}")
        if x.ndim != 4:
            raise shape_error(fn, f"images must have rank 4 [batch, height, width, depth], got "
                                  f"shape {list(x.shape)}")
        bx = convert_to_tensor(boxes, dtype=float32)
        if bx.ndim != 3 or bx.shape[2] != 4:
            raise shape_error(fn, f"boxes must have shape [batch, num_boxes, 4], got "
                                  f"{list(bx.shape)}")
        if None in x.shape or None in bx.shape:
            raise shape_error(fn, f"the shapes of images and boxes must be known when the "
                                  f"graph is built, got {list(x.shape)} and {list(bx.shape)}")
        batch, height, width, depth = (int(d) for d in x.shape)
        if depth not in (1, 3, 4):
            raise shape_error(fn, f"the channel depth must be 1 (gray), 3 (RGB) or 4 (RGBA), "
                                  f"got shape {list(x.shape)}")
        if bx.shape[0] != batch:
            raise shape_error(fn, f"images and boxes must have the same batch size, got "
                                  f"shapes {list(x.shape)} and {list(bx.shape)}")
        table = _color_table(colors, depth, fn)
        n = int(bx.shape[1])
        if n == 0:
            return a.identity(x)
        y0, x0, y1, x1 = a.unstack(bx, axis=2)                  # each [batch, n]
        min_row, max_row = _pixel(y0, height), _pixel(y1, height)
        min_col, max_col = _pixel(x0, width), _pixel(x1, width)
        finite = m.reduce_all(m.is_finite(bx), axis=2)
        drawn = m.logical_and(finite, m.logical_not(m.logical_or(
            m.logical_or(m.greater(min_row, max_row), m.greater(min_col, max_col)),
            m.logical_or(m.logical_or(m.greater_equal(min_row, height), m.less(max_row, 0)),
                         m.logical_or(m.greater_equal(min_col, width), m.less(max_col, 0))))))

        def per_box(t: Any) -> Any:                              # [batch, n] -> [b, n, 1, 1]
            return a.reshape(t, [batch, n, 1, 1])

        rows = a.reshape(a.range(height, dtype=int32), [1, 1, height, 1])
        cols = a.reshape(a.range(width, dtype=int32), [1, 1, 1, width])
        in_cols = m.logical_and(m.greater_equal(cols, per_box(m.maximum(min_col, 0))),
                                m.less_equal(cols, per_box(m.minimum(max_col, width - 1))))
        in_rows = m.logical_and(m.greater_equal(rows, per_box(m.maximum(min_row, 0))),
                                m.less_equal(rows, per_box(m.minimum(max_row, height - 1))))
        # (a line's row or column equal to `rows`/`cols` lies in the image by itself)
        horizontal = m.logical_and(m.logical_or(m.equal(rows, per_box(min_row)),
                                                m.equal(rows, per_box(max_row))), in_cols)
        vertical = m.logical_and(m.logical_or(m.equal(cols, per_box(min_col)),
                                              m.equal(cols, per_box(max_col))), in_rows)
        on = m.logical_and(m.logical_or(horizontal, vertical), per_box(drawn))  # [b,n,h,w]
        # the last box drawn at each pixel wins
        index = a.reshape(a.range(n, dtype=int32), [1, n, 1, 1])
        last = m.reduce_max(m.where(on, index, a.fill([1, 1, 1, 1], np.int32(-1))), axis=1)
        color_index = m.floormod(m.maximum(last, 0), int(table.shape[0]))
        painted = m.cast(a.gather(table, color_index), x.dtype)  # [b, h, w, depth]
        return m.where(a.expand_dims(m.greater_equal(last, 0), -1), painted, x)


def draw_bounding_boxes_v1(images: TensorLike, boxes: TensorLike, name: str | None = None,
                           colors: TensorLike = None) -> TensorLike:
    """TensorFlow 1's ``tf.image.draw_bounding_boxes`` (`colors` last, optional)."""
    return draw_bounding_boxes(images, boxes, colors, name)


__all__ = ["draw_bounding_boxes", "draw_bounding_boxes_v1"]
