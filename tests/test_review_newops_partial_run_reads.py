"""Session.partial_run: a variable read that an earlier piece computed (without fetching
it) is never read again after a write, since TensorFlow runs it once per handle.

TF 2.21, the program below: x = 1, inc = 5, then y = r * b = 0 * 10 = 0.0 (r was read
once, before the assign_add its control dependency orders after x). tensorweave's second
piece read v again after the update and returned 50.0."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.errors import UnimplementedError

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_a_read_is_not_rerun_after_a_write(target):
    v = tf.Variable(0.0)
    a = tf.placeholder(tf.float32, [])
    b = tf.placeholder(tf.float32, [])
    r = v * 1.0
    x = r + a
    with tf.control_dependencies([x]):
        inc = tf.assign_add(v, 5.0)
    y = r * b
    with tf.Session(compile_target=target) as sess:
        sess.run(tf.global_variables_initializer())
        h = sess.partial_run_setup([x, inc, y], [a, b])
        np.testing.assert_array_equal(sess.partial_run(h, [x, inc], {a: 1.0}), [1.0, 5.0])
        with pytest.raises(UnimplementedError, match="ReadVariable"):
            sess.partial_run(h, y, {b: 10.0})  # before: 50.0 (TensorFlow: 0.0)
        # fetching the read in the earlier piece is the way: TensorFlow's answer
        h = sess.partial_run_setup([r, x, inc, y], [a, b])
        assert sess.partial_run(h, [r, x, inc], {a: 1.0})[0] == 5.0
        assert sess.partial_run(h, y, {b: 10.0}) == 50.0
        assert sess.run(v) == 10.0


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_a_loop_that_reads_is_not_rerun_after_a_write(target):
    v = tf.Variable(2.0)
    a = tf.placeholder(tf.float32, [])
    b = tf.placeholder(tf.float32, [])
    _, r = tf.while_loop(lambda i, s: i < 2, lambda i, s: (i + 1, s + v * 1.0),
                         [tf.constant(0), tf.constant(0.0)])
    x = r + a
    with tf.control_dependencies([x]):
        inc = tf.assign_add(v, 5.0)
    y = r * b
    with tf.Session(compile_target=target) as sess:
        sess.run(tf.global_variables_initializer())
        h = sess.partial_run_setup([x, inc, y], [a, b])
        assert sess.partial_run(h, [x, inc], {a: 1.0}) == [5.0, 7.0]
        with pytest.raises(UnimplementedError, match="ReadVariable|While"):
            sess.partial_run(h, y, {b: 10.0})  # before: 140.0 (r read again: 14 * 10)


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_reads_rerun_while_nothing_was_written(target):
    v = tf.Variable(3.0)
    a = tf.placeholder(tf.float32, [])
    b = tf.placeholder(tf.float32, [])
    r = v * 1.0
    ra, rb = r + a, r * b
    with tf.Session(compile_target=target) as sess:
        sess.run(tf.global_variables_initializer())
        h = sess.partial_run_setup([ra, rb], [a, b])
        assert sess.partial_run(h, ra, {a: 1.0}) == 4.0
        assert sess.partial_run(h, rb, {b: 10.0}) == 30.0  # the same value read again
