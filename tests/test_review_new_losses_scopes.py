"""Review of compat.v1 losses against TensorFlow 2.21's ``tf.compat.v1`` (graph mode):
the names that ``get_losses(scope=...)`` and ``get_regularization_loss(scope=...)``
filter by (a regular expression matched at the start of each name).

TensorFlow 2.21, same programs: every loss reduces in its own name scope
(``mean_squared_error/value:0``, ``myloss/value:0``, ``softmax_cross_entropy_loss/...``),
so ``get_losses(scope="mean_squared_error")`` finds the mean squared errors; tensorweave
named them ``weighted_loss/value:0`` and found none. A ``get_variable(regularizer=...)``
loss is built under ``<variable name>/Regularizer/`` (``v/Regularizer/Sum:0``,
``s/u/Regularizer/mul:0``): tensorweave's ``sum:0`` for a root variable ``v`` matched
``scope="s"``, so ``get_regularization_loss(scope="s")`` was 8.3 where TensorFlow gives
2.3 (a silent wrong total)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

LAB = np.array([[0.0, 1.0], [1.0, 0.0]], np.float32)
PRED = np.array([[0.2, 0.7], [0.9, 0.3]], np.float32)


pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def test_each_loss_reduces_in_its_own_name_scope():
    mse = tf.losses.mean_squared_error(LAB, PRED)
    mine = tf.losses.mean_squared_error(LAB, PRED, scope="myloss")
    xent = tf.losses.softmax_cross_entropy(LAB, PRED)
    sparse = tf.losses.sparse_softmax_cross_entropy([1, 0], PRED)
    sig = tf.losses.sigmoid_cross_entropy(LAB, PRED)
    cw = tf.losses.compute_weighted_loss(tf.constant([1.0, 2.0]))
    assert mse.name == "mean_squared_error/value:0"
    assert mine.name == "myloss/value:0"
    assert xent.name == "softmax_cross_entropy_loss/value:0"
    assert sparse.name == "sparse_softmax_cross_entropy_loss/value:0"
    assert sig.name == "sigmoid_cross_entropy_loss/value:0"
    assert cw.name == "weighted_loss/value:0"
    for api, scope in [(tf.losses.absolute_difference, "absolute_difference"),
                       (tf.losses.huber_loss, "huber_loss"), (tf.losses.log_loss, "log_loss"),
                       (tf.losses.hinge_loss, "hinge_loss")]:
        assert api(LAB, PRED).name.startswith(scope + "/")
    assert tf.losses.cosine_distance(LAB, PRED, axis=1).name.startswith("cosine_distance_loss/")
    assert tf.losses.get_losses(scope="mean_squared_error") == [mse]
    assert tf.losses.get_losses(scope="myloss") == [mine]
    with tf.Session() as sess:
        total = sess.run(tf.losses.get_total_loss(scope="mean_squared_error"))
        np.testing.assert_allclose(total, np.mean((PRED - LAB) ** 2), rtol=1e-6)


def test_regularization_losses_are_named_after_their_variable():
    tf.get_variable("v", [2], initializer=tf.constant_initializer(3.0),
                    regularizer=lambda w: tf.reduce_sum(w))
    with tf.variable_scope("s", regularizer=lambda w: 0.1 * tf.reduce_sum(w * w)):
        tf.get_variable("u", [3], initializer=tf.ones_initializer())
        tf.get_variable("z", [1], initializer=tf.ones_initializer(),
                        regularizer=lambda w: 2.0 * w[0])
    names = [t.name for t in tf.losses.get_regularization_losses()]
    assert [n.split("/Regularizer/")[0] for n in names] == ["v", "s/u", "s/z"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        # TensorFlow 2.21: 8.3 in all, 2.3 in scope "s" (0.1 * 3 + 2 * 1), 6.0 for "v"
        np.testing.assert_allclose(sess.run(tf.losses.get_regularization_loss()), 8.3,
                                   rtol=1e-6)
        np.testing.assert_allclose(sess.run(tf.losses.get_regularization_loss(scope="s")),
                                   2.3, rtol=1e-6)
        np.testing.assert_allclose(sess.run(tf.losses.get_regularization_loss(scope="v")),
                                   6.0, rtol=1e-6)
