"""compat.v1 recurrent networks on the gpu target: a bidirectional LSTM/GRU with
sequence lengths (two scans, reverse_sequence gathers, copy-through selects) and its
gradients match the reference target. Tiny shapes: the simulator is slow."""

import numpy as np

import tensorweave.compat.v1 as tf


def test_bidirectional_rnn_with_lengths_and_gradients_match_the_reference():
    tf.reset_default_graph()
    R = tf.nn.rnn_cell
    x = tf.placeholder(tf.float64, [2, 3, 2])
    (fw, bw), (sf, sb) = tf.nn.bidirectional_dynamic_rnn(
        R.BasicLSTMCell(2), R.GRUCell(2), x, sequence_length=[3, 1], dtype=tf.float64)
    loss = tf.reduce_sum(fw * fw) + tf.reduce_sum(bw) + tf.reduce_sum(sf.c)
    variables = tf.trainable_variables()
    fetches = [fw, bw, sf.c, sf.h, sb] + tf.gradients(loss, variables + [x])
    xs = np.sin(np.arange(12.0).reshape(2, 3, 2))
    weights = [np.cos(np.arange(np.prod(v.shape)).reshape(v.shape) * 0.3) for v in variables]
    results = []
    for target in ("reference", "gpu"):
        with tf.Session(compile_target=target) as sess:
            sess.run(tf.global_variables_initializer())
            for v, w in zip(variables, weights):
                sess.run(tf.assign(v, w))
            results.append(sess.run(fetches, {x: xs}))
    for want, got in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(results[1][0][1, 1:], 0)   # past row 1's length
    tf.reset_default_graph()
