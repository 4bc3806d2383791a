"""DynamicPartition, DynamicStitch and FlatIndexLike against NumPy (eager, traced on the
reference and cpu targets, and across devices): random shapes with empty dims, scalar
partitions, repeated and missing stitch indices; inference with unknown dims; errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tensorweave.frontend.building import apply_op1
from tests.helpers import check_against_numpy
from tests.ops.test_array import dtypes, rand, seeds, spec, traced_types

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def np_partition(data, partitions, n):
    """TensorFlow's DynamicPartition, written with a loop over the partitions."""
    flat = partitions.reshape(-1)
    rows = data.reshape((flat.size,) + data.shape[partitions.ndim:])
    return [rows[flat == i] for i in range(n)]


def np_stitch(indices, data):
    """TensorFlow's DynamicStitch, one slice at a time in the order that makes later
    values win."""
    rest = data[0].shape[indices[0].ndim:]
    rows = max([int(i.max()) + 1 for i in indices if i.size], default=0)
    out = np.zeros((rows,) + rest, dtype=data[0].dtype)
    for idx, d in zip(indices, data):
        for pos in np.ndindex(idx.shape):
            out[idx[pos]] = d[pos]
    return out


# ------------------------------------------------------------------ DynamicPartition

@given(shapes, dtypes, st.integers(1, 4), st.sampled_from([np.int32, np.int64]), st.data())
def test_dynamic_partition_matches_numpy(shape, dtype, n, index_dtype, data):
    k = data.draw(st.integers(0, len(shape)))
    x = rand(data.draw(seeds), shape, dtype)
    parts = np.random.default_rng(data.draw(seeds)).integers(0, n, shape[:k]).astype(index_dtype)
    check_against_numpy(lambda d, p: tw.dynamic_partition(d, p, n),
                        lambda d, p: np_partition(d, p, n), x, parts)


def test_dynamic_partition_example_from_tensorflow():
    outs = tw.dynamic_partition([10, 20, 30, 40, 50], [0, 0, 1, 1, 0], 2)
    assert [o.numpy().tolist() for o in outs] == [[10, 20, 50], [30, 40]]
    outs = tw.dynamic_partition(np.arange(8).reshape(2, 2, 2), [[0, 1], [1, 0]], 2)
    assert [o.numpy().tolist() for o in outs] == [[[0, 1], [6, 7]], [[2, 3], [4, 5]]]


def test_dynamic_partition_types_and_errors():
    assert traced_types(lambda d, p: tw.dynamic_partition(d, p, 2), spec([None, 3]),
                        spec([None], tw.int32)) == [(tw.float32, (None, 3))] * 2
    assert traced_types(lambda d, p: tw.dynamic_partition(d, p, 3), spec([4, 3]),
                        spec([4, 3], tw.int32)) == [(tw.float32, (None,))] * 3
    assert traced_types(lambda d, p: tw.dynamic_partition(d, p, 1), spec([0, 3]),
                        spec([0], tw.int32)) == [(tw.float32, (0, 3))]
    with pytest.raises(tw.errors.ShapeError, match="prefix"):
        traced_types(lambda d, p: tw.dynamic_partition(d, p, 2), spec([4, 3]),
                     spec([3], tw.int32))
    with pytest.raises(tw.errors.DTypeError, match="partitions"):
        tw.dynamic_partition([1.0, 2.0], [0.0, 1.0], 2)
    with pytest.raises(tw.errors.ShapeError, match="num_partitions"):
        tw.dynamic_partition([1.0, 2.0], [0, 1], 0)
    f = tw.compile(lambda d, p: tw.dynamic_partition(d, p, 2),
                   input_signature=[spec([None]), spec([None], tw.int32)])
    with pytest.raises(tw.errors.InvalidArgumentError) as err:
        f(np.ones(3, np.float32), np.array([0, 2, 1], np.int32))
    msg = str(err.value)
    assert "DynamicPartition" in msg and "partitions[1] = 2" in msg and "[0, 2)" in msg
    assert "test_dynamic_partition.py" in msg
    with pytest.raises(tw.errors.InvalidArgumentError, match="prefix"):
        f(np.ones(3, np.float32), np.array([0, 1], np.int32))


