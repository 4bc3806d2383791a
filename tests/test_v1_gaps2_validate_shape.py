"""Variables whose shape changes between steps, and what TensorFlow 2.21's
``tf.compat.v1`` (graph mode, resource variables) allows and refuses, checked against it
on the same programs: ``tf.assign(ref, value, validate_shape=False)`` is accepted (and,
for resource variables, changes nothing), a variable declared with None dims (``shape=
[None, 3]``) takes values of any size there, a variable made with ``validate_shape=False``
keeps its initial value's shape (assigning another is a ValueError naming it), and a fed
value of the wrong shape for a fully defined variable is an InvalidArgumentError at run
time. ``shape=tf.TensorShape(None)`` (unknown rank) keeps the initial value's rank here,
every dim unknown: tensorweave's graphs need every rank, so an assignment of another rank
is refused, naming the variable."""

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf

TARGETS = ["reference", "cpu"]


pytestmark = pytest.mark.usefixtures("fresh_default_graph")


@pytest.mark.parametrize("target", TARGETS)
def test_a_variable_with_none_dims_changes_shape_between_steps(target):
    v = tf.Variable(tf.zeros([2, 3]), shape=[None, 3])
    p = tf.placeholder(tf.float32, [None, 3])
    assign = tf.assign(v, p, validate_shape=False)
    total = tf.reduce_sum(v * 2.0 + 1.0, axis=1)
    product = tf.matmul(v, tf.ones([3, 2]))
    add_one = v.assign_add(tf.ones_like(v))
    rng = np.random.default_rng(0)
    with tf.Session(compile_target=target) as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(v), np.zeros((2, 3), np.float32))
        for n in [2, 5, 1, 0, 7, 3]:
            x = rng.standard_normal((n, 3)).astype(np.float32)
            np.testing.assert_array_equal(sess.run(assign, {p: x}), x)
            got_v, got_total, got_product = sess.run([v, total, product])
            np.testing.assert_array_equal(got_v, x)
            np.testing.assert_allclose(got_total, (x * 2 + 1).sum(axis=1), rtol=1e-5)
            np.testing.assert_allclose(got_product, x @ np.ones((3, 2), np.float32),
                                       rtol=1e-5, atol=1e-6)
            np.testing.assert_array_equal(sess.run(add_one), x + 1)


@pytest.mark.parametrize("target", TARGETS)
def test_a_constant_of_another_size_assigned_to_a_none_dim(target):
    v = tf.Variable(tf.zeros([2]), shape=[None])
    grow = tf.assign(v, tf.ones([3]))
    grow_more = v.assign([1.0, 2.0, 3.0, 4.0])
    plus_one = v + 1.0
    assert tuple(v.shape) == (None,) and tuple(plus_one.shape) == (None,)
    with tf.Session(compile_target=target) as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(plus_one), [1.0, 1.0])
        sess.run(grow)
        np.testing.assert_array_equal(sess.run(plus_one), [2.0, 2.0, 2.0])
        sess.run(grow_more)
        np.testing.assert_array_equal(sess.run(plus_one), [2.0, 3.0, 4.0, 5.0])


def test_validate_shape_false_keeps_the_initial_shape_as_tensorflow_2():
    # TensorFlow 2.21: shape=(2,); assigning (3,) raises "Cannot assign value to variable
    # ' Variable:0': Shape mismatch", with or without tf.assign's validate_shape=False
    v = tf.Variable(tf.zeros([2]), validate_shape=False)
    assert tuple(v.shape) == (2,)
    with pytest.raises(ValueError, match=r"shape \[3\] to variable 'Variable:0' of shape \[2\]"):
        tf.assign(v, tf.ones([3]), validate_shape=False)
    with pytest.raises(ValueError, match=r"shape \[3\] to variable 'Variable:0' of shape \[2\]"):
        v.assign(tf.ones([3]))
    with pytest.raises(ValueError, match=r"shape \[3\] to variable 'Variable:0' of shape \[2\]"):
        v.assign_add(tf.ones([3]))


