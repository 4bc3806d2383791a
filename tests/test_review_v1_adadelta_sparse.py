"""Adversarial review: Adadelta with a sparse gradient (an embedding lookup's
IndexedSlices) changes only the rows looked up, as TensorFlow's SparseApplyAdadelta
(TensorFlow 1's AdadeltaOptimizer and Keras' Adadelta both use it). Before, the
gradient was densified: every other row's two accumulators decayed by rho at each
step, so a row looked up later took steps of another size than in TensorFlow."""

from __future__ import annotations

import numpy as np

import tensorweave.compat.v1 as tf

RHO, EPS, LR = 0.95, 1e-6, 1.0


def _reference(schedule, table):
    """SparseApplyAdadelta, repeated indices summed first, row by row."""
    w = table.copy()
    accum = np.zeros_like(w)
    accum_update = np.zeros_like(w)
    for rows, values in schedule:
        summed: dict[int, np.ndarray] = {}
        for r, val in zip(rows, values):
            summed[r] = summed.get(r, 0) + val
        for r, g in summed.items():
            accum[r] = accum[r] * RHO + g * g * (1 - RHO)
            update = np.sqrt(accum_update[r] + EPS) / np.sqrt(accum[r] + EPS) * g
            accum_update[r] = accum_update[r] * RHO + update * update * (1 - RHO)
            w[r] = w[r] - LR * update
    return w, accum, accum_update


def test_sparse_adadelta_updates_only_the_rows_looked_up():
    table = np.arange(8, dtype=np.float64).reshape(4, 2)
    schedule = [([0, 0, 2], np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 3.0]])),
                ([1, 0], np.array([[2.0, -2.0], [1.0, 1.0]])),
                ([1, 3], np.array([[-1.0, 4.0], [0.5, 0.25]]))]
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(table, name="embedding")
        rows = tf.placeholder(tf.int32, [None])
        values = tf.placeholder(tf.float64, [None, 2])
        opt = tf.train.AdadeltaOptimizer(LR, rho=RHO, epsilon=EPS)
        train = opt.apply_gradients([(tf.IndexedSlices(values, rows, (4, 2)), v)])
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        for r, val in schedule:
            sess.run(train, {rows: r, values: val})
        got = sess.run([v, opt.get_slot(v, "accum"), opt.get_slot(v, "accum_update")])
    for a, b in zip(got, _reference(schedule, table)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
