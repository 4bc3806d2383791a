"""tw.sparse.transpose, concat, fill_empty_rows, maximum, minimum, softmax and
segment_sum/mean/sqrt_n (and sparse_to_dense).

Oracles: NumPy (dense arrays and loops over the entries) on hypothesis-drawn sparse
tensors, in any entry order, eagerly and traced on each target; TensorFlow 2.21's values
and gradients on canonically ordered inputs (tests/data/tf_fixtures/sparse_more.npz,
recorded by record_sparse_more.py there); gradients in float64 against finite
differences; TF1 graphs with shapes known at run time only."""

import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tests.helpers import TARGETS, check_gradients

F = np.load(os.path.join(os.path.dirname(__file__), "data", "tf_fixtures", "sparse_more.npz"))
SparseTensor = tw.sparse.SparseTensor


def fixture_sp(key):
    return SparseTensor(F[f"{key}/indices"], F[f"{key}/values"], F[f"{key}/dense_shape"])


def parts(sp):
    return tuple(np.asarray(x) for x in (sp.indices, sp.values, sp.dense_shape))


def everywhere(fn, *components):
    """fn's result eagerly and traced on each target; `components` are arrays, passed as
    they are (the functions build their SparseTensors from them)."""
    out = {"eager": fn(*[tw.constant(c) for c in components])}
    for target in TARGETS:
        out[target] = tw.compile(fn, target=target)(*components)
    return out


def random_sparse(rng, shape, density=0.4, shuffle=True, dtype=np.float64):
    dense = np.round(rng.standard_normal(shape), 3)
    mask = rng.random(shape) < density
    idx = np.argwhere(mask).astype(np.int64).reshape(-1, len(shape))
    vals = dense[mask].astype(dtype)
    if shuffle and len(idx):
        perm = rng.permutation(len(idx))
        idx, vals = idx[perm], vals[perm]
    return idx, vals, np.array(shape, np.int64)


def to_dense(idx, vals, shape):
    out = np.zeros(tuple(shape), vals.dtype)
    for i, v in zip(idx, vals):
        out[tuple(i)] += v
    return out


def row_major(idx, shape):
    return np.ravel_multi_index(idx.T, tuple(shape)) if len(idx) else np.zeros(0, np.int64)


def assert_sparse(got, idx, vals, shape, rtol=0.0):
    gi, gv, gs = parts(got)
    np.testing.assert_array_equal(gs, shape)
    np.testing.assert_array_equal(gi.reshape(-1, len(shape)), np.asarray(idx).reshape(-1, len(shape)))
    assert gv.dtype == np.asarray(vals).dtype
    np.testing.assert_allclose(gv, vals, rtol=rtol, atol=0)


# -------------------------------------------------------------------------- transpose

shapes3 = st.lists(st.integers(1, 4), min_size=1, max_size=3)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shape=shapes3, data=st.data())
def test_transpose_matches_numpy(seed, shape, data):
    idx, vals, dense_shape = random_sparse(np.random.default_rng(seed), shape)
    perm = data.draw(st.permutations(range(len(shape))))
    new = idx[:, perm]
    order = np.argsort(row_major(new, dense_shape[perm]), kind="stable")
    for where, got in everywhere(lambda i, v, s: tw.sparse.transpose(SparseTensor(i, v, s), perm),
                                 idx, vals, dense_shape).items():
        assert_sparse(got, new[order], vals[order], dense_shape[perm])
    np.testing.assert_array_equal(
        np.asarray(tw.sparse.to_dense(tw.sparse.transpose(SparseTensor(idx, vals, dense_shape),
                                                          perm))),
        np.transpose(to_dense(idx, vals, dense_shape), perm))


# ----------------------------------------------------------------------------- concat

@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rank=st.integers(1, 3), n=st.integers(1, 3),
       expand=st.booleans(), data=st.data())
