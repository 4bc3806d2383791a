"""TensorFlow 1 API that programs reach for: ``Session.make_callable``, the top-level
assertions, ``tf.switch_case``, ``tf.tuple``, checkpoint readers and
``init_from_checkpoint``, ``get_local_variable``, ``model_variables`` and
``tf.train.natural_exp_decay``. Expected values are NumPy formulas of TensorFlow 1's
definitions (the decay was also checked against TensorFlow 2.21's
``tf.compat.v1.train.natural_exp_decay`` by hand)."""

import math

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


# -- Session.make_callable -------------------------------------------------------------------

def test_make_callable_feeds_in_order_and_keeps_the_structure():
    x = tf.placeholder(tf.float32, [None])
    y = tf.placeholder(tf.float32, [])
    v = tf.Variable(1.0)
    inc = v.assign_add(1.0, read_value=False)
    with tf.Session() as sess:
        sess.run(v.initializer)
        f = sess.make_callable({"s": tf.reduce_sum(x) * y, "x": x}, feed_list=[x, y])
        out = f(np.array([1.0, 2.0]), 3.0)
        assert out["s"] == 9.0
        np.testing.assert_array_equal(out["x"], [1.0, 2.0])
        step = sess.make_callable(inc)
        assert step() is None and step() is None
        assert sess.run(v) == 3.0
        with pytest.raises(TypeError, match="takes 2 feed values.*got 1"):
            f(np.ones(2))
        with pytest.raises(TypeError, match="accept_options=True"):
            f(np.ones(2), 1.0, options=tf.RunOptions())
        g = sess.make_callable([x], feed_list=["Placeholder:0"], accept_options=True)
        np.testing.assert_array_equal(g(np.ones(1), options=tf.RunOptions())[0], [1.0])


def test_make_callable_refuses_a_foreign_fetch_at_once():
    other = tf.Graph()
    with other.as_default():
        c = tf.constant(1.0)
    with tf.Session() as sess:
        with pytest.raises(tw.errors.InvalidArgumentError, match="not an element of this graph"):
            sess.make_callable(c)


# -- assertions ------------------------------------------------------------------------------

def test_assertions_fail_at_run_time_naming_the_op_and_line():
    x = tf.placeholder(tf.float32, [3])
    checks = {
        "equal": tf.assert_equal(x, x * 1.0),
        "positive": tf.assert_positive(x, message="x must be positive"),
        "less": tf.assert_less(x, 10.0),
        "less_equal": tf.assert_less_equal(x, 2.0),
        "greater_equal": tf.assert_greater_equal(x, 0.0),
        "non_positive": tf.assert_non_positive(-x),
        "negative": tf.assert_negative(-x),
        "none_equal": tf.assert_none_equal(x, 5.0),
        "near": tf.assert_near(x, x + 1e-7),
    }
    with tf.Session() as sess:
        for name, op in checks.items():
            sess.run(op, {x: np.array([1.0, 2.0, 0.5])})  # all hold
        with pytest.raises(tw.errors.InvalidArgumentError) as e:
            sess.run(checks["positive"], {x: np.array([1.0, -2.0, 3.0])})
        text = str(e.value)
        assert "assert_positive" in text and "x must be positive" in text
        assert "test_v1_misc_api.py" in text and "Condition x > 0" in text
        with pytest.raises(tw.errors.InvalidArgumentError, match="Condition x <= y"):
            sess.run(checks["less_equal"], {x: np.array([1.0, 2.5, 0.0])})
        with pytest.raises(tw.errors.InvalidArgumentError, match="Condition x != y"):
            sess.run(checks["none_equal"], {x: np.array([1.0, 5.0, 0.0])})


def test_assertion_gates_through_control_dependencies_and_shows_data():
    x = tf.placeholder(tf.int32, [2])
    check = tf.assert_equal(x, [1, 2], data=["x was", x], summarize=5)
    with tf.control_dependencies([check]):
        y = tf.identity(x)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: [1, 2]}), [1, 2])
        with pytest.raises(tw.errors.InvalidArgumentError, match=r"(?s)x was.*data\[1\]"):
            sess.run(y, {x: [1, 3]})


