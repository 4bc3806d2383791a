"""Shape manipulation and creation: ``tw.reshape``, ``tw.concat``, ``tw.gather``, Python
indexing of tensors, ``tw.zeros``, ``tw.range`` ... with TensorFlow's names and conventions.

Static arguments (shapes, axes, permutations, paddings, slice bounds) must be known when
the graph is built: Python ints, lists/tuples of ints, NumPy arrays, eager tensors or
tensors produced by a constant. A computed tensor there raises a TypeError, with two
exceptions that need no static value: ``tw.reshape(x, tw.shape(y))`` (reshape to the
run-time shape of ``y``) and ``tw.zeros(tw.shape(y))`` / ``tw.ones(tw.shape(y))``.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...compiler.dtypes import DType, as_dtype, bool_, float32, int32, int64
from ...compiler.ir import Value
from ...errors import DTypeError, ShapeError
from ..building import (
    apply_op,
    apply_op1,
    constant,
    convert_operands,
    convert_to_tensor,
    python_array,
    user_location,
)
from ..tensor import EagerTensor, Tensor

TensorLike = Any
_builtin_range = builtins.range
_builtin_slice = builtins.slice

newaxis = None
"""Use in indexing to insert an axis of size 1: ``x[:, tw.newaxis]``."""


# ------------------------------------------------------------------ static arguments

def _const_array(value: Any) -> np.ndarray | None:
    """The value of a tensor known while building the graph (eager, or made by a Const)."""
    if isinstance(value, EagerTensor):
        return value._array
    if isinstance(value, Tensor):
        node = value.op
        return node.attrs["value"] if node is not None and node.op == "Const" else None
    return np.asarray(value)


def _static_ints(value: Any, fn: str, arg: str) -> tuple[int, ...]:
    """`value` (an int, a list of ints, an array or a constant tensor) as a tuple of ints."""
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return tuple(i for v in value for i in _static_ints(v, fn, arg))
    if isinstance(value, (Tensor, EagerTensor)) or hasattr(value, "_as_tensor"):
        arr = _const_array(value) if not hasattr(value, "_as_tensor") else None
        if arr is None:
            raise _type_error(fn, f"`{arg}` must be known when the graph is built (Python "
                                  f"ints, a list or a NumPy array), got the computed tensor "
                                  f"{value!r}; tensorweave needs static {arg} here"
                                  + ("; to reshape to the run-time shape of y pass "
                                     "tw.shape(y) itself" if fn == "reshape" else ""))
    else:
        try:
            arr = np.asarray(value)
        except ValueError:
            arr = np.asarray(value, dtype=object)
    if arr.size and arr.dtype.kind not in "iu":
        raise _type_error(fn, f"`{arg}` must hold integers, got {value!r}")
    return tuple(int(v) for v in arr.reshape(-1))


def _shape_source(value: Any) -> Value | None:
    """The tensor whose run-time shape `value` is, when `value` comes from ``tw.shape(y)``."""
    if isinstance(value, Tensor) and value.op is not None and value.op.op == "Shape":
        return value.op.inputs[0]
    return None


def _scalar(value: Any, fn: str, arg: str) -> Any:
    """A static Python scalar (from a number, a NumPy scalar or a constant tensor)."""
    arr = _const_array(value) if not isinstance(value, (bool, int, float)) else None
    if arr is None and isinstance(value, Tensor):
        raise _type_error(fn, f"`{arg}` must be known when the graph is built, got the "
                              f"computed tensor {value!r}")
    if arr is None:
        return value
    if arr.ndim != 0:
        raise _type_error(fn, f"`{arg}` must be a scalar, got {value!r}")
    return arr.item()


def _fill_value(value: Any, dtype: DType, fn: str, arg: str) -> Any:
    """The static fill value `value` (`_scalar`) of a result of `dtype`, refused when
    it is not a value of that dtype (a fraction for an integer dtype, an int out of its
    range): the op would store it truncated."""
    scalar = _scalar(value, fn, arg)
    if dtype.is_bool:  # (a number counts by its truth, as NumPy's astype: pad's default 0)
        return scalar
    try:
        python_array(scalar, dtype)
    except DTypeError as e:
        raise _type_error(fn, f"`{arg}` must be a value of the result's dtype: "
                              f"{e.message}") from None
    if isinstance(scalar, int) and float(scalar) != scalar:
        # the op keeps the value as a float64 attribute: beyond 2**53 it would change
        raise _type_error(fn, f"`{arg}` {scalar} has no exact float64 value, which the "
                              f"op stores; use a value within +-2**53")
    return scalar


def _python_dtype(value: Any) -> DType:
    """TensorFlow's default dtype for a static scalar (bool, int32 or float32)."""
    if isinstance(value, (Tensor, EagerTensor)):
        return value.dtype
    if isinstance(value, (np.generic, np.ndarray)):
        return as_dtype(value.dtype)
    if isinstance(value, bool):
        return bool_
    return int32 if isinstance(value, int) else float32


