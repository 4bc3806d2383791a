"""A task that lost its graph must never make a step run twice (review).

The master used to register every partition again and rerun the WHOLE step when any task
answered that it had no graph (it was restarted, or dropped the graph after an hour
idle). The other tasks' parts may already have run their stateful ops by then (here: a
counter's assign_add on the PS that does not depend on the worker), so those ran twice
and the call still succeeded: a silent wrong answer. Now, as in TensorFlow, such a step
is `AbortedError` saying it may have partly run, the graph is registered again so the
next run works, and the convenient rerun is kept where nothing can run twice.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.errors import AbortedError

from .cluster_helpers import servers

WORKER = "/job:worker/replica:0/task:0"


def counter_graph():
    """A counter on the PS incremented by one each step, independently of the worker's
    part (a product on the worker)."""
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            counter = tf.Variable(np.float32(0.0), name="counter")
            inc = counter.assign_add(np.float32(1.0))
        with tf.device("/job:worker/task:0"):
            y = tf.constant(np.arange(3, dtype=np.float32)) * tf.constant(np.float32(2.0))
    return g, counter, inc, y


def counter_value(ps_server) -> float:
    return float(ps_server.resources.variable("counter").read())


def two_task_executable(sess):
    exe = [s for s in sess._steps.values() if len(s.partitions) == 2]
    assert len(exe) == 1, sess._steps
    return exe[0]


class _GraphsLostUntil(dict):
    """A task's table of graphs, emptied, whose first look-up (RunGraph's) waits until
    the PS's counter reached `expected`: the PS's part of the step has run before the
    task answers that it has no graph, the order that ran the PS's increment twice,
    made certain instead of left to the scheduler."""

    def __init__(self, ps_server, expected: float) -> None:
        super().__init__()
        self.ps_server, self.expected = ps_server, expected
        self.answered = threading.Event()

    def get(self, key, default=None):
        if not self.answered.is_set():
            deadline = time.monotonic() + 30
            while counter_value(self.ps_server) < self.expected and \
                    time.monotonic() < deadline:
                time.sleep(0.005)
            self.answered.set()
        return super().get(key, default)


def lose_graph_after_ps_ran(worker_service, ps_server, expected: float) -> threading.Event:
    """The worker loses its graphs, and answers so only after the PS ran its part."""
    worker_service._graphs = _GraphsLostUntil(ps_server, expected)
    return worker_service._graphs.answered


def test_a_step_whose_other_task_ran_its_stateful_part_is_aborted_not_rerun():
    with servers(ps=1, worker=1) as (spec, tasks):
        g, counter, inc, y = counter_graph()
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            sess.run(counter.initializer)
            assert sess.run(inc) == 1.0
            np.testing.assert_array_equal(sess.run([inc, y])[1], [0, 2, 4])
            assert counter_value(tasks["ps:0"]) == 2.0
            two_task_executable(sess)
            answered = lose_graph_after_ps_ran(tasks["worker:0"].service, tasks["ps:0"], 3.0)
            with pytest.raises(AbortedError) as info:
                sess.run([inc, y])
            assert answered.is_set()
            message = str(info.value)
            assert WORKER in message and "lost the graph" in message
            assert "did not complete and may have partly run" in message
            assert "/job:ps/replica:0/task:0: AssignAddVariable" in message
            # the PS's increment ran once, not twice
            assert counter_value(tasks["ps:0"]) == 3.0
            # the graph is registered again: the next run works and counts once
            value, out = sess.run([inc, y])
            assert value == 4.0 and counter_value(tasks["ps:0"]) == 4.0
            np.testing.assert_array_equal(out, [0, 2, 4])


def test_without_forcing_the_order_a_failed_step_counts_at_most_once():
    """Whatever the order the tasks answer in: a call that succeeds counted exactly
    once, and a failed one at most once and said so."""
    with servers(ps=1, worker=1) as (spec, tasks):
        g, counter, inc, y = counter_graph()
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            sess.run(counter.initializer)
            for expected in range(1, 6):
                assert sess.run([inc, y])[0] == expected
            for _ in range(5):
                before = counter_value(tasks["ps:0"])
                tasks["worker:0"].service._graphs.clear()
                try:
                    sess.run([inc, y])
                except AbortedError as e:
                    assert "may have partly run" in str(e)
                    assert counter_value(tasks["ps:0"]) in (before, before + 1)
                else:
                    pytest.fail("a step that lost a graph while a stateful part may "
                                "have run must not succeed")
                before = counter_value(tasks["ps:0"])
                assert sess.run([inc, y])[0] == before + 1


def test_a_step_is_rerun_when_no_task_had_the_graph():
    """Nothing ran anywhere: the step runs again, transparently, and counts once."""
    with servers(ps=1, worker=1) as (spec, tasks):
        g, counter, inc, y = counter_graph()
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            sess.run(counter.initializer)
            sess.run([inc, y])
            for server in tasks.values():
                server.service._graphs.clear()
            value, out = sess.run([inc, y])
            assert value == 2.0 and counter_value(tasks["ps:0"]) == 2.0
            np.testing.assert_array_equal(out, [0, 2, 4])


def test_a_step_is_rerun_when_the_tasks_that_ran_change_no_state():
    """The PS lost the graph; the worker's part only reads and computes: rerun."""
    with servers(ps=1, worker=1) as (spec, tasks):
        g = tf.Graph()
        with g.as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(np.float32(3.0), name="v")
                inc = v.assign_add(np.float32(1.0))
            with tf.device("/job:worker/task:0"):
                w = tf.Variable(np.float32(5.0), name="w")
                out = w.read_value() * 2.0
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            sess.run([v.initializer, w.initializer])
            assert sess.run([inc, out]) == [4.0, 10.0]
            tasks["ps:0"].service._graphs.clear()
            assert sess.run([inc, out]) == [5.0, 10.0]
            assert float(tasks["ps:0"].resources.variable("v").read()) == 5.0


