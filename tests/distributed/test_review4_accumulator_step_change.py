"""A conditional accumulator whose global step is set to another value drops the
gradients it holds: they were computed at its old step, so under the new one they are
stale, and a stale gradient must never be applied.

The case that matters: the sync-replicas chief restarts and restores the checkpoint of
step 20 while the accumulators on a parameter server that did not restart still hold
gradients the workers computed at step 25, on parameters that no longer exist. Its
chief_init_op sets the accumulators' step to 20; they kept the step-25 gradients, and
the first take after the restart averaged them in (TensorFlow's kernel keeps them too):
with gradients [1000, 1000] left over and [1, 2], [3, 4] from step 20, take_grad(2)
gave [334.67, 335.33] instead of [2, 3]."""

import numpy as np

import tensorweave.compat.v1 as tf
from tensorweave.runtime.accumulators import ConditionalAccumulator, SparseConditionalAccumulator


def test_setting_another_step_drops_the_dense_gradients_held():
    acc = ConditionalAccumulator("w/grad_accum", "f32", (2,))
    acc.set_global_step(25)
    assert acc.apply_grad(25, np.array([1000.0, 1000.0], np.float32))
    acc.set_global_step(20)  # the chief restored the checkpoint of step 20
    assert acc.num_accumulated() == 0 and acc.dropped == 1
    assert acc.apply_grad(20, np.array([1.0, 2.0], np.float32))
    assert acc.apply_grad(20, np.array([3.0, 4.0], np.float32))
    np.testing.assert_array_equal(acc.take_grad(2), [2.0, 3.0])


def test_setting_the_same_step_keeps_them():
    acc = ConditionalAccumulator("w/grad_accum", "f32", (2,))
    assert acc.apply_grad(0, np.array([1.0, 2.0], np.float32))
    acc.set_global_step(0)  # a chief_init_op run again at the step it had
    assert acc.apply_grad(0, np.array([3.0, 4.0], np.float32))
    np.testing.assert_array_equal(acc.take_grad(2), [2.0, 3.0])


def test_setting_another_step_drops_the_sparse_gradients_held():
    acc = SparseConditionalAccumulator("emb/grad_accum", "f32", (10, 2))
    acc.set_global_step(25)
    assert acc.apply_indexed_slices(25, np.array([3]), np.full((1, 2), 1000.0, np.float32))
    acc.set_global_step(26)  # moved on by another chief: what it held is stale too
    assert acc.num_accumulated() == 0
    assert acc.apply_indexed_slices(26, np.array([3]), np.ones((1, 2), np.float32))
    indices, values = acc.take_indexed_slices(1)
    np.testing.assert_array_equal(indices, [3])
    np.testing.assert_array_equal(values, [[1.0, 1.0]])


def test_the_set_global_step_op_drops_them_in_a_session():
    g = tf.Graph()
    with g.as_default():
        acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
        grad = tf.placeholder(tf.float32, [2])
        step = tf.placeholder(tf.int64, [])
        apply = acc.apply_grad(grad, local_step=step)
        set_step = acc.set_global_step(step)
        take = acc.take_grad(2)
    with tf.Session(graph=g) as sess:
        sess.run(set_step, {step: 25})
        sess.run(apply, {grad: [1000.0, 1000.0], step: 25})
        sess.run(set_step, {step: 20})
        sess.run(apply, {grad: [1.0, 2.0], step: 20})
        sess.run(apply, {grad: [3.0, 4.0], step: 20})
        np.testing.assert_array_equal(sess.run(take), [2.0, 3.0])
