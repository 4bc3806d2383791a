"""Adversarial review of checkpoints: a restore must give the saved values or a clear
error, never values converted to another dtype behind the user's back."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.errors import DataLossError

TABLE = np.arange(7 * 3).reshape(7, 3) + 0.5


def _model(parts: int | None, dtype: type) -> tuple:
    """A [7, 3] variable `table` of `dtype` in `parts` shards (None: one variable)."""
    g = tf.Graph()
    with g.as_default():
        partitioner = tf.fixed_size_partitioner(parts) if parts else None
        table = tf.get_variable("table", initializer=TABLE.astype(dtype),
                                partitioner=partitioner)
        whole = tf.concat(list(table), 0) if parts else tf.identity(table)
        saver = tf.train.Saver()
        init = tf.global_variables_initializer()
    return g, whole, saver, init


@pytest.mark.parametrize("saved, restored", [((2, np.float32), (3, np.int32)),
                                             ((2, np.float64), (3, np.float32)),
                                             ((None, np.float64), (2, np.float32)),
                                             ((2, np.float32), (None, np.float64))])
def test_a_repartitioned_restore_of_another_dtype_is_an_error(tmp_path, saved, restored):
    """Restoring across partitionings assembles the variable from the checkpoint's slices;
    a slice of another dtype was cast silently (float32 0.5, 1.5, ... restored into an
    int32 model as 0, 1, ...), where a restore of the same partitioning, or of a whole
    variable, says the dtypes differ."""
    g, _, saver, init = _model(*saved)
    with tf.Session(graph=g) as sess:
        sess.run(init)
        path = saver.save(sess, str(tmp_path / "model"))
    g2, _, saver2, _ = _model(*restored)
    with tf.Session(graph=g2) as sess, pytest.raises(DataLossError, match="table"):
        saver2.restore(sess, path)


def test_a_repartitioned_restore_of_the_same_dtype_still_works(tmp_path):
    g, _, saver, init = _model(2, np.float32)
    with tf.Session(graph=g) as sess:
        sess.run(init)
        path = saver.save(sess, str(tmp_path / "model"))
    g2, whole, saver2, _ = _model(3, np.float32)
    with tf.Session(graph=g2) as sess:
        saver2.restore(sess, path)
        np.testing.assert_array_equal(sess.run(whole), TABLE.astype(np.float32))


def test_a_saver_of_a_partitioned_variable_saves_its_shards(tmp_path):
    """``Saver([partitioned, other])``, as TensorFlow takes it, failed with an
    AttributeError ('PartitionedVariable' has no 'shared_name'): the shards are saved,
    and restore into a model partitioned differently. A partitioned variable as a value
    of a var_list dict is a clear TypeError."""
    g = tf.Graph()
    with g.as_default():
        table = tf.get_variable("table", initializer=TABLE.astype(np.float32),
                                partitioner=tf.fixed_size_partitioner(2))
        other = tf.Variable(np.float32(7.0), name="other")
        saver = tf.train.Saver([table, other])
        with pytest.raises(TypeError, match="partitioned"):
            tf.train.Saver({"table": table})
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        path = saver.save(sess, str(tmp_path / "model"))
    g2, whole2, saver2, _ = _model(3, np.float32)
    with tf.Session(graph=g2) as sess:
        saver2.restore(sess, path)
        np.testing.assert_array_equal(sess.run(whole2), TABLE.astype(np.float32))
