"""Gradients of the sorting, n-d indexing, masking, rolling and segment ops, after
TensorFlow's array_grad.py and math_grad.py.

Gathers and scatters are each other's adjoints (GatherNd <-> TensorScatterAdd,
TakeAlongAxis <-> TakeAlongAxisGrad, BooleanMask <-> BooleanMaskGrad), so gradients of
gradients exist too. Segment max/min share the gradient among the entries equal to the
result; segment prod divides out each entry, with TensorFlow's care for zeros.
"""

from __future__ import annotations

from ...compiler.dtypes import int64
from ...compiler.registry import not_differentiable, register_gradient
from ..building import apply_op1
from ..ops import array as a
from ..ops import indexing as ix
from ..ops import math as m
from ..ops import segments as seg
from .array import _reshape_to

not_differentiable("ArgSort", "SearchSorted", "SequenceMask")


# -- sorting -------------------------------------------------------------------------------

@register_gradient("TakeAlongAxis")
def _take_along_axis(op, g):
    x, indices = op.inputs
    return [apply_op1("TakeAlongAxisGrad", [g, indices, x], {"axis": op.attrs["axis"]}), None]


@register_gradient("TakeAlongAxisGrad")
def _take_along_axis_grad(op, g):
    _, indices, _ = op.inputs
    return [apply_op1("TakeAlongAxis", [g, indices], {"axis": op.attrs["axis"]}), None, None]


# -- n-d gather and scatter ----------------------------------------------------------------

def _gather_nd(g, indices, batch_dims):
    return apply_op1("GatherNd", [g, indices], {"batch_dims": batch_dims})


@register_gradient("GatherNd")
def _gather_nd_grad(op, g):
    params, indices = op.inputs
    b = op.attrs["batch_dims"]
    # every gathered slice adds its gradient back where it came from
    dense = apply_op1("TensorScatterAdd", [a.zeros_like(params), indices, g], {"batch_dims": b})
    return [dense, None]


@register_gradient("ScatterNd")
def _scatter_nd(op, g):
    return [None, ix.gather_nd(g, op.inputs[0])]


@register_gradient("TensorScatterUpdate")
def _tensor_scatter_update(op, g):
    _, indices, updates = op.inputs
    b = op.attrs["batch_dims"]
    # overwritten entries of the tensor get no gradient; an update gets the gradient of
    # the slot it was written to unless a later update overwrote it there (a repeated
    # index: the last update wins, the others do not reach the result). Scattering each
    # update element's id the same way says which one won each slot.
    cleared = apply_op1("TensorScatterUpdate", [g, indices, a.zeros_like(updates)],
                        {"batch_dims": b})
    ids = apply_op1("FlatIndexLike", [updates], {"dtype": int64})
    nobody = m.subtract(a.zeros_like(op.inputs[0], dtype=int64), 1)
    winner = apply_op1("TensorScatterUpdate", [nobody, indices, ids], {"batch_dims": b})
    won = m.equal(_gather_nd(winner, indices, b), ids)
    rows = _gather_nd(g, indices, b)
    return [cleared, None, m.where(won, rows, a.zeros_like(rows))]


@register_gradient("TensorScatterAdd")
def _tensor_scatter_add(op, g):
    return [g, None, _gather_nd(g, op.inputs[1], op.attrs["batch_dims"])]


@register_gradient("TensorScatterSub")
def _tensor_scatter_sub(op, g):
    return [g, None, m.negative(_gather_nd(g, op.inputs[1], op.attrs["batch_dims"]))]


def _tensor_scatter_min_or_max(op, g):
    # TensorFlow's rule: the gradient of an output slot is shared equally among the tensor
    # entry and the updates that equal the output there
    x, indices, updates = op.inputs
    b = op.attrs["batch_dims"]
    out = op.outputs[0]
    x_hit = m.cast(m.equal(x, out), g.dtype)
    u_hit = m.cast(m.equal(updates, _gather_nd(out, indices, b)), g.dtype)
    count = apply_op1("TensorScatterAdd", [x_hit, indices, u_hit], {"batch_dims": b})
    share = g / count
    return [share * x_hit, None, _gather_nd(share, indices, b) * u_hit]


register_gradient("TensorScatterMax")(_tensor_scatter_min_or_max)
register_gradient("TensorScatterMin")(_tensor_scatter_min_or_max)


# -- masking and rolling -------------------------------------------------------------------

@register_gradient("BooleanMask")
def _boolean_mask(op, g):
    tensor, mask = op.inputs
    dense = apply_op1("BooleanMaskGrad", [g, mask], {"axis": op.attrs["axis"]})
    # the mask's static dims may be less known than the tensor's
    return [_reshape_to(dense, tensor) if tuple(dense.shape) != tuple(tensor.shape) else dense,
            None]


@register_gradient("BooleanMaskGrad")
def _boolean_mask_grad(op, g):
    return [ix.boolean_mask(g, op.inputs[1], axis=op.attrs["axis"]), None]