def test_a_single_task_step_that_lost_its_graph_reruns():
    """One partition, and it never started: rerunning it runs it once."""
    with servers(ps=1, worker=1) as (spec, tasks):
        g = tf.Graph()
        with g.as_default(), tf.device("/job:ps/task:0"):
            v = tf.Variable(np.float32(0.0), name="v")
            inc = v.assign_add(np.float32(1.0))
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            sess.run(v.initializer)
            assert sess.run(inc) == 1.0
            tasks["ps:0"].service._graphs.clear()
            assert sess.run(inc) == 2.0
            assert float(tasks["ps:0"].resources.variable("v").read()) == 2.0


def test_monitored_training_session_recovers_from_the_aborted_step():
    """The documented recovery: the aborted step is run again on a new session."""
    with servers(ps=1, worker=1) as (spec, tasks):
        g, counter, inc, y = counter_graph()
        with g.as_default():
            tf.train.get_or_create_global_step()
        with g.as_default(), tf.train.MonitoredTrainingSession(
                tasks["worker:0"].target, is_chief=True) as sess:
            assert sess.run([inc, y])[0] == 1.0
            tasks["worker:0"].service._graphs.clear()
            value, out = sess.run([inc, y])
            assert sess.recoveries == 1
            np.testing.assert_array_equal(out, [0, 2, 4])
            # no checkpoint: the chief's new session initialized the model again
            # (TensorFlow's rule too), then ran the step once
            assert value == 1.0 and counter_value(tasks["ps:0"]) == 1.0


def test_state_changes_inside_a_loop_body_count():
    """The PS lost the graph; the worker's part assigns inside a while loop's body (a
    region): it may have run, so the step is aborted, and the loop counts 3 per
    successful call."""
    with servers(ps=1, worker=1) as (spec, tasks):
        g = tf.Graph()
        with g.as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(np.float32(1.0), name="v")
                r = v.read_value() + 0.0
            with tf.device("/job:worker/task:0"):
                w = tf.Variable(np.float32(0.0), name="w")

                def body(i):
                    with tf.control_dependencies([w.assign_add(np.float32(1.0))]):
                        return i + 1

                n = tf.while_loop(lambda i: i < 3, body, [tf.constant(0)])
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            sess.run([v.initializer, w.initializer])
            sess.run([r, n])
            loops = [exe for exe in sess._steps.values()
                     if any(node.op == "While" for p in exe.partitions for node in p.graph.nodes)]
            assert len(loops) == 1 and len(loops[0].partitions) == 2
            k = [p.device for p in loops[0].partitions].index(WORKER)
            # the assignment is in the While's body region, not a top-level node
            assert "AssignAddVariable" not in {n.op for n in loops[0].partitions[k].graph.nodes}
            assert loops[0]._state_changes[k] == ["AssignAddVariable"]
            tasks["ps:0"].service._graphs.clear()
            with pytest.raises(AbortedError, match="AssignAddVariable"):
                sess.run([r, n])
            before = float(tasks["worker:0"].resources.variable("w").read())
            assert before in (3.0, 6.0)  # the aborted call's loop ran, or not
            sess.run([r, n])
            assert float(tasks["worker:0"].resources.variable("w").read()) == before + 3.0
