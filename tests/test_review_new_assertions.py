"""Review of compat.v1 assertions against TensorFlow 2.21's ``tf.compat.v1`` in graph
mode: operands known while building (``tf.constant`` tensors, Python values) are
compared at once, as TensorFlow's ``_binary_assert`` does with ``constant_value``.

TensorFlow 2.21 raised InvalidArgumentError while building each call of
`test_failing_constants_raise_while_building` and returned an op for the passing ones
and for ``tf.constant([1, 2]) + 0`` (its ``constant_value`` folds only constants).
tensorweave built an Assert op that checks only when run, so a program that never runs
it (TensorFlow 1 code relying on the static check) passed silently."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


@pytest.mark.parametrize("build", [
    lambda: tf.assert_equal(tf.constant([1, 2]), tf.constant([1, 3])),
    lambda: tf.assert_equal(tf.constant([1, 2]), [1, 3]),
    lambda: tf.assert_none_equal(tf.constant([1, 2]), tf.constant([1, 3])),
    lambda: tf.assert_less(tf.constant(2), 1),
    lambda: tf.assert_greater_equal(np.array([0.5]), tf.constant([1.0])),
    lambda: tf.assert_positive(tf.constant([-1.0])),
    lambda: tf.assert_non_negative(tf.constant([-1.0])),
    lambda: tf.assert_negative(tf.constant([0])),
    lambda: tf.assert_non_positive(tf.constant([2.0])),
])
def test_failing_constants_raise_while_building(build):
    with pytest.raises(tf.errors.InvalidArgumentError, match="did not hold"):
        build()


def test_passing_constants_and_computed_operands_build_an_op():
    ok = [tf.assert_equal(tf.constant([1, 2]), tf.constant([1, 2])),
          tf.assert_greater(tf.constant([1.0, 2.0]), tf.constant([0.0])),
          tf.assert_positive(tf.constant([3.0]))]
    computed = tf.assert_equal(tf.constant([1, 2]) + 0, tf.constant([1, 3]))
    with tf.Session() as sess:
        sess.run(ok)
        with pytest.raises(tf.errors.InvalidArgumentError, match="did not hold"):
            sess.run(computed)
