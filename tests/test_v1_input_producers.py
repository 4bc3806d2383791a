"""TensorFlow 1's queue-based input pipelines: ``tf.train.limit_epochs``, the input
producers, ``batch``/``shuffle_batch`` and their ``_join``/``maybe_`` forms, and
``tf.train.get_checkpoint_state``.

Orders are checked against NumPy with one producer thread (FIFO queues keep the order);
shuffles and several threads by what they must keep (each element once per epoch), never
by TensorFlow's random order. The expected structures, shapes, names and errors are
those TensorFlow 2.21's ``tf.compat.v1.train`` gives for the same programs. Every test
that runs threads guards against a hang with `within`.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tests.helpers import within

HANG = 120  # seconds before a blocked pipeline fails the test (a deadlock guard)


def _drain(fetch, limit: int = 200) -> list:
    """Run the default graph's queue runners and `fetch` until OutOfRangeError; the
    fetched values (at most `limit`: a pipeline that never ends fails)."""
    graph = tf.get_default_graph()  # (the default graph is the thread's own)

    def body():
        out = []
        with graph.as_default(), tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            try:
                while len(out) < limit:
                    out.append(sess.run(fetch))
            except tw.errors.OutOfRangeError:
                out.append("end")
            finally:
                coord.request_stop()
                coord.join(threads)
        return out
    return within(HANG, body)


def _rows(batches: list) -> np.ndarray:
    assert batches[-1] == "end", "the pipeline never ended"
    return np.concatenate([np.asarray(b) for b in batches[:-1]]) if len(batches) > 1 else []


# -- limit_epochs and count_up_to --------------------------------------------------------
def test_limit_epochs_repeats_then_out_of_range():
    with tf.Graph().as_default():
        x = tf.train.limit_epochs(tf.constant([1, 2]), 3)
        assert x.name == "limit_epochs:0"  # TensorFlow's name
        (epochs,) = tf.local_variables()
        assert epochs.name == "limit_epochs/epochs:0" and epochs.dtype is tw.int64
        assert tf.global_variables() == [] and tf.trainable_variables() == []
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            for _ in range(3):
                np.testing.assert_array_equal(sess.run(x), [1, 2])
            with pytest.raises(tw.errors.OutOfRangeError, match="Reached limit of 3"):
                sess.run(x)
            assert sess.run(epochs) == 3  # no increment past the limit
            sess.run(tf.local_variables_initializer())  # a new count starts over
            np.testing.assert_array_equal(sess.run(x), [1, 2])


def test_limit_epochs_none_is_the_tensor_and_bad_counts_are_refused():
    with tf.Graph().as_default():
        c = tf.constant([1.0])
        assert tf.train.limit_epochs(c, None) is c
        with pytest.raises(ValueError, match=r"tf.train.limit_epochs .*test_v1_input_"
                                             r"producers.py:\d+.*num_epochs must be > 0 not 0"):
            tf.train.limit_epochs(c, 0)


def test_limit_epochs_counter_is_atomic_across_threads():
    """Several threads evaluating one limited tensor get exactly `limit` values in all:
    the check and the increment are one step."""
    with tf.Graph().as_default():
        v = tf.Variable(np.int32(0), name="counter")
        count = tf.count_up_to(v, 60)
        with tf.Session() as sess:
            sess.run(v.initializer)
            got: list[int] = []
            lock = threading.Lock()

            def worker():
                while True:
                    try:
                        old = int(sess.run(count))
                    except tw.errors.OutOfRangeError:
                        return
                    with lock:
                        got.append(old)

            def body():
                threads = [threading.Thread(target=worker) for _ in range(4)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
            within(HANG, body)
            assert sorted(got) == list(range(60))
            assert sess.run(v) == 60


def test_count_up_to_needs_an_integer_scalar_variable():
    count_up_to = tf.count_up_to
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="int32 or int64 scalar variable"):
            count_up_to(tf.Variable(np.zeros(2, np.int32)), 3)
        with pytest.raises(TypeError, match="int32 or int64 scalar variable"):
            count_up_to(tf.Variable(np.float32(0)), 3)
        with pytest.raises(TypeError, match="needs a variable"):
            count_up_to(tf.constant(0), 3)


# -- batch: order, partial batches, structure --------------------------------------------
@settings(max_examples=12)
@given(rows=st.integers(1, 7), batch_size=st.integers(1, 4), epochs=st.integers(1, 3),
       smaller=st.booleans())
def test_batch_enqueue_many_matches_numpy(rows, batch_size, epochs, smaller):
    """One thread keeps the order: the epochs one after another, cut into batches; the
    last partial batch comes out only with allow_smaller_final_batch, then the end."""
    data = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2)
    with tf.Graph().as_default():
        x = tf.train.limit_epochs(tf.constant(data), epochs)
        b = tf.train.batch([x], batch_size, enqueue_many=True, capacity=5,
                           allow_smaller_final_batch=smaller)
        assert b.shape == ((None if smaller else batch_size), 2)
        got = _drain(b)
    stream = np.concatenate([data] * epochs)
    full = len(stream) // batch_size * batch_size
    want = [stream[i:i + batch_size] for i in range(0, len(stream) if smaller else full,
                                                    batch_size)]
    assert len(got) == len(want) + 1 and got[-1] == "end"
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_batch_of_single_elements_from_a_producer_keeps_order():
    with tf.Graph().as_default():
        i = tf.train.range_input_producer(5, num_epochs=2, shuffle=False).dequeue()
        b = tf.train.batch([i, i * 10], 3, allow_smaller_final_batch=True)
        got = _drain(b)
    assert got[-1] == "end"
    firsts = np.concatenate([g[0] for g in got[:-1]])
    seconds = np.concatenate([g[1] for g in got[:-1]])
    np.testing.assert_array_equal(firsts, [0, 1, 2, 3, 4, 0, 1, 2, 3, 4])
    np.testing.assert_array_equal(seconds, firsts * 10)


def test_batch_structure_shapes_and_graph_contents():
    """TensorFlow's: a list gives a list (one tensor for one component), a dict a dict;
    the runner is in QUEUE_RUNNERS, the fill summary in SUMMARIES."""
    with tf.Graph().as_default() as g:
        one = tf.train.batch([tf.constant([1, 2, 3])], 2)
        assert isinstance(one, tw.Tensor) and one.shape == (2, 3)
        assert one.name == "batch:0"  # TensorFlow's name
        two = tf.train.batch((tf.constant([1, 2, 3]), tf.constant(4.0)), 2)
        assert isinstance(two, list) and [t.shape for t in two] == [(2, 3), (2,)]
        d = tf.train.batch({"b": tf.constant([1, 2, 3]), "a": tf.constant(4.0)}, 2)
        assert sorted(d) == ["a", "b"] and d["a"].dtype is tw.float32 and d["b"].shape == (2, 3)
        single = tf.train.batch({"only": tf.constant([7, 8])}, 4)
        assert list(single) == ["only"] and single["only"].shape == (4, 2)
        runners = g.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
        names = [r.name for r in runners]
        assert names[0] == "batch/fifo_queue" and len(set(names)) == 4
        summaries = [s.name for s in g.get_collection(tf.GraphKeys.SUMMARIES)]
        assert summaries[0] == "batch/fraction_of_32_full:0" and len(summaries) == 4
        values = _first(d)
        np.testing.assert_array_equal(values["a"], [4.0, 4.0])
        np.testing.assert_array_equal(values["b"], [[1, 2, 3], [1, 2, 3]])


def test_dynamic_pad_pads_each_batch_to_its_longest():
    def row(k):
        return np.arange(k + 1, dtype=np.int32) + 10 * k

    with tf.Graph().as_default():
        i = tf.train.range_input_producer(3, num_epochs=1, shuffle=False).dequeue()
        v = tf.py_func(row, [i], tf.int32, stateful=False)
        v.set_shape([None])
        b = tf.train.batch([v], 2, dynamic_pad=True, allow_smaller_final_batch=True)
        assert b.shape == (None, None)
        got = _drain(b)
    assert got[-1] == "end" and len(got) == 3
    np.testing.assert_array_equal(got[0], [[0, 0], [10, 11]])
    np.testing.assert_array_equal(got[1], [[20, 21, 22]])


def test_batch_num_threads_enqueues_every_element_once_per_epoch():
    with tf.Graph().as_default():
        x = tf.train.limit_epochs(tf.range(12), 2)
        b = tf.train.batch([x], 5, num_threads=3, enqueue_many=True,
                           allow_smaller_final_batch=True)
        (runner,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
        assert len(runner.enqueue_ops) == 3
        got = _rows(_drain(b))
    np.testing.assert_array_equal(np.sort(got), np.repeat(np.arange(12), 2))


def test_batch_join_reads_every_list():
    with tf.Graph().as_default():
        a = tf.train.limit_epochs(tf.constant([1, 2, 3]), 1)
        b = tf.train.limit_epochs(tf.constant([10, 20]), 1)
        out = tf.train.batch_join([[a], [b]], 2, enqueue_many=True,
                                  allow_smaller_final_batch=True)
        (runner,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
        assert runner.name == "batch_join/fifo_queue" and len(runner.enqueue_ops) == 2
        got = _rows(_drain(out))
    np.testing.assert_array_equal(np.sort(got), [1, 2, 3, 10, 20])


def test_batch_join_of_dicts_keeps_the_keys():
    with tf.Graph().as_default():
        lists = [{"x": tf.constant(float(k)), "y": tf.constant(k)} for k in range(3)]
        out = tf.train.batch_join(lists, 4)
        assert sorted(out) == ["x", "y"] and out["x"].shape == (4,)
        got = _first(out)
    np.testing.assert_array_equal(got["x"], got["y"].astype(np.float32))


def _first(fetch):
    """The first value of `fetch` from the default graph's queue runners."""
    graph = tf.get_default_graph()  # (the default graph is the thread's own)

    def body():
        with graph.as_default(), tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            try:
                return sess.run(fetch)
            finally:
                coord.request_stop()
                coord.join(threads)
    return within(HANG, body)


