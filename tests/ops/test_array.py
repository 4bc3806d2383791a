"""Array ops (shape manipulation, slicing, gathering, creation) against NumPy: eager and
traced, random shapes with empty and size-1 dims, negative axes, unknown-dim inference
and error messages."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tests.helpers import check_against_numpy

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_, tw.bfloat16.np]
dtypes = st.sampled_from(DTYPES)
shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)
seeds = st.integers(0, 2**32 - 1)


def rand(seed, shape, dtype=np.float32):
    """A random array of `shape` and `dtype` (deterministic in `seed`)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        return rng.integers(-50, 50, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@st.composite
def arrays(draw, shape=shapes, dtype=dtypes):
    s = draw(shape) if isinstance(shape, st.SearchStrategy) else shape
    return rand(draw(seeds), s, draw(dtype))


def axis_of(rank, extra=0):
    """An axis in [-rank-extra, rank+extra-1], negative values included."""
    return st.integers(-rank - extra, rank + extra - 1)


def spec(shape, dtype=tw.float32):
    return tw.TensorSpec(shape, dtype)


def traced_types(fn, *specs):
    """Output types of `fn` traced with `specs` (dims may be None)."""
    graph = tw.compile(fn, input_signature=list(specs)).get_concrete_function().graph
    return [(r.type.dtype, r.type.shape) for r in graph.results]


# ------------------------------------------------------------------------------ reshape

@given(arrays(), st.data())
def test_reshape_matches_numpy(x, data):
    dims = list(data.draw(st.permutations(x.shape)))
    for _ in range(data.draw(st.integers(0, 2))):
        dims.insert(data.draw(st.integers(0, len(dims))), 1)
    if dims and x.size and data.draw(st.booleans()):
        dims[data.draw(st.integers(0, len(dims) - 1))] = -1
    check_against_numpy(lambda t: tw.reshape(t, dims), lambda a: a.reshape(dims), x)


def test_reshape_infers_minus_one_and_keeps_unknown_dims():
    assert traced_types(lambda t: tw.reshape(t, [-1]), spec([None, 3])) == [(tw.float32, (None,))]
    assert traced_types(lambda t: tw.reshape(t, [3, -1]), spec([None, 3])) == [(tw.float32, (3, None))]
    assert traced_types(lambda t: tw.reshape(t, [2, -1]), spec([4, 3])) == [(tw.float32, (2, 6))]
    assert traced_types(lambda t: tw.reshape(t, [-1, 3]), spec([None, 0])) == [(tw.float32, (0, 3))]


def test_reshape_to_runtime_shape_of_another_tensor_uses_reshape_like():
    @tw.compile(input_signature=[spec([None, 6]), spec([None, 2, 3])])
    def f(x, y):
        return tw.reshape(x, tw.shape(y))

    graph = f.get_concrete_function().graph
    assert [n.op for n in graph.nodes] == ["Shape", "ReshapeLike"]
    assert graph.results[0].type.shape == (None, 2, 3)
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    np.testing.assert_array_equal(f(x, np.zeros((2, 2, 3), np.float32)), x.reshape(2, 2, 3))
    with pytest.raises(tw.errors.InvalidArgumentError, match="ReshapeLike"):
        f(x, np.zeros((3, 2, 3), np.float32))


# ---------------------------------------------------------------- transpose / expand / squeeze

@given(arrays(), st.data())
def test_transpose_matches_numpy(x, data):
    perm = data.draw(st.permutations(range(x.ndim)))
    check_against_numpy(lambda t: tw.transpose(t, perm), lambda a: np.transpose(a, perm), x)
    check_against_numpy(lambda t: tw.transpose(t), lambda a: a.T, x)
    check_against_numpy(lambda t: t.T, lambda a: a.T, x)


@given(arrays(), st.data())
def test_expand_dims_matches_numpy(x, data):
    axis = data.draw(st.integers(-x.ndim - 1, x.ndim))
    check_against_numpy(lambda t: tw.expand_dims(t, axis), lambda a: np.expand_dims(a, axis), x)


@given(arrays(shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=2)), st.data())
def test_squeeze_matches_numpy(x, data):
    check_against_numpy(lambda t: tw.squeeze(t), np.squeeze, x)
    ones = [i for i, d in enumerate(x.shape) if d == 1]
    axes = data.draw(st.lists(st.sampled_from(ones), unique=True)) if ones else []
    axes = [a - x.ndim if data.draw(st.booleans()) else a for a in axes]
    # axis=[] means "every size-1 dim" in TensorFlow, as axis=None does
    check_against_numpy(lambda t: tw.squeeze(t, axes), lambda a: np.squeeze(a, tuple(axes) or None), x)


def test_squeeze_unknown_dims():
    assert traced_types(lambda t: tw.squeeze(t, [1]), spec([None, None, 3])) == [(tw.float32, (None, 3))]
    assert traced_types(lambda t: tw.squeeze(t, -2), spec([None, 1, 3])) == [(tw.float32, (None, 3))]
    with pytest.raises(tw.errors.ShapeError, match="explicit axes") as err:
        traced_types(lambda t: tw.squeeze(t), spec([None, 1]))
    assert "Squeeze" in str(err.value) and "test_array.py" in str(err.value)
    f = tw.compile(lambda t: tw.squeeze(t, 0), input_signature=[spec([None, 2])])
    assert f(np.ones((1, 2), np.float32)).shape == (2,)
    with pytest.raises(tw.errors.InvalidArgumentError, match="cannot squeeze dimension 0"):
        f(np.ones((3, 2), np.float32))