def test_the_shape_mismatch_names_the_variable_and_the_users_line():
    z = tf.Variable(tf.zeros([2, 3]), shape=[None, 3], name="z")
    with pytest.raises(ValueError, match=r"shape \[4,2\] to variable 'z:0' of shape \[\?,3\]") as e:
        tf.assign(z, tf.ones([4, 2]))
    assert "test_v1_gaps2_validate_shape.py" in str(e.value)


def test_an_initial_value_incompatible_with_the_shape_given_is_refused():
    with pytest.raises(ValueError, match=r"variable 'w'.*initial value.*\[2,3\].*\[\?,4\]"):
        tf.Variable(tf.zeros([2, 3]), shape=[None, 4], name="w")
    # (eager tw.Variable names are unique in the process: 'w' may be taken, 'w_1' given)
    with pytest.raises(ValueError, match=r"variable 'w(_\d+)?'.*initial value.*\[2\].*\[\?,\?\]"):
        tw.Variable(np.zeros(2, np.float32), shape=[None, None], name="w")


@pytest.mark.parametrize("target", TARGETS)
def test_a_fed_value_of_the_wrong_shape_for_a_fixed_variable_fails_at_run_time(target):
    w = tf.Variable(tf.zeros([2]), name="w")
    p = tf.placeholder(tf.float32, [None])
    assign = tf.assign(w, p, validate_shape=False)
    with tf.Session(compile_target=target) as sess:
        sess.run(w.initializer)
        with pytest.raises(tw.errors.InvalidArgumentError, match=r"'w'.*\[2\].*\[3\]"):
            sess.run(assign, {p: [1.0, 2.0, 3.0]})
        np.testing.assert_array_equal(sess.run(w), [0.0, 0.0])  # unchanged
        sess.run(assign, {p: [4.0, 5.0]})
        np.testing.assert_array_equal(sess.run(w), [4.0, 5.0])


@pytest.mark.parametrize("target", TARGETS)
def test_unknown_rank_keeps_the_initial_rank_and_refuses_another(target):
    u = tf.Variable(tf.zeros([2]), shape=tf.TensorShape(None), name="u")
    assert tuple(u.shape) == (None,)
    grow = u.assign(tf.ones([5]))
    with pytest.raises(ValueError, match=r"variable 'u:0'.*TensorShape\(None\).*rank 1.*rank 2"):
        u.assign(tf.ones([2, 2]))
    with tf.Session(compile_target=target) as sess:
        sess.run(u.initializer)
        sess.run(grow)
        np.testing.assert_array_equal(sess.run(u * 2.0), np.full(5, 2.0, np.float32))


def test_assign_takes_tensorflows_name_and_use_locking():
    v = tf.Variable(1.0, name="v")
    op = v.assign(2.0, use_locking=True, name="set_v", read_value=False)
    assert op.name.startswith("set_v")
    add = v.assign_add(3.0, use_locking=False, name="inc")
    sub = v.assign_sub(1.0, name="dec")
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(op)
        assert sess.run(add) == 5.0
        assert sess.run(sub) == 4.0


@pytest.mark.parametrize("target", TARGETS)
def test_a_tw_variable_with_a_none_dim_changes_size_in_compiled_functions(target):
    v = tw.Variable(np.zeros(2, np.float32), shape=[None])

    @tw.compile(target=target)
    def set_and_sum(x):
        v.assign(x)
        return tw.reduce_sum(v * 2.0)

    @tw.compile(target=target)
    def plus_one():
        return v + 1.0

    for n in [2, 5, 0, 3]:
        x = np.arange(n, dtype=np.float32)
        assert set_and_sum(x) == 2.0 * x.sum()
        np.testing.assert_array_equal(plus_one(), x + 1)
    v.assign(np.ones(4, np.float32))
    np.testing.assert_array_equal(plus_one(), np.full(4, 2.0, np.float32))
    with pytest.raises(ValueError, match=r"shape \[2,2\] to variable 'Variable.*:0' of shape \[\?\]"):
        v.assign(np.ones((2, 2), np.float32))
