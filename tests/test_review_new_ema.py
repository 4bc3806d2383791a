"""Review of ``tf.train.ExponentialMovingAverage`` against TensorFlow 2.21's
``tf.compat.v1`` (graph mode), running the same programs.

A shadow starts at its variable's value when the variable is initialized, else at the
variable's initial value (TensorFlow's ``cond(is_variable_initialized(v), v.read_value,
lambda: v.initial_value)``). TensorFlow 2.21 gave ``[5, 5, 5]`` for each case below;
tensorweave failed with "attempting to use uninitialized variable 'w'": its cond read
the variable before branching (a read-only branch's read is hoisted), so the shadow's
initializer needed `w` initialized first."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def _model(initial):
    w = tf.Variable(initial(), name="w")
    ema = tf.train.ExponentialMovingAverage(0.5)
    op = ema.apply([w])
    return w, ema, op


def test_the_shadow_initializer_alone_uses_the_initial_value():
    w, ema, _ = _model(lambda: tf.constant([5.0, 5.0, 5.0]))
    with tf.Session() as sess:
        sess.run(ema.average(w).initializer)
        np.testing.assert_array_equal(sess.run(ema.average(w)), [5.0, 5.0, 5.0])
        # w itself is still uninitialized
        assert not sess.run(tf.is_variable_initialized(w))


def test_global_initializer_with_a_computed_initial_value():
    # a stateful op in the initial value: TensorFlow 2.21 gives [5, 5, 5] for both
    w, ema, op = _model(lambda: tf.random_normal([3], seed=1) * 0.0 + 5.0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run([w, ema.average(w)]), [[5.0] * 3, [5.0] * 3])
        sess.run(w.assign([1.0, 3.0, 9.0]))
        sess.run(op)
        np.testing.assert_array_equal(sess.run(ema.average(w)), [3.0, 4.0, 7.0])


def test_the_shadow_of_an_initialized_variable_starts_at_its_current_value():
    w, ema, _ = _model(lambda: tf.constant([5.0, 5.0, 5.0]))
    with tf.Session() as sess:
        sess.run(w.initializer)
        sess.run(w.assign([1.0, 2.0, 3.0]))
        sess.run(ema.average(w).initializer)
        np.testing.assert_array_equal(sess.run(ema.average(w)), [1.0, 2.0, 3.0])


def test_the_update_op_is_named_after_the_name_scope_once():
    # TensorFlow 2.21: 'ns/ExponentialMovingAverage' (was '.../ExponentialMovingAverage'
    # twice)
    w = tf.Variable([1.0], name="w")
    with tf.name_scope("ns"):
        op = tf.train.ExponentialMovingAverage(0.5).apply([w])
    assert op.name == "ns/ExponentialMovingAverage"
