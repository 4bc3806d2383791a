"""``tf.image.sample_distorted_bounding_box`` (TensorFlow 1's and 2's) and
``stateless_sample_distorted_bounding_box``: a random crop of an image that covers
enough of one of the given boxes, for Inception-style data augmentation.

Each of `max_attempts` attempts follows TensorFlow's kernel
(``sample_distorted_bounding_box_op.cc``, ``GenerateRandomCrop`` and
``SatisfiesOverlapConstraints``) step for step, in its float32, double and int
arithmetic: an aspect ratio uniform in `aspect_ratio_range`; a height uniform among the
integers whose crop area lies in `area_range` of the image (``lrintf`` rounding, the
same corrections by one pixel, the same rejections); a position uniform in the image;
the crop is accepted when it covers at least `min_object_covered` of some box's area.
The first accepted attempt wins; if none is, the whole image. The attempts are
evaluated all at once (vectors of `max_attempts`), each from its own uniforms, so the
numbers differ from TensorFlow's (whose attempts share one sequential stream) while
every constraint and distribution is the kernel's.

Seeds: the stateless version is a pure function of ``seed=[a, b]``; the stateful ones
draw a fresh stream per run (`tw.random.set_seed` and op seeds apply, as to every random
op; TensorFlow 1's `seed2` with `seed` fixes the stream exactly).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.dtypes import float32, float64, int8, int16, int32, int64, uint8
from ..frontend.building import constant, convert_to_tensor
from ..frontend.context import control_dependencies, name_scope
from ..frontend.ops import array as a
from ..frontend.ops import math as m
from ..frontend.ops.random_distributions import _stateful_seed, _stream_base, _uniform
from ._checks import shape_error, type_error, value_error

TensorLike = Any

_SIZE_DTYPES = (uint8, int8, int16, int32, int64)


def _pair(fn: str, what: str, value: Any, default: tuple[float, float]) -> tuple[float, float]:
    if value is None:
        return default
    vals = [float(v) for v in np.asarray(value, np.float64).reshape(-1)]
    if len(vals) != 2:
        raise value_error(fn, f"{what} must have 2 entries [min, max], got {value!r}")
    return vals[0], vals[1]


def _options(fn: str, aspect_ratio_range: Any, area_range: Any, max_attempts: Any,
             use_image: Any) -> tuple:
    ar = _pair(fn, "aspect_ratio_range", aspect_ratio_range, (0.75, 1.33))
    area = _pair(fn, "area_range", area_range, (0.05, 1.0))
    attempts = 100 if max_attempts is None else int(max_attempts)
    if not (ar[0] > 0 and ar[1] > 0):
        raise value_error(fn, f"aspect_ratio_range must be positive, got {list(ar)}")
    if not (area[0] > 0 and area[1] > 0):
        raise value_error(fn, f"area_range must be positive, got {list(area)}")
    if not (area[0] <= 1 and area[1] <= 1):
        raise value_error(fn, f"area_range must be at most 1.0, got {list(area)}")
    if attempts <= 0:
        raise value_error(fn, f"max_attempts must be positive, got {attempts}")
    return ar, area, attempts, bool(use_image)


def _lrintf(x: Any) -> Any:
    """C's lrintf: round half to even, to an integer (int32 here)."""
    return m.cast(m.round(x), int32)


def _times(i: Any, f: Any) -> Any:
    """``int * float`` in C++: the int converted to float, one float product."""
    return m.cast(i, float32) * f


def _area(x0: Any, y0: Any, x1: Any, y1: Any) -> Any:
    """Rectangle::Area: ``float((max_x - min_x) * (max_y - min_y))`` (an int product)."""
    return m.cast(m.cast(x1 - x0, int64) * m.cast(y1 - y0, int64), float32)


