"""Non-max suppression (``tf.image.non_max_suppression`` and its ``_with_scores``,
``_padded`` and ``_overlaps`` versions), composed of sorts, comparisons and a
`while_loop`, with the selection rules of TensorFlow's kernel
(``non_max_suppression_op.cc``):

- candidates are the boxes whose score is strictly above `score_threshold`, taken in
  order of decreasing score, equal scores in increasing box index;
- a candidate is selected unless its similarity with an already selected box is strictly
  above the threshold (IoU of boxes given as any two opposite corners: each box is
  oriented by itself, computed in float32 as the kernel does; or the given `overlaps`
  matrix, ``overlaps[candidate, selected]``); a box of zero area overlaps nothing;
- selection stops after `max_output_size` boxes.

Hard suppression is one pass over the sorted candidates (a `while_loop` of one step per
box, each step comparing a candidate with every selected box at once): a batch of box
sets runs in the same loop. Soft-NMS (``soft_nms_sigma > 0``) selects the highest
current score, then multiplies every other candidate's score by
``exp(-0.5 / sigma * iou**2)`` and drops those at or below `score_threshold`; TensorFlow's
kernel applies the same factors lazily (a candidate's score is updated when it comes to
the top of its queue, the factors in the reverse order), so the selected scores can
differ from TensorFlow's in the last place, and a selection can differ only where two
current scores tie to that last place.

The number of selected boxes is known at run time only, except for the padded version.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.dtypes import float16, float32, int32
from ..frontend.building import convert_to_tensor
from ..frontend.context import control_dependencies, name_scope
from ..frontend.ops import array as a
from ..frontend.ops import math as m
from ..frontend.ops.indexing import argsort, boolean_mask
from ._checks import shape_error, type_error, value_error

TensorLike = Any


# ------------------------------------------------------------------------ arguments

def _boxes_and_scores(fn: str, boxes: Any, scores: Any, batched: bool = False) -> tuple:
    b = convert_to_tensor(boxes)
    s = convert_to_tensor(scores)
    for what, t in (("boxes", b), ("scores", s)):
        if t.dtype not in (float32, float16):
            raise type_error(fn, f"{what} must be float32 or float16, got {t.dtype.name}")
    rank = b.ndim
    if rank < 2 or (rank != 2 and not batched) or b.shape[-1] != 4:
        want = "[..., num_boxes, 4]" if batched else "[num_boxes, 4]"
        raise shape_error(fn, f"boxes must have shape {want}, got {list(b.shape)}")
    if s.ndim != rank - 1 or (s.shape[-1] is not None and b.shape[-2] is not None
                              and s.shape[-1] != b.shape[-2]):
        raise shape_error(fn, f"scores must have shape {list(b.shape[:-1])} (one per box), "
                              f"got {list(s.shape)}")
    if None in b.shape or None in s.shape:
        raise shape_error(fn, f"the number of boxes must be known when the graph is built, "
                              f"got boxes {list(b.shape)}")
    return b, s


def _threshold(fn: str, what: str, value: Any, dtype: Any, unit: bool) -> Any:
    """A threshold as a scalar tensor of `dtype`; a value known now is checked now (a
    computed one at run time) to lie in [0, 1] when `unit`."""
    t = convert_to_tensor(value, dtype=float32)
    if t.ndim != 0:
        raise shape_error(fn, f"{what} must be a scalar, got shape {list(t.shape)}")
    checks = []
    if unit:
        known = _known(t)
        if known is not None and not 0 <= known <= 1:
            raise value_error(fn, f"{what} must be in [0, 1], got {known}")
        if known is None:
            from ..frontend.ops.debugging import _assert
            checks.append(_assert(m.logical_and(m.greater_equal(t, 0.0), m.less_equal(t, 1.0)),
                                  f"tw.image.{fn}: {what} must be in [0, 1]", None,
                                  [(what, t)]))
    with control_dependencies([c for c in checks if c is not None]):
        return m.cast(a.identity(t) if checks else t, dtype)


def _known(t: Any) -> float | None:
    from ..frontend.ops.array import _const_array
    arr = _const_array(t)
    return None if arr is None else float(arr)


def _max_output(fn: str, value: Any, static: bool = False) -> tuple[Any, int | None]:
    """(the scalar int32 tensor, its value when known); negative is an error."""
    t = convert_to_tensor(value)
    if t.ndim != 0 or not t.dtype.is_integer:
        raise type_error(fn, f"max_output_size must be an integer scalar, got {t.type}")
    known = _known(t)
    if known is not None and known < 0:
        raise value_error(fn, f"max_output_size must be non-negative, got {int(known)}")
    if static and known is None:
        raise shape_error(fn, "max_output_size must be known when the graph is built with "
                              "pad_to_max_output_size=True (it is the output's length)")
    t = m.cast(t, int32)
    if known is None:
        from ..frontend.ops.debugging import _assert
        check = _assert(m.greater_equal(t, 0), f"tw.image.{fn}: max_output_size must be "
                                               f"non-negative", None, [("max_output_size", t)])
        with control_dependencies([check] if check is not None else []):
            t = a.identity(t)
    return t, None if known is None else int(known)


# ---------------------------------------------------------------------- similarities

def pairwise_iou(boxes: Any) -> Any:
    """[..., n, n] float32 IoU of every pair of boxes ([..., n, 4], any two opposite
    corners), as TensorFlow's kernel computes it (0 where either box has no area)."""
    b = m.cast(boxes, float32)
    y0, x0, y1, x1 = a.unstack(b, axis=-1)
    ymin, ymax = m.minimum(y0, y1), m.maximum(y0, y1)
    xmin, xmax = m.minimum(x0, x1), m.maximum(x0, x1)
    area = (ymax - ymin) * (xmax - xmin)

    def rows(t: Any) -> Any:
        return a.expand_dims(t, -1)     # box i along the rows

    def cols(t: Any) -> Any:
        return a.expand_dims(t, -2)     # box j along the columns

    inter = (m.maximum(m.minimum(rows(ymax), cols(ymax)) - m.maximum(rows(ymin), cols(ymin)),
                       0.0)
             * m.maximum(m.minimum(rows(xmax), cols(xmax)) - m.maximum(rows(xmin), cols(xmin)),
                         0.0))
    both = m.logical_and(m.greater(rows(area), 0.0), m.greater(cols(area), 0.0))
    union = rows(area) + cols(area) - inter
    return m.where(both, inter / m.where(both, union, a.ones_like(union)), a.zeros_like(union))