# --------------------------------------------------------------------- DynamicStitch

@given(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3), dtypes,
       st.integers(1, 3), st.sampled_from([np.int32, np.int64]), st.data())
def test_dynamic_stitch_matches_numpy(rest, dtype, n, index_dtype, data):
    rng = np.random.default_rng(data.draw(seeds))
    index_shapes = [data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
                    for _ in range(n)]
    # repeated indices (the later value wins) and gaps (zero rows) included
    indices = [rng.integers(0, 6, s).astype(index_dtype) for s in index_shapes]
    values = [rand(data.draw(seeds), s + rest, dtype) for s in index_shapes]
    check_against_numpy(lambda *ts: tw.dynamic_stitch(list(ts[:n]), list(ts[n:])),
                        lambda *arrays: np_stitch(arrays[:n], arrays[n:]), *indices, *values)


def test_dynamic_stitch_example_from_tensorflow():
    indices = [6, [4, 1], [[5, 2], [0, 3]]]
    data = [np.array([61., 62.]), np.array([[41., 42.], [11., 12.]]),
            np.array([[[51., 52.], [21., 22.]], [[1., 2.], [31., 32.]]])]
    got = tw.dynamic_stitch(indices, data).numpy()
    np.testing.assert_array_equal(got, 10. * np.arange(7)[:, None] + [1., 2.])


@given(shapes, st.integers(1, 4), st.data())
def test_dynamic_stitch_inverts_dynamic_partition(shape, n, data):
    k = data.draw(st.integers(0, len(shape)))
    x = rand(data.draw(seeds), shape, np.float32)
    parts = np.random.default_rng(data.draw(seeds)).integers(0, n, shape[:k]).astype(np.int32)

    def roundtrip(d, p):
        positions = apply_op1("FlatIndexLike", [p])
        stitched = tw.dynamic_stitch(tw.dynamic_partition(positions, p, n),
                                     tw.dynamic_partition(d, p, n))
        return tw.reshape(stitched, tw.shape(d))

    if k and 0 not in shape[:k]:
        check_against_numpy(roundtrip, lambda d, p: d, x, parts)


def test_dynamic_stitch_types_and_errors():
    assert traced_types(lambda i, d: tw.dynamic_stitch([i, i], [d, d]), spec([None], tw.int32),
                        spec([None, 2, 3])) == [(tw.float32, (None, 2, 3))]
    assert traced_types(lambda i, d: tw.dynamic_stitch([i], [d]), spec([2, 2], tw.int32),
                        spec([2, None])) == [(tw.float32, (None,))]
    with pytest.raises(tw.errors.ShapeError, match="prefix"):
        tw.dynamic_stitch([[0, 1]], [[1.0, 2.0, 3.0]])
    with pytest.raises(tw.errors.ShapeError, match="trailing"):
        tw.dynamic_stitch([[0], [1]], [np.ones((1, 2), np.float32), np.ones((1, 3), np.float32)])
    with pytest.raises(tw.errors.DTypeError, match="same dtype"):
        tw.dynamic_stitch([[0], [1]], [np.ones(1, np.float32), np.ones(1, np.float64)])
    with pytest.raises(tw.errors.ShapeError, match="as many"):
        tw.dynamic_stitch([[0], [1]], [np.ones(1, np.float32)])
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"indices\[1\]\[0\] = -1"):
        tw.dynamic_stitch([[0], [-1]], [np.ones(1, np.float32), np.ones(1, np.float32)])
    assert tw.dynamic_stitch([np.zeros(0, np.int32)], [np.zeros((0, 2))]).shape == (0, 2)


def test_flat_index_like():
    check_against_numpy(lambda x: apply_op1("FlatIndexLike", [x]),
                        lambda x: np.arange(x.size, dtype=np.int32).reshape(x.shape),
                        np.zeros((2, 0, 3), np.float32))
    check_against_numpy(lambda x: apply_op1("FlatIndexLike", [x], {"dtype": tw.int64}),
                        lambda x: np.arange(x.size, dtype=np.int64).reshape(x.shape),
                        np.zeros((2, 3), np.float32))
