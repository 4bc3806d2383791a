"""tf.py_func in a cluster: its Python function lives only in the process that defined it.

A py_func's op holds a token (``pyfunc_0`` ...), counted per process, that names the
function in that process's registry. Placed on a task served by another process, the op
would look the token up there: an error at best, and, where that process is itself a
TensorFlow 1 client that made a py_func of its own (between-graph replication: every
worker builds a graph and serves a task), a silent call of the wrong function. TensorFlow
asks the same: the py_func must be pinned to a device of a server in the caller's process.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.compat.v1 import script_ops
from tensorweave.distribute import ClusterSpec, Server
from tensorweave.distribute.launch import free_ports
from tensorweave.errors import InvalidArgumentError

TOKEN = "newops-token"

# A task process that is also a TF1 client: it made py_funcs of its own, the last under
# the token the test's next py_func gets (argv[3]: its number), then serves ps:0.
PEER = """
import json, sys, time
import numpy as np
import tensorweave.compat.v1 as tf
from tensorweave.compat.v1 import script_ops
from tensorweave.distribute import ClusterSpec, Server
x = tf.placeholder(tf.float32, [2])
for _ in range(int(sys.argv[3])):
    tf.py_func(lambda v: v, [x], tf.float32)
y = tf.py_func(lambda v: v * np.float32(100), [x], tf.float32)
assert y.op.attrs["token"] == f"pyfunc_{sys.argv[3]}"
server = Server(ClusterSpec(json.loads(sys.argv[1])), "ps", 0, token=sys.argv[2])
print("ready", flush=True)
time.sleep(120)
"""


@pytest.fixture
def cluster(monkeypatch):
    """ps:0 served by a peer process, worker:0 by this one; yields worker:0's Server."""
    monkeypatch.setenv("TW_TOKEN", TOKEN)
    ps, worker = free_ports(2)
    spec = {"ps": [f"127.0.0.1:{ps}"], "worker": [f"127.0.0.1:{worker}"]}
    # the number of the token this process gives next (this one is used up)
    following = next(script_ops._tokens) + 1
    peer = subprocess.Popen([sys.executable, "-c", PEER, json.dumps(spec), TOKEN,
                             str(following)],
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    server = None
    try:
        assert peer.stdout.readline().strip() == b"ready"
        server = Server(ClusterSpec(spec), "worker", 0, token=TOKEN)
        server.following = following
        yield server
    finally:
        if server is not None:
            server.stop(grace=0.2)
        peer.kill()
        peer.wait(10)
        peer.stdout.close()


def _doubling_graph(device):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2])
        with tf.device(device):
            y = tf.py_func(lambda v: v * np.float32(2), [x], tf.float32)  # the line named
            y.set_shape([2])
            token = y.op.attrs["token"]
        out = y + 1.0
    return g, x, out, token


def test_a_py_func_on_a_task_of_another_process_is_an_error_never_its_function(cluster):
    g, x, out, token = _doubling_graph("/job:ps/task:0")
    assert token == f"pyfunc_{cluster.following}"  # the peer holds v * 100 under it
    with tf.Session(cluster.target, graph=g) as sess:
        # before: [101, 201], the peer's function (v * 100) under the same token
        with pytest.raises(InvalidArgumentError) as info:
            sess.run(out, {x: [1.0, 2.0]})
    text = str(info.value)
    assert "py_func" in text and "/job:ps/replica:0/task:0" in text
    assert "this process" in text
    assert "test_review_newops_pyfunc_remote.py" in (info.value.location or "")


def test_a_py_func_on_a_task_this_process_serves_runs_its_own_function(cluster):
    g, x, out, _ = _doubling_graph("/job:worker/task:0")
    with tf.Session(cluster.target, graph=g) as sess:
        np.testing.assert_array_equal(sess.run(out, {x: [1.0, 2.0]}), [3.0, 5.0])