# ------------------------------------------------------------------ hard suppression

def _hard_keep(similarity: Any, scores: Any, score_threshold: Any, threshold: Any,
               max_output: Any) -> tuple[Any, Any]:
    """(order, keep): each batch's candidates sorted as the kernel takes them
    ([batch, n] int32 box indices) and whether each is selected ([batch, n] bool).
    `similarity[b, i, j]` is that of box i as the candidate with box j as the selected
    one; `scores` is [batch, n]."""
    n = int(scores.shape[-1])
    batch = int(scores.shape[0])
    valid = m.greater(scores, score_threshold)
    order = argsort(scores, axis=-1, direction="DESCENDING", stable=True)
    valid_sorted = a.gather(valid, order, batch_dims=1)
    sim = a.gather(a.gather(similarity, order, axis=1, batch_dims=1), order, axis=2,
                   batch_dims=1)
    # compared as the kernel does: the float similarity cast to the scores' type
    over = m.greater(m.cast(sim, scores.dtype), threshold)            # [batch, n, n]
    positions = a.reshape(a.range(n, dtype=int32), [1, n])

    def cond(i, keep):
        return m.less(i, n)

    def body(i, keep):
        row = a.gather(over, i, axis=1)                                # [batch, n] over j
        suppressed = m.reduce_any(m.logical_and(keep, row), axis=1)
        count = m.reduce_sum(m.cast(keep, int32), axis=1)
        take = m.logical_and(m.logical_and(a.gather(valid_sorted, i, axis=1),
                                           m.logical_not(suppressed)),
                             m.less(count, max_output))
        keep = m.where(m.equal(positions, i), a.expand_dims(take, 1), keep)
        return i + 1, keep

    from ..frontend.control_flow import while_loop
    _, keep = while_loop(cond, body, (a.zeros([], int32), a.zeros([batch, n], "bool")),
                         back_prop=False)
    return order, keep


def _selected(order: Any, keep: Any) -> Any:
    """The kept box indices (one batch) in selection order: a run-time length."""
    return boolean_mask(a.reshape(order, [-1]), a.reshape(keep, [-1]))


