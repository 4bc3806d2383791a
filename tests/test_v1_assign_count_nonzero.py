"""tw.math.count_nonzero (and tf.compat.v1.count_nonzero), and TensorFlow 1's
tf.assign / tf.assign_add / tf.assign_sub functions."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
import tensorweave.compat.v1 as tf

_VALUES = hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                     elements=st.sampled_from([0.0, -0.0, 1.5, -2.0, np.nan, np.inf]))


@settings(max_examples=25, deadline=None)
@given(x=_VALUES, data=st.data())
def test_count_nonzero_matches_numpy(x, data):
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))
    keepdims = data.draw(st.booleans())
    want = np.count_nonzero(x, axis=axis, keepdims=keepdims)
    for target in ("reference", "cpu"):
        f = tw.compile(lambda a: tw.math.count_nonzero(a, axis, keepdims), target=target)
        got = np.asarray(f(x))
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)


def test_count_nonzero_of_bool_and_ints_with_a_dtype():
    assert int(tw.math.count_nonzero(np.array([True, False, True]))) == 2
    got = tw.math.count_nonzero(np.array([[0, 3], [-1, 0]], np.int32), axis=0, dtype=tw.int32)
    assert got.dtype == tw.int32
    np.testing.assert_array_equal(np.asarray(got), [1, 1])


def test_v1_count_nonzero_in_a_session():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [2, 3])
        c = tf.count_nonzero(p, 1)
        with tf.Session() as s:
            out = s.run(c, {p: np.array([[0, 1, 2], [0, 0, 3]], np.float32)})
    np.testing.assert_array_equal(out, [2, 1])


def test_v1_assign_functions_return_the_value_after_the_update():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable([1.0, 2.0])
        set_ = tf.assign(v, [3.0, 4.0])
        add = tf.assign_add(v, [1.0, 1.0])
        sub = tf.assign_sub(v, [0.5, 0.5], name="dec")
        assert sub.name.startswith("dec/")
        with tf.Session() as s:
            s.run(v.initializer)
            np.testing.assert_array_equal(s.run(set_), [3.0, 4.0])
            np.testing.assert_array_equal(s.run(add), [4.0, 5.0])
            np.testing.assert_array_equal(s.run(sub), [3.5, 4.5])
            np.testing.assert_array_equal(s.run(v), [3.5, 4.5])


def test_v1_assign_of_a_non_variable_is_a_clear_error():
    with pytest.raises(TypeError, match="tf.assign updates a variable"):
        tf.assign(3.0, 1.0)
