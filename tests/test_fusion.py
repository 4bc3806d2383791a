"""The fusion pass: which nodes end up in which cluster, the rules that keep clusters
legal (acyclic, one device, no state, reductions over trailing axes as sinks), the
``fused`` stage belonging to the cpu target only, and fused graphs computing what the
unfused ones compute."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.cli import main
from tensorweave.compiler import Graph, TensorType
from tensorweave.compiler.equality import graph_diff
from tensorweave.compiler.parser import parse_graph
from tensorweave.compiler.pipeline import compile_graph, run_pipeline, stage_names, stage_targets
from tensorweave.compiler.printer import print_graph
from tensorweave.compiler.verifier import verify
from tensorweave.passes.fusion import find_clusters, fuse
from tests.helpers import assert_same

EXAMPLE = "examples/softmax_regression.py"


def traced(fn, *arrays) -> Graph:
    return tw.compile(fn).get_concrete_function(*arrays).graph


def fused(fn, *arrays) -> Graph:
    # (up to the clustering: stage "epilogue" then merges products into some clusters)
    return run_pipeline(traced(fn, *arrays), until="fused", target="cpu")


def clusters(graph: Graph) -> list[list[str]]:
    """The ops of each Fusion node's region, in graph order."""
    return [[m.op for m in n.regions[0].nodes] for n in graph.nodes if n.op == "Fusion"]


def top_ops(graph: Graph) -> list[str]:
    return [n.op for n in graph.nodes]


def softmax(x):
    m = tw.reduce_max(x, axis=-1, keepdims=True)
    e = tw.exp(x - m)
    return e / tw.reduce_sum(e, axis=-1, keepdims=True)


X = np.random.default_rng(0).standard_normal((6, 10)).astype(np.float32)


# ---------------------------------------------------------------------- the clusters

def test_softmax_is_three_loop_nests():
    g = fused(softmax, X)
    assert clusters(g) == [["Max"], ["Sub", "Exp", "Sum"], ["Div"]]
    assert top_ops(g) == ["Fusion"] * 3
    # the middle cluster returns both the exponentials and their row sums
    assert [str(v.type) for v in g.nodes[1].outputs] == ["f32[6,10]", "f32[6,1]"]


def test_elementwise_chain_with_broadcasting_is_one_cluster():
    def gelu_tanh(x, a, b):
        y = x * a + b
        return 0.5 * y * (1.0 + tw.tanh(0.7978845608 * (y + 0.044715 * y * y * y)))

    a = np.ones(10, np.float32)
    g = fused(gelu_tanh, X, a, a)
    assert len(clusters(g)) == 1 and len(clusters(g)[0]) == 11
    assert top_ops(g).count("Fusion") == 1


def test_reduction_over_leading_axes_is_not_fused():
    g = fused(lambda x: tw.reduce_sum(x * 2.0, axis=0), X)
    assert clusters(g) == [["Mul"]]
    assert "Sum" in top_ops(g)


def test_reduction_fuses_with_its_producers_not_its_consumers():
    g = fused(lambda x: x / tw.reduce_sum(tw.exp(x), axis=-1, keepdims=True), X)
    assert clusters(g) == [["Exp", "Sum"], ["Div"]]


def test_clusters_never_make_a_cycle():
    # a feeds the matmul and the multiply that reads the matmul: {a, mul} is illegal
    def f(x, w):
        a = x + 1.0
        return a * tw.matmul(a, w)

    w = np.eye(10, dtype=np.float32)
    g = fused(f, X, w)
    assert clusters(g) == [["Add"], ["Mul"]]
    verify(g)


