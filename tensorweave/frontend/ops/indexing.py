"""Sorting, n-d indexing, masking and array creation with TensorFlow 2's names:
``tw.sort``, ``tw.argsort``, ``tw.gather_nd``, ``tw.scatter_nd``,
``tw.tensor_scatter_nd_update`` (and ``_add``, ``_sub``, ``_max``, ``_min``),
``tw.boolean_mask``, ``tw.eye``, ``tw.linspace``, ``tw.meshgrid``, ``tw.sequence_mask``,
``tw.reverse``, ``tw.roll`` and ``tw.searchsorted``.

As elsewhere in tensorweave, static arguments (axes, shapes, shifts, ``num``,
``maxlen``) must be known when the graph is built. Functions that TensorFlow defines by
composition (eye, linspace, meshgrid, reverse, roll, sequence_mask with a maxlen) are
compositions here too, of ops the cpu target compiles natively; an index out of range
is an InvalidArgumentError naming the op, the index and the user's line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...compiler.dtypes import DType, as_dtype, bool_, float32, int32, int64
from ..building import apply_op, apply_op1, convert_operands, convert_to_tensor
from ..context import control_dependencies, name_scope
from . import array as a
from . import math as m
from .array import _scalar, _static_ints, _usage_error
from .debugging import _assert

TensorLike = Any

_DIRECTIONS = ("ASCENDING", "DESCENDING")


# --------------------------------------------------------------------------- sorting

def _descending(direction: str, op: str) -> bool:
    if direction not in _DIRECTIONS:
        raise _usage_error(op, f"direction must be 'ASCENDING' or 'DESCENDING', got "
                               f"{direction!r}")
    return direction == "DESCENDING"


def argsort(values: TensorLike, axis: int = -1, direction: str = "ASCENDING",
            stable: bool = False, name: str | None = None) -> TensorLike:
    """The int32 indices that sort `values` along `axis` (default: the last), in
    `direction` 'ASCENDING' or 'DESCENDING'. The sort is always stable: equal values keep
    their index order in either direction (what ``stable=True`` asks for; ``stable=False``
    allows any order of ties, so this is valid too)."""
    del stable  # always stable
    return apply_op1("ArgSort", [convert_to_tensor(values)],
                     {"axis": _scalar(axis, "argsort", "axis"),
                      "descending": _descending(direction, "ArgSort")}, name=name)


def sort(values: TensorLike, axis: int = -1, direction: str = "ASCENDING",
         name: str | None = None) -> TensorLike:
    """`values` sorted along `axis` (default: the last), 'ASCENDING' or 'DESCENDING'.
    NaNs sort above every number. The gradient flows back to where each value came from
    (the values are gathered at `argsort`'s indices, as in TensorFlow)."""
    values = convert_to_tensor(values)
    axis = _scalar(axis, "sort", "axis")
    with name_scope(name or "sort"):
        order = apply_op1("ArgSort", [values], {"axis": axis,
                                                "descending": _descending(direction, "ArgSort")})
        return apply_op1("TakeAlongAxis", [values, order], {"axis": axis})


# -------------------------------------------------------------- n-d gather/scatter

def gather_nd(params: TensorLike, indices: TensorLike, batch_dims: int = 0,
              name: str | None = None) -> TensorLike:
    """Slices of `params` at the coordinates in the last dim of `indices` (int32/int64):
    the result has shape ``indices.shape[:-1] + params.shape[batch_dims + depth:]``, where
    ``depth = indices.shape[-1]``. With ``batch_dims = b`` the first b dims of both are
    batch dims and each batch's indices index that batch's params. A coordinate out of
    range raises InvalidArgumentError when the graph runs."""
    return apply_op1("GatherNd", [convert_to_tensor(params), convert_to_tensor(indices)],
                     {"batch_dims": _scalar(batch_dims, "gather_nd", "batch_dims")}, name=name)


def scatter_nd(indices: TensorLike, updates: TensorLike, shape: Sequence[int],
               name: str | None = None) -> TensorLike:
    """Zeros of the static `shape`, with ``updates[i...]`` added at the coordinates
    ``indices[i...]`` (repeated indices add up). `updates` has shape
    ``indices.shape[:-1] + shape[indices.shape[-1]:]``; a coordinate out of range raises
    InvalidArgumentError when the graph runs."""
    return apply_op1("ScatterNd", [convert_to_tensor(indices), convert_to_tensor(updates)],
                     {"shape": _static_ints(shape, "scatter_nd", "shape")}, name=name)


def _tensor_scatter(op: str, tensor: Any, indices: Any, updates: Any, name: str | None) -> Any:
    tensor, updates = convert_operands(tensor, updates)
    return apply_op1(op, [tensor, convert_to_tensor(indices), updates], name=name)


def tensor_scatter_nd_update(tensor: TensorLike, indices: TensorLike, updates: TensorLike,
                             name: str | None = None) -> TensorLike:
    """A copy of `tensor` with the slices at the coordinates ``indices[i...]`` replaced by
    ``updates[i...]`` (shape ``indices.shape[:-1] + tensor.shape[depth:]``). Where an index
    repeats, the last update wins. Out-of-range coordinates raise InvalidArgumentError."""
    return _tensor_scatter("TensorScatterUpdate", tensor, indices, updates, name)


def tensor_scatter_nd_add(tensor: TensorLike, indices: TensorLike, updates: TensorLike,
                          name: str | None = None) -> TensorLike:
    """A copy of `tensor` with ``updates[i...]`` added at the coordinates ``indices[i...]``
    (repeated indices add up); shapes as in `tensor_scatter_nd_update`."""
    return _tensor_scatter("TensorScatterAdd", tensor, indices, updates, name)


def tensor_scatter_nd_sub(tensor: TensorLike, indices: TensorLike, updates: TensorLike,
                          name: str | None = None) -> TensorLike:
    """A copy of `tensor` with ``updates[i...]`` subtracted at the coordinates
    ``indices[i...]`` (each repeat subtracts); shapes as in `tensor_scatter_nd_update`."""
    return _tensor_scatter("TensorScatterSub", tensor, indices, updates, name)


def tensor_scatter_nd_max(tensor: TensorLike, indices: TensorLike, updates: TensorLike,
                          name: str | None = None) -> TensorLike:
    """A copy of `tensor` where the slices at ``indices[i...]`` become the elementwise
    maximum of themselves and ``updates[i...]``; shapes as in `tensor_scatter_nd_update`."""
    return _tensor_scatter("TensorScatterMax", tensor, indices, updates, name)


def tensor_scatter_nd_min(tensor: TensorLike, indices: TensorLike, updates: TensorLike,
                          name: str | None = None) -> TensorLike:
    """A copy of `tensor` where the slices at ``indices[i...]`` become the elementwise
    minimum of themselves and ``updates[i...]``; shapes as in `tensor_scatter_nd_update`."""
    return _tensor_scatter("TensorScatterMin", tensor, indices, updates, name)


# ---------------------------------------------------------------------- masking

def boolean_mask(tensor: TensorLike, mask: TensorLike, axis: int | None = None,
                 name: str | None = None) -> TensorLike:
    """The slices of `tensor` where the bool `mask` is True. `mask` has the shape of
    ``tensor.shape[axis:axis + mask.ndim]`` (axis defaults to 0; negative counts from the
    end); those dims become one, holding the selected slices in row-major order. Its size
    is known only at run time (0 when the mask is empty)."""
    tensor = convert_to_tensor(tensor)
    mask = convert_to_tensor(mask)
    axis = 0 if axis is None else _scalar(axis, "boolean_mask", "axis")
    if axis < 0:
        axis += tensor.ndim
    return apply_op1("BooleanMask", [tensor, mask], {"axis": axis}, name=name)


def sequence_mask(lengths: TensorLike, maxlen: int | None = None, dtype: Any = bool_,
                  name: str | None = None) -> TensorLike:
    """``mask[i..., j] = j < lengths[i...]`` for j in ``[0, maxlen)``, as `dtype`
    (default bool); the result has shape ``lengths.shape + [maxlen]``. `lengths` holds
    integers; `maxlen` is a static int, by default ``max(lengths)`` (then that dim is
    known only at run time)."""
    lengths = convert_to_tensor(lengths)
    dtype = as_dtype(dtype)
    if maxlen is None:
        return apply_op1("SequenceMask", [lengths], {"maxlen": -1, "dtype": dtype}, name=name)
    n = _scalar(maxlen, "sequence_mask", "maxlen")
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise _usage_error("SequenceMask", f"maxlen must be an int >= 0, got {maxlen!r}")
    with name_scope(name or "sequence_mask"):
        if lengths.dtype not in (int32, int64):
            # the op reports the dtype, naming the operand
            return apply_op1("SequenceMask", [lengths], {"maxlen": int(n), "dtype": dtype})
        # a comparison the cpu target compiles natively
        mask = m.less(a.range(int(n), dtype=lengths.dtype), a.expand_dims(lengths, -1))
        return mask if dtype is bool_ else m.cast(mask, dtype)


# ---------------------------------------------------------------------- creation

def eye(num_rows: int, num_columns: int | None = None, batch_shape: Sequence[int] | None = None,
        dtype: Any = float32, name: str | None = None) -> TensorLike:
    """An identity matrix ``[num_rows, num_columns]`` (square by default) of `dtype`, or a
    batch of them of shape ``batch_shape + [num_rows, num_columns]``; all sizes static."""
    rows = _scalar(num_rows, "eye", "num_rows")
    cols = rows if num_columns is None else _scalar(num_columns, "eye", "num_columns")
    batch = [] if batch_shape is None else list(_static_ints(batch_shape, "eye", "batch_shape"))
    if any(not isinstance(v, (int, np.integer)) or v < 0 for v in [rows, cols, *batch]):
        raise _usage_error("Eye", f"num_rows, num_columns and batch_shape must be ints >= 0, "
                                  f"got {num_rows!r}, {num_columns!r}, {batch_shape!r}")
    with name_scope(name or "eye"):
        # row i is one-hot at i (all zeros past the last column)
        matrix = a.one_hot(a.range(int(rows)), int(cols), dtype=as_dtype(dtype))
        return a.broadcast_to(matrix, batch + [int(rows), int(cols)]) if batch else matrix


def linspace(start: TensorLike, stop: TensorLike, num: int, name: str | None = None,
             axis: int = 0) -> TensorLike:
    """`num` evenly spaced values from `start` to `stop`, both included (floating point).
    `start` and `stop` may be tensors that broadcast together; the values run along the
    new dim `axis` of the result. As in TensorFlow, value i is ``start + i * delta`` with
    ``delta = (stop - start) / (num - 1)``, and the last is `stop` exactly."""
    start, stop = convert_operands(start, stop)
    if not start.dtype.is_floating:
        raise _usage_error("LinSpace", f"start and stop must be floating point, got "
                                       f"{start.dtype.ir_name}; use tw.cast")
    n = _scalar(num, "linspace", "num")
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise _usage_error("LinSpace", f"num must be an int >= 0, got {num!r}")
    axis = _scalar(axis, "linspace", "axis")
    with name_scope(name or "linspace"):
        # broadcast start and stop against each other (adding zeros keeps infinities)
        start, stop = start + a.zeros_like(stop), stop + a.zeros_like(start)
        rank = start.ndim
        if not -rank - 1 <= axis <= rank:
            raise _usage_error("LinSpace", f"axis {axis} is out of range for a result of "
                                           f"rank {rank + 1}")
        axis %= rank + 1
        first, last = a.expand_dims(start, axis), a.expand_dims(stop, axis)
        parts = [first, last][:min(n, 2)]
        if n > 2:
            delta = (last - first) / float(n - 1)
            steps = a.reshape(a.range(1, n - 1, dtype=start.dtype),
                              [1] * axis + [n - 2] + [1] * (rank - axis))
            parts.insert(1, first + steps * delta)
        if not parts:
            return a.slice(first, [0] * (rank + 1), [-1] * axis + [0] + [-1] * (rank - axis))
        return a.concat(parts, axis) if len(parts) > 1 else a.identity(parts[0])


def meshgrid(*args: TensorLike, **kwargs: Any) -> list[TensorLike]:
    """Coordinate grids from 1-D tensors: with ``indexing='xy'`` (default, Cartesian) the
    results have shape ``[len(y), len(x), len(z)...]``, with ``indexing='ij'`` (matrix)
    ``[len(x), len(y), len(z)...]``; result i repeats ``args[i]`` along the other dims.
    Keyword arguments: `indexing` and `name` only."""
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"tw.meshgrid got unexpected keyword arguments {sorted(kwargs)}")
    if indexing not in ("xy", "ij"):
        raise _usage_error("meshgrid", f"indexing must be 'xy' or 'ij', got {indexing!r}")
    if not args:
        return []
    with name_scope(name or "meshgrid"):
        ndim = len(args)
        flat = [a.reshape(convert_to_tensor(x), [-1]) for x in args]
        axes = list(range(ndim))
        if indexing == "xy" and ndim > 1:
            axes[0], axes[1] = 1, 0  # x runs along dim 1, y along dim 0
        shaped = [a.reshape(x, [-1 if d == axes[i] else 1 for d in range(ndim)])
                  for i, x in enumerate(flat)]
        sizes = [None] * ndim
        for i, x in enumerate(flat):
            sizes[axes[i]] = x.shape[0]
        if all(s is not None for s in sizes):
            return [a.broadcast_to(x, sizes) for x in shaped]
        # a size known only at run time: broadcast against zeros of every other grid axis
        out = []
        for i, x in enumerate(shaped):
            for j, other in enumerate(shaped):
                if j != i:
                    zeros = a.zeros_like(other, dtype=x.dtype)
                    x = m.logical_or(x, zeros) if x.dtype is bool_ else x + zeros
            out.append(x)
        return out


