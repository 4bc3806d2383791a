"""Send/Recv inside a lowered while loop, between partitions on two tasks: the rendezvous
keys carry step, frame and iteration across processes as they do within one."""

import numpy as np
import pytest

from tensorweave.compiler.ir import Graph
from tensorweave.compiler.types import TensorType
from tensorweave.distribute import Cluster
from tensorweave.distribute.master import DistributedExecutable
from tensorweave.passes.partition import transfer_key
from tests.test_lowering import build_loop, const, transfer_loop_body

from .cluster_helpers import TOKEN, servers

F32 = np.float32
PS = "/job:ps/replica:0/task:0/device:CPU:0"
WORKER = "/job:worker/replica:0/task:0/device:CPU:0"


def two_task_loop() -> Graph:
    """One graph holding both partitions of a lowered loop: the PS copy sends i*10 in
    every iteration, the worker copy receives and sums it."""
    g = Graph("loop_across_tasks")
    limit = g.add_arg(TensorType("i32", ()))
    attrs = {"key": transfer_key(PS, "value", WORKER), "send_device": PS,
             "recv_device": WORKER}
    results = []
    for sending, device in ((True, PS), (False, WORKER)):
        start = len(g.nodes)
        acc0 = const(g, np.zeros(2, F32))
        body = transfer_loop_body(g, sending, attrs)
        # the same frame in both partitions, as partitioning a lowered loop makes it
        (out,) = build_loop(g, limit, [acc0], body, frame="loop")
        for n in g.nodes[start:]:
            n.assigned_device = device
        if not sending:
            results.append(out)
    g.set_results(results)
    return g


@pytest.mark.parametrize("iterations", [0, 1, 5])
def test_send_and_recv_inside_a_loop_meet_per_iteration_across_tasks(iterations):
    with servers(ps=1, worker=1) as (spec, tasks):
        cluster = Cluster(cluster=spec, task="/job:worker/task:0", token=TOKEN)
        exe = DistributedExecutable(two_task_loop(), cluster, "reference")
        assert len(exe.tasks) == 2
        for _ in range(3):  # several steps: keys carry the step id too
            (total,) = exe(np.int32(iterations))
            np.testing.assert_array_equal(total, np.full(2, 10.0 * sum(range(iterations)), F32))
        exe.close()
