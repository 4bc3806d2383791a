"""``tf.compat.v1.metrics``: streaming values over several updates against NumPy
transcriptions of TensorFlow 1's ``metrics_impl.py`` (hypothesis), local metric
variables (names, collections, reset by ``local_variables_initializer``), collections,
shape handling and input checks. A smoke run of every metric here matched TensorFlow
2.21's ``tf.compat.v1.metrics`` to float32 rounding."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.compat.v1 import metrics

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def div0(a, b):
    return a / b if b != 0 else 0.0


def auc_np(labels, preds, weights, num_thresholds, curve="ROC", method="trapezoidal"):
    """metrics_impl.auc in NumPy (float64)."""
    eps_t = 1e-7
    th = [0.0 - eps_t] + [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)] \
        + [1.0 + eps_t]
    pos = preds[None, :] > np.float32(th)[:, None].astype(np.float64)
    lab = labels.astype(bool)[None, :]
    w = weights[None, :]
    tp = ((lab & pos) * w).sum(1)
    fn = ((lab & ~pos) * w).sum(1)
    tn = ((~lab & ~pos) * w).sum(1)
    fp = ((~lab & pos) * w).sum(1)
    n = num_thresholds
    if curve == "PR" and method == "careful_interpolation":
        dtp = tp[:-1] - tp[1:]
        p = tp + fp
        slope = np.array([div0(a, max(b, 0)) for a, b in zip(dtp, p[:-1] - p[1:])])
        intercept = tp[1:] - slope * p[1:]
        ratio = np.where((p[:-1] > 0) & (p[1:] > 0),
                         [div0(a, max(b, 0)) for a, b in zip(p[:-1], p[1:])], 1.0)
        return sum(div0(s * (d + i * np.log(r)), max(t + f, 0))
                   for s, d, i, r, t, f in zip(slope, dtp, intercept, ratio, tp[1:], fn[1:]))
    e = 1e-6
    rec = (tp + e) / (tp + fn + e)
    if curve == "ROC":
        x, y = fp / (fp + tn + e), rec
    else:
        x, y = rec, (tp + e) / (tp + fp + e)
    heights = {"trapezoidal": (y[:n - 1] + y[1:]) / 2, "minoring": np.minimum(y[:-1], y[1:]),
               "majoring": np.maximum(y[:-1], y[1:])}[method]
    return ((x[:n - 1] - x[1:]) * heights).sum()


batch = st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 1), min_size=n, max_size=n),
    st.lists(st.floats(0, 1, width=32), min_size=n, max_size=n),
    st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=n, max_size=n)))


@settings(max_examples=10)
@given(batches=st.lists(batch, min_size=1, max_size=3))
def test_streaming_metrics_match_numpy(batches):
    tf.reset_default_graph()
    lab = tf.placeholder(tf.int64, [None])
    pred = tf.placeholder(tf.float32, [None])
    w = tf.placeholder(tf.float32, [None])
    labf = tf.cast(lab, tf.float32)
    hard = tf.cast(pred > 0.5, tf.int64)
    ms = {"accuracy": metrics.accuracy(lab, hard, weights=w),
          "mean": metrics.mean(pred, weights=w),
          "mean_unweighted": metrics.mean(pred),
          "mse": metrics.mean_squared_error(labf, pred, weights=w),
          "mae": metrics.mean_absolute_error(labf, pred),
          "rmse": metrics.root_mean_squared_error(labf, pred, weights=w),
          "precision": metrics.precision(lab, pred > 0.5, weights=w),
          "recall": metrics.recall(lab, pred > 0.5),
          "tp": metrics.true_positives(lab, pred > 0.5, weights=w),
          "fp": metrics.false_positives(lab, pred > 0.5),
          "tn": metrics.true_negatives(lab, pred > 0.5, weights=w),
          "fn": metrics.false_negatives(lab, pred > 0.5),
          "auc": metrics.auc(lab, pred, weights=w, num_thresholds=11),
          "auc_pr": metrics.auc(lab, pred, num_thresholds=9, curve="PR",
                                summation_method="careful_interpolation"),
          "auc_major": metrics.auc(lab, pred, num_thresholds=7, summation_method="majoring")}
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        for b in batches:
            ups = sess.run({k: v[1] for k, v in ms.items()},
                           {lab: b[0], pred: b[1], w: b[2]})
        got = sess.run({k: v[0] for k, v in ms.items()})
    y = np.concatenate([np.array(b[0], np.float64) for b in batches])
    p = np.concatenate([np.array(b[1], np.float32).astype(np.float64) for b in batches])
    wt = np.concatenate([np.array(b[2], np.float64) for b in batches])
    h = (p > 0.5).astype(np.float64)
    ones = np.ones_like(wt)
    tp_w, tp = ((y == 1) & (h == 1)) * wt, ((y == 1) & (h == 1))
    expected = {"accuracy": div0(((h == y) * wt).sum(), wt.sum()),
                "mean": div0((p * wt).sum(), wt.sum()), "mean_unweighted": p.mean(),
                "mse": div0(((y - p) ** 2 * wt).sum(), wt.sum()),
                "mae": np.abs(p - y).mean(),
                "rmse": np.sqrt(div0(((y - p) ** 2 * wt).sum(), wt.sum())),
                "precision": div0(tp_w.sum(), tp_w.sum() + (((y == 0) & (h == 1)) * wt).sum()),
                "recall": div0(tp.sum(), tp.sum() + ((y == 1) & (h == 0)).sum()),
                "tp": tp_w.sum(), "fp": ((y == 0) & (h == 1)).sum(),
                "tn": (((y == 0) & (h == 0)) * wt).sum(), "fn": ((y == 1) & (h == 0)).sum(),
                "auc": auc_np(y, p, wt, 11),
                "auc_pr": auc_np(y, p, ones, 9, "PR", "careful_interpolation"),
                "auc_major": auc_np(y, p, ones, 7, method="majoring")}
    for k, v in expected.items():
        # the last update returns the metric over everything seen, as `value` does
        np.testing.assert_allclose(got[k], v, rtol=1e-5, atol=1e-6, err_msg=k)
        np.testing.assert_allclose(ups[k], v, rtol=1e-5, atol=1e-6, err_msg=k)


def test_auc_of_separable_scores_is_one_and_explicit_thresholds():
    lab = np.array([0, 0, 1, 1])
    pred = np.array([0.1, 0.3, 0.6, 0.9], np.float32)
    value, update = metrics.auc(lab, pred)
    v2, u2 = metrics.auc(lab, pred, thresholds=[0.5, 0.2], summation_method="minoring")
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(update) == pytest.approx(1.0, abs=1e-5)
        assert sess.run(u2) == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(ValueError, match="curve must be either ROC or PR"):
        metrics.auc(lab, pred, curve="DET")


def test_auc_refuses_predictions_outside_0_1_when_updating():
    pred = tf.placeholder(tf.float32, [None])
    _, update = metrics.auc(np.array([0, 1]), pred)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        sess.run(update, {pred: [0.2, 1.0]})
        with pytest.raises(tw.errors.InvalidArgumentError, match=r"predictions must be in \[0, 1\]"):
            sess.run(update, {pred: [0.2, 1.5]})


def test_metric_variables_are_local_named_and_reset():
    x = tf.placeholder(tf.float32, [None])
    m1, up1 = metrics.mean(x)
    acc, acc_up = metrics.accuracy([1, 2], [1, 3])
    acc2, _ = metrics.accuracy([1, 2], [1, 3], name="eval_acc")
    names = sorted(v.shared_name for v in tf.local_variables())
    assert names == ["accuracy/count", "accuracy/total", "eval_acc/count", "eval_acc/total",
                     "mean/count", "mean/total"]
    metrics.accuracy([1], [1])
    assert "accuracy_1/total" in [v.shared_name for v in tf.local_variables()]
    assert tf.global_variables() == [] and tf.trainable_variables() == []
    assert len(tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)) == 8
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(m1) == 0.0  # no update yet: 0, not NaN
        sess.run(up1, {x: [1.0, 3.0]})
        assert sess.run(up1, {x: [5.0]}) == pytest.approx(3.0)
        assert sess.run(acc_up) == 0.5
        sess.run(tf.local_variables_initializer())  # starts over
        assert sess.run(m1) == 0.0
        assert sess.run(up1, {x: [10.0]}) == 10.0


def test_collections_and_squeezable_dims():
    labels = np.array([[1], [0], [1]])  # [N, 1] against [N] predictions
    preds = np.array([1, 1, 1])
    weights = np.array([[1.0], [3.0], [0.0]])
    value, update = metrics.accuracy(labels, preds, weights=weights,
                                     metrics_collections=["m"], updates_collections=["u"])
    assert tf.get_collection("m") == [value] and tf.get_collection("u") == [update]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(update) == pytest.approx(0.25)


def test_bad_shapes_are_clear_errors():
    with pytest.raises(ValueError, match="predictions of shape \\[3\\] and labels of shape "
                                         "\\[2\\]"):
        metrics.accuracy(np.zeros(2), np.zeros(3))
    with pytest.raises(ValueError, match="can not be broadcast"):
        metrics.mean(np.zeros((2, 3)), weights=np.ones((2, 2)))
    with pytest.raises(ValueError, match="weights of rank 3"):
        metrics.true_positives(np.zeros(3), np.zeros(3), weights=np.ones((3, 1, 1)))
