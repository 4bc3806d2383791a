"""tf.compat.v1.train.piecewise_constant refuses floating boundaries with an integer step,
as TensorFlow 1 does (TF 2.21: "ValueError: Boundaries (<dtype: 'float32'>) must have
the same dtype as x (<dtype: 'int64'>)"). It cast them to the step's type, so a boundary
of -0.5 became 0 and step 0 got values[0] instead of values[1]."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


@pytest.mark.parametrize("step", [tf.constant(0, tf.int64), 0, np.int32(3)])
def test_float_boundaries_with_an_integer_step_are_an_error(step):
    with pytest.raises(ValueError, match="same dtype as x"):
        tf.train.piecewise_constant(step, [-0.5], [1.0, 2.0])


def test_integer_step_variable_and_integer_boundaries_still_work():
    step = tf.train.get_or_create_global_step()
    lr = tf.train.piecewise_constant(step, [2, 5], [1.0, 0.5, 0.1])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        got = []
        for _ in range(7):
            got.append(float(s.run(lr)))
            s.run(step.assign_add(1))
    np.testing.assert_allclose(got, [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.1])


def test_float_step_with_float_boundaries():
    lr = tf.train.piecewise_constant(tf.constant(0.25), [-0.5, 0.5], [1.0, 2.0, 3.0])
    with tf.Session() as s:
        assert float(s.run(lr)) == 2.0
