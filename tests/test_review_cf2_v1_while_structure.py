"""TensorFlow 1's ``tf.while_loop`` returns the tensor itself when its loop variables hold
one tensor (``return_same_structure=False``, the default): ``sess.run(tf.while_loop(c, b,
[i]))`` is a scalar there, and ``result[0]`` or ``result + 1`` mean other things on a list.
``return_same_structure=True`` keeps the structure, and TensorFlow 2's ``tw.while_loop``
always does. TensorFlow 1's signature has `name` before `maximum_iterations`.

Checked with TensorFlow 2.21 (``tf.compat.v1``, ``disable_eager_execution``, control flow
v1 and v2 alike for these cases)."""

from __future__ import annotations

import numpy as np

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.frontend.tensor_array import TensorArray


def count(i):
    return i < 3


def step(i):
    return i + 1


def test_one_loop_variable_in_a_list_or_tuple_is_returned_itself():
    g = tf.Graph()
    with g.as_default():
        i = tf.constant(0)
        from_list = tf.while_loop(count, step, [i])
        from_tuple = tf.while_loop(count, step, (i,))
        from_list_body = tf.while_loop(count, lambda i: [i + 1], [i])
        bounded = tf.while_loop(lambda i: i < 100, step, [i], maximum_iterations=2)
        with tf.Session() as sess:
            for r in (from_list, from_tuple, from_list_body, bounded):
                assert isinstance(r, tw.Tensor)
            assert sess.run(from_list) == 3 and np.ndim(sess.run(from_list)) == 0
            assert sess.run(from_tuple) == 3
            assert sess.run(from_list_body) == 3
            assert sess.run(bounded) == 2


def test_return_same_structure_keeps_the_list():
    g = tf.Graph()
    with g.as_default():
        r = tf.while_loop(count, step, [tf.constant(0)], return_same_structure=True)
        assert isinstance(r, list) and len(r) == 1
        with tf.Session() as sess:
            assert sess.run(r) == [3]


def test_several_loop_variables_keep_their_structure():
    g = tf.Graph()
    with g.as_default():
        r = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2.0),
                          [tf.constant(0), tf.constant(1.0)])
        assert len(r) == 2
        with tf.Session() as sess:
            got = sess.run(r)
    assert got[0] == 3 and got[1] == 8.0


def test_a_single_nested_tensor_is_unpacked_to_the_tensor():
    # TensorFlow 2.21 with disable_eager_execution (control flow v2, its default) flattens
    # the result and returns its only tensor (control flow v1 gives [t] here).
    g = tf.Graph()
    with g.as_default():
        r = tf.while_loop(lambda v: v[0] < 3, lambda v: [[v[0] + 1]], [[tf.constant(0)]])
        assert isinstance(r, tw.Tensor)
        with tf.Session() as sess:
            assert sess.run(r) == 3


def test_a_single_tensor_array_is_returned_as_the_array():
    g = tf.Graph()
    with g.as_default():
        ta = tf.TensorArray(tf.float32, size=3, element_shape=[])
        r = tf.while_loop(lambda ta: True, lambda ta: ta.write(0, 5.0), [ta],
                          maximum_iterations=1)
        assert isinstance(r, TensorArray)
        with tf.Session() as sess:
            assert sess.run(r.read(0)) == 5.0


def test_name_comes_before_maximum_iterations():
    # TensorFlow 1: (cond, body, loop_vars, shape_invariants, parallel_iterations,
    # back_prop, swap_memory, name, maximum_iterations, return_same_structure)
    g = tf.Graph()
    with g.as_default():
        r = tf.while_loop(lambda i: i < 100, step, [tf.constant(0)], None, 10, True, False,
                          "loop", 4)
        with tf.Session() as sess:
            assert sess.run(r) == 4


def test_tensorflow_2_while_loop_keeps_the_structure():
    f = tw.compile(lambda x: tw.while_loop(lambda i: i < 3, lambda i: i + 1, [x]))
    r = f(np.int32(0))
    assert isinstance(r, list) and int(r[0]) == 3


def test_tensorflow_2_body_may_return_the_single_tensor_array_itself():
    def f(x):
        ta = tw.TensorArray(tw.float32, size=2, element_shape=[])
        out = tw.while_loop(lambda ta: True, lambda ta: ta.write(1, x), [ta],
                            maximum_iterations=1)
        return out[0].stack()

    assert list(tw.compile(f)(np.float32(4.0))) == [0.0, 4.0]
