"""A v1 iterator's ``get_next()`` called inside a ``tf.while_loop`` body or a
``tf.cond`` branch takes an element each time the body (branch) runs, as in TensorFlow.

The op used to go to the top of the graph whatever the builder, so the loop read the
element taken once before it: summing four ``get_next()`` of ``range(1, 6)`` gave 4
(1 + 1 + 1 + 1) where TensorFlow 2.21 gives 10 (1 + 2 + 3 + 4).
"""

from __future__ import annotations

import numpy as np

import tensorweave as tw
import tensorweave.compat.v1 as tf


def test_get_next_in_a_while_loop_body_takes_an_element_per_iteration():
    with tf.Graph().as_default():
        it = tf.data.make_one_shot_iterator(tw.data.Dataset.range(1, 6))

        def body(i, acc):
            return i + 1, acc + it.get_next()

        _, total = tf.while_loop(lambda i, acc: i < 4, body,
                                 [tf.constant(0), tf.constant(0, tw.int64)])
        after = it.get_next()
        with tf.Session() as sess:
            assert sess.run(total) == 1 + 2 + 3 + 4
            assert sess.run(after) == 5  # the loop consumed four elements


def test_get_next_of_a_structured_element_in_a_loop():
    data = (np.arange(6, dtype=np.float32).reshape(3, 2), np.array([1, 2, 3], np.int32))
    with tf.Graph().as_default():
        it = tf.data.make_initializable_iterator(tw.data.Dataset.from_tensor_slices(data))

        def body(i, acc):
            x, y = it.get_next()
            return i + 1, acc + tf.reduce_sum(x) * tf.cast(y, tf.float32)

        _, total = tf.while_loop(lambda i, acc: i < 3, body, [tf.constant(0), tf.constant(0.0)])
        with tf.Session() as sess:
            for _ in range(2):  # each initializer run starts a new pass
                sess.run(it.initializer)
                assert sess.run(total) == 1 * 1 + 5 * 2 + 9 * 3


def test_get_next_in_a_cond_branch_takes_an_element_only_when_the_branch_runs():
    with tf.Graph().as_default():
        it = tf.data.make_one_shot_iterator(tw.data.Dataset.range(10, 20))
        take = tf.placeholder(tf.bool, [])
        out = tf.cond(take, lambda: it.get_next(), lambda: tf.constant(-1, tw.int64))
        with tf.Session() as sess:
            got = [int(sess.run(out, {take: t})) for t in (True, False, True, True)]
    assert got == [10, -1, 11, 12]
