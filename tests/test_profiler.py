"""Step timelines: tw.profiler.trace for compiled functions, RunOptions/RunMetadata in v1
sessions, and one timeline across the tasks of a cluster; Chrome trace JSON checked
against the trace event format."""

import json

import numpy as np

import tensorweave as tw
import tensorweave.compat.v1 as tf

from .distributed.cluster_helpers import servers
from .helpers import logical_cpus

REQUIRED = {"X": {"name", "ph", "ts", "dur", "pid", "tid"}, "M": {"name", "ph", "pid", "args"},
            "s": {"name", "ph", "id", "ts", "pid", "tid"},
            "f": {"name", "ph", "id", "ts", "pid", "tid", "bp"}}


def check_trace_format(trace):
    """The trace event format's rules that viewers rely on."""
    assert set(trace) >= {"traceEvents"}
    events = trace["traceEvents"]
    for e in events:
        assert e["ph"] in REQUIRED, e
        assert REQUIRED[e["ph"]] <= set(e), e
        if e["ph"] == "X":
            assert e["ts"] >= 0 and e["dur"] >= 0
    starts = {e["id"] for e in events if e["ph"] == "s"}
    ends = {e["id"] for e in events if e["ph"] == "f"}
    assert starts == ends  # every flow has both ends
    json.dumps(trace)  # serializable as is
    return events


def test_profiler_trace_writes_a_timeline_of_every_device(tmp_path):
    with logical_cpus(2):
        @tw.compile
        def f(x):
            with tw.device("/cpu:0"):
                a = tw.square(x)
            with tw.device("/cpu:1"):
                b = tw.exp(a) + 1.0
            return tw.reduce_sum(b)

        x = np.arange(4, dtype=np.float32) / 4
        expected = f(x)
        with tw.profiler.trace(str(tmp_path)) as rec:
            for _ in range(3):
                np.testing.assert_allclose(f(x), expected)
    assert rec.calls == 3
    trace = json.loads((tmp_path / "trace.json").read_text())
    events = check_trace_format(trace)
    processes = {e["args"]["name"] for e in events if e["ph"] == "M"}
    assert any(p.endswith("CPU:0") for p in processes) and any(p.endswith("CPU:1")
                                                              for p in processes)
    ops = {e["name"] for e in events if e["ph"] == "X"}
    assert {"Square", "Exp", "Send", "Recv"} <= ops
    assert any(e["ph"] == "s" for e in events)  # the CPU:0 -> CPU:1 transfer as a flow
    assert "Square" in (tmp_path / "summary.txt").read_text()


def test_v1_run_metadata_records_the_step():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [3])
        y = tf.reduce_sum(tf.tanh(x) * 2.0)
    meta = tf.RunMetadata()
    with tf.Session(graph=g) as sess:
        sess.run(y, {x: np.ones(3, np.float32)},
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=meta)
    assert {t.op for t in meta.step_stats} >= {"Tanh", "Sum"}
    events = check_trace_format(json.loads(
        tw.profiler.Timeline(meta.step_stats).generate_chrome_trace_format()))
    assert any(e["name"] == "Tanh" for e in events)


def test_one_timeline_across_the_tasks_of_a_cluster():
    with servers(ps=1, worker=1) as (spec, tasks):
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.float32, [1000])
            with tf.device("/job:ps/task:0"):
                a = tf.exp(x) * 3.0  # (a constant input would be folded away)
            with tf.device("/job:worker/task:0"):
                b = tf.reduce_sum(a)
        meta = tf.RunMetadata()
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            assert sess.run(b, {x: np.zeros(1000, np.float32)},
                            options=tf.RunOptions(trace_level=3), run_metadata=meta) == 3000
    devices = {r["device"] for r in meta.step_stats}
    assert any("/job:ps/" in d for d in devices) and any("/job:worker/" in d for d in devices)
    events = check_trace_format(tw.profiler.chrome_trace(meta.step_stats))
    flows = [e for e in events if e["ph"] in "sf"]
    assert len(flows) >= 2  # the PS -> worker transfer, drawn from its Send to its Recv
