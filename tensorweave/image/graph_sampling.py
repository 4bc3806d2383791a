"""Bilinear and nearest-neighbor sampling tables computed in the graph, for images whose
height or width is known only when the graph runs (a TensorFlow 1 placeholder of shape
``[None, None, None, 3]``). The same float32 arithmetic as `sampling`, operation by
operation; products and sums go through float64 (`float32_steps`), so that a
target that fuses ``a * b + c`` cannot move a nearest-neighbor tie."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.dtypes import float32, int32
from ..frontend.building import constant
from ..frontend.ops.array import shape
from ..frontend.ops.math import cast, ceil, floor, greater_equal, maximum, minimum, where
from .float32_steps import f32_product, f32_sum

f32 = np.float32


def _size(x: Any, axis: int) -> Any:
    """x's run-time size along `axis`, as a float32 scalar."""
    return cast(shape(x)[axis], float32)


def _scale(n_in: Any, n_out: int, align_corners: bool) -> Any:
    """CalculateResizeScale with a run-time input size (a one-pixel axis reads pixel 0
    whatever the scale, so `sampling.resize_scale`'s in == 1 case needs no branch)."""
    if align_corners and n_out > 1:
        return (n_in - 1.0) / f32(n_out - 1)
    return n_in / f32(n_out)


def _positions(x: Any, axis: int, n_out: int, align_corners: bool, half_pixel: bool,
               minus_half: bool) -> tuple[Any, Any]:
    """(float32 positions of the outputs, float32 input size)."""
    n_in = _size(x, axis)
    scale = _scale(n_in, n_out, align_corners)
    o = constant(np.arange(n_out, dtype=f32))
    if not half_pixel:
        return f32_product(o, scale), n_in
    pos = f32_product(o + f32(0.5), scale)
    return (f32_sum(pos, constant(f32(-0.5))) if minus_half else pos), n_in


def linear(x: Any, axis: int, n_out: int, align_corners: bool,
           half_pixel: bool) -> tuple[Any, Any, Any]:
    """`sampling.linear` along `axis` of `x`: (lower, upper, lerp) tensors."""
    pos, n_in = _positions(x, axis, n_out, align_corners, half_pixel, minus_half=True)
    fl = floor(pos)
    lower = cast(maximum(fl, 0.0), int32)
    upper = cast(minimum(ceil(pos), n_in - 1.0), int32)
    return lower, upper, pos - fl


def nearest(x: Any, axis: int, n_out: int, align_corners: bool, half_pixel: bool) -> Any:
    """`sampling.nearest` along `axis` of `x`: the source index tensor."""
    pos, n_in = _positions(x, axis, n_out, align_corners, half_pixel, minus_half=False)
    fl = floor(pos)
    idx = where(greater_equal(pos - fl, 0.5), fl + 1.0, fl) if align_corners else fl
    return cast(maximum(minimum(idx, n_in - 1.0), 0.0), int32)
