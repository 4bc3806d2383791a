"""The optimizers of tests/test_optimizers_more.py on a cluster: a partitioned embedding on
two PS tasks trained by a worker. Their slots live on each shard's PS task (none on the
worker), AdagradDA reads the global step from its own task, and the values equal the
same graph run in one process."""

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.runtime.distributed import server
from tests.distributed.cluster_helpers import TOKEN, servers

MAKERS = {
    "ProximalGradientDescent": lambda gs: tf.train.ProximalGradientDescentOptimizer(
        0.1, 0.05, 0.2),
    "ProximalAdagrad": lambda gs: tf.train.ProximalAdagradOptimizer(0.3, 0.1, 0.05, 0.2),
    "AdagradDA": lambda gs: tf.train.AdagradDAOptimizer(0.3, gs, 0.1, 0.05, 0.2),
    "Ftrl": lambda gs: tf.train.FtrlOptimizer(0.2, l2_shrinkage_regularization_strength=0.1,
                                              beta=0.1),
}
IDS = [[0, 1, 5], [5, 5, 2], [3, 0, 4]]  # a repeated id in the second step


@pytest.fixture(autouse=True)
def _cluster_token(monkeypatch):
    # as tests/distributed/conftest.py: the client carries the test cluster's token and
    # calls the in-process servers through gRPC
    monkeypatch.setenv("TW_TOKEN", TOKEN)
    monkeypatch.delenv("TW_CONFIG", raising=False)
    monkeypatch.setattr(server, "LOCAL_CALLS", False)


def build(name, spec=None):
    """The training graph (on the cluster's devices when `spec` is given)."""
    g = tf.Graph()
    placement = (tf.device(tf.train.replica_device_setter(
        cluster=spec, worker_device="/job:worker/task:0")) if spec is not None else None)
    with g.as_default():
        if placement is not None:
            placement.__enter__()
        gs = tf.train.get_or_create_global_step()
        table = tf.get_variable("table", initializer=np.linspace(-1, 1, 12).reshape(6, 2),
                                partitioner=tf.fixed_size_partitioner(2))
        ids = tf.placeholder(tf.int32, [3])
        rows = tf.nn.embedding_lookup(table, ids, partition_strategy="div")
        loss = tf.reduce_sum(tf.square(rows - 0.3) * np.array([1.0, 3.0]))
        opt = MAKERS[name](gs)
        train = opt.minimize(loss, global_step=gs)
        init = tf.global_variables_initializer()
        if placement is not None:
            placement.__exit__(None, None, None)
    return g, table, ids, train, init, opt


def run(g, table, ids, train, init, target=""):
    with tf.Session(target, graph=g) as sess:
        sess.run(init)
        for step_ids in IDS:
            sess.run(train, {ids: step_ids})
        return sess.run(list(table))


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_slots_live_on_each_shards_ps_task(name):
    want = run(*build(name)[:5])
    with servers(ps=2, worker=1) as (spec, tasks):
        g, table, ids, train, init, opt = build(name, spec)
        got = run(g, table, ids, train, init, tasks["worker:0"].target)
        held = {k: tasks[f"ps:{k}"].resources.variables() for k in (0, 1)}
        for shard in ("table/part_0", "table/part_1"):
            # the PS task the device setter chose for the shard holds its slots
            (ps,) = [k for k in (0, 1) if shard in held[k]]
            for s in opt.get_slot_names():
                assert held[ps][f"{shard}/{name}/{s}"].initialized
        worker_vars = tasks["worker:0"].resources.variables()
        assert not [n for n in worker_vars if f"/{name}/" in n]
    assert len(opt.get_slot_names()) == {"ProximalGradientDescent": 0, "ProximalAdagrad": 1,
                                         "AdagradDA": 2, "Ftrl": 2}[name]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    assert not np.allclose(want[0], np.linspace(-1, 1, 12).reshape(6, 2)[:3])  # trained
