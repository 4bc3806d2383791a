"""Review: queue state is never lost or made unreproducible by the queue itself.

- A ``dequeue_many`` / ``dequeue_up_to`` whose batch cannot be assembled (a FIFOQueue with
  None dims holding elements of two shapes) must fail *without* taking the elements: they
  stay in the queue, in order, for a dequeue that can take them (TensorFlow checks before
  it dequeues). They used to be removed first and then dropped by the failed batch.
- A ``RandomShuffleQueue`` created without a seed after ``tw.random.set_seed`` (or in a
  v1 graph with a graph seed) must shuffle the same way every time, as TensorFlow derives
  the queue's seed from the global seed; it used to draw from OS entropy.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.runtime import queues as rq
from tests.helpers import within


def f32(*xs: float) -> np.ndarray:
    return np.array(xs, np.float32)


@pytest.fixture(autouse=True)
def no_global_seed():
    tw.random.set_seed(None)
    tf.reset_default_graph()
    yield
    tw.random.set_seed(None)


# ----------------------------------------------------------------------- failed batches

@pytest.mark.parametrize("up_to", [False, True])
def test_runtime_failed_batch_keeps_the_elements_in_order(up_to: bool) -> None:
    q = rq.FIFOQueue(10, [tw.float32], shapes=[[None]], name="q")
    q.enqueue([f32(1, 2)])
    q.enqueue([f32(3, 4, 5)])
    q.enqueue([f32(6, 7)])
    if up_to:
        q.close()
    with pytest.raises(tw.errors.InvalidArgumentError, match="one shape"):
        within(10, lambda: (q.dequeue_up_to if up_to else q.dequeue_many)(2))
    assert q.size() == 3
    # still all there, first one first
    for want in (f32(1, 2), f32(3, 4, 5), f32(6, 7)):
        np.testing.assert_array_equal(within(10, q.dequeue)[0], want)


def test_eager_failed_dequeue_many_keeps_the_elements() -> None:
    q = tw.queue.FIFOQueue(10, [tw.float32], shapes=[[None]])
    q.enqueue(f32(1, 2))
    q.enqueue(f32(3, 4, 5))
    with pytest.raises(tw.errors.InvalidArgumentError, match="one shape"):
        within(10, lambda: q.dequeue_many(2))
    assert int(q.size()) == 2
    np.testing.assert_array_equal(within(10, q.dequeue), f32(1, 2))


def test_compiled_failed_dequeue_many_keeps_the_elements() -> None:
    q = tw.queue.FIFOQueue(10, [tw.float32], shapes=[[None]])
    q.enqueue(f32(1, 2))
    q.enqueue(f32(3, 4, 5))

    @tw.compile
    def take_two():
        return q.dequeue_many(2)

    with pytest.raises(tw.errors.InvalidArgumentError, match="one shape"):
        within(60, take_two)
    assert int(q.size()) == 2
    np.testing.assert_array_equal(within(10, q.dequeue), f32(1, 2))
    np.testing.assert_array_equal(within(10, q.dequeue), f32(3, 4, 5))


def test_failed_batch_of_a_shuffle_queue_keeps_every_element() -> None:
    q = rq.RandomShuffleQueue(10, 0, [tw.float32], shapes=[[None]], seed=3, name="s")
    for k in range(4):
        q.enqueue([np.full(1 + k % 2, k, np.float32)])
    with pytest.raises(tw.errors.InvalidArgumentError, match="one shape"):
        within(10, lambda: q.dequeue_many(4))
    assert q.size() == 4
    got = sorted(float(within(10, q.dequeue)[0][0]) for _ in range(4))
    assert got == [0.0, 1.0, 2.0, 3.0]


def test_good_batches_are_unchanged() -> None:
    q = rq.FIFOQueue(10, [tw.float32, tw.int32], shapes=[[None], []], name="ok")
    q.enqueue_many([np.arange(6, dtype=np.float32).reshape(3, 2), np.arange(3, dtype=np.int32)])
    a, b = within(10, lambda: q.dequeue_many(2))
    np.testing.assert_array_equal(a, [[0, 1], [2, 3]])
    np.testing.assert_array_equal(b, [0, 1])
    q.close()
    a, b = within(10, lambda: q.dequeue_up_to(5))
    np.testing.assert_array_equal(a, [[4, 5]])
    np.testing.assert_array_equal(b, [2])
    with pytest.raises(tw.errors.OutOfRangeError):
        within(10, lambda: q.dequeue_up_to(1))


# ------------------------------------------------------------------- shuffle seeding

def _drain_order(make) -> list[int]:
    q = make()
    q.enqueue_many(np.arange(16, dtype=np.int32))
    q.close()
    return within(10, lambda: [int(q.dequeue()) for _ in range(16)])


def _unseeded() -> tw.queue.RandomShuffleQueue:
    return tw.queue.RandomShuffleQueue(32, 0, [tw.int32], shapes=[[]])


def test_global_seed_makes_an_unseeded_shuffle_queue_reproducible() -> None:
    tw.random.set_seed(1234)
    first = _drain_order(_unseeded)
    tw.random.set_seed(1234)
    again = _drain_order(_unseeded)
    assert first == again
    assert sorted(first) == list(range(16))
    assert first != list(range(16))  # (shuffled: 1/16! odds of a false failure)


def test_global_seed_gives_successive_queues_different_orders() -> None:
    # two queues of one program are two ops: TensorFlow gives them different seeds
    tw.random.set_seed(1234)
    assert _drain_order(_unseeded) != _drain_order(_unseeded)


def test_explicit_seed_is_unchanged_by_the_global_seed_rule() -> None:
    def seeded() -> tw.queue.RandomShuffleQueue:
        return tw.queue.RandomShuffleQueue(32, 0, [tw.int32], shapes=[[]], seed=7)

    plain = _drain_order(seeded)
    tw.random.set_seed(99)
    assert _drain_order(seeded) == plain


def _v1_order(graph_seed: int) -> list[int]:
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(graph_seed)
        q = tf.RandomShuffleQueue(32, 0, [tw.int32], shapes=[[]])
        enq = q.enqueue_many([np.arange(16, dtype=np.int32)])
        close = q.close()
        out = q.dequeue()
        with tf.Session() as sess:
            sess.run(enq)
            sess.run(close)
            return within(30, lambda: [int(sess.run(out)) for _ in range(16)])


def test_v1_graph_seed_makes_an_unseeded_shuffle_queue_reproducible() -> None:
    assert _v1_order(5) == _v1_order(5)


# ------------------------------------------------------------- shared queues' shapes

def test_a_shared_queue_requested_with_other_shapes_is_refused() -> None:
    # The second handle's dequeue_many promised [n, 3] batches of a queue holding [2]
    # elements: the elements were taken, then the step failed (InternalError), and they
    # were gone. TensorFlow refuses the second queue when it is made.
    first = tw.queue.FIFOQueue(5, [tw.float32], shapes=[[None]],
                               shared_name="review_shared_shapes")
    first.enqueue(f32(1, 2))
    with pytest.raises(tw.errors.InvalidArgumentError, match="shapes"):
        tw.queue.FIFOQueue(5, [tw.float32], shapes=[[3]], shared_name="review_shared_shapes")
    with pytest.raises(tw.errors.InvalidArgumentError, match="shapes"):
        tw.queue.FIFOQueue(5, [tw.float32], shared_name="review_shared_shapes")
    assert int(first.size()) == 1
    same = tw.queue.FIFOQueue(5, [tw.float32], shapes=[[None]],
                              shared_name="review_shared_shapes")
    np.testing.assert_array_equal(within(10, same.dequeue), f32(1, 2))


def test_a_shared_shuffle_queue_requested_with_another_min_after_dequeue_is_refused() -> None:
    tw.queue.RandomShuffleQueue(8, 2, [tw.int32], shapes=[[]], shared_name="review_shared_mad")
    with pytest.raises(tw.errors.InvalidArgumentError, match="min_after_dequeue"):
        tw.queue.RandomShuffleQueue(8, 0, [tw.int32], shapes=[[]],
                                    shared_name="review_shared_mad")
    tw.queue.RandomShuffleQueue(8, 2, [tw.int32], shapes=[[]], shared_name="review_shared_mad")


def test_v1_queues_of_one_graph_sharing_a_name_with_other_shapes_are_refused() -> None:
    # (one handle node per shared name and graph: the second queue used the first's)
    g = tf.Graph()
    with g.as_default():
        tf.FIFOQueue(5, [tw.float32], shapes=[[None]], shared_name="review_v1_shared")
        with pytest.raises(tw.errors.InvalidArgumentError, match="shapes"):
            tf.FIFOQueue(5, [tw.float32], shapes=[[2]], shared_name="review_v1_shared")
        tf.FIFOQueue(5, [tw.float32], shapes=[[None]], shared_name="review_v1_shared")


def test_a_handle_run_where_its_queue_exists_with_other_shapes_is_refused() -> None:
    # (between-graph replication: each task's graph names the queue its server holds)
    g = tf.Graph()
    with g.as_default():
        q = tf.FIFOQueue(5, [tw.float32], shapes=[[3]], shared_name="review_v1_server")
        take = q.dequeue_many(1)
        with tf.Session() as sess:
            held = sess.resources.get_or_create(
                "review_v1_server", lambda: rq.FIFOQueue(5, [tw.float32], name="server"))
            held.enqueue([f32(1, 2)])
            with pytest.raises(tw.errors.InvalidArgumentError, match="shapes"):
                sess.run(take)
            assert held.size() == 1
