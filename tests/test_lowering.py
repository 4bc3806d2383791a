"""Control flow lowered to Switch/Merge/Enter/Exit/NextIteration/LoopCond, and the
dataflow executor's dead tensors and loop frames.

Both execution paths (the functional If/While ops and the lowered dataflow primitives)
against each other and against NumPy references unrolled in Python: conds, loops, nested
loops, conds inside loops, loops inside conds, loops with variables, and their gradients;
parallel_iterations; a 10,000-iteration loop (time and memory); the ``lowered`` stage in
``tensorweave dump`` and the text round trip; dead-tensor propagation and frames on
hand-built graphs (Send/Recv inside loops, dead values sent between partitions);
malformed graphs."""

from __future__ import annotations

import os
import threading
import time
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.cli import main as cli_main
from tensorweave.compiler.equality import graph_diff
from tensorweave.compiler.ir import Graph, Node, Value
from tensorweave.compiler.parser import parse_graph
from tensorweave.compiler.pipeline import run_pipeline, stage_names
from tensorweave.compiler.registry import all_ops, attr, def_op, get_op
from tensorweave.compiler.types import TensorType
from tensorweave.frontend import nest
from tensorweave.frontend.building import apply_op1
from tensorweave.passes.lower_control_flow import has_functional_control_flow, lower_control_flow, lowering
from tensorweave.runtime import executor as rx
from tensorweave.runtime.dataflow import DataflowExecutable
from tensorweave.runtime.executor import PartitionExecutor, Step, run_step
from tensorweave.runtime.kernel_context import CallCounters
from tensorweave.runtime.rendezvous import LocalRendezvous
from tensorweave.runtime.resources import ResourceManager
from tensorweave.targets.reference import PreparedKernel, ReferenceExecutable
from tests.helpers import assert_same, logical_cpus

F32, F64, I32 = np.float32, np.float64, np.int32
PRIMITIVES = {"Switch", "Merge", "Enter", "Exit", "NextIteration", "NextIterationSource",
              "LoopCond"}


# ------------------------------------------------------------------------------ helpers

def leaves(x) -> list:
    return nest.flatten(x)[0]


def executed_ops(fn) -> set[str]:
    """The ops of the graph that `fn` (a compiled Function, called once) runs."""
    return {n.op for n in fn.concrete_functions[0].executable.graph.walk()}


def both_paths(fn, *args, target="reference"):
    """`fn` compiled functional and lowered: checks that the lowered graph holds only
    dataflow primitives (no If/While) and that both give the same results; returns them."""
    functional = tw.compile(fn, target=target, lower_control_flow=False)
    lowered = tw.compile(fn, target=target, lower_control_flow=True)
    want, got = functional(*args), lowered(*args)
    assert not executed_ops(lowered) & {"If", "While"}
    assert executed_ops(lowered) & PRIMITIVES
    assert executed_ops(functional) & {"If", "While"}
    for a, b in zip(leaves(want), leaves(got), strict=True):
        assert_same(b, a)
    return got


def lowered_graph(fn, *args) -> Graph:
    return run_pipeline(tw.compile(fn).get_concrete_function(*args).graph, "lowered")


def _test_op(name: str, **kwargs):
    """Declare an op used only by these tests (once per process)."""
    return get_op(name) if name in all_ops() else def_op(name, **kwargs)


RUNS: dict[str, int] = {}
Count = _test_op("LoweringTestCount", inputs=["x"], attrs={"tag": attr("str")},
                 stateful=True, doc="Identity that counts its runs per tag.")
Count.infer(lambda x, tag: x)


@Count.kernel("reference")
def _count(x, *, tag):
    RUNS[tag] = RUNS.get(tag, 0) + 1
    return x


Slow = _test_op("LoweringTestSlow", inputs=["x"], doc="Identity that takes 20 ms.")
Slow.infer(lambda x: x)


@Slow.kernel("reference")
def _slow(x):
    time.sleep(0.02)
    return x


# ------------------------------------------------------------------------------- conds

@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_on_both_paths_matches_numpy(sign):
    x = np.array([1.0, -2.0, 3.0], F32) * sign
    y = np.array([0.5, 2.0, -1.0], F32)

    def f(x, y):
        a, b = tw.cond(tw.reduce_sum(x) > 0, lambda: (x * y, y + 1.0), lambda: (tw.exp(x), y))
        return a + b, tw.cond(x[0] < 0, lambda: tw.constant(1), lambda: tw.constant(2))

    got = both_paths(f, x, y)
    a, b = (x * y, y + 1) if x.sum() > 0 else (np.exp(x), y)
    assert_same(got[0], a + b)
    assert_same(got[1], np.int32(1 if x[0] < 0 else 2))


