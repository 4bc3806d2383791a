"""TensorFlow 1's way to feed NumPy data to a dataset: ``from_tensor_slices(placeholder)``
with an initializable iterator, ``sess.run(it.initializer, feed_dict)`` at each pass.

tensorweave refused it ("tw.data pipelines hold host values ... not values of a graph
being built"). Now the initializer computes the tensors (feeds included) and iterates a
copy of the pipeline holding them; the values below are TensorFlow 2.21's for the same
programs (``[2, 4, end, 10, 12, 14, end]`` for the first).
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf

D = tw.data.Dataset


def _drain(sess, fetch) -> list:
    out = []
    try:
        while True:
            out.append(sess.run(fetch))
    except tw.errors.OutOfRangeError:
        return out


def test_refeeding_the_initializer_iterates_the_new_values():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        it = tf.data.make_initializable_iterator(D.from_tensor_slices(x).map(lambda v: v * 2))
        nxt = it.get_next()
        assert nxt.shape == ()
        with tf.Session() as sess:
            sess.run(it.initializer, {x: [1.0, 2.0]})
            assert [float(v) for v in _drain(sess, nxt)] == [2.0, 4.0]
            sess.run(it.initializer, {x: [5.0, 6.0, 7.0]})
            assert [float(v) for v in _drain(sess, nxt)] == [10.0, 12.0, 14.0]


def test_a_structure_of_placeholders_and_arrays_through_batch_zip_and_concatenate():
    images = np.arange(10, dtype=np.float32).reshape(5, 2)
    labels = np.arange(5, dtype=np.int64)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2])
        y = tf.placeholder(tf.int64, [None])
        ds = D.from_tensor_slices({"x": x, "y": y, "w": np.ones(5, np.float32)})
        ds = D.zip((ds, D.range(100))).concatenate(
            D.zip((D.from_tensors({"x": x[0], "y": y[0], "w": np.float32(0)}), D.range(1))))
        ds = ds.batch(2)
        it = tf.data.make_initializable_iterator(ds)
        element, index = it.get_next()
        assert element["x"].shape == (None, 2)
        with tf.Session() as sess:
            for scale in (1, 10):
                sess.run(it.initializer, {x: images * scale, y: labels + scale})
                got = _drain(sess, [element, index])
                xs = np.concatenate([g[0]["x"] for g in got])
                np.testing.assert_array_equal(xs, np.concatenate([images, images[:1]]) * scale)
                ys = np.concatenate([g[0]["y"] for g in got])
                np.testing.assert_array_equal(ys, np.concatenate([labels, labels[:1]]) + scale)
                np.testing.assert_array_equal(np.concatenate([g[1] for g in got]),
                                              [0, 1, 2, 3, 4, 0])
                np.testing.assert_array_equal(np.concatenate([g[0]["w"] for g in got]),
                                              [1, 1, 1, 1, 1, 0])


def test_fed_pipeline_with_cache_and_shuffle_uses_each_feed():
    """Each initialization iterates its own copy: a cache filled by one feed is not
    replayed for the next."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, [None])
        it = tf.data.make_initializable_iterator(
            D.from_tensor_slices(x).cache().shuffle(10, seed=1).repeat(2))
        nxt = it.get_next()
        with tf.Session() as sess:
            for feed in ([1, 2, 3], [7, 8]):
                sess.run(it.initializer, {x: feed})
                assert sorted(int(v) for v in _drain(sess, nxt)) == sorted(feed * 2)


def test_reinitializable_iterator_feeds_each_dataset():
    with tf.Graph().as_default():
        train_x = tf.placeholder(tf.int64, [None])
        it = tf.data.Iterator.from_structure(tw.int64, tw.TensorShape([]))
        nxt = it.get_next()
        train_init = it.make_initializer(D.from_tensor_slices(train_x))
        val_init = it.make_initializer(D.range(3))
        with tf.Session() as sess:
            sess.run(train_init, {train_x: [10, 11]})
            assert [int(v) for v in _drain(sess, nxt)] == [10, 11]
            sess.run(val_init)
            assert [int(v) for v in _drain(sess, nxt)] == [0, 1, 2]
            sess.run(train_init, {train_x: [20]})
            assert [int(v) for v in _drain(sess, nxt)] == [20]


def test_sessions_have_their_own_values():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, [None])
        it = tf.data.make_initializable_iterator(D.from_tensor_slices(x))
        nxt = it.get_next()
        with tf.Session() as a, tf.Session() as b:
            a.run(it.initializer, {x: [1, 2, 3]})
            b.run(it.initializer, {x: [9]})
            assert int(a.run(nxt)) == 1 and int(b.run(nxt)) == 9
            assert int(a.run(nxt)) == 2
            with pytest.raises(tw.errors.OutOfRangeError):
                b.run(nxt)


def test_misuse_is_a_clear_error():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        ds = D.from_tensor_slices(x)
        with pytest.raises(ValueError, match="one-shot iterator cannot capture"):
            tf.data.make_one_shot_iterator(ds)
        it = tf.data.make_initializable_iterator(ds)
        with tf.Session() as sess, pytest.raises(Exception, match="Placeholder"):
            sess.run(it.initializer)  # not fed
        with pytest.raises(ValueError, match="same first dimension"):
            D.from_tensor_slices((tf.placeholder(tf.float32, [2]), np.zeros(3)))
        with pytest.raises(ValueError, match="scalar"):
            D.from_tensor_slices(tf.placeholder(tf.float32, []))


def test_fed_rows_of_different_lengths_fail_when_initialized():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        y = tf.placeholder(tf.float32, [None])
        it = tf.data.make_initializable_iterator(D.from_tensor_slices((x, y)))
        with tf.Session() as sess, pytest.raises(ValueError, match="same first dimension"):
            sess.run(it.initializer, {x: [1.0, 2.0], y: [1.0]})