# ------------------------------------------------------------------- concat / stack / unstack

@given(shapes.filter(lambda s: len(s) > 0), dtypes, st.integers(1, 3), st.data())
def test_concat_matches_numpy(shape, dtype, n, data):
    axis = data.draw(axis_of(len(shape)))
    parts = []
    for _ in range(n):
        s = list(shape)
        s[axis] = data.draw(st.integers(0, 3))
        parts.append(rand(data.draw(seeds), tuple(s), dtype))
    check_against_numpy(lambda *ts: tw.concat(list(ts), axis), lambda *a: np.concatenate(a, axis),
                        *parts)


def test_concat_single_tensor_and_python_values():
    x = np.ones((2, 2), np.float32)
    check_against_numpy(lambda t: tw.concat(t, 0), lambda a: a, x)
    check_against_numpy(lambda t: tw.concat([t, [[5, 6]]], 0), lambda a: np.concatenate(
        [a, np.array([[5, 6]], np.float32)]), x)


@given(shapes, dtypes, st.integers(1, 3), st.data())
def test_stack_matches_numpy(shape, dtype, n, data):
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    parts = [rand(data.draw(seeds), shape, dtype) for _ in range(n)]
    check_against_numpy(lambda *ts: tw.stack(list(ts), axis), lambda *a: np.stack(a, axis), *parts)


@given(arrays(shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=4)), st.data())
def test_unstack_matches_numpy(x, data):
    axis = data.draw(axis_of(x.ndim))
    expected = lambda a: [np.take(a, i, axis) for i in range(a.shape[axis])]
    check_against_numpy(lambda t: tw.unstack(t, axis=axis), expected, x)


def test_stack_unstack_unknown_dims():
    assert traced_types(lambda t: tw.stack([t, t], axis=-1), spec([None, 3])) == \
        [(tw.float32, (None, 3, 2))]
    assert traced_types(lambda t: tw.unstack(t, axis=1), spec([None, 2])) == \
        [(tw.float32, (None,))] * 2
    assert traced_types(lambda t: tw.unstack(t, num=2), spec([None, 3])) == \
        [(tw.float32, (3,))] * 2
    with pytest.raises(tw.errors.ShapeError, match="pass num=") as err:
        traced_types(lambda t: tw.unstack(t), spec([None, 3]))
    assert "Unpack" in str(err.value) and "test_array.py" in str(err.value)
    f = tw.compile(lambda t: tw.unstack(t, num=2), input_signature=[spec([None, 3])])
    with pytest.raises(tw.errors.InvalidArgumentError, match="Unpack"):
        f(np.ones((3, 3), np.float32))


# ------------------------------------------------------------------------------- split

@given(shapes.filter(lambda s: len(s) > 0), dtypes, st.integers(1, 3), st.data())
def test_split_equal_parts_matches_numpy(shape, dtype, n, data):
    axis = data.draw(axis_of(len(shape)))
    s = list(shape)
    s[axis] = n * data.draw(st.integers(0, 2))
    x = rand(data.draw(seeds), tuple(s), dtype)
    check_against_numpy(lambda t: tw.split(t, n, axis), lambda a: np.split(a, n, axis), x)


@given(arrays(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5)), st.data())
def test_split_size_splits_matches_numpy(x, data):
    axis = data.draw(axis_of(x.ndim))
    dim = x.shape[axis]
    cuts = sorted(data.draw(st.lists(st.integers(0, dim), min_size=0, max_size=3)))
    sizes = list(np.diff([0, *cuts, dim]))
    if data.draw(st.booleans()):
        sizes[data.draw(st.integers(0, len(sizes) - 1))] = -1
    check_against_numpy(lambda t: tw.split(t, sizes, axis), lambda a: np.split(a, cuts, axis), x)


def test_split_unknown_dims():
    assert traced_types(lambda t: tw.split(t, 3, axis=1), spec([None, 3])) == \
        [(tw.float32, (None, 1))] * 3
    assert traced_types(lambda t: tw.split(t, [1, -1], axis=0), spec([None, 3])) == \
        [(tw.float32, (1, 3)), (tw.float32, (None, 3))]
    with pytest.raises(tw.errors.ShapeError, match="not divisible") as err:
        tw.split(np.zeros((5, 2), np.float32), 2)
    assert "Split" in str(err.value) and "test_array.py" in str(err.value)
    with pytest.raises(tw.errors.ShapeError, match="do not add up"):
        tw.split(np.zeros((5, 2), np.float32), [2, 2])


# -------------------------------------------------------------------- slice / strided slice

@given(arrays(), st.data())
def test_slice_matches_numpy(x, data):
    begin = [data.draw(st.integers(0, d)) for d in x.shape]
    size = [data.draw(st.integers(-1, d - b)) for d, b in zip(x.shape, begin)]
    index = tuple(slice(b, None if n == -1 else b + n) for b, n in zip(begin, size))
    check_against_numpy(lambda t: tw.slice(t, begin, size), lambda a: a[index], x)


