"""Gradients of the array ops (reshaping, slicing, joining, padding, gathering), after
TensorFlow's array_grad.py.

Most of them move the gradient back to where the forward op took its input from. Static
shapes give static ops (Reshape, Pad, Split); dims unknown until run time use the ops that
read a shape at run time (ReshapeLike, SplitLike, StridedSliceGrad, ReduceToLike).
"""

from __future__ import annotations

from typing import Any

from ...compiler.registry import not_differentiable, register_gradient
from ..building import apply_op, apply_op1
from ..indexed_slices import IndexedSlices
from ..ops import array as a
from ..ops import indexing as ix
from ..ops import math as m
from .common import unbroadcast

not_differentiable("OneHot", "Fill", "ZerosLike", "OnesLike", "Range", "Shape", "Size")


def _known(shape: Any) -> bool:
    return all(d is not None for d in shape)


def _reads_variable(t: Any) -> bool:
    """Whether `t` is the value of a ReadVariable (the gradient flows to a variable), or
    an argument that stands for an eager read of a variable: an eager GradientTape's
    graph lists those in ``variable_read_args``."""
    node = getattr(t, "op", None)
    if node is not None and getattr(node, "op", None) == "ReadVariable":
        return True
    value = getattr(t, "value", None)
    return value is not None and value.is_arg and \
        value in getattr(value.graph, "variable_read_args", ())


def _reshape_to(g: Any, x: Any) -> Any:
    """`g` reshaped to the shape of `x`, read at run time when `x` has unknown dims."""
    if _known(x.shape):
        return g if tuple(g.shape) == tuple(x.shape) else a.reshape(g, list(x.shape))
    return apply_op1("ReshapeLike", [g, x])


# -- reshaping -----------------------------------------------------------------------------

@register_gradient("Reshape")
def _reshape(op, g):
    return [_reshape_to(g, op.inputs[0])]


@register_gradient("ReshapeLike")
def _reshape_like(op, g):
    return [_reshape_to(g, op.inputs[0]), None]


@register_gradient("Transpose")
def _transpose(op, g):
    perm = op.attrs["perm"]
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return [a.transpose(g, inverse)]


@register_gradient("ExpandDims")
def _expand_dims(op, g):
    return [a.squeeze(g, [op.attrs["axis"] % g.ndim])]


@register_gradient("Squeeze")
def _squeeze(op, g):
    return [_reshape_to(g, op.inputs[0])]


# -- joining and splitting -----------------------------------------------------------------

@register_gradient("Concat")
def _concat(op, g):
    axis = op.attrs["axis"] % g.ndim
    values = op.inputs
    if len(values) == 1:
        return [g]
    sizes = [v.shape[axis] for v in values]
    if sizes.count(None) <= 1:  # Split infers one unknown part from the run-time total
        return a.split(g, [-1 if s is None else s for s in sizes], axis=axis)
    # the parts' sizes along the axis are known only at run time
    return apply_op("SplitLike", [g, *values], {"axis": axis})


@register_gradient("SplitLike")
def _split_like(op, *grads):
    return [a.concat(list(grads), op.attrs["axis"])] + [None] * (len(op.inputs) - 1)


@register_gradient("Pack")
def _pack(op, g):
    return a.unstack(g, num=len(op.inputs), axis=op.attrs["axis"])


@register_gradient("Unpack")
def _unpack(op, *grads):
    return [a.stack(list(grads), axis=op.attrs["axis"])]


@register_gradient("Split")
def _split(op, *grads):
    return [a.concat(list(grads), op.attrs["axis"])]


# -- slicing and padding -------------------------------------------------------------------

@register_gradient("Slice")
def _slice(op, g):
    x = op.inputs[0]
    begin, size = op.attrs["begin"], op.attrs["size"]
    paddings = []
    for d, b, n in zip(x.shape, begin, size):
        after = 0 if n == -1 else (None if d is None else d - b - n)
        paddings.append([b, after])
    if all(p[1] is not None for p in paddings):
        return [a.pad(g, paddings)]
    # some trailing padding depends on a run-time size: scatter into zeros like x instead
    end_mask = sum(1 << i for i, n in enumerate(size) if n == -1)
    end = [0 if n == -1 else b + n for b, n in zip(begin, size)]
    attrs = {"begin": begin, "end": end, "strides": [1] * len(begin), "end_mask": end_mask}
    return [apply_op1("StridedSliceGrad", [g, x], attrs)]