def test_concat_matches_numpy(seed, rank, n, expand, data):
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(-rank, rank - 1))
    ax = axis % rank
    base = [int(d) for d in rng.integers(1, 4, rank)]
    shapes = []
    for _ in range(n):
        s = [int(d) for d in (rng.integers(1, 4, rank) if expand else base)]
        s[ax] = int(rng.integers(0, 4))
        shapes.append(s)
    inputs = [random_sparse(rng, s) for s in shapes]
    out_shape = np.max(np.array(shapes), axis=0)
    out_shape[ax] = sum(s[ax] for s in shapes)
    dense = []
    for (i, v, s) in inputs:   # each input padded to the result's other dims
        d = np.zeros([s[k] if k == ax else out_shape[k] for k in range(rank)])
        d[tuple(slice(0, x) for x in s)] = to_dense(i, v, s)
        dense.append(d)
    want = np.concatenate(dense, axis=ax)
    flat = [c for inp in inputs for c in inp]

    def fn(*components):
        sps = [SparseTensor(*components[3 * k:3 * k + 3]) for k in range(n)]
        return tw.sparse.concat(axis, sps, expand_nonconcat_dims=expand)

    for where, got in everywhere(fn, *flat).items():
        gi, gv, gs = parts(got)
        np.testing.assert_array_equal(gs, out_shape)
        np.testing.assert_array_equal(to_dense(gi, gv, gs), want)
        keys = row_major(gi, gs)
        assert len(gi) == sum(len(i) for i, _, _ in inputs) and (np.diff(keys) >= 0).all()


def test_concat_bad_input():
    a = SparseTensor([[0, 0]], [1.0], [2, 3])
    with pytest.raises(tw.errors.ShapeError, match="must match input 0"):
        tw.sparse.concat(1, [a, SparseTensor([[0, 0]], [1.0], [3, 3])])
    with pytest.raises(tw.errors.ShapeError, match="same rank"):
        tw.sparse.concat(0, [a, SparseTensor([[0]], [1.0], [3])])
    with pytest.raises(tw.errors.ShapeError, match="axis 2 is out of range"):
        tw.sparse.concat(2, [a, a])
    with pytest.raises(tw.errors.ShapeError, match="dtypes differ"):
        tw.sparse.concat(0, [a, SparseTensor([[0, 0]], [1], [2, 3])])


# -------------------------------------------------------------------- fill_empty_rows

def numpy_fill_empty_rows(idx, vals, shape, default):
    """SparseFillEmptyRows: by row, input order within a row, [row, 0...] for empty rows."""
    out_i, out_v = [], []
    for r in range(shape[0]):
        mine = [k for k in range(len(idx)) if idx[k, 0] == r]
        if not mine:
            out_i.append([r] + [0] * (len(shape) - 1))
            out_v.append(default)
        for k in mine:
            out_i.append(list(idx[k]))
            out_v.append(vals[k])
    empty = np.array([not (idx[:, 0] == r).any() for r in range(shape[0])], bool)
    return (np.array(out_i, np.int64).reshape(-1, len(shape)), np.array(out_v, vals.dtype),
            empty)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shape=shapes3, density=st.sampled_from([0.0, 0.2, 0.7]))
def test_fill_empty_rows_matches_the_kernel_transcription(seed, shape, density):
    idx, vals, dense_shape = random_sparse(np.random.default_rng(seed), shape, density)
    want_i, want_v, want_empty = numpy_fill_empty_rows(idx, vals, dense_shape, -7.0)
    for where, (got, empty) in everywhere(
            lambda i, v, s: tw.sparse.fill_empty_rows(SparseTensor(i, v, s), -7.0),
            idx, vals, dense_shape).items():
        assert_sparse(got, want_i, want_v, dense_shape)
        np.testing.assert_array_equal(np.asarray(empty), want_empty)