def _slice_component(dim):
    bound = st.none() | st.integers(-dim - 2, dim + 2)
    sl = st.builds(slice, bound, bound, st.none() | st.integers(-3, 3).filter(bool))
    return sl if dim == 0 else st.integers(-dim, dim - 1) | sl


@st.composite
def index_keys(draw, shape):
    """A valid basic-indexing key for `shape`: ints, slices, None and at most one `...`."""
    rank = len(shape)
    k = draw(st.integers(0, rank))  # entries that consume a dimension
    ellipsis = draw(st.booleans())
    head = draw(st.integers(0, k)) if ellipsis else k
    dims = list(range(head)) + list(range(rank - (k - head), rank))
    items = [draw(_slice_component(shape[d])) for d in dims]
    if ellipsis:
        items.insert(head, Ellipsis)
    for _ in range(draw(st.integers(0, 2))):
        items.insert(draw(st.integers(0, len(items))), None)
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


@given(arrays(), st.data())
def test_getitem_matches_numpy_indexing(x, data):
    key = data.draw(index_keys(x.shape))
    check_against_numpy(lambda t: t[key], lambda a: a[key], x)


@given(arrays(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5)), st.data())
def test_strided_slice_with_negative_strides_matches_numpy(x, data):
    begin = [data.draw(st.integers(-d - 2, d + 2)) for d in x.shape]
    end = [data.draw(st.integers(-d - 2, d + 2)) for d in x.shape]
    strides = [data.draw(st.integers(-3, -1) | st.integers(1, 3)) for _ in x.shape]
    index = tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides))
    check_against_numpy(lambda t: tw.strided_slice(t, begin, end, strides), lambda a: a[index], x)


def test_strided_slice_masks_like_tensorflow():
    x = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    # begin_mask bit 0, end_mask bit 1, shrink bit 2: x[:, 1:, 2] ... with a new axis in front
    check_against_numpy(
        lambda t: tw.strided_slice(t, [0, 0, 1, 2], [0, 2, 0, 3], [1, -1, 1, 1], new_axis_mask=1,
                                   begin_mask=2, end_mask=4, shrink_axis_mask=8),
        lambda a: a[None, :2:-1, 1:, 2], x)
    check_against_numpy(lambda t: tw.strided_slice(t, [0, -1], [0, 0], [1, 1], ellipsis_mask=1,
                                                   shrink_axis_mask=2),
                        lambda a: a[..., -1], x)
    check_against_numpy(lambda t: t[::-1, ..., None, ::-2], lambda a: a[::-1, ..., None, ::-2], x)
    check_against_numpy(lambda t: t[()], lambda a: a[()], x)
    check_against_numpy(lambda t: t[-1, -1, -1], lambda a: a[-1, -1, -1], x)


def test_getitem_and_slice_unknown_dims():
    f = lambda t: (t[1:, ::2], t[0], t[..., 0], t[None, :, -1], t[:3], t[::-1])
    assert traced_types(f, spec([None, 3])) == [
        (tw.float32, (None, 2)), (tw.float32, (3,)), (tw.float32, (None,)),
        (tw.float32, (1, None)), (tw.float32, (None, 3)), (tw.float32, (None, 3))]
    assert traced_types(lambda t: tw.slice(t, [1, 0], [-1, 2]), spec([None, 3])) == \
        [(tw.float32, (None, 2))]
    g = tw.compile(f, input_signature=[spec([None, 3])])
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    for got, want in zip(g(x), f(x)):
        np.testing.assert_array_equal(got, np.asarray(want))
    with pytest.raises(tw.errors.InvalidArgumentError, match="out of bounds"):
        g(np.zeros((0, 3), np.float32))


def test_getitem_rejects_bad_keys():
    x = tw.constant(np.arange(6.0, dtype=np.float32))
    # one index array is NumPy's advanced indexing (tests/test_advanced_indexing.py); two
    # are not supported
    with pytest.raises(TypeError, match="tw.gather_nd"):
        x[tw.constant([0, 1]), [0, 1]]
    with pytest.raises(TypeError):
        x[1.5]
    with pytest.raises(ValueError, match="step"):
        x[::0]
    with pytest.raises(tw.errors.ShapeError, match="out of bounds") as err:
        x[6]
    assert "StridedSlice" in str(err.value) and "test_array.py" in str(err.value)
    with pytest.raises(tw.errors.ShapeError, match="too many indices"):
        x[0, 0]
    with pytest.raises(tw.errors.ShapeError, match="multiple ellipses"):
        x[..., ...]


# ------------------------------------------------------------------------------- pad

@given(arrays(), st.sampled_from(["CONSTANT", "REFLECT", "SYMMETRIC", "constant"]), st.data())
def test_pad_matches_numpy(x, mode, data):
    slack = {"REFLECT": 1, "SYMMETRIC": 0}.get(mode.upper())
    pads = []
    for d in x.shape:
        hi = 2 if slack is None else max(0, min(2, d - slack))
        pads.append([data.draw(st.integers(0, hi)), data.draw(st.integers(0, hi))])
    value = data.draw(st.integers(-3, 3))
    if mode.upper() == "CONSTANT":
        expected = lambda a: np.pad(a, pads, constant_values=np.asarray(value).astype(a.dtype)) \
            if a.ndim else a
        tw_fn = lambda t: tw.pad(t, pads, mode, constant_values=value)
    else:
        expected = lambda a: np.pad(a, pads, mode=mode.lower()) if a.ndim else a
        tw_fn = lambda t: tw.pad(t, pads, mode)
    check_against_numpy(tw_fn, expected, x)


