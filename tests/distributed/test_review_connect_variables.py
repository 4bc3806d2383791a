"""``tw.Variable``s live in the connected client's process (docs/distributed.md), so a
compiled function that updates one inside ``tw.device("/job:worker/task:1")`` updates
that variable. Before, the function's handle followed the device scope: ``v.assign(42.)``
made a second variable 'cv' on worker:1 and set it, returning normally, while ``v``
stayed 3.0 (a silent lost update); ``v.assign_add`` failed as uninitialized there."""

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.distribute import disconnect

from .cluster_helpers import TOKEN, servers


@pytest.fixture
def connected():
    with servers(worker=2) as (spec, tasks):
        try:
            yield tw.config.experimental_connect_to_cluster(spec, token=TOKEN), tasks
        finally:
            disconnect()


def test_a_compiled_update_under_a_remote_device_scope_updates_the_clients_variable(
        connected):
    _, tasks = connected
    v = tw.Variable(np.float32(3.0), name="review_connect_v")

    @tw.compile
    def set_to(x):
        with tw.device("/job:worker/task:1"):
            v.assign(x)
            doubled = x * 2.0
        return doubled

    @tw.compile
    def bump(x):
        with tw.device("/job:worker/task:1"):
            v.assign_add(x)
            return v.read_value() * 2.0

    @tw.compile
    def loop(n):
        with tw.device("/job:worker/task:1"):
            return tw.while_loop(lambda i: i < n, lambda i: (v.assign_add(1.0), i + 1)[1],
                                 [tw.constant(0)])

    assert float(set_to(np.float32(42.0))) == 84.0
    assert float(v.numpy()) == 42.0
    assert float(bump(np.float32(1.0))) == 86.0
    assert float(v.numpy()) == 43.0
    loop(np.int32(3))
    assert float(v.numpy()) == 46.0
    assert [n for s in tasks.values() for n in s.resources.variables()] == []


def test_a_task_pulls_a_value_from_the_connected_clients_own_task(connected):
    """The client's task is not in the servers' cluster specs (connecting added it): a
    remote op reading a value computed on the client failed with "no job 'localhost' in
    the cluster"; the master now tells the tasks where its extra tasks are."""
    v = tw.Variable(np.float32(2.0), name="review_connect_w")

    @tw.compile
    def f(x):
        y = tw.square(x) * v.read_value()        # on the client's task
        with tw.device("/job:worker/task:1"):
            return y + 1.0

    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(f(x), x * x * 2.0 + 1.0)
    assert "/job:worker/replica:0/task:1" in f.get_concrete_function(x).executable.tasks