def test_static_assertions():
    # two Python values are compared while building, as TensorFlow 1 does
    with pytest.raises(tw.errors.InvalidArgumentError, match="Condition x == y"):
        tf.assert_equal(1, 2)
    assert tf.assert_less(1, 2) is not None  # a no-op
    t = tf.zeros([2, 3])
    tf.assert_rank(t, 2)
    with pytest.raises(ValueError, match="must have rank 1. Received rank 2"):
        tf.assert_rank(t, 1)
    tf.assert_type(t, tf.float32)
    with pytest.raises(TypeError, match="must be of type i32, got f32"):
        tf.assert_type(t, tf.int32)
    with pytest.raises(TypeError, match="integer"):
        tf.assert_integer(t)
    with pytest.raises(ValueError, match="expected scalar"):
        tf.assert_scalar(t)


def test_tf_assert_and_verify_tensor_all_finite_and_v1_debugging():
    x = tf.placeholder(tf.float32, [2])
    a = tf.Assert(tf.reduce_all(x > 0), ["x not positive:", x])
    finite = tf.verify_tensor_all_finite(x, "bad x")
    dbg = tf.debugging.assert_equal(x, x, data=["never"])
    with tf.Session() as sess:
        sess.run([a, finite, dbg], {x: [1.0, 2.0]})
        with pytest.raises(tw.errors.InvalidArgumentError, match="x not positive"):
            sess.run(a, {x: [1.0, -2.0]})
        with pytest.raises(tw.errors.InvalidArgumentError, match="bad x : Tensor had NaN"):
            sess.run(finite, {x: [np.nan, 2.0]})


# -- switch_case and tuple -------------------------------------------------------------------

@pytest.mark.parametrize("with_default", [False, True])
def test_switch_case_runs_one_branch_and_clamps_out_of_range(with_default):
    i = tf.placeholder(tf.int32, [])
    v = tf.Variable(0.0)
    branches = {0: lambda: tf.constant(10.0), 1: lambda: tf.constant(11.0),
                2: lambda: v.assign_add(1.0)}
    kw = {"default": lambda: tf.constant(-1.0)} if with_default else {}
    out = tf.switch_case(i, branches, **kw)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(out, {i: 0}) == 10.0
        assert sess.run(out, {i: 1}) == 11.0
        assert sess.run(v) == 0.0  # only the chosen branch ran
        assert sess.run(out, {i: 2}) == 1.0
        # out of range: the default, or without one the last branch (one more increment)
        assert sess.run(out, {i: 7}) == (-1.0 if with_default else 2.0)
        assert sess.run(out, {i: -3}) == (-1.0 if with_default else 3.0)


def test_switch_case_argument_checks():
    i = tf.constant(0)
    with pytest.raises(TypeError, match="must be a Tensor"):
        tf.switch_case(0, [lambda: tf.constant(1.0)])
    with pytest.raises(TypeError, match="integer scalar"):
        tf.switch_case(tf.constant(0.0), [lambda: tf.constant(1.0)])
    with pytest.raises(ValueError, match=r"contiguous range of \[0 to 2\) but found \{0,2\}"):
        tf.switch_case(i, {0: lambda: tf.constant(1.0), 2: lambda: tf.constant(2.0)})
    out = tf.switch_case(i, [lambda: tf.constant(4.0)])
    with tf.Session() as sess:
        assert sess.run(out) == 4.0


def test_tuple_is_a_barrier():
    v = tf.Variable(0.0)
    x = tf.placeholder(tf.float32, [])
    bump = v.assign_add(1.0, read_value=False)
    a, none, b, op = tf.tuple([x * 2.0, None, x + 1.0, bump])
    assert none is None
    with tf.Session() as sess:
        sess.run(v.initializer)
        # fetching only `a` runs everything the tuple gates on, `bump` included
        assert sess.run(a, {x: 3.0}) == 6.0
        assert sess.run(v) == 1.0
        assert sess.run([b, op], {x: 3.0}) == [4.0, None]
        assert sess.run(v) == 2.0


# -- checkpoints -----------------------------------------------------------------------------

def _save_model(tmp_path):
    with tf.variable_scope("old"):
        tf.get_variable("a", initializer=np.arange(6, dtype=np.float32).reshape(2, 3))
        tf.get_variable("p", shape=[6, 2],
                        initializer=tf.constant_initializer(np.arange(12.0).reshape(6, 2)),
                        partitioner=tf.fixed_size_partitioner(3))
        tf.get_variable("c", initializer=np.array([1, 2], np.int64))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return tf.train.Saver().save(sess, str(tmp_path / "model"), global_step=7)