def test_nested_conds_and_conds_returning_their_inputs():
    def f(x, k):
        inner = lambda: tw.cond(k > 1, lambda: x * 2.0, lambda: x)  # noqa: E731
        return tw.cond(k > 0, inner, lambda: -x), tw.cond(k > 5, lambda: x, lambda: x)

    x = np.array([1.5, -0.5], F32)
    for k in (-1, 1, 2):
        got = both_paths(f, x, np.int32(k))
        assert_same(got[0], x * 2 if k > 1 else (x if k > 0 else -x))
        assert_same(got[1], x)


# ------------------------------------------------------------------------------- loops

def loop_fn(n: int, parallel: int = 10):
    def f(x, c):
        def body(i, a, s):
            a = tw.sin(a) * c + x
            return i + 1, a, s + tw.reduce_sum(a)
        return tw.while_loop(lambda i, a, s: i < n, body, (0, x, tw.constant(0.0, tw.float64)),
                             parallel_iterations=parallel)[1:]
    return f


def loop_numpy(n, x, c):
    a, s = x, 0.0
    for _ in range(n):
        a = np.sin(a) * c + x
        s += a.sum()
    return a, np.float64(s)


@settings(max_examples=6, deadline=None)
@given(n=st.integers(0, 6), parallel=st.sampled_from([1, 2, 10]), seed=st.integers(0, 99))
def test_while_on_both_paths_matches_the_unrolled_loop(n, parallel, seed):
    rng = np.random.default_rng(seed)
    x, c = rng.normal(size=3), rng.normal(size=3)
    got = both_paths(loop_fn(n, parallel), x, c)
    for g, w in zip(got, loop_numpy(n, x, c)):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def nested_fn(x):
    def outer(i, a):
        def inner(j, b):
            return j + 1, b * 0.5 + tw.sin(a)
        _, b = tw.while_loop(lambda j, b: j < i, inner, (0, a))
        return i + 1, b + x
    return tw.while_loop(lambda i, a: i < 4, outer, (1, x))[1]


def nested_numpy(x):
    a = x
    for i in range(1, 4):
        b = a
        for _ in range(i):
            b = b * 0.5 + np.sin(a)
        a = b + x
    return a


def cond_in_loop_fn(x):
    def body(i, a):
        a = tw.cond(tw.reduce_sum(a) > 1.0, lambda: a * 0.5 + x, lambda: a * x + 1.0)
        return i + 1, a
    return tw.while_loop(lambda i, a: i < 6, body, (0, x))[1]


def cond_in_loop_numpy(x):
    a = x
    for _ in range(6):
        a = a * 0.5 + x if a.sum() > 1.0 else a * x + 1.0
    return a


def loop_in_cond_in_loop_fn(x):
    def body(i, a):
        def looped():
            return tw.while_loop(lambda j, b: j < i, lambda j, b: (j + 1, tw.sin(b) + x), (0, a))[1]
        return i + 1, tw.cond(tw.equal(i % 2, 0), looped, lambda: a * x)
    return tw.while_loop(lambda i, a: i < 4, body, (0, x))[1]


def loop_in_cond_in_loop_numpy(x):
    a = x
    for i in range(4):
        if i % 2 == 0:
            for _ in range(i):
                a = np.sin(a) + x
        else:
            a = a * x
    return a


STRUCTURES = [(nested_fn, nested_numpy), (cond_in_loop_fn, cond_in_loop_numpy),
              (loop_in_cond_in_loop_fn, loop_in_cond_in_loop_numpy)]


@pytest.mark.parametrize("fn,reference", STRUCTURES, ids=["nested", "cond_in_loop",
                                                          "loop_in_cond_in_loop"])
@pytest.mark.parametrize("x", [[0.3, 0.9], [-0.4, 0.1]])
def test_nested_structures_on_both_paths_match_numpy(fn, reference, x):
    x = np.array(x)
    np.testing.assert_allclose(both_paths(fn, x), reference(x), rtol=1e-12)


