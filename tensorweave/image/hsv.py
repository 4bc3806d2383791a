"""Hue and saturation adjustments (``tf.image.adjust_hue``, ``adjust_saturation`` and
their random versions): elementwise compositions that follow TensorFlow's CPU kernels
(``adjust_hue_op.cc``, ``adjust_saturation_op.cc``) branch by branch, in float32, over
the three channels of RGB images."""

from __future__ import annotations

from typing import Any

from ..compiler.dtypes import float16, float32, float64
from ..frontend.building import convert_to_tensor
from ..frontend.context import name_scope
from ..frontend.ops.array import stack, unstack, zeros_like
from ..frontend.ops.math import (
    abs as _abs,
)
from ..frontend.ops.math import (
    cast,
    equal,
    floor,
    floordiv,
    greater,
    greater_equal,
    less,
    less_equal,
    logical_and,
    maximum,
    minimum,
    where,
)
from ..frontend.ops.random import stateless_uniform, uniform
from ._checks import factor_bounds, shape_error, static_float, value_error
from .convert import convert_image_dtype

TensorLike = Any


def _rgb(images: TensorLike, fn: str) -> tuple[Any, Any]:
    """(original tensor, its float32 channels r, g, b): float16/float32 pixels as they
    are (computed in float32, as TensorFlow's CPU kernels), other dtypes converted."""
    x = convert_to_tensor(images)
    if x.ndim < 3 or x.shape[-1] != 3:
        raise shape_error(fn, f"images must be at least 3-D with 3 channels (RGB) in the "
                              f"last dimension, got shape {list(x.shape)}")
    flt = x if x.dtype in (float16, float32) else convert_image_dtype(x, float32)
    return x, unstack(cast(flt, float32), axis=-1)


def _back(x: Any, r: Any, g: Any, b: Any) -> Any:
    """The channels stacked and converted back to x's dtype (no saturation, as
    TensorFlow)."""
    out = stack([r, g, b], axis=-1)
    if x.dtype == float16:
        return cast(out, float16)
    return convert_image_dtype(out, x.dtype)


def _select(cases: list[tuple[Any, tuple]], default: tuple) -> tuple:
    """Per element, the tuple of the first true condition (a switch as nested wheres)."""
    out = default
    for cond, values in reversed(cases):
        out = tuple(where(cond, v, o) for v, o in zip(values, out))
    return out


def adjust_saturation(image: TensorLike, saturation_factor: Any,
                      name: str | None = None) -> TensorLike:
    """RGB images with their HSV saturation multiplied by `saturation_factor` and clamped
    to [0, 1] (``tf.image.adjust_saturation``)."""
    with name_scope(name or "adjust_saturation"):
        x, (r, g, b) = _rgb(image, "adjust_saturation")
        scale = cast(convert_to_tensor(saturation_factor), float32)
        # rgb_to_hsv
        v = maximum(r, maximum(g, b))
        rng = v - minimum(r, minimum(g, b))
        # (the denominators are made safe where the kernel's result is replaced anyway, so
        # that no inf or NaN reaches a gradient through the unselected branch)
        s = where(greater(v, 0.0), rng / where(greater(v, 0.0), v, 1.0), 0.0)
        norm = 1.0 / (6.0 * where(greater(rng, 0.0), rng, 1.0))
        # `norm * (b - r) + 2.0 / 6.0` adds a double: one rounding to float32 after it
        h = where(equal(r, v), norm * (g - b),
                  where(equal(g, v), cast(cast(norm * (b - r), float64) + 2.0 / 6.0, float32),
                        cast(cast(norm * (r - g), float64) + 4.0 / 6.0, float32)))
        h = where(less_equal(rng, 0.0), 0.0, h)
        h = where(less(h, 0.0), h + 1.0, h)
        s = minimum(1.0, maximum(0.0, s * scale))
        # hsv_to_rgb
        c = s * v
        m = v - c
        dh = h * 6.0
        category = floor(dh)  # static_cast<int> of a non-negative float
        fmodu = dh - 2.0 * floor(dh / 2.0)  # the kernel's `while` loops, exactly
        xx = c * (1.0 - _abs(fmodu - 1.0))
        zero = zeros_like(c)
        rr, gg, bb = _select([(equal(category, float(k)), vals) for k, vals in enumerate(
            [(c, xx, zero), (xx, c, zero), (zero, c, xx), (zero, xx, c), (xx, zero, c),
             (c, zero, xx)])], (zero, zero, zero))
        return _back(x, rr + m, gg + m, bb + m)


