"""tf.compat.v1.scatter_add / scatter_sub / scatter_update return the variable's value
after the update, as TensorFlow 1 does ("returned as a convenience for operations that want
to use the updated values after the update is done"): ``sess.run(tf.scatter_add(v, ...))``
gave None before (the function returned the update op)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf

CASES = [
    ("scatter_add", [[1, 1], [2, 2], [3, 3]], [[1, 1], [12, 12], [3, 3]],
     [[1, 1], [22, 22], [3, 3]]),
    ("scatter_sub", [[1, 1], [2, 2], [3, 3]], [[1, 1], [-8, -8], [3, 3]],
     [[1, 1], [-18, -18], [3, 3]]),
    ("scatter_update", [[1, 1], [2, 2], [3, 3]], [[1, 1], [10, 10], [3, 3]],
     [[1, 1], [10, 10], [3, 3]]),
]


@pytest.mark.parametrize("name, initial, after_one, after_two", CASES)
def test_session_run_of_a_scatter_gives_the_updated_value(name, initial, after_one, after_two):
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.array(initial, np.float32))
        out = getattr(tf, name)(v, [1], np.full((1, 2), 10.0, np.float32))
        assert isinstance(out, tw.Tensor)
        doubled = out * 2.0  # usable as a tensor
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        np.testing.assert_array_equal(sess.run(out), after_one)
        np.testing.assert_array_equal(sess.run(doubled), np.array(after_two) * 2)
        np.testing.assert_array_equal(sess.run(v), after_two)


def test_the_tensorflow1_flavor_run_eagerly_returns_the_updated_value():
    # (tf.compat.v1's functions build into the default graph; the wrapper also runs eagerly)
    from tensorweave.frontend.ops import scatter
    v = tw.Variable(np.zeros((3, 2), np.float32))
    got = scatter.returning_value(scatter.scatter_add)(v, [2, 2], np.ones((2, 2), np.float32))
    np.testing.assert_array_equal(np.asarray(got), [[0, 0], [0, 0], [2, 2]])
    np.testing.assert_array_equal(v.numpy(), [[0, 0], [0, 0], [2, 2]])
