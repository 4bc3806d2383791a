"""Review of tf.compat.v1.data against TensorFlow 2.21's ``tf.compat.v1`` graph mode:
datasets built inside ``with tf.Graph().as_default():`` (the usual TensorFlow 1 idiom)
from Python values.

TensorFlow 2.21 runs each program below (values in the asserts). tensorweave failed
every one with "tensor 'const' ... is symbolic and has no NumPy value while tracing":
a Python number or list given to a source, a padding value or returned by a map function
was converted by building a constant in the graph made default, which has no value."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf


def _first_two(make):
    with tf.Graph().as_default():
        it = tf.data.make_one_shot_iterator(make())
        x = it.get_next()
        with tf.Session() as sess:
            return sess.run(x), sess.run(x)


@pytest.mark.parametrize("make, expected", [
    (lambda: tf.data.Dataset.from_tensor_slices([1.0, 2.0, 3.0]), (1.0, 2.0)),
    (lambda: tf.data.Dataset.from_tensors(3).repeat(), (3, 3)),
    (lambda: tf.data.Dataset.range(3).map(lambda x: 5), (5, 5)),
    (lambda: tf.data.Dataset.range(3).map(lambda x: x * 2 + 1), (1, 3)),
])
def test_sources_and_maps_of_python_values(make, expected):
    a, b = _first_two(make)
    assert (a.item(), b.item()) == expected


def test_tuples_of_lists_keep_tensorflow_dtypes():
    (a, b), _ = _first_two(lambda: tf.data.Dataset.from_tensor_slices(([1, 2], [3.0, 4.0])))
    assert a.dtype == np.int32 and b.dtype == np.float32 and (a, b) == (1, 3.0)


def test_padding_value_given_as_a_python_number():
    def gen():
        for n in (1, 3, 2):
            yield np.full([n], n, np.int32)

    ds = lambda: tf.data.Dataset.from_generator(  # noqa: E731
        gen, output_types=tf.int32, output_shapes=[None]).padded_batch(
            2, padded_shapes=[4], padding_values=-1)
    first, second = _first_two(ds)
    np.testing.assert_array_equal(first, [[1, -1, -1, -1], [3, 3, 3, -1]])
    np.testing.assert_array_equal(second, [[2, 2, -1, -1]])