@register_gradient("Roll")
def _roll(op, g):
    shift = [-s for s in op.attrs["shift"]]
    return [apply_op1("Roll", [g], {"shift": shift, "axis": op.attrs["axis"]})]


# -- segment reductions --------------------------------------------------------------------

def _gather_drop_negatives(params, ids, rank):
    """`params` gathered at `ids` (clipped to >= 0), zero where an id is negative, and
    the mask of kept ids broadcastable to rank `rank`."""
    gathered = a.gather(params, m.maximum(ids, a.zeros_like(ids)))
    kept = m.greater_equal(ids, a.zeros_like(ids))
    for _ in range(rank - ids.ndim):
        kept = a.expand_dims(kept, -1)
    return m.where(kept, gathered, a.zeros_like(gathered)), kept


def _segment_min_or_max(op, g):
    data, ids = op.inputs
    n = op.attrs["num_segments"]
    if n == 0:  # every id was dropped (others fail the forward op)
        return [a.zeros_like(data), None]
    # the entries equal to their segment's result share its gradient equally
    chosen, kept = _gather_drop_negatives(op.outputs[0], ids, data.ndim)
    selected = m.logical_and(m.equal(data, chosen), kept)
    count = a.unsorted_segment_sum(m.cast(selected, g.dtype), ids, n)
    share, _ = _gather_drop_negatives(g / m.maximum(count, a.ones_like(count)), ids, data.ndim)
    return [m.where(selected, share, a.zeros_like(share)), None]


register_gradient("UnsortedSegmentMax")(_segment_min_or_max)
register_gradient("UnsortedSegmentMin")(_segment_min_or_max)


@register_gradient("UnsortedSegmentProd")
def _segment_prod(op, g):
    data, ids = op.inputs
    n = op.attrs["num_segments"]
    if n == 0:
        return [a.zeros_like(data), None]
    # d prod / d x_i is the product of the others: prod / x_i, except where x_i is 0; with
    # two zeros or more in a segment every partial derivative is 0 (TensorFlow's rule)
    is_zero = m.equal(data, a.zeros_like(data))
    zeros = a.unsorted_segment_sum(m.cast(is_zero, g.dtype), ids, n)
    g = m.where(m.greater(zeros, a.ones_like(zeros)), a.zeros_like(g), g)
    nonzero_prod = seg.unsorted_segment_prod(m.where(is_zero, a.ones_like(data), data), ids, n)
    prod, _ = _gather_drop_negatives(op.outputs[0], ids, data.ndim)
    others, _ = _gather_drop_negatives(nonzero_prod, ids, data.ndim)
    safe = m.where(is_zero, a.ones_like(data), data)
    partial = m.where(is_zero, others, prod / safe)
    gathered, _ = _gather_drop_negatives(g, ids, data.ndim)
    return [gathered * partial, None]


# -- sorted segment reductions (TensorFlow's math_grad.py) -----------------------------------

def _rows_like(t, rank):
    """`t` ([segments]) reshaped to broadcast against rows of rank `rank`."""
    return a.reshape(t, [-1] + [1] * (rank - 1))


@register_gradient("SegmentSum")
def _sorted_segment_sum(op, g):
    return [a.gather(g, op.inputs[1]), None]


@register_gradient("SegmentMean")
def _sorted_segment_mean(op, g):
    data, ids = op.inputs
    count = seg.segment_sum(a.ones_like(ids, dtype=g.dtype), ids)
    return [a.gather(g / _rows_like(m.maximum(count, a.ones_like(count)), data.ndim), ids),
            None]


def _sorted_segment_min_or_max(op, g):
    data, ids = op.inputs
    # the entries equal to their segment's result share its gradient equally
    selected = m.equal(data, a.gather(op.outputs[0], ids))
    count = seg.segment_sum(m.cast(selected, g.dtype), ids)
    share = a.gather(g / m.maximum(count, a.ones_like(count)), ids)
    return [m.where(selected, share, a.zeros_like(share)), None]


register_gradient("SegmentMax")(_sorted_segment_min_or_max)
register_gradient("SegmentMin")(_sorted_segment_min_or_max)


@register_gradient("SegmentProd")
def _sorted_segment_prod(op, g):
    data, ids = op.inputs
    # as UnsortedSegmentProd: prod / x_i, the product of the others where x_i is 0, and
    # 0 everywhere in a segment with two zeros or more
    is_zero = m.equal(data, a.zeros_like(data))
    zeros = seg.segment_sum(m.cast(is_zero, g.dtype), ids)
    g = m.where(m.greater(zeros, a.ones_like(zeros)), a.zeros_like(g), g)
    nonzero_prod = seg.segment_prod(m.where(is_zero, a.ones_like(data), data), ids)
    safe = m.where(is_zero, a.ones_like(data), data)
    partial = m.where(is_zero, a.gather(nonzero_prod, ids), a.gather(op.outputs[0], ids) / safe)
    return [a.gather(g, ids) * partial, None]