# ------------------------------------------------------------ reversing and rolling

def _axes(axis: Any, rank: int, op: str, fn: str) -> list[int]:
    axes = list(_static_ints(axis, fn, "axis"))
    for ax in axes:
        if not -rank <= ax < rank:
            raise _usage_error(op, f"axis {ax} is out of range for a tensor of rank {rank} "
                                   f"(valid: {-rank} to {rank - 1})")
    return [ax % rank for ax in axes]


def reverse(tensor: TensorLike, axis: Sequence[int], name: str | None = None) -> TensorLike:
    """`tensor` with the order of its elements reversed along each dim in `axis` (a static
    list of distinct ints, negative counting from the end)."""
    tensor = convert_to_tensor(tensor)
    axes = _axes(axis, tensor.ndim, "ReverseV2", "reverse")
    if len(set(axes)) != len(axes):
        raise _usage_error("ReverseV2", f"axis {list(_static_ints(axis, 'reverse', 'axis'))} "
                                        f"names a dim twice")
    if not axes:
        return a.identity(tensor, name=name)
    rank = tensor.ndim
    everything = (1 << rank) - 1
    # a strided slice with stride -1 (the cpu target compiles it natively)
    return a.strided_slice(tensor, [0] * rank, [0] * rank,
                           [-1 if d in axes else 1 for d in range(rank)],
                           begin_mask=everything, end_mask=everything, name=name)


