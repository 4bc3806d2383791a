"""Native lowerings of the array family (and standalone Select and Cast) against their
reference kernels: random shapes with empty and size-1 dims, random attributes (negative
axes, negative strides, masks, padding modes), every native dtype, and the out-of-range
errors of Gather, UnsortedSegmentSum and DynamicUpdateRow."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tensorweave.compiler.dtypes import as_dtype
from tensorweave.compiler.ops.array import _strided_plan
from tensorweave.errors import InvalidArgumentError, ShapeError
from tensorweave.targets.cpu.lowering import compile_node
from tests.lowerings.helpers import check_lowering, reference_outputs, single_node

NATIVE = [np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.bool_]
NUMERIC = [d for d in NATIVE if d is not np.bool_]
FEW = settings(max_examples=15, deadline=None)
SOME = settings(max_examples=25, deadline=None)


def rand(data, shape, dtypes=NATIVE, low=-100, high=100):
    """A random array of `shape` with a dtype drawn from `dtypes`."""
    dtype = np.dtype(data.draw(st.sampled_from(dtypes)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, low), min(info.max, high), size=shape,
                        endpoint=True).astype(dtype)


def shape_of(data, min_rank=0, max_rank=4, max_side=4, min_side=0):
    return tuple(data.draw(st.lists(st.integers(min_side, max_side), min_size=min_rank,
                                    max_size=max_rank)))


def axis_in(data, rank):
    """An axis of a tensor of `rank`, negative values included."""
    return data.draw(st.integers(-rank, rank - 1))


# ------------------------------------------------------------------- permuting copies

@SOME
@given(st.data())
def test_transpose(data):
    shape = shape_of(data, max_rank=5)
    perm = data.draw(st.permutations(range(len(shape))))
    check_lowering("Transpose", [rand(data, shape)], perm=tuple(perm))


@pytest.mark.parametrize("shape, perm", [((33, 47), (1, 0)), ((3, 40, 17), (0, 2, 1)),
                                         ((16, 5, 32), (2, 1, 0)), ((64, 64), (1, 0))])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.float64])
def test_transpose_tiled(shape, perm, dtype):
    x = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    check_lowering("Transpose", [x], perm=perm)


@SOME
@given(st.data())
def test_concat(data):
    shape = list(shape_of(data, min_rank=1))
    axis = axis_in(data, len(shape))
    parts = []
    x = rand(data, shape)
    for _ in range(data.draw(st.integers(1, 3))):
        shape[axis] = data.draw(st.integers(0, 4))
        parts.append(rand(data, shape, [x.dtype]))
    check_lowering("Concat", parts, axis=axis)


def test_concat_rows_are_memcpys():
    a, b = np.ones((64, 100), np.float32), np.zeros((64, 200), np.float32)
    check_lowering("Concat", [a, b], axis=1)


@FEW
@given(st.data())
def test_pack(data):
    shape = shape_of(data, max_rank=3)
    x = rand(data, shape)
    parts = [x] + [rand(data, shape, [x.dtype]) for _ in range(data.draw(st.integers(0, 2)))]
    check_lowering("Pack", parts, axis=data.draw(st.integers(-len(shape) - 1, len(shape))))


@FEW
@given(st.data())
def test_unpack(data):
    shape = shape_of(data, min_rank=1)
    axis = axis_in(data, len(shape))
    check_lowering("Unpack", [rand(data, shape)], num=shape[axis], axis=axis)


@SOME
@given(st.data())
def test_split(data):
    shape = list(shape_of(data, min_rank=1))
    axis = axis_in(data, len(shape))
    if data.draw(st.booleans()):
        num = data.draw(st.integers(1, 3))
        shape[axis] = num * data.draw(st.integers(0, 2))
        attrs = {"num_split": num, "size_splits": ()}
    else:
        sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
        shape[axis] = sum(sizes)
        if data.draw(st.booleans()):
            sizes[data.draw(st.integers(0, len(sizes) - 1))] = -1
        attrs = {"num_split": 0, "size_splits": tuple(sizes)}
    check_lowering("Split", [rand(data, shape)], axis=axis, **attrs)


@FEW
@given(st.data())
def test_split_like(data):
    shape = list(shape_of(data, min_rank=1))
    axis = axis_in(data, len(shape))
    likes = []
    for _ in range(data.draw(st.integers(1, 3))):
        shape_k = list(shape)
        shape_k[axis] = data.draw(st.integers(0, 3))
        likes.append(np.zeros(shape_k, np.float32))
    shape[axis] = sum(lk.shape[axis] for lk in likes)
    check_lowering("SplitLike", [rand(data, shape)] + likes, axis=axis)


# ------------------------------------------------------------------------- slicing

@SOME
@given(st.data())
def test_slice(data):
    shape = shape_of(data)
    begin = [data.draw(st.integers(0, d)) for d in shape]
    size = [data.draw(st.sampled_from([-1, data.draw(st.integers(0, d - b))]))
            for d, b in zip(shape, begin)]
    check_lowering("Slice", [rand(data, shape)], begin=tuple(begin), size=tuple(size))


@st.composite
def strided_specs(draw, rank):
    """A StridedSlice spec for a tensor of `rank` (maybe invalid for a given shape):
    slices with any strides, indices, new axes and at most one ellipsis."""
    entries, masks = [], {k: 0 for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                         "new_axis_mask", "shrink_axis_mask")}
    used, ellipsis = 0, False
    for i in range(draw(st.integers(0, rank + 2))):
        kinds = ["slice", "index"] if used < rank else []
        kinds += ["new"] + ([] if ellipsis else ["ellipsis"])
        kind = draw(st.sampled_from(kinds))
        begin, end = draw(st.integers(-6, 6)), draw(st.integers(-6, 6))
        stride = draw(st.sampled_from([1, 1, 2, 3, -1, -2]))
        if kind == "slice":
            used += 1
            masks["begin_mask"] |= draw(st.booleans()) << i
            masks["end_mask"] |= draw(st.booleans()) << i
        elif kind == "index":
            used, stride = used + 1, 1
            masks["shrink_axis_mask"] |= 1 << i
        elif kind == "new":
            masks["new_axis_mask"] |= 1 << i
        else:
            ellipsis = True
            masks["ellipsis_mask"] |= 1 << i
        entries.append((begin, end, stride))
    begin, end, strides = (tuple(e[k] for e in entries) for k in range(3))
    return {"begin": begin, "end": end, "strides": strides, **masks}


def _sliced_shape(shape, attrs):
    try:
        return _strided_plan(list(shape), attrs)[1]
    except ShapeError:
        assume(False)


@SOME
@given(st.data())
def test_strided_slice(data):
    shape = shape_of(data, max_side=6)
    attrs = data.draw(strided_specs(len(shape)))
    _sliced_shape(shape, attrs)
    check_lowering("StridedSlice", [rand(data, shape)], **attrs)


@SOME
@given(st.data())
def test_strided_slice_grad(data):
    shape = shape_of(data, max_side=6)
    attrs = data.draw(strided_specs(len(shape)))
    dy = rand(data, _sliced_shape(shape, attrs))
    like = np.zeros(shape, np.float32)
    check_lowering("StridedSliceGrad", [dy, like], **attrs)


# ------------------------------------------------------------------------- padding

def _paddings(data, shape, mode):
    slack = {"CONSTANT": None, "REFLECT": 1, "SYMMETRIC": 0}[mode]
    out = []
    for d in shape:
        most = 3 if slack is None else max(d - slack, 0)
        out += [data.draw(st.integers(0, most)), data.draw(st.integers(0, most))]
    return tuple(out)


@SOME
@given(st.data())
def test_pad(data):
    mode = data.draw(st.sampled_from(["CONSTANT", "REFLECT", "SYMMETRIC"]))
    shape = shape_of(data)
    value = data.draw(st.sampled_from([0.0, 1.0, -2.5, 7.0]))
    check_lowering("Pad", [rand(data, shape)], paddings=_paddings(data, shape, mode), mode=mode,
                   constant_value=value)


@SOME
@given(st.data())
def test_pad_grad(data):
    mode = data.draw(st.sampled_from(["CONSTANT", "REFLECT", "SYMMETRIC"]))
    shape = shape_of(data)
    paddings = _paddings(data, shape, mode)
    grad_shape = [d + paddings[2 * i] + paddings[2 * i + 1] for i, d in enumerate(shape)]
    dtypes = NATIVE if mode == "CONSTANT" else NUMERIC
    check_lowering("PadGrad", [rand(data, grad_shape, dtypes)], paddings=paddings, mode=mode)


# ------------------------------------------------------------------- Tile / broadcast

@SOME
@given(st.data())
def test_tile(data):
    shape = shape_of(data)
    multiples = tuple(data.draw(st.integers(0, 3)) for _ in shape)
    check_lowering("Tile", [rand(data, shape)], multiples=multiples)


@SOME
@given(st.data())
def test_broadcast_to(data):
    out = shape_of(data)
    lead = data.draw(st.integers(0, len(out)))
    shape = tuple(d if data.draw(st.booleans()) else 1 for d in out[lead:])
    check_lowering("BroadcastTo", [rand(data, shape)], shape=out)


# --------------------------------------------------------------- gathers and scatters

@SOME
@given(st.data())
def test_gather(data):
    params = shape_of(data, min_rank=1)
    axis = axis_in(data, len(params))
    n = params[axis]
    idx_shape = shape_of(data, max_rank=2) if n else (0,)
    idt = data.draw(st.sampled_from([np.int32, np.int64]))
    indices = np.random.default_rng(data.draw(st.integers(0, 99))).integers(
        0, max(n, 1), size=idx_shape).astype(idt)
    check_lowering("Gather", [rand(data, params), indices], axis=axis, batch_dims=0)


def _native_and_reference(op, arrays, **attrs):
    """(native outputs, reference outputs) of `op`, either being the exception raised."""
    node = single_node(op, arrays, **attrs)
    results = []
    for run in (lambda: compile_node(node)(arrays), lambda: reference_outputs(node, arrays)):
        try:
            results.append(run())
        except InvalidArgumentError as e:
            results.append(e)
    return results


@pytest.mark.parametrize("bad", [-1, 3, 1000])
@pytest.mark.parametrize("axis", [0, 1])
def test_gather_out_of_range_is_an_error(bad, axis):
    params = np.arange(12, dtype=np.float32).reshape(3, 4)
    indices = np.array([[0, 2], [bad, 1]], np.int64)
    native, ref = _native_and_reference("Gather", [params, indices], axis=axis, batch_dims=0)
    if 0 <= bad < params.shape[axis]:
        assert not isinstance(native, Exception)
        return
    assert isinstance(native, InvalidArgumentError) and isinstance(ref, InvalidArgumentError)
    # the native step reports the reference's message: the index, its bound and dimension
    assert str(native) == str(ref)
    assert f"= {bad} is not in [0, {params.shape[axis]})" in str(native)


@SOME
@given(st.data())
def test_unsorted_segment_sum(data):
    shape = shape_of(data, min_rank=1)
    ids_rank = data.draw(st.integers(1, len(shape)))
    num = data.draw(st.integers(0, 4))
    ids = np.random.default_rng(data.draw(st.integers(0, 99))).integers(
        -1, num, size=shape[:ids_rank], endpoint=False).astype(
        data.draw(st.sampled_from([np.int32, np.int64])))
    check_lowering("UnsortedSegmentSum", [rand(data, shape, NUMERIC), ids], num_segments=num)


def test_unsorted_segment_sum_rounds_like_the_reference():
    data = np.random.default_rng(0).standard_normal((5000, 3)).astype(np.float32) * 1000
    ids = np.zeros(5000, np.int32)
    native = check_lowering("UnsortedSegmentSum", [data, ids], num_segments=1)[0]
    np.testing.assert_array_equal(native, reference_outputs(
        single_node("UnsortedSegmentSum", [data, ids], num_segments=1), [data, ids])[0])


def test_unsorted_segment_sum_id_too_big_is_an_error():
    data, ids = np.ones((3, 2), np.float32), np.array([0, 3, 1], np.int32)
    native, ref = _native_and_reference("UnsortedSegmentSum", [data, ids], num_segments=3)
    assert isinstance(native, InvalidArgumentError) and isinstance(ref, InvalidArgumentError)
    assert "num_segments" in str(native)


@SOME
@given(st.data())
def test_one_hot(data):
    shape = shape_of(data, max_rank=3)
    depth = data.draw(st.integers(0, 5))
    indices = rand(data, shape, [np.int8, np.int32, np.int64, np.uint8], low=-2, high=depth + 1)
    dtype = as_dtype(data.draw(st.sampled_from(NATIVE)))
    on, off = (data.draw(st.sampled_from([1.0, 0.0, -3.0, 2.5])) for _ in range(2))
    check_lowering("OneHot", [indices], depth=depth, on_value=on, off_value=off,
                   axis=data.draw(st.integers(-len(shape) - 1, len(shape))), dtype=dtype)


@FEW
@given(st.data())
def test_dynamic_update_row(data):
    shape = shape_of(data, min_rank=1, min_side=1)
    x = rand(data, shape)
    row = rand(data, shape[1:], [x.dtype])
    index = np.array(data.draw(st.integers(0, shape[0] - 1)),
                     data.draw(st.sampled_from([np.int32, np.int64])))
    check_lowering("DynamicUpdateRow", [x, index, row])


@pytest.mark.parametrize("index", [-1, 4])
def test_dynamic_update_row_out_of_range_is_an_error(index):
    x, row = np.zeros((4, 3), np.float64), np.ones(3, np.float64)
    native, ref = _native_and_reference("DynamicUpdateRow", [x, np.int32(index), row])
    assert isinstance(native, InvalidArgumentError) and isinstance(ref, InvalidArgumentError)
    assert "rows of the tensor" in str(native)


# ------------------------------------------------------------------------- creation

@FEW
@given(st.data())
def test_fill_zeros_ones(data):
    shape = shape_of(data)
    dtype = as_dtype(data.draw(st.sampled_from(NATIVE)))
    value = data.draw(st.sampled_from([0.0, 1.0, -1.0, 2.75, 300.0]))
    check_lowering("Fill", [], shape=shape, value=value, dtype=dtype)
    x = rand(data, shape)
    like_dtype = data.draw(st.sampled_from([None, dtype]))
    check_lowering("ZerosLike", [x], dtype=like_dtype)
    check_lowering("OnesLike", [x], dtype=like_dtype)


@SOME
@given(st.data())
def test_range(data):
    dtype = as_dtype(data.draw(st.sampled_from(NUMERIC)))
    start = float(data.draw(st.integers(-20, 20)))
    delta = data.draw(st.sampled_from([1.0, 2.0, -1.0, -3.0] + ([0.1, -0.7, 0.25]
                                                               if dtype.is_floating else [])))
    limit = start + delta * data.draw(st.integers(-2, 30)) + data.draw(st.sampled_from([0, 0.5]))
    check_lowering("Range", [], start=start, limit=limit, delta=delta, dtype=dtype)


@pytest.mark.parametrize("shape", [(), (0,), (2, 3), (1, 0, 5)])
@pytest.mark.parametrize("out_type", ["i32", "i64"])
def test_shape_and_size(shape, out_type):
    x = np.zeros(shape, np.int16)
    check_lowering("Shape", [x], out_type=as_dtype(out_type))
    check_lowering("Size", [x], out_type=as_dtype(out_type))


# ------------------------------------------------------------------ Select and Cast

@SOME
@given(st.data())
def test_select(data):
    out = shape_of(data)

    def operand_shape():
        lead = data.draw(st.integers(0, len(out)))
        return tuple(d if data.draw(st.booleans()) else 1 for d in out[lead:])
    cond = rand(data, operand_shape(), [np.bool_])
    x = rand(data, operand_shape())
    y = rand(data, operand_shape(), [x.dtype])
    check_lowering("Select", [cond, x, y])


SPECIALS = np.array([np.nan, np.inf, -np.inf, -0.0, 0.5, -0.5, 1.9, -1.9, 127.5, 255.9,
                     300.0, -300.0, 3e9, -3e9, 1e20])


@SOME
@given(st.data())
def test_cast(data):
    shape = shape_of(data, max_side=5)
    x = rand(data, shape)
    if x.dtype.kind == "f" and x.size:
        flat = x.reshape(-1)
        picks = np.random.default_rng(data.draw(st.integers(0, 99))).integers(0, len(SPECIALS),
                                                                            size=flat.size)
        flat[::2] = SPECIALS[picks[::2]].astype(x.dtype)
    dtype = as_dtype(data.draw(st.sampled_from(NATIVE)))
    check_lowering("Cast", [x], dtype=dtype)
