"""Gradients of the array ops against central finite differences (float64), on random
small shapes with empty and size-1 dims and negative axes; plus gradients traced with dims
unknown until run time, and the ops that have no gradient."""

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.compiler.registry import get_op
from tensorweave.frontend.building import apply_op, apply_op1
from tests.grads.strategies import (
    check_unknown_dims,
    index_keys,
    n_elements,
    seeds,
    small_shapes,
    spec,
    values,
)
from tests.helpers import check_gradients


def axis_of(rank, extra=0):
    """An axis in [-rank-extra, rank+extra-1], negative values included."""
    return st.integers(-rank - extra, rank + extra - 1)


@st.composite
def floats(draw, shape=None, domain="any"):
    """A float64 array of a small shape (or of `shape`)."""
    s = draw(small_shapes()) if shape is None else shape
    if isinstance(s, st.SearchStrategy):
        s = draw(s)
    return values(draw(seeds), s, domain)


def _weighted(parts, chosen):
    """One tensor from some outputs of a multi-output op, each weighted differently, so the
    other outputs get zero gradients filled in."""
    return tw.concat([tw.reshape(parts[i], [-1]) * float(i + 1) for i in chosen], 0)


# ------------------------------------------------------------------------ reshaping

@given(floats(), st.data())
def test_reshape_grad(x, data):
    dims = list(data.draw(st.permutations(x.shape)))
    dims.insert(data.draw(st.integers(0, len(dims))), 1)
    if x.size and data.draw(st.booleans()):
        dims[data.draw(st.integers(0, len(dims) - 1))] = -1
    check_gradients(lambda t: tw.reshape(t, dims), x)


@given(floats(), st.data())
def test_reshape_like_grad_flows_to_the_tensor_only(x, data):
    like = np.zeros(data.draw(st.permutations(x.shape)))
    # the gradient for `like` is zero: only its shape is used
    check_gradients(lambda t, lk: tw.reshape(t * t, tw.shape(lk)), x, like)


@given(floats(), st.data())
def test_transpose_grad(x, data):
    perm = data.draw(st.permutations(range(x.ndim)))
    check_gradients(lambda t: tw.transpose(t, perm), x)


@given(floats(), st.data())
def test_expand_dims_grad(x, data):
    axis = data.draw(axis_of(x.ndim + 1))
    check_gradients(lambda t: tw.expand_dims(t, axis), x)


@given(floats(small_shapes(max_side=2)), st.data())
def test_squeeze_grad(x, data):
    ones = [i for i, d in enumerate(x.shape) if d == 1]
    axis = None if data.draw(st.booleans()) else data.draw(st.lists(st.sampled_from(ones), unique=True)) \
        if ones else None
    check_gradients(lambda t: tw.squeeze(t, axis), x)


def test_identity_grad():
    check_gradients(lambda t: tw.identity(t) * t, values(0, (2, 3)))


# ------------------------------------------------------------- joining and splitting

@given(small_shapes(min_dims=1, max_side=2), st.integers(1, 3), st.data())
def test_concat_grad(shape, n, data):
    axis = data.draw(axis_of(len(shape)))
    arrays = []
    for _ in range(n):
        s = list(shape)
        s[axis] = data.draw(st.integers(0, 3))
        arrays.append(values(data.draw(seeds), s))
    check_gradients(lambda *ts: tw.concat(list(ts), axis), *arrays)


@given(small_shapes(max_side=2), st.integers(1, 3), st.data())
def test_stack_grad(shape, n, data):
    axis = data.draw(axis_of(len(shape) + 1))
    arrays = [values(data.draw(seeds), shape) for _ in range(n)]
    check_gradients(lambda *ts: tw.stack(list(ts), axis), *arrays)