def roll(input: TensorLike, shift: int | Sequence[int], axis: int | Sequence[int],  # noqa: A002
         name: str | None = None) -> TensorLike:
    """`input` rotated by ``shift[k]`` along ``axis[k]`` (scalars or equal-length static
    lists): element i of a dim of size n moves to ``(i + shift) mod n``; negative shifts
    move towards the start, and shifts of a repeated axis add up."""
    input = convert_to_tensor(input)  # noqa: A001
    shifts = list(_static_ints(shift, "roll", "shift"))
    axes = _axes(axis, input.ndim, "Roll", "roll")
    if len(shifts) != len(axes):
        raise _usage_error("Roll", f"shift and axis must have the same length, got shift="
                                   f"{shifts} and axis={list(_static_ints(axis, 'roll', 'axis'))}")
    net: dict[int, int] = {}
    for s, ax in zip(shifts, axes):
        net[ax] = net.get(ax, 0) + s
    if any(input.shape[ax] is None for ax in net):
        return apply_op1("Roll", [input], {"shift": list(net.values()), "axis": list(net)},
                         name=name)
    with name_scope(name or "roll"):
        out = input
        for ax, s in sorted(net.items()):
            n = input.shape[ax]
            s = s % n if n else 0
            if s:
                # the last s entries move to the front
                head = [0] * input.ndim
                tail_begin = [0] * ax + [n - s] + [0] * (input.ndim - ax - 1)
                out = a.concat([a.slice(out, tail_begin, [-1] * ax + [s] + [-1] * (input.ndim - ax - 1)),
                                a.slice(out, head, [-1] * ax + [n - s] + [-1] * (input.ndim - ax - 1))],
                               ax)
        return a.identity(out) if out is input else out