def _type_error(fn: str, message: str) -> DTypeError:
    """A DTypeError (a TypeError) for a static argument of ``tw.<fn>`` of the wrong kind,
    naming the function and the user's line."""
    loc = user_location()
    return DTypeError(message, op=f"tw.{fn}", location=str(loc) if loc else None)


def _usage_error(op: str, message: str) -> ShapeError:
    """A ShapeError raised by a frontend function, naming the op and the user's line."""
    loc = user_location()
    return ShapeError(message, op=op, location=str(loc) if loc else None)


# ------------------------------------------------------------------ shape manipulation

def reshape(tensor: TensorLike, shape: Any, name: str | None = None) -> TensorLike:
    """Reshape `tensor` to `shape` (row-major order); one entry may be -1 and is inferred.

    `shape` must be static (ints, a list, a NumPy array or a constant), or a tensor made by
    ``tw.shape(y)``, which reshapes to the run-time shape of ``y``.
    """
    tensor = convert_to_tensor(tensor)
    like = _shape_source(shape)
    if like is not None:
        return apply_op1("ReshapeLike", [tensor, like], name=name)
    return apply_op1("Reshape", [tensor], {"shape": _static_ints(shape, "reshape", "shape")},
                     name=name)


def transpose(a: TensorLike, perm: Sequence[int] | None = None, name: str | None = None) -> TensorLike:
    """Permute the axes of `a`: output axis i is input axis ``perm[i]``; by default the
    axes are reversed (``a.T``)."""
    a = convert_to_tensor(a)
    perm = tuple(reversed(_builtin_range(a.ndim))) if perm is None else \
        _static_ints(perm, "transpose", "perm")
    return apply_op1("Transpose", [a], {"perm": perm}, name=name)


def expand_dims(input: TensorLike, axis: int, name: str | None = None) -> TensorLike:
    """Insert a dimension of size 1 at `axis` (``-rank-1 <= axis <= rank``)."""
    return apply_op1("ExpandDims", [convert_to_tensor(input)],
                     {"axis": _scalar(axis, "expand_dims", "axis")}, name=name)


def squeeze(input: TensorLike, axis: int | Sequence[int] | None = None,
            name: str | None = None) -> TensorLike:
    """Remove size-1 dimensions: those in `axis`, or all of them (then every dim must be
    known at trace time)."""
    axes = () if axis is None else _static_ints(axis, "squeeze", "axis")
    return apply_op1("Squeeze", [convert_to_tensor(input)], {"axes": axes}, name=name)


def concat(values: Sequence[TensorLike], axis: int, name: str | None = None) -> TensorLike:
    """Join tensors of the same rank and dtype along the existing dimension `axis`."""
    if not isinstance(values, (list, tuple)):
        values = [values]
    return apply_op1("Concat", convert_operands(*values),
                     {"axis": _scalar(axis, "concat", "axis")}, name=name)


def stack(values: Sequence[TensorLike], axis: int = 0, name: str | None = None) -> TensorLike:
    """Stack tensors of one shape and dtype along a new dimension `axis`."""
    return apply_op1("Pack", convert_operands(*values), {"axis": _scalar(axis, "stack", "axis")},
                     name=name)


