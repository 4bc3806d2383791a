"""``tw.config.experimental_connect_to_cluster``: @tw.compile functions on a cluster."""

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.distribute import connected_cluster, disconnect

from .cluster_helpers import TOKEN, servers


@pytest.fixture
def connected():
    with servers(worker=2) as (spec, tasks):
        try:
            yield tw.config.experimental_connect_to_cluster(spec, token=TOKEN), tasks
        finally:
            disconnect()


def test_compiled_functions_run_their_ops_on_the_tasks_they_name(connected):
    cluster, tasks = connected
    assert connected_cluster() is cluster and cluster.task == "/job:localhost/replica:0/task:0"
    scale = tw.Variable(np.float32(3.0), name="connect_scale")  # lives in this process

    @tw.compile(target="cpu")
    def f(x):
        with tw.device("/job:worker/task:0"):
            a = tw.square(x)
        with tw.device("/job:worker/task:1"):
            b = a + 1.0
        return b * scale.read_value()

    x = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(f(x), (x * x + 1.0) * 3.0)
    exe = f.get_concrete_function(x).executable
    assert set(exe.tasks) == {"/job:localhost/replica:0/task:0",
                              "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"}
    assert sum(s.service.steps.__len__() for s in tasks.values()) == 0  # steps cleaned up
    scale.assign(np.float32(2.0))
    np.testing.assert_allclose(f(x), (x * x + 1.0) * 2.0)


def test_after_disconnecting_functions_compile_locally_again(connected):
    disconnect()
    assert connected_cluster() is None

    @tw.compile
    def g(x):
        return x + 1.0

    np.testing.assert_array_equal(g(np.ones(2, np.float32)), [2.0, 2.0])
    assert not hasattr(g.get_concrete_function(np.ones(2, np.float32)).executable, "tasks")
