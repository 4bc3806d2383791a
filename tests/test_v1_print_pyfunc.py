"""TensorFlow 1's ``tf.Print``, ``tf.py_func``/``tf.numpy_function`` and ``set_shape``
in compat.v1 graphs, on the reference and cpu targets.

Expected text and errors were checked against TensorFlow 2.21's compat.v1 (graph mode);
the comments quote what it printed."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave.compat.v1 as tf
from tensorweave.compat.v1.logging_ops import summarize_value
from tensorweave.errors import (
    InvalidArgumentError,
    ShapeError,
    TracingError,
    UnknownError,
)

TARGETS = ["reference", "cpu"]


pytestmark = pytest.mark.usefixtures("fresh_default_graph")


# -- tf.Print -------------------------------------------------------------------------------------

@pytest.mark.parametrize("target", TARGETS)
def test_print_matches_tensorflow_text_and_first_n(target, capsys):
    x = tf.placeholder(tf.float32, [None])
    y = tf.Print(x, [x, tf.reduce_sum(x), tf.constant([[1, 2, 3, 4], [5, 6, 7, 8]])],
                 message="vals: ", first_n=2, summarize=3)
    z = tf.Print(x * 2, [x])
    b = tf.Print(x, [tf.constant([True, False]), tf.constant(1.5, tf.float64),
                     tf.constant(np.arange(10, dtype=np.int64))])
    with tf.Session(compile_target=target) as sess:
        outs = [sess.run(y, {x: [1.5, 2, 3, 4, 5]}) for _ in range(3)]
        doubled = sess.run(z, {x: [1.0]})
        sess.run(b, {x: [1.0]})
    for out in outs:  # an identity of its input
        np.testing.assert_array_equal(out, np.float32([1.5, 2, 3, 4, 5]))
    np.testing.assert_array_equal(doubled, [2.0])
    # TF 2.21 wrote (first_n=2: the third run prints nothing):
    #   vals: [1.5 2 3...][15.5][[1 2 3...]...]     (twice)
    #   [1]
    #   [1 0][1.5][0 1 2...]
    assert capsys.readouterr().err.splitlines() == [
        "vals: [1.5 2 3...][15.5][[1 2 3...]...]",
        "vals: [1.5 2 3...][15.5][[1 2 3...]...]",
        "[1]",
        "[1 0][1.5][0 1 2...]",
    ]
    assert y.op.op == "Print" and y.shape.as_list() == [None]


@pytest.mark.parametrize("target", TARGETS)
def test_print_gradient_passes_to_its_input(target):
    x = tf.placeholder(tf.float32, [2])
    y = tf.Print(x, [x * 5], message="m")
    (g,) = tf.gradients(tf.reduce_sum(y * y), x)
    with tf.Session(compile_target=target) as sess:
        np.testing.assert_allclose(sess.run(g, {x: [1.0, -2.0]}), [2.0, -4.0])


def test_print_arguments_are_checked():
    x = tf.constant([1.0])
    with pytest.raises(TypeError, match="summarize must be an int"):
        tf.Print(x, [x], summarize=2.5)
    with pytest.raises(TypeError, match="first_n must be an int"):
        tf.Print(x, [x], first_n="2")


def test_summarize_value_cases():
    # TensorFlow's Tensor::SummarizeValue (print_v2=false); TF 2.21's tf.Print output
    # (inside its [...]) quoted
    a = np.arange(1, 9).reshape(2, 4)
    assert summarize_value(a, 3) == "[1 2 3...]..."
    assert summarize_value(a, 5) == "[1 2 3 4][5...]..."  # TF: s5:[[1 2 3 4][5...]...]
    assert summarize_value(a, -1) == "[1 2 3 4][5 6 7 8]"  # TF: sall:[[1 2 3 4][5 6 7 8]]
    assert summarize_value(a, 8) == "[1 2 3 4][5 6 7 8]"
    assert summarize_value(np.arange(3), 3) == "0 1 2"  # TF: s3:[0 1 2]
    assert summarize_value(np.arange(4), 0) == "..."  # TF, summarize=0: s0:[...][]
    assert summarize_value(np.zeros((0, 2)), 0) == ""
    assert summarize_value(np.float32(2.5), 3) == "2.5"


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.int32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4)),
       st.integers(-1, 30))
def test_summarize_value_shows_the_first_elements(a, summarize):
    """Whatever the brackets, the numbers shown are the first `summarize` elements in
    row-major order, followed by '...' exactly when some were left out."""
    text = summarize_value(a, summarize)
    limit = a.size if summarize < 0 else min(summarize, a.size)
    assert [int(t) for t in re.sub(r"[\[\].]", " ", text).split()] == \
        a.reshape(-1)[:limit].tolist()
    assert text.endswith("...") == (a.size > limit)


# -- tf.py_func / tf.numpy_function ---------------------------------------------------------------

@pytest.mark.parametrize("target", TARGETS)
def test_py_func_values_and_outputs(target):
    x = tf.placeholder(tf.float32, [None])
    y = tf.py_func(lambda a: a * 2, [x], tf.float32)
    # TF: Tensor("PyFunc:0", dtype=float32) <unknown> PyFunc
    assert y.name == "PyFunc:0" and y.shape.rank is None and y.op.op == "PyFunc"
    y.set_shape([None])
    pair = tf.py_func(lambda a: [a + 1, np.int64(3)], [x], [tf.float32, tf.int64])
    assert isinstance(pair, list) and [t.dtype for t in pair] == [tf.float32, tf.int64]
    pair[0].set_shape([None])
    pair[1].set_shape([])
    n = tf.numpy_function(lambda a, b: (a + b).astype(np.float32), [x, 2.0], tf.float32,
                          stateful=False)
    n.set_shape([None])
    with tf.Session(compile_target=target) as sess:
        got_y, (got_a, got_b), got_n = sess.run([y + 1, pair, n], {x: [1.0, 2.0]})
    np.testing.assert_array_equal(got_y, [3.0, 5.0])
    np.testing.assert_array_equal(got_a, [2.0, 3.0])
    assert got_b == 3 and np.asarray(got_b).dtype == np.int64
    np.testing.assert_array_equal(got_n, [3.0, 4.0])


@pytest.mark.parametrize("target", TARGETS)
def test_py_func_errors_match_tensorflow(target):
    x = tf.placeholder(tf.float32, [None])

    def shaped(t):
        t.set_shape([None])
        return t

    cases = [
        # TF: InvalidArgumentError 0-th value returned by pyfunc_3 is double, but expects float
        (shaped(tf.py_func(lambda a: a.astype(np.float64), [x], tf.float32)),
         InvalidArgumentError, r"0-th value returned by pyfunc_\d+ is double, but expects float"),
        # TF: a Python float for a float32 output is double too
        (shaped(tf.py_func(lambda a: np.full(1, 5.0), [x], tf.float32)),
         InvalidArgumentError, "is double, but expects float"),
        # TF: UnknownError ZeroDivisionError: division by zero
        (shaped(tf.py_func(lambda a: 1 / 0, [x], tf.float32)),
         UnknownError, "ZeroDivisionError: division by zero"),
        # TF: InvalidArgumentError pyfunc_5 returns 1 values, but expects to see 2 values.
        (shaped(tf.py_func(lambda a: [a], [x], [tf.float32, tf.float32])[0]),
         InvalidArgumentError, r"pyfunc_\d+ returns 1 values, but expects to see 2 values"),
        # tensorweave's own: a result that does not fit the shape given by set_shape
        (shaped(tf.py_func(lambda a: a.reshape(1, -1), [x], tf.float32)),
         InvalidArgumentError, r"has shape \[1, 1\], but its output was given the shape"),
    ]
    with tf.Session(compile_target=target) as sess:
        for t, err, pattern in cases:
            with pytest.raises(err, match=pattern):
                sess.run(t, {x: [1.0]})


def test_py_func_output_needs_a_shape_before_use():
    x = tf.placeholder(tf.float32, [None])
    y = tf.py_func(lambda a: a, [x], tf.float32)
    with pytest.raises(ShapeError, match=r"no static shape yet.*set_shape"):
        tf.identity(y)
    with pytest.raises(ShapeError, match="known rank"):
        y.set_shape(tf.TensorShape(None))
    y.set_shape([None])
    with pytest.raises(ValueError, match="must be equal rank"):
        y.set_shape([None, 2])
    assert tf.identity(y).shape.as_list() == [None]


@pytest.mark.parametrize("target", TARGETS)
def test_stateful_py_func_runs_every_time_and_is_never_merged(target):
    calls = []

    def count(a):
        calls.append(float(a))
        return np.float32(len(calls))

    c = tf.constant(1.0)
    one = tf.py_func(count, [c], tf.float32)   # constant input: must not be folded
    two = tf.py_func(count, [c], tf.float32)   # equal to `one`: must not be merged
    one.set_shape([])
    two.set_shape([])
    with tf.Session(compile_target=target) as sess:
        a, b = sess.run([one, two])
        (c3,) = sess.run([one])
    assert len(calls) == 3 and sorted([float(a), float(b)]) == [1.0, 2.0] and c3 == 3.0


@pytest.mark.parametrize("target", TARGETS)
def test_py_func_without_outputs_is_an_op_to_run(target):
    seen = []
    x = tf.placeholder(tf.float32, [2])
    op = tf.py_func(lambda a: seen.append(a.copy()), [x], [])
    with tf.Session(compile_target=target) as sess:
        assert sess.run(op, {x: [1.0, 2.0]}) is None
    assert len(seen) == 1 and seen[0].tolist() == [1.0, 2.0]


def test_py_func_has_no_gradient():
    # TF: tf.gradients(py_func(x), x) -> [None]; through another path only that path's
    x = tf.placeholder(tf.float32, [2])
    y = tf.py_func(lambda a: a * 2, [x], tf.float32)
    y.set_shape([2])
    assert tf.gradients(tf.reduce_sum(y), x) == [None]
    (g,) = tf.gradients(tf.reduce_sum(y * x), x)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(g, {x: [1.0, 3.0]}), [2.0, 6.0])  # y, held fixed


@settings(max_examples=15, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=2, max_side=4),
                  elements=st.floats(-10, 10)))
def test_py_func_against_numpy(a):
    tf.reset_default_graph()
    x = tf.placeholder(tf.float64, [None] * a.ndim)
    y = tf.py_func(np.sin, [x], tf.float64)
    y.set_shape([None] * a.ndim)
    for target in TARGETS:
        with tf.Session(compile_target=target) as sess:
            np.testing.assert_array_equal(sess.run(y * 1.0, {x: a}), np.sin(a))


# -- set_shape ------------------------------------------------------------------------------------

def test_set_shape_on_graph_tensors():
    x = tf.placeholder(tf.float32, [None, None])
    x.set_shape([None, 3])  # nothing reads x yet: the placeholder takes the shape
    assert x.shape.as_list() == [None, 3]
    y = x * 2
    y.set_shape([None, 3])  # what it is already: nothing to do
    # TF: ValueError Dimension 1 in both shapes must be equal, but are 3 and 4. Shapes are
    #     [?,3] and [?,4].
    with pytest.raises(ValueError, match=r"Dimension 1 in both shapes must be equal, but are "
                                         r"3 and 4\. Shapes are \[\?,3\] and \[\?,4\]\."):
        y.set_shape([None, 4])
    with pytest.raises(ValueError, match="Shapes must be equal rank, but are 2 and 1"):
        y.set_shape([3])
    with pytest.raises(TracingError, match="would narrow the static shape"):
        y.set_shape([2, 3])
    with pytest.raises(TracingError, match="would narrow"):
        x.set_shape([5, 3])  # y reads x now
    with tf.Session() as sess:
        assert sess.run(y, {x: np.ones((2, 3), np.float32)}).shape == (2, 3)


def test_py_func_function_lives_as_long_as_its_graph():
    import gc
    import weakref

    from tensorweave.compat.v1 import script_ops

    def f(a):
        return a

    g = tf.Graph()
    with g.as_default():
        y = tf.py_func(f, [tf.constant(1.0)], tf.float32)
    token = y.op.attrs["token"]
    assert script_ops._functions[token] is f
    ref = weakref.ref(g.ir)
    del g, y
    gc.collect()
    assert ref() is None and token not in script_ops._functions

