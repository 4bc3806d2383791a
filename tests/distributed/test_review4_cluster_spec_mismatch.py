"""Tasks started with cluster specs that disagree on an address are an error when the
session contacts them, naming the task, both addresses and the fix.

Before, the session ran: the first step that crossed tasks waited PEER_CONNECT_S (10 s)
in the PS's pull from worker 0 at the address its own spec gave, then failed with
"the sending task ... did not accept a connection", blaming a worker that was up."""

import pytest

import tensorweave.compat.v1 as tf
from tensorweave.distribute import ClusterSpec, Server
from tensorweave.distribute.launch import free_ports
from tensorweave.errors import InvalidArgumentError

from .cluster_helpers import TOKEN


def test_tasks_whose_specs_disagree_are_refused_at_once():
    ps_port, worker_port, elsewhere = free_ports(3)
    right = ClusterSpec({"ps": [f"127.0.0.1:{ps_port}"],
                         "worker": [f"127.0.0.1:{worker_port}"]})
    wrong = ClusterSpec({"ps": [f"127.0.0.1:{ps_port}"],
                         "worker": [f"127.0.0.1:{elsewhere}"]})
    ps = Server(wrong, "ps", 0, token=TOKEN)  # it believes worker 0 is elsewhere
    worker = Server(right, "worker", 0, token=TOKEN)
    try:
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.float32, [2])
            with tf.device("/job:worker/task:0"):
                y = x * 2
            with tf.device("/job:ps/task:0"):
                z = y + 1
        with tf.Session(worker.target, graph=g) as sess:
            with pytest.raises(InvalidArgumentError) as info:
                sess.run(z, {x: [1.0, 2.0]})
        message = str(info.value)
        assert "/job:ps/replica:0/task:0" in message and "/job:worker/task:0" in message
        assert f"127.0.0.1:{elsewhere}" in message and f"127.0.0.1:{worker_port}" in message
    finally:
        ps.stop(0.2)
        worker.stop(0.2)


def test_a_spec_that_only_lacks_the_clients_own_task_is_fine():
    """experimental_connect_to_cluster adds the client's task to its spec only."""
    from tensorweave.distribute.master import check_same_addresses
    servers_spec = ClusterSpec({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]})
    client_spec = ClusterSpec({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"],
                               "localhost": ["127.0.0.1:3"]})
    check_same_addresses(client_spec, {"/job:ps/replica:0/task:0": servers_spec})


def test_a_name_and_an_address_of_the_same_endpoint_agree():
    """A spec may name a host where another gives its address (hand-written configs):
    only endpoints that cannot be the same (another port, or hosts resolving to
    different addresses) are refused."""
    from tensorweave.distribute.master import check_same_addresses
    ours = ClusterSpec({"ps": ["127.0.0.1:1"], "worker": ["localhost:2"]})
    same = ClusterSpec({"ps": ["localhost:1"], "worker": ["127.0.0.1:2"]})
    check_same_addresses(ours, {"/job:ps/replica:0/task:0": same})
    for other in ({"ps": ["127.0.0.1:9"], "worker": ["localhost:2"]},
                  {"ps": ["127.0.0.2:1"], "worker": ["localhost:2"]}):
        with pytest.raises(InvalidArgumentError, match="/job:ps/task:0"):
            check_same_addresses(ours, {"/job:worker/replica:0/task:0": ClusterSpec(other)})
