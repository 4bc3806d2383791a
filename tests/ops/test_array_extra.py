"""Issue 14's array ops against NumPy (eager, traced on the reference and cpu targets, and
across devices): sort/argsort, gather_nd, scatter_nd, tensor_scatter_nd_*, boolean_mask,
eye, linspace, meshgrid, sequence_mask, reverse, roll, searchsorted and the
unsorted_segment_* reductions; random shapes with empty dims, ties, repeated indices;
inference with unknown dims; out-of-range indices and bad arguments."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tests.helpers import TARGETS, assert_same, check_against_numpy
from tests.ops.test_array import rand, seeds, spec, traced_types

# every example compiles on the cpu target too: few examples, small shapes (and fewer
# still where the loaded profile asks for fewer, as the gpu simulator's op suite does)
few = settings(max_examples=min(15, settings.default.max_examples))
shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4)
INDEX_DTYPES = st.sampled_from([np.int32, np.int64])
SORTABLE = st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.float16,
                            tw.bfloat16.np, np.uint8])


def with_ties(seed, shape, dtype):
    """Random small integers (exact in every dtype) with many repeats, so stability
    matters."""
    values = (rand(seed, shape, np.float64) * 2).round()
    return (values + 8 if np.dtype(dtype).kind == "u" else values).astype(dtype)


def traced_on_targets(fn, specs, *arrays):
    """`fn` traced with `specs` (dims may be None) on every target, run on `arrays`."""
    return [tw.compile(fn, input_signature=list(specs), target=t)(*arrays) for t in TARGETS]


# ---------------------------------------------------------------------------- sorting

def np_argsort(x, axis, descending):
    """Stable argsort; descending sorts the negated values (exact for these inputs)."""
    key = -x.astype(np.float64) if descending else x
    return np.argsort(key, axis=axis, kind="stable").astype(np.int32)


@few
@given(shapes, SORTABLE, st.booleans(), st.data())
def test_sort_and_argsort_match_numpy(shape, dtype, descending, data):
    x = with_ties(data.draw(seeds), shape, dtype)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    direction = "DESCENDING" if descending else "ASCENDING"
    check_against_numpy(
        lambda v: (tw.sort(v, axis=axis, direction=direction),
                   tw.argsort(v, axis=axis, direction=direction, stable=True)),
        lambda v: (np.take_along_axis(v, np_argsort(v, axis, descending), axis),
                   np_argsort(v, axis, descending)), x)


def test_sort_examples_and_errors():
    np.testing.assert_array_equal(tw.sort([1, 10, 26.9, 2.8, 166.32, 62.3]).numpy(),
                                  np.float32([1, 2.8, 10, 26.9, 62.3, 166.32]))
    # ties keep index order in both directions
    assert tw.argsort([3, 1, 3, 1], direction="DESCENDING").numpy().tolist() == [0, 2, 1, 3]
    assert tw.argsort([3, 1, 3, 1]).numpy().tolist() == [1, 3, 0, 2]
    assert traced_types(lambda v: tw.sort(v), spec([None, 3])) == [(tw.float32, (None, 3))]
    assert traced_types(lambda v: tw.argsort(v, 0), spec([None, 3])) == [(tw.int32, (None, 3))]
    x = np.float32([[3, 1, 2], [0, 5, 4]])
    for got in traced_on_targets(lambda v: tw.sort(v, axis=0, direction="DESCENDING"),
                                 [spec([None, None])], x):
        assert_same(got, np.float32([[3, 5, 4], [0, 1, 2]]))
    with pytest.raises(tw.errors.ShapeError, match="DESCENDING") as err:
        tw.sort([1.0], direction="descending")
    assert "ArgSort" in str(err.value) and "test_array_extra.py" in str(err.value)
    with pytest.raises(tw.errors.ShapeError, match="rank >= 1"):
        tw.argsort(1.0)
    with pytest.raises(tw.errors.ShapeError, match="axis 2 is out of range"):
        tw.sort([[1.0]], axis=2)
    with pytest.raises(tw.errors.DTypeError, match="numeric"):
        tw.sort([True, False])


# ----------------------------------------------------------------- gather/scatter nd

@st.composite
def nd_case(draw, max_batch=1):
    """params shape, batch_dims, index depth and the shape of the index grid."""
    batch_dims = draw(st.integers(0, max_batch))
    shape = draw(hnp.array_shapes(min_dims=batch_dims + 1, max_dims=batch_dims + 3,
                                  min_side=0, max_side=3))
    depth = draw(st.integers(0 if batch_dims or len(shape) > 1 else 1,
                             len(shape) - batch_dims))
    grid = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    return tuple(shape), batch_dims, depth, tuple(grid)


def random_indices(seed, shape, batch_dims, depth, grid, dtype):
    """Valid coordinates (repeats likely) for `shape`; `grid` must be empty when a dim
    they index is 0."""
    rng = np.random.default_rng(seed)
    batch = shape[:batch_dims]
    dims = shape[batch_dims:batch_dims + depth]
    out = np.stack([rng.integers(0, max(d, 1), batch + grid) for d in dims], -1) if depth \
        else np.zeros(batch + grid + (0,), np.int64)
    return out.astype(dtype)


def np_gather_nd(params, indices, batch_dims):
    batch = params.shape[:batch_dims]
    out = np.empty(indices.shape[:-1] + params.shape[batch_dims + indices.shape[-1]:],
                   params.dtype)
    for pos in np.ndindex(indices.shape[:-1]):
        out[pos] = params[pos[:batch_dims] + tuple(indices[pos])]
    assert out.shape[:batch_dims] == batch
    return out


@few
@given(nd_case(), INDEX_DTYPES, st.data())
def test_gather_nd_matches_numpy(case, index_dtype, data):
    shape, b, depth, grid = case
    if 0 in shape[b:b + depth] and 0 not in grid:
        grid = (0,)  # no valid coordinate to pick
    x = rand(data.draw(seeds), shape, data.draw(st.sampled_from([np.float32, np.int64,
                                                                 np.bool_])))
    i = random_indices(data.draw(seeds), shape, b, depth, grid, index_dtype)
    check_against_numpy(lambda p, k: tw.gather_nd(p, k, batch_dims=b),
                        lambda p, k: np_gather_nd(p, k, b), x, i)


def np_scatter(tensor, indices, updates, mode):
    out = tensor.copy()
    for pos in np.ndindex(indices.shape[:-1]):
        at = tuple(indices[pos])
        if mode == "update":
            out[at] = updates[pos]
        elif mode == "add":
            out[at] = out[at] + updates[pos]
        elif mode == "sub":
            out[at] = out[at] - updates[pos]
        else:
            out[at] = (np.maximum if mode == "max" else np.minimum)(out[at], updates[pos])
    return out


SCATTERS = {"update": tw.tensor_scatter_nd_update, "add": tw.tensor_scatter_nd_add,
            "sub": tw.tensor_scatter_nd_sub, "max": tw.tensor_scatter_nd_max,
            "min": tw.tensor_scatter_nd_min}


@few
@given(nd_case(max_batch=0), INDEX_DTYPES, st.sampled_from(sorted(SCATTERS)),
       st.sampled_from([np.float32, np.float64, np.int32]), st.data())
def test_tensor_scatter_nd_matches_numpy(case, index_dtype, mode, dtype, data):
    shape, _, depth, grid = case
    if 0 in shape[:depth] and 0 not in grid:
        grid = (0,)
    x = rand(data.draw(seeds), shape, dtype)
    i = random_indices(data.draw(seeds), shape, 0, depth, grid, index_dtype)
    u = rand(data.draw(seeds), i.shape[:-1] + shape[depth:], dtype)
    check_against_numpy(lambda t, k, v: SCATTERS[mode](t, k, v),
                        lambda t, k, v: np_scatter(t, k, v, mode), x, i, u)


@few
@given(nd_case(max_batch=0), INDEX_DTYPES, st.data())
def test_scatter_nd_adds_repeated_indices(case, index_dtype, data):
    shape, _, depth, grid = case
    if 0 in shape[:depth] and 0 not in grid:
        grid = (0,)
    i = random_indices(data.draw(seeds), shape, 0, depth, grid, index_dtype)
    u = rand(data.draw(seeds), i.shape[:-1] + shape[depth:], np.float64)
    check_against_numpy(lambda k, v: tw.scatter_nd(k, v, shape),
                        lambda k, v: np_scatter(np.zeros(shape), k, v, "add"), i, u)


def test_nd_examples_types_and_errors():
    # TensorFlow's examples
    assert tw.gather_nd([[1, 2], [3, 4]], [[1, 0], [0, 1]]).numpy().tolist() == [3, 2]
    np.testing.assert_array_equal(
        tw.scatter_nd([[4], [3], [1], [7]], [9, 10, 11, 12], [8]).numpy(),
        [0, 11, 0, 10, 9, 0, 0, 12])
    assert tw.tensor_scatter_nd_update([1, 2, 3], [[1], [1]], [7, 8]).numpy().tolist() == \
        [1, 8, 3]  # the last of repeated indices wins
    assert traced_types(lambda p, i: tw.gather_nd(p, i), spec([None, 4, 5]),
                        spec([None, 7, 2], tw.int32)) == [(tw.float32, (None, 7, 5))]
    assert traced_types(lambda p, i: tw.gather_nd(p, i, batch_dims=1), spec([None, 4, 5]),
                        spec([3, 1], tw.int64)) == [(tw.float32, (3, 5))]
    assert traced_types(lambda i, u: tw.scatter_nd(i, u, [6, 2]), spec([None, 1], tw.int32),
                        spec([None, 2])) == [(tw.float32, (6, 2))]
    with pytest.raises(tw.errors.ShapeError, match="last dim of indices"):
        traced_types(lambda p, i: tw.gather_nd(p, i), spec([3, 4]), spec([2, None], tw.int32))
    with pytest.raises(tw.errors.ShapeError, match="3 coordinates"):
        tw.gather_nd(np.zeros((2, 2)), [[0, 0, 0]])
    with pytest.raises(tw.errors.ShapeError, match=r"updates \(f32\[3\]\) must have shape"):
        tw.tensor_scatter_nd_add(np.zeros((4, 2), np.float32), [[0], [1], [2]],
                                 np.ones(3, np.float32))
    with pytest.raises(tw.errors.DTypeError, match="indices"):
        tw.gather_nd([1.0, 2.0], [[0.0]])
    with pytest.raises(tw.errors.DTypeError, match="same dtype"):
        tw.tensor_scatter_nd_add(np.zeros(2, np.float32), [[0]], np.ones(1, np.float64))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("bad", [5, -1])
def test_out_of_range_indices_name_the_op_and_the_index(target, bad):
    cases = [
        ("GatherNd", lambda p, i: tw.gather_nd(p, i), f"indices[1] = [0, {bad}] does not "
                                                      f"index into param shape [3,4]"),
        ("TensorScatterUpdate", lambda p, i: tw.tensor_scatter_nd_update(p, i, [1.0, 2.0]),
         f"indices[1] = [0, {bad}] does not index into tensor shape [3,4]"),
        ("ScatterNd", lambda p, i: tw.scatter_nd(i, [1.0, 2.0], [3, 4]),
         f"indices[1] = [0, {bad}] does not index into tensor shape [3,4]"),
    ]
    for op, fn, message in cases:
        f = tw.compile(fn, target=target)
        with pytest.raises(tw.errors.InvalidArgumentError) as err:
            f(np.zeros((3, 4), np.float32), np.array([[0, 0], [0, bad]], np.int32))
        msg = str(err.value)
        assert op in msg and message in msg and "test_array_extra.py" in msg, msg


# ---------------------------------------------------------------------- boolean_mask

@few
@given(shapes, st.sampled_from([np.float32, np.int32, np.bool_]), st.data())
def test_boolean_mask_matches_numpy(shape, dtype, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    k = data.draw(st.integers(1, len(shape) - axis))
    x = rand(data.draw(seeds), shape, dtype)
    mask = rand(data.draw(seeds), shape[axis:axis + k], np.bool_)
    check_against_numpy(lambda t, mk: tw.boolean_mask(t, mk, axis=axis),
                        lambda t, mk: t[(slice(None),) * axis + (mk,)], x, mask)


def test_boolean_mask_types_and_errors():
    assert tw.boolean_mask([0, 1, 2, 3], [True, False, True, False]).numpy().tolist() == [0, 2]
    assert tw.boolean_mask(np.ones((2, 3, 4)), [True, False, True, True], axis=-1).shape == \
        (2, 3, 3)
    assert traced_types(lambda t, mk: tw.boolean_mask(t, mk, axis=1), spec([2, None, 3, 5]),
                        spec([4, None], tw.bool_)) == [(tw.float32, (2, None, 5))]
    assert traced_types(lambda t, mk: tw.boolean_mask(t, mk), spec([0, 3]),
                        spec([0], tw.bool_)) == [(tw.float32, (0, 3))]
    with pytest.raises(tw.errors.ShapeError, match="must have the shape of dims 0 to 0"):
        tw.boolean_mask([1, 2, 3], [True, False])
    with pytest.raises(tw.errors.ShapeError, match="scalar mask"):
        tw.boolean_mask([1, 2, 3], True)
    with pytest.raises(tw.errors.DTypeError, match="mask has dtype i32"):
        tw.boolean_mask([1, 2, 3], [1, 0, 1])
    # the masked dim is data-dependent: the cpu target runs it on the dataflow executor
    got = traced_on_targets(lambda t, mk: tw.boolean_mask(t, mk) * 2.0,
                            [spec([None, 2]), spec([None], tw.bool_)],
                            np.arange(6, dtype=np.float32).reshape(3, 2),
                            np.array([True, False, True]))
    for g in got:
        assert_same(g, np.float32([[0, 2], [8, 10]]))
    f = tw.compile(lambda t, mk: tw.boolean_mask(t, mk),
                   input_signature=[spec([None]), spec([None], tw.bool_)])
    with pytest.raises(tw.errors.InvalidArgumentError, match="BooleanMask"):
        f(np.zeros(3, np.float32), np.array([True, False]))


# -------------------------------------------------------------------------- creation

@few
@given(st.integers(0, 4), st.none() | st.integers(0, 4),
       st.sampled_from([None, [2], [0, 3], [2, 1]]),
       st.sampled_from([tw.float32, tw.int32, tw.bool_, tw.float64]))
def test_eye_matches_numpy(rows, cols, batch, dtype):
    want = np.eye(rows, cols, dtype=dtype.np)
    if batch:
        want = np.broadcast_to(want, batch + list(want.shape))
    check_against_numpy(lambda: tw.eye(rows, cols, batch_shape=batch, dtype=dtype),
                        lambda: want)


def test_eye_errors():
    with pytest.raises(tw.errors.ShapeError, match=">= 0") as err:
        tw.eye(-1)
    assert "Eye" in str(err.value) and "test_array_extra.py" in str(err.value)


@few
@given(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3),
       st.sampled_from([np.float32, np.float64]), st.integers(0, 6), st.data())
def test_linspace_matches_numpy(shape, dtype, num, data):
    start = rand(data.draw(seeds), shape, dtype)
    stop = rand(data.draw(seeds), shape[1:], dtype)  # broadcasts against start
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    check_against_numpy(lambda a, b: tw.linspace(a, b, num, axis=axis),
                        lambda a, b: np.linspace(a, b, num, axis=axis, dtype=dtype), start, stop,
                        rtol=1e-5, atol=1e-5)


def test_linspace_examples_and_errors():
    np.testing.assert_allclose(tw.linspace(10.0, 12.0, 3).numpy(), [10.0, 11.0, 12.0])
    assert tw.linspace(1.0, 7.0, 1).numpy().tolist() == [1.0]
    got = tw.linspace([0.0, 5.0], [10.0, 10.0], 5, axis=-1).numpy()
    np.testing.assert_allclose(got, [[0, 2.5, 5, 7.5, 10], [5, 6.25, 7.5, 8.75, 10]])
    with pytest.raises(tw.errors.ShapeError, match="floating point"):
        tw.linspace(1, 2, 3)
    with pytest.raises(tw.errors.ShapeError, match="num must be"):
        tw.linspace(1.0, 2.0, -1)


@few
@given(st.lists(st.integers(0, 3), min_size=1, max_size=3), st.sampled_from(["xy", "ij"]),
       st.sampled_from([np.float32, np.int32, np.bool_]), st.data())
def test_meshgrid_matches_numpy(sizes, indexing, dtype, data):
    xs = [rand(data.draw(seeds), (n,), dtype) for n in sizes]
    check_against_numpy(lambda *ts: tw.meshgrid(*ts, indexing=indexing),
                        lambda *arrays: np.meshgrid(*arrays, indexing=indexing), *xs)


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid_with_unknown_sizes(indexing):
    x, y = np.arange(3, dtype=np.float32), np.arange(2, dtype=np.float32)
    specs = [spec([None]), spec([None])]
    for got in traced_on_targets(lambda a, b: tw.meshgrid(a, b, indexing=indexing), specs, x, y):
        for g, w in zip(got, np.meshgrid(x, y, indexing=indexing)):
            assert_same(g, w)
    b = np.array([True, False])
    (bx, by) = tw.compile(lambda a, c: tw.meshgrid(a, c),
                          input_signature=[tw.TensorSpec([None], tw.bool_)] * 2)(b, b[::-1])
    for g, w in zip((bx, by), np.meshgrid(b, b[::-1])):
        assert_same(g, w)
    with pytest.raises(tw.errors.ShapeError, match="indexing"):
        tw.meshgrid(x, indexing="xz")


@few
@given(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3), INDEX_DTYPES,
       st.none() | st.integers(0, 5), st.sampled_from([tw.bool_, tw.float32, tw.int32]),
       st.data())
def test_sequence_mask_matches_numpy(shape, index_dtype, maxlen, dtype, data):
    lengths = np.random.default_rng(data.draw(seeds)).integers(-1, 6, shape).astype(index_dtype)
    n = maxlen if maxlen is not None else max(int(lengths.max(initial=0)), 0)
    check_against_numpy(lambda v: tw.sequence_mask(v, maxlen, dtype=dtype),
                        lambda v: (np.arange(n) < v[..., None]).astype(dtype.np), lengths)


def test_sequence_mask_types_and_errors():
    assert tw.sequence_mask([1, 3, 2], 5).numpy().tolist() == [
        [True, False, False, False, False], [True, True, True, False, False],
        [True, True, False, False, False]]
    assert traced_types(lambda v: tw.sequence_mask(v), spec([None, 2], tw.int32)) == \
        [(tw.bool_, (None, 2, None))]
    assert traced_types(lambda v: tw.sequence_mask(v, 4, tw.float32), spec([None], tw.int64)) \
        == [(tw.float32, (None, 4))]
    with pytest.raises(tw.errors.DTypeError, match="lengths"):
        tw.sequence_mask([1.0, 2.0], 3)
    with pytest.raises(tw.errors.ShapeError, match="maxlen"):
        tw.sequence_mask([1, 2], -2)


# ---------------------------------------------------------------- reverse and roll

@few
@given(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
       st.sampled_from([np.float32, np.int64, np.bool_]), st.data())
def test_reverse_matches_numpy(shape, dtype, data):
    x = rand(data.draw(seeds), shape, dtype)
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True)) if shape else []
    axes = [a - len(shape) if data.draw(st.booleans()) else a for a in axes]
    check_against_numpy(lambda t: tw.reverse(t, axes), lambda t: np.flip(t, axes), x)


def test_reverse_errors():
    with pytest.raises(tw.errors.ShapeError, match="twice") as err:
        tw.reverse(np.zeros((2, 3)), [1, -1])
    assert "ReverseV2" in str(err.value) and "test_array_extra.py" in str(err.value)
    with pytest.raises(tw.errors.ShapeError, match="axis 2 is out of range"):
        tw.reverse(np.zeros((2, 3)), [2])


@few
@given(shapes, st.sampled_from([np.float32, np.int32, np.bool_]), st.data())
def test_roll_matches_numpy(shape, dtype, data):
    x = rand(data.draw(seeds), shape, dtype)
    k = data.draw(st.integers(1, 3))
    axes = [data.draw(st.integers(-len(shape), len(shape) - 1)) for _ in range(k)]
    shifts = [data.draw(st.integers(-9, 9)) for _ in range(k)]
    if k == 1 and data.draw(st.booleans()):
        axes, shifts = axes[0], shifts[0]  # scalars
    check_against_numpy(lambda t: tw.roll(t, shifts, axes), lambda t: np.roll(t, shifts, axes),
                        x)


def test_roll_with_unknown_dims_uses_the_roll_op():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    fn = lambda t: tw.roll(t, [1, -5, 2], [1, 0, 1])  # noqa: E731
    graph = tw.compile(fn, input_signature=[spec([None, None])]).get_concrete_function().graph
    assert [n.op for n in graph.nodes] == ["Roll"]
    for got in traced_on_targets(fn, [spec([None, None])], x):
        assert_same(got, np.roll(x, [1, -5, 2], [1, 0, 1]))
    assert_same(tw.roll(np.zeros((0, 2)), 3, 0).numpy(), np.zeros((0, 2)))
    with pytest.raises(tw.errors.ShapeError, match="same length") as err:
        tw.roll(x, [1, 2], [0])
    assert "Roll" in str(err.value)


# ---------------------------------------------------------------------- searchsorted

@few
@given(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3),
       st.integers(0, 5), st.integers(0, 5), st.sampled_from(["left", "right"]),
       st.sampled_from([np.float32, np.int32]), INDEX_DTYPES, st.data())
def test_searchsorted_matches_numpy(batch, n, k, side, dtype, out_type, data):
    seq = np.sort(with_ties(data.draw(seeds), batch + (n,), dtype), axis=-1)
    vals = with_ties(data.draw(seeds), batch + (k,), dtype)

    def np_search(s, v):
        out = np.zeros(v.shape, out_type)
        for pos in np.ndindex(batch):
            out[pos] = np.searchsorted(s[pos], v[pos], side=side)
        return out

    check_against_numpy(lambda s, v: tw.searchsorted(s, v, side=side, out_type=out_type),
                        np_search, seq, vals)


def test_searchsorted_errors():
    assert tw.searchsorted([[0, 3, 9, 9, 10], [1, 2, 3, 4, 5]],
                           [[2, 4, 9], [0, 2, 6]]).numpy().tolist() == [[1, 2, 2], [0, 1, 5]]
    with pytest.raises(tw.errors.ShapeError, match="side"):
        tw.searchsorted([1, 2], [1], side="middle")
    with pytest.raises(tw.errors.ShapeError, match="leading"):
        tw.searchsorted([[1, 2]], [[1], [2]])
    with pytest.raises(tw.errors.ShapeError, match="same rank"):
        tw.searchsorted([1, 2], 1)


# ------------------------------------------------------------------ segment reductions

SEGMENTS = {
    "max": (tw.math.unsorted_segment_max, np.maximum, lambda d: (
        np.finfo(d).min if np.dtype(d).kind == "f" else np.iinfo(d).min)),
    "min": (tw.math.unsorted_segment_min, np.minimum, lambda d: (
        np.finfo(d).max if np.dtype(d).kind == "f" else np.iinfo(d).max)),
    "prod": (tw.math.unsorted_segment_prod, np.multiply, lambda d: 1),
}


def np_segment(data, ids, n, how):
    """Segment reductions one slice at a time, with TensorFlow's empty-segment values."""
    rest = data.shape[ids.ndim:]
    if how in ("mean", "sqrt_n"):
        total = np.zeros((n,) + rest, data.dtype)
        count = np.zeros(n)
        for pos in np.ndindex(ids.shape):
            if ids[pos] >= 0:
                total[ids[pos]] += data[pos]
                count[ids[pos]] += 1
        div = np.maximum(count, 1) if how == "mean" else np.sqrt(np.maximum(count, 1))
        return (total / div.reshape((n,) + (1,) * len(rest))).astype(data.dtype)
    _, ufunc, empty = SEGMENTS[how]
    out = np.full((n,) + rest, empty(data.dtype), data.dtype)
    for pos in np.ndindex(ids.shape):
        if ids[pos] >= 0:
            out[ids[pos]] = ufunc(out[ids[pos]], data[pos])
    return out