@register_gradient("StridedSlice")
def _strided_slice(op, g):
    return [apply_op1("StridedSliceGrad", [g, op.inputs[0]], op.attrs)]


@register_gradient("StridedSliceGrad")
def _strided_slice_grad(op, g):
    return [apply_op1("StridedSlice", [g], op.attrs), None]


@register_gradient("Pad")
def _pad(op, g):
    x = op.inputs[0]
    paddings, mode = op.attrs["paddings"], op.attrs["mode"]
    if mode == "CONSTANT" and _known(x.shape):
        return [a.slice(g, paddings[::2], list(x.shape))]
    # PadGrad reads the sizes at run time, and for mirrored padding also adds the gradients
    # of the mirrored copies back onto the elements they copy
    return [apply_op1("PadGrad", [g], {"paddings": paddings, "mode": mode})]


@register_gradient("PadGrad")
def _pad_grad(op, g):
    return [a.pad(g, list(op.attrs["paddings"]), op.attrs["mode"])]


# -- repeating and broadcasting ------------------------------------------------------------

@register_gradient("Tile")
def _tile(op, g):
    x = op.inputs[0]
    multiples = op.attrs["multiples"]
    if 0 in multiples:  # the output is empty: nothing flowed back
        return [a.zeros_like(x)]
    if all(k == 1 for k in multiples):
        return [g]
    if list(x.shape).count(None) <= 1:
        # [k0*d0, k1*d1, ...] -> [k0, d0, k1, d1, ...] (Reshape infers one unknown d), then
        # sum over the copies
        split_shape = [n for k, d in zip(multiples, x.shape) for n in (k, -1 if d is None else d)]
        copies = list(range(0, 2 * len(multiples), 2))
        return [m.reduce_sum(a.reshape(g, split_shape), axis=copies)]
    # several unknown dims: one Split per tiled axis, adding its copies
    for axis, k in enumerate(multiples):
        if k > 1:
            g = m.add_n(a.split(g, k, axis=axis))
    return [g]


@register_gradient("BroadcastTo")
def _broadcast_to(op, g):
    return [unbroadcast(g, op.inputs[0])]


# -- gathering -----------------------------------------------------------------------------

@register_gradient("Gather")
def _gather(op, g):
    params, indices = op.inputs
    axis = op.attrs["axis"] % params.ndim
    if axis == 0 and _reads_variable(params) and _known(params.shape):
        # rows of a variable: a sparse gradient, so an optimizer updates only these rows
        values = a.reshape(g, [-1] + list(params.shape[1:]))
        return [IndexedSlices(values, a.reshape(indices, [-1]), params.shape), None]
    n = params.shape[axis]
    k = indices.ndim
    # bring the index dims of g to the front, sum them into segments, put the axis back
    front = list(range(axis, axis + k)) + list(range(axis)) + list(range(axis + k, g.ndim))
    rows = a.transpose(g, front)
    if n is not None:
        dense = a.unsorted_segment_sum(rows, indices, n)
    else:
        # the size is known only at run time (a scan over a [None, ...] input reads its
        # elements with Gather): add the rows into zeros shaped like params, axis first
        first = [axis] + list(range(axis)) + list(range(axis + 1, params.ndim))
        zeros = a.zeros_like(a.transpose(params, first) if axis else params)
        dense = ix.tensor_scatter_nd_add(zeros, a.expand_dims(indices, -1), rows)
    back = list(range(1, axis + 1)) + [0] + list(range(axis + 1, params.ndim))
    return [a.transpose(dense, back), None]


@register_gradient("UnsortedSegmentSum")
def _unsorted_segment_sum(op, g):
    data, ids = op.inputs
    if op.attrs["num_segments"] == 0:  # every id was dropped (others fail the forward op)
        return [a.zeros_like(data), None]
    # dropped (negative) ids get no gradient; gather a valid row for them, then mask it out
    valid = ids >= 0
    picked = a.gather(g, m.maximum(ids, a.zeros_like(ids)))
    for _ in range(data.ndim - ids.ndim):
        valid = a.expand_dims(valid, -1)
    return [m.where(valid, picked, a.zeros_like(picked)), None]
