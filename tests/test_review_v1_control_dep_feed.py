"""A control dependency on a fed placeholder is satisfied by the feed (TensorFlow 1 rewires
the placeholder's control edges to the feed); unfed, the run still asks for a feed."""
import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.errors import InvalidArgumentError


def _graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        v = tf.Variable(1.0)
        with tf.control_dependencies([x]):
            y = tf.identity(tf.constant(3.0))
            bump = v.assign_add(x)
    return g, x, v, y, bump


def test_control_dependency_on_a_fed_placeholder_runs():
    g, x, v, y, bump = _graph()
    with tf.Session(graph=g) as s:
        s.run(v.initializer)
        assert s.run(y, {x: 2.0}) == np.float32(3.0)
        s.run(bump, {x: 2.5})
        assert s.run(v) == np.float32(3.5)


def test_control_dependency_on_an_unfed_placeholder_asks_for_the_feed():
    g, x, v, y, bump = _graph()
    with tf.Session(graph=g) as s:
        with pytest.raises(InvalidArgumentError, match="must feed a value for placeholder"):
            s.run(y)