# --------------------------------------------------------------------------- search

def searchsorted(sorted_sequence: TensorLike, values: TensorLike, side: str = "left",
                 out_type: DType | str = int32, name: str | None = None) -> TensorLike:
    """For every entry of `values`' innermost dim, the index in the matching innermost row
    of `sorted_sequence` (sorted ascending) where it would be inserted: the first such
    index with ``side='left'``, the last with ``'right'``. Both have the same rank and
    the same leading (batch) dims; the result has `values`' shape and `out_type`."""
    sorted_sequence, values = convert_operands(sorted_sequence, values)
    return apply_op1("SearchSorted", [sorted_sequence, values],
                     {"side": side, "out_type": as_dtype(out_type)}, name=name)


# ------------------------------------------------------------- unique values, histograms

def _unique(x: TensorLike, out_idx: Any, fn: str, name: str | None) -> tuple[Any, Any, Any]:
    out_idx = as_dtype(out_idx)
    if out_idx not in (int32, int64):
        raise _usage_error(fn, f"out_idx must be tw.int32 or tw.int64, got {out_idx.ir_name}")
    x = convert_to_tensor(x)
    if x.ndim != 1:
        raise _usage_error(fn, f"x must be 1-D, got shape {list(x.shape)}")
    y, idx, count = apply_op("Unique", [x], {"out_idx": out_idx}, name=name)
    return y, idx, count