def test_fill_empty_rows_is_tensorflows_with_its_gradients():
    sp = fixture_sp("f/in")
    out, empty = tw.sparse.fill_empty_rows(sp, -2.5)
    assert_sparse(out, F["f/out/indices"], F["f/out/values"], F["f/out/dense_shape"])
    np.testing.assert_array_equal(np.asarray(empty), F["f/empty"])

    def loss(v, d):
        filled, _ = tw.sparse.fill_empty_rows(SparseTensor(sp.indices, v, sp.dense_shape), d)
        return tw.reduce_sum(F["f/w"] * filled.values)

    gv, gd = tw.grad(loss, argnums=(0, 1))(F["f/in/values"], np.float64(-2.5))
    np.testing.assert_allclose(gv, F["f/grad_values"], rtol=1e-12)
    np.testing.assert_allclose(gd, F["f/grad_default"], rtol=1e-12)
    check_gradients(lambda v, d: tw.sparse.fill_empty_rows(
        SparseTensor(sp.indices, v, sp.dense_shape), d)[0].values,
        F["f/in/values"], np.float64(-2.5))


# ------------------------------------------------------------------ maximum, minimum

def numpy_extremum(a, b, fn):
    """Every index of either, row-major; an index in one operand only meets a 0."""
    da, db = to_dense(*a), to_dense(*b)
    stored = np.zeros(tuple(a[2]), bool)
    for i in list(a[0]) + list(b[0]):
        stored[tuple(i)] = True
    idx = np.argwhere(stored).astype(np.int64)
    return idx, fn(da, db)[stored]


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shape=shapes3)
def test_maximum_minimum_match_numpy(seed, shape):
    rng = np.random.default_rng(seed)
    a, b = random_sparse(rng, shape), random_sparse(rng, shape)
    for name, fn in (("maximum", np.maximum), ("minimum", np.minimum)):
        want_i, want_v = numpy_extremum(a, b, fn)
        for where, got in everywhere(
                lambda ai, av, as_, bi, bv, bs: getattr(tw.sparse, name)(
                    SparseTensor(ai, av, as_), SparseTensor(bi, bv, bs)), *a, *b).items():
            assert_sparse(got, want_i, want_v, a[2])


def test_maximum_minimum_are_tensorflows_and_differentiable():
    a, b = fixture_sp("m/a"), fixture_sp("m/b")
    for name in ("max", "min"):
        fn = getattr(tw.sparse, name + "imum")
        assert_sparse(fn(a, b), F[f"m/{name}/indices"], F[f"m/{name}/values"],
                      F[f"m/{name}/dense_shape"])
        # (the fixture's values are distinct and nonzero: no ties for finite differences)
        check_gradients(lambda va, vb: fn(SparseTensor(a.indices, va, a.dense_shape),
                                          SparseTensor(b.indices, vb, b.dense_shape)).values,
                        F["m/a/values"], F["m/b/values"])
    with pytest.raises(tw.errors.ShapeError, match="dense shapes must match"):
        tw.sparse.maximum(a, SparseTensor([[0, 0]], np.array([1.0]), [3, 3]))


# ---------------------------------------------------------------------------- softmax

def numpy_softmax(idx, vals):
    out = np.zeros_like(vals)
    groups = {}
    for k, i in enumerate(idx):
        groups.setdefault(tuple(i[:-1]), []).append(k)
    for ks in groups.values():
        e = np.exp(vals[ks] - vals[ks].max())
        out[ks] = e / e.sum()
    return out


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1),
       shape=st.lists(st.integers(1, 4), min_size=2, max_size=3))
def test_softmax_matches_numpy_in_any_entry_order(seed, shape):
    idx, vals, dense_shape = random_sparse(np.random.default_rng(seed), shape, 0.6)
    for where, got in everywhere(lambda i, v, s: tw.sparse.softmax(SparseTensor(i, v, s)),
                                 idx, vals, dense_shape).items():
        assert_sparse(got, idx, numpy_softmax(idx, vals), dense_shape, rtol=1e-12)


