"""tf.compat.v1.data: one-shot and initializable iterators whose get_next() feeds a
TensorFlow 1 Session graph, OutOfRangeError at the end, per-Session iterator state."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf


@pytest.fixture
def graph():
    """A new default graph for the test."""
    with tf.Graph().as_default() as g:
        yield g


def _drain(sess, fetches):
    out = []
    while True:
        try:
            out.append(sess.run(fetches))
        except tf.errors.OutOfRangeError:
            return out


def test_one_shot_iterator_runs_one_pass_then_out_of_range(graph):
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    ds = tf.data.Dataset.from_tensor_slices((x, np.arange(5))).batch(2)
    xb, yb = tf.data.make_one_shot_iterator(ds).get_next()
    assert list(xb.shape) == [None, 2] and xb.dtype is tw.float32 and yb.dtype is tw.int64
    doubled = xb * 2.0
    with tf.Session() as sess:
        out = _drain(sess, [doubled, yb])
        with pytest.raises(tf.errors.OutOfRangeError):  # stays at the end
            sess.run(yb)
    np.testing.assert_array_equal(np.concatenate([a for a, _ in out]), x * 2)
    assert [b.tolist() for _, b in out] == [[0, 1], [2, 3], [4]]
    with tf.Session() as sess:  # a new Session has its own iterator
        assert len(_drain(sess, yb)) == 3


def test_one_run_takes_one_element_for_every_fetch_of_it(graph):
    nxt = tf.data.make_one_shot_iterator(tf.data.Dataset.range(4)).get_next()
    with tf.Session() as sess:
        a, b = sess.run([nxt, nxt + 100])
        assert (int(a), int(b)) == (0, 100)
        assert int(sess.run(nxt)) == 1


def test_initializable_iterator_needs_and_restarts_with_its_initializer(graph):
    ds = tf.data.Dataset.range(3).map(lambda v: v * 10)
    it = ds.make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="not been initialized"):
            sess.run(nxt)
        for _ in range(2):
            sess.run(it.initializer)
            assert [int(v) for v in _drain(sess, nxt)] == [0, 10, 20]
        sess.run(it.initializer)
        assert int(sess.run(nxt)) == 0
        sess.run(it.initializer)  # restarts mid-pass
        assert int(sess.run(nxt)) == 0
    with pytest.raises(ValueError, match="one-shot"):
        tf.data.make_one_shot_iterator(ds).initializer  # noqa: B018


def test_dict_elements_and_output_types_and_shapes(graph):
    ds = tf.data.Dataset.from_tensor_slices({"a": np.zeros((4, 3), np.float32),
                                             "b": np.arange(4, dtype=np.int32)}).batch(2, True)
    it = tf.data.make_one_shot_iterator(ds)
    assert it.output_types == {"a": tw.float32, "b": tw.int32}
    assert it.output_shapes == {"a": (2, 3), "b": (2,)}
    assert tf.data.get_output_shapes(ds) == it.output_shapes
    el = it.get_next()
    with tf.Session() as sess:
        assert sess.run(el["b"]).tolist() == [0, 1]


def test_tf1_training_loop_over_epochs_until_out_of_range(graph):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 2)).astype(np.float32)
    y = (x @ np.array([[2.0], [-1.0]], np.float32)).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(32, seed=1).batch(8).repeat(30)
    xb, yb = tf.data.make_one_shot_iterator(ds).get_next()
    w = tf.Variable(np.zeros((2, 1), np.float32))
    loss = tf.reduce_mean(tf.square(tf.matmul(xb, w) - yb))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        losses = _drain(sess, [train, loss])
        learned = sess.run(w)
    assert len(losses) == 4 * 30
    assert losses[-1][1] < 1e-4 < losses[0][1]
    np.testing.assert_allclose(learned, [[2.0], [-1.0]], atol=1e-2)


def test_pipeline_errors_surface_from_session_run(graph):
    ds = tf.data.Dataset.from_generator(lambda: iter([[1], [1, 2]]),
                                        output_signature=tw.TensorSpec([None], tw.int32)).batch(2)
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    with tf.Session() as sess, pytest.raises(tw.errors.InvalidArgumentError, match="Dataset.batch"):
        sess.run(nxt)


def test_an_iterator_inside_a_compiled_function_is_refused():
    # (inside a v1 graph a compiled function builds into that graph, where iterators work)
    ds = tw.data.Dataset.range(3)

    @tw.compile
    def f(x):
        tf.data.make_one_shot_iterator(ds)
        return x
    with pytest.raises(tw.errors.TracingError, match="compat.v1 graphs"):
        f(np.zeros(1))


def test_reinitializable_iterator_switches_between_datasets(graph):
    train = tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32)).batch(2)
    val = tf.data.Dataset.from_tensor_slices(np.arange(100, 103, dtype=np.float32)).batch(2)
    it = tf.data.Iterator.from_structure(tf.data.get_output_types(train),
                                         tf.data.get_output_shapes(train))
    assert it.element_spec == tw.TensorSpec([None], tw.float32)
    nxt = it.get_next()
    train_init, val_init = it.make_initializer(train), it.make_initializer(val)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="not been initialized"):
            sess.run(nxt)
        for _ in range(2):
            sess.run(train_init)
            assert [v.tolist() for v in _drain(sess, nxt)] == [[0, 1], [2, 3], [4, 5]]
            sess.run(val_init)
            assert [v.tolist() for v in _drain(sess, nxt)] == [[100, 101], [102]]
    with pytest.raises(tw.errors.InvalidArgumentError, match="do not fit"):
        it.make_initializer(tf.data.Dataset.range(3))
    with pytest.raises(ValueError, match="make_initializer"):
        it.initializer  # noqa: B018