def test_mlp_training_step_clusters():
    rng = np.random.default_rng(1)
    w1 = tw.Variable(rng.standard_normal((10, 16)).astype(np.float32) * 0.1)
    w2 = tw.Variable(rng.standard_normal((16, 4)).astype(np.float32) * 0.1)
    b1 = tw.Variable(np.zeros(16, np.float32))
    opt = tw.optimizers.SGD(0.1)

    def step(x, y):
        h = tw.nn.relu(x @ w1 + b1)
        logits = h @ w2
        m = tw.reduce_max(logits, axis=-1, keepdims=True)
        logp = logits - m - tw.log(tw.reduce_sum(tw.exp(logits - m), axis=-1, keepdims=True))
        loss = -tw.reduce_mean(tw.reduce_sum(y * logp, axis=-1))
        opt.minimize(loss, var_list=[w1, w2, b1])
        return loss

    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 6)]
    g = fused(step, X, y)
    ops = top_ops(g)
    # nothing elementwise is left outside a cluster; matmuls, state and the bias-gradient
    # reduction (over the batch axis) stay as they are
    assert not {"Add", "Relu", "Exp", "Log", "Sub", "Mul", "Neg", "Select"} & set(ops)
    assert ops.count("MatMul") == 5 and ops.count("AssignSubVariable") == 3
    assert ["Add", "Relu", "Greater"] in clusters(g)  # forward bias + relu, relu's mask
    assert ["ZerosLike", "Select"] in clusters(g)      # relu's gradient
    assert all(not n.opdef.stateful for n in g.walk() if n.graph is not g)
    # and the step trains the same on both targets
    w_before = [np.asarray(v.numpy()).copy() for v in (w1, w2, b1)]
    ref = tw.compile(step, target="reference")(X, y)
    w_ref = [np.asarray(v.numpy()).copy() for v in (w1, w2, b1)]
    for v, old in zip((w1, w2, b1), w_before):
        v.assign(old)
    cpu = tw.compile(step, target="cpu")(X, y)
    assert_same(cpu, ref, rtol=1e-5)
    for v, want in zip((w1, w2, b1), w_ref):
        assert_same(v.numpy(), want, rtol=1e-5, atol=1e-6)


def test_devices_and_state_bound_clusters():
    g = Graph("devices")
    x = g.add_arg(TensorType("f32", (4,)))
    a = g.add_node("Exp", [x], device="/cpu:0")
    b = g.add_node("Neg", [a.outputs[0]], device="/cpu:1")
    c = g.add_node("Abs", [b.outputs[0]], device="/cpu:1")
    g.set_results([c.outputs[0]])
    assert [[n.op for n in c] for c in find_clusters(g)] == [["Exp"], ["Neg", "Abs"]]

    g = Graph("state")
    x = g.add_arg(TensorType("f32", (4,)))
    r = g.add_node("RandomUniform", [], {"shape": (4,)})
    s = g.add_node("Add", [x, r.outputs[0]])
    g.set_results([g.add_node("Exp", [s.outputs[0]]).outputs[0]])
    assert [[n.op for n in c] for c in find_clusters(g)] == [["Add", "Exp"]]


def test_half_precision_and_lone_identities_are_left_alone():
    g = fused(lambda x: tw.exp(x) * 2.0, X.astype(np.float16))
    assert clusters(g) == []
    g = Graph("identity")
    x = g.add_arg(TensorType("f32", (4,)))
    g.set_results([g.add_node("Identity", [x]).outputs[0]])
    fuse(g)
    assert top_ops(g) == ["Identity"]


def test_control_edges_move_to_the_fusion_node():
    g = Graph("control")
    x = g.add_arg(TensorType("f32", (4,)))
    first = g.add_node("NoOp", [])
    a = g.add_node("Exp", [x], control_inputs=[first])
    b = g.add_node("Neg", [a.outputs[0]])
    after = g.add_node("NoOp", [], control_inputs=[b])
    g.set_results([b.outputs[0]])
    fuse(g)
    verify(g)
    fusion = next(n for n in g.nodes if n.op == "Fusion")
    assert fusion.control_inputs == [first] and after.control_inputs == [fusion]


# ------------------------------------------------------------------- the fused stage