def _crops(width: Any, height: Any, u: tuple, area_range: tuple, ar_range: tuple) -> tuple:
    """GenerateRandomCrop for every attempt at once: (ok, x, y, crop width, crop height),
    each a vector over the attempts."""
    u_ar, u_h, u_y, u_x = u
    lo, hi = np.float32(ar_range[0]), np.float32(ar_range[1])
    ar = u_ar * (hi - lo) + lo
    w_f, h_f = m.cast(width, float32), m.cast(height, float32)
    min_area = np.float32(area_range[0]) * w_f * h_f
    max_area = np.float32(area_range[1]) * w_f * h_f
    ok = m.logical_and(m.logical_and(m.greater(width, 0), m.greater(height, 0)),
                       constant(area_range[0] <= area_range[1]))
    crop_h = _lrintf(m.sqrt(min_area / ar))
    max_h = _lrintf(m.sqrt(max_area / ar))
    # the smallest max height whose rounded width fits: (W + 0.5 - kEps) / ar in double
    fitted = m.cast((m.cast(width, float64) + 0.5 - float(np.float32(1e-7)))
                    / m.cast(ar, float64), int32)
    fitted = m.where(m.greater(_lrintf(_times(fitted, ar)), width), fitted - 1, fitted)
    max_h = m.where(m.greater(_lrintf(_times(max_h, ar)), width), fitted, max_h)
    max_h = m.minimum(max_h, height)
    crop_h = m.minimum(crop_h, max_h)
    # a height uniform in [crop_h, max_h]
    spread = m.cast(max_h - crop_h + 1, float64)
    crop_h = m.where(m.less(crop_h, max_h), crop_h + m.cast(m.floor(u_h * spread), int32),
                     crop_h)
    crop_w = _lrintf(_times(crop_h, ar))
    area = _area(0, 0, crop_w, crop_h)
    grow = m.less(area, min_area)
    crop_h = m.where(grow, crop_h + 1, crop_h)
    crop_w = m.where(grow, _lrintf(_times(crop_h, ar)), crop_w)
    area = _area(0, 0, crop_w, crop_h)
    shrink = m.greater(area, max_area)
    crop_h = m.where(shrink, crop_h - 1, crop_h)
    crop_w = m.where(shrink, _lrintf(_times(crop_h, ar)), crop_w)
    area = _area(0, 0, crop_w, crop_h)
    bad = m.logical_or(m.logical_or(m.less(area, min_area), m.greater(area, max_area)),
                       m.logical_or(m.logical_or(m.greater(crop_w, width),
                                                 m.greater(crop_h, height)),
                                    m.logical_or(m.less_equal(crop_w, 0),
                                                 m.less_equal(crop_h, 0))))
    ok = m.logical_and(ok, m.logical_not(bad))

    def position(u_pos: Any, room: Any) -> Any:  # uniform in [0, room), 0 without room
        return m.where(m.greater(room, 0),
                       m.cast(m.floor(u_pos * m.cast(room, float64)), int32), 0)

    return ok, position(u_x, width - crop_w), position(u_y, height - crop_h), crop_w, crop_h


def _covers(crop: tuple, boxes: tuple, min_covered: Any) -> Any:
    """SatisfiesOverlapConstraints: [attempts] bool; crop entries are [attempts, 1],
    box entries [1, num_boxes]."""
    cx0, cy0, cx1, cy1 = crop
    bx0, by0, bx1, by1 = boxes
    px0, py0 = m.maximum(cx0, bx0), m.maximum(cy0, by0)
    px1, py1 = m.minimum(cx1, bx1), m.minimum(cy1, by1)
    empty = m.logical_or(m.greater(px0, px1), m.greater(py0, py1))
    inter = m.where(empty, a.zeros_like(m.cast(px0, float32)), _area(px0, py0, px1, py1))
    obj = _area(bx0, by0, bx1, by1)
    counted = m.greater_equal(obj, 1.0)
    covered = m.greater_equal(inter / m.where(counted, obj, a.ones_like(obj)), min_covered)
    enough = m.reduce_any(m.logical_and(counted, covered), axis=1)
    crop_area = a.reshape(_area(cx0, cy0, cx1, cy1), [-1])
    return m.logical_and(m.greater_equal(crop_area, 1.0), enough)