def test_pad_unknown_dims_and_errors():
    assert traced_types(lambda t: tw.pad(t, [[1, 0], [1, 1]]), spec([None, 3])) == \
        [(tw.float32, (None, 5))]
    with pytest.raises(tw.errors.ShapeError, match="REFLECT") as err:
        tw.pad(np.zeros((2, 2), np.float32), [[0, 0], [2, 0]], "REFLECT")
    assert "Pad" in str(err.value) and "test_array.py" in str(err.value)
    f = tw.compile(lambda t: tw.pad(t, [[2, 0]], "REFLECT"), input_signature=[spec([None])])
    np.testing.assert_array_equal(f(np.arange(3, dtype=np.float32)), [2, 1, 0, 1, 2])
    with pytest.raises(tw.errors.InvalidArgumentError, match="REFLECT"):
        f(np.arange(2, dtype=np.float32))


# ------------------------------------------------------------------- tile / broadcast_to

@given(arrays(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)), st.data())
def test_tile_matches_numpy(x, data):
    multiples = [data.draw(st.integers(0, 3)) for _ in x.shape]
    check_against_numpy(lambda t: tw.tile(t, multiples), lambda a: np.tile(a, multiples), x)


@given(arrays(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)), st.data())
def test_broadcast_to_matches_numpy(x, data):
    target = [data.draw(st.integers(0, 3)) if d == 1 else d for d in x.shape]
    target = data.draw(st.lists(st.integers(0, 3), max_size=2)) + target
    check_against_numpy(lambda t: tw.broadcast_to(t, target),
                        lambda a: np.broadcast_to(a, target).copy(), x)


def test_tile_broadcast_unknown_dims():
    assert traced_types(lambda t: tw.tile(t, [2, 2]), spec([None, 3])) == [(tw.float32, (None, 6))]
    assert traced_types(lambda t: tw.tile(t, [0, 1]), spec([None, 3])) == [(tw.float32, (0, 3))]
    f = tw.compile(lambda t: tw.broadcast_to(t, [2, 4, 3]), input_signature=[spec([None, 3])])
    assert f.get_concrete_function().graph.results[0].type.shape == (2, 4, 3)
    assert f(np.ones((4, 3), np.float32)).shape == (2, 4, 3)
    with pytest.raises(tw.errors.InvalidArgumentError, match="cannot broadcast"):
        f(np.ones((2, 3), np.float32))
    with pytest.raises(tw.errors.ShapeError, match="cannot broadcast") as err:
        tw.broadcast_to(np.ones((2, 3), np.float32), [4, 3])
    assert "BroadcastTo" in str(err.value) and "test_array.py" in str(err.value)


# ------------------------------------------------------------------------------ gather

@given(arrays(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4)),
       hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3),
       st.sampled_from([np.int32, np.int64]), st.data())
def test_gather_matches_numpy(x, index_shape, index_dtype, data):
    axis = data.draw(axis_of(x.ndim))
    dim = x.shape[axis]
    assume(dim > 0 or 0 in index_shape)
    indices = np.random.default_rng(data.draw(seeds)).integers(0, max(dim, 1), index_shape)
    indices = indices.astype(index_dtype)
    check_against_numpy(lambda p, i: tw.gather(p, i, axis=axis),
                        lambda p, i: np.take(p, i, axis=axis), x, indices)


def test_gather_unknown_dims_and_out_of_range_index_at_run_time():
    assert traced_types(lambda p, i: tw.gather(p, i), spec([None, 3]), spec([2, 2], tw.int32)) == \
        [(tw.float32, (2, 2, 3))]
    assert traced_types(lambda p, i: tw.gather(p, i, axis=-1), spec([None, 3]),
                        spec([None], tw.int64)) == [(tw.float32, (None, None))]
    f = tw.compile(lambda p, i: tw.gather(p, i, axis=1),
                   input_signature=[spec([None, 3]), spec([None], tw.int32)])
    p = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(f(p, np.array([2, 0], np.int32)), p[:, [2, 0]])
    with pytest.raises(tw.errors.InvalidArgumentError) as err:
        f(p, np.array([0, 7], np.int32))
    msg = str(err.value)
    assert "Gather" in msg and "test_array.py" in msg and "indices[1] = 7" in msg and "[0, 3)" in msg
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"indices\[0\] = -1"):
        tw.gather(p, [-1])
    with pytest.raises(tw.errors.ShapeError, match="batch dim 0"):  # (2 rows, 1 index row)
        tw.gather(p, [[0]], axis=1, batch_dims=1)
    with pytest.raises(tw.errors.DTypeError, match="indices"):
        tw.gather(p, [0.5])


# ------------------------------------------------------------------------------ one_hot

def np_one_hot(indices, depth, on, off, axis, dtype):
    out = np.where(indices[..., None] == np.arange(depth), on, off).astype(dtype)
    return np.moveaxis(out, -1, axis)