def test_stopping_early_ends_blocked_producers():
    """An endless producer blocked on a full queue ends when the coordinator stops."""
    with tf.Graph().as_default():
        b = tf.train.batch([tf.constant([1.0, 2.0])], 2, capacity=3, num_threads=2)
        np.testing.assert_array_equal(_first(b), [[1, 2], [1, 2]])


def test_monitored_training_session_runs_the_pipeline_to_its_end():
    """The TensorFlow 1 loop: MonitoredTrainingSession initializes the epoch counter
    (local variables) and starts the queue runners; should_stop() after the last
    (partial) batch."""
    with tf.Graph().as_default():
        x = tf.train.limit_epochs(tf.range(10), 1)
        b = tf.train.batch([x], 4, enqueue_many=True, allow_smaller_final_batch=True)
        tf.train.get_or_create_global_step()

        def loop():
            out = []
            with tf.train.MonitoredTrainingSession() as sess:
                while not sess.should_stop():
                    out.append(sess.run(b).tolist())
            return out
        graph = tf.get_default_graph()
        got = within(HANG, lambda: _in_graph(graph, loop))
    assert got == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def _in_graph(graph, fn):
    with graph.as_default():
        return fn()


# -- shuffle_batch ---------------------------------------------------------------------
@settings(max_examples=8)
@given(rows=st.integers(1, 12), batch_size=st.integers(1, 5), min_after=st.integers(0, 4),
       threads=st.integers(1, 2))
