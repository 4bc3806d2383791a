"""A cond whose predicate tests a variable's initialization reads that variable only in
the branch taken (TensorFlow's semantics), and `Variable.initialized_value()`.

Before, a branch that only read the variable had the read hoisted in front of the ``If``,
so ``cond(is_variable_initialized(v), v.read_value, ...)`` failed on an uninitialized
`v` even though the other branch was the one taken (TensorFlow 2.21, graph mode: -1.0
before initialization, 3.0 after)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.errors import FailedPreconditionError

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def test_cond_on_is_variable_initialized_reads_only_when_taken():
    v = tf.Variable(3.0)
    r = tf.cond(tf.is_variable_initialized(v), v.read_value, lambda: tf.constant(-1.0))
    with tf.Session() as s:
        assert s.run(r) == -1.0
        s.run(v.initializer)
        assert s.run(r) == 3.0


def test_predicate_computed_from_the_test_keeps_the_read_in_the_branch():
    v = tf.Variable([1.0, 2.0])
    ready = tf.logical_and(tf.is_variable_initialized(v), tf.constant(True))
    r = tf.cond(ready, lambda: v.read_value() * 2.0, lambda: tf.zeros([2]))
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(r), [0.0, 0.0])
        s.run(v.initializer)
        np.testing.assert_array_equal(s.run(r), [2.0, 4.0])


def test_other_conds_still_fail_on_an_uninitialized_read():
    # not guarded by an initialization test: reading v is an error, as in TensorFlow
    v = tf.Variable(3.0)
    r = tf.cond(tf.constant(True), v.read_value, lambda: tf.constant(-1.0))
    with tf.Session() as s, pytest.raises(FailedPreconditionError, match="uninitialized"):
        s.run(r)


def test_initialized_value_gives_a_consistent_dependent_initializer():
    tf.set_random_seed(1)
    w = tf.Variable(tf.random_normal([3]), name="w")
    w2 = tf.Variable(w.initialized_value() * 2.0, name="w2")
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        a, b = s.run([w, w2])
        np.testing.assert_array_equal(b, 2.0 * a)
        s.run(w.assign([1.0, 2.0, 3.0]))
        np.testing.assert_array_equal(s.run(w.initialized_value()), [1.0, 2.0, 3.0])


def test_gradients_through_a_plain_cond_read_still_flow():
    v = tf.Variable(2.0)
    y = tf.cond(tf.constant(True), lambda: v * v, lambda: v)
    (g,) = tf.gradients(y, [v])
    with tf.Session() as s:
        s.run(v.initializer)
        assert s.run(g) == 4.0