@pytest.mark.parametrize("taken", [True, False])
def test_a_loop_in_an_untaken_branch_never_runs_and_its_frame_ends(taken):
    def f(x, p):
        def looped():
            return tw.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2.0), (0, x))[1]
        return tw.cond(p, looped, lambda: x - 1.0)

    x = np.array([1.0, 2.0], F32)
    assert_same(both_paths(f, x, np.array(taken)), x * 8 if taken else x - 1)


def test_maximum_iterations_and_loop_invariants():
    def f(x, w, n):
        return tw.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * w),
                             (0, x), maximum_iterations=3)

    x, w = np.array([1.0, 2.0], F32), np.float32(3.0)
    for n in (0, 2, 10):
        i, a = both_paths(f, x, w, np.int32(n))
        k = min(n, 3)
        assert_same(i, np.int32(k))
        assert_same(a, x * w ** k)


def test_scan_on_both_targets_with_fusion_after_lowering():
    def f(x):
        return tw.scan(lambda a, e: a * 0.5 + tw.tanh(e), x, initializer=tw.zeros([3], tw.float32))

    x = np.arange(12, dtype=F32).reshape(4, 3) / 10
    want, a = [], np.zeros(3, F32)
    for e in x:
        a = a * F32(0.5) + np.tanh(e)
        want.append(a)
    for target in ("reference", "cpu"):
        assert_same(both_paths(f, x, target=target), np.stack(want))


# --------------------------------------------------------------------------- variables

def test_loops_that_assign_and_read_variables_on_both_paths():
    results = {}
    for lower in (False, True):
        v = tw.Variable(np.float32(1.0), name=f"lowering_v_{lower}")
        total = tw.Variable(np.float32(0.0), name=f"lowering_total_{lower}")

        @tw.compile(lower_control_flow=lower)
        def step(x, v=v, total=total):
            def body(i):
                v.assign(v * 2.0 + x)
                total.assign_add(v.read_value())
                return i + 1
            # the cond reads what the body wrote in the previous iteration
            i = tw.while_loop(lambda i: v.read_value() < 100.0, body, [tw.constant(0)])[0]
            branch = tw.cond(total.read_value() > 50.0, lambda: v.assign_add(1.0),
                             lambda: v.assign_add(-1.0))
            with tw.control_dependencies([branch]):
                return i, v.read_value(), total.read_value()

        results[lower] = [step(np.float32(x)) for x in (1.0, 0.5)]
        if lower:
            assert {"If", "While"}.isdisjoint(executed_ops(step))
    v, total, expect = 1.0, 0.0, []
    for x in (1.0, 0.5):
        i = 0
        while v < 100.0:
            v = v * 2 + x
            total += v
            i += 1
        v += 1.0 if total > 50.0 else -1.0
        expect.append((np.int32(i), F32(v), F32(total)))
    for lower in (False, True):
        for got, want in zip(results[lower], expect):
            for g, w in zip(got, want):
                assert_same(g, w)


# --------------------------------------------------------------------------- gradients

def gradient_fn(fn, argnums=0):
    return lambda *a: tw.grad(lambda *b: tw.reduce_sum(fn(*b)), argnums=argnums)(*a)


def numeric_gradient(fn, x, eps=1e-6):
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += eps
        minus[idx] -= eps
        out[idx] = (fn(plus).sum() - fn(minus).sum()) / (2 * eps)
    return out


@pytest.mark.parametrize("fn,reference", STRUCTURES, ids=["nested", "cond_in_loop",
                                                          "loop_in_cond_in_loop"])
def test_gradients_on_both_paths_match_numpy_finite_differences(fn, reference):
    x = np.array([0.3, -0.7])
    got = both_paths(gradient_fn(fn), x)
    np.testing.assert_allclose(got, numeric_gradient(reference, x), rtol=1e-6, atol=1e-8)


def test_gradients_of_conds_and_loops_with_weights_on_both_paths():
    n = 4

    def f(x, c):
        a, s = loop_fn(n)(x, c)
        return tw.cond(s > 0, lambda: a * c, lambda: a - c)

    def reference(x, c):
        a, s = loop_numpy(n, x, c)
        return a * c if s > 0 else a - c

    x, c = np.array([0.3, -0.5, 0.8]), np.array([0.9, 1.1, -0.4])
    gx, gc = both_paths(gradient_fn(f, argnums=(0, 1)), x, c)
    np.testing.assert_allclose(gx, numeric_gradient(lambda x: reference(x, c), x), rtol=1e-6)
    np.testing.assert_allclose(gc, numeric_gradient(lambda c: reference(x, c), c), rtol=1e-6)


