"""A connected client's own task on the cluster (experimental_connect_to_cluster)."""

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