def test_fused_stage_belongs_to_the_cpu_and_gpu_targets_only():
    # (last but the cpu target's own stage "epilogue": tests/test_epilogue_fusion.py)
    assert stage_names()[-2:] == ["fused", "epilogue"]
    assert stage_targets("fused") == frozenset({"cpu", "gpu"})
    g = traced(softmax, X)
    assert "Fusion" not in top_ops(run_pipeline(g, target="reference"))
    assert "Fusion" in top_ops(run_pipeline(g))  # no target (dump): every stage
    exe = compile_graph(g, "reference")
    assert all(n.op != "Fusion" for n in exe.graph.nodes)
    assert_same(compile_graph(g, "cpu")(X)[0], exe(X)[0], rtol=1e-6)


def test_fused_graph_runs_on_the_reference_target_too():
    g = fused(softmax, X)
    e = np.exp(X - X.max(-1, keepdims=True))
    assert_same(compile_graph(g, "reference")(X)[0], e / e.sum(-1, keepdims=True), rtol=1e-6)


def test_fused_ir_prints_and_parses_back():
    g = fused(softmax, X)
    text = print_graph(g)
    assert text.count('"tw.Fusion"') == 3 and "^bb0(" in text and '"tw.yield"' in text
    assert graph_diff(g, parse_graph(text)) is None


def test_dump_shows_the_clusters(capsys):
    code = main(["dump", f"{EXAMPLE}:train_step", "--stage", "fused"])
    out = capsys.readouterr().out
    assert code == 0 and '"tw.Fusion"' in out and '"tw.MatMul"' in out


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_results_used_twice_and_graph_outputs(target):
    def f(x):
        y = tw.exp(x)
        return y, y * 2.0, tw.reduce_sum(y, axis=-1)

    got = tw.compile(f, target=target)(X)
    e = np.exp(X)
    for a, b in zip(got, (e, e * 2, e.sum(-1))):
        assert_same(a, b.astype(np.float32), rtol=1e-5)


def test_nothing_downstream_of_lowered_control_flow_is_fused():
    from tensorweave.passes.lower_control_flow import lowering

    def f(x):
        y = tw.exp(x) * 2.0  # before the cond: fused
        z = tw.cond(tw.reduce_sum(x) > 0.0, lambda: tw.tanh(y) + 1.0, lambda: y - 1.0)
        return z * 3.0

    with lowering(True):
        g = fused(f, X)
    assert "Switch" in top_ops(g) and "Merge" in top_ops(g)
    assert sorted(clusters(g)) == [["Exp", "Mul"], ["Greater"], ["Sum"]]  # all before cond
    assert {"Tanh", "Add", "Sub"} <= set(top_ops(g))  # the branches, and z * 3.0 after


def test_every_op_the_pass_fuses_has_native_code():
    from tensorweave.compiler.registry import all_ops
    from tensorweave.passes.fusion import EXTRA_ELEMENTWISE
    from tensorweave.targets.cpu.elementwise import EMITTERS

    fusible = {n for n, op in all_ops().items() if "elementwise" in op.tags} | EXTRA_ELEMENTWISE
    assert fusible == set(EMITTERS)


def test_fusing_a_large_graph_takes_linear_time():
    import time

    g = Graph("large")
    x, w = g.add_arg(TensorType("f32", (8, 8))), g.add_arg(TensorType("f32", (8, 8)))
    v = x
    for i in range(2000):  # 6000 nodes; each MatMul splits the chain of clusters
        a = g.add_node("Tanh", [v]).outputs[0]
        m = g.add_node("MatMul", [a, w]).outputs[0] if i % 3 == 0 else a
        v = g.add_node("Add", [a, m]).outputs[0]
    g.set_results([v])
    start = time.perf_counter()
    fuse(g)
    assert time.perf_counter() - start < 8.0  # rewriting cluster by cluster: 25 s at 9000 nodes
    verify(g)
    assert top_ops(g).count("MatMul") == 667 and "Tanh" not in top_ops(g)