def test_shuffle_batch_is_a_permutation_of_the_epoch(rows, batch_size, min_after, threads):
    with tf.Graph().as_default():
        x = tf.train.limit_epochs(tf.range(rows), 1)
        b = tf.train.shuffle_batch([x, x * 2], batch_size, capacity=min_after + 3,
                                   min_after_dequeue=min_after, num_threads=threads,
                                   enqueue_many=True, allow_smaller_final_batch=True)
        got = _drain(b)
    assert got[-1] == "end"
    firsts = np.concatenate([g[0] for g in got[:-1]])
    seconds = np.concatenate([g[1] for g in got[:-1]])
    np.testing.assert_array_equal(np.sort(firsts), np.arange(rows))
    np.testing.assert_array_equal(seconds, firsts * 2)  # components stay together
    assert all(len(g[0]) == batch_size for g in got[:-2])


def test_shuffle_batch_summary_runner_and_full_batches():
    with tf.Graph().as_default() as g:
        x = tf.train.limit_epochs(tf.range(10), 1)
        b = tf.train.shuffle_batch([x], 3, capacity=10, min_after_dequeue=2,
                                   enqueue_many=True, seed=1)
        assert b.shape == (3,)
        (runner,) = g.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
        assert runner.name == "shuffle_batch/random_shuffle_queue"
        assert [s.name for s in g.get_collection(tf.GraphKeys.SUMMARIES)] == [
            "shuffle_batch/fraction_over_2_of_8_full:0"]
        got = _drain(b)
    assert got[-1] == "end" and len(got) == 4  # 3 full batches, the last row dropped
    rows = np.concatenate(got[:-1])
    assert len(set(rows.tolist())) == 9 and set(rows.tolist()) <= set(range(10))


