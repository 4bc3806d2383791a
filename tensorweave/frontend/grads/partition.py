"""Gradients of DynamicPartition and DynamicStitch, as TensorFlow defines them
(data_flow_grad.py): each routes the gradient back along the path its forward op took.
"""

from __future__ import annotations

from ...compiler.registry import not_differentiable, register_gradient
from ..building import apply_op1
from ..ops import array as a

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
    # TensorFlow's rule: every data slice gets the gradient of the row it was stitched
    # into, even when a later slice overwrote that row
    n = op.attrs["N"]
    indices = op.inputs[:n]
    return [None] * n + [a.gather(g, i) for i in indices]