def _sample(fn: str, image_size: Any, bounding_boxes: Any, base: Any, min_object_covered: Any,
            aspect_ratio_range: Any, area_range: Any, max_attempts: Any,
            use_image_if_no_bounding_boxes: Any) -> tuple[Any, Any, Any]:
    from ..frontend.ops.debugging import _assert
    ar_range, area_rng, attempts, use_image = _options(
        fn, aspect_ratio_range, area_range, max_attempts, use_image_if_no_bounding_boxes)
    size = convert_to_tensor(image_size)
    if size.dtype not in _SIZE_DTYPES:
        raise type_error(fn, f"image_size must be an integer tensor (uint8, int8, int16, "
                             f"int32 or int64), got {size.dtype.name}")
    if size.ndim != 1 or size.shape[0] != 3:
        raise shape_error(fn, f"image_size must be a vector of 3 elements [height, width, "
                              f"channels], got shape {list(size.shape)}")
    boxes = convert_to_tensor(bounding_boxes, dtype=float32)
    if boxes.ndim != 3 or boxes.shape[-1] != 4 or None in boxes.shape:
        raise shape_error(fn, f"bounding_boxes must have shape [batch, num_boxes, 4] known "
                              f"when the graph is built, got {list(boxes.shape)}")
    covered = convert_to_tensor(min_object_covered, dtype=float32)
    if covered.ndim != 0:
        raise shape_error(fn, f"min_object_covered must be a scalar, got shape "
                              f"{list(covered.shape)}")
    n_boxes = int(np.prod(boxes.shape[:2]))
    if n_boxes == 0 and not use_image:
        raise value_error(fn, "no bounding boxes were given: pass "
                              "use_image_if_no_bounding_boxes=True to sample around the whole "
                              "image")
    s64 = m.cast(size, int64)
    height64, width64 = a.gather(s64, 0), a.gather(s64, 1)
    limit = np.int64(2**31 - 1)
    checks = [_assert(m.logical_and(m.logical_and(m.greater_equal(height64, 0),
                                                  m.less(height64, limit)),
                                    m.logical_and(m.greater_equal(width64, 0),
                                                  m.less(width64, limit))),
                      f"tw.image.{fn}: the image height and width must be in [0, 2**31 - 1)",
                      None, [("image_size", size)]),
              _assert(m.greater_equal(covered, 0.0), f"tw.image.{fn}: min_object_covered "
                                                     f"must be non-negative", None,
                      [("min_object_covered", covered)])]
    flat = a.reshape(boxes, [n_boxes, 4])
    if n_boxes:
        checks.append(_assert(m.reduce_all(m.logical_and(m.greater_equal(flat, 0.0),
                                                         m.less_equal(flat, 1.0))),
                              f"tw.image.{fn}: all bounding box coordinates must be in "
                              f"[0.0, 1.0]", None, [("bounding_boxes", flat)]))
    with control_dependencies([c for c in checks if c is not None]):
        height, width = a.identity(m.cast(height64, int32)), a.identity(m.cast(width64, int32))
    if n_boxes:
        y0, x0, y1, x1 = a.unstack(flat, axis=1)
        w_f, h_f = m.cast(width, float32), m.cast(height, float32)
        rects = tuple(a.reshape(m.cast(v, int32), [1, n_boxes])
                      for v in (x0 * w_f, y0 * h_f, x1 * w_f, y1 * h_f))
    else:
        zero = a.zeros([1, 1], int32)
        rects = (zero, zero, a.reshape(width, [1, 1]), a.reshape(height, [1, 1]))
    u = (_uniform(base, constant(np.int64(2)), attempts, float32),
         *(_uniform(base, constant(np.int64(k)), attempts) for k in (3, 4, 5)))
    ok, x, y, cw, ch = _crops(width, height, u, area_rng, ar_range)

    def col(t: Any) -> Any:
        return a.reshape(t, [attempts, 1])

    good = m.logical_and(ok, _covers((col(x), col(y), col(x + cw), col(y + ch)), rects,
                                     covered))
    found = m.reduce_any(good)
    first = m.cast(m.argmax(m.cast(good, int32)), int32)

    def pick(t: Any, whole: Any) -> Any:
        return m.where(found, a.gather(t, first), whole)

    x, y = pick(x, a.zeros([], int32)), pick(y, a.zeros([], int32))
    cw, ch = pick(cw, width), pick(ch, height)
    dtype = size.dtype
    begin = m.cast(a.stack([y, x, a.zeros([], int32)]), dtype)
    extent = m.cast(a.stack([ch, cw, a.fill([], np.int32(-1))]), dtype)
    h_f, w_f = m.cast(height, float32), m.cast(width, float32)
    bbox = a.reshape(a.stack([m.cast(y, float32) / h_f, m.cast(x, float32) / w_f,
                              m.cast(y + ch, float32) / h_f, m.cast(x + cw, float32) / w_f]),
                     [1, 1, 4])
    return begin, extent, bbox


