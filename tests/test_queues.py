"""Queues: FIFO/shuffle/padding semantics, blocking and back-pressure, close and cancel,
the same through compiled functions and v1 Sessions, queue runners, concurrency, and the
input-pipeline example.

Every test that could block runs its body under `within(seconds)`, so a bug fails the
test instead of hanging the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.compiler.parser import parse_graph
from tensorweave.compiler.printer import print_graph
from tensorweave.runtime import queues as rq
from tensorweave.runtime.cancellation import CancellationManager
from tests.helpers import within

ROOT = Path(__file__).resolve().parent.parent


def start(fn: Callable[[], object]) -> tuple[threading.Thread, dict]:
    """Run `fn` on a daemon thread; the dict gets its result or error."""
    box: dict = {}

    def body() -> None:
        try:
            box["result"] = fn()
        except BaseException as e:  # noqa: BLE001
            box["error"] = e

    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t, box


def blocked(t: threading.Thread, for_s: float = 0.2) -> bool:
    t.join(for_s)
    return t.is_alive()


def f32(*xs) -> np.ndarray:
    return np.array(xs, np.float32)


pytestmark = pytest.mark.usefixtures("fresh_default_graph")


# ------------------------------------------------------------------------- eager queues

def test_fifo_order_and_structure():
    q = tw.queue.FIFOQueue(10, [tw.float32, tw.int32], shapes=[[2], []])
    for i in range(4):
        q.enqueue((f32(i, -i), i))
    assert int(q.size()) == 4
    for i in range(4):
        x, y = q.dequeue()
        np.testing.assert_array_equal(x, f32(i, -i))
        assert int(y) == i and y.dtype is tw.int32
    single = tw.queue.FIFOQueue(3, tw.float32, shapes=[])
    single.enqueue(1.5)
    assert float(single.dequeue()) == 1.5  # one component: a tensor, not a list
    named = tw.queue.FIFOQueue(3, [tw.float32, tw.int32], shapes=[[], []], names=["x", "y"])
    named.enqueue({"x": 2.0, "y": 7})
    out = named.dequeue()
    assert set(out) == {"x", "y"} and int(out["y"]) == 7


def test_enqueue_many_and_dequeue_many():
    q = tw.queue.FIFOQueue(10, [tw.float32, tw.int64], shapes=[[3], []])
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    q.enqueue_many((x, np.arange(5, dtype=np.int64)))
    a, b = q.dequeue_many(3)
    np.testing.assert_array_equal(a, x[:3])
    np.testing.assert_array_equal(b, [0, 1, 2])
    assert a.shape == (3, 3) and b.dtype is tw.int64
    a, b = q.dequeue_many(2)
    np.testing.assert_array_equal(a, x[3:])
    empty = q.dequeue_many(0)
    assert empty[0].shape == (0, 3)


def test_dequeue_many_larger_than_capacity_is_fed_incrementally():
    q = tw.queue.FIFOQueue(2, tw.int32, shapes=[])

    def produce():
        for i in range(7):
            q.enqueue(i)

    producer, _ = start(produce)
    out = within(10, lambda: q.dequeue_many(7))
    producer.join(5)
    np.testing.assert_array_equal(out, np.arange(7))


def test_capacity_back_pressure():
    q = tw.queue.FIFOQueue(2, tw.int32, shapes=[])
    q.enqueue(0)
    q.enqueue(1)
    producer, box = start(lambda: q.enqueue(2))
    assert blocked(producer), "enqueue on a full queue must block"
    assert int(q.size()) == 2
    assert int(q.dequeue()) == 0
    producer.join(5)
    assert not producer.is_alive() and "error" not in box
    assert [int(q.dequeue()) for _ in range(2)] == [1, 2]


def test_blocked_dequeue_waits_for_a_producer():
    q = tw.queue.FIFOQueue(4, tw.float32, shapes=[])
    consumer, box = start(lambda: q.dequeue())
    assert blocked(consumer)
    q.enqueue(3.0)
    consumer.join(5)
    assert float(box["result"]) == 3.0


def test_closed_and_empty_raises_out_of_range():
    q = tw.queue.FIFOQueue(4, tw.float32, shapes=[])
    q.enqueue(1.0)
    q.close()
    assert bool(q.is_closed())
    assert float(q.dequeue()) == 1.0  # what was enqueued before close still comes out
    with pytest.raises(tw.errors.OutOfRangeError, match="closed and has insufficient"):
        q.dequeue()
    with pytest.raises(tw.errors.CancelledError, match="is closed"):
        q.enqueue(2.0)


def test_dequeue_many_on_closed_queue_keeps_elements_and_up_to_drains():
    q = tw.queue.FIFOQueue(8, tw.int32, shapes=[])
    q.enqueue_many(np.arange(3, dtype=np.int32))
    q.close()
    with pytest.raises(tw.errors.OutOfRangeError, match="requested 5, current size 3"):
        q.dequeue_many(5)
    assert int(q.size()) == 3  # a failed dequeue_many puts nothing away
    np.testing.assert_array_equal(q.dequeue_up_to(5), [0, 1, 2])
    with pytest.raises(tw.errors.OutOfRangeError):
        q.dequeue_up_to(5)


def test_close_wakes_blocked_dequeue():
    q = tw.queue.FIFOQueue(4, tw.float32, shapes=[])
    consumer, box = start(lambda: q.dequeue())
    assert blocked(consumer)
    q.close()
    consumer.join(5)
    assert isinstance(box.get("error"), tw.errors.OutOfRangeError)


def test_close_lets_pending_enqueues_finish_unless_cancelled():
    q = tw.queue.FIFOQueue(1, tw.int32, shapes=[])
    q.enqueue(0)
    pending, box = start(lambda: q.enqueue(1))
    assert blocked(pending)
    q.close()  # without cancel_pending_enqueues the blocked enqueue still completes
    assert blocked(pending, 0.1)
    assert int(q.dequeue()) == 0
    pending.join(5)
    assert "error" not in box and int(q.dequeue()) == 1

    q2 = tw.queue.FIFOQueue(1, tw.int32, shapes=[])
    q2.enqueue(0)
    pending, box = start(lambda: q2.enqueue(1))
    assert blocked(pending)
    q2.close(cancel_pending_enqueues=True)
    pending.join(5)
    assert isinstance(box.get("error"), tw.errors.CancelledError)
    assert int(q2.size()) == 1


def test_random_shuffle_queue_is_a_permutation():
    q = tw.queue.RandomShuffleQueue(50, 0, tw.int32, shapes=[], seed=7)
    q.enqueue_many(np.arange(40, dtype=np.int32))
    out = [int(q.dequeue()) for _ in range(30)] + np.asarray(q.dequeue_many(10)).tolist()
    assert sorted(out) == list(range(40))
    assert out != list(range(40))


def test_random_shuffle_queue_respects_min_after_dequeue():
    q = tw.queue.RandomShuffleQueue(10, 3, tw.int32, shapes=[], seed=1)
    q.enqueue_many(np.arange(5, dtype=np.int32))
    first = [int(q.dequeue()) for _ in range(2)]  # 5 -> 3 left, the minimum
    consumer, box = start(lambda: q.dequeue())
    assert blocked(consumer), "dequeue must leave min_after_dequeue elements behind"
    q.enqueue(5)
    consumer.join(5)
    got = first + [int(box["result"])]
    q.close()  # once closed, the last elements can be dequeued
    rest = np.asarray(within(5, lambda: q.dequeue_many(3))).tolist()
    assert sorted(got + rest) == list(range(6))
    with pytest.raises(ValueError, match="min_after_dequeue"):
        tw.queue.RandomShuffleQueue(3, 3, tw.int32)


def test_padding_fifo_queue_pads_to_largest_in_batch():
    q = tw.queue.PaddingFIFOQueue(5, [tw.int32, tw.float32], shapes=[[None], [2, None]])
    q.enqueue((np.array([1], np.int32), np.ones((2, 1), np.float32)))
    q.enqueue((np.array([1, 2, 3], np.int32), np.ones((2, 2), np.float32)))
    a, b = q.dequeue_many(2)
    np.testing.assert_array_equal(a, [[1, 0, 0], [1, 2, 3]])
    assert b.shape == (2, 2, 2)
    np.testing.assert_array_equal(b[0], [[1, 0], [1, 0]])
    with pytest.raises(ValueError, match="needs shapes"):
        tw.queue.PaddingFIFOQueue(5, tw.int32, None)


def test_fifo_dequeue_many_of_unequal_shapes_is_a_clear_error():
    q = tw.queue.FIFOQueue(5, tw.int32, shapes=[[None]])
    q.enqueue(np.array([1], np.int32))
    q.enqueue(np.array([1, 2], np.int32))
    with pytest.raises(tw.errors.InvalidArgumentError, match="PaddingFIFOQueue"):
        q.dequeue_many(2)


def test_component_checks_name_the_users_line():
    q = tw.queue.FIFOQueue(5, [tw.float32, tw.int32], shapes=[[2], []])
    with pytest.raises(tw.errors.ShapeError, match="component 0 has shape \\[2\\]") as err:
        q.enqueue((f32(1, 2, 3), 1))
    assert "test_queues.py" in str(err.value)
    with pytest.raises(tw.errors.DTypeError, match="f32"):
        q.enqueue((np.zeros(2, np.float64), 1))
    with pytest.raises(tw.errors.InvalidArgumentError, match="2 components, enqueue got 1"):
        q.enqueue(f32(1, 2))
    with pytest.raises(tw.errors.ShapeError, match="leading batch"):
        q.enqueue_many((np.zeros((3, 2), np.float32), 1))
    no_shapes = tw.queue.FIFOQueue(5, tw.float32)
    no_shapes.enqueue(f32(1, 2))
    with pytest.raises(tw.errors.ShapeError, match="shapes=") as err:
        no_shapes.dequeue()
    assert "test_queues.py" in str(err.value)


def test_runtime_queue_checks_components():
    q = rq.FIFOQueue(3, ["f32"], [[2]], name="raw")
    with pytest.raises(tw.errors.InvalidArgumentError, match="component 0 has dtype f32"):
        q.enqueue([np.zeros(2, np.int32)])
    with pytest.raises(tw.errors.InvalidArgumentError, match="shape \\[2\\].*shape \\[3\\]"):
        q.enqueue([np.zeros(3, np.float32)])
    with pytest.raises(tw.errors.InvalidArgumentError, match="batch size"):
        rq.FIFOQueue(3, ["f32", "f32"]).enqueue_many([np.zeros((2,), np.float32),
                                                      np.zeros((3,), np.float32)])
    with pytest.raises(tw.errors.InvalidArgumentError, match="capacity"):
        rq.FIFOQueue(0, ["f32"])


def test_blocked_ops_wake_on_cancellation_and_deadline():
    q = rq.FIFOQueue(1, ["f32"], [[]], name="c")
    cm = CancellationManager()
    consumer, box = start(lambda: q.dequeue(rq.Waiter(cm)))
    assert blocked(consumer, 0.1)
    cm.cancel(tw.errors.InvalidArgumentError("boom"))
    consumer.join(2)
    assert isinstance(box.get("error"), tw.errors.CancelledError)
    assert "boom" in str(box["error"])
    t0 = time.monotonic()
    with pytest.raises(tw.errors.DeadlineExceededError):
        within(5, lambda: q.dequeue(rq.Waiter(deadline=time.monotonic() + 0.1)))
    assert time.monotonic() - t0 < 2
    q.enqueue([np.float32(1)])
    cm2 = CancellationManager()
    cm2.cancel()
    with pytest.raises(tw.errors.CancelledError):  # already full, and already cancelled
        within(5, lambda: q.enqueue([np.float32(2)], rq.Waiter(cm2)))
    assert q.size() == 1


def test_shared_name_refers_to_one_queue_and_checks_its_kind():
    a = tw.queue.FIFOQueue(4, tw.int32, shapes=[], shared_name="tq_shared")
    b = tw.queue.FIFOQueue(4, tw.int32, shapes=[], shared_name="tq_shared")
    a.enqueue(5)
    assert int(b.dequeue()) == 5
    with pytest.raises(tw.errors.InvalidArgumentError, match="shared queue 'tq_shared'"):
        tw.queue.FIFOQueue(4, tw.float32, shapes=[], shared_name="tq_shared")
    c = tw.queue.FIFOQueue(4, tw.int32, shapes=[])
    d = tw.queue.FIFOQueue(4, tw.int32, shapes=[])
    assert c.name != d.name


# --------------------------------------------------------------------- compiled functions

def test_queue_ops_in_compiled_functions():
    q = tw.queue.FIFOQueue(8, [tw.float32, tw.int32], shapes=[[2], []])

    @tw.compile(input_signature=[tw.TensorSpec([None, 2], tw.float32),
                                 tw.TensorSpec([None], tw.int32)])
    def produce(x, y):
        q.enqueue_many((x, y))
        return q.size()

    @tw.compile
    def consume_two():
        x, y = q.dequeue_many(2)
        one = q.dequeue()
        return x, y, one[1], q.size()

    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    assert int(produce(x, np.arange(4, dtype=np.int32))) == 4
    a, b, c, size = within(10, consume_two)
    np.testing.assert_array_equal(a, x[:2])
    np.testing.assert_array_equal(b, [0, 1])
    assert int(c) == 2 and int(size) == 1
    text = consume_two.get_concrete_function().ir()
    assert "tw.QueueDequeueMany" in text and "tw.QueueHandle" in text


def test_compiled_step_blocks_until_another_thread_enqueues():
    q = tw.queue.FIFOQueue(2, tw.float32, shapes=[3])

    @tw.compile
    def take():
        return q.dequeue() * 2.0

    @tw.compile(input_signature=[tw.TensorSpec([3], tw.float32)])
    def put(x):
        q.enqueue(x)

    consumer, box = start(take)
    assert blocked(consumer)
    put(f32(1, 2, 3))
    consumer.join(10)
    np.testing.assert_array_equal(box["result"], f32(2, 4, 6))


def test_compiled_dequeue_on_closed_queue_raises_out_of_range_with_op_name():
    q = tw.queue.FIFOQueue(2, tw.float32, shapes=[])

    @tw.compile
    def take():
        return q.dequeue()

    q.close()
    with pytest.raises(tw.errors.OutOfRangeError) as err:
        within(10, take)
    assert "QueueDequeue" in str(err.value) and "test_queues.py" in str(err.value)


def test_compiled_step_with_blocked_dequeue_is_cancelled_by_a_failing_op():
    q = tw.queue.FIFOQueue(2, tw.float32, shapes=[])
    table = np.arange(3, dtype=np.float32)

    @tw.compile(input_signature=[tw.TensorSpec([], tw.int32)])
    def step(i):
        return q.dequeue(), tw.gather(table, i)

    with pytest.raises(tw.errors.InvalidArgumentError, match="not in"):
        within(10, lambda: step(np.int32(7)))


def test_step_timeout_wakes_a_blocked_dequeue():
    from tensorweave.compiler.pipeline import compile_graph

    q = tw.queue.FIFOQueue(2, tw.float32, shapes=[])

    @tw.compile
    def take():
        return q.dequeue()

    exe = compile_graph(take.get_concrete_function().graph)
    with pytest.raises(tw.errors.DeadlineExceededError):
        within(10, lambda: exe(timeout=0.2))


def test_queue_creation_inside_compile_is_refused():
    @tw.compile
    def make():
        tw.queue.FIFOQueue(2, tw.float32)
        return tw.constant(1.0)

    with pytest.raises(tw.errors.TracingError, match="outside @tw.compile"):
        make()


def test_queue_ops_print_and_parse_back():
    q = tw.queue.PaddingFIFOQueue(4, [tw.float32, tw.int32], shapes=[[None, 2], []])

    @tw.compile
    def step():
        x, y = q.dequeue_many(3)
        q.close(cancel_pending_enqueues=True)
        return x, y

    graph = step.get_concrete_function().graph
    text = print_graph(graph)
    assert 'kind = "padding_fifo"' in text and "tensor<3x?x2xf32>" in text
    assert print_graph(parse_graph(text)) == text


def test_queue_ops_are_not_differentiable():
    from tensorweave.compiler.registry import get_op
    for op in ("QueueDequeue", "QueueDequeueMany", "QueueEnqueue", "QueueSize"):
        assert get_op(op).not_differentiable
    assert "blocking" in get_op("QueueDequeueMany").tags


def test_eight_threads_share_a_queue_without_deadlock():
    q = tw.queue.FIFOQueue(5, tw.int32, shapes=[2])
    per_thread = 30

    @tw.compile(input_signature=[tw.TensorSpec([2], tw.int32)])
    def put(x):
        q.enqueue(x)

    @tw.compile
    def take():
        return q.dequeue()

    results: list[np.ndarray] = []
    lock = threading.Lock()

    def producer(k: int) -> None:
        for i in range(per_thread):
            put(np.array([k, i], np.int32))

    def consumer() -> None:
        for _ in range(per_thread):
            v = take()
            with lock:
                results.append(v)

    threads = [threading.Thread(target=producer, args=(k,), daemon=True) for k in range(4)]
    threads += [threading.Thread(target=consumer, daemon=True) for _ in range(4)]

    def run_all() -> None:
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    within(30, run_all)
    assert len(results) == 4 * per_thread
    # every element came out exactly once
    assert sorted(map(tuple, results)) == [(k, i) for k in range(4) for i in range(per_thread)]


# ------------------------------------------------------------------------- v1 sessions

def test_v1_enqueue_and_dequeue_with_session_run():
    q = tf.FIFOQueue(3, [tf.float32], shapes=[[]])
    x = tf.placeholder(tf.float32, [])
    enqueue_op = q.enqueue([x])
    dequeue = q.dequeue()
    size = q.size()
    with tf.Session() as sess:
        for v in (1.0, 2.0):
            sess.run(enqueue_op, {x: v})
        assert sess.run(size) == 2
        assert within(5, lambda: sess.run(dequeue)) == 1.0
        with tf.Session() as other:  # every Session has its own queues
            assert other.run(size) == 0
        assert sess.run(dequeue) == 2.0
        sess.run(q.close())
        with pytest.raises(tw.errors.OutOfRangeError):
            within(5, lambda: sess.run(dequeue))


def test_v1_session_close_wakes_blocked_dequeue():
    q = tf.FIFOQueue(3, tf.float32, shapes=[[]])
    dequeue = q.dequeue()
    sess = tf.Session()
    consumer, box = start(lambda: sess.run(dequeue))
    assert blocked(consumer)
    sess.close()
    consumer.join(5)
    assert isinstance(box.get("error"), tw.errors.OutOfRangeError)


def test_v1_queue_runner_and_coordinator():
    q = tf.RandomShuffleQueue(20, 5, [tf.float32, tf.int32], shapes=[[2], []], seed=3)
    counter = tf.Variable(0, name="counter")
    n = counter.assign_add(1)
    enqueue_op = q.enqueue((tf.cast(tf.stack([n, n]), tf.float32), n))
    tf.train.add_queue_runner(tf.train.QueueRunner(q, [enqueue_op] * 3))
    xs, ys = q.dequeue_many(10)

    def session_body():
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            batches = [sess.run([xs, ys]) for _ in range(4)]
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
            return batches, threads

    batches, threads = within(30, session_body)
    assert not any(t.is_alive() for t in threads)
    labels = np.concatenate([b[1] for b in batches])
    # (three producers race on the counter's read-after-add, so labels may repeat)
    assert labels.shape == (40,) and labels.min() >= 1
    for x, y in batches:  # each element is whole: its components come from one step
        np.testing.assert_array_equal(x[:, 0], y.astype(np.float32))


def test_queue_runner_closes_queue_when_producers_finish():
    q = tw.queue.FIFOQueue(4, tw.int32, shapes=[])
    source = iter(range(10))
    lock = threading.Lock()

    def read() -> None:
        with lock:
            item = next(source, None)
        if item is None:
            raise tw.errors.OutOfRangeError("source exhausted")
        q.enqueue(item)

    coord = tw.queue.Coordinator()
    threads = tw.queue.QueueRunner(q, [read, read]).create_threads(coord=coord, start=True)

    def drain() -> list[int]:
        out = []
        while True:
            try:
                out.append(int(q.dequeue()))
            except tw.errors.OutOfRangeError:
                return out

    assert sorted(within(20, drain)) == list(range(10))
    coord.request_stop()
    within(10, lambda: coord.join(threads, stop_grace_period_secs=5))


def test_coordinator_propagates_thread_errors():
    q = tw.queue.FIFOQueue(2, tw.int32, shapes=[])

    def bad() -> None:
        raise ValueError("reader broke")

    coord = tw.queue.Coordinator()
    threads = tw.queue.QueueRunner(q, [bad]).create_threads(coord=coord, start=True)
    with pytest.raises(ValueError, match="reader broke"):
        within(10, lambda: coord.join(threads, stop_grace_period_secs=5))
    assert coord.should_stop() and bool(q.is_closed())


def test_coordinator_join_reports_stragglers_and_clean_stops():
    coord = tw.queue.Coordinator()
    release = threading.Event()
    t = threading.Thread(target=release.wait, daemon=True)
    t.start()
    coord.request_stop(tw.errors.OutOfRangeError("end of input"))  # a clean stop
    with pytest.raises(RuntimeError, match="still running"):
        coord.join([t], stop_grace_period_secs=0.1)
    release.set()
    t.join(5)
    coord.clear_stop()
    with coord.stop_on_exception():
        raise KeyError("x")
    with pytest.raises(KeyError):
        coord.join([], stop_grace_period_secs=0.1)


# ------------------------------------------------------------------------------- example

def test_input_pipeline_example_trains():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "input_pipeline.py"),
                          "--steps", "60", "--readers", "2"],
                         capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "throughput:" in out.stdout
    accuracy = float(out.stdout.rsplit("test accuracy:", 1)[1])
    assert accuracy >= 0.8, out.stdout


def test_compile_and_session_timeouts_cancel_a_blocked_step():
    q = tw.queue.FIFOQueue(2, [tw.float32], shapes=[[]])

    @tw.compile(timeout=0.2)
    def take():
        return q.dequeue()

    with pytest.raises(tw.errors.DeadlineExceededError):
        take()
    tf.reset_default_graph()
    tq = tf.FIFOQueue(2, [tf.float32], shapes=[[]])
    out = tq.dequeue()
    with tf.Session() as sess:
        with pytest.raises(tw.errors.DeadlineExceededError):
            sess.run(out, options=tf.RunOptions(timeout_in_ms=200))
