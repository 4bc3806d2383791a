"""`top_k` returns TensorFlow's TopKV2 named tuple: ``tf.nn.top_k(x, k).indices`` is how
most programs read it (it was a plain tuple: an AttributeError); unpacking still works,
in eager code, compiled functions and v1 Session fetches."""

from __future__ import annotations

import numpy as np

import tensorweave as tw
import tensorweave.compat.v1 as tf

X = np.array([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]], np.float32)


def test_eager_fields_and_unpacking():
    r = tw.math.top_k(X, 2)
    np.testing.assert_array_equal(r.values.numpy(), [[3.0, 2.0], [4.0, 0.5]])
    np.testing.assert_array_equal(r.indices.numpy(), [[0, 2], [1, 0]])
    values, indices = tw.nn.top_k(X, 1)
    np.testing.assert_array_equal(indices.numpy(), [[0], [1]])
    np.testing.assert_array_equal(values.numpy(), [[3.0], [4.0]])


def test_compiled_function_returning_fields_and_the_tuple():
    @tw.compile
    def f(x):
        r = tw.nn.top_k(x, 2)
        return r.indices, r

    indices, r = f(X)
    np.testing.assert_array_equal(indices, [[0, 2], [1, 0]])
    np.testing.assert_array_equal(r.values, [[3.0, 2.0], [4.0, 0.5]])
    assert r._fields == ("values", "indices")


def test_v1_session_fetches_the_named_tuple():
    tf.reset_default_graph()
    r = tf.nn.top_k(tf.constant(X), 2)
    with tf.Session() as s:
        got = s.run(r)
        np.testing.assert_array_equal(got.indices, [[0, 2], [1, 0]])
        np.testing.assert_array_equal(s.run(r.values), [[3.0, 2.0], [4.0, 0.5]])
    tf.reset_default_graph()