def test_gradient_with_respect_to_a_variable_read_in_a_loop_on_both_paths():
    w = tw.Variable(np.array([0.5, -1.5]), name="lowering_grad_w")

    def loss(x):
        a = tw.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, tw.sin(a) * w), (0, x))[1]
        return tw.reduce_sum(a)

    def grads(x):
        return tw.gradients(loss(x), [w])[0]

    x = np.array([0.2, 0.4])

    def reference(wv):
        a = x
        for _ in range(3):
            a = np.sin(a) * wv
        return a

    got = both_paths(grads, x)
    np.testing.assert_allclose(got, numeric_gradient(reference, w.numpy()), rtol=1e-6)


# ------------------------------------------------------------- parallel iterations

def test_parallel_iterations_overlap_up_to_their_bound(monkeypatch):
    """Iterations whose slow work is independent run at once, at most
    parallel_iterations of them; the results do not depend on it."""
    monkeypatch.setattr(rx, "CHEAP_ELEMENTS", -1)  # every op goes through the pool
    in_flight: list[int] = []
    original = rx.PartitionRun._new_iteration

    def counting(self, frame, ready):
        t = original(self, frame, ready)
        in_flight.append(frame.outstanding_iterations)
        return t

    monkeypatch.setattr(rx.PartitionRun, "_new_iteration", counting)

    def f(x, parallel):
        def body(i, acc):
            return i + 1, acc + apply_op1("LoweringTestSlow", [x * tw.cast(i, tw.float32)])
        return tw.while_loop(lambda i, acc: i < 12, body, (0, tw.zeros_like(x)),
                             parallel_iterations=parallel)[1]

    x = np.array([1.0, 2.0], F32)
    want = x * F32(sum(range(12)))
    for parallel in (1, 4):
        in_flight.clear()
        got = tw.compile(f, lower_control_flow=True)(x, parallel)
        assert_same(got, want)
        assert max(in_flight) <= parallel
        if parallel > 1:
            assert max(in_flight) > 1, in_flight


def test_stateful_bodies_keep_program_order_with_parallel_iterations(monkeypatch):
    monkeypatch.setattr(rx, "CHEAP_ELEMENTS", -1)
    v = tw.Variable(np.zeros(2, F32), name="lowering_order_v")

    @tw.compile(lower_control_flow=True)
    def f(x):
        def body(i, log):
            v.assign(v * 2.0 + x)
            return i + 1, log + v.read_value()
        return tw.while_loop(lambda i, log: i < 8, body, (0, tw.zeros_like(x)),
                             parallel_iterations=8)[1]

    got = f(np.ones(2, F32))
    state, log = np.zeros(2, F32), np.zeros(2, F32)
    for _ in range(8):
        state = state * 2 + 1
        log = log + state
    assert_same(got, log)


# --------------------------------------------------------------------- long loops

def test_ten_thousand_iterations_lowered_in_bounded_memory():
    @tw.compile(lower_control_flow=True)
    def f(n, x):
        return tw.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * 0.5 + 1.0), (0, x))

    x = np.ones(64, F32)
    f(np.int32(10), x)  # compile outside the measurement

    def peak(n: int) -> tuple[int, float, np.ndarray]:
        tracemalloc.start()
        i, a = f(np.int32(n), x)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert int(i) == n
        return top, a

    small, _ = peak(100)
    large, got = peak(10_000)
    # Only the iterations in flight are alive: 100x the iterations, about the same peak.
    assert large < small + 1_000_000, (small, large)
    a = np.ones(64, F32)
    for _ in range(10_000):
        a = a * F32(0.5) + F32(1.0)
    assert_same(got, a)


def test_ten_thousand_iteration_gradient_lowered():
    def loss(x):
        return tw.while_loop(lambda i, a: i < 10_000, lambda i, a: (i + 1, a * 0.9999 + 0.001),
                             (0, x))[1]

    g = tw.compile(gradient_fn(loss), lower_control_flow=True)(np.ones(3))
    np.testing.assert_allclose(g, np.full(3, 0.9999 ** 10_000), rtol=1e-9)


# ------------------------------------------------------------------ stage, dump, text