def unique(x: TensorLike, out_idx: Any = int32, name: str | None = None) -> tuple[Any, Any]:
    """The distinct values of the 1-D `x` in order of first occurrence, and for each
    element of `x` the index of its value among them (dtype `out_idx`, int32 or int64):
    ``x == tw.gather(y, idx)``. TensorFlow's ``tf.unique``; not differentiable."""
    y, idx, _ = _unique(x, out_idx, "unique", name)
    return y, idx


def unique_with_counts(x: TensorLike, out_idx: Any = int32,
                       name: str | None = None) -> tuple[Any, Any, Any]:
    """`unique`, and how often each distinct value occurs (dtype `out_idx`)."""
    return _unique(x, out_idx, "unique_with_counts", name)


def histogram_fixed_width(values: TensorLike, value_range: Any, nbins: int = 100,
                          dtype: Any = int32, name: str | None = None) -> TensorLike:
    """How many of `values` (any shape, numeric) fall in each of `nbins` equal bins over
    ``value_range = [lo, hi]`` (static, lo < hi): values below `lo` count in the first
    bin and values at or above `hi` in the last, as TensorFlow's ``HistogramFixedWidth``
    kernel computes the bin: ``max(v, lo) - lo`` in the values' dtype, then divided by
    ``(hi - lo) / nbins`` in float64, at most ``nbins - 1``, truncated. A NaN value is an
    InvalidArgumentError when the op runs, as in TensorFlow 2.21."""
    n = _scalar(nbins, "histogram_fixed_width", "nbins")
    if not isinstance(n, int) or n < 1:
        raise _usage_error("histogram_fixed_width", f"nbins must be a positive int, got {n!r}")
    lo_hi = np.asarray(a._const_array(value_range) if not isinstance(value_range, (list, tuple))
                       else value_range, np.float64)
    if lo_hi is None or lo_hi.shape != (2,) or not lo_hi[0] < lo_hi[1]:
        raise _usage_error("histogram_fixed_width", f"value_range must be a static [lo, hi] "
                                                    f"with lo < hi, got {value_range!r}")
    lo, hi = float(lo_hi[0]), float(lo_hi[1])
    values = convert_to_tensor(values)
    with name_scope(name or "histogram_fixed_width"):
        v = a.reshape(values, [-1])
        if values.dtype.is_floating:
            check = _assert(m.logical_not(m.reduce_any(m.is_nan(v))),
                            "Histogram values must not contain NaN", "check_nan")
            with control_dependencies([check] if check is not None else None):
                v = a.identity(v)
        low = convert_to_tensor(np.asarray(lo).astype(values.dtype.np))
        step = (hi - lo) / n
        scaled = m.cast(m.maximum(v, low) - low, "float64") / step
        bins = m.cast(m.minimum(scaled, float(n - 1)), "int32")
        return a.unsorted_segment_sum(a.ones_like(bins, dtype=as_dtype(dtype)), bins, n)


__all__ = ["sort", "argsort", "gather_nd", "scatter_nd", "tensor_scatter_nd_update",
           "tensor_scatter_nd_add", "tensor_scatter_nd_sub", "tensor_scatter_nd_max",
           "tensor_scatter_nd_min", "boolean_mask", "sequence_mask", "eye", "linspace",
           "meshgrid", "reverse", "roll", "searchsorted", "unique", "unique_with_counts",
           "histogram_fixed_width"]
