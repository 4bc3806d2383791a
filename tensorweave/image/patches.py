"""``tw.image.extract_patches`` (TensorFlow 1's ``extract_image_patches``): every
``size_rows x size_cols`` window of the images, sampled every `rates` pixels, flattened
into the depth dimension; one pair of gathers per window tap."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..frontend.building import constant
from ..frontend.context import name_scope
from ..frontend.ops.array import _static_ints, concat, gather, pad
from ._checks import image_tensor, shape_error, static_hw, value_error

TensorLike = Any


def _quad(value: Any, fn: str, arg: str) -> tuple[int, int]:
    """The two middle entries of a ``[1, rows, cols, 1]`` argument."""
    v = _static_ints(value, fn, arg)
    if len(v) != 4 or v[0] != 1 or v[3] != 1:
        raise value_error(fn, f"`{arg}` must be [1, rows, cols, 1], got {list(v)}")
    if v[1] <= 0 or v[2] <= 0:
        raise value_error(fn, f"`{arg}` entries must be positive, got {list(v)}")
    return v[1], v[2]


def _geometry(size: int, k: int, stride: int, rate: int, padding: str) -> tuple[int, int]:
    """(output size, padding before) of one axis, as TensorFlow's windowed ops."""
    eff = (k - 1) * rate + 1
    if padding == "VALID":
        return max(math.ceil((size - eff + 1) / stride), 0), 0
    out = math.ceil(size / stride)
    return out, max((out - 1) * stride + eff - size, 0) // 2


def extract_patches(images: TensorLike, sizes: Any, strides: Any, rates: Any,
                    padding: str, name: str | None = None) -> TensorLike:
    """Patches of ``[batch, h, w, d]`` `images`: the result is ``[batch, out_rows,
    out_cols, size_rows * size_cols * d]``, each window's pixels in row-major order with
    their d channels (``tf.image.extract_patches``; `sizes`, `strides`, `rates` are
    ``[1, r, c, 1]``, `padding` "VALID" or "SAME", zero-filled)."""
    fn = "extract_patches"
    with name_scope(name or fn):
        x = image_tensor(images, fn, ranks=(4,), arg="images")
        h, w = static_hw(x, fn)
        kh, kw = _quad(sizes, fn, "sizes")
        sh, sw = _quad(strides, fn, "strides")
        rh, rw = _quad(rates, fn, "rates")
        mode = str(padding).upper()
        if mode not in ("VALID", "SAME"):
            raise value_error(fn, f"padding must be 'VALID' or 'SAME', got {padding!r}")
        oh, top = _geometry(h, kh, sh, rh, mode)
        ow, left = _geometry(w, kw, sw, rw, mode)
        if oh == 0 or ow == 0:
            raise shape_error(fn, f"the windows ({kh}x{kw}, rates {rh}x{rw}) do not fit in "
                                  f"the {h}x{w} images with VALID padding")
        if mode == "SAME":
            need_h = max((oh - 1) * sh + (kh - 1) * rh + 1 - top - h, 0)
            need_w = max((ow - 1) * sw + (kw - 1) * rw + 1 - left - w, 0)
            x = pad(x, [[0, 0], [top, need_h], [left, need_w], [0, 0]])
        taps = []
        for i in range(kh):
            rows = gather(x, constant(np.arange(oh, dtype=np.int32) * sh + i * rh), axis=1)
            for j in range(kw):
                cols = constant(np.arange(ow, dtype=np.int32) * sw + j * rw)
                taps.append(gather(rows, cols, axis=2))
        return taps[0] if len(taps) == 1 else concat(taps, axis=3)


def extract_image_patches(images: TensorLike, ksizes: Any = None, strides: Any = None,
                          rates: Any = None, padding: str | None = None,
                          name: str | None = None, sizes: Any = None) -> TensorLike:
    """TensorFlow 1's ``tf.image.extract_image_patches``: `extract_patches` with the
    window size called `ksizes` (or `sizes`)."""
    return extract_patches(images, ksizes if sizes is None else sizes, strides, rates,
                           padding, name=name)
