"""Adversarial review of losses against TensorFlow's definitions: values and gradients
that were plausible but differed from TensorFlow's."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tests.helpers import TARGETS

V, D, B = 12, 5, 3


def _sigmoid_xent(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    return np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("num_true", [1, 2, 3])
def test_nce_loss_gives_each_true_class_the_target_one_over_num_true(target, num_true):
    """TensorFlow's nce_loss: "In the case where num_true > 1, we assign to each target
    class the target probability 1 / num_true so that the target probabilities sum to 1
    per-example" (its logistic labels are the sampled-softmax labels). The loss gave each
    true class the label 1, so with num_true = 2 it was a different loss (and gradient)."""
    rng = np.random.default_rng(7)
    w, b = rng.normal(size=(V, D)), rng.normal(size=V)
    x = rng.normal(size=(B, D))
    labels = np.stack([rng.choice(V, num_true, replace=False) for _ in range(B)])
    sampled = np.array([0, 4, 9, 11], np.int64)
    true_expected = rng.uniform(0.1, 0.9, size=(B, num_true)).astype(np.float32)
    sampled_expected = rng.uniform(0.1, 0.9, size=4).astype(np.float32)

    def loss(w, b, x):
        return tw.nn.nce_loss(w, b, labels, x, num_sampled=4, num_classes=V,
                              num_true=num_true,
                              sampled_values=(sampled, true_expected, sampled_expected))

    true_logits = np.einsum("bd,btd->bt", x, w[labels]) + b[labels] \
        - np.log(true_expected.astype(np.float64))
    sampled_logits = x @ w[sampled].T + b[sampled] - np.log(sampled_expected.astype(np.float64))
    want = (_sigmoid_xent(true_logits, np.full_like(true_logits, 1.0 / num_true)).sum(1)
            + _sigmoid_xent(sampled_logits, np.zeros_like(sampled_logits)).sum(1))
    got = tw.compile(loss, target=target)(w, b, x)
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_v1_softmax_cross_entropy_sends_no_gradient_to_the_labels():
    """TensorFlow 1's tf.nn.softmax_cross_entropy_with_logits stops the gradient at the
    labels ("Backpropagation will happen only into logits"; only the _v2 function
    differentiates them). It let the gradient through: labels computed by a trained
    network (distillation) or held in a variable moved by -log_softmax(logits)."""
    tf.reset_default_graph()
    try:
        labels = tf.Variable(np.array([[0.2, 0.3, 0.5]], np.float32))
        logits = tf.Variable(np.array([[1.0, 2.0, 3.0]], np.float32))
        loss = tf.reduce_sum(tf.nn.softmax_cross_entropy_with_logits(labels=labels,
                                                                     logits=logits))
        loss_v2 = tf.reduce_sum(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels,
                                                                           logits=logits))
        assert tf.gradients(loss, [labels]) == [None]
        d_logits, = tf.gradients(loss, [logits])
        d_labels_v2, = tf.gradients(loss_v2, [labels])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got_logits, got_labels_v2 = sess.run([d_logits, d_labels_v2])
        p = np.exp([1.0, 2.0, 3.0]) / np.exp([1.0, 2.0, 3.0]).sum()
        np.testing.assert_allclose(got_logits, [p - [0.2, 0.3, 0.5]], rtol=1e-5)
        np.testing.assert_allclose(got_labels_v2, [-np.log(p)], rtol=1e-5)
    finally:
        tf.reset_default_graph()