def stateless_sample_distorted_bounding_box(
        image_size: TensorLike, bounding_boxes: TensorLike, seed: Any,
        min_object_covered: Any = 0.1, aspect_ratio_range: Any = None, area_range: Any = None,
        max_attempts: int | None = None, use_image_if_no_bounding_boxes: bool | None = None,
        name: str | None = None) -> tuple[TensorLike, TensorLike, TensorLike]:
    """``(begin, size, bboxes)`` of a random crop, a pure function of `seed` (``[a, b]``)
    (``tf.image.stateless_sample_distorted_bounding_box``; module docstring). `begin` and
    `size` (``[y, x, 0]``, ``[h, w, -1]``, the dtype of `image_size`) go to `tw.slice`;
    `bboxes` ([1, 1, 4] float32) is the crop as a box. Defaults: aspect ratios [0.75,
    1.33], areas [0.05, 1.0] of the image, 100 attempts."""
    fn = "stateless_sample_distorted_bounding_box"
    with name_scope(name or fn):
        return _sample(fn, image_size, bounding_boxes, _stream_base(seed), min_object_covered,
                       aspect_ratio_range, area_range, max_attempts,
                       use_image_if_no_bounding_boxes)


def sample_distorted_bounding_box(
        image_size: TensorLike, bounding_boxes: TensorLike, seed: int = 0,
        min_object_covered: Any = 0.1, aspect_ratio_range: Any = None, area_range: Any = None,
        max_attempts: int | None = None, use_image_if_no_bounding_boxes: bool | None = None,
        name: str | None = None) -> tuple[TensorLike, TensorLike, TensorLike]:
    """`stateless_sample_distorted_bounding_box` with a fresh crop each run
    (``tf.image.sample_distorted_bounding_box``); a nonzero `seed` is the op seed."""
    fn = "sample_distorted_bounding_box"
    with name_scope(name or fn):
        return _sample(fn, image_size, bounding_boxes,
                       _stream_base(_stateful_seed(seed or None)), min_object_covered,
                       aspect_ratio_range, area_range, max_attempts,
                       use_image_if_no_bounding_boxes)


def sample_distorted_bounding_box_v1(
        image_size: TensorLike, bounding_boxes: TensorLike, seed: int | None = None,
        seed2: int | None = None, min_object_covered: Any = 0.1, aspect_ratio_range: Any = None,
        area_range: Any = None, max_attempts: int | None = None,
        use_image_if_no_bounding_boxes: bool | None = None,
        name: str | None = None) -> tuple[TensorLike, TensorLike, TensorLike]:
    """TensorFlow 1's ``tf.image.sample_distorted_bounding_box``: `seed` and `seed2` are the
    op's two seeds when either is nonzero (a fixed stream, as TensorFlow 1 passes them to
    the op); otherwise as `sample_distorted_bounding_box`."""
    fn = "sample_distorted_bounding_box"
    with name_scope(name or fn):
        seeds = (_stateful_seed(seed or 0, seed2 or 0) if (seed or seed2)
                 else _stateful_seed(None))
        return _sample(fn, image_size, bounding_boxes, _stream_base(seeds), min_object_covered,
                       aspect_ratio_range, area_range, max_attempts,
                       use_image_if_no_bounding_boxes)


__all__ = ["sample_distorted_bounding_box", "stateless_sample_distorted_bounding_box",
           "sample_distorted_bounding_box_v1"]