@given(floats(small_shapes(min_dims=1, min_side=1)), st.data())
def test_unstack_grad_with_unused_outputs(x, data):
    axis = data.draw(axis_of(x.ndim))
    chosen = data.draw(st.lists(st.integers(0, x.shape[axis] - 1), min_size=1, unique=True))
    check_gradients(lambda t: _weighted(tw.unstack(t, axis=axis), chosen), x)


@given(floats(small_shapes(min_dims=1)), st.data())
def test_split_grad_with_unused_outputs(x, data):
    axis = data.draw(axis_of(x.ndim))
    dim = x.shape[axis]
    if data.draw(st.booleans()):
        n = data.draw(st.sampled_from([k for k in range(1, 4) if dim % k == 0]))
        sizes = n
    else:
        cuts = sorted(data.draw(st.lists(st.integers(0, dim), max_size=2)))
        sizes = [hi - lo for lo, hi in zip([0, *cuts], [*cuts, dim])]
        n = len(sizes)
    chosen = data.draw(st.lists(st.integers(0, n - 1), min_size=1, unique=True))
    check_gradients(lambda t: _weighted(tw.split(t, sizes, axis=axis), chosen), x)


def test_split_like_grad():
    x = values(0, (5, 2))
    likes = [np.zeros((2, 1)), np.zeros((3, 7))]
    check_gradients(lambda t, a, b: _weighted(apply_op("SplitLike", [t, a, b], {"axis": 0}), [1]),
                    x, *likes)


# -------------------------------------------------------------- slicing and padding

@given(floats(), st.data())
def test_slice_grad(x, data):
    begin = [data.draw(st.integers(0, d)) for d in x.shape]
    size = [data.draw(st.integers(-1, d - b)) for d, b in zip(x.shape, begin)]
    check_gradients(lambda t: tw.slice(t, begin, size), x)


@given(floats(), st.data())
def test_strided_slice_grad_from_python_indexing(x, data):
    key = data.draw(index_keys(x.shape))
    check_gradients(lambda t: t[key], x)


@given(floats(small_shapes(min_dims=1, max_side=4)), st.data())
def test_strided_slice_grad_with_negative_strides(x, data):
    begin = [data.draw(st.integers(-d - 2, d + 2)) for d in x.shape]
    end = [data.draw(st.integers(-d - 2, d + 2)) for d in x.shape]
    strides = [data.draw(st.integers(-3, -1) | st.integers(1, 3)) for _ in x.shape]
    check_gradients(lambda t: tw.strided_slice(t, begin, end, strides), x)


def test_gradient_of_the_strided_slice_gradient():
    x = np.zeros((4, 3))
    dy = values(1, (2, 3))
    attrs = {"begin": [3, 0], "end": [0, 0], "strides": [-2, 1], "end_mask": 2}
    check_gradients(lambda d, like: apply_op1("StridedSliceGrad", [d, like], attrs), dy, x)


@st.composite
def paddings(draw, shape, mode):
    """Per-dimension (before, after) pads valid for `mode`."""
    slack = {"REFLECT": 1, "SYMMETRIC": 0}.get(mode)
    pads = []
    for d in shape:
        hi = 2 if slack is None else max(0, min(2, d - slack))
        pads.append([draw(st.integers(0, hi)), draw(st.integers(0, hi))])
    return pads


@given(floats(small_shapes(max_side=4)), st.sampled_from(["CONSTANT", "REFLECT", "SYMMETRIC"]),
       st.data())
def test_pad_grad(x, mode, data):
    pads = data.draw(paddings(x.shape, mode))
    assume(n_elements([d + a + b for d, (a, b) in zip(x.shape, pads)]) <= 120)
    check_gradients(lambda t: tw.pad(t, pads, mode, constant_values=2), x)


@given(floats(small_shapes(max_side=4)), st.sampled_from(["CONSTANT", "REFLECT", "SYMMETRIC"]),
       st.data())
