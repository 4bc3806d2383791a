"""A checkpoint of a partitioned variable restores into a model partitioned differently,
or not at all, and a whole variable restores into a partitioned one, as in TensorFlow
(shards are saved with where they sit in the whole variable). Optimizer slots follow."""

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

TABLE = np.arange(7 * 3, dtype=np.float32).reshape(7, 3)


def _model(parts):
    """A [7, 3] table in `parts` shards (None: one variable), trained one Adam step on
    rows 0 and 6 (so every shard's slots differ from their initial values)."""
    g = tf.Graph()
    with g.as_default():
        partitioner = tf.fixed_size_partitioner(parts) if parts else None
        table = tf.get_variable("table", initializer=TABLE, partitioner=partitioner)
        ids = tf.constant([0, 6])
        loss = tf.reduce_sum(tf.square(tf.nn.embedding_lookup(table, ids,
                                                              partition_strategy="div")))
        opt = tf.train.AdamOptimizer(0.1)
        train = opt.minimize(loss)
        whole = tf.concat(list(table), 0) if parts else tf.identity(table)
        slots = [opt.get_slot(v, "m") for v in (list(table) if parts else [table])]
        m = tf.concat(slots, 0)
        saver = tf.train.Saver()
        init = tf.global_variables_initializer()
    return g, dict(train=train, whole=whole, m=m, saver=saver, init=init)


@pytest.mark.parametrize("saved_parts, restored_parts", [(2, 3), (3, 2), (3, None),
                                                          (None, 3), (2, 2)])
def test_restore_into_another_partitioning(tmp_path, saved_parts, restored_parts):
    g, model = _model(saved_parts)
    with g.as_default(), tf.Session(graph=g) as sess:
        sess.run(model["init"])
        sess.run(model["train"])
        expected_table, expected_m = sess.run([model["whole"], model["m"]])
        path = model["saver"].save(sess, str(tmp_path / "model"))
    assert not np.array_equal(expected_table, TABLE)
    g2, model2 = _model(restored_parts)
    with g2.as_default(), tf.Session(graph=g2) as sess:
        model2["saver"].restore(sess, path)
        table, m = sess.run([model2["whole"], model2["m"]])
    np.testing.assert_array_equal(table, expected_table)
    np.testing.assert_array_equal(m, expected_m)


def test_a_checkpoint_of_another_shape_is_a_clear_error(tmp_path):
    g, model = _model(2)
    with g.as_default(), tf.Session(graph=g) as sess:
        sess.run(model["init"])
        path = model["saver"].save(sess, str(tmp_path / "model"))
    g2 = tf.Graph()
    with g2.as_default():
        tf.get_variable("table", initializer=np.zeros((8, 3), np.float32),
                        partitioner=tf.fixed_size_partitioner(3))
        saver = tf.train.Saver()
        with tf.Session(graph=g2) as sess, pytest.raises(tf.errors.DataLossError,
                                                          match=r"shape \[7, 3\]"):
            saver.restore(sess, path)
