"""tw.nn.embedding_lookup (and the sampled losses that look weights up) shard ids "div" by
default, as TensorFlow 2's tf.nn.embedding_lookup always does (it has no
partition_strategy argument); tf.compat.v1.nn keeps TensorFlow 1's "mod" default.

Before, tw.nn defaulted to "mod", so ported TensorFlow 2 code given a list of shards got
other ids' rows without an error."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf1
from tests.ops.test_embedding import shards_of

TABLE = np.arange(14, dtype=np.float32).reshape(7, 2)
IDS = np.array([[6, 0, 3], [2, 5, 1]], np.int32)


@pytest.mark.parametrize("compiled", [False, True])
def test_tw_nn_embedding_lookup_defaults_to_div(compiled):
    shards = shards_of(TABLE, 3, "div")  # [3, 2, 2] rows, as TensorFlow 2 lays them out
    fn = lambda ids, *s: tw.nn.embedding_lookup(list(s), ids)  # noqa: E731
    if compiled:
        fn = tw.compile(fn)
    np.testing.assert_array_equal(np.asarray(fn(IDS, *shards)), TABLE[IDS])


def test_compat_v1_embedding_lookup_defaults_to_mod():
    shards = shards_of(TABLE, 3, "mod")
    g = tf1.Graph()
    with g.as_default():
        ids = tf1.placeholder(tf1.int32, [None, 3])
        rows = tf1.nn.embedding_lookup([tf1.constant(s) for s in shards], ids)
        rows_div = tf1.nn.embedding_lookup(
            [tf1.constant(s) for s in shards_of(TABLE, 3, "div")], ids,
            partition_strategy="div")
        with tf1.Session(graph=g) as sess:
            got, got_div = sess.run([rows, rows_div], {ids: IDS})
    np.testing.assert_array_equal(got, TABLE[IDS])
    np.testing.assert_array_equal(got_div, TABLE[IDS])


def test_tensorflow2_max_norm_passed_third_is_a_clear_error():
    with pytest.raises(ValueError, match="max_norm"):
        tw.nn.embedding_lookup([TABLE[:4], TABLE[4:]], [0], 1.0)


V, D, B = 7, 2, 3
SAMPLED = (np.array([3, 5, 1, 6], np.int64), np.full((B, 1), 0.3, np.float32),
           np.array([0.2, 0.4, 0.5, 0.1], np.float32))
LABELS = np.array([[0], [4], [6]], np.int64)
RNG = np.random.default_rng(3)
INPUTS = RNG.normal(size=(B, D)).astype(np.float32)
BIASES = RNG.normal(size=V).astype(np.float32)


@pytest.mark.parametrize("loss", ["nce_loss", "sampled_softmax_loss"])
def test_sampled_losses_shard_weights_as_their_namespace_says(loss):
    def run(fn, weights, biases):
        return np.asarray(tw.compile(lambda: fn(weights, biases, LABELS, INPUTS, 4, V,
                                                sampled_values=SAMPLED))())

    tw_loss, v1_loss = getattr(tw.nn, loss), getattr(tf1.nn, loss)
    want = run(tw_loss, TABLE, BIASES)
    got_tw = run(tw_loss, shards_of(TABLE, 3, "div"), shards_of(BIASES, 3, "div"))
    np.testing.assert_allclose(got_tw, want, rtol=1e-6)
    got_v1 = run(v1_loss, shards_of(TABLE, 3, "mod"), shards_of(BIASES, 3, "mod"))
    np.testing.assert_allclose(got_v1, want, rtol=1e-6)
