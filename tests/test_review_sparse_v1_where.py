"""TensorFlow 1's ``tf.where(condition, x, y)``: a rank-1 condition selects whole rows of
x and y (its length is their first dim), as TensorFlow 1's Select did. compat.v1 used
TensorFlow 2's broadcasting where, which lines the condition up with the last dim: for
3 x 3 operands it picked columns ([[1, 0, 1]] * 3 for [True, False, True], where
TensorFlow 1 gives rows [[1, 1, 1], [0, 0, 0], [1, 1, 1]]) and for 2 x 3 it failed."""

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf


def _run(fetch):
    with tf.Session() as sess:
        return sess.run(fetch)


@pytest.mark.parametrize("shape", [(3, 3), (3, 2), (3, 2, 4)])
def test_a_vector_condition_selects_rows(shape):
    cond = np.array([True, False, True])
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    y = -x
    with tf.Graph().as_default():
        got = _run(tf.where(cond, x, y))
    want = np.where(cond.reshape((3,) + (1,) * (len(shape) - 1)), x, y)
    np.testing.assert_array_equal(got, want)


def test_other_conditions_are_elementwise_and_one_argument_gives_coordinates():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    cond = x > 2
    with tf.Graph().as_default():
        same, scalar, vec, coords = _run([tf.where(cond, x, -x), tf.where(True, x, -x),
                                          tf.where(np.array([True, False]), [1, 2], [3, 4]),
                                          tf.where(cond)])
    np.testing.assert_array_equal(same, np.where(cond, x, -x))
    np.testing.assert_array_equal(scalar, x)
    np.testing.assert_array_equal(vec, [1, 4])
    np.testing.assert_array_equal(coords, np.argwhere(cond))


def test_where_v2_broadcasts_and_tw_where_is_unchanged():
    cond = np.array([True, False, True])
    x, y = np.ones((3, 3), np.float32), np.zeros((3, 3), np.float32)
    with tf.Graph().as_default():
        got = _run(tf.where_v2(cond, x, y))
    np.testing.assert_array_equal(got, np.where(cond, x, y))
    np.testing.assert_array_equal(tw.where(cond, x, y), np.where(cond, x, y))


def test_a_vector_condition_of_another_length_than_the_rows_is_an_error():
    with tf.Graph().as_default(), pytest.raises(tw.errors.ShapeError, match="selects rows"):
        tf.where(np.array([True, False, True]), np.ones((1, 3)), np.zeros((1, 3)))
