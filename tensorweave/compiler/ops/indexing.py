"""Ops that move elements by index or by value: sorting (ArgSort, TakeAlongAxis), n-d
gathers and scatters (GatherNd, ScatterNd, TensorScatter*), BooleanMask, Roll,
SequenceMask, SearchSorted, Where (the coordinates of true elements) and the segment
reductions UnsortedSegmentMax/Min/Prod, with TensorFlow's semantics.

Indices are int32 or int64. An index out of range is an InvalidArgumentError naming the
bad index (as on TensorFlow's CPU): no kernel reads or writes out of bounds, and none
wraps negative indices around. Dims unknown at trace time stay ``None`` in inference and
are checked by the kernels on the run-time shapes (`_runtime_types`). Three outputs
depend on the data, not only on the input shapes: BooleanMask's masked dim, Where's
number of true elements and SequenceMask's length when no maxlen is given; graphs that
use them run on the dataflow executor.

TakeAlongAxisGrad, BooleanMaskGrad and the ``batch_dims`` attribute of the TensorScatter
ops exist for gradients: each is the linear adjoint of its forward op.
"""

from __future__ import annotations

from collections.abc import Sequence

import ml_dtypes
import numpy as np

from ...errors import DTypeError, InvalidArgumentError, ShapeError
from ..dtypes import NUMERIC_DTYPES, as_dtype, bool_, int32, int64
from ..registry import attr, def_op, not_differentiable
from ..types import TensorType, format_shape
from .array import _accumulator, _axis, _merge_dims, _owned, _runtime_types
from .array import _unsorted_segment_sum_infer as _segment_infer
from .common import check_dtype, expect_tensor, same_dtype

Dim = int | None

_INDEX_DTYPES = (int32, int64)


def _numeric(t: TensorType, role: str) -> None:
    check_dtype(t, NUMERIC_DTYPES, role, "a numeric dtype (integer or floating point)")


def _merged(a: Sequence[Dim], b: Sequence[Dim]) -> tuple[Dim, ...]:
    """Dims of two shapes of equal length that must agree (ValueError when they cannot)."""
    if len(a) != len(b):
        raise ValueError
    return tuple(_merge_dims(x, y) for x, y in zip(a, b))


def _where(bad: np.ndarray) -> tuple[int, ...]:
    """The position of the first True of `bad` (row-major)."""
    return tuple(int(k) for k in np.argwhere(bad)[0])


def _fmt(pos: tuple[int, ...]) -> str:
    return ",".join(map(str, pos))


# --------------------------------------------------------------------------- sorting

ArgSort = def_op(
    "ArgSort", ["values"], {"axis": attr("int", -1), "descending": attr("bool", False)},
    doc="The int32 indices that sort `values` along `axis`, ascending or descending; equal "
        "values keep their index order (a stable sort, either direction).")


@ArgSort.infer
def _argsort_infer(values, *, axis, descending):
    t = expect_tensor(values, "values")
    _numeric(t, "values")
    if t.rank == 0:
        raise ShapeError(f"values must have rank >= 1 to be sorted, got {t}")
    _axis(axis, t.rank)
    return TensorType(int32, t.shape)


def sortable(x: np.ndarray) -> np.ndarray:
    """`x` in a dtype whose NumPy sorts and searches put NaN above every number: float32
    for the half-precision floats (exact, same order). NumPy compares ml_dtypes'
    bfloat16 with a plain `<`, so a NaN there scrambled the numbers around it."""
    if as_dtype(x.dtype).is_floating and x.dtype.itemsize < 4:
        return x.astype(np.float32)
    return x