def test_the_lowered_stage_sits_after_partitioning_and_is_optional():
    names = stage_names()
    assert names.index("partitioned") < names.index("lowered") < names.index("fused")
    x = np.ones(2, F32)

    def f(x):
        return tw.while_loop(lambda a: tw.reduce_sum(a) < 10.0, lambda a: a * 2.0, [x])[0]

    try:
        tw.config.set_lower_control_flow(False)
        default = tw.compile(f)
        default(x)
        assert "While" in executed_ops(default)
        tw.config.set_lower_control_flow(True)
        assert tw.config.get_lower_control_flow()
        lowered = tw.compile(f)
        lowered(x)
        forced_off = tw.compile(f, lower_control_flow=False)
        forced_off(x)
        tw.config.set_lower_control_flow(False)
        with lowering(True):  # what compiling inside the block does
            scoped = tw.compile(f)
            scoped(x)
    finally:
        tw.config.set_lower_control_flow(None)
    assert "While" not in executed_ops(lowered) and "Merge" in executed_ops(lowered)
    assert "While" in executed_ops(forced_off)
    assert "Merge" in executed_ops(scoped)
    # Printing a stage (no target) always lowers.
    graph = lowered_graph(f, x)
    assert not has_functional_control_flow(graph)


def test_dump_stage_lowered_shows_the_primitives(tmp_path, capsys):
    src = tmp_path / "model.py"
    src.write_text("import tensorweave as tw\n\n"
                   "@tw.compile(input_signature=[tw.TensorSpec([], tw.float32)])\n"
                   "def f(x):\n"
                   "    y = tw.while_loop(lambda a: a < 10.0, lambda a: a * 2.0, [x])[0]\n"
                   "    return tw.cond(y > 12.0, lambda: y, lambda: -y)\n")
    assert cli_main(["dump", f"{src}:f", "--stage", "lowered"]) == 0
    out = capsys.readouterr().out
    for op in PRIMITIVES:
        assert f'"tw.{op}"' in out, op
    assert '"tw.While"' not in out and '"tw.If"' not in out
    assert 'frame_name = "while"' in out
    parse_graph(out)


def _everything(x, y):
    def body(i, a):
        a = tw.cond(tw.reduce_sum(a) > 1.0, lambda: a * 0.5 + y, lambda: tw.tanh(a @ y))
        return i + 1, a
    out = tw.while_loop(lambda i, a: i < 3, body, (0, x))[1]
    loss = tw.reduce_sum(out * out)
    return loss, tw.gradients(loss, [x, y])


def test_lowered_graphs_print_parse_back_and_run_from_text():
    x, y = np.full((2, 2), 0.3, F32), np.array([[1.0, 0.5], [-0.5, 1.0]], F32)
    graph = lowered_graph(_everything, x, y)
    text = str(graph)
    assert '"tw.StackPop"' in text and '"tw.NextIterationSource"' in text
    parsed = parse_graph(text)
    assert graph_diff(graph, parsed) is None
    want = tw.compile(_everything, lower_control_flow=False)(x, y)
    got = DataflowExecutable(parsed, resources=ResourceManager())(x, y)
    for a, b in zip(leaves(want), got, strict=True):
        assert_same(b, a)


def test_loops_on_another_device_are_lowered_where_they_were_placed():
    def f(x, y):
        with tw.device("/cpu:0"):
            z = x * y
        with tw.device("/cpu:1"):
            z = cond_in_loop_fn(z)
        with tw.device("/cpu:0"):
            return z + 1.0

    x, y = np.array([0.3, 0.9]), np.array([1.0, 0.5])
    with logical_cpus(2):
        got = both_paths(f, x, y)
        graph = lowered_graph(f, x, y)
    np.testing.assert_allclose(got, cond_in_loop_numpy(x * y) + 1.0, rtol=1e-12)
    devices = {n.op: n.assigned_device for n in graph.nodes}
    assert {"Send", "Recv"} <= set(devices)
    assert all(n.assigned_device.endswith("CPU:1") for n in graph.nodes
               if n.op in PRIMITIVES)


# ---------------------------------------------------- hand-built graphs: dead tensors

def f32(*shape) -> TensorType:
    return TensorType("f32", shape)


def node(g: Graph, op: str, inputs=(), attrs=None, control=()) -> Node:
    return g.add_node(op, list(inputs), attrs or {}, control_inputs=list(control))


def const(g: Graph, value, control=()) -> Value:
    return node(g, "Const", [], {"value": np.asarray(value)}, control).outputs[0]


def count(g: Graph, x: Value, tag: str, control=()) -> Node:
    return node(g, "LoweringTestCount", [x], {"tag": tag}, control)