def non_max_suppression(boxes: TensorLike, scores: TensorLike, max_output_size: Any,
                        iou_threshold: Any = 0.5, score_threshold: Any = float("-inf"),
                        name: str | None = None) -> TensorLike:
    """The int32 indices of at most `max_output_size` boxes ([num_boxes, 4] as
    ``[y1, x1, y2, x2]``, any two opposite corners) selected greedily by decreasing
    `scores` ([num_boxes]), skipping boxes whose IoU with a selected one is above
    `iou_threshold` and boxes scoring at or below `score_threshold`
    (``tf.image.non_max_suppression``)."""
    fn = "non_max_suppression"
    with name_scope(name or fn):
        b, s = _boxes_and_scores(fn, boxes, scores)
        thr = _threshold(fn, "iou_threshold", iou_threshold, s.dtype, unit=True)
        sthr = _threshold(fn, "score_threshold", score_threshold, s.dtype, unit=False)
        limit, _ = _max_output(fn, max_output_size)
        order, keep = _hard_keep(a.expand_dims(pairwise_iou(b), 0), a.expand_dims(s, 0),
                                 sthr, thr, limit)
        return _selected(order, keep)


def non_max_suppression_overlaps(overlaps: TensorLike, scores: TensorLike,
                                 max_output_size: Any, overlap_threshold: Any = 0.5,
                                 score_threshold: Any = float("-inf"),
                                 name: str | None = None) -> TensorLike:
    """`non_max_suppression` with a given similarity matrix: candidate i is skipped when
    ``overlaps[i, j]`` for a selected j is above `overlap_threshold`
    (``tf.image.non_max_suppression_overlaps``)."""
    fn = "non_max_suppression_overlaps"
    with name_scope(name or fn):
        ov = convert_to_tensor(overlaps, dtype=float32)
        s = convert_to_tensor(scores, dtype=float32)
        if ov.ndim != 2 or ov.shape[0] != ov.shape[1] or None in ov.shape:
            raise shape_error(fn, f"overlaps must be a square matrix of known size, got "
                                  f"shape {list(ov.shape)}")
        if s.ndim != 1 or s.shape[0] != ov.shape[0]:
            raise shape_error(fn, f"scores must have shape [{ov.shape[0]}] (one per row of "
                                  f"overlaps), got {list(s.shape)}")
        thr = _threshold(fn, "overlap_threshold", overlap_threshold, float32, unit=False)
        sthr = _threshold(fn, "score_threshold", score_threshold, float32, unit=False)
        limit, _ = _max_output(fn, max_output_size)
        order, keep = _hard_keep(a.expand_dims(ov, 0), a.expand_dims(s, 0), sthr, thr, limit)
        return _selected(order, keep)


def non_max_suppression_padded(boxes: TensorLike, scores: TensorLike, max_output_size: Any,
                               iou_threshold: Any = 0.5, score_threshold: Any = float("-inf"),
                               pad_to_max_output_size: bool = False, name: str | None = None,
                               sorted_input: bool = False,
                               canonicalized_coordinates: bool = False,
                               tile_size: int = 512) -> tuple[TensorLike, TensorLike]:
    """``(selected_indices, valid_outputs)`` of `non_max_suppression`
    (``tf.image.non_max_suppression_padded``): with `pad_to_max_output_size` the indices
    are padded with zeros to `max_output_size` (then known when the graph is built), and
    boxes may have batch dimensions (``[..., num_boxes, 4]``, scores ``[..., num_boxes]``).
    `sorted_input`, `canonicalized_coordinates` and `tile_size` are speed hints in
    TensorFlow and change nothing here. (TensorFlow 2's version orients every box as
    the first one; each box is oriented by itself here, as in its kernel.)"""
    fn = "non_max_suppression_padded"
    del sorted_input, canonicalized_coordinates, tile_size
    with name_scope(name or fn):
        b, s = _boxes_and_scores(fn, boxes, scores, batched=True)
        if b.ndim > 2 and not pad_to_max_output_size:
            raise value_error(fn, f"pad_to_max_output_size must be True for batched boxes "
                                  f"(shape {list(b.shape)}), as in TensorFlow")
        thr = _threshold(fn, "iou_threshold", iou_threshold, s.dtype, unit=True)
        sthr = _threshold(fn, "score_threshold", score_threshold, s.dtype, unit=False)
        limit, known = _max_output(fn, max_output_size, static=pad_to_max_output_size)
        batch_shape = [int(d) for d in b.shape[:-2]]
        n = int(b.shape[-2])
        rows = int(np.prod(batch_shape, dtype=np.int64))
        flat_b = a.reshape(b, [rows, n, 4])
        flat_s = a.reshape(s, [rows, n])
        order, keep = _hard_keep(pairwise_iou(flat_b), flat_s, sthr, thr, limit)
        valid = m.reduce_sum(m.cast(keep, int32), axis=1)                 # [batch]
        if not pad_to_max_output_size:
            return _selected(order, keep), a.reshape(valid, [])
        # the kept indices moved to their rank among the kept (slot `known` collects the
        # rest and is dropped)
        rank = m.cumsum(m.cast(keep, int32), axis=1, exclusive=True)
        slot = m.where(keep, rank, a.fill([1, 1], np.int32(known)) + a.zeros_like(rank))
        offsets = a.reshape(a.range(rows, dtype=int32) * (known + 1), [rows, 1])
        segments = a.reshape(slot + offsets, [-1])
        picked = a.unsorted_segment_sum(a.reshape(m.where(keep, order, a.zeros_like(order)),
                                                  [-1]), segments, rows * (known + 1))
        padded = a.slice(a.reshape(picked, [rows, known + 1]), [0, 0], [rows, known])
        return (a.reshape(padded, batch_shape + [known]), a.reshape(valid, batch_shape))