def test_checkpoint_readers(tmp_path):
    path = _save_model(tmp_path)
    # a directory means its newest checkpoint; partitioned variables are listed whole
    expected = [("old/a", [2, 3]), ("old/c", [2]), ("old/p", [6, 2])]
    assert tf.train.list_variables(str(tmp_path)) == expected
    assert tf.train.list_variables(path) == expected
    np.testing.assert_array_equal(tf.train.load_variable(str(tmp_path), "old/p:0"),
                                  np.arange(12.0).reshape(6, 2))
    reader = tf.train.NewCheckpointReader(path)
    assert reader.get_variable_to_shape_map() == dict(expected)
    assert reader.get_variable_to_dtype_map() == {"old/a": tw.float32, "old/c": tw.int64,
                                                 "old/p": tw.float32}
    assert reader.has_tensor("old/a") and not reader.has_tensor("old/p/part_0")
    np.testing.assert_array_equal(reader.get_tensor("old/c"), [1, 2])
    with pytest.raises(tw.errors.NotFoundError, match="Key nope not found.*old/a"):
        reader.get_tensor("nope")
    with pytest.raises(tw.errors.NotFoundError):
        tf.train.NewCheckpointReader(str(tmp_path / "missing"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
        tf.train.list_variables(str(empty))


def test_init_from_checkpoint_scopes_names_and_repartitioning(tmp_path):
    path = _save_model(tmp_path)
    tf.reset_default_graph()
    with tf.variable_scope("new"):
        a = tf.get_variable("a", shape=[2, 3])
        p = tf.get_variable("p", shape=[6, 2], partitioner=tf.fixed_size_partitioner(2))
        c = tf.get_variable("c", shape=[2], dtype=tf.int64)
    other = tf.get_variable("other", shape=[2, 3])
    tf.train.init_from_checkpoint(str(tmp_path), {"old/": "new/"})
    tf.train.init_from_checkpoint(path, {"old/a": other})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_a, got_p, got_c, got_other = sess.run([a, p.as_tensor(), c, other])
    np.testing.assert_array_equal(got_a, np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(got_p, np.arange(12.0).reshape(6, 2))
    np.testing.assert_array_equal(got_c, [1, 2])
    np.testing.assert_array_equal(got_other, np.arange(6).reshape(2, 3))


def test_init_from_checkpoint_errors(tmp_path):
    path = _save_model(tmp_path)
    tf.reset_default_graph()
    w = tf.get_variable("w", shape=[3, 2])
    with pytest.raises(ValueError, match="'old/nope' is not found"):
        tf.train.init_from_checkpoint(path, {"old/nope": w})
    with pytest.raises(ValueError, match=r"shape of variable 'w' \[3, 2\] doesn't match"):
        tf.train.init_from_checkpoint(path, {"old/a": w})
    with pytest.raises(ValueError, match="scope maps to a scope"):
        tf.train.init_from_checkpoint(path, {"old/a": "missing"})


# -- variables and collections ---------------------------------------------------------------

def test_get_local_variable_and_model_variables():
    with tf.variable_scope("m"):
        counter = tf.get_local_variable("counter", shape=[], dtype=tf.int32,
                                        initializer=tf.zeros_initializer(), trainable=True)
    assert counter.shared_name == "m/counter"
    assert tf.local_variables() == [counter]
    assert tf.global_variables() == [] and tf.trainable_variables() == []
    w = tf.Variable(1.0, name="w", collections=[tf.GraphKeys.GLOBAL_VARIABLES,
                                                tf.GraphKeys.MODEL_VARIABLES])
    assert tf.model_variables() == [w] and tf.model_variables("x") == []
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(counter) == 0


@pytest.mark.parametrize("staircase", [False, True])
def test_natural_exp_decay(staircase):
    step = tf.placeholder(tf.int64, [])
    lr = tf.train.natural_exp_decay(0.5, step, decay_steps=4, decay_rate=0.3,
                                    staircase=staircase)
    with tf.Session() as sess:
        for s in (0, 3, 4, 9):
            p = (s // 4) if staircase else s / 4
            assert sess.run(lr, {step: s}) == pytest.approx(0.5 * math.exp(-0.3 * p),
                                                            rel=1e-6)
    with pytest.raises(ValueError, match="global_step is required"):
        tf.train.natural_exp_decay(0.5, None, 4, 0.3)


def test_new_names_are_in_the_namespaces():
    for name in ("losses", "metrics", "switch_case", "tuple", "assert_equal", "Assert",
                 "get_local_variable", "model_variables", "moving_average_variables"):
        assert name in dir(tf), name
    for name in ("ExponentialMovingAverage", "natural_exp_decay", "list_variables",
                 "load_variable", "NewCheckpointReader", "init_from_checkpoint"):
        assert name in dir(tf.train), name
    assert tf.losses.__name__ == "tensorweave.compat.v1.losses"
