"""``tf.compat.v1.losses``: every loss and reduction against NumPy formulas of
TensorFlow 1's ``losses_impl.py``, weights broadcasting (static and run-time checks), the
LOSSES collection and its helpers, and gradients against finite differences.

The expected values are NumPy transcriptions of TensorFlow's definitions; the smoke run
that built them was also compared by hand with TensorFlow 2.21's ``tf.compat.v1.losses``
(every loss, every reduction: equal to float32 rounding)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.compat.v1 import losses

R = losses.Reduction


pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def reduce_np(per_element, weights, reduction):
    """compute_weighted_loss in NumPy (float64)."""
    w = np.broadcast_to(np.asarray(weights, np.float64), per_element.shape)
    weighted = per_element * w
    if reduction == R.NONE:
        return weighted
    total = weighted.sum()
    den = {R.SUM: 1.0, R.MEAN: w.sum(), R.SUM_OVER_BATCH_SIZE: per_element.size,
           R.SUM_BY_NONZERO_WEIGHTS: float(np.count_nonzero(w))}[reduction]
    return 0.0 if den == 0 else total / den


def softmax_xent_np(labels, logits):
    z = logits - logits.max(-1, keepdims=True)
    return -(labels * (z - np.log(np.exp(z).sum(-1, keepdims=True)))).sum(-1)


def sigmoid_xent_np(z, x):
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


def huber_np(y, p, delta):
    e = np.abs(p - y)
    return np.where(e <= delta, 0.5 * e * e, delta * (e - 0.5 * delta))


ELEMENTWISE = {
    "mean_squared_error": lambda y, p: (p - y) ** 2,
    "absolute_difference": lambda y, p: np.abs(p - y),
    "huber_loss": lambda y, p: huber_np(y, p, 1.0),
    "log_loss": lambda y, p: (-y * np.log(p + 1e-7) - (1 - y) * np.log(1 - p + 1e-7)),
    "hinge_loss": lambda y, p: np.maximum(0, 1 - (2 * y - 1) * p),
}

weights_kinds = st.sampled_from(["scalar", "zero", "row", "full", "column_with_zero"])


def make_weights(kind, shape, rng):
    return {"scalar": 0.7, "zero": 0.0,
            "row": rng.uniform(0, 2, (1, shape[1])),
            "full": rng.uniform(0, 2, shape),
            "column_with_zero": np.array([[0.0]] + [[1.5]] * (shape[0] - 1))}[kind]


@settings(max_examples=20)
@given(name=st.sampled_from(sorted(ELEMENTWISE)), reduction=st.sampled_from(R.all()),
       kind=weights_kinds, rows=st.integers(1, 4), cols=st.integers(1, 3),
       seed=st.integers(0, 2**16))
def test_elementwise_losses_match_numpy(name, reduction, kind, rows, cols, seed):
    tf.reset_default_graph()
    rng = np.random.RandomState(seed)
    shape = (rows, cols)
    labels = (rng.rand(*shape) > 0.5).astype(np.float64) if name in ("log_loss", "hinge_loss") \
        else rng.randn(*shape)
    preds = rng.uniform(0.01, 0.99, shape) if name == "log_loss" else rng.randn(*shape)
    weights = make_weights(kind, shape, rng)
    loss = getattr(losses, name)(labels, preds, weights, reduction=reduction)
    # TensorFlow 1 casts labels and predictions to float32: the loss is float32
    assert loss.dtype == tw.float32
    with tf.Session() as sess:
        got = sess.run(loss)
    expected = reduce_np(ELEMENTWISE[name](labels.astype(np.float32).astype(np.float64),
                                           preds.astype(np.float32).astype(np.float64)),
                         weights, reduction)
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-6)


def test_huber_loss_delta_both_sides():
    labels = np.zeros(4)
    preds = np.array([0.1, -0.3, 2.0, -5.0])
    loss = losses.huber_loss(labels, preds, delta=0.5, reduction=R.NONE)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(loss), huber_np(labels, preds, 0.5), rtol=1e-6)


@pytest.mark.parametrize("use_dim", [False, True])
def test_cosine_distance_axis_and_dim(use_dim):
    rng = np.random.RandomState(1)
    a = rng.randn(3, 4)
    b = rng.randn(3, 4)
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    kw = {"dim": 1} if use_dim else {"axis": 1}
    w = np.array([[1.0], [0.0], [2.0]])
    per = losses.cosine_distance(a, b, weights=w, reduction=R.NONE, **kw)
    mean = losses.cosine_distance(a, b, weights=w, **kw)
    assert tuple(per.shape) == (3, 1)
    expected = 1 - (a * b).sum(1, keepdims=True)
    with tf.Session() as sess:
        got_per, got_mean = sess.run([per, mean])
    np.testing.assert_allclose(got_per, expected * w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_mean, (expected * w).sum() / 2, rtol=1e-5)
    with pytest.raises(ValueError, match="specify argument `axis`"):
        losses.cosine_distance(a, b)


@settings(max_examples=12)
@given(smoothing=st.sampled_from([0.0, 0.1, 0.3]), reduction=st.sampled_from(R.all()),
       seed=st.integers(0, 2**16))
def test_cross_entropies_with_label_smoothing(smoothing, reduction, seed):
    tf.reset_default_graph()
    rng = np.random.RandomState(seed)
    logits = rng.randn(4, 3) * 3
    ids = rng.randint(0, 3, 4)
    onehot = np.eye(3)[ids]
    w_ex = rng.uniform(0, 2, 4)
    multi = (rng.rand(4, 3) > 0.5).astype(np.float64)
    soft = losses.softmax_cross_entropy(onehot, logits, w_ex, label_smoothing=smoothing,
                                        reduction=reduction)
    sig = losses.sigmoid_cross_entropy(multi, logits, w_ex[:, None],
                                       label_smoothing=smoothing, reduction=reduction)
    sparse = losses.sparse_softmax_cross_entropy(ids, logits, w_ex, reduction=reduction)
    # the logits' dtype is kept (float64 here), at float32 precision
    assert soft.dtype == sig.dtype == sparse.dtype == tw.float64
    with tf.Session() as sess:
        got = sess.run([soft, sig, sparse])
    smoothed = onehot * (1 - smoothing) + smoothing / 3
    np.testing.assert_allclose(got[0], reduce_np(softmax_xent_np(smoothed, logits), w_ex,
                                                 reduction), rtol=2e-5, atol=1e-6)
    z = multi * (1 - smoothing) + 0.5 * smoothing
    np.testing.assert_allclose(got[1], reduce_np(sigmoid_xent_np(z, logits), w_ex[:, None],
                                                 reduction), rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], reduce_np(softmax_xent_np(onehot, logits), w_ex,
                                                 reduction), rtol=2e-5, atol=1e-6)


def test_sparse_softmax_squeezes_trailing_label_and_weight_dims():
    logits = np.array([[2.0, 0.5, -1.0], [0.1, 0.2, 0.3]], np.float32)
    loss = losses.sparse_softmax_cross_entropy(np.array([[0], [2]]), logits,
                                               weights=np.array([[1.0], [3.0]]),
                                               reduction=R.SUM)
    with tf.Session() as sess:
        got = sess.run(loss)
    per = softmax_xent_np(np.eye(3)[[0, 2]], logits.astype(np.float64))
    np.testing.assert_allclose(got, per[0] + 3 * per[1], rtol=1e-6)


def test_weights_that_cannot_broadcast_are_refused_while_building():
    y = np.zeros((4, 3), np.float32)
    with pytest.raises(ValueError, match=r"weights can not be broadcast to values.*Mismatch "
                                         r"at dim 1") as e:
        losses.mean_squared_error(y, y, weights=np.ones((4, 2)))
    assert "test_v1_losses.py" in str(e.value)  # the user's line
    with pytest.raises(ValueError, match=r"values.rank=2. weights.rank=1"):
        losses.mean_squared_error(y, y, weights=np.ones(4))
    # TensorFlow 1's rule: a dim of weights is 1 or that of the losses
    with pytest.raises(ValueError, match="labels"):
        losses.absolute_difference(np.zeros((4, 2)), y)


def test_weights_with_unknown_dims_are_checked_at_run_time():
    y = tf.placeholder(tf.float32, [None, 3])
    w = tf.placeholder(tf.float32, [None, None])
    loss = losses.mean_squared_error(y, y * 2.0, weights=w)
    yv = np.ones((2, 3), np.float32)
    with tf.Session() as sess:
        # (2, 1) and (1, 3) broadcast; (2, 2) does not
        assert sess.run(loss, {y: yv, w: np.ones((2, 1))}) == pytest.approx(1.0)
        assert sess.run(loss, {y: yv, w: np.full((1, 3), 2.0)}) == pytest.approx(2.0)
        with pytest.raises(tw.errors.InvalidArgumentError, match="can not be broadcast"):
            sess.run(loss, {y: yv, w: np.ones((2, 2))})


def test_compute_weighted_loss_and_reduction_validation():
    per = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    with pytest.raises(ValueError, match="Invalid Reduction Key"):
        losses.compute_weighted_loss(per, reduction="mean")
    a = losses.compute_weighted_loss(per, np.array([[0.0], [2.0]]))
    b = losses.compute_weighted_loss(per, 0.0)
    c = losses.compute_weighted_loss(per.astype(np.float64), 0.5, reduction=R.SUM)
    assert c.dtype == tw.float64  # cast back to the input's dtype
    with tf.Session() as sess:
        got = sess.run([a, b, c])
    assert got == [pytest.approx(7.0), 0.0, pytest.approx(5.0)]


def test_collections_total_and_regularization_loss():
    y = np.ones(3, np.float32)
    l1 = losses.mean_squared_error(y, 2 * y)
    losses.absolute_difference(y, 3 * y, loss_collection=None)  # not collected
    l3 = losses.absolute_difference(y, 3 * y, scope="aux")
    assert losses.get_losses() == [l1, l3]
    assert tf.get_collection(tf.GraphKeys.LOSSES) == [l1, l3]
    custom = tf.constant(10.0)
    losses.add_loss(custom)
    with tf.variable_scope("net"):
        tf.get_variable("w", initializer=np.array([1.0, 2.0], np.float32),
                        regularizer=lambda v: 0.5 * tf.reduce_sum(v * v))
    assert len(losses.get_regularization_losses()) == 1
    reg = losses.get_regularization_loss()
    total = losses.get_total_loss()
    total_no_reg = losses.get_total_loss(add_regularization_losses=False)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run([reg, total, total_no_reg])
    assert got == [pytest.approx(2.5), pytest.approx(1 + 2 + 10 + 2.5),
                   pytest.approx(1 + 2 + 10)]


def test_no_regularization_is_zero_and_no_losses_is_an_error():
    with tf.Session() as sess:
        assert sess.run(losses.get_regularization_loss()) == 0.0
    with pytest.raises(ValueError, match="no losses"):
        losses.get_total_loss()


def test_gradient_matches_finite_differences_in_float64():
    # d/dlogits of a weighted, smoothed softmax cross entropy (SUM_BY_NONZERO_WEIGHTS)
    # against central differences of the NumPy float64 formula. The loss itself is
    # reduced in float32 (TensorFlow 1's cast), so the gradient is good to float32
    # precision; the differences run in float64 on the exact formula.
    rng = np.random.RandomState(3)
    x0 = rng.randn(3, 4)
    onehot = np.eye(4)[[1, 3, 0]]
    w = np.array([1.0, 0.0, 2.5])
    logits = tf.placeholder(tf.float64, [3, 4])
    loss = losses.softmax_cross_entropy(onehot, logits, w, label_smoothing=0.2)
    grad, = tf.gradients(loss, [logits])
    sig_loss = losses.sigmoid_cross_entropy(onehot, logits, w[:, None], label_smoothing=0.1,
                                            reduction=R.MEAN)
    sig_grad, = tf.gradients(sig_loss, [logits])
    with tf.Session() as sess:
        g, gs = sess.run([grad, sig_grad], {logits: x0})

    def f_soft(x):
        return reduce_np(softmax_xent_np(onehot * 0.8 + 0.05, x), w, R.SUM_BY_NONZERO_WEIGHTS)

    def f_sig(x):
        return reduce_np(sigmoid_xent_np(onehot * 0.9 + 0.05, x), w[:, None], R.MEAN)

    for f, got in ((f_soft, g), (f_sig, gs)):
        fd = np.zeros_like(x0)
        h = 1e-6
        for idx in np.ndindex(*x0.shape):
            e = np.zeros_like(x0)
            e[idx] = h
            fd[idx] = (f(x0 + e) - f(x0 - e)) / (2 * h)
        np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-6)
    # the example weighted 0 gets no gradient; labels get none either (stop_gradient)
    assert np.all(g[1] == 0)


@pytest.mark.parametrize("name", sorted(ELEMENTWISE) + ["cosine_distance"])
def test_every_regression_loss_has_the_gradient_of_its_formula(name):
    # d loss / d predictions through the float32 computation TensorFlow 1 does, against
    # float64 central differences of the NumPy formula; points are kept away from the
    # kinks (|e| = delta, margin 1, e = 0) where the one-sided slopes differ
    rng = np.random.RandomState(7)
    shape = (3, 2)
    labels = (rng.rand(*shape) > 0.5).astype(np.float64)
    if name == "log_loss":
        x0 = rng.uniform(0.1, 0.9, shape)
    else:
        x0 = np.where(rng.rand(*shape) > 0.5, 1, -1) * rng.uniform(0.2, 0.8, shape) + labels
        if name == "hinge_loss":
            x0 = np.where(labels == 1, 1, -1) * rng.uniform(0.2, 0.8, shape) \
                * np.where(rng.rand(*shape) > 0.5, 1, 3)
    weights = rng.uniform(0.5, 2.0, (3, 1))
    preds = tf.placeholder(tf.float64, shape)
    if name == "cosine_distance":
        loss = losses.cosine_distance(labels, preds, axis=1, weights=weights)

        def f(x):
            return reduce_np(1 - (labels * x).sum(1, keepdims=True), weights,
                             R.SUM_BY_NONZERO_WEIGHTS)
    else:
        loss = getattr(losses, name)(labels, preds, weights)

        def f(x):
            return reduce_np(ELEMENTWISE[name](labels, x), weights, R.SUM_BY_NONZERO_WEIGHTS)
    grad, = tf.gradients(loss, [preds])
    with tf.Session() as sess:
        g = sess.run(grad, {preds: x0})
    assert g.dtype == np.float64
    fd = np.zeros_like(x0)
    for idx in np.ndindex(*shape):
        e = np.zeros_like(x0)
        e[idx] = 1e-6
        fd[idx] = (f(x0 + e) - f(x0 - e)) / 2e-6
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)