def unstack(value: TensorLike, num: int | None = None, axis: int = 0,
            name: str | None = None) -> list[TensorLike]:
    """Split `value` along `axis` into a list of tensors with that dimension removed.
    `num` defaults to the (static) size of the dimension."""
    value = convert_to_tensor(value)
    axis = _scalar(axis, "unstack", "axis")
    if num is None:
        if -value.ndim <= axis < value.ndim and value.shape[axis] is not None:
            num = value.shape[axis]
        elif -value.ndim <= axis < value.ndim:
            raise _usage_error("Unpack", f"cannot infer num from value's shape "
                               f"{value.type}: dimension {axis} is unknown; pass num=")
        else:
            num = 0  # the op reports the bad axis
    return apply_op("Unpack", [value], {"num": num, "axis": axis}, name=name)


def split(value: TensorLike, num_or_size_splits: int | Sequence[int], axis: int = 0,
          name: str | None = None) -> list[TensorLike]:
    """Split `value` along `axis`: into `num_or_size_splits` equal parts when it is an int,
    else into parts of the given sizes (one may be -1: the remainder)."""
    value = convert_to_tensor(value)
    axis = _scalar(axis, "split", "axis")
    sizes = _static_ints(num_or_size_splits, "split", "num_or_size_splits")
    if np.ndim(_const_array(num_or_size_splits)) == 0:
        attrs = {"num_split": sizes[0]}
        if sizes[0] <= 0:
            raise _usage_error("Split", f"num_or_size_splits must be > 0, got {sizes[0]}")
    else:
        attrs = {"size_splits": sizes}
    return apply_op("Split", [value], {"axis": axis, **attrs}, name=name)


def slice(input_: TensorLike, begin: Sequence[int], size: Sequence[int],
          name: str | None = None) -> TensorLike:
    """The block of `input_` starting at `begin` with extent `size` (-1: to the end)."""
    return apply_op1("Slice", [convert_to_tensor(input_)],
                     {"begin": _static_ints(begin, "slice", "begin"),
                      "size": _static_ints(size, "slice", "size")}, name=name)


def strided_slice(input_: TensorLike, begin: Sequence[int], end: Sequence[int],
                  strides: Sequence[int] | None = None, begin_mask: int = 0, end_mask: int = 0,
                  ellipsis_mask: int = 0, new_axis_mask: int = 0, shrink_axis_mask: int = 0,
                  name: str | None = None) -> TensorLike:
    """TensorFlow's strided slice: ``begin[i]:end[i]:strides[i]`` per entry i, with bit i
    of the masks meaning "ignore begin/end", "this entry is ``...``", "insert an axis" and
    "index (remove the dimension)". Python indexing of tensors maps to this."""
    begin = _static_ints(begin, "strided_slice", "begin")
    end = _static_ints(end, "strided_slice", "end")
    strides = (1,) * len(begin) if strides is None else _static_ints(strides, "strided_slice",
                                                                      "strides")
    return apply_op1("StridedSlice", [convert_to_tensor(input_)],
                     {"begin": begin, "end": end, "strides": strides, "begin_mask": begin_mask,
                      "end_mask": end_mask, "ellipsis_mask": ellipsis_mask,
                      "new_axis_mask": new_axis_mask, "shrink_axis_mask": shrink_axis_mask},
                     name=name)


def _index_int(value: Any, what: str) -> int:
    if isinstance(value, (Tensor, EagerTensor)) or hasattr(value, "_as_tensor"):
        raise TypeError(f"tensor {what} are not supported in tensorweave indexing; "
                        f"slice bounds must be Python ints")
    if isinstance(value, (bool, np.bool_)) or not hasattr(value, "__index__"):
        raise TypeError(f"{what} must be ints or None, got {value!r}")
    return int(value.__index__())


def _append(begin: list, end: list, strides: list, b: int, e: int, s: int) -> None:
    begin.append(b)
    end.append(e)
    strides.append(s)


def _is_advanced_index(k: Any) -> bool:
    """Tensors, lists and arrays: NumPy's advanced indexing, which strided slices can't do."""
    if isinstance(k, np.ndarray):
        return k.ndim > 0 or k.dtype.kind not in "iu"
    return isinstance(k, (Tensor, EagerTensor, list)) or hasattr(k, "_as_tensor")