def run(g: Graph, *args):
    return DataflowExecutable(g, resources=ResourceManager())(*args)


@pytest.mark.parametrize("pred", [True, False])
def test_switch_kills_the_untaken_branch_and_merge_takes_the_live_input(pred):
    RUNS.clear()
    g = Graph("g")
    x, p = g.add_arg(f32(2)), g.add_arg(TensorType("i1", ()))
    sw = node(g, "Switch", [x, p])
    t = count(g, node(g, "Neg", [sw.outputs[1]]).outputs[0], "true")
    f = count(g, node(g, "Exp", [sw.outputs[0]]).outputs[0], "false")
    m = node(g, "Merge", [f.outputs[0], t.outputs[0]])
    g.set_results(list(m.outputs))
    a = np.array([1.0, -2.0], F32)
    value, index = run(g, a, np.array(pred))
    assert_same(value, -a if pred else np.exp(a))
    assert_same(index, np.int32(pred))
    assert RUNS == {"true" if pred else "false": 1}


@pytest.mark.parametrize("pred", [True, False])
def test_deadness_travels_along_control_edges(pred):
    RUNS.clear()
    g = Graph("g")
    x, p = g.add_arg(f32(2)), g.add_arg(TensorType("i1", ()))
    sw = node(g, "Switch", [x, p])
    in_true_branch = node(g, "Neg", [sw.outputs[1]])
    # reads a live value, but must run after a node of the true branch: dead when false
    after = count(g, x, "after", control=[in_true_branch])
    m = node(g, "Merge", [sw.outputs[0], after.outputs[0]])
    g.set_results([m.outputs[0], node(g, "Exp", [x]).outputs[0]])
    a = np.array([1.0, 2.0], F32)
    out = run(g, a, np.array(pred))
    assert_same(out[0], a)
    assert_same(out[1], np.exp(a))
    assert RUNS == ({"after": 1} if pred else {})


def test_a_dead_result_is_a_clear_error():
    g = Graph("g")
    x, p = g.add_arg(f32(2)), g.add_arg(TensorType("i1", ()))
    sw = node(g, "Switch", [x, p])
    inner = node(g, "Switch", [sw.outputs[1], p])  # both outputs dead when p is false
    m = node(g, "Merge", [inner.outputs[0], inner.outputs[1]])
    g.set_results([m.outputs[0]])
    assert_same(run(g, np.ones(2, F32), np.array(True))[0], np.ones(2, F32))
    with pytest.raises(tw.errors.InternalError, match="result 0 .* is dead"):
        run(g, np.ones(2, F32), np.array(False))


def build_loop(g: Graph, n: Value, inits: list[Value], body, frame: str = "loop",
               parallel: int = 10, control=()) -> list[Value]:
    """A hand-built ``for i in range(n)`` loop carrying `inits`; ``body(i, values, pivot)``
    returns the next values. Returns the loop's results (after the counter)."""
    def enter(v: Value, constant: bool = False) -> Value:
        return node(g, "Enter", [v], {"frame_name": frame, "is_constant": constant,
                                      "parallel_iterations": parallel}, control).outputs[0]

    limit = enter(n, constant=True)
    zero = const(g, np.int32(0), control)
    merges, sources = [], []
    for v in [zero, *inits]:
        src = node(g, "NextIterationSource", [], {"value_type": v.type})
        merges.append(node(g, "Merge", [enter(v), src.outputs[0]]))
        sources.append(src)
    pred = node(g, "LoopCond", [node(g, "Less", [merges[0].outputs[0], limit]).outputs[0]])
    switches = [node(g, "Switch", [m.outputs[0], pred.outputs[0]]) for m in merges]
    exits = [node(g, "Exit", [s.outputs[0]]).outputs[0] for s in switches]
    pivot = node(g, "Identity", [switches[0].outputs[1]])
    i = switches[0].outputs[1]
    nxt = [node(g, "Add", [i, const(g, np.int32(1), [pivot])]).outputs[0],
           *body(i, [s.outputs[1] for s in switches[1:]], pivot)]
    for v, src in zip(nxt, sources):
        node(g, "NextIteration", [v, src.outputs[1]])
    return exits[1:]


