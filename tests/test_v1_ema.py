"""``tf.train.ExponentialMovingAverage``: the recurrence (with `num_updates` and
zero-debiasing) against NumPy, the shadow variables' names, collections and
initialization, and a Saver restoring the averages into the model's variables.

The NumPy recurrences are TensorFlow 1's ``moving_averages.py``; a run of the same
program under TensorFlow 2.21's ``tf.compat.v1`` gave the same values and names."""

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def test_average_follows_the_recurrence_with_num_updates():
    w = tf.Variable(np.array([1.0, 2.0], np.float32), name="w")
    step = tf.Variable(0, name="step", trainable=False)
    x = tf.placeholder(tf.float32, [])
    loss = tf.reduce_sum(w * w) * x
    ema = tf.train.ExponentialMovingAverage(0.9, num_updates=step)
    opt = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    with tf.control_dependencies([opt]):
        train = ema.apply([w, loss])
    w_np = np.array([1.0, 2.0])
    shadow_w, shadow_loss = w_np.copy(), 0.0  # a variable's shadow starts at its value
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(4):
            xv = 1.0 + i
            sess.run(train, {x: xv})
            # a tensor is computed once per run: the loss the step minimized (before it),
            # a variable is read after the step (the control dependency)
            loss_np = (w_np ** 2).sum() * xv
            w_np = w_np - 0.1 * 2 * xv * w_np
            n = i + 1  # the step was incremented before the averages read it
            decay = min(0.9, (1 + n) / (10 + n))
            shadow_w = decay * shadow_w + (1 - decay) * w_np
            shadow_loss = decay * shadow_loss + (1 - decay) * loss_np
            got = sess.run([w, ema.average(w), ema.average(loss)])
            np.testing.assert_allclose(got[0], w_np, rtol=1e-6)
            np.testing.assert_allclose(got[1], shadow_w, rtol=1e-5)
            np.testing.assert_allclose(got[2], shadow_loss, rtol=1e-5)


def test_zero_debiased_average_of_a_tensor():
    x = tf.placeholder(tf.float64, [2], name="x")
    value = tf.identity(x, name="value")
    ema = tf.train.ExponentialMovingAverage(0.8, zero_debias=True, name="dbg")
    update = ema.apply([value])
    biased, k = np.zeros(2), 0
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for v in ([1.0, -2.0], [3.0, 0.5], [2.0, 2.0]):
            sess.run(update, {x: v})
            biased = biased - (biased - np.array(v)) * 0.2
            k += 1
            np.testing.assert_allclose(sess.run(ema.average(value)),
                                       biased / (1 - 0.8 ** k), rtol=1e-6)
    names = sorted(v.shared_name for v in tf.global_variables())
    assert names == ["value/dbg", "value/dbg/biased", "value/dbg/local_step"]


def test_shadow_names_collections_and_lookups():
    w = tf.Variable(tf.zeros([3]), name="w")
    b = tf.Variable(tf.zeros([3]), name="b")
    ema = tf.train.ExponentialMovingAverage(0.99)
    ema.apply([w])
    shadow = ema.average(w)
    assert shadow.shared_name == "w/ExponentialMovingAverage"
    assert ema.average_name(w) == "w/ExponentialMovingAverage"
    assert ema.average_name(b) == "b/ExponentialMovingAverage"
    assert ema.average(b) is None
    assert not shadow.trainable
    assert any(v is shadow for v in tf.global_variables())
    assert not any(v is shadow for v in tf.trainable_variables())
    # TensorFlow 1 records the averaged variable, not its shadow
    assert tf.moving_average_variables() == [w]
    assert tf.get_collection(tf.GraphKeys.MOVING_AVERAGE_VARIABLES) == [w]
    assert ema.variables_to_restore() == {"w/ExponentialMovingAverage": w,
                                          "b/ExponentialMovingAverage": b}
    assert ema.variables_to_restore([w]) == {"w/ExponentialMovingAverage": w, "b": b}


def test_integer_variables_are_refused():
    n = tf.Variable(3, name="n")
    with pytest.raises(TypeError, match="half, float, or double: 'n' is i32"):
        tf.train.ExponentialMovingAverage(0.9).apply([n])


def test_shadow_starts_at_the_variables_value_and_waits_for_no_step():
    w = tf.Variable(tf.random_normal([4], seed=1), name="w")
    x = tf.placeholder(tf.float32, [])
    opt = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(w) * x)
    with tf.Session() as sess:
        sess.run(w.initializer)
        ema = tf.train.ExponentialMovingAverage(0.5)
        with tf.control_dependencies([opt]):
            train = ema.apply([w])
        # the shadow's initializer does not run the training step (no feed needed) and
        # copies the variable's value, not a new draw of its random initial value
        sess.run(ema.average(w).initializer)
        np.testing.assert_array_equal(sess.run(ema.average(w)), sess.run(w))
        before = sess.run(w)
        sess.run(train, {x: 1.0})
        np.testing.assert_allclose(sess.run(ema.average(w)),
                                   0.5 * before + 0.5 * (before - 0.1), rtol=1e-6)


def test_saver_restores_the_averages_into_the_model(tmp_path):
    w = tf.Variable(np.array([4.0, -2.0], np.float32), name="w")
    step = tf.Variable(0, name="global_step", trainable=False)
    loss = tf.reduce_sum(tf.square(w))
    opt = tf.train.GradientDescentOptimizer(0.25).minimize(loss, global_step=step)
    ema = tf.train.ExponentialMovingAverage(0.5)
    with tf.control_dependencies([opt]):
        train = ema.apply()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        averaged, trained = sess.run([ema.average(w), w])
        path = saver.save(sess, str(tmp_path / "model"))
    assert not np.allclose(averaged, trained)

    tf.reset_default_graph()
    w = tf.Variable(np.zeros(2, np.float32), name="w")
    step = tf.Variable(0, name="global_step", trainable=False)
    ema = tf.train.ExponentialMovingAverage(0.5)
    restore_map = ema.variables_to_restore()
    assert restore_map == {"w/ExponentialMovingAverage": w, "global_step": step}
    with tf.Session() as sess:
        tf.train.Saver(restore_map).restore(sess, path)
        np.testing.assert_array_equal(sess.run(w), averaged)
        assert sess.run(step) == 3


def test_operators_on_a_v1_variable_build_into_its_graph():
    # (`w * w` outside any builder read the variable's eager state and failed after
    # 15ccc1c; the EMA programs above use it)
    w = tf.Variable(np.array([1.0, 2.0], np.float32))
    y = w * w + 1.0
    with tf.Session() as sess:
        sess.run(w.initializer)
        np.testing.assert_array_equal(sess.run(y), [2.0, 5.0])