def test_shuffle_batch_join_mixes_every_list():
    with tf.Graph().as_default():
        lists = [[tf.train.limit_epochs(tf.constant([k, k + 1]) * 10, 1)] for k in range(3)]
        b = tf.train.shuffle_batch_join(lists, 2, capacity=8, min_after_dequeue=1,
                                        enqueue_many=True, allow_smaller_final_batch=True)
        got = _rows(_drain(b))
    np.testing.assert_array_equal(np.sort(got), [0, 10, 10, 20, 20, 30])


# -- maybe_* -----------------------------------------------------------------------------
def test_maybe_batch_scalar_keep_drops_single_elements():
    with tf.Graph().as_default():
        i = tf.train.range_input_producer(7, num_epochs=1, shuffle=False).dequeue()
        b = tf.train.maybe_batch([i], tf.equal(i % 2, 0), 2, allow_smaller_final_batch=True)
        got = _drain(b)
    assert got[-1] == "end"
    np.testing.assert_array_equal(np.concatenate(got[:-1]), [0, 2, 4, 6])


def test_maybe_batch_vector_keep_selects_rows():
    with tf.Graph().as_default():
        x = tf.train.limit_epochs(tf.reshape(tf.range(20), [10, 2]), 1)
        keep = tf.equal(x[:, 0] % 4, 0)
        b = tf.train.maybe_batch([x], keep, 3, enqueue_many=True,
                                 allow_smaller_final_batch=True)
        got = _rows(_drain(b))
    np.testing.assert_array_equal(got, [[0, 1], [4, 5], [8, 9], [12, 13], [16, 17]])


def test_maybe_batch_scalar_keep_with_enqueue_many_takes_or_drops_the_whole_batch():
    with tf.Graph().as_default():
        e = tf.train.range_input_producer(4, num_epochs=1, shuffle=False).dequeue()
        rows = tf.stack([e, e + 100])  # a batch of two rows per run
        b = tf.train.maybe_batch([rows], tf.equal(e % 2, 1), 10, enqueue_many=True,
                                 allow_smaller_final_batch=True)
        got = _rows(_drain(b))
    np.testing.assert_array_equal(got, [1, 101, 3, 103])


def test_maybe_shuffle_batch_join_keeps_only_selected():
    with tf.Graph().as_default():
        lists = [[tf.train.limit_epochs(tf.range(6) + 10 * k, 1)] for k in range(2)]
        keep = tf.constant([True, False, True, False, True, False])
        b = tf.train.maybe_shuffle_batch_join(lists, 2, 6, 1, keep, enqueue_many=True,
                                              allow_smaller_final_batch=True)
        got = _rows(_drain(b))
    np.testing.assert_array_equal(np.sort(got), [0, 2, 4, 10, 12, 14])


def test_maybe_shuffle_batch_and_maybe_batch_join_with_false_keep_end_empty():
    with tf.Graph().as_default():
        x = tf.train.limit_epochs(tf.range(4), 1)
        b = tf.train.maybe_shuffle_batch([x], 2, 5, 1, tf.constant(False), enqueue_many=True,
                                         allow_smaller_final_batch=True)
        assert _drain(b) == ["end"]
    with tf.Graph().as_default():
        x = tf.train.limit_epochs(tf.range(4), 1)
        b = tf.train.maybe_batch_join([[x]], tf.constant(True), 3, enqueue_many=True,
                                      allow_smaller_final_batch=True)
        np.testing.assert_array_equal(_rows(_drain(b)), [0, 1, 2, 3])


