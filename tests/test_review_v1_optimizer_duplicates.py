"""Adversarial review of ``apply_gradients`` when one variable appears in two
``(gradient, variable)`` pairs (towers sharing a variable, a concatenated list of pairs):
TensorFlow 1 runs one update op per pair, each a read-modify-write of the variable and
its slots, so both updates are applied one after the other. Before, the second update
read the slots as they were before the first one and overwrote them: Momentum's
accumulator lost the first gradient (the variable moved by 0.04 less per step here)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

G1 = np.float32([1.0, -2.0])
G2 = np.float32([0.5, 3.0])


def _run(make_opt, pairs_of, steps=3):
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.float32([1.0, 2.0]), name="v")
        train = make_opt().apply_gradients(pairs_of(v))
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        for _ in range(steps):
            sess.run(train)
        return sess.run(v)


def _momentum_reference(grads, steps, lr=0.1, mu=0.9, nesterov=False):
    """The pairs' updates one after the other, as TensorFlow 1's ApplyMomentum ops."""
    v, acc = np.float32([1.0, 2.0]), np.zeros(2, np.float32)
    for _ in range(steps):
        for grad in grads:
            acc = acc * np.float32(mu) + grad
            v = v - (np.float32(lr) * grad + np.float32(lr * mu) * acc if nesterov
                     else np.float32(lr) * acc)
    return v


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum_applies_both_pairs_of_one_variable(nesterov):
    got = _run(lambda: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=nesterov),
               lambda v: [(tf.constant(G1), v), (tf.constant(G2), v)])
    np.testing.assert_allclose(got, _momentum_reference([G1, G2], 3, nesterov=nesterov),
                               rtol=1e-5)


def test_adagrad_applies_both_pairs_of_one_variable():
    got = _run(lambda: tf.train.AdagradOptimizer(0.1),
               lambda v: [(tf.constant(G1), v), (tf.constant(G2), v)])
    v, acc = np.float32([1.0, 2.0]), np.full(2, 0.1, np.float32)
    for _ in range(3):
        for grad in (G1, G2):
            acc = acc + grad * grad
            v = v - np.float32(0.1) * grad / np.sqrt(acc)
    np.testing.assert_allclose(got, v, rtol=1e-5)


def test_sparse_and_dense_pairs_of_one_variable_both_apply():
    """A sparse pair then a dense one (an embedding shared by two lookups, one of them
    densified): the second update sees the first's accumulator rows."""
    got = _run(lambda: tf.train.MomentumOptimizer(0.1, 0.9),
               lambda v: [(tf.IndexedSlices(tf.constant(G1[:1]), tf.constant([0]), (2,)), v),
                          (tf.constant(G2), v)])
    v, acc = np.float32([1.0, 2.0]), np.zeros(2, np.float32)
    for _ in range(3):
        # ResourceSparseApplyMomentum: only row 0 of the accumulator and variable
        acc[0] = acc[0] * np.float32(0.9) + G1[0]
        v[0] = v[0] - np.float32(0.1) * acc[0]
        acc = acc * np.float32(0.9) + G2
        v = v - np.float32(0.1) * acc
    np.testing.assert_allclose(got, v, rtol=1e-5)


def test_sgd_pairs_of_one_variable_still_sum():
    got = _run(lambda: tf.train.GradientDescentOptimizer(0.1),
               lambda v: [(tf.constant(G1), v), (tf.constant(G2), v)])
    np.testing.assert_allclose(got, np.float32([1.0, 2.0]) - 3 * 0.1 * (G1 + G2), rtol=1e-6)