@pytest.mark.parametrize("parallel", [1, 3])
def test_a_hand_built_loop_runs_in_frames(parallel):
    g = Graph("g")
    n, x = g.add_arg(TensorType("i32", ())), g.add_arg(f32(2))

    def body(i, values, pivot):
        (a,) = values
        return [node(g, "Add", [node(g, "Mul", [a, a]).outputs[0], a]).outputs[0]]

    g.set_results(build_loop(g, n, [x], body, parallel=parallel))
    for steps in (0, 1, 4):
        a = np.array([0.5, -0.25], F32)
        want = a
        for _ in range(steps):
            want = want * want + want
        assert_same(run(g, np.int32(steps), a)[0], want)


@pytest.mark.parametrize("pred", [True, False])
def test_a_loop_entered_with_dead_values_passes_dead_exits_on(pred):
    RUNS.clear()
    g = Graph("g")
    n, x, p = g.add_arg(TensorType("i32", ())), g.add_arg(f32(2)), g.add_arg(TensorType("i1", ()))
    sw_x, sw_n = node(g, "Switch", [x, p]), node(g, "Switch", [n, p])

    def body(i, values, pivot):
        return [count(g, node(g, "Neg", [values[0]]).outputs[0], "body").outputs[0]]

    (looped,) = build_loop(g, sw_n.outputs[1], [sw_x.outputs[1]], body)
    m = node(g, "Merge", [sw_x.outputs[0], looped])
    g.set_results([m.outputs[0]])
    a = np.array([1.0, 2.0], F32)
    assert_same(run(g, np.int32(3), a, np.array(pred))[0], -a if pred else a)
    assert RUNS == ({"body": 3} if pred else {})


def transfer_loop_body(g: Graph, sending: bool, attrs: dict):
    """A loop body for `build_loop` that, in iteration i, sends i * 10 (the sending
    partition) or adds what it receives to its accumulator (the receiving one)."""
    def body(i, values, pivot):
        (acc,) = values
        if sending:
            value = node(g, "Mul", [node(g, "Cast", [i], {"dtype": "f32"}).outputs[0],
                                    const(g, np.full(2, 10.0, F32), [pivot])])
            node(g, "Send", [value.outputs[0]], attrs)
            return [acc]
        recv = node(g, "Recv", [], {**attrs, "dtype": "f32", "shape": (2,)}, [pivot])
        return [node(g, "Add", [acc, recv.outputs[0]]).outputs[0]]
    return body


def test_send_and_recv_inside_loops_meet_per_frame_and_iteration():
    """Two partitions run the same loop; in each iteration one sends and the other
    receives: the rendezvous keys carry the frame and the iteration."""
    n = 4

    def partition(sending: bool) -> Graph:
        g = Graph("sender" if sending else "receiver")
        limit = g.add_arg(TensorType("i32", ()))
        acc0 = const(g, np.zeros(2, F32))
        attrs = {"key": "cpu0;value;cpu1", "send_device": "cpu0", "recv_device": "cpu1"}
        g.set_results(build_loop(g, limit, [acc0], transfer_loop_body(g, sending, attrs)))
        return g

    parts = []
    for sending in (True, False):
        g = partition(sending)
        parts.append((PartitionExecutor(g, PreparedKernel, ResourceManager(), CallCounters()),
                      [np.int32(n)]))
    for _ in range(3):  # several steps: keys also carry the step id
        step = Step(rx.new_step_id(), LocalRendezvous())
        _, (received,) = run_step(step, parts, timeout=30)
        assert_same(received, np.full(2, 10.0 * sum(range(n)), F32))


@pytest.mark.parametrize("pred", [True, False])
def test_a_dead_value_sent_to_another_partition_arrives_dead(pred):
    attrs = {"key": "cpu0;x;cpu1", "send_device": "cpu0", "recv_device": "cpu1"}
    parts = []
    for sending in (True, False):
        g = Graph("sender" if sending else "receiver")
        x, p = g.add_arg(f32(2)), g.add_arg(TensorType("i1", ()))
        sw = node(g, "Switch", [x, p])
        if sending:
            node(g, "Send", [node(g, "Neg", [sw.outputs[1]]).outputs[0]], attrs)
        else:
            recv = node(g, "Recv", [], {**attrs, "dtype": "f32", "shape": (2,)})
            g.set_results([node(g, "Merge", [sw.outputs[0], recv.outputs[0]]).outputs[0]])
        ex = PartitionExecutor(g, PreparedKernel, ResourceManager(), CallCounters())
        parts.append((ex, [np.array([1.0, 2.0], F32), np.array(pred)]))
    _, (got,) = run_step(Step(rx.new_step_id(), LocalRendezvous()), parts, timeout=30)
    assert_same(got, np.array([-1.0, -2.0] if pred else [1.0, 2.0], F32))