# -- producers -------------------------------------------------------------------------
def test_range_input_producer_in_order_then_out_of_range():
    with tf.Graph().as_default() as g:
        q = tf.train.range_input_producer(5, num_epochs=2, shuffle=False)
        assert q.name == "input_producer"
        assert [v.name for v in tf.local_variables()] == ["input_producer/limit_epochs/epochs:0"]
        assert [s.name for s in g.get_collection(tf.GraphKeys.SUMMARIES)] == [
            "input_producer/fraction_of_32_full:0"]
        got = _drain(q.dequeue())
    assert got == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, "end"]


def test_range_input_producer_shuffles_each_epoch_anew():
    """Every epoch is a permutation of its own (random_shuffle runs at every enqueue);
    with 8 elements and 6 epochs, all alike would be a 1 in 40320**5 chance."""
    with tf.Graph().as_default():
        q = tf.train.range_input_producer(8, num_epochs=6, seed=3)
        got = _drain(q.dequeue_up_to(8))
    assert got[-1] == "end" and len(got) == 7
    epochs = [tuple(e) for e in got[:-1]]
    assert all(sorted(e) == list(range(8)) for e in epochs)
    assert len(set(epochs)) > 1


def test_range_input_producer_with_a_tensor_limit():
    with tf.Graph().as_default():
        q = tf.train.range_input_producer(tf.constant(3) + 1, num_epochs=1, shuffle=False)
        assert _drain(q.dequeue()) == [0, 1, 2, 3, "end"]


def test_input_producer_rows_and_element_shape():
    data = np.arange(6, dtype=np.float32).reshape(3, 2)
    with tf.Graph().as_default() as g:
        q = tf.train.input_producer(tf.constant(data), num_epochs=1, shuffle=False)
        assert q.shapes == [(2,)] and g.get_collection(tf.GraphKeys.SUMMARIES) == []
        got = _drain(q.dequeue())
    assert got[-1] == "end"
    np.testing.assert_array_equal(np.stack(got[:-1]), data)
    with tf.Graph().as_default():
        q = tf.train.input_producer(tf.placeholder(tf.int32, [None, None]), element_shape=[4])
        assert q.shapes == [(4,)]
        with pytest.raises(ValueError, match="`element_shape` must be specified"):
            tf.train.input_producer(tf.placeholder(tf.int32, [None, None]))
        with pytest.raises(ValueError, match=r"tf.train.input_producer .*not compatible"):
            tf.train.input_producer(tf.constant([1, 2]), element_shape=[3])


def test_slice_input_producer_keeps_rows_together():
    xs = np.arange(5, dtype=np.int32)
    ys = np.arange(10, dtype=np.float32).reshape(5, 2)
    with tf.Graph().as_default():
        x, y = tf.train.slice_input_producer([tf.constant(xs), tf.constant(ys)], num_epochs=2)
        assert x.shape == () and y.shape == (2,)
        got = _drain([x, y])
    assert got[-1] == "end" and len(got) == 11
    seen = np.array([g[0] for g in got[:-1]])
    np.testing.assert_array_equal(np.sort(seen), np.repeat(xs, 2))
    for xv, yv in got[:-1]:
        np.testing.assert_array_equal(yv, ys[xv])


def test_slice_input_producer_refuses_different_row_counts():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="different numbers of rows"):
            tf.train.slice_input_producer([tf.constant([1, 2]), tf.constant([1, 2, 3])])
        with pytest.raises(ValueError, match="Expected at least one tensor"):
            tf.train.slice_input_producer([])
    # rows known only when it runs: the runner fails with the check's error (TensorFlow
    # would gather the first rows of the longer tensor and drop the rest silently)
    with tf.Graph().as_default():
        def rows(n):
            return np.arange(n, dtype=np.int32)
        a = tf.py_func(rows, [tf.constant(2)], tf.int32, stateful=False)
        b = tf.py_func(rows, [tf.constant(3)], tf.int32, stateful=False)
        a.set_shape([None])
        b.set_shape([None])
        x, y = tf.train.slice_input_producer([a, b], num_epochs=1, shuffle=False)
        with pytest.raises(tw.errors.InvalidArgumentError, match="different number of rows"):
            _drain(x)


def test_string_input_producer_gives_the_names_epoch_by_epoch():
    with tf.Graph().as_default():
        q = tf.train.string_input_producer(["a.txt", "b.txt", b"c\x00"], num_epochs=2,
                                           shuffle=False)
        name = q.dequeue()
        assert name.dtype is tf.string and name.shape == ()
        got = _drain(name)
    assert got[-1] == "end"  # (a session gives a string scalar as a 0-d object array)
    assert [x[()] for x in got[:-1]] == [b"a.txt", b"b.txt", b"c\x00"] * 2
    with pytest.raises(tw.errors.DTypeError, match="dtype string"):
        tf.train.string_input_producer([1, 2])


