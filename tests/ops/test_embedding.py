"""tw.nn.embedding_lookup against NumPy: one table or shards split by "mod" or "div"
(uneven shard sizes, empty shards, ids of any rank), max_norm, gradients against finite
differences, colocation of each shard's Gather, and errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tests.helpers import check_against_numpy, check_gradients
from tests.ops.test_array import seeds, spec


def shards_of(table, n, strategy):
    """`table` split by rows into `n` shards as TensorFlow's partitioners lay them out."""
    if strategy == "mod":
        return [table[k::n] for k in range(n)]
    q, extras = divmod(len(table), n)
    sizes = [q + 1 if k < extras else q for k in range(n)]
    return np.split(table, np.cumsum(sizes)[:-1])


def np_lookup(table, ids, max_norm=None):
    rows = table[ids]
    if max_norm is None:
        return rows
    axes = tuple(range(ids.ndim, rows.ndim))
    norm = np.sqrt(np.sum(rows.astype(np.float64) ** 2, axis=axes, keepdims=True))
    scale = max_norm / np.maximum(norm, max_norm)
    return (rows * scale).astype(table.dtype)


def lookup(strategy, max_norm=None):
    return lambda ids, *shards: tw.nn.embedding_lookup(list(shards), ids, strategy,
                                                       max_norm=max_norm)


@given(st.integers(1, 12), st.integers(1, 4), st.sampled_from(["mod", "div"]),
       hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=3),
       hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3),
       st.sampled_from([np.int32, np.int64]), st.data())
def test_embedding_lookup_matches_numpy(vocab, n, strategy, element, id_shape, id_dtype, data):
    rng = np.random.default_rng(data.draw(seeds))
    table = rng.standard_normal((vocab,) + element).astype(np.float32)
    ids = rng.integers(0, vocab, id_shape).astype(id_dtype)
    shards = shards_of(table, n, strategy)
    max_norm = data.draw(st.sampled_from([None, 0.5, 2.0]))
    check_against_numpy(lookup(strategy, max_norm), lambda i, *s: np_lookup(table, i, max_norm),
                        ids, *shards)


def test_div_with_uneven_shards_and_more_shards_than_rows():
    table = np.arange(10, dtype=np.float32)[:, None] * [1.0, -1.0]
    ids = np.array([[9, 0, 3], [4, 7, 6]], np.int32)
    shards = shards_of(table, 3, "div")
    assert [len(s) for s in shards] == [4, 3, 3]
    np.testing.assert_array_equal(tw.nn.embedding_lookup(shards, ids, "div"), table[ids])
    tiny = shards_of(table[:2], 4, "div")
    assert [len(s) for s in tiny] == [1, 1, 0, 0]
    np.testing.assert_array_equal(tw.nn.embedding_lookup(tiny, [1, 0, 1], "div"),
                                  table[[1, 0, 1]])


def test_max_norm_leaves_short_and_zero_rows_alone():
    table = np.array([[3.0, 4.0], [0.0, 0.0], [0.3, 0.4]], np.float32)
    got = tw.nn.embedding_lookup(table, [0, 1, 2], max_norm=1.0).numpy()
    np.testing.assert_allclose(got, [[0.6, 0.8], [0.0, 0.0], [0.3, 0.4]], rtol=1e-6)
    grad = tw.grad(lambda t: tw.reduce_sum(tw.nn.embedding_lookup(t, [1], max_norm=1.0)))
    assert np.isfinite(grad(table.astype(np.float64))).all()


@pytest.mark.parametrize("strategy", ["mod", "div"])
@pytest.mark.parametrize("max_norm", [None, 1.5])
def test_embedding_lookup_gradients(strategy, max_norm):
    rng = np.random.default_rng(3)
    table = rng.standard_normal((7, 3))
    shards = shards_of(table, 3, strategy)
    ids = np.array([[6, 0, 2], [2, 5, 6]], np.int64)  # repeated ids: their gradients add
    check_gradients(lambda i, *s: lookup(strategy, max_norm)(i, *[x * 1.0 for x in s]),
                    ids, *shards, argnums=(1, 2, 3))


def test_unknown_dims_and_a_single_table():
    table = np.arange(12, dtype=np.float32).reshape(6, 2)
    shards = shards_of(table, 2, "mod")
    ids = np.array([[5, 1], [0, 0], [3, 2]], np.int32)
    for sig in ([None, 2], [None, None], [None]):
        f = tw.compile(lambda i: tw.nn.embedding_lookup(shards, i, "mod"),
                       input_signature=[tw.TensorSpec(sig, tw.int32)])
        x = ids if len(sig) == 2 else ids[:, 0]
        np.testing.assert_array_equal(f(x), table[x])
    check_against_numpy(lambda i, t: tw.nn.embedding_lookup(t, i, max_norm=3.0),
                        lambda i, t: np_lookup(t, i, 3.0), ids, table)


def test_each_gather_is_colocated_with_its_shard():
    shards = [tw.Variable(np.ones((3, 2), np.float32), name=f"emb_{k}") for k in range(2)]
    f = tw.compile(lambda i: tw.nn.embedding_lookup(shards, i),
                   input_signature=[tw.TensorSpec([None], tw.int32)])
    graph = f.get_concrete_function().graph
    gathers = [n for n in graph.nodes if n.op == "Gather"]
    assert len(gathers) == 2
    for k, node in enumerate(gathers):
        assert node.attrs["_colocate_with"] == (f"emb_{k}",)
        assert node.inputs[0].producer.op == "ReadVariable"
    np.testing.assert_array_equal(f(np.array([5, 0], np.int32)), np.ones((2, 2)))


def test_errors():
    table = np.zeros((4, 2), np.float32)
    with pytest.raises(ValueError, match="partition_strategy"):
        tw.nn.embedding_lookup([table, table], [0], partition_strategy="range")
    with pytest.raises(TypeError, match="integers"):
        tw.nn.embedding_lookup(table, [0.5])
    with pytest.raises(ValueError, match="at least one"):
        tw.nn.embedding_lookup([], [0])
    with pytest.raises(tw.errors.ShapeError, match="div"):
        tw.compile(lambda t: tw.nn.embedding_lookup([t, t], [0], "div"),
                   input_signature=[spec([None, 2])])(table)
    with pytest.raises(tw.errors.InvalidArgumentError, match="Gather"):
        tw.nn.embedding_lookup([table, table], [17], "mod")