@given(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3), st.integers(0, 4),
       st.sampled_from([np.int32, np.int64, np.uint8]), st.data())
def test_one_hot_matches_numpy(shape, depth, index_dtype, data):
    indices = np.random.default_rng(data.draw(seeds)).integers(-1, 6, shape)
    indices = np.where(indices < 0, 255, indices).astype(index_dtype) if index_dtype == np.uint8 \
        else indices.astype(index_dtype)
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    on, off = data.draw(st.integers(-3, 3)), data.draw(st.integers(-3, 3))
    dtype = data.draw(st.sampled_from([np.float32, np.int32, np.float64]))
    check_against_numpy(
        lambda i: tw.one_hot(i, depth, on_value=on, off_value=off, axis=axis, dtype=dtype),
        lambda i: np_one_hot(i, depth, on, off, axis, dtype), indices)


def test_one_hot_defaults_and_dtype_from_values():
    idx = np.array([0, 2, 5, -1], np.int32)
    check_against_numpy(lambda i: tw.one_hot(i, 3), lambda i: np_one_hot(i, 3, 1, 0, -1, np.float32),
                        idx)
    check_against_numpy(lambda i: tw.one_hot(i, 3, on_value=5, off_value=-1),
                        lambda i: np_one_hot(i, 3, 5, -1, -1, np.int32), idx)
    check_against_numpy(lambda i: tw.one_hot(i, 3, on_value=2.5),
                        lambda i: np_one_hot(i, 3, 2.5, 0, -1, np.float32), idx)
    assert traced_types(lambda i: tw.one_hot(i, 4, axis=0), spec([None], tw.int32)) == \
        [(tw.float32, (4, None))]


# ------------------------------------------------------------------------------ creation

@given(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3), dtypes)
def test_zeros_ones_fill_match_numpy(shape, dtype):
    d = tw.as_dtype(dtype)
    check_against_numpy(lambda: tw.zeros(shape, d), lambda: np.zeros(shape, dtype))
    check_against_numpy(lambda: tw.ones(shape, d), lambda: np.ones(shape, dtype))
    check_against_numpy(lambda: tw.fill(shape, np.asarray(3).astype(dtype)[()]),
                        lambda: np.full(shape, 3, dtype))


def test_fill_takes_the_value_dtype_and_broadcasts_computed_values():
    check_against_numpy(lambda: tw.fill([2, 2], 7), lambda: np.full((2, 2), 7, np.int32))
    check_against_numpy(lambda: tw.fill([3], 0.5), lambda: np.full(3, 0.5, np.float32))
    check_against_numpy(lambda: tw.fill([2], True), lambda: np.full(2, True))
    check_against_numpy(lambda: tw.fill(np.array([2, 1]), np.int64(-4)),
                        lambda: np.full((2, 1), -4, np.int64))
    check_against_numpy(lambda x: tw.fill([2, 3], x[0]), lambda a: np.full((2, 3), a[0]),
                        np.array([4.5], np.float32))


@given(arrays(), st.sampled_from([None, tw.float32, tw.int64, tw.bool]))
def test_zeros_like_ones_like_match_numpy(x, dtype):
    want = x.dtype if dtype is None else dtype.np
    check_against_numpy(lambda t: tw.zeros_like(t, dtype), lambda a: np.zeros(a.shape, want), x)
    check_against_numpy(lambda t: tw.ones_like(t, dtype), lambda a: np.ones(a.shape, want), x)


def test_zeros_ones_of_a_runtime_shape():
    f = lambda t: (tw.zeros(tw.shape(t)), tw.ones(tw.shape(t), tw.int32), tw.zeros_like(t))
    assert traced_types(f, spec([None, 3], tw.int64)) == [
        (tw.float32, (None, 3)), (tw.int32, (None, 3)), (tw.int64, (None, 3))]
    z, o, zl = tw.compile(f)(np.ones((2, 3), np.int64))
    np.testing.assert_array_equal(o, np.ones((2, 3), np.int32))
    assert z.dtype == np.float32 and zl.dtype == np.int64 and not z.any()


@given(st.integers(-10, 10), st.integers(-10, 10), st.integers(-3, 3).filter(bool))
def test_range_matches_numpy_for_ints(start, limit, delta):
    check_against_numpy(lambda: tw.range(start, limit, delta),
                        lambda: np.arange(start, limit, delta, dtype=np.int32))
    check_against_numpy(lambda: tw.range(start, limit, delta, dtype=tw.int64),
                        lambda: np.arange(start, limit, delta, dtype=np.int64))


@given(st.integers(-40, 40), st.integers(-40, 40), st.integers(-12, 12).filter(bool))
def test_range_matches_numpy_for_floats(start, limit, delta):
    start, limit, delta = start / 4, limit / 4, delta / 4
    check_against_numpy(lambda: tw.range(start, limit, delta),
                        lambda: np.arange(start, limit, delta).astype(np.float32))
    check_against_numpy(lambda: tw.range(start, limit, delta, dtype=tw.float64),
                        lambda: np.arange(start, limit, delta))