# ------------------------------------------------------------------ soft suppression

def _soft(iou: Any, scores: Any, score_threshold: Any, sigma: float,
          max_output: Any) -> tuple[Any, Any]:
    """Soft-NMS on one set of boxes (module docstring): (indices, scores) selected."""
    n = int(scores.shape[0])
    dt = scores.dtype.np
    scale = np.asarray(-0.5, dt) / np.asarray(sigma, dt)   # T(-0.5) / sigma, in T
    sim = m.cast(iou, scores.dtype)
    weight = m.exp(scale * sim * sim)                       # [n, n], in T as the kernel
    minus_inf = a.fill([n], np.asarray(-np.inf, scores.dtype.np))
    positions = a.range(n, dtype=int32)

    def cond(k, alive, current, out_idx, out_scores):
        return m.logical_and(m.less(k, max_output), m.reduce_any(alive))

    def body(k, alive, current, out_idx, out_scores):
        pick = m.cast(m.argmax(m.where(alive, current, minus_inf)), int32)
        chosen = m.equal(positions, pick)
        out_idx = m.where(m.equal(positions, k), pick, out_idx)
        out_scores = m.where(m.equal(positions, k), a.gather(current, pick), out_scores)
        alive = m.logical_and(alive, m.logical_not(chosen))
        current = m.where(alive, current * a.gather(weight, pick, axis=1), current)
        alive = m.logical_and(alive, m.greater(current, score_threshold))
        return k + 1, alive, current, out_idx, out_scores

    from ..frontend.control_flow import while_loop
    k, _, _, out_idx, out_scores = while_loop(
        cond, body, (a.zeros([], int32), m.greater(scores, score_threshold), scores,
                     a.zeros([n], int32), a.zeros_like(scores)), back_prop=False)
    taken = m.less(positions, k)
    return boolean_mask(out_idx, taken), boolean_mask(out_scores, taken)


def non_max_suppression_with_scores(boxes: TensorLike, scores: TensorLike,
                                    max_output_size: Any, iou_threshold: Any = 0.5,
                                    score_threshold: Any = float("-inf"),
                                    soft_nms_sigma: Any = 0.0,
                                    name: str | None = None) -> tuple[TensorLike, TensorLike]:
    """``(selected_indices, selected_scores)`` (``tf.image.non_max_suppression_with_scores``):
    with ``soft_nms_sigma = 0`` the hard selection of `non_max_suppression` and the
    selected boxes' scores; with ``soft_nms_sigma > 0`` Soft-NMS (Bodla et al., 2017):
    no box is skipped for its IoU (`iou_threshold` is unused, as in TensorFlow), scores
    decay by ``exp(-0.5 * iou**2 / sigma)`` instead (module docstring)."""
    fn = "non_max_suppression_with_scores"
    with name_scope(name or fn):
        b, s = _boxes_and_scores(fn, boxes, scores)
        thr = _threshold(fn, "iou_threshold", iou_threshold, s.dtype, unit=True)
        sthr = _threshold(fn, "score_threshold", score_threshold, s.dtype, unit=False)
        limit, _ = _max_output(fn, max_output_size)
        sigma_known = _known(convert_to_tensor(soft_nms_sigma, dtype=float32))
        if sigma_known is None:
            raise value_error(fn, "soft_nms_sigma must be known when the graph is built (a "
                                  "Python number or a constant)")
        if sigma_known < 0:
            raise value_error(fn, f"soft_nms_sigma must be non-negative, got {sigma_known}")
        iou = pairwise_iou(b)
        if sigma_known == 0:
            order, keep = _hard_keep(a.expand_dims(iou, 0), a.expand_dims(s, 0), sthr, thr,
                                     limit)
            selected = _selected(order, keep)
            return selected, a.gather(s, selected)
        return _soft(iou, s, sthr, sigma_known, limit)


__all__ = ["non_max_suppression", "non_max_suppression_with_scores",
           "non_max_suppression_padded", "non_max_suppression_overlaps", "pairwise_iou"]
