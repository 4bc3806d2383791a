"""The TensorFlow 1 API: graphs, placeholders, Session.run semantics, v1 spellings and
the paper's MNIST program."""

import collections

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def test_paper_mnist_program_reaches_92_percent():
    from tensorweave.datasets import mnist as input_data

    mnist = input_data.read_data_sets(None, one_hot=True)
    # The program from the paper's lecture notes, unchanged but for the import.
    x = tf.placeholder("float", shape=[None, 784])
    W = tf.Variable(tf.zeros([784, 10]))
    b = tf.Variable(tf.zeros([10]))
    y = tf.nn.softmax(tf.matmul(x, W) + b)
    y_ = tf.placeholder(tf.float32, [None, 10])
    cross_entropy = tf.reduce_mean(-tf.reduce_sum(y_ * tf.log(y), reduction_indices=[1]))
    train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)
    init = tf.initialize_all_variables()
    sess = tf.Session()
    sess.run(init)
    first_loss = None
    for i in range(1000):
        batch_xs, batch_ys = mnist.train.next_batch(100)
        sess.run(train_step, feed_dict={x: batch_xs, y_: batch_ys})
        if i == 0:
            first_loss = sess.run(cross_entropy, feed_dict={x: batch_xs, y_: batch_ys})
    correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, "float"))
    acc = sess.run(accuracy, feed_dict={x: mnist.test.images, y_: mnist.test.labels})
    final_loss = sess.run(cross_entropy, feed_dict={x: mnist.test.images, y_: mnist.test.labels})
    assert acc >= 0.92
    assert final_loss < first_loss
    # one compiled step per (fetches, feeds) signature, not per call
    assert len(sess._steps) == 4


def test_fetch_structures_and_names():
    a = tf.constant(2.0, name="a")
    b = tf.placeholder(tf.float32, [], name="b")
    c = tf.add(a, b, name="c")
    Pair = collections.namedtuple("Pair", "x y")
    with tf.Session() as sess:
        feed = {b: 3.0}
        assert sess.run(c, feed) == 5.0
        assert sess.run([a, c], feed) == [2.0, 5.0]
        assert sess.run((a, {"c": c}), feed) == (2.0, {"c": 5.0})
        assert sess.run(Pair(a, c), feed) == Pair(2.0, 5.0)
        assert sess.run("c:0", {"b:0": 1.0}) == 3.0
        assert sess.run(tf.no_op()) is None


def test_any_tensor_can_be_fed_and_pruning_skips_the_rest():
    x = tf.placeholder(tf.float32, [2])
    y = x * 2.0
    z = y + 1.0
    with tf.Session() as sess:
        # feeding y cuts x away: no need to feed the placeholder
        np.testing.assert_array_equal(sess.run(z, {y: np.array([1.0, 1.0])}), [2.0, 2.0])


def test_feed_errors_are_clear():
    x = tf.placeholder(tf.float32, [None, 3], name="inputs")
    y = tf.reduce_sum(x)
    with tf.Session() as sess:
        with pytest.raises(tw.errors.InvalidArgumentError,
                           match=r"must feed a value for placeholder tensor 'inputs'"):
            sess.run(y)
        with pytest.raises(tw.errors.InvalidArgumentError,
                           match=r"cannot feed value of shape \[2,4\] for tensor 'inputs:0', "
                                 r"which has shape \[\?,3\]"):
            sess.run(y, {x: np.zeros((2, 4))})
        # values are converted to the placeholder's dtype, as in TensorFlow
        assert sess.run(y, {x: [[1, 2, 3]]}) == 6.0
    with pytest.raises(tw.errors.InvalidArgumentError, match="closed Session"):
        sess.run(y, {x: np.zeros((1, 3))})


def test_fetch_from_another_graph_is_rejected():
    g = tf.Graph()
    with g.as_default():
        other = tf.constant(1.0)
    with tf.Session() as sess:
        with pytest.raises(tw.errors.InvalidArgumentError, match="not an element of this graph"):
            sess.run(other)


def test_sessions_hold_their_own_variable_values():
    v = tf.Variable(1.0, name="counter")
    inc = v.assign_add(1.0)
    init = tf.global_variables_initializer()
    s1, s2 = tf.Session(), tf.Session()
    s1.run(init)
    s2.run(init)
    s1.run(inc)
    s1.run(inc)
    assert s1.run(v) == 3.0 and s2.run(v) == 1.0
    s3 = tf.Session()
    with pytest.raises(tw.errors.FailedPreconditionError, match="uninitialized variable 'counter'"):
        s3.run(v)


def test_interactive_session_and_eval():
    sess = tf.InteractiveSession()
    try:
        x = tf.constant([1.0, 2.0])
        np.testing.assert_array_equal((x * 3.0).eval(), [3.0, 6.0])
    finally:
        sess.close()