@pytest.mark.parametrize("k", [0, 1])
def test_softmax_is_tensorflows_with_its_gradient(k):
    sp = fixture_sp(f"s/{k}/in")
    assert_sparse(tw.sparse.softmax(sp), F[f"s/{k}/out/indices"], F[f"s/{k}/out/values"],
                  F[f"s/{k}/out/dense_shape"], rtol=1e-12)

    def values(v):
        return tw.sparse.softmax(SparseTensor(sp.indices, v, sp.dense_shape)).values

    g = tw.grad(lambda v: tw.reduce_sum(F[f"s/{k}/w"] * values(v)))(F[f"s/{k}/in/values"])
    np.testing.assert_allclose(g, F[f"s/{k}/grad"], rtol=1e-10, atol=1e-14)
    check_gradients(values, F[f"s/{k}/in/values"])


def test_softmax_bad_input():
    with pytest.raises(tw.errors.ShapeError, match="rank 2 or more"):
        tw.sparse.softmax(SparseTensor([[0]], [1.0], [3]))
    with pytest.raises(tw.errors.ShapeError, match="floating point"):
        tw.sparse.softmax(SparseTensor([[0, 0]], [1], [3, 3]))


# --------------------------------------------------------------- segment reductions

def numpy_segments(fn, data, indices, ids, num):
    n = num if num is not None else (int(ids[-1]) + 1 if len(ids) else 0)
    out = np.zeros((n,) + data.shape[1:])
    for s in range(n):
        rows = data[indices[ids == s]]
        if len(rows):
            total = rows.sum(0)
            out[s] = {"segment_sum": total, "segment_mean": total / len(rows),
                      "segment_sqrt_n": total / math.sqrt(len(rows))}[fn]
    return out


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 5), k=st.integers(0, 7),
       fn=st.sampled_from(["segment_sum", "segment_mean", "segment_sqrt_n"]),
       num=st.sampled_from([None, 8]))
def test_segment_reductions_match_numpy(seed, rows, k, fn, num):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((rows, 2))
    indices = rng.integers(0, rows, k).astype(np.int32)
    ids = np.sort(rng.integers(0, 6, k)).astype(np.int64)
    if num is None and k == 0:
        return  # (segment_sum of no rows: TensorFlow's result has 0 rows; covered below)
    want = numpy_segments(fn, data, indices, ids, num)
    for where, got in everywhere(lambda d, i, s: getattr(tw.sparse, fn)(d, i, s,
                                                                        num_segments=num),
                                 data, indices, ids).items():
        got = np.asarray(got)
        assert got.shape == want.shape, where
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15, err_msg=where)


@pytest.mark.parametrize("fn", ["segment_sum", "segment_mean", "segment_sqrt_n"])
@pytest.mark.parametrize("num", [None, 9])
def test_segment_reductions_are_tensorflows_with_gradients(fn, num):
    data, indices, ids = F["g/data"], F["g/indices"], F["g/ids"]
    reduce = getattr(tw.sparse, fn)
    np.testing.assert_allclose(np.asarray(reduce(data, indices, ids, num_segments=num)),
                               F[f"g/{fn}/{num}/out"], rtol=1e-12)
    w = F[f"g/{fn}/{num}/w"]
    g = tw.grad(lambda d: tw.reduce_sum(w * reduce(d, indices, ids, num_segments=num)))(data)
    np.testing.assert_allclose(np.asarray(g), F[f"g/{fn}/{num}/grad"], rtol=1e-12)
    check_gradients(lambda d: reduce(d, indices, ids, num_segments=num), data)


