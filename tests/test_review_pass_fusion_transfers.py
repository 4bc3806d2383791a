"""Fusion after partitioning: a value that leaves a device and comes back.

``d = (a + 1 on CPU:0) * a`` with ``a`` and ``d`` on CPU:1 partitions into
``a -> Send -> Recv -> add -> Send -> Recv -> d``; the Send/Recv pairs are no graph
edges, so the fusion pass saw ``a`` and ``d`` as an elementwise chain on one device and
put both in one Fusion node. That node waited for the Recv of a value computed from its
own output: the cpu target hung forever (the gpu target clusters the same way).
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.compiler.pipeline import run_pipeline
from tensorweave.passes.fusion import find_clusters


@pytest.fixture(autouse=True)
def three_cpus():
    before = len(tw.config.list_logical_devices("CPU"))
    tw.config.set_logical_devices("CPU", 3)
    yield
    tw.config.set_logical_devices("CPU", before)


def round_trip(x):
    with tw.device("/cpu:1"):
        a = x * 2.0
    with tw.device("/cpu:0"):
        b = a + 1.0
    with tw.device("/cpu:1"):
        d = b * a
    with tw.device("/cpu:2"):
        e = d - x
    return a, d, e


def twice_across(x, y):
    """Two values cross and come back, one of them through a reduction."""
    with tw.device("/cpu:0"):
        a = tw.exp(x) + y
    with tw.device("/cpu:1"):
        s = tw.reduce_sum(a * 3.0, axis=-1, keepdims=True)
    with tw.device("/cpu:0"):
        b = (a - s) * tw.cast(a > 0.0, a.dtype)
    with tw.device("/cpu:1"):
        c = b + s
    with tw.device("/cpu:0"):
        d = c * a
    return d, s


def test_no_cluster_spans_a_send_and_the_recv_that_comes_back():
    x = np.array([1.0, 2.0, 3.0], np.float32)
    graph = tw.compile(round_trip).get_concrete_function(x).graph
    partitioned = run_pipeline(graph, "partitioned", target="cpu")
    names = [{n.name for n in c} for c in find_clusters(partitioned)]
    assert not any({"mul", "mul_1"} <= c for c in names), names


@pytest.mark.parametrize("fn,args", [
    (round_trip, (np.array([1.0, -2.0, 3.5], np.float32),)),
    (twice_across, (np.linspace(-1, 1, 12).reshape(3, 4), np.arange(4.0))),
], ids=["round_trip", "twice_across"])
def test_cpu_target_runs_values_that_cross_devices_twice(fn, args):
    want = tw.compile(fn, target="reference")(*args)
    # (a deadlock is an error after the timeout, not a hung test)
    got = tw.compile(fn, target="cpu", timeout=60)(*args)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