# -- bad input ---------------------------------------------------------------------------
def test_batch_errors_name_the_function_and_line():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.int32, [None])
        with pytest.raises(ValueError, match=r"tf.train.batch \(.*test_v1_input_producers"
                                             r".py:\d+\): All shapes must be fully defined"):
            tf.train.batch([p], 2)
        assert tf.train.batch([p], 2, shapes=[[3]]).shape == (2, 3)
        with pytest.raises(ValueError, match="rank at least 1"):
            tf.train.batch([tf.constant(1)], 2, enqueue_many=True)
        with pytest.raises(TypeError, match="list, tuple or dict"):
            tf.train.batch(tf.constant([1, 2]), 2)
        with pytest.raises(ValueError, match=r"Expected at least one tensor in batch\(\)"):
            tf.train.batch([], 2)
        with pytest.raises(ValueError, match="not compatible"):
            tf.train.batch_join([[tf.constant([1, 2])], [tf.constant([1, 2, 3])]], 2)
        with pytest.raises(TypeError, match="Expected types to be consistent: int32 vs. "
                                            "float32"):
            tf.train.batch_join([[tf.constant([1, 2])], [tf.constant([1.0, 2.0])]], 2)
        with pytest.raises(ValueError, match="same number of tensors"):
            tf.train.batch_join([[tf.constant(1)], [tf.constant(1), tf.constant(2)]], 2)
        with pytest.raises(ValueError, match="at least one set of tensors"):
            tf.train.batch_join([], 2)
        with pytest.raises(ValueError, match="cannot be a vector when `enqueue_many=False`"):
            tf.train.maybe_batch([tf.constant([1, 2])], tf.constant([True, False]), 2)
        with pytest.raises(ValueError, match="must be 0 or 1 dimensions"):
            tf.train.maybe_batch([tf.constant([1, 2])], tf.constant([[True, False]]), 2,
                                 enqueue_many=True)
        with pytest.raises(ValueError, match="capacity 5 must be bigger than "
                                             "min_after_dequeue 5"):
            tf.train.shuffle_batch([tf.constant([1, 2])], 2, capacity=5, min_after_dequeue=5)
        with pytest.raises(TypeError, match="batch_size must be a Python int"):
            tf.train.batch([tf.constant(1.0)], tf.constant(2))


# -- get_checkpoint_state ----------------------------------------------------------------
def test_get_checkpoint_state(tmp_path):
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None
    assert tf.train.get_checkpoint_state(str(tmp_path / "missing")) is None
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        saver = tf.train.Saver(max_to_keep=2)
        with tf.Session() as sess:
            sess.run(v.initializer)
            for step in (1, 2, 3):
                saver.save(sess, str(tmp_path / "model"), global_step=step)
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == str(tmp_path / "model-3")
    assert state.model_checkpoint_path == tf.train.latest_checkpoint(str(tmp_path))
    assert state.all_model_checkpoint_paths == [str(tmp_path / "model-2"),
                                                str(tmp_path / "model-3")]
    assert len(state.all_model_checkpoint_timestamps) == 2
    stamps = state.all_model_checkpoint_timestamps
    assert stamps[0] <= stamps[1]


def test_count_up_to_parses_in_a_process_without_compat_v1():
    """IR text naming CountUpTo parses where only ``import tensorweave`` ran (a task
    process sent a partition holding a limit_epochs counter)."""
    import subprocess
    import sys

    from tensorweave.compiler.printer import print_graph
    with tf.Graph().as_default() as g:
        tf.train.limit_epochs(tf.constant([1, 2]), 2)
    text = print_graph(g.ir)
    assert '"tw.CountUpTo"' in text
    code = ("import sys; from tensorweave.compiler.parser import parse_graph; "
            "g = parse_graph(sys.stdin.read()); "
            "print(sum(n.op == 'CountUpTo' for n in g.nodes))")
    out = subprocess.run([sys.executable, "-c", code], input=text, capture_output=True,
                         text=True, timeout=HANG)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"