def test_segment_reductions_bad_input():
    data = np.ones((4, 2))
    f = tw.compile(lambda i, s: tw.sparse.segment_sum(data, i, s), target="cpu")
    with pytest.raises(tw.errors.InvalidArgumentError, match="non-negative and increasing"):
        f(np.array([0, 1, 2], np.int32), np.array([2, 0, 1], np.int32))
    with pytest.raises(tw.errors.InvalidArgumentError, match="non-negative and increasing"):
        f(np.array([0, 1], np.int32), np.array([-1, 0], np.int32))
    with pytest.raises(tw.errors.InvalidArgumentError, match="below num_segments"):
        tw.sparse.segment_sum(data, [0, 1], [0, 5], num_segments=3)
    with pytest.raises(tw.errors.TensorWeaveError, match=r"indices\[1\] = 7 is not in \[0, 4\)"):
        f(np.array([0, 7], np.int32), np.array([0, 0], np.int32))
    with pytest.raises(tw.errors.ShapeError, match="floating point"):
        tw.sparse.segment_mean(np.ones((4, 2), np.int32), [0], [0])
    with pytest.raises(tw.errors.ShapeError, match="same length"):
        tw.sparse.segment_sum(data, [0, 1], [0])
    g = tw.compile(lambda n: tw.sparse.segment_sum(data, [0], [0], num_segments=n))
    with pytest.raises(tw.errors.ShapeError, match="num_segments must be an integer known"):
        g(np.int32(3))


# ------------------------------------------------------------------------ TensorFlow 1

def test_tensorflow1_names_and_run_time_shapes():
    import tensorweave.compat.v1 as tf
    rng = np.random.default_rng(3)
    a = random_sparse(rng, (4, 3), 0.3, dtype=np.float32)
    b = random_sparse(rng, (2, 3), 0.5, dtype=np.float32)
    with tf.Graph().as_default():
        pa = tf.sparse_placeholder(tf.float32, [None, 3])
        pb = tf.sparse_placeholder(tf.float32, [None, 3])
        cat = tf.sparse_concat(0, [pa, pb], "cat")              # name third, TF1's order
        cat_v1 = tf.sparse.concat(1, [pa, pa], None, True)      # expand_nonconcat_dim
        filled, empty = tf.sparse_fill_empty_rows(pa, 9.0)
        tr = tf.sparse_transpose(pa)
        soft = tf.sparse_softmax(pa)
        mx = tf.sparse_maximum(pa, pa)
        seg = tf.sparse_segment_sum(np.ones((3, 2), np.float32), [0, 2], [0, 1], "s", 4)
        feed = {pa: tf.SparseTensorValue(*a), pb: tf.SparseTensorValue(*b)}
        with tf.Session() as sess:
            got = sess.run([cat, cat_v1, filled, empty, tr, soft, mx, seg], feed)
    c = got[0]
    np.testing.assert_array_equal(c.dense_shape, [6, 3])
    np.testing.assert_array_equal(to_dense(c.indices, c.values, c.dense_shape),
                                  np.concatenate([to_dense(*a), to_dense(*b)]))
    np.testing.assert_array_equal(got[1].dense_shape, [4, 6])
    want_i, want_v, want_empty = numpy_fill_empty_rows(*a, np.float32(9.0))
    np.testing.assert_array_equal(got[2].indices, want_i)
    np.testing.assert_array_equal(got[2].values, want_v)
    np.testing.assert_array_equal(got[3], want_empty)
    np.testing.assert_array_equal(to_dense(got[4].indices, got[4].values, got[4].dense_shape),
                                  to_dense(*a).T)
    np.testing.assert_allclose(got[5].values, numpy_softmax(a[0], a[1]), rtol=1e-6)
    np.testing.assert_array_equal(got[7], [[1, 1], [1, 1], [0, 0], [0, 0]])


def test_sparse_to_dense_is_tensorflows():
    got = tw.sparse.sparse_to_dense([[0, 1], [2, 0], [2, 3]], [3, 4], [5.0, 6.0, 7.0],
                                    default_value=-1.0)
    np.testing.assert_array_equal(np.asarray(got), F["d/out"])
