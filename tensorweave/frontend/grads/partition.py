"""Gradients of DynamicPartition and DynamicStitch (TensorFlow's data_flow_grad.py): each
routes the gradient back along the path its forward op took; a slice that DynamicStitch
overwrote gets none.
"""

from __future__ import annotations

from ...compiler.dtypes import int64
from ...compiler.registry import not_differentiable, register_gradient
from ..building import apply_op1
from ..ops import array as a
from ..ops import math as m

not_differentiable("FlatIndexLike")


@register_gradient("DynamicPartition")
def _dynamic_partition(op, *grads):
    data, partitions = op.inputs
    # where each element of data went: partition its flat position the same way, then
    # stitch the output gradients back to those positions
    positions = apply_op1("FlatIndexLike", [partitions])
    moved = a.dynamic_partition(positions, partitions, op.attrs["num_partitions"])
    stitched = a.dynamic_stitch(moved, list(grads))
    if all(d is not None for d in data.shape):
        return [a.reshape(stitched, list(data.shape)), None]
    return [apply_op1("ReshapeLike", [stitched, data]), None]


@register_gradient("DynamicStitch")
def _dynamic_stitch(op, g):
    # Where an index repeats, the later slice wins the row (the forward rule), so only it
    # gets the row's gradient: a slice it overwrote does not reach the result (TensorFlow
    # gave it the row's gradient too until its fix of issue 7397). Every slice gets an
    # id, a DynamicStitch of the ids says which one won each row, and a slice whose row
    # another won gets zeros.
    n = op.attrs["N"]
    indices = op.inputs[:n]
    ids, offset = [], None
    for index in indices:
        own = apply_op1("FlatIndexLike", [index], {"dtype": int64})
        ids.append(own if offset is None else own + offset)
        size = a.size(index, out_type=int64)
        offset = size if offset is None else offset + size
    winner = a.dynamic_stitch(list(indices), ids)
    grads = []
    for index, own in zip(indices, ids):
        rows = a.gather(g, index)
        won = m.equal(a.gather(winner, index), own)
        for _ in range(len(g.shape) - 1):  # (one per dim of a slice)
            won = a.expand_dims(won, -1)
        grads.append(m.where(won, rows, a.zeros_like(rows)))
    return [None] * n + grads
