"""The names TensorFlow 1 gives a queue pipeline's results, which TF1 programs fetch
(``sess.run("batch:0")``) and exported graphs refer to: a batch is its scope's name
(``batch:0``, ``shuffle_batch_1:0``, the `name` given), ``limit_epochs`` is
``limit_epochs:0``; they were ``batch/dequeue_many:0`` and ``limit_epochs/Identity:0``
(fetching TensorFlow's name failed). And ``Variable.count_up_to``, which was missing.
Expected names printed by TensorFlow 2.21's ``tf.compat.v1`` on the same program."""

from __future__ import annotations

import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def test_batch_and_limit_epochs_results_have_tensorflows_names():
    g = tf.Graph()
    with g.as_default():
        queue = tf.train.range_input_producer(10, shuffle=False)
        i = queue.dequeue()
        x = tf.cast(i, tf.float32)
        results = [
            tf.train.batch([i, x], 2)[0],
            tf.train.batch([i], 2, allow_smaller_final_batch=True),
            tf.train.batch({"a": i}, 2, name="mine")["a"],
            tf.train.maybe_batch([i], True, 2),
            tf.train.shuffle_batch([i], 2, 10, 2),
            tf.train.maybe_shuffle_batch([i], 2, 10, 2, True),
            tf.train.batch_join([[i], [i]], 2),
            tf.train.maybe_batch_join([[i], [i]], True, 2),
            tf.train.shuffle_batch_join([[i], [i]], 2, 10, 2),
            tf.train.maybe_shuffle_batch_join([[i], [i]], 2, 10, 2, True),
            tf.train.batch([i], 2, dynamic_pad=True),
            tf.train.limit_epochs(tf.constant([1, 2]), 2),
            tf.train.limit_epochs(tf.constant([1, 2]), 2, name="le"),
            tf.train.limit_epochs(tf.constant([1, 2])),  # no limit: the tensor itself
            tf.identity(x, name="batch"),
        ]
        assert [t.name for t in results] == [
            "batch:0", "batch_1:0", "mine:0", "batch_2:0", "shuffle_batch:0",
            "shuffle_batch_1:0", "batch_join:0", "batch_join_1:0", "shuffle_batch_join:0",
            "shuffle_batch_join_1:0", "batch_3:0", "limit_epochs:0", "le:0", "Const_2:0",
            "batch_4:0"]
        assert g.get_tensor_by_name("batch_1:0").op is results[1].op


def test_fetching_the_names_runs_the_pipeline():
    with tf.Graph().as_default():
        queue = tf.train.range_input_producer(10, shuffle=False)
        tf.train.batch([queue.dequeue()], 2)
        tf.train.limit_epochs(tf.constant([1, 2]), 2)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            try:
                assert sess.run("batch:0").tolist() == [0, 1]  # one thread: in order
                assert sess.run("limit_epochs:0").tolist() == [1, 2]
            finally:
                coord.request_stop()
                coord.join(threads)


def test_variable_count_up_to():
    with tf.Graph().as_default():
        v = tf.Variable(0, dtype=tf.int64)
        count = v.count_up_to(2)
        with tf.Session() as sess:
            sess.run(v.initializer)
            assert [int(sess.run(count)) for _ in range(2)] == [0, 1]
            with pytest.raises(tw.errors.OutOfRangeError):
                sess.run(count)
            assert int(sess.run(v)) == 2
