"""``Variable.load(value, session=None)``, TensorFlow 1's way to set a variable without
adding ops: it runs the variable's initializer with `value` fed for the initial value,
so every call reuses one compiled step. Checked against TensorFlow 2.21's
``tf.compat.v1`` on the same program (values, the no-session error, the shape error
naming the initial value's tensor, no new ops). One difference, on purpose: TensorFlow
truncates ``w.load(4.5)`` into an int32 variable to 4; here a feed that would change a
value is refused, as every feed is."""

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_load_sets_the_value_in_the_default_or_given_session(target):
    v = tf.Variable([1.0, 2.0], name="v")
    w = tf.Variable(3, name="w")
    y = v * 2.0
    with tf.Session(compile_target=target) as sess:
        v.load([5.0, 6.0])  # uninitialized before: load initializes it
        np.testing.assert_array_equal(sess.run(y), [10.0, 12.0])
        v.load(np.array([7, 8]))
        np.testing.assert_array_equal(sess.run(y), [14.0, 16.0])
        w.load(4.0)
        assert sess.run(w) == 4
    other = tf.Session(compile_target=target)
    v.load([9.0, 9.0], other)
    np.testing.assert_array_equal(other.run(v), [9.0, 9.0])
    other.close()


def test_load_adds_no_ops_and_compiles_once():
    v = tf.Variable(tf.zeros([3]), name="v")
    graph = tf.get_default_graph()
    with tf.Session() as sess:
        v.load([1.0, 2.0, 3.0])
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0, 3.0])  # (makes v/read)
        ops, steps = len(graph.get_operations()), len(sess._steps)
        for i in range(5):
            v.load(np.full(3, float(i)))
            np.testing.assert_array_equal(sess.run(v), np.full(3, float(i)))
        assert len(graph.get_operations()) == ops
        assert len(sess._steps) == steps


def test_load_errors_name_the_problem():
    v = tf.Variable([1.0, 2.0], name="v")
    w = tf.Variable(3, name="w")
    with pytest.raises(ValueError, match="session"):
        v.load([5.0, 6.0])
    with tf.Session() as sess:
        with pytest.raises(ValueError, match=r"shape \[1\] for tensor '.*', which has shape \[2\]"):
            v.load([1.0])
        with pytest.raises(tw.errors.InvalidArgumentError, match="fraction"):
            w.load(4.5)
        sess.run(w.initializer)
        assert sess.run(w) == 3