def test_v1_spellings():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.reduce_sum(x, reduction_indices=[1])), [3, 7])
        assert sess.run(tf.reduce_mean(x, reduction_indices=0, keep_dims=True)).shape == (1, 2)
        np.testing.assert_array_equal(sess.run(tf.argmax(x, dimension=1)), [1, 1])
        np.testing.assert_array_equal(sess.run(tf.concat(0, [x, x])).shape, (4, 2))
        np.testing.assert_array_equal(sess.run(tf.concat([x, x], 1)).shape, (2, 4))
        assert sess.run(tf.mul(tf.sub(x, 1.0), 2.0))[1, 1] == 6.0
        assert sess.run(tf.div(tf.constant(7), 2)) == 3
        assert sess.run(tf.to_int32(x)).dtype == np.int32
        assert sess.run(tf.nn.softmax(x, dim=0)).shape == (2, 2)


def test_name_scopes_and_control_dependencies():
    with tf.name_scope("layer1"):
        w = tf.constant(1.0, name="w")
    assert w.op.name == "layer1/w"
    v = tf.Variable(0.0, name="v")
    with tf.control_dependencies([v.assign(5.0)]):
        read = tf.identity(v.read_value())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(read) == 5.0


def test_gradients_in_graph_mode():
    x = tf.placeholder(tf.float64, [3])
    y = tf.reduce_sum(x * x)
    (g,) = tf.gradients(y, [x])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(g, {x: [1.0, 2.0, 3.0]}), [2.0, 4.0, 6.0])


@pytest.mark.parametrize("make", [
    lambda: tf.train.GradientDescentOptimizer(0.1),
    lambda: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
    lambda: tf.train.AdagradOptimizer(0.5),
    lambda: tf.train.AdadeltaOptimizer(100.0, epsilon=1e-6),
    lambda: tf.train.RMSPropOptimizer(0.05),
    lambda: tf.train.AdamOptimizer(0.1),
    lambda: tf.train.FtrlOptimizer(0.5),
])
def test_every_v1_optimizer_reduces_the_loss(make):
    w = tf.Variable(np.array([3.0, -2.0], np.float32))
    loss = tf.reduce_sum(tf.square(w - np.array([1.0, 1.0], np.float32)))
    step = make().minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(loss)
        for _ in range(20):
            sess.run(step)
        assert sess.run(loss) < before * 0.8


def test_rmsprop_v1_mean_square_starts_at_one():
    w = tf.Variable(np.array([2.0]), name="w")
    opt = tf.train.RMSPropOptimizer(0.1, decay=0.9, momentum=0.0, epsilon=1e-10)
    step = opt.minimize(tf.reduce_sum(w * w))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        g = 4.0
        ms = 0.9 * 1.0 + 0.1 * g * g
        np.testing.assert_allclose(sess.run(w), [2.0 - 0.1 * g / np.sqrt(ms + 1e-10)])


def test_global_step_is_incremented():
    w = tf.Variable(1.0)
    step_var = tf.Variable(0, trainable=False, name="global_step")
    train = tf.train.GradientDescentOptimizer(0.1).minimize(w * w, global_step=step_var)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        assert sess.run(step_var) == 3


def test_placeholder_with_shape_empty_is_a_scalar_and_without_a_shape_any_shape():
    keep_prob = tf.placeholder(tf.float32, [])
    assert keep_prob.shape == ()
    y = keep_prob * 2.0
    anything = tf.placeholder(tf.float32)  # TensorFlow 1: an unknown rank
    assert anything.shape.rank is None
    with tf.Session() as sess:
        assert sess.run(y, {keep_prob: 0.5}) == 1.0
        with pytest.raises(tw.errors.InvalidArgumentError, match="shape"):
            sess.run(y, {keep_prob: np.ones(3, np.float32)})
        assert sess.run(anything * 2.0, {anything: 0.5}) == 1.0
        np.testing.assert_array_equal(sess.run(anything * 2.0, {anything: np.ones(3)}),
                                      [2.0, 2.0, 2.0])


def test_fetching_a_fed_tensor_does_not_alias_the_fed_array():
    x = tf.placeholder(tf.float32, [2])
    fed = np.array([1.0, 2.0], np.float32)
    with tf.Session() as sess:
        out = sess.run(x, {x: fed})
    out[0] = 9.0
    assert fed[0] == 1.0


def test_operation_run_and_tensor_eval_use_the_default_session():
    v = tf.Variable(1.0)
    step = tf.assign_add(v, 2.0, read_value=False) if hasattr(tf, "assign_add") else \
        v.assign_add(2.0, read_value=False)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        step.run()
        step.run(feed_dict={})
        assert v.eval() == 5.0