def test_gradient_of_the_pad_gradient(x, mode, data):
    pads = data.draw(paddings(x.shape, mode))
    g = values(data.draw(seeds), [d + a + b for d, (a, b) in zip(x.shape, pads)])
    assume(g.size <= 48)
    flat = [p for pair in pads for p in pair]
    check_gradients(lambda t: apply_op1("PadGrad", [t], {"paddings": flat, "mode": mode}), g)


# ------------------------------------------------------------ repeating and broadcasting

@given(floats(small_shapes(max_dims=3, max_side=2)), st.data())
def test_tile_grad(x, data):
    multiples = [data.draw(st.integers(0, 3)) for _ in x.shape]
    check_gradients(lambda t: tw.tile(t, multiples), x)


@given(floats(small_shapes(max_dims=3, max_side=2)), st.data())
def test_broadcast_to_grad(x, data):
    lead = data.draw(st.lists(st.integers(0, 2), max_size=2))
    shape = lead + [data.draw(st.integers(0, 3)) if d == 1 else d for d in x.shape]
    check_gradients(lambda t: tw.broadcast_to(t, shape), x)


# ------------------------------------------------------------------------- gathering

@given(floats(small_shapes(min_dims=1, max_side=4)), small_shapes(max_dims=2),
       st.sampled_from([np.int32, np.int64]), st.data())
def test_gather_grad_with_repeated_indices(x, index_shape, index_dtype, data):
    axis = data.draw(axis_of(x.ndim))
    dim = x.shape[axis]
    assume(dim > 0 or 0 in index_shape)
    rng = np.random.default_rng(data.draw(seeds))
    indices = rng.integers(0, max(dim, 1), index_shape).astype(index_dtype)
    check_gradients(lambda p, i: tw.gather(p, i, axis=axis), x, indices)


@given(floats(small_shapes(max_side=4)), st.integers(0, 4), st.data())
def test_unsorted_segment_sum_grad_with_dropped_ids(x, n, data):
    k = data.draw(st.integers(0, x.ndim))
    ids = np.random.default_rng(data.draw(seeds)).integers(-1, n, x.shape[:k]).astype(np.int32)
    check_gradients(lambda d, i: tw.unsorted_segment_sum(d, i, n), x, ids)


# ----------------------------------------------------------------- no gradient

def test_ops_without_gradients_are_marked():
    for name in ("OneHot", "Fill", "ZerosLike", "OnesLike", "Range", "Shape", "Size"):
        assert get_op(name).not_differentiable, name


def test_gradients_pass_over_shape_queries_and_creation_ops():
    def loss(x):
        n = tw.cast(tw.size(x), tw.float64) + tw.cast(tw.shape(x)[0], tw.float64)
        made = tw.zeros_like(x) + tw.ones_like(x) + tw.fill([3], np.float64(2.0)) + \
            tw.range(3.0, dtype=tw.float64)
        hot = tw.one_hot([0, 2, 1], 3, dtype=tw.float64)
        return tw.reduce_sum(x * n) + tw.reduce_sum(made * x) + tw.reduce_sum(hot * x)

    x = values(0, (3, 3))
    hot = np.eye(3)[[0, 2, 1]]
    expected = 12.0 + (1 + 2 + np.arange(3.0)) + hot
    np.testing.assert_allclose(tw.grad(loss)(x), expected)


# ----------------------------------------------------------------- unknown dims

def test_reshaping_grads_with_unknown_dims():
    x = values(0, (4, 3))
    check_unknown_dims(lambda t: tw.reshape(t, [-1]), [spec(None, 3)], x)
    check_unknown_dims(lambda t: tw.reshape(t, [3, -1]), [spec(None, None)], x)
    check_unknown_dims(lambda t: tw.transpose(t) * 2.0, [spec(None, 3)], x)
    check_unknown_dims(lambda t: tw.squeeze(tw.expand_dims(t, -1), [2]), [spec(None, 3)], x)
    check_unknown_dims(lambda t: tw.squeeze(tw.reshape(t, [-1, 1, 3]), [1]), [spec(None, 3)], x)
    check_unknown_dims(lambda t, lk: tw.reshape(t, tw.shape(lk)), [spec(None, 3), spec(None, 2)],
                       x, np.zeros((6, 2)))


