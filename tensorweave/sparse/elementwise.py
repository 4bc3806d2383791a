"""``tw.sparse.maximum``, ``minimum`` and ``softmax``: values combined per index (or per
row of the last dimension) by sorting the entries' row-major keys and reducing the runs
of equal keys with the sorted segment ops.

TensorFlow's kernels assume their inputs in canonical (row-major) order, and with
unordered input they pair values with the wrong indices (measured for SparseSoftmax: it
returns the values of the sorted order beside the indices of the given order); these
functions sort first, so any order gives the right answer, and the result is
TensorFlow's for ordered input.
"""

from __future__ import annotations

from typing import Any

from ..frontend.autodiff import stop_gradient
from ..frontend.building import convert_to_tensor
from ..frontend.context import control_dependencies, name_scope
from ..frontend.ops import array as a
from ..frontend.ops import math as m
from ..frontend.ops.indexing import argsort, unique
from ..frontend.ops.segments import segment_max, segment_min, segment_sum
from .manipulation import linear_keys
from .sparse_tensor import SparseTensor, as_sparse, sparse_error


def _same_shape_check(x: SparseTensor, y: SparseTensor, op: str) -> list[Any]:
    if x.rank is not None and y.rank is not None and x.rank != y.rank:
        raise sparse_error(op, f"the operands must have the same rank, got dense shapes "
                               f"{list(x.shape)} and {list(y.shape)}")
    sx, sy = x.shape, y.shape
    if sx.rank is not None and None not in sx and sy.rank is not None and None not in sy:
        if tuple(sx) != tuple(sy):
            raise sparse_error(op, f"the operands' dense shapes must match (no broadcasting), "
                                   f"got {list(sx)} and {list(sy)}")
        return []
    from ..frontend.ops.debugging import _assert
    check = _assert(m.reduce_all(m.equal(x.dense_shape, y.dense_shape)),
                    f"{op}: the operands' dense shapes must match (no broadcasting)", None,
                    [("a dense_shape", x.dense_shape), ("b dense_shape", y.dense_shape)])
    return [check] if check is not None else []


def _extremum(sp_a: Any, sp_b: Any, op: str, largest: bool, name: str) -> SparseTensor:
    x, y = as_sparse(sp_a, op), as_sparse(sp_b, op)
    if x.dtype is not y.dtype:
        raise sparse_error(op, f"the values' dtypes differ: {x.dtype.name} and {y.dtype.name}")
    with name_scope(name):
        checks = _same_shape_check(x, y, op)
        indices = a.concat([x.indices, y.indices], 0)
        values = a.concat([convert_to_tensor(x.values), convert_to_tensor(y.values)], 0)
        both = SparseTensor(indices, values, x.dense_shape)
        order = argsort(linear_keys(both), stable=True)
        keys = a.gather(linear_keys(both), order)
        values = a.gather(values, order)
        _, which = unique(keys)                 # sorted keys: sorted segment ids
        count = segment_sum(a.ones_like(which), which)
        reduce = segment_max if largest else segment_min
        best = reduce(values, which)
        # an index in one operand only meets the other's implicit zero
        zero = a.zeros_like(best)
        alone = m.equal(count, a.ones_like(count))
        best = m.where(alone, m.maximum(best, zero) if largest else m.minimum(best, zero), best)
        out_indices = segment_min(a.gather(indices, order), which)  # (the rows are equal)
        with control_dependencies(checks):
            return SparseTensor(a.identity(out_indices), best, x.dense_shape)


def maximum(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
    """The elementwise maximum of two SparseTensors of the same dense shape
    (``tf.sparse.maximum``): an entry for every index of either, in row-major order; an
    index stored in one operand only is compared with 0."""
    return _extremum(sp_a, sp_b, "tw.sparse.maximum", True, name or "SparseSparseMaximum")


def minimum(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
    """The elementwise minimum of two SparseTensors of the same dense shape
    (``tf.sparse.minimum``): as `maximum`, with the minimum."""
    return _extremum(sp_a, sp_b, "tw.sparse.minimum", False, name or "SparseSparseMinimum")


def softmax(sp_input: Any, name: str | None = None) -> SparseTensor:
    """Softmax over the last dimension of the stored entries only (``tf.sparse.softmax``):
    the entries sharing all but the last index form one softmax, missing entries take no
    part (they are not zeros of the dense tensor). Indices and order are the input's.
    Floating-point values; differentiable."""
    op = "tw.sparse.softmax"
    sp = as_sparse(sp_input, op)
    if sp.rank is None or sp.rank < 2:
        raise sparse_error(op, f"the SparseTensor must have rank 2 or more (known when the "
                               f"graph is built), got dense shape {sp.shape}")
    if not sp.dtype.is_floating:
        raise sparse_error(op, f"the values must be floating point, got {sp.dtype.name}")
    with name_scope(name or "SparseSoftmax"):
        values = convert_to_tensor(sp.values)
        leading = SparseTensor(a.slice(sp.indices, [0, 0], [-1, sp.rank - 1]), values,
                               a.slice(sp.dense_shape, [0], [sp.rank - 1]))
        keys = linear_keys(leading)             # one key per row of the last dimension
        order = argsort(keys, stable=True)
        _, which = unique(a.gather(keys, order))
        v = a.gather(values, order)
        # (the shift cancels in the result, so it carries no gradient)
        shifted = v - a.gather(stop_gradient(segment_max(v, which)), which)
        e = m.exp(shifted)
        probs = e / a.gather(segment_sum(e, which), which)
        back = argsort(order)                   # the inverse permutation
        return SparseTensor(sp.indices, a.gather(probs, back), sp.dense_shape)


__all__ = ["maximum", "minimum", "softmax"]
