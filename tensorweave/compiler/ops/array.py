"""Array ops: shape manipulation (reshape, transpose, slicing, concatenation, padding,
gathering ...) and tensor creation (fill, range, one-hot, shape queries).

Every static argument (shapes, axes, permutations, slice bounds) is an attribute, so type
inference can compute the output shape whenever the input dims are known and leaves a
dim ``None`` only where it really depends on a run-time size. Kernels re-run the same
inference on the concrete input shapes (`_runtime_types`), which both checks the dims that
were unknown at trace time and guarantees that a kernel returns exactly the declared shape.

The gradients of these ops need a few more: UnsortedSegmentSum (Gather's gradient, also
public as ``tw.unsorted_segment_sum``), StridedSliceGrad, PadGrad and SplitLike (Concat's
gradient when several sizes are unknown until run time).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...errors import InvalidArgumentError, ShapeError, UnimplementedError
from ..dtypes import INT_DTYPES, NUMERIC_DTYPES, DType, as_dtype, int32, int64
from ..registry import attr, def_op
from ..types import TensorType, format_shape
from .common import check_dtype, expect_tensor, same_dtype

Dim = int | None


# ------------------------------------------------------------------------------ helpers

def _axis(axis: int, rank: int, role: str = "axis") -> int:
    """Map `axis` into ``range(rank)``; unlike `normalize_axis`, a scalar has no axis."""
    if not -rank <= axis < rank:
        raise ShapeError(f"{role} {axis} is out of range for a tensor of rank {rank}"
                         f" (valid: {-rank} to {rank - 1})" if rank else
                         f"{role} {axis} is out of range: the tensor is a scalar (rank 0)")
    return axis % rank


def _known_size(shape: Sequence[Dim]) -> int | None:
    """Number of elements: 0 as soon as one dim is 0, None when a dim is unknown."""
    if 0 in shape:
        return 0
    if None in shape:
        return None
    return int(np.prod(shape, dtype=np.int64))


def _merge_dims(a: Dim, b: Dim) -> Dim:
    """The dim two compatible dims must both be (ValueError when they cannot be equal)."""
    if a is None:
        return b
    if b is not None and a != b:
        raise ValueError
    return a


def _concrete(x: np.ndarray) -> TensorType:
    return TensorType(as_dtype(x.dtype), x.shape)


def _runtime_types(infer, *arrays: np.ndarray, **attrs) -> list[TensorType]:
    """Run inference `infer` on the actual shapes of `arrays`: dims that were unknown at
    trace time are checked now, and a shape problem becomes a run-time InvalidArgumentError."""
    try:
        result = infer(*[_concrete(a) for a in arrays], **attrs)
    except ShapeError as e:
        raise InvalidArgumentError(e.message) from None
    return [result] if isinstance(result, TensorType) else list(result)


def _owned(x: np.ndarray) -> np.ndarray:
    """A fresh C-contiguous array: kernels never hand out views of their inputs, so no two
    values of a graph share a buffer."""
    return np.array(x, copy=True, order="C")


def _accumulator(dtype: np.dtype) -> np.dtype:
    """The dtype sums of `dtype` accumulate in: float32 for half-precision floats (NumPy's
    scatter-add does not handle bfloat16, and it loses less precision), else `dtype`."""
    if as_dtype(dtype).is_floating and np.dtype(dtype).itemsize < 4:
        return np.dtype(np.float32)
    return np.dtype(dtype)


def _check_nonnegative(values: Sequence[int], role: str) -> None:
    if any(v < 0 for v in values):
        raise ShapeError(f"{role} must be >= 0, got {list(values)}")


def _check_length(values: Sequence[int], rank: int, role: str, x: TensorType) -> None:
    if len(values) != rank:
        raise ShapeError(f"{role} has {len(values)} entries, expected one per dimension of "
                         f"the input ({x}, rank {rank})")


# ------------------------------------------------------------------------------ Reshape

Reshape = def_op("Reshape", ["tensor"], {"shape": attr("ints")},
                 doc="Reshape to `shape` (row-major order); one entry may be -1, inferred "
                     "from the number of elements.")


def _reshape_target(size: int | None, in_shape: Sequence[Dim], shape: Sequence[int]) -> tuple:
    """The output shape of reshaping a tensor of `size` elements to `shape`."""
    what = f"cannot reshape a tensor of shape {format_shape(in_shape)} into shape {list(shape)}"
    if any(d < -1 for d in shape):
        raise ShapeError(f"{what}: sizes must be >= 0, or -1 for one inferred dimension")
    holes = [i for i, d in enumerate(shape) if d == -1]
    if len(holes) > 1:
        raise ShapeError(f"{what}: only one dimension may be -1")
    known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
    out: list[Dim] = list(shape)
    if not holes:
        if size is not None and size != known:
            raise ShapeError(f"{what}: {size} elements vs {known}")
        partial = _known_size([d for d in in_shape if d is not None])
        if size is None and partial and known % partial:
            raise ShapeError(f"{what}: {known} elements is not a multiple of {partial}")
        return tuple(out)
    if size is None:
        out[holes[0]] = None
    elif known == 0:
        raise ShapeError(f"{what}: the -1 dimension is ambiguous when another dimension is 0")
    elif size % known:
        raise ShapeError(f"{what}: {size} elements is not a multiple of {known}")
    else:
        out[holes[0]] = size // known
    return tuple(out)


@Reshape.infer
def _reshape_infer(tensor, *, shape):
    t = expect_tensor(tensor, "tensor")
    return t.with_shape(_reshape_target(_known_size(t.shape), t.shape, shape))


@Reshape.kernel("reference")
def _reshape_kernel(x, *, shape):
    (t,) = _runtime_types(_reshape_infer, x, shape=shape)
    return _owned(x.reshape(t.shape))


ReshapeLike = def_op("ReshapeLike", ["tensor", "like"],
                     doc="Reshape `tensor` to the run-time shape of `like` (same number of "
                         "elements); the result has `like`'s shape and `tensor`'s dtype.")


@ReshapeLike.infer
def _reshape_like_infer(tensor, like):
    t = expect_tensor(tensor, "tensor")
    lk = expect_tensor(like, "like")
    a, b = _known_size(t.shape), _known_size(lk.shape)
    if a is not None and b is not None and a != b:
        raise ShapeError(f"cannot reshape tensor ({t}, {a} elements) to the shape of like "
                         f"({lk}, {b} elements)")
    return TensorType(t.dtype, lk.shape)


@ReshapeLike.kernel("reference")
def _reshape_like_kernel(x, like):
    _runtime_types(_reshape_like_infer, x, like)
    return _owned(x.reshape(like.shape))


# ---------------------------------------------------------------------------- Transpose

Transpose = def_op("Transpose", ["x"], {"perm": attr("ints")},
                   doc="Permute the axes: output axis i is input axis perm[i].")


@Transpose.infer
def _transpose_infer(x, *, perm):
    t = expect_tensor(x, "x")
    if sorted(perm) != list(range(t.rank)):
        raise ShapeError(f"perm {list(perm)} is not a permutation of the {t.rank} axes of x ({t})")
    return t.with_shape([t.shape[p] for p in perm])


@Transpose.kernel("reference")
def _transpose_kernel(x, *, perm):
    return _owned(np.transpose(x, perm))


# --------------------------------------------------------------------- ExpandDims/Squeeze

ExpandDims = def_op("ExpandDims", ["input"], {"axis": attr("int")},
                    doc="Insert a dimension of size 1 at `axis` (-rank-1 <= axis <= rank).")


@ExpandDims.infer
def _expand_dims_infer(x, *, axis):
    t = expect_tensor(x, "input")
    ax = _axis(axis, t.rank + 1)
    return t.with_shape(t.shape[:ax] + (1,) + t.shape[ax:])


@ExpandDims.kernel("reference")
def _expand_dims_kernel(x, *, axis):
    (t,) = _runtime_types(_expand_dims_infer, x, axis=axis)
    return _owned(x.reshape(t.shape))


Squeeze = def_op("Squeeze", ["input"], {"axes": attr("ints", ())},
                 doc="Remove dimensions of size 1: those in `axes`, or all of them when "
                     "`axes` is empty.")


@Squeeze.infer
def _squeeze_infer(x, *, axes):
    t = expect_tensor(x, "input")
    if not axes:
        if None in t.shape:
            raise ShapeError(f"cannot squeeze input ({t}) without explicit axes: dimension "
                             f"{t.shape.index(None)} is unknown until run time; pass axis=[...]")
        return t.with_shape([d for d in t.shape if d != 1])
    drop = {_axis(a, t.rank) for a in axes}
    for a in sorted(drop):
        if t.shape[a] not in (1, None):
            raise ShapeError(f"cannot squeeze dimension {a} of input ({t}): its size is "
                             f"{t.shape[a]}, not 1")
    return t.with_shape([d for i, d in enumerate(t.shape) if i not in drop])


@Squeeze.kernel("reference")
def _squeeze_kernel(x, *, axes):
    (t,) = _runtime_types(_squeeze_infer, x, axes=axes)
    return _owned(x.reshape(t.shape))


# ------------------------------------------------------------------ Concat / Pack / Unpack

Concat = def_op("Concat", ["*values"], {"axis": attr("int")},
                doc="Join tensors of equal rank along an existing axis.")


def _same_rank_dtype(values: Sequence, what: str) -> tuple[list[TensorType], DType]:
    if not values:
        raise ShapeError(f"{what} needs at least one tensor")
    ts = [expect_tensor(v, f"values[{i}]") for i, v in enumerate(values)]
    dtype = same_dtype(ts, [f"values[{i}]" for i in range(len(ts))])
    for i, t in enumerate(ts[1:], 1):
        if t.rank != ts[0].rank:
            raise ShapeError(f"all values must have the same rank: values[0] is {ts[0]}, "
                             f"values[{i}] is {t}")
    return ts, dtype


@Concat.infer
def _concat_infer(*values, axis):
    ts, dtype = _same_rank_dtype(values, "Concat")
    rank = ts[0].rank
    if rank == 0:
        raise ShapeError(f"cannot concatenate scalars (values[0] is {ts[0]}); use tw.stack")
    ax = _axis(axis, rank)
    out: list[Dim] = []
    for d in range(rank):
        dims = [t.shape[d] for t in ts]
        if d == ax:
            out.append(None if None in dims else sum(dims))
            continue
        merged = dims[0]
        for i, t in enumerate(ts):
            try:
                merged = _merge_dims(merged, t.shape[d])
            except ValueError:
                raise ShapeError(f"dimension {d} differs (concatenating along axis {ax}): "
                                 f"values[0] is {ts[0]}, values[{i}] is {t}") from None
        out.append(merged)
    return TensorType(dtype, out)


@Concat.kernel("reference")
def _concat_kernel(*values, axis):
    _runtime_types(_concat_infer, *values, axis=axis)
    return np.concatenate(values, axis=axis)


Pack = def_op("Pack", ["*values"], {"axis": attr("int", 0)},
              doc="Stack tensors of one shape along a new axis (tf.stack).")


@Pack.infer
def _pack_infer(*values, axis):
    ts, dtype = _same_rank_dtype(values, "Pack")
    shape = list(ts[0].shape)
    for i, t in enumerate(ts):
        try:
            shape = [_merge_dims(a, b) for a, b in zip(shape, t.shape)]
        except ValueError:
            raise ShapeError(f"all values must have the same shape: values[0] is {ts[0]}, "
                             f"values[{i}] is {t}") from None
    ax = _axis(axis, len(shape) + 1)
    return TensorType(dtype, shape[:ax] + [len(ts)] + shape[ax:])


@Pack.kernel("reference")
def _pack_kernel(*values, axis):
    _runtime_types(_pack_infer, *values, axis=axis)
    return np.stack(values, axis=axis)


Unpack = def_op("Unpack", ["value"], {"num": attr("int"), "axis": attr("int", 0)},
                doc="Split a tensor into `num` tensors along `axis`, removing it (tf.unstack).")


@Unpack.infer
def _unpack_infer(value, *, num, axis):
    t = expect_tensor(value, "value")
    ax = _axis(axis, t.rank)
    if num < 0 or t.shape[ax] not in (num, None):
        raise ShapeError(f"cannot unstack value ({t}) into {num} tensors along axis {ax}: the "
                         f"dimension has size {t.shape[ax]}")
    return [t.with_shape(t.shape[:ax] + t.shape[ax + 1:])] * num


@Unpack.kernel("reference")
def _unpack_kernel(x, *, num, axis):
    _runtime_types(_unpack_infer, x, num=num, axis=axis)
    return tuple(np.take(x, i, axis=axis) for i in range(num))


# ------------------------------------------------------------------------------- Split

Split = def_op("Split", ["value"], {"axis": attr("int", 0), "num_split": attr("int", 0),
                                    "size_splits": attr("ints", ())},
               doc="Split along `axis` into `num_split` equal parts, or into parts of sizes "
                   "`size_splits` (one may be -1: the rest).")


def _split_sizes(dim: Dim, num_split: int, size_splits: Sequence[int], where: str) -> list[Dim]:
    """The size of each part of a dimension of size `dim`."""
    if (num_split > 0) == bool(size_splits):
        raise ShapeError("give exactly one of num_split > 0 or a non-empty size_splits, got "
                         f"num_split={num_split}, size_splits={list(size_splits)}")
    if num_split > 0:
        if dim is not None and dim % num_split:
            raise ShapeError(f"{where} has size {dim}, which is not divisible by "
                             f"num_split={num_split}")
        return [None if dim is None else dim // num_split] * num_split
    sizes: list[Dim] = list(size_splits)
    holes = [i for i, s in enumerate(sizes) if s == -1]
    if len(holes) > 1 or any(s < -1 for s in sizes):
        raise ShapeError(f"size_splits {list(size_splits)} must be sizes >= 0 with at most one -1")
    rest = sum(s for s in size_splits if s != -1)
    if dim is not None and (rest > dim or (not holes and rest != dim)):
        raise ShapeError(f"size_splits {list(size_splits)} do not add up to the size {dim} of "
                         f"{where}")
    if holes:
        sizes[holes[0]] = None if dim is None else dim - rest
    return sizes


@Split.infer
def _split_infer(value, *, axis, num_split, size_splits):
    t = expect_tensor(value, "value")
    ax = _axis(axis, t.rank)
    sizes = _split_sizes(t.shape[ax], num_split, size_splits, f"dimension {ax} of value ({t})")
    return [t.with_shape(t.shape[:ax] + (s,) + t.shape[ax + 1:]) for s in sizes]


@Split.kernel("reference")
def _split_kernel(x, *, axis, num_split, size_splits):
    types = _runtime_types(_split_infer, x, axis=axis, num_split=num_split,
                           size_splits=size_splits)
    ax = axis % x.ndim
    bounds = np.cumsum([t.shape[ax] for t in types])[:-1]
    return tuple(_owned(p) for p in np.split(x, bounds, axis=ax))


SplitLike = def_op("SplitLike", ["value", "*likes"], {"axis": attr("int")},
                   doc="Split `value` along `axis` into one part per tensor in `likes`, as "
                       "long as that tensor is along `axis` (sizes known at run time): the "
                       "gradient of Concat over dims unknown at trace time.")


@SplitLike.infer
def _split_like_infer(value, *likes, axis):
    t = expect_tensor(value, "value")
    ax = _axis(axis, t.rank)
    if not likes:
        raise ShapeError("SplitLike needs at least one tensor in likes")
    out = []
    for i, like in enumerate(likes):
        lk = expect_tensor(like, f"likes[{i}]")
        if lk.rank != t.rank:
            raise ShapeError(f"likes[{i}] ({lk}) must have the rank of value ({t})")
        out.append(t.with_shape(t.shape[:ax] + (lk.shape[ax],) + t.shape[ax + 1:]))
    sizes = [o.shape[ax] for o in out]
    if t.shape[ax] is not None and None not in sizes and sum(sizes) != t.shape[ax]:
        raise ShapeError(f"the sizes of likes along axis {ax} ({sizes}) do not add up to "
                         f"dimension {ax} of value ({t})")
    return out


@SplitLike.kernel("reference")
def _split_like_kernel(x, *likes, axis):
    types = _runtime_types(_split_like_infer, x, *likes, axis=axis)
    ax = axis % x.ndim
    bounds = np.cumsum([t.shape[ax] for t in types])[:-1]
    return tuple(_owned(p) for p in np.split(x, bounds, axis=ax))


# ------------------------------------------------------------------------------- Slice

Slice = def_op("Slice", ["input"], {"begin": attr("ints"), "size": attr("ints")},
               doc="The block starting at `begin` of extent `size` (-1: to the end).")


@Slice.infer
def _slice_infer(x, *, begin, size):
    t = expect_tensor(x, "input")
    _check_length(begin, t.rank, "begin", t)
    _check_length(size, t.rank, "size", t)
    _check_nonnegative(begin, "begin")
    out: list[Dim] = []
    for i, (d, b, s) in enumerate(zip(t.shape, begin, size)):
        if s < -1:
            raise ShapeError(f"size must be >= 0 or -1 (to the end), got {list(size)}")
        if d is not None and (b > d or (s != -1 and b + s > d)):
            raise ShapeError(f"slice begin={list(begin)}, size={list(size)} is out of bounds in "
                             f"dimension {i} of input ({t})")
        out.append(s if s != -1 else (None if d is None else d - b))
    return t.with_shape(out)


@Slice.kernel("reference")
def _slice_kernel(x, *, begin, size):
    (t,) = _runtime_types(_slice_infer, x, begin=begin, size=size)
    return _owned(x[tuple(slice(b, b + n) for b, n in zip(begin, t.shape))])


# ------------------------------------------------------------------------ StridedSlice

StridedSlice = def_op(
    "StridedSlice", ["input"],
    {"begin": attr("ints"), "end": attr("ints"), "strides": attr("ints"),
     "begin_mask": attr("int", 0), "end_mask": attr("int", 0), "ellipsis_mask": attr("int", 0),
     "new_axis_mask": attr("int", 0), "shrink_axis_mask": attr("int", 0)},
    doc="TensorFlow's strided slice (what Python indexing maps to): bit i of each mask "
        "applies to entry i of begin/end/strides.")

_NEW_AXIS = -1


class _DenseDim:
    """The slice of one input dimension after the sparse spec is expanded."""

    __slots__ = ("begin", "end", "stride", "begin_masked", "end_masked", "shrink")

    def __init__(self, begin: int, end: int, stride: int, begin_masked: bool, end_masked: bool,
                 shrink: bool) -> None:
        self.begin, self.end, self.stride = begin, end, stride
        self.begin_masked, self.end_masked, self.shrink = begin_masked, end_masked, shrink

    def resolve(self, dim: Dim, index: int) -> tuple[int, Dim]:
        """(first index, number of elements) of this slice of a dimension of size `dim`,
        following TensorFlow's canonicalisation (clamping, masks, negative strides)."""
        s = self.stride
        if self.shrink:
            if dim is None:
                return 0, 1
            x = self.begin + dim if self.begin < 0 else self.begin
            if not 0 <= x < dim:
                raise ShapeError(f"index {self.begin} is out of bounds for dimension {index} "
                                 f"of size {dim}")
            return x, 1
        if dim is None:
            return 0, None
        lo, hi = (0, dim) if s > 0 else (-1, dim - 1)

        def canonical(x: int, masked: bool, is_end: bool) -> int:
            if masked:
                return hi if is_end == (s > 0) else lo
            x = x + dim if x < 0 else x
            return min(max(x, lo), hi)

        b = canonical(self.begin, self.begin_masked, False)
        e = canonical(self.end, self.end_masked, True)
        length = e - b
        if length == 0 or (length < 0) != (s < 0):
            return b, 0
        return b, -(-abs(length) // abs(s))


def _expand_spec(rank: int, begin, end, strides, begin_mask, end_mask, ellipsis_mask,
                 new_axis_mask, shrink_axis_mask) -> tuple[list[_DenseDim], list[int]]:
    """Expand the sparse slice spec to one `_DenseDim` per input dim, plus, for each output
    dim, the input dim it comes from (`_NEW_AXIS` for an inserted axis)."""
    n = len(begin)
    if len(end) != n or len(strides) != n:
        raise ShapeError(f"begin, end and strides must have the same length, got {len(begin)}, "
                         f"{len(end)} and {len(strides)}")
    if ellipsis_mask & (ellipsis_mask - 1):
        raise ShapeError("multiple ellipses in a slice spec are not allowed")
    ellipsis_seen, new_after_ellipsis = False, 0
    for i in range(n):
        if ellipsis_seen and new_axis_mask >> i & 1:
            new_after_ellipsis += 1
        ellipsis_seen = ellipsis_seen or bool(ellipsis_mask >> i & 1)
    if not ellipsis_seen:  # an implicit trailing ellipsis covers the remaining dims
        ellipsis_mask |= 1 << n
        n += 1
    dense: list[_DenseDim] = []
    final: list[int] = []
    for i in range(n):
        if ellipsis_mask >> i & 1:
            stop = min(rank - (n - i) + 1 + new_after_ellipsis, rank)
            while len(dense) < stop:
                final.append(len(dense))
                dense.append(_DenseDim(0, 0, 1, True, True, False))
        elif new_axis_mask >> i & 1:
            final.append(_NEW_AXIS)
        else:
            if len(dense) == rank:
                raise ShapeError(f"too many indices: slice entry {i} refers to dimension "
                                 f"{rank}, the input has only {rank} dimensions")
            shrink = bool(shrink_axis_mask >> i & 1)
            if strides[i] == 0 or (shrink and strides[i] < 0):
                raise ShapeError(f"strides must be non-zero (and positive for an index), got "
                                 f"{list(strides)}")
            if not shrink:
                final.append(len(dense))
            dense.append(_DenseDim(begin[i], end[i], strides[i], bool(begin_mask >> i & 1),
                                   bool(end_mask >> i & 1), shrink))
    return dense, final


def _strided_plan(shape: Sequence[Dim], attrs: dict) -> tuple[list[tuple[int, Dim, int]], tuple]:
    """Per input dim (start, count, stride), and the output shape."""
    dense, final = _expand_spec(len(shape), **attrs)
    plan = [(*d.resolve(dim, i), d.stride) for i, (d, dim) in enumerate(zip(dense, shape))]
    out = tuple(1 if f == _NEW_AXIS else plan[f][1] for f in final)
    return plan, out


@StridedSlice.infer
def _strided_slice_infer(x, **attrs):
    t = expect_tensor(x, "input")
    return t.with_shape(_strided_plan(t.shape, attrs)[1])


def _runtime_plan(shape: Sequence[int], attrs: dict) -> tuple[tuple, tuple]:
    """(NumPy index selecting the slice of an array of `shape`, the output shape); a bad
    slice is a run-time InvalidArgumentError."""
    try:
        plan, out_shape = _strided_plan(shape, attrs)
    except ShapeError as e:
        raise InvalidArgumentError(e.message) from None
    index = []
    for start, count, stride in plan:
        if count == 0:
            index.append(slice(0, 0))
        else:
            stop = start + count * stride
            index.append(slice(start, stop if stop >= 0 else None, stride))
    return tuple(index), out_shape


@StridedSlice.kernel("reference")
def _strided_slice_kernel(x, **attrs):
    index, out_shape = _runtime_plan(x.shape, attrs)
    return _owned(x[index].reshape(out_shape))


StridedSliceGrad = def_op(
    "StridedSliceGrad", ["dy", "like"], dict(StridedSlice.attrs),
    doc="The gradient of StridedSlice: zeros of `like`'s (run-time) shape with `dy` written "
        "where StridedSlice with the same attributes would read; `dy`'s dtype.")


@StridedSliceGrad.infer
def _strided_slice_grad_infer(dy, like, **attrs):
    g = expect_tensor(dy, "dy")
    lk = expect_tensor(like, "like")
    sliced = _strided_plan(lk.shape, attrs)[1]
    try:
        if len(sliced) != g.rank:
            raise ValueError
        for a, b in zip(sliced, g.shape):
            _merge_dims(a, b)
    except ValueError:
        raise ShapeError(f"dy ({g}) does not have the shape {format_shape(sliced)} of the "
                         f"slice of like ({lk})") from None
    return TensorType(g.dtype, lk.shape)


@StridedSliceGrad.kernel("reference")
def _strided_slice_grad_kernel(dy, like, **attrs):
    _runtime_types(_strided_slice_grad_infer, dy, like, **attrs)
    index, _ = _runtime_plan(like.shape, attrs)
    out = np.zeros(like.shape, dtype=dy.dtype)
    # a strided slice never reads an element twice, so assigning is accumulating
    out[index] = dy.reshape(out[index].shape)
    return out


# --------------------------------------------------------------------------------- Pad

Pad = def_op("Pad", ["tensor"], {"paddings": attr("ints"), "mode": attr("str", "CONSTANT"),
                                 "constant_value": attr("float", 0.0)},
             doc="Pad each dimension i by paddings[2i] before and paddings[2i+1] after; mode "
                 "CONSTANT (with constant_value), REFLECT or SYMMETRIC.")

_PAD_MODES = ("CONSTANT", "REFLECT", "SYMMETRIC")


@Pad.infer
def _pad_infer(tensor, *, paddings, mode, constant_value):
    t = expect_tensor(tensor, "tensor")
    if mode not in _PAD_MODES:
        raise ShapeError(f"mode must be one of {', '.join(_PAD_MODES)}, got {mode!r}")
    if len(paddings) != 2 * t.rank:
        raise ShapeError(f"paddings must hold one (before, after) pair per dimension of tensor "
                         f"({t}), got {len(paddings)} numbers")
    _check_nonnegative(paddings, "paddings")
    slack = {"CONSTANT": None, "REFLECT": 1, "SYMMETRIC": 0}[mode]
    out: list[Dim] = []
    for i, d in enumerate(t.shape):
        before, after = paddings[2 * i], paddings[2 * i + 1]
        # mirroring needs enough elements (zero padding of an empty dim is fine, though)
        if slack is not None and d is not None and max(before, after) > max(d - slack, 0):
            raise ShapeError(f"{mode} padding of dimension {i} by ({before}, {after}) needs "
                             f"both <= {max(d - slack, 0)} for tensor ({t})")
        out.append(None if d is None else d + before + after)
    return t.with_shape(out)


@Pad.kernel("reference")
def _pad_kernel(x, *, paddings, mode, constant_value):
    _runtime_types(_pad_infer, x, paddings=paddings, mode=mode, constant_value=constant_value)
    pairs = [(paddings[2 * i], paddings[2 * i + 1]) for i in range(x.ndim)]
    if not any(paddings):
        return _owned(x)
    if mode == "CONSTANT":
        value = np.asarray(constant_value).astype(x.dtype)
        return np.pad(x, pairs, mode="constant", constant_values=value)
    return np.pad(x, pairs, mode=mode.lower())


PadGrad = def_op("PadGrad", ["grad"], {"paddings": attr("ints"), "mode": attr("str", "CONSTANT")},
                 doc="The gradient of Pad: `grad` (shaped like Pad's output) folded back to "
                     "Pad's input shape; padded values that mirror an input element (REFLECT, "
                     "SYMMETRIC) add to it, constant padding is dropped.")


@PadGrad.infer
def _pad_grad_infer(grad, *, paddings, mode):
    t = expect_tensor(grad, "grad")
    if mode not in _PAD_MODES:
        raise ShapeError(f"mode must be one of {', '.join(_PAD_MODES)}, got {mode!r}")
    if len(paddings) != 2 * t.rank:
        raise ShapeError(f"paddings must hold one (before, after) pair per dimension of grad "
                         f"({t}), got {len(paddings)} numbers")
    _check_nonnegative(paddings, "paddings")
    slack = {"CONSTANT": 0, "REFLECT": 1, "SYMMETRIC": 0}[mode]
    out: list[Dim] = []
    for i, d in enumerate(t.shape):
        before, after = paddings[2 * i], paddings[2 * i + 1]
        n = None if d is None else d - before - after
        # the same condition Pad checks on its input, whose size is n
        if n is not None and (n < 0 or (mode != "CONSTANT" and
                                        max(before, after) > max(n - slack, 0))):
            raise ShapeError(f"grad ({t}) cannot be the result of {mode} padding by "
                             f"({before}, {after}) in dimension {i}")
        out.append(n)
    return t.with_shape(out)


def _fold_axis(g: np.ndarray, axis: int, before: int, after: int, mode: str) -> np.ndarray:
    """Undo the padding of one axis: the centre, plus mirrored pads added where they came
    from (REFLECT mirrors without the edge element, SYMMETRIC with it)."""
    n = g.shape[axis] - before - after
    out = np.moveaxis(g, axis, 0)[before:before + n].copy()
    if mode != "CONSTANT" and n:
        edge = 1 if mode == "REFLECT" else 0
        padded = np.moveaxis(g, axis, 0)
        # padded index j < before holds x[before - j - 1 + edge]
        np.add.at(out, before - np.arange(before) - 1 + edge, padded[:before])
        # padded index before + n + k holds x[n - 1 - k - edge]
        np.add.at(out, n - 1 - np.arange(after) - edge, padded[before + n:])
    return np.moveaxis(out, 0, axis)


@PadGrad.kernel("reference")
def _pad_grad_kernel(g, *, paddings, mode):
    (t,) = _runtime_types(_pad_grad_infer, g, paddings=paddings, mode=mode)
    out = g.astype(_accumulator(g.dtype))
    for axis in range(g.ndim):
        out = _fold_axis(out, axis, paddings[2 * axis], paddings[2 * axis + 1], mode)
    return np.ascontiguousarray(out, dtype=g.dtype).reshape(t.shape)


# ---------------------------------------------------------------- Tile / BroadcastTo

Tile = def_op("Tile", ["input"], {"multiples": attr("ints")},
              doc="Repeat the tensor multiples[i] times along dimension i.")


@Tile.infer
def _tile_infer(x, *, multiples):
    t = expect_tensor(x, "input")
    _check_length(multiples, t.rank, "multiples", t)
    _check_nonnegative(multiples, "multiples")
    return t.with_shape([0 if m == 0 else (None if d is None else d * m)
                         for d, m in zip(t.shape, multiples)])


@Tile.kernel("reference")
def _tile_kernel(x, *, multiples):
    return _owned(np.tile(x, multiples))


BroadcastTo = def_op("BroadcastTo", ["input"], {"shape": attr("ints")},
                     doc="Broadcast `input` to `shape` with NumPy's rules.")


@BroadcastTo.infer
def _broadcast_to_infer(x, *, shape):
    t = expect_tensor(x, "input")
    _check_nonnegative(shape, "shape")
    lead = len(shape) - t.rank
    if lead < 0 or any(d not in (1, None, s) for d, s in zip(t.shape, shape[lead:])):
        raise ShapeError(f"cannot broadcast input ({t}) to shape {list(shape)}")
    return t.with_shape(shape)


@BroadcastTo.kernel("reference")
def _broadcast_to_kernel(x, *, shape):
    _runtime_types(_broadcast_to_infer, x, shape=shape)
    return _owned(np.broadcast_to(x, shape))


# ------------------------------------------------------------------------------ Gather

Gather = def_op("Gather", ["params", "indices"], {"axis": attr("int", 0),
                                                  "batch_dims": attr("int", 0)},
                doc="Slices of `params` along `axis` at `indices`: the output shape is "
                    "params.shape[:axis] + indices.shape + params.shape[axis+1:].")


@Gather.infer
def _gather_infer(params, indices, *, axis, batch_dims):
    p = expect_tensor(params, "params")
    i = expect_tensor(indices, "indices")
    check_dtype(i, (int32, int64), "indices")
    if batch_dims != 0:
        raise UnimplementedError(f"batch_dims={batch_dims} is not supported; only batch_dims=0")
    ax = _axis(axis, p.rank, "axis of params")
    return p.with_shape(p.shape[:ax] + i.shape + p.shape[ax + 1:])


@Gather.kernel("reference")
def _gather_kernel(params, indices, *, axis, batch_dims):
    ax = axis % params.ndim
    n = params.shape[ax]
    bad = (indices < 0) | (indices >= n)
    if bad.any():
        where = tuple(int(k) for k in np.argwhere(bad)[0])
        raise InvalidArgumentError(
            f"indices[{','.join(map(str, where))}] = {indices[where]} is not in [0, {n}) "
            f"(dimension {ax} of params, shape {format_shape(params.shape)})")
    return np.take(params, indices, axis=ax)


UnsortedSegmentSum = def_op(
    "UnsortedSegmentSum", ["data", "segment_ids"], {"num_segments": attr("int")},
    doc="output[s] = sum of data[i...] over the i with segment_ids[i...] == s, for s in "
        "[0, num_segments); segment_ids' shape is a prefix of data's; negative ids are "
        "dropped (TensorFlow's rule). The gradient of Gather.")


@UnsortedSegmentSum.infer
def _unsorted_segment_sum_infer(data, segment_ids, *, num_segments):
    d = expect_tensor(data, "data")
    ids = expect_tensor(segment_ids, "segment_ids")
    check_dtype(ids, (int32, int64), "segment_ids")
    check_dtype(d, NUMERIC_DTYPES, "data", "a numeric dtype")
    if num_segments < 0:
        raise ShapeError(f"num_segments must be >= 0, got {num_segments}")
    try:
        if ids.rank > d.rank:
            raise ValueError
        for a, b in zip(ids.shape, d.shape):
            _merge_dims(a, b)
    except ValueError:
        raise ShapeError(f"the shape of segment_ids ({ids}) must be a prefix of the shape of "
                         f"data ({d})") from None
    return d.with_shape((num_segments,) + d.shape[ids.rank:])


@UnsortedSegmentSum.kernel("reference")
def _unsorted_segment_sum_kernel(data, segment_ids, *, num_segments):
    (t,) = _runtime_types(_unsorted_segment_sum_infer, data, segment_ids,
                          num_segments=num_segments)
    too_big = segment_ids >= num_segments
    if too_big.any():
        where = tuple(int(k) for k in np.argwhere(too_big)[0])
        raise InvalidArgumentError(f"segment_ids[{','.join(map(str, where))}] = "
                                   f"{segment_ids[where]} is not < num_segments = {num_segments}")
    wide = _accumulator(data.dtype)
    out = np.zeros(t.shape, dtype=wide)
    keep = segment_ids >= 0
    np.add.at(out, segment_ids[keep], data[keep].astype(wide))
    return out.astype(data.dtype)


# ------------------------------------------------------------------------------ OneHot

OneHot = def_op("OneHot", ["indices"],
                {"depth": attr("int"), "on_value": attr("float", 1.0),
                 "off_value": attr("float", 0.0), "axis": attr("int", -1),
                 "dtype": attr("dtype", as_dtype("f32"))},
                doc="One-hot vectors of length `depth` inserted at `axis`; indices outside "
                    "[0, depth) give rows of off_value.")


@OneHot.infer
def _one_hot_infer(indices, *, depth, on_value, off_value, axis, dtype):
    t = expect_tensor(indices, "indices")
    check_dtype(t, INT_DTYPES, "indices")
    if depth < 0:
        raise ShapeError(f"depth must be >= 0, got {depth}")
    ax = _axis(axis, t.rank + 1)
    return TensorType(dtype, t.shape[:ax] + (depth,) + t.shape[ax:])


@OneHot.kernel("reference")
def _one_hot_kernel(indices, *, depth, on_value, off_value, axis, dtype):
    hot = np.expand_dims(indices, -1) == np.arange(depth)
    hot = np.moveaxis(hot, -1, axis % (indices.ndim + 1))
    on = np.asarray(on_value).astype(dtype.np)
    off = np.asarray(off_value).astype(dtype.np)
    return np.where(hot, on, off).astype(dtype.np)


# ----------------------------------------------------------------------------- creation

Fill = def_op("Fill", [], {"shape": attr("ints"), "value": attr("float"), "dtype": attr("dtype")},
              doc="A tensor of `shape` filled with `value` (stored as a float: integers are "
                  "exact up to 2**53).")


@Fill.infer
def _fill_infer(*, shape, value, dtype):
    _check_nonnegative(shape, "shape")
    return TensorType(dtype, shape)


@Fill.kernel("reference")
def _fill_kernel(*, shape, value, dtype):
    return np.full(shape, np.asarray(value).astype(dtype.np), dtype=dtype.np)


ZerosLike = def_op("ZerosLike", ["input"], {"dtype": attr("dtype", None)},
                   doc="Zeros of `input`'s shape, with `dtype` or else `input`'s dtype.")
OnesLike = def_op("OnesLike", ["input"], {"dtype": attr("dtype", None)},
                  doc="Ones of `input`'s shape, with `dtype` or else `input`'s dtype.")


def _like_infer(x, *, dtype):
    t = expect_tensor(x, "input")
    return t if dtype is None else t.with_dtype(dtype)


ZerosLike.infer(_like_infer)
OnesLike.infer(_like_infer)


@ZerosLike.kernel("reference")
def _zeros_like_kernel(x, *, dtype):
    return np.zeros(x.shape, dtype=x.dtype if dtype is None else dtype.np)


@OnesLike.kernel("reference")
def _ones_like_kernel(x, *, dtype):
    return np.ones(x.shape, dtype=x.dtype if dtype is None else dtype.np)


Range = def_op("Range", [], {"start": attr("float"), "limit": attr("float"),
                             "delta": attr("float"), "dtype": attr("dtype")},
               doc="start, start + delta, ... up to but excluding limit.")


def range_length(start: float, limit: float, delta: float, dtype: DType) -> int:
    """Number of elements of a Range, computed as TensorFlow does."""
    if delta == 0:
        raise ShapeError("delta of a range must not be 0")
    if dtype.is_integer:
        start, limit, delta = int(start), int(limit), int(delta)
        return max(0, -(-(limit - start) // delta))
    return max(0, int(np.ceil((limit - start) / delta)))


@Range.infer
def _range_infer(*, start, limit, delta, dtype):
    if not (dtype.is_integer or dtype.is_floating):
        raise ShapeError(f"a range needs a numeric dtype, got {dtype.ir_name}")
    return TensorType(dtype, (range_length(start, limit, delta, dtype),))


@Range.kernel("reference")
def _range_kernel(*, start, limit, delta, dtype):
    n = range_length(start, limit, delta, dtype)
    if dtype.is_integer:
        return (int(start) + np.arange(n, dtype=np.int64) * int(delta)).astype(dtype.np)
    return (start + np.arange(n, dtype=np.float64) * delta).astype(dtype.np)


# ------------------------------------------------------------------------ shape queries

Shape = def_op("Shape", ["input"], {"out_type": attr("dtype", int32)},
               doc="The run-time shape of `input` as a vector.")
Size = def_op("Size", ["input"], {"out_type": attr("dtype", int32)},
              doc="The run-time number of elements of `input` as a scalar.")


@Shape.infer
def _shape_infer(x, *, out_type):
    t = expect_tensor(x, "input")
    if out_type not in (int32, int64):
        raise ShapeError(f"out_type must be i32 or i64, got {out_type.ir_name}")
    return TensorType(out_type, (t.rank,))


@Shape.kernel("reference")
def _shape_kernel(x, *, out_type):
    return np.array(x.shape, dtype=out_type.np).reshape(x.ndim)


@Size.infer
def _size_infer(x, *, out_type):
    expect_tensor(x, "input")
    if out_type not in (int32, int64):
        raise ShapeError(f"out_type must be i32 or i64, got {out_type.ir_name}")
    return TensorType(out_type, ())


@Size.kernel("reference")
def _size_kernel(x, *, out_type):
    return np.asarray(x.size, dtype=out_type.np)
