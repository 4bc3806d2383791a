"""Errors name the function as users spell it (``tw.linalg.inv``, ``tw.nn.gelu``), and
TensorFlow 1's namespaces reach the newer op families with TF1's argument orders."""

import re

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf


@pytest.mark.parametrize("call, name", [
    (lambda: tw.linalg.inv(None), "tw.linalg.inv"),
    (lambda: tw.gather_nd(None, [0]), "tw.gather_nd"),
    (lambda: tw.nn.gelu(None), "tw.nn.gelu"),
    (lambda: tw.nn.l2_normalize(None), "tw.nn.l2_normalize"),
    (lambda: tw.math.unsorted_segment_max(None, [0], 1), "tw.math.unsorted_segment_max"),
    (lambda: tw.einsum("ij->j", None), "tw.einsum"),
])
def test_a_none_argument_names_the_public_function_and_this_line(call, name):
    with pytest.raises(tw.errors.DTypeError) as info:
        call()
    assert re.match(rf"{re.escape(name)} \(\S*test_api_names.py:\d+\)", str(info.value)), \
        str(info.value)


def test_v1_reaches_linalg_and_takes_boolean_mask_name_third():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [3, 3])
        inverse = tf.linalg.inv(x)
        rows = tf.boolean_mask(x, [True, False, True], "rows")
        with tf.Session() as sess:
            a = np.diag([2.0, 4.0, 8.0]).astype(np.float32)
            got_inverse, got_rows = sess.run([inverse, rows], {x: a})
    np.testing.assert_allclose(got_inverse, np.diag([0.5, 0.25, 0.125]))
    np.testing.assert_array_equal(got_rows, a[[0, 2]])
    assert rows.name.startswith("rows")


def test_v1_variables_take_the_enclosing_scopes_and_get_variable_does_not_double_them():
    g = tf.Graph()
    with g.as_default():
        with tf.variable_scope("gen"):
            w = tf.Variable(np.zeros(2, np.float32), name="w")
            v = tf.get_variable("v", initializer=np.zeros(2, np.float32))
            with tf.name_scope("layer"):
                u = tf.Variable(np.zeros(2, np.float32), name="u")
        other = tf.Variable(np.zeros(2, np.float32), name="w")
        assert [w.shared_name, v.shared_name, u.shared_name, other.shared_name] == \
            ["gen/w", "gen/v", "gen/layer/u", "w"]
        gen_vars = tf.trainable_variables(scope="gen")
        assert gen_vars == [w, v, u]
        loss = tf.reduce_sum(w * w) + tf.reduce_sum(other)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=gen_vars)
        assert train is not None


def test_pools_take_tf2s_input_and_tf1s_value_keywords():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    want = np.array([[5.0, 7.0], [13.0, 15.0]], np.float32).reshape(1, 2, 2, 1)
    np.testing.assert_array_equal(tw.nn.max_pool(input=x, ksize=2, strides=2,
                                                 padding="VALID"), want)
    np.testing.assert_array_equal(tw.nn.max_pool(value=x, ksize=2, strides=2,
                                                 padding="VALID"), want)
    np.testing.assert_array_equal(tw.nn.avg_pool(input=x, ksize=2, strides=2,
                                                 padding="VALID"), want - 2.5)
    with pytest.raises(tw.errors.DTypeError, match="exactly once"):
        tw.nn.max_pool(x, 2, 2, "VALID", value=x)
