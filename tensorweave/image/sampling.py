"""Where each output pixel of a resize samples its input: index and weight tables,
computed with NumPy while the graph is built, in float32 step by step as TensorFlow's
kernels compute them (``resize_bilinear_op.cc``, ``resize_nearest_neighbor_op.cc``,
``resize_bicubic_op.cc``, ``resize_area_op.cc``, ``scale_and_translate_op.cc``), so that
the same floor and the same rounding pick the same pixels.

A table along one axis is ``(indices, weights[, padding])``, each ``[taps, out_size]``:
output position ``o`` is ``sum_k weights[k, o] * input[indices[k, o]]`` over the taps
that are not padding. Every index is inside ``[0, in_size)``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

f32 = np.float32


def resize_scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    """TensorFlow's ``CalculateResizeScale``: input pixels per output pixel. A one-pixel
    axis with `align_corners` takes ``in / out`` (TensorFlow 2.21's ResizeArea does: a
    scale of 0 would divide by zero; the other kernels read pixel 0 either way)."""
    if align_corners and out_size > 1 and in_size > 1:
        return f32(in_size - 1) / f32(out_size - 1)
    return f32(in_size) / f32(out_size)


def _source_positions(in_size: int, out_size: int, align_corners: bool,
                      half_pixel: bool) -> np.ndarray:
    """The float32 input position of each output pixel: ``(o + 0.5) * scale - 0.5`` with
    half-pixel centers (TensorFlow's HalfPixelScaler), else ``o * scale``."""
    scale = resize_scale(in_size, out_size, align_corners)
    o = np.arange(out_size, dtype=f32)
    if half_pixel:
        return (o + f32(0.5)) * scale - f32(0.5)
    return o * scale


def linear(in_size: int, out_size: int, align_corners: bool,
           half_pixel: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bilinear sampling along one axis: ``(lower, upper, lerp)``; the kernel computes
    ``a[lower] + (a[upper] - a[lower]) * lerp``. (``compute_interpolation_weights``:
    a position left of the first pixel keeps its fraction but samples pixel 0 twice.)"""
    pos = _source_positions(in_size, out_size, align_corners, half_pixel)
    floor = np.floor(pos)
    lower = np.maximum(floor.astype(np.int64), 0)
    upper = np.minimum(np.ceil(pos).astype(np.int64), in_size - 1)
    lerp = (pos - floor).astype(f32)
    return lower, upper, lerp


def _round_half_away(v: np.ndarray) -> np.ndarray:
    """C's ``roundf`` for v >= 0 (halves away from zero; NumPy's round goes to even).
    ``v - floor(v)`` is exact in float32, so the comparison with 0.5 is too."""
    fl = np.floor(v)
    return np.where(v - fl >= f32(0.5), fl + 1, fl)


def nearest(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    """Nearest-neighbor source index of each output pixel. With half-pixel centers the
    position is ``(o + 0.5) * scale``, floored (TensorFlow's HalfPixelScalerForNN: the
    ``- 0.5`` of the other kernels is left out and the floor does its job); with
    `align_corners` the legacy position ``o * scale`` is rounded half away from zero,
    else floored. Clamped to the image."""
    scale = resize_scale(in_size, out_size, align_corners)
    o = np.arange(out_size, dtype=f32)
    pos = (o + f32(0.5)) * scale if half_pixel else o * scale
    idx = _round_half_away(pos) if align_corners else np.floor(pos)
    idx = np.minimum(idx.astype(np.int64), in_size - 1)
    return np.maximum(idx, 0)


_CUBIC_TABLE_SIZE = 1024


def _cubic_table(a: float) -> np.ndarray:
    """TensorFlow's ``InitCoeffsTable``: the cubic convolution kernel sampled at 1025
    points of [0, 1] ([i, 0]) and [1, 2] ([i, 1]), in float32."""
    table = np.empty((_CUBIC_TABLE_SIZE + 1, 2), f32)
    for i in range(_CUBIC_TABLE_SIZE + 1):
        x = i * 1.0 / _CUBIC_TABLE_SIZE  # double, as the C++ `i * 1.0 / kTableSize`
        x = f32(x)
        table[i, 0] = ((f32(a) + 2) * x - (f32(a) + 3)) * x * x + 1
        x = x + f32(1.0)
        table[i, 1] = ((f32(a) * x - 5 * f32(a)) * x + 8 * f32(a)) * x - 4 * f32(a)
    return table


def cubic(in_size: int, out_size: int, align_corners: bool,
          half_pixel: bool) -> tuple[np.ndarray, np.ndarray]:
    """Bicubic taps (``GetWeightsAndIndices``): four input pixels around each position,
    weights looked up in the 1024-step coefficient table. Half-pixel centers use Keys'
    kernel (a = -0.5) and give taps outside the image weight 0 then renormalize; the
    legacy kernel (a = -0.75) clamps those taps to the edge pixel instead."""
    keys = half_pixel
    table = _cubic_table(-0.5 if keys else -0.75)
    pos = _source_positions(in_size, out_size, align_corners, half_pixel)
    loc = np.floor(pos).astype(np.int64)
    delta = (pos - np.floor(pos)).astype(f32)
    offset = np.rint(delta * f32(_CUBIC_TABLE_SIZE)).astype(np.int64)  # lrintf: to even
    weights = np.stack([table[offset, 1], table[offset, 0],
                        table[_CUBIC_TABLE_SIZE - offset, 0],
                        table[_CUBIC_TABLE_SIZE - offset, 1]]).astype(f32)
    raw = np.stack([loc - 1, loc, loc + 1, loc + 2])
    indices = np.clip(raw, 0, in_size - 1)
    if keys:
        weights = np.where(indices == raw, weights, f32(0))
        total = ((weights[0] + weights[1]) + weights[2]) + weights[3]
        ok = np.abs(total) >= f32(1000) * np.finfo(f32).tiny
        inv = np.where(ok, f32(1) / np.where(ok, total, f32(1)), f32(1)).astype(f32)
        weights = (weights * inv).astype(f32)
    return indices, weights


def area(in_size: int, out_size: int,
         align_corners: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Area (box) averaging taps (``ResizeAreaOp``): output pixel o covers input
    ``[o * scale, (o + 1) * scale)``; each covered pixel weighs its overlap, all divided
    by `scale` (the kernel's ``1 / (height_scale * width_scale)``, split per axis).
    Pixels past the edge (align_corners) are the edge pixel."""
    scale = resize_scale(in_size, out_size, align_corners)
    cols: list[list[tuple[int, np.float32]]] = []
    for o in range(out_size):
        lo = f32(o) * scale
        hi = f32(o + 1) * scale
        taps = []
        for i in range(int(np.floor(lo)), int(np.ceil(hi))):
            if i < lo:
                w = scale if i + 1 > hi else f32(i + 1) - lo
            else:
                w = hi - f32(i) if i + 1 > hi else f32(1.0)
            taps.append((min(max(i, 0), in_size - 1), f32(w)))
        cols.append(taps)
    return _pack(cols, f32(1) / scale)


def _pack(cols: list[list[tuple[int, np.float32]]],
          factor: np.float32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-output lists of (index, weight) as ``[taps, out]`` arrays, every weight times
    `factor`, and a ``[taps, out]`` mask of the padding that fills short lists (index 0,
    weight 0: the resampling leaves those taps out)."""
    k = max(1, max(len(c) for c in cols))
    indices = np.zeros((k, len(cols)), np.int64)
    weights = np.zeros((k, len(cols)), f32)
    padding = np.ones((k, len(cols)), bool)
    for o, taps in enumerate(cols):
        for j, (i, w) in enumerate(taps):
            indices[j, o] = i
            weights[j, o] = f32(w) * factor
            padding[j, o] = False
    return indices, weights, padding


# --- scale_and_translate kernels (tf.image.resize with antialias or lanczos/gaussian/...)

def _triangle(x: np.float32) -> np.float32:
    return f32(max(f32(0), f32(1) - x))


def _keys_cubic(x: np.float32) -> np.float32:
    if x >= f32(2):
        return f32(0)
    if x >= f32(1):
        return ((f32(-0.5) * x + f32(2.5)) * x - f32(4)) * x + f32(2)
    return ((f32(1.5) * x - f32(2.5)) * x) * x + f32(1)


def _lanczos(radius: int) -> Callable[[np.float32], np.float32]:
    def kernel(x: np.float32) -> np.float32:
        if x > f32(radius):
            return f32(0)
        if x <= f32(1e-3):  # the kernel's small-x branch: sinc(0) sinc(0) = 1
            return f32(1)
        pi = f32(3.14159265359)
        return (f32(radius) * np.sin(pi * x) * np.sin(pi * x / f32(radius))
                / (pi * pi * x * x))
    return kernel


def _gaussian(x: np.float32) -> np.float32:
    # radius 1.5, sigma = radius / 3; the exponent is computed in double, as in C++
    radius = f32(1.5)
    sigma = radius / f32(3.0)
    if x >= radius:
        return f32(0)
    return f32(np.exp(-float(x * x) / (2.0 * float(sigma) * float(sigma))))


def _mitchell_cubic(x: np.float32) -> np.float32:
    if x >= f32(2):
        return f32(0)
    if x >= f32(1):
        return ((((f32(-7) / f32(18)) * x + f32(2)) * x - f32(10) / f32(3)) * x
                + f32(16) / f32(9))
    return (((f32(7) / f32(6)) * x - f32(2)) * x) * x + f32(8) / f32(9)


# name -> (kernel, radius)
KERNELS: dict[str, tuple[Callable[[np.float32], np.float32], float]] = {
    "triangle": (_triangle, 1.0), "keyscubic": (_keys_cubic, 2.0),
    "lanczos3": (_lanczos(3), 3.0), "lanczos5": (_lanczos(5), 5.0),
    "gaussian": (_gaussian, 1.5), "mitchellcubic": (_mitchell_cubic, 2.0),
}


def scale_and_translate(kernel_name: str, in_size: int, out_size: int,
                        antialias: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Taps of TensorFlow's ScaleAndTranslate with scale ``out/in`` and no translation
    (``ComputeSpansCore``): each output samples the kernel, widened by the downscale
    factor when `antialias`, over the input pixels in its support; the weights are
    normalized to sum to 1. An output whose position falls outside the image is 0."""
    kernel, radius = KERNELS[kernel_name]
    scale = f32(out_size) / f32(in_size)
    inv_scale = f32(1.0 / float(scale))
    inv_translate = -inv_scale * f32(0)
    kernel_scale = max(inv_scale, f32(1)) if antialias else f32(1)
    one_over_kernel_scale = f32(1) / kernel_scale
    r = f32(radius) * kernel_scale
    cols: list[list[tuple[int, np.float32]]] = []
    for x in range(out_size):
        sample = (f32(x) + f32(0.5)) * inv_scale + inv_translate
        if sample < 0 or sample > in_size:
            cols.append([])
            continue
        start = int(np.ceil(sample - r - f32(0.5)))
        end = int(np.floor(sample + r - f32(0.5)))
        start = min(max(start, 0), in_size - 1)
        end = min(max(end, 0), in_size - 1) + 1
        ws = [kernel(f32(abs((f32(s) + f32(0.5) - sample) * one_over_kernel_scale)))
              for s in range(start, end)]
        total = f32(0)
        for w in ws:
            total = f32(total + w)
        if abs(total) >= f32(1000) * np.finfo(f32).tiny:
            inv = f32(1) / total
            cols.append([(s, f32(w * inv)) for s, w in zip(range(start, end), ws)])
        else:  # weights summing to about 0 stay 0, as in the kernel
            cols.append([])
    return _pack(cols, f32(1))