def adjust_hue(image: TensorLike, delta: Any, name: str | None = None) -> TensorLike:
    """RGB images with their hue rotated by `delta` (in [-1, 1], a fraction of the color
    wheel; ``tf.image.adjust_hue``): TensorFlow's kernel keeps each pixel's largest and
    smallest channel and moves the middle one."""
    with name_scope(name or "adjust_hue"):
        try:
            d = static_float(delta, "adjust_hue", "delta")
        except TypeError:
            d = None
        if d is not None and not -1 <= d <= 1:
            raise value_error("adjust_hue", f"delta must be in the interval [-1, 1], got {d}")
        x, (r, g, b) = _rgb(image, "adjust_hue")
        # rgb_to_hv_range: which channel is largest, middle, smallest, and the sextant
        r_lt_g = less(r, g)
        vmax, vmid, vmin, cat = _select(
            [(logical_and(r_lt_g, less(b, r)), (g, r, b, 1.0)),
             (logical_and(r_lt_g, greater(b, g)), (b, g, r, 3.0)),
             (r_lt_g, (g, b, r, 2.0)),
             (less(b, g), (r, g, b, 0.0)),
             (greater(b, r), (b, r, g, 4.0))],
            (r, b, g, 5.0))
        flat = equal(vmax, vmin)
        ratio = (vmid - vmin) / where(flat, 1.0, vmax - vmin)
        increase = equal(floordiv(cat, 2.0) * 2.0, cat)
        h = where(flat, 0.0, cat + where(increase, ratio, 1.0 - ratio))
        h = h + cast(convert_to_tensor(delta), float32) * 6.0
        for _ in range(2):  # h is in [-6, 12): the kernel's loops run at most twice
            h = where(less(h, 0.0), h + 6.0, h)
        for _ in range(2):
            h = where(greater_equal(h, 6.0), h - 6.0, h)
        # hv_range_to_rgb
        cat = floor(h)
        ratio = h - cat
        ratio = where(equal(floordiv(cat, 2.0) * 2.0, cat), ratio, 1.0 - ratio)
        vmid = vmin + ratio * (vmax - vmin)
        rr, gg, bb = _select([(equal(cat, float(k)), vals) for k, vals in enumerate(
            [(vmax, vmid, vmin), (vmid, vmax, vmin), (vmin, vmax, vmid), (vmin, vmid, vmax),
             (vmid, vmin, vmax)])], (vmax, vmin, vmid))
        return _back(x, rr, gg, bb)


def random_saturation(image: TensorLike, lower: float, upper: float,
                      seed: int | None = None) -> TensorLike:
    """`adjust_saturation` by a factor drawn uniformly from [lower, upper)
    (``tf.image.random_saturation``)."""
    lo, hi = factor_bounds("random_saturation", lower, upper)
    return adjust_saturation(image, uniform([], lo, hi, seed=seed))


def stateless_random_saturation(image: TensorLike, lower: float, upper: float,
                                seed: Any) -> TensorLike:
    """`random_saturation` as a pure function of `seed` (``[a, b]``)."""
    lo, hi = factor_bounds("stateless_random_saturation", lower, upper)
    return adjust_saturation(image, stateless_uniform([], seed, lo, hi))


def _hue_bound(fn: str, max_delta: Any) -> float:
    d = static_float(max_delta, fn, "max_delta")
    if d > 0.5:
        raise value_error(fn, f"max_delta must be <= 0.5, got {d}")
    if d < 0:
        raise value_error(fn, f"max_delta must be non-negative, got {d}")
    return d


def random_hue(image: TensorLike, max_delta: float, seed: int | None = None) -> TensorLike:
    """`adjust_hue` by a delta drawn uniformly from [-max_delta, max_delta) (max_delta in
    [0, 0.5]; ``tf.image.random_hue``)."""
    d = _hue_bound("random_hue", max_delta)
    return adjust_hue(image, uniform([], -d, d, seed=seed))


def stateless_random_hue(image: TensorLike, max_delta: float, seed: Any) -> TensorLike:
    """`random_hue` as a pure function of `seed` (``[a, b]``)."""
    d = _hue_bound("stateless_random_hue", max_delta)
    return adjust_hue(image, stateless_uniform([], seed, -d, d))