def getitem(tensor: TensorLike, key: Any) -> TensorLike:
    """``tensor[key]`` (`Tensor.__getitem__`): ints (negative count from the end), slices
    with any non-zero step, ``None``/``tw.newaxis`` and ``...``, or tuples of them. It maps
    to one StridedSlice exactly as TensorFlow does. One integer or bool tensor, list or
    array among them (NumPy's advanced indexing) adds a Gather or a BooleanMask:
    `advanced_indexing.py`."""
    if not isinstance(key, tuple):
        key = (key,)
    if any(_is_advanced_index(k) for k in key):
        from .advanced_indexing import advanced_getitem
        return advanced_getitem(tensor, key)
    begin, end, strides = [], [], []
    masks = {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0,
             "shrink_axis_mask": 0}
    for i, k in enumerate(key):
        bit = 1 << i
        if k is None or k is Ellipsis:
            masks["new_axis_mask" if k is None else "ellipsis_mask"] |= bit
            _append(begin, end, strides, 0, 0, 1)
        elif isinstance(k, _builtin_slice):
            for bound, mask, out in ((k.start, "begin_mask", begin), (k.stop, "end_mask", end)):
                if bound is None:
                    masks[mask] |= bit
                    out.append(0)
                else:
                    out.append(_index_int(bound, "slice bounds"))
            strides.append(1 if k.step is None else _index_int(k.step, "slice steps"))
            if strides[-1] == 0:
                raise ValueError("slice step cannot be zero")
        else:
            index = _index_int(k, "indices")
            masks["shrink_axis_mask"] |= bit
            _append(begin, end, strides, index, index + 1, 1)
    return strided_slice(tensor, begin, end, strides, **masks)


def pad(tensor: TensorLike, paddings: Any, mode: str = "CONSTANT", constant_values: Any = 0,
        name: str | None = None) -> TensorLike:
    """Pad dimension i with ``paddings[i][0]`` values before and ``paddings[i][1]`` after
    (`paddings` is static: shape [rank, 2], or the same numbers flattened).
    `mode` is CONSTANT (fill with the static scalar `constant_values`), REFLECT (mirror
    without the edge) or SYMMETRIC (mirror with the edge), any case."""
    tensor = convert_to_tensor(tensor)
    flat = _static_ints(paddings, "pad", "paddings")  # the op checks there is a pair per dim
    value = _fill_value(constant_values, tensor.dtype, "pad", "constant_values")
    return apply_op1("Pad", [tensor], {"paddings": flat, "mode": str(mode).upper(),
                                       "constant_value": float(value)}, name=name)


def tile(input: TensorLike, multiples: Sequence[int], name: str | None = None) -> TensorLike:
    """Repeat `input` ``multiples[i]`` times along each dimension i."""
    return apply_op1("Tile", [convert_to_tensor(input)],
                     {"multiples": _static_ints(multiples, "tile", "multiples")}, name=name)


def broadcast_to(input: TensorLike, shape: Sequence[int], name: str | None = None) -> TensorLike:
    """Broadcast `input` to the static `shape` with NumPy's rules."""
    return apply_op1("BroadcastTo", [convert_to_tensor(input)],
                     {"shape": _static_ints(shape, "broadcast_to", "shape")}, name=name)


def gather(params: TensorLike, indices: TensorLike, axis: int | None = None, batch_dims: int = 0,
           name: str | None = None) -> TensorLike:
    """Slices of `params` along `axis` (default 0) at integer `indices`: the result has shape
    ``params.shape[:axis] + indices.shape + params.shape[axis+1:]``. An index outside
    ``[0, params.shape[axis])`` raises InvalidArgumentError when the graph runs. With
    ``batch_dims = b`` (negative counts from ``indices.ndim``) the first b dims of
    `params` and `indices` are batch dims (equal sizes) and each batch's indices gather
    from that batch's params: the result has shape ``params.shape[:axis] +
    indices.shape[b:] + params.shape[axis+1:]`` (``axis >= b``; `axis` defaults to b)."""
    batch_dims = _scalar(batch_dims, "gather", "batch_dims")
    axis = None if axis is None else _scalar(axis, "gather", "axis")
    if batch_dims != 0:
        return _batch_gather(convert_to_tensor(params), convert_to_tensor(indices), axis,
                             batch_dims, name)
    axis = 0 if axis is None else axis
    return apply_op1("Gather", [convert_to_tensor(params), convert_to_tensor(indices)],
                     {"axis": axis, "batch_dims": batch_dims}, name=name)


