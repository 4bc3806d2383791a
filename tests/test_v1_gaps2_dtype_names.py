"""What users see of a dtype is TensorFlow's spelling: ``str(tf.float32)`` is
``"<dtype: 'float32'>"`` (TensorFlow 2.21's), ``.name`` ``'float32'``, and reprs of
variables, partitioned variables and TensorArrays say ``float64``, not the IR's
``f64``; the IR text and its cache keys keep the IR spelling (``ir_name``)."""

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.compiler.printer import print_graph

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def test_str_and_name_are_tensorflows():
    assert str(tf.float32) == "<dtype: 'float32'>"
    assert str(tw.int64) == "<dtype: 'int64'>" and f"{tw.bool}" == "<dtype: 'bool'>"
    assert tf.float32.name == "float32" and repr(tw.float32) == "tw.float32"
    assert tw.float32.ir_name == "f32"


def test_partitioned_variable_and_tensor_array_reprs():
    pv = tf.get_variable("emb", shape=[4, 2], dtype=tf.float64,
                         partitioner=tf.fixed_size_partitioner(2))
    assert "dtype=float64" in repr(pv) and "f64" not in repr(pv)
    ta = tw.TensorArray(tw.float32, size=2)
    assert "dtype=float32" in repr(ta) and "f32" not in repr(ta)


def test_lstm_state_tuple_dtype_mismatch_names_tensorflow_dtypes():
    state = tf.nn.rnn_cell.LSTMStateTuple(tf.zeros([1, 2]), tf.zeros([1, 2], tf.float64))
    with pytest.raises(TypeError, match="float32 and float64"):
        _ = state.dtype


def test_the_ir_text_keeps_the_ir_spelling():
    f = tw.compile(lambda x: x * 2.0)
    f(np.ones(2, np.float32))
    text = print_graph(f.get_concrete_function(np.ones(2, np.float32)).graph)
    assert "f32" in text and "<dtype" not in text and "float32" not in text