def stable_argsort(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable argsort along `axis` in either direction (int32); NaN sorts above every
    number."""
    x = sortable(x)
    if not descending:
        return np.argsort(x, axis=axis, kind="stable").astype(np.int32)
    n = x.shape[axis]
    # a stable ascending sort of the reversed axis, read backwards, is descending with
    # ties in index order, for integers too (no negation to overflow)
    rev = np.flip(x, axis)
    order = np.flip(np.argsort(rev, axis=axis, kind="stable"), axis)
    return (n - 1 - order).astype(np.int32)


@ArgSort.kernel("reference")
def _argsort_kernel(x, *, axis, descending):
    return np.ascontiguousarray(stable_argsort(x, axis % x.ndim, descending))


TakeAlongAxis = def_op(
    "TakeAlongAxis", ["x", "indices"], {"axis": attr("int")},
    doc="output[..., i, ...] = x[..., indices[..., i, ...], ...] along `axis` "
        "(``np.take_along_axis``): `indices` has x's rank and x's dims except along "
        "`axis`. Sorting gathers the values of ArgSort's indices this way.")


@TakeAlongAxis.infer
def _take_along_axis_infer(x, indices, *, axis):
    t = expect_tensor(x, "x")
    i = expect_tensor(indices, "indices")
    check_dtype(i, _INDEX_DTYPES, "indices")
    ax = _axis(axis, t.rank)
    try:
        shape = list(_merged(t.shape[:ax] + t.shape[ax + 1:], i.shape[:ax] + i.shape[ax + 1:]))
    except ValueError:
        raise ShapeError(f"indices ({i}) must have the rank of x ({t}) and its dims except "
                         f"along axis {ax}") from None
    shape.insert(ax, i.shape[ax])
    return TensorType(t.dtype, shape)


def _along_axis_index(indices: np.ndarray, n: int, axis: int) -> tuple[np.ndarray, ...]:
    """The full index tuple of `indices` taken along `axis` (checked against `n`)."""
    bad = (indices < 0) | (indices >= n)
    if bad.any():
        pos = _where(bad)
        raise InvalidArgumentError(f"indices[{_fmt(pos)}] = {indices[pos]} is not in "
                                   f"[0, {n}) (dimension {axis} of x)")
    grid = list(np.indices(indices.shape, sparse=True))
    grid[axis] = indices.astype(np.intp)
    return tuple(grid)


@TakeAlongAxis.kernel("reference")
def _take_along_axis_kernel(x, indices, *, axis):
    (t,) = _runtime_types(_take_along_axis_infer, x, indices, axis=axis)
    ax = axis % x.ndim
    return _owned(x[_along_axis_index(indices, x.shape[ax], ax)].reshape(t.shape))


TakeAlongAxisGrad = def_op(
    "TakeAlongAxisGrad", ["grad", "indices", "like"], {"axis": attr("int")},
    doc="The gradient of TakeAlongAxis: `grad` (shaped like `indices`) added into zeros of "
        "`like`'s shape at the positions the indices read; repeated indices add up.")


@TakeAlongAxisGrad.infer
def _take_along_axis_grad_infer(grad, indices, like, *, axis):
    g = expect_tensor(grad, "grad")
    lk = expect_tensor(like, "like")
    out = _take_along_axis_infer(like, indices, axis=axis)
    try:
        _merged(out.shape, g.shape)
    except ValueError:
        raise ShapeError(f"grad ({g}) must have the shape of indices ({indices})") from None
    return TensorType(g.dtype, lk.shape)


@TakeAlongAxisGrad.kernel("reference")
def _take_along_axis_grad_kernel(grad, indices, like, *, axis):
    _runtime_types(_take_along_axis_grad_infer, grad, indices, like, axis=axis)
    ax = axis % like.ndim
    wide = _accumulator(grad.dtype)
    out = np.zeros(like.shape, wide)
    np.add.at(out, _along_axis_index(indices, like.shape[ax], ax), grad.astype(wide))
    return out.astype(grad.dtype)


# ---------------------------------------------------------------- n-d gather/scatter

def _nd_layout(p: TensorType, i: TensorType, batch_dims: int, p_role: str
               ) -> tuple[int, tuple[Dim, ...], tuple[Dim, ...]]:
    """Check `indices` against a tensor `p` indexed by its last dim after `batch_dims`
    shared batch dims: (index depth, the batch dims, the dims one index selects)."""
    check_dtype(i, _INDEX_DTYPES, "indices")
    if batch_dims < 0:
        raise ShapeError(f"batch_dims must be >= 0, got {batch_dims}")
    if i.rank < batch_dims + 1:
        raise ShapeError(f"indices ({i}) must have rank >= batch_dims + 1 = {batch_dims + 1}: "
                         f"its last dim holds the coordinates")
    depth = i.shape[-1]
    if depth is None:
        raise ShapeError(f"the last dim of indices ({i}) (the number of coordinates per "
                         f"index) must be known when the graph is built")
    if p.rank < batch_dims + depth:
        raise ShapeError(f"indices ({i}) has {depth} coordinates per index, but {p_role} "
                         f"({p}) has only {p.rank - batch_dims} dims after batch_dims="
                         f"{batch_dims}")
    try:
        batch = _merged(p.shape[:batch_dims], i.shape[:batch_dims])
    except ValueError:
        raise ShapeError(f"the first batch_dims={batch_dims} dims of {p_role} ({p}) and "
                         f"indices ({i}) must be equal") from None
    return depth, batch, p.shape[batch_dims + depth:]


def _flat_positions(shape: Sequence[int], indices: np.ndarray, batch_dims: int,
                    role: str) -> np.ndarray:
    """For each index (a row of `indices`' last dim), its flat position among the
    ``prod(shape[:batch_dims + depth])`` slices of a tensor of `shape`; batch b's
    indices address batch b's slices. Out-of-range coordinates raise."""
    depth = indices.shape[-1]
    batch = tuple(shape[:batch_dims])
    dims = np.asarray(shape[batch_dims:batch_dims + depth], dtype=np.int64)
    idx = indices.astype(np.int64)
    bad = ((idx < 0) | (idx >= dims)).any(axis=-1)
    if bad.any():
        pos = _where(bad)
        raise InvalidArgumentError(
            f"indices[{_fmt(pos)}] = {idx[pos].tolist()} does not index into {role} shape "
            f"{format_shape(shape)}" + (f" (after batch_dims={batch_dims})" if batch_dims else ""))
    # row-major flat index within one batch, then offset by the batch's block
    strides = np.array([np.prod(dims[k + 1:], dtype=np.int64) for k in range(depth)],
                       dtype=np.int64)
    flat = (idx * strides).sum(axis=-1)
    block = int(np.prod(dims, dtype=np.int64))
    b = np.arange(int(np.prod(batch, dtype=np.int64)), dtype=np.int64).reshape(batch)
    b = b.reshape(batch + (1,) * (idx.ndim - 1 - batch_dims))
    return (flat + b * block).reshape(-1)


GatherNd = def_op(
    "GatherNd", ["params", "indices"], {"batch_dims": attr("int", 0)},
    doc="Slices of `params` at the coordinates in the last dim of `indices`: the output has "
        "shape indices.shape[:-1] + params.shape[batch_dims + depth:] (tf.gather_nd); the "
        "first batch_dims dims of both are shared batch dims.")


@GatherNd.infer
def _gather_nd_infer(params, indices, *, batch_dims):
    p = expect_tensor(params, "params")
    i = expect_tensor(indices, "indices")
    depth, batch, rest = _nd_layout(p, i, batch_dims, "params")
    return p.with_shape(batch + i.shape[batch_dims:-1] + rest)


def _slices(x: np.ndarray, batch_dims: int, depth: int) -> np.ndarray:
    """`x` viewed as a list of the slices an index selects."""
    lead = int(np.prod(x.shape[:batch_dims + depth], dtype=np.int64))
    return x.reshape((lead,) + x.shape[batch_dims + depth:])


@GatherNd.kernel("reference")
def _gather_nd_kernel(params, indices, *, batch_dims):
    (t,) = _runtime_types(_gather_nd_infer, params, indices, batch_dims=batch_dims)
    flat = _flat_positions(params.shape, indices, batch_dims, "param")
    rows = _slices(params, batch_dims, indices.shape[-1])
    return np.ascontiguousarray(rows[flat]).reshape(t.shape)


def _check_updates(u: TensorType, expected: Sequence[Dim], i: TensorType, what: str) -> None:
    try:
        _merged(u.shape, expected)
    except ValueError:
        raise ShapeError(f"updates ({u}) must have shape {format_shape(expected)}: "
                         f"indices.shape[:-1] ({i}) + {what}") from None


ScatterNd = def_op(
    "ScatterNd", ["indices", "updates"], {"shape": attr("ints")},
    doc="Zeros of `shape` with updates[i...] added at the coordinates indices[i...] "
        "(tf.scatter_nd; repeated indices add up); updates has shape "
        "indices.shape[:-1] + shape[depth:].")


@ScatterNd.infer
def _scatter_nd_infer(indices, updates, *, shape):
    i = expect_tensor(indices, "indices")
    u = expect_tensor(updates, "updates")
    _numeric(u, "updates")
    if any(d < 0 for d in shape):
        raise ShapeError(f"shape must be >= 0 in every dim, got {list(shape)}")
    out = TensorType(u.dtype, shape)
    _, _, rest = _nd_layout(out, i, 0, "shape")
    _check_updates(u, i.shape[:-1] + rest, i, f"shape[{i.shape[-1]}:]")
    return out


def _scatter_into(out: np.ndarray, indices: np.ndarray, updates: np.ndarray,
                  batch_dims: int, mode: str) -> np.ndarray:
    """Apply `updates` to a copy of `out` at `indices` with `mode`'s rule."""
    depth = indices.shape[-1]
    flat = _flat_positions(out.shape, indices, batch_dims, "tensor")
    rows = _slices(out, batch_dims, depth)
    upd = updates.reshape((flat.size,) + rows.shape[1:])
    if mode == "update":
        # the last of repeated indices wins (NumPy's fancy assignment promises no order)
        uniq, first_from_end = np.unique(flat[::-1], return_index=True)
        rows = rows.copy()
        rows[uniq] = upd[flat.size - 1 - first_from_end]
        return rows.reshape(out.shape)
    wide = _accumulator(out.dtype)
    rows = rows.astype(wide)  # a copy
    ufunc = {"add": np.add, "sub": np.subtract, "max": np.maximum, "min": np.minimum}[mode]
    ufunc.at(rows, flat, upd.astype(wide))
    return rows.astype(out.dtype).reshape(out.shape)


@ScatterNd.kernel("reference")
def _scatter_nd_kernel(indices, updates, *, shape):
    (t,) = _runtime_types(_scatter_nd_infer, indices, updates, shape=shape)
    return _scatter_into(np.zeros(t.shape, updates.dtype), indices, updates, 0, "add")


_TENSOR_SCATTER_DOC = {
    "update": "replaced by (where indices repeat, the last update wins)",
    "add": "plus (repeated indices add up)",
    "sub": "minus (repeated indices subtract each)",
    "max": "the maximum of it and",
    "min": "the minimum of it and",
}


def _def_tensor_scatter(name: str, mode: str):
    op = def_op(
        name, ["tensor", "indices", "updates"], {"batch_dims": attr("int", 0)},
        doc=f"A copy of `tensor` with the slices at the coordinates indices[i...] "
            f"{_TENSOR_SCATTER_DOC[mode]} updates[i...] (tf.tensor_scatter_nd_{mode}); "
            f"updates has shape indices.shape[:-1] + tensor.shape[batch_dims + depth:]. "
            f"batch_dims > 0 (shared batch dims, as GatherNd's) serves gradients.")

    @op.infer
    def _infer(tensor, indices, updates, *, batch_dims):
        t = expect_tensor(tensor, "tensor")
        i = expect_tensor(indices, "indices")
        u = expect_tensor(updates, "updates")
        if mode != "update":
            _numeric(t, "tensor")
        same_dtype([t, u], ["tensor", "updates"])
        _, batch, rest = _nd_layout(t, i, batch_dims, "tensor")
        _check_updates(u, batch + i.shape[batch_dims:-1] + rest, i,
                       f"tensor.shape[{batch_dims + i.shape[-1]}:]")
        return t

    @op.kernel("reference")
    def _kernel(tensor, indices, updates, *, batch_dims):
        _runtime_types(_infer, tensor, indices, updates, batch_dims=batch_dims)
        return np.ascontiguousarray(_scatter_into(tensor, indices, updates, batch_dims, mode))

    return op


TensorScatterUpdate = _def_tensor_scatter("TensorScatterUpdate", "update")
TensorScatterAdd = _def_tensor_scatter("TensorScatterAdd", "add")
TensorScatterSub = _def_tensor_scatter("TensorScatterSub", "sub")
TensorScatterMax = _def_tensor_scatter("TensorScatterMax", "max")
TensorScatterMin = _def_tensor_scatter("TensorScatterMin", "min")


# ---------------------------------------------------------------------- BooleanMask

BooleanMask = def_op(
    "BooleanMask", ["tensor", "mask"], {"axis": attr("int", 0)},
    doc="The slices of `tensor` where the bool `mask` is true (tf.boolean_mask): mask's "
        "shape equals tensor.shape[axis:axis + mask.ndim], and those dims become one, of "
        "the number of true entries (known only at run time), in row-major order.")


def _mask_layout(t: TensorType, m: TensorType, axis: int, role: str) -> int:
    check_dtype(m, (bool_,), "mask")
    if m.rank == 0:
        raise ShapeError("mask must have rank >= 1, got a scalar mask")
    if not 0 <= axis <= t.rank - m.rank:
        raise ShapeError(f"axis {axis} is out of range: mask ({m}) must cover dims axis to "
                         f"axis + {m.rank - 1} of {role} ({t}), so 0 <= axis <= "
                         f"{t.rank - m.rank}")
    try:
        _merged(t.shape[axis:axis + m.rank], m.shape)
    except ValueError:
        raise ShapeError(f"mask ({m}) must have the shape of dims {axis} to "
                         f"{axis + m.rank - 1} of {role} ({t})") from None
    return axis


@BooleanMask.infer
def _boolean_mask_infer(tensor, mask, *, axis):
    t = expect_tensor(tensor, "tensor")
    m = expect_tensor(mask, "mask")
    _mask_layout(t, m, axis, "tensor")
    # no element selected when the mask is empty; otherwise a count known at run time
    n: Dim = 0 if 0 in m.shape else None
    return t.with_shape(t.shape[:axis] + (n,) + t.shape[axis + m.rank:])


def _mask_index(axis: int, mask: np.ndarray) -> tuple:
    return (slice(None),) * axis + (mask.reshape(-1),)


def _flatten_mask_dims(x: np.ndarray, axis: int, k: int) -> np.ndarray:
    return x.reshape(x.shape[:axis] + (int(np.prod(x.shape[axis:axis + k], dtype=np.int64)),)
                     + x.shape[axis + k:])


@BooleanMask.kernel("reference")
def _boolean_mask_kernel(tensor, mask, *, axis):
    _runtime_types(_boolean_mask_infer, tensor, mask, axis=axis)
    flat = _flatten_mask_dims(tensor, axis, mask.ndim)
    return np.ascontiguousarray(flat[_mask_index(axis, mask)])


BooleanMaskGrad = def_op(
    "BooleanMaskGrad", ["grad", "mask"], {"axis": attr("int", 0)},
    doc="The gradient of BooleanMask: `grad` (shaped like BooleanMask's output) put back at "
        "the positions where `mask` is true, zeros elsewhere.")


@BooleanMaskGrad.infer
def _boolean_mask_grad_infer(grad, mask, *, axis):
    g = expect_tensor(grad, "grad")
    m = expect_tensor(mask, "mask")
    check_dtype(m, (bool_,), "mask")
    if m.rank == 0 or not 0 <= axis < g.rank:
        raise ShapeError(f"grad ({g}) and mask ({m}) are not the output and mask of a "
                         f"BooleanMask along axis {axis}")
    return g.with_shape(g.shape[:axis] + m.shape + g.shape[axis + 1:])


@BooleanMaskGrad.kernel("reference")
def _boolean_mask_grad_kernel(grad, mask, *, axis):
    (t,) = _runtime_types(_boolean_mask_grad_infer, grad, mask, axis=axis)
    count = int(mask.sum())
    if grad.shape[axis] != count:
        raise InvalidArgumentError(f"grad has {grad.shape[axis]} entries along axis {axis} "
                                   f"but mask has {count} true entries")
    out = np.zeros(t.shape, grad.dtype)
    _flatten_mask_dims(out, axis, mask.ndim)[_mask_index(axis, mask)] = grad
    return out


# ---------------------------------------------------------------------------- Where

Where = def_op(
    "Where", ["condition"],
    doc="The coordinates of the true (nonzero) elements of `condition` (tf.where with one "
        "argument, np.argwhere): int64 of shape [num_true, rank], in row-major order; "
        "num_true is known only at run time.")
# its output is integer coordinates: nothing flows back through it (as in TensorFlow)
not_differentiable("Where")


@Where.infer
def _where_infer(condition):
    # every dtype is bool or numeric: nonzero counts as true
    c = expect_tensor(condition, "condition")
    # none true when the condition is empty; otherwise a count known at run time
    n: Dim = 0 if 0 in c.shape else None
    return TensorType(int64, (n, c.rank))


@Where.kernel("reference")
def _where_kernel(condition):
    _runtime_types(_where_infer, condition)
    # np.argwhere counts NaN as true, as TensorFlow's nonzero test does
    return np.ascontiguousarray(np.argwhere(condition).astype(np.int64, copy=False))


# ----------------------------------------------------------------------------- Roll

Roll = def_op(
    "Roll", ["input"], {"shift": attr("ints"), "axis": attr("ints")},
    doc="Rotate `input` by shift[k] along axis[k] for each k (tf.roll): element i moves to "
        "(i + shift) mod n; shifts of a repeated axis add up.")


@Roll.infer
def _roll_infer(x, *, shift, axis):
    t = expect_tensor(x, "input")
    if len(shift) != len(axis):
        raise ShapeError(f"shift and axis must have the same length, got shift={list(shift)} "
                         f"and axis={list(axis)}")
    for a in axis:
        _axis(a, t.rank)
    return t


@Roll.kernel("reference")
def _roll_kernel(x, *, shift, axis):
    # np.roll adds the shifts of a repeated axis, as TensorFlow does
    return _owned(np.roll(x, shift, axis)) if shift else _owned(x)


# --------------------------------------------------------------------- SequenceMask

SequenceMask = def_op(
    "SequenceMask", ["lengths"], {"maxlen": attr("int", -1), "dtype": attr("dtype", bool_)},
    doc="mask[i..., j] = j < lengths[i...] for j in [0, maxlen) (tf.sequence_mask); with "
        "maxlen = -1 the length is max(lengths), known only at run time.")


@SequenceMask.infer
def _sequence_mask_infer(lengths, *, maxlen, dtype):
    t = expect_tensor(lengths, "lengths")
    check_dtype(t, _INDEX_DTYPES, "lengths")
    if maxlen < -1:
        raise ShapeError(f"maxlen must be >= 0, got {maxlen}")
    return TensorType(dtype, t.shape + (None if maxlen == -1 else maxlen,))


@SequenceMask.kernel("reference")
def _sequence_mask_kernel(lengths, *, maxlen, dtype):
    n = maxlen if maxlen >= 0 else max(int(lengths.max(initial=0)), 0)
    return (np.arange(n) < lengths[..., None]).astype(dtype.np)


# --------------------------------------------------------------------- SearchSorted

SearchSorted = def_op(
    "SearchSorted", ["sorted_sequence", "values"],
    {"side": attr("str", "left"), "out_type": attr("dtype", int32)},
    doc="For each of `values`' innermost entries, the index where it would be inserted in "
        "the matching innermost row of `sorted_sequence` (tf.searchsorted): side 'left' "
        "gives the first such index, 'right' the last. Leading dims are batch dims.")


@SearchSorted.infer
def _searchsorted_infer(sorted_sequence, values, *, side, out_type):
    s = expect_tensor(sorted_sequence, "sorted_sequence")
    v = expect_tensor(values, "values")
    if side not in ("left", "right"):
        raise ShapeError(f"side must be 'left' or 'right', got {side!r}")
    if out_type not in _INDEX_DTYPES:
        raise DTypeError(f"out_type must be i32 or i64, got {out_type.ir_name}")
    _numeric(s, "sorted_sequence")
    same_dtype([s, v], ["sorted_sequence", "values"])
    if s.rank == 0 or v.rank != s.rank:
        raise ShapeError(f"sorted_sequence ({s}) and values ({v}) must have the same rank "
                         f">= 1")
    try:
        _merged(s.shape[:-1], v.shape[:-1])
    except ValueError:
        raise ShapeError(f"sorted_sequence ({s}) and values ({v}) must have the same leading "
                         f"(batch) dims") from None
    return TensorType(out_type, v.shape)


@SearchSorted.kernel("reference")
def _searchsorted_kernel(seq, values, *, side, out_type):
    (t,) = _runtime_types(_searchsorted_infer, seq, values, side=side, out_type=out_type)
    batch = int(np.prod(seq.shape[:-1], dtype=np.int64))
    rows = sortable(seq).reshape(batch, seq.shape[-1])
    vals = sortable(values).reshape(batch, values.shape[-1])
    out = np.empty(vals.shape, out_type.np)
    for r in range(rows.shape[0]):
        out[r] = np.searchsorted(rows[r], vals[r], side=side)
    return out.reshape(t.shape)


# ------------------------------------------------------------ segment reductions

def _info(dtype: np.dtype):
    # ml_dtypes.finfo knows bfloat16 as well as NumPy's float types
    return ml_dtypes.finfo(dtype) if as_dtype(dtype).is_floating else np.iinfo(dtype)


def _lowest(dtype: np.dtype) -> object:
    return _info(dtype).min


def _highest(dtype: np.dtype) -> object:
    return _info(dtype).max


_SEGMENT_RULES = {
    # reduction ufunc, the value of an empty segment (TensorFlow's: the dtype's lowest or
    # highest finite value, not -inf/inf), and what the doc says
    "UnsortedSegmentMax": (np.maximum, _lowest, "maximum", "the lowest finite value"),
    "UnsortedSegmentMin": (np.minimum, _highest, "minimum", "the highest finite value"),
    "UnsortedSegmentProd": (np.multiply, lambda d: 1, "product", "1"),
}


def _def_segment(name: str):
    ufunc, empty, what, empty_doc = _SEGMENT_RULES[name]
    op = def_op(
        name, ["data", "segment_ids"], {"num_segments": attr("int")},
        doc=f"output[s] = {what} of data[i...] over the i with segment_ids[i...] == s, for s "
            f"in [0, num_segments); {empty_doc} for an empty segment; segment_ids' shape is "
            f"a prefix of data's; negative ids are dropped (TensorFlow's rule).")
    op.infer(_segment_infer)

    @op.kernel("reference")
    def _kernel(data, segment_ids, *, num_segments):
        (t,) = _runtime_types(_segment_infer, data, segment_ids, num_segments=num_segments)
        too_big = segment_ids >= num_segments
        if too_big.any():
            pos = _where(too_big)
            raise InvalidArgumentError(f"segment_ids[{_fmt(pos)}] = {segment_ids[pos]} is not "
                                       f"< num_segments = {num_segments}")
        wide = _accumulator(data.dtype)
        out = np.full(t.shape, np.asarray(empty(data.dtype)).astype(wide), dtype=wide)
        keep = segment_ids >= 0
        ufunc.at(out, segment_ids[keep], data[keep].astype(wide))
        return out.astype(data.dtype)

    return op


UnsortedSegmentMax = _def_segment("UnsortedSegmentMax")
UnsortedSegmentMin = _def_segment("UnsortedSegmentMin")
UnsortedSegmentProd = _def_segment("UnsortedSegmentProd")