def _batch_gather(params: Any, indices: Any, axis: int | None, batch_dims: int,
                  name: str | None) -> Any:
    """`gather` with ``batch_dims > 0``: a GatherNd of one coordinate per index over the
    batch dims (TensorFlow's definition), with `axis` moved next to them and back."""
    b = batch_dims + indices.ndim if batch_dims < 0 else batch_dims
    if not 0 <= b <= indices.ndim or b > params.ndim - 1:
        raise _usage_error("gather", f"batch_dims must be in [-{indices.ndim}, "
                                     f"{min(indices.ndim, params.ndim - 1)}] for indices of "
                                     f"rank {indices.ndim} and params of rank {params.ndim}, "
                                     f"got {batch_dims}")
    ax = b if axis is None else (axis + params.ndim if axis < 0 else axis)
    if not b <= ax < params.ndim:
        raise _usage_error("gather", f"axis must be >= batch_dims ({b}) and < the rank of "
                                     f"params ({params.ndim}), got {axis}")
    for d, (p, i) in enumerate(zip(params.shape[:b], indices.shape[:b])):
        if p is not None and i is not None and p != i:
            raise _usage_error("gather", f"batch dim {d} of params ({p}) and of indices ({i}) "
                                         f"differ (shapes {list(params.shape)} and "
                                         f"{list(indices.shape)}, batch_dims={b})")
    if b == indices.ndim:  # one index per batch: gather a dim of 1, then drop it
        return squeeze(_batch_gather(params, expand_dims(indices, -1), ax, b, None), [ax],
                       name=name)
    span = _builtin_range
    moved = [*span(b), ax, *span(b, ax), *span(ax + 1, params.ndim)]
    front = params if ax == b else transpose(params, moved)
    out = apply_op1("GatherNd", [front, expand_dims(indices, -1)], {"batch_dims": b})
    if ax == b:
        return identity(out, name=name)
    k = indices.ndim - b
    back = [*span(b), *span(b + k, k + ax), *span(b, b + k), *span(k + ax, out.ndim)]
    return transpose(out, back, name=name)


def unsorted_segment_sum(data: TensorLike, segment_ids: TensorLike, num_segments: int,
                         name: str | None = None) -> TensorLike:
    """Sums of the slices of `data` per segment: ``output[s]`` adds every ``data[i...]``
    whose ``segment_ids[i...]`` is ``s``. `segment_ids` (int32/int64) has a prefix of
    `data`'s shape; the result has shape ``[num_segments] + data.shape[ids.ndim:]``, with
    zeros for empty segments. Negative ids are dropped; an id ``>= num_segments`` raises
    InvalidArgumentError when the graph runs. `num_segments` is a static int."""
    return apply_op1("UnsortedSegmentSum", [convert_to_tensor(data), convert_to_tensor(segment_ids)],
                     {"num_segments": _scalar(num_segments, "unsorted_segment_sum",
                                              "num_segments")}, name=name)


def dynamic_partition(data: TensorLike, partitions: TensorLike, num_partitions: int,
                      name: str | None = None) -> list[TensorLike]:
    """Split `data` into `num_partitions` tensors by `partitions` (int32, a prefix of
    `data`'s shape): output ``i`` holds, in row-major order, the slices ``data[j...]``
    whose ``partitions[j...] == i``. An entry outside ``[0, num_partitions)`` raises
    InvalidArgumentError when the graph runs. `num_partitions` is a static int."""
    n = _scalar(num_partitions, "dynamic_partition", "num_partitions")
    if n < 1:
        raise _usage_error("DynamicPartition", f"num_partitions must be >= 1, got {n}")
    return apply_op("DynamicPartition", [convert_to_tensor(data), convert_to_tensor(partitions)],
                    {"num_partitions": n}, name=name)