# ------------------------------------------------------------------ malformed graphs

def test_primitives_cannot_run_in_the_in_order_evaluator():
    g = Graph("g")
    x, p = g.add_arg(f32(2)), g.add_arg(TensorType("i1", ()))
    g.set_results([node(g, "Switch", [x, p]).outputs[1]])
    with pytest.raises(tw.errors.UnimplementedError, match="only the dataflow executor"):
        ReferenceExecutable(g, ResourceManager())(np.ones(2, F32), np.array(True))


def test_malformed_frames_are_compile_errors():
    g = Graph("mixed")
    x = g.add_arg(f32(2))
    inside = node(g, "Enter", [x], {"frame_name": "f"})
    node(g, "Add", [inside.outputs[0], x])
    with pytest.raises(tw.errors.CompileError, match="different loop frames"):
        DataflowExecutable(g)

    g = Graph("merge_control")
    x = g.add_arg(f32(2))
    neg = node(g, "Neg", [x])
    g.set_results([node(g, "Merge", [neg.outputs[0]], control=[neg]).outputs[0]])
    with pytest.raises(tw.errors.CompileError, match="Merge"):
        DataflowExecutable(g)

    g = Graph("exit_outside")
    g.set_results([node(g, "Exit", [g.add_arg(f32(2))]).outputs[0]])
    with pytest.raises(tw.errors.CompileError, match="Exit outside any loop frame"):
        DataflowExecutable(g)

    g = Graph("next_outside")
    node(g, "NextIteration", [g.add_arg(f32(2)), const(g, np.array(True))])
    with pytest.raises(tw.errors.CompileError, match="NextIteration outside any loop frame"):
        DataflowExecutable(g)

    g = Graph("bad_token")
    x, p = g.add_arg(f32(2)), g.add_arg(TensorType("i1", ()))
    enter = [node(g, "Enter", [v], {"frame_name": "f"}).outputs[0] for v in (x, p)]
    node(g, "NextIteration", enter)
    with pytest.raises(tw.errors.CompileError, match="output 1 of a NextIterationSource"):
        DataflowExecutable(g)

    g = Graph("result_inside")
    g.set_results([node(g, "Enter", [g.add_arg(f32(2))], {"frame_name": "f"}).outputs[0]])
    with pytest.raises(tw.errors.CompileError, match="inside loop frame 'f'"):
        DataflowExecutable(g)


def test_lowering_makes_values_captured_by_hand_written_regions_explicit():
    g = Graph("g")
    x, y = g.add_arg(f32(2)), g.add_arg(f32(2))
    cond_r, body_r = Graph("cond"), Graph("body")
    (a,) = [cond_r.add_arg(f32(2))]
    total = node(cond_r, "Sum", [a], {"axes": None, "keepdims": False})
    cond_r.set_results([node(cond_r, "Less", [total.outputs[0],
                                              const(cond_r, np.float32(20))]).outputs[0]])
    b = body_r.add_arg(f32(2))
    body_r.set_results([node(body_r, "Add", [b, y]).outputs[0]])  # captures y
    loop = g.add_node("While", [x], regions=[cond_r, body_r])
    g.set_results([loop.outputs[0]])
    a0, y0 = np.ones(2, F32), np.array([1.0, 2.0], F32)
    want = ReferenceExecutable(g, ResourceManager())(a0, y0)
    lower_control_flow(g)
    assert not has_functional_control_flow(g)
    assert_same(run(g, a0, y0)[0], want[0])
    assert_same(want[0], np.array([7.0, 13.0], F32))


def test_concurrent_steps_of_a_lowered_loop_keep_their_frames_apart():
    f = tw.compile(loop_fn(5, parallel=3), lower_control_flow=True)
    x, c = np.array([0.1, 0.2]), np.array([1.5, -0.5])
    f(x, c)
    out: dict[int, object] = {}

    def worker(k: int) -> None:
        out[k] = f(x * k, c)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for k in range(6):
        for g, w in zip(out[k], loop_numpy(5, x * k, c)):
            np.testing.assert_allclose(g, w, rtol=1e-12)


@pytest.mark.skipif(os.environ.get("TW_LOWER_CONTROL_FLOW", "") not in ("", "0"),
                    reason="checks the default, which the environment overrides")
def test_the_default_keeps_functional_control_flow():
    assert not tw.config.get_lower_control_flow()