def test_joining_grads_with_unknown_dims():
    x, y = values(0, (4, 3)), values(1, (2, 3))
    check_unknown_dims(lambda a, b: tw.concat([a, b], 0), [spec(None, 3), spec(2, 3)], x, y)
    check_unknown_dims(lambda a, b: tw.concat([a, b, a], 0), [spec(None, 3), spec(None, 3)], x, y)
    check_unknown_dims(lambda a, b: tw.concat([a, b], 1), [spec(None, 3), spec(None, None)],
                       x, values(2, (4, 2)))
    check_unknown_dims(lambda a: tw.stack(tw.unstack(a, axis=1)[::-1]), [spec(None, 3)], x)
    check_unknown_dims(lambda a: tw.split(a, [1, -1], axis=0)[1], [spec(None, 3)], x)
    check_unknown_dims(lambda a: tw.split(a, 2, axis=0)[0], [spec(None, None)], x)


def test_concat_of_several_unknown_sizes_splits_at_run_time():
    grad = tw.grad(lambda a, b: tw.reduce_sum(tw.concat([a, b], 0) * [[1.0], [2.0], [3.0]]),
                   argnums=(0, 1))
    f = tw.compile(grad, input_signature=[spec(None, 2), spec(None, 2)])
    assert "SplitLike" in {n.op for n in f.get_concrete_function().graph.nodes}
    ga, gb = f(np.zeros((1, 2)), np.zeros((2, 2)))
    np.testing.assert_array_equal(ga, [[1, 1]])
    np.testing.assert_array_equal(gb, [[2, 2], [3, 3]])


def test_slicing_grads_with_unknown_dims():
    x = values(0, (5, 3))
    check_unknown_dims(lambda t: tw.slice(t, [1, 0], [-1, 2]), [spec(None, 3)], x)
    check_unknown_dims(lambda t: tw.slice(t, [1, 1], [2, 1]), [spec(None, None)], x)
    check_unknown_dims(lambda t: t[1:-1:2, ::-1], [spec(None, 3)], x)
    check_unknown_dims(lambda t: t[None, -1, 1:], [spec(None, None)], x)
    for mode in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        check_unknown_dims(lambda t: tw.pad(t, [[1, 2], [0, 2]], mode), [spec(None, None)], x)


def test_repeating_and_gathering_grads_with_unknown_dims():
    x = values(0, (4, 3))
    check_unknown_dims(lambda t: tw.tile(t, [2, 3]), [spec(None, 3)], x)
    check_unknown_dims(lambda t: tw.tile(t, [2, 3]), [spec(None, None)], x)
    check_unknown_dims(lambda t: tw.tile(t, [0, 2]), [spec(None, None)], x)
    check_unknown_dims(lambda t: tw.broadcast_to(t[:1], [2, 4, 3]), [spec(None, 3)], x)
    idx = np.array([[2, 0], [2, 2]], np.int32)
    check_unknown_dims(lambda t, i: tw.gather(t, i, axis=1), [spec(None, 3),
                       tw.TensorSpec([None, 2], tw.int32)], x, idx)


def test_gather_grad_with_a_size_known_only_at_run_time():
    # (it needed a static size; tests/test_review_cf2_dynamic_count_grads.py: scans)
    grad = tw.grad(lambda t: tw.reduce_sum(tw.gather(t, [0, 0])))
    f = tw.compile(grad, input_signature=[spec(None, 3)])
    want = np.array([[2.0, 2.0, 2.0], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(np.asarray(f(np.zeros((2, 3)))), want)
    np.testing.assert_array_equal(np.asarray(f(np.zeros((3, 3)))),
                                  np.concatenate([want, np.zeros((1, 3))]))
