"""replica_device_setter's strategy sees only the variables it places. Optimizer slots
(and Adam's step counter) are made under ``device(None)`` and colocated with their
variable, yet the setter was still called for them and its answer thrown away: round
robin moved on once per slot (with Adam on a, b over 3 PS tasks, the next variable c
went to ps:2, TensorFlow puts it on ps:0), and the greedy strategy counted each slot's
bytes on a task that does not hold it (so the PS loads it balances were wrong)."""

import numpy as np

import tensorweave.compat.v1 as tf
from tensorweave.distribute import GreedyLoadBalancingStrategy

from .cluster_helpers import make_cluster


def devices(g):
    return {v.name[:-2]: v.op.device for v in g.get_collection("variables")}


def test_round_robin_does_not_count_slots():
    g = tf.Graph()
    with g.as_default(), tf.device(tf.train.replica_device_setter(
            cluster=make_cluster(ps=3, worker=1), worker_device="/job:worker/task:0")):
        a = tf.Variable(1.0, name="a")
        b = tf.Variable(2.0, name="b")
        step = tf.train.get_or_create_global_step()
        tf.train.AdamOptimizer(0.1).minimize(a * b, global_step=step)
        tf.Variable(3.0, name="c")
    placed = devices(g)
    assert [placed[n] for n in ("a", "b", "global_step", "c")] == [
        "/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:2", "/job:ps/task:0"]
    assert placed["a/Adam/m"] == placed["Adam/iterations"] == "/job:ps/task:0"
    assert placed["b/Adam/v"] == "/job:ps/task:1"


def test_greedy_loads_are_the_bytes_each_task_holds_of_the_variables_it_placed():
    greedy = GreedyLoadBalancingStrategy(2)
    g = tf.Graph()
    with g.as_default(), tf.device(tf.train.replica_device_setter(
            ps_tasks=2, worker_device="/job:worker/task:0", ps_strategy=greedy)):
        big = tf.Variable(np.zeros(1000, np.float32), name="big")
        small = tf.Variable(np.zeros(10, np.float32), name="small")
        tf.train.MomentumOptimizer(0.1, 0.9).minimize(
            tf.reduce_sum(big.read_value()) + tf.reduce_sum(small.read_value()))
        after = tf.Variable(np.zeros(500, np.float32), name="after")
    placed = devices(g)
    assert placed["big"] == placed["big/Momentum/momentum"] == "/job:ps/task:0"
    assert placed["small"] == placed["after"] == "/job:ps/task:1"
    assert greedy.loads == [4000.0, 40.0 + 2000.0]
    assert after.op.device == "/job:ps/task:1"