def dynamic_stitch(indices: Sequence[TensorLike], data: Sequence[TensorLike],
                   name: str | None = None) -> TensorLike:
    """Interleave the tensors of `data` into one: ``merged[indices[m][i...], ...] =
    data[m][i..., ...]``. The result has ``max(indices) + 1`` rows; where an index repeats,
    the later value wins, and rows no index names are zeros. The inverse of
    `dynamic_partition` when `indices` are the partitioned positions."""
    indices, data = list(indices), list(data)
    if not indices or len(indices) != len(data):
        raise _usage_error("DynamicStitch", f"needs as many index tensors as data tensors "
                                            f"(at least one), got {len(indices)} and {len(data)}")
    return apply_op1("DynamicStitch", [*[convert_to_tensor(i) for i in indices],
                                       *convert_operands(*data)], {"N": len(indices)}, name=name)


def one_hot(indices: TensorLike, depth: int, on_value: Any = None, off_value: Any = None,
            axis: int | None = None, dtype: DType | None = None,
            name: str | None = None) -> TensorLike:
    """One-hot encode integer `indices` with vectors of length `depth` placed at `axis`
    (default: last). `dtype` defaults to the dtype of `on_value`/`off_value` when given,
    else float32; indices outside ``[0, depth)`` give all-`off_value` rows. The on/off
    values are static scalars (stored as floats)."""
    given = [v for v in (on_value, off_value) if v is not None]
    if dtype is None:
        dtype = _python_dtype(given[0]) if given else float32
    dtype = as_dtype(dtype)
    on = 1 if on_value is None else _fill_value(on_value, dtype, "one_hot", "on_value")
    off = 0 if off_value is None else _fill_value(off_value, dtype, "one_hot", "off_value")
    return apply_op1("OneHot", [convert_to_tensor(indices)],
                     {"depth": _scalar(depth, "one_hot", "depth"), "on_value": float(on),
                      "off_value": float(off), "axis": -1 if axis is None else axis,
                      "dtype": as_dtype(dtype)}, name=name)


# ------------------------------------------------------------------------------ creation

def fill(dims: Sequence[int], value: Any, name: str | None = None) -> TensorLike:
    """A tensor of static shape `dims` filled with the scalar `value`; the dtype is
    `value`'s (Python int -> int32, float -> float32). A computed scalar tensor `value`
    is broadcast."""
    shape = _static_ints(dims, "fill", "dims")
    if hasattr(value, "_as_tensor"):  # a variable: its read, so the gradient reaches it
        value = convert_to_tensor(value)
    # an eager tensor may be one a tape watches: broadcast it (differentiable, as
    # TensorFlow's Fill) rather than baking its value into a constant Fill
    if isinstance(value, EagerTensor) or (isinstance(value, Tensor) and
                                          _const_array(value) is None):
        if value.ndim != 0:
            raise _usage_error("Fill", f"value must be a scalar, got {value.type}")
        return apply_op1("BroadcastTo", [value], {"shape": shape}, name=name)
    dtype = _python_dtype(value)
    return apply_op1("Fill", [], {"shape": shape,
                                  "value": float(_fill_value(value, dtype, "fill", "value")),
                                  "dtype": dtype}, name=name)


def _filled(op_like: str, shape: Any, value: int, dtype: Any, name: str | None,
            fn: str) -> TensorLike:
    like = _shape_source(shape)
    if like is not None:
        return apply_op1(op_like, [like], {"dtype": as_dtype(dtype)}, name=name)
    return apply_op1("Fill", [], {"shape": _static_ints(shape, fn, "shape"), "value": value,
                                  "dtype": as_dtype(dtype)}, name=name)


def zeros(shape: Sequence[int], dtype: Any = float32, name: str | None = None) -> TensorLike:
    """Zeros of static `shape` (or of the run-time shape given by ``tw.shape(y)``)."""
    return _filled("ZerosLike", shape, 0, dtype, name, "zeros")


