"""ConfigProto(operation_timeout_in_ms=...) bounds every step of the session, as in
TensorFlow 1 ("the deadline for all blocking operations in this session" unless
RunOptions.timeout_in_ms overrides it). It was accepted and ignored, so a step blocked on
a parameter server (a dequeue of an empty queue there, a token that never comes) hung
where TensorFlow raises DeadlineExceededError."""

import threading

import pytest

import tensorweave.compat.v1 as tf
from tensorweave.errors import DeadlineExceededError

from .cluster_helpers import servers

GUARD_S = 30.0  # only so that a regression fails instead of hanging the suite


def _run_guarded(fn):
    """fn() on a thread: its result or exception; fails (not hangs) if it never returns."""
    box = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(GUARD_S)
    assert not thread.is_alive(), "the step ignored the session's operation timeout (hung)"
    if "error" in box:
        raise box["error"]
    return box["value"]


def _queue_graph(device):
    g = tf.Graph()
    with g.as_default(), tf.device(device):
        q = tf.FIFOQueue(3, tf.float32, shapes=[[]], shared_name="review4_timeout_q")
        take = q.dequeue()
        put = q.enqueue(7.0)
    return g, take, put


@pytest.mark.parametrize("where", ["local", "ps"])
def test_the_session_operation_timeout_bounds_a_blocked_step(where):
    config = tf.ConfigProto(operation_timeout_in_ms=300)
    with servers(ps=1, worker=1) as (spec, tasks):
        target = "" if where == "local" else tasks["worker:0"].target
        g, take, put = _queue_graph(None if where == "local" else "/job:ps/task:0")
        with tf.Session(target, graph=g, config=config) as sess:
            with pytest.raises(DeadlineExceededError):
                _run_guarded(lambda: sess.run(take))
            # the session works on after the deadline, and a step with its value in
            # time is not cut short
            _run_guarded(lambda: sess.run(put))
            assert _run_guarded(lambda: sess.run(take)) == 7.0


def test_run_options_override_the_session_operation_timeout():
    g, take, put = _queue_graph(None)
    config = tf.ConfigProto(operation_timeout_in_ms=60_000)
    with tf.Session(graph=g, config=config) as sess:
        with pytest.raises(DeadlineExceededError):
            _run_guarded(lambda: sess.run(take, options=tf.RunOptions(timeout_in_ms=200)))
