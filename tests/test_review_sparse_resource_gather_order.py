"""A lookup written before a variable's update reads the rows as they were, also after
the `resource_gather` pass turned ``Gather(ReadVariable(v), ids)`` into
``ResourceGather(v, ids)``.

The automatic control dependencies order the update after the ReadVariable; the pass
moved the read into the ResourceGather but left the update waiting for the (now empty)
ReadVariable, so nothing ordered the lookup before the update: with ids that take a
while to compute, 30 of 30 steps returned the updated rows (row 0 = [-2, -1] for
[0, 1]) on both targets. A snapshot (``v.read_value()``) gathered after the update
has to give the old rows too."""

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.compiler.ir import Graph
from tensorweave.passes.resource_gather import gather_from_variables
from tests.helpers import TARGETS

# three 300 x 300 products: the lookup's ids are ready well after the update could run
M = np.random.default_rng(0).standard_normal((300, 300)).astype(np.float32) / 20


def _slow_zero(m):
    return tw.reshape(tw.cast(tw.reduce_sum(tw.matmul(tw.matmul(m, m), m)) * 0.0, tw.int32),
                      [1])


@pytest.mark.parametrize("target", TARGETS)
def test_a_lookup_before_an_update_reads_the_old_rows(target):
    v = tw.Variable(np.arange(8, dtype=np.float32).reshape(4, 2))
    opt = tw.optimizers.SGD(1.0)

    @tw.compile(target=target)
    def step(ids, m):
        peek = tw.gather(v, _slow_zero(m))  # row 0, before the update
        opt.minimize(tw.reduce_sum(tw.gather(v, ids)), [v])
        return peek

    for _ in range(5):
        before = v.numpy()[0].copy()
        np.testing.assert_array_equal(step(np.array([0, 0], np.int32), M), before[None])
        np.testing.assert_array_equal(v.numpy()[0], before - 2)


@pytest.mark.parametrize("target", TARGETS)
def test_a_snapshot_gathered_after_an_update_holds_the_old_rows(target):
    v = tw.Variable(np.arange(8, dtype=np.float32).reshape(4, 2))

    @tw.compile(target=target)
    def step(m):
        snapshot = v.read_value()
        v.assign_add(tw.ones([4, 2]), read_value=False)
        return tw.gather(snapshot, _slow_zero(m))

    for _ in range(5):
        before = v.numpy()[0].copy()
        np.testing.assert_array_equal(step(M), before[None])


def test_the_update_waits_for_the_rewritten_lookup():
    """Structure, without timing: after the pass, the update that waited for the read
    waits for the ResourceGather that took the read's place."""
    v = tw.Variable(np.zeros((4, 2), np.float32))

    def fn(ids):
        rows = tw.gather(v, ids)
        v.assign_add(tw.ones([4, 2]), read_value=False)
        return rows

    graph: Graph = tw.compile(fn).get_concrete_function(
        tw.TensorSpec([3], tw.int32)).graph.copy()
    gather_from_variables(graph)
    (lookup,) = [n for n in graph.nodes if n.op == "ResourceGather"]
    (update,) = [n for n in graph.nodes if n.op == "AssignAddVariable"]
    assert lookup in update.control_inputs
    assert graph.nodes.index(lookup) < graph.nodes.index(update)