def ones(shape: Sequence[int], dtype: Any = float32, name: str | None = None) -> TensorLike:
    """Ones of static `shape` (or of the run-time shape given by ``tw.shape(y)``)."""
    return _filled("OnesLike", shape, 1, dtype, name, "ones")


def zeros_like(input: TensorLike, dtype: Any = None, name: str | None = None) -> TensorLike:
    """Zeros with the shape of `input` and `dtype` (default: `input`'s dtype)."""
    return apply_op1("ZerosLike", [convert_to_tensor(input)],
                     {"dtype": None if dtype is None else as_dtype(dtype)}, name=name)


def ones_like(input: TensorLike, dtype: Any = None, name: str | None = None) -> TensorLike:
    """Ones with the shape of `input` and `dtype` (default: `input`'s dtype)."""
    return apply_op1("OnesLike", [convert_to_tensor(input)],
                     {"dtype": None if dtype is None else as_dtype(dtype)}, name=name)


def range(start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None,
          name: str | None = None) -> TensorLike:
    """``[start, start + delta, ...)`` up to but excluding `limit`; ``tw.range(n)`` counts
    from 0. The arguments are static scalars; `dtype` defaults to float32 when any of them
    is a float, else int32 (TensorFlow's rule; int64 when a Python int bound does not fit
    int32, as TensorFlow converts such an int). The bounds are stored as float64
    attributes: integer bounds must be values of the dtype within +-2**53 (an error
    otherwise, never a wrapped or rounded range)."""
    if limit is None:
        start, limit = 0, start
    names = ("start", "limit", "delta")
    args = [_scalar(v, "range", a) for v, a in zip((start, limit, delta), names)]
    if dtype is None:
        kinds = [_python_dtype(v) for v in (start, limit, delta)]
        floats = [k for k in kinds if k.is_floating]
        dtype = floats[0] if floats else max(kinds, key=lambda k: k.bits)
        if dtype == int32 and any(type(a) is int and not -2**31 <= a < 2**31 for a in args):
            dtype = int64
    dtype = as_dtype(dtype)
    if dtype.is_integer:
        # TensorFlow casts the bounds to the dtype; one that does not fit is an error
        args = [_fill_value(int(a), dtype, "range", n) for a, n in zip(args, names)]
    start, limit, delta = (float(a) for a in args)
    return apply_op1("Range", [], {"start": start, "limit": limit, "delta": delta,
                                   "dtype": dtype}, name=name)


# ---------------------------------------------------------------------- shape queries

def shape(input: TensorLike, out_type: Any = int32, name: str | None = None) -> TensorLike:
    """The run-time shape of `input` as a 1-D tensor of `out_type` (int32 or int64)."""
    return apply_op1("Shape", [convert_to_tensor(input)], {"out_type": as_dtype(out_type)},
                     name=name)


def size(input: TensorLike, out_type: Any = int32, name: str | None = None) -> TensorLike:
    """The run-time number of elements of `input` as a scalar of `out_type`."""
    return apply_op1("Size", [convert_to_tensor(input)], {"out_type": as_dtype(out_type)},
                     name=name)


def rank(input: TensorLike, name: str | None = None) -> TensorLike:
    """The number of dimensions of `input`: a constant int32 scalar when the rank is
    known while the graph is built, else (a v1 placeholder without a shape) the size of
    its run-time shape."""
    t = convert_to_tensor(input)
    if t.shape.rank is None:
        return size(shape(t), name=name or "Rank")
    return constant(np.int32(t.ndim), name=name)


def identity(input: TensorLike, name: str | None = None) -> TensorLike:
    """A tensor with the same value as `input`."""
    return apply_op1("Identity", [convert_to_tensor(input)], name=name)


__all__ = ["newaxis", "reshape", "transpose", "expand_dims", "squeeze", "concat", "stack",
           "unstack", "split", "slice", "strided_slice", "pad", "tile", "broadcast_to", "gather",
           "unsorted_segment_sum", "one_hot", "fill", "zeros", "ones", "zeros_like", "ones_like",
           "range", "shape", "size", "rank", "identity", "dynamic_partition", "dynamic_stitch"]
