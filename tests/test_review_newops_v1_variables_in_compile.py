"""compat.v1 variables made inside a @tw.compile function: a clear error at trace time.

They go to the default tf.Graph, which the traced function cannot read: the call failed
later with a bare KeyError (dynamic_rnn's cell) or NotFoundError (tf.get_variable) from
deep inside the runtime, naming neither the cause nor the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.errors import TracingError

THIS = "test_review_newops_v1_variables_in_compile.py"


pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def test_get_variable_inside_a_compiled_function_is_a_tracing_error():
    @tw.compile
    def scale(x):
        v = tf.get_variable("v", [2], tf.float64, initializer=tf.ones_initializer())
        return x * v

    with pytest.raises(TracingError, match="inside @tw.compile functions") as info:
        scale(np.ones(2))  # before: NotFoundError no variable named 'v' when it ran
    assert THIS in (info.value.location or "")


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_dynamic_rnn_inside_a_compiled_function_is_a_tracing_error(target):
    cell = tf.nn.rnn_cell.GRUCell(3)

    @tw.compile(target=target)
    def run(x, lengths):
        return tf.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=tf.float64)[0]

    with pytest.raises(TracingError, match="RNN cells"):
        run(np.ones((2, 3, 2)), np.int32([1, 3]))  # before: KeyError <Value rnn/gru_cell/...>


def test_v1_variables_in_a_graph_and_tw_variables_in_a_function_still_work():
    v = tf.get_variable("w", [2], tf.float64, initializer=tf.constant_initializer(3.0))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(v * 2), [6.0, 6.0])
    w = tw.Variable(np.float64([1.0, 2.0]))

    @tw.compile
    def use(x):
        return x * w

    np.testing.assert_array_equal(use(np.ones(2)), [1.0, 2.0])