def test_range_single_argument_and_errors():
    check_against_numpy(lambda: tw.range(5), lambda: np.arange(5, dtype=np.int32))
    check_against_numpy(lambda: tw.range(3, dtype=tw.float32), lambda: np.arange(3.0, dtype=np.float32))
    check_against_numpy(lambda: tw.range(1, 2.0), lambda: np.arange(1, 2, dtype=np.float32))
    with pytest.raises(tw.errors.ShapeError, match="delta") as err:
        tw.range(0, 3, 0)
    assert "Range" in str(err.value) and "test_array.py" in str(err.value)


# ------------------------------------------------------------------------- shape queries

@given(arrays(), st.sampled_from([tw.int32, tw.int64]))
def test_shape_size_rank_identity(x, out_type):
    check_against_numpy(lambda t: tw.shape(t, out_type), lambda a: np.array(a.shape, out_type.np), x)
    check_against_numpy(lambda t: tw.size(t, out_type), lambda a: np.asarray(a.size, out_type.np), x)
    check_against_numpy(lambda t: tw.rank(t), lambda a: np.asarray(a.ndim, np.int32), x)
    check_against_numpy(lambda t: tw.identity(t), lambda a: a, x)


def test_shape_and_size_are_computed_at_run_time():
    f = lambda t: (tw.shape(t), tw.size(t), tw.rank(t))
    assert traced_types(f, spec([None, 3])) == [(tw.int32, (2,)), (tw.int32, ()), (tw.int32, ())]
    g = tw.compile(f, input_signature=[spec([None, 3])])
    shape, size, rank = g(np.zeros((4, 3), np.float32))
    np.testing.assert_array_equal(shape, [4, 3])
    assert size == 12 and rank == 2


def test_unknown_dims_through_many_ops():
    f = lambda t: (tw.transpose(t), tw.expand_dims(t, -1), tw.concat([t, t], 0),
                   tw.concat([t, t], -1), tw.stack([t, t]))
    assert traced_types(f, spec([None, 3])) == [
        (tw.float32, (3, None)), (tw.float32, (None, 3, 1)), (tw.float32, (None, 3)),
        (tw.float32, (None, 6)), (tw.float32, (2, None, 3))]
    g = lambda a, b: tw.concat([a, b], 0)
    assert traced_types(g, spec([None, 3]), spec([2, None])) == [(tw.float32, (None, 3))]


# -------------------------------------------------------------------------------- errors

def _assert_names_op_and_line(err, op):
    msg = str(err.value)
    assert op in msg and "test_array.py" in msg, msg


def test_reshape_errors_name_op_shapes_and_line():
    with pytest.raises(tw.errors.ShapeError, match=r"\[2,3\].*\[4, 2\]") as err:
        tw.reshape(np.zeros((2, 3), np.float32), [4, 2])
    _assert_names_op_and_line(err, "Reshape")
    with pytest.raises(tw.errors.ShapeError, match="not a multiple") as err:
        traced_types(lambda t: tw.reshape(t, [4]), spec([None, 3]))
    _assert_names_op_and_line(err, "Reshape")
    with pytest.raises(tw.errors.ShapeError, match="only one dimension may be -1"):
        tw.reshape(np.zeros(4, np.float32), [-1, -1])
    f = tw.compile(lambda t: tw.reshape(t, [2, -1]), input_signature=[spec([None, 3])])
    assert f(np.zeros((4, 3), np.float32)).shape == (2, 6)
    with pytest.raises(tw.errors.InvalidArgumentError, match="not a multiple") as err:
        f(np.zeros((3, 3), np.float32))
    _assert_names_op_and_line(err, "Reshape")


def test_concat_errors():
    a = np.zeros((2, 3), np.float32)
    with pytest.raises(tw.errors.ShapeError, match="same rank") as err:
        tw.concat([a, np.zeros(3, np.float32)], 0)
    _assert_names_op_and_line(err, "Concat")
    with pytest.raises(tw.errors.DTypeError, match="same dtype") as err:
        tw.concat([a, np.zeros((2, 3), np.int32)], 0)
    _assert_names_op_and_line(err, "Concat")
    with pytest.raises(tw.errors.ShapeError, match="dimension 1 differs") as err:
        tw.concat([a, np.zeros((2, 4), np.float32)], 0)
    _assert_names_op_and_line(err, "Concat")
    with pytest.raises(tw.errors.ShapeError, match="axis 2 is out of range"):
        tw.concat([a, a], 2)
    with pytest.raises(tw.errors.ShapeError, match="at least one"):
        tw.concat([], 0)
    f = tw.compile(lambda x, y: tw.concat([x, y], 0),
                   input_signature=[spec([None, None]), spec([None, 3])])
    with pytest.raises(tw.errors.InvalidArgumentError, match="dimension 1 differs"):
        f(np.zeros((1, 2), np.float32), np.zeros((1, 3), np.float32))