@few
@given(shapes, st.integers(0, 4), st.sampled_from(["max", "min", "prod", "mean", "sqrt_n"]),
       st.sampled_from([np.float32, np.float64, np.int32, np.float16, np.int64]), INDEX_DTYPES,
       st.data())
def test_unsorted_segment_reductions_match_numpy(shape, n, how, dtype, index_dtype, data):
    if how in ("mean", "sqrt_n") and np.dtype(dtype).kind == "i":
        dtype = np.float64
    k = data.draw(st.integers(0, len(shape)))
    x = rand(data.draw(seeds), shape, dtype)
    if how == "prod" and np.dtype(dtype).kind == "i":
        x = x % 3  # keep integer products small
    # id -1 is dropped; with n = 0 every id must be -1
    ids = np.random.default_rng(data.draw(seeds)).integers(-1, n, shape[:k]).astype(index_dtype)
    fn = getattr(tw.math, f"unsorted_segment_{how}")
    check_against_numpy(lambda d, i: fn(d, i, n), lambda d, i: np_segment(d, i, n, how), x, ids)


def test_unsorted_segment_examples_and_errors():
    data = np.float32([[1, 2, 3, 4], [5, 6, 7, 8], [4, 3, 2, 1]])
    np.testing.assert_array_equal(tw.math.unsorted_segment_max(data, [0, 1, 0], 2).numpy(),
                                  [[4, 3, 3, 4], [5, 6, 7, 8]])
    np.testing.assert_array_equal(tw.math.unsorted_segment_prod(data, [0, 1, 0], 2).numpy(),
                                  [[4, 6, 6, 4], [5, 6, 7, 8]])
    assert tw.math.unsorted_segment_max([1, 2], [0, 0], 2).numpy().tolist() == \
        [2, np.iinfo(np.int32).min]
    assert tw.math.unsorted_segment_sum is tw.unsorted_segment_sum
    with pytest.raises(tw.errors.InvalidArgumentError) as err:
        tw.math.unsorted_segment_min(data, [0, 2, 1], 2)
    msg = str(err.value)
    assert "UnsortedSegmentMin" in msg and "segment_ids[1] = 2" in msg and \
        "test_array_extra.py" in msg
    with pytest.raises(tw.errors.ShapeError, match="floating point") as err:
        tw.math.unsorted_segment_mean([1, 2], [0, 0], 1)
    assert "unsorted_segment_mean" in str(err.value)
    with pytest.raises(tw.errors.DTypeError, match="numeric"):
        tw.math.unsorted_segment_prod([True], [0], 1)


def test_dynamic_partition_and_stitch_are_top_level_as_in_tensorflow():
    for name in ("dynamic_partition", "dynamic_stitch"):
        assert name in tw.__all__ and callable(getattr(tw, name))
    for name in ("sort", "argsort", "gather_nd", "scatter_nd", "tensor_scatter_nd_update",
                 "boolean_mask", "eye", "linspace", "meshgrid", "sequence_mask", "reverse",
                 "roll", "searchsorted"):
        assert name in tw.__all__, name
    for how in ("max", "min", "mean", "prod", "sqrt_n"):
        assert f"unsorted_segment_{how}" in tw.math.__all__