def test_transpose_and_other_attribute_errors():
    with pytest.raises(tw.errors.ShapeError, match="not a permutation") as err:
        tw.transpose(np.zeros((2, 3), np.float32), [0])
    _assert_names_op_and_line(err, "Transpose")
    with pytest.raises(tw.errors.ShapeError, match="axis 3 is out of range") as err:
        tw.expand_dims(np.zeros((2, 3), np.float32), 3)
    _assert_names_op_and_line(err, "ExpandDims")
    with pytest.raises(tw.errors.ShapeError, match="cannot squeeze dimension 0") as err:
        tw.squeeze(np.zeros((2, 3), np.float32), 0)
    _assert_names_op_and_line(err, "Squeeze")
    with pytest.raises(tw.errors.ShapeError, match="out of bounds") as err:
        tw.slice(np.zeros((2, 3), np.float32), [1, 0], [2, 3])
    _assert_names_op_and_line(err, "Slice")
    with pytest.raises(tw.errors.ShapeError, match="same shape") as err:
        tw.stack([np.zeros(2, np.float32), np.zeros(3, np.float32)])
    _assert_names_op_and_line(err, "Pack")
    with pytest.raises(tw.errors.ShapeError, match="multiples") as err:
        tw.tile(np.zeros((2, 3), np.float32), [2])
    _assert_names_op_and_line(err, "Tile")


def test_static_arguments_must_be_known_when_tracing():
    @tw.compile(input_signature=[spec([None, 3]), spec([2], tw.int32)])
    def f(x, s):
        return tw.reshape(x, s)

    with pytest.raises(TypeError, match="must be known when the graph is built"):
        f.get_concrete_function()
    h = tw.compile(lambda x: tw.reshape(x, [tw.shape(x)[0], -1]), input_signature=[spec([None, 3])])
    with pytest.raises(TypeError, match="tw.shape"):
        h.get_concrete_function()
    with pytest.raises(TypeError, match="must be known"):
        tw.compile(lambda x: tw.zeros([tw.size(x)]), input_signature=[spec([None])])(
            np.zeros(2, np.float32))
    # a constant tensor is fine: its value is known while tracing
    g = tw.compile(lambda x: tw.reshape(x, tw.constant([3, -1])))
    assert g(np.zeros((2, 3), np.float32)).shape == (3, 2)
    assert tw.reshape(np.arange(4), tw.constant([2, 2])).shape == (2, 2)


# --------------------------------------------------- gradient ops: segment sums, scatter

NUMERIC = [np.float32, np.float64, np.int32, np.int64, tw.bfloat16.np]


def _accumulator(dtype):
    """What the kernels accumulate sums of `dtype` in (float32 for half precision)."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype.itemsize < 4 and dtype.kind not in "iu" else dtype


def np_unsorted_segment_sum(data, ids, n):
    out = np.zeros((n,) + data.shape[ids.ndim:], _accumulator(data.dtype))
    keep = ids >= 0
    np.add.at(out, ids[keep], data[keep].astype(out.dtype))
    return out.astype(data.dtype)


@given(arrays(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
              dtype=st.sampled_from(NUMERIC)),
       st.integers(0, 4), st.sampled_from([np.int32, np.int64]), st.data())
def test_unsorted_segment_sum_matches_numpy(x, n, id_dtype, data):
    k = data.draw(st.integers(0, x.ndim))
    ids = np.random.default_rng(data.draw(seeds)).integers(-1, n, x.shape[:k]).astype(id_dtype)
    check_against_numpy(lambda d, i: tw.unsorted_segment_sum(d, i, n),
                        lambda d, i: np_unsorted_segment_sum(d, i, n), x, ids)


def test_unsorted_segment_sum_unknown_dims_and_errors():
    assert traced_types(lambda d, i: tw.unsorted_segment_sum(d, i, 5), spec([None, 3]),
                        spec([None], tw.int32)) == [(tw.float32, (5, 3))]
    d = np.arange(6, dtype=np.float32).reshape(3, 2)
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"segment_ids\[1\] = 4") as err:
        tw.unsorted_segment_sum(d, np.array([0, 4, 1]), 4)
    _assert_names_op_and_line(err, "UnsortedSegmentSum")
    with pytest.raises(tw.errors.ShapeError, match="prefix") as err:
        tw.unsorted_segment_sum(d, np.array([0, 1]), 4)
    _assert_names_op_and_line(err, "UnsortedSegmentSum")
    with pytest.raises(tw.errors.DTypeError, match="segment_ids"):
        tw.unsorted_segment_sum(d, np.array([0.0, 1.0, 2.0]), 4)
    with pytest.raises(tw.errors.ShapeError, match="num_segments"):
        tw.unsorted_segment_sum(d, np.array([0, 1, 2]), -1)


def _apply(op, inputs, **attrs):
    from tensorweave.frontend.building import apply_op, apply_op1
    return (apply_op if op == "SplitLike" else apply_op1)(op, inputs, attrs)


def _slice_attrs(x, key):
    """The StridedSlice attributes Python indexing with `key` maps to."""
    graph = tw.compile(lambda t: t[key]).get_concrete_function(x).graph
    (node,) = [n for n in graph.nodes if n.op == "StridedSlice"]
    return {k: v for k, v in node.attrs.items() if not k.startswith("_")}


@given(arrays(dtype=st.sampled_from([np.float32, np.int32])), st.data())
def test_strided_slice_grad_scatters_into_zeros(x, data):
    key = data.draw(index_keys(x.shape))
    attrs = _slice_attrs(x, key)
    dy = rand(data.draw(seeds), x[key].shape, np.float64)

    def expected(dy, like):
        out = np.zeros(like.shape, dy.dtype)
        out[key] = dy
        return out

    check_against_numpy(lambda d, like: _apply("StridedSliceGrad", [d, like], **attrs),
                        expected, dy, x)


def test_strided_slice_grad_unknown_dims_and_errors():
    x = np.zeros((4, 3), np.float32)
    attrs = _slice_attrs(x, (slice(1, None, 2), 0))
    assert traced_types(lambda d, like: _apply("StridedSliceGrad", [d, like], **attrs),
                        spec([None]), spec([None, 3], tw.int32)) == [(tw.float32, (None, 3))]
    with pytest.raises(tw.errors.ShapeError, match="does not have the shape") as err:
        _apply("StridedSliceGrad", [np.zeros(3, np.float32), x], **attrs)
    _assert_names_op_and_line(err, "StridedSliceGrad")
    f = tw.compile(lambda d, like: _apply("StridedSliceGrad", [d, like], **attrs),
                   input_signature=[spec([None]), spec([None, 3])])
    np.testing.assert_array_equal(f(np.array([1.0, 2.0], np.float32), x)[:, 0], [0, 1, 0, 2])
    with pytest.raises(tw.errors.InvalidArgumentError, match="does not have the shape"):
        f(np.ones(3, np.float32), x)


def np_pad_grad(g, pads, mode):
    """The adjoint of np.pad: every padded element adds to the input element it copies."""
    if g.ndim == 0:
        return g.copy()
    shape = tuple(n - b - a for n, (b, a) in zip(g.shape, pads))
    index = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    if mode == "CONSTANT":
        source = np.pad(index, pads, constant_values=-1)
    else:
        source = np.pad(index, pads, mode=mode.lower())
    out = np.zeros(index.size, _accumulator(g.dtype))
    keep = source >= 0
    np.add.at(out, source[keep], g[keep].astype(out.dtype))
    return out.reshape(shape).astype(g.dtype)


@given(arrays(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
              dtype=st.sampled_from([np.float32, np.float64, np.int32])),
       st.sampled_from(["CONSTANT", "REFLECT", "SYMMETRIC"]), st.data())
def test_pad_grad_is_the_adjoint_of_pad(x, mode, data):
    slack = {"REFLECT": 1, "SYMMETRIC": 0}.get(mode)
    pads = []
    for d in x.shape:
        hi = 2 if slack is None else max(0, min(2, d - slack))
        pads.append((data.draw(st.integers(0, hi)), data.draw(st.integers(0, hi))))
    g = rand(data.draw(seeds), [d + b + a for d, (b, a) in zip(x.shape, pads)], x.dtype)
    flat = [p for pair in pads for p in pair]
    check_against_numpy(lambda t: _apply("PadGrad", [t], paddings=flat, mode=mode),
                        lambda t: np_pad_grad(t, pads, mode), g)


def test_pad_grad_unknown_dims_and_errors():
    assert traced_types(lambda t: _apply("PadGrad", [t], paddings=[1, 2, 0, 0], mode="REFLECT"),
                        spec([None, 3])) == [(tw.float32, (None, 3))]
    with pytest.raises(tw.errors.ShapeError, match="cannot be the result of REFLECT") as err:
        _apply("PadGrad", [np.zeros((4,), np.float32)], paddings=[2, 0], mode="REFLECT")
    _assert_names_op_and_line(err, "PadGrad")
    with pytest.raises(tw.errors.ShapeError, match="cannot be the result"):
        _apply("PadGrad", [np.zeros((2,), np.float32)], paddings=[2, 1], mode="CONSTANT")


@given(arrays(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5)), st.data())
def test_split_like_matches_numpy(x, data):
    axis = data.draw(axis_of(x.ndim))
    cuts = sorted(data.draw(st.lists(st.integers(0, x.shape[axis]), min_size=0, max_size=3)))
    bounds = [0, *cuts, x.shape[axis]]
    likes = []
    for lo, hi in zip(bounds, bounds[1:]):
        shape = list(x.shape)
        shape[axis] = hi - lo
        likes.append(np.zeros(shape, np.int32))
    check_against_numpy(lambda t, *ls: tuple(_apply("SplitLike", [t, *ls], axis=axis)),
                        lambda t, *ls: tuple(np.split(t, cuts, axis=axis)), x, *likes)


def test_split_like_unknown_dims_and_errors():
    sig = [spec([None, 3]), spec([None, 3]), spec([None, 1])]
    assert traced_types(lambda t, a, b: tuple(_apply("SplitLike", [t, a, b], axis=0)), *sig) == \
        [(tw.float32, (None, 3)), (tw.float32, (None, 3))]
    f = tw.compile(lambda t, a, b: tuple(_apply("SplitLike", [t, a, b], axis=0)),
                   input_signature=sig)
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    top, bottom = f(x, np.zeros((2, 3), np.float32), np.zeros((3, 1), np.float32))
    np.testing.assert_array_equal(top, x[:2])
    np.testing.assert_array_equal(bottom, x[2:])
    with pytest.raises(tw.errors.InvalidArgumentError, match="do not add up"):
        f(x, np.zeros((2, 3), np.float32), np.zeros((2, 1), np.float32))
    with pytest.raises(tw.errors.ShapeError, match="do not add up") as err:
        _apply("SplitLike", [x, np.zeros((1, 3), np.float32)], axis=0)
    _assert_names_op_and_line(err, "SplitLike")
