"""Functional control flow: `tw.cond`, `tw.while_loop`, `tw.case`, `tw.scan`, `tw.foldl`.

Values against NumPy references (loops unrolled in Python), eager and traced, on both
targets; captured tensors and variables; shape invariants and the errors for bodies that
break them; long loops (time and memory); the IR text round trip and the pipeline stages
(optimized, placed on several devices, partitioned) of graphs with If and While; the
TensorFlow 1 API; the stack ops behind loop gradients. Gradients are in
tests/grads/test_control_grads.py."""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.compiler.equality import graph_diff
from tensorweave.compiler.ir import Graph
from tensorweave.compiler.parser import parse_graph
from tensorweave.compiler.pipeline import run_pipeline
from tensorweave.compiler.types import RESOURCE, TensorType
from tensorweave.targets.reference import ReferenceExecutable
from tests.helpers import TARGETS, assert_same

F32 = np.float32
HERE = "test_control_flow.py"


def ops_of(fn, *args) -> list[str]:
    """Every op of `fn`'s trace, regions included."""
    return [n.op for n in tw.compile(fn).get_concrete_function(*args).graph.walk()]


def on_every_target(fn, *args):
    """`fn` traced on every target; the results of the first (all must agree)."""
    results = [tw.compile(fn, target=t)(*args) for t in TARGETS]
    for other in results[1:]:
        for a, b in zip(_leaves(results[0]), _leaves(other)):
            assert_same(b, a)
    return results[0]


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [y for v in x for y in _leaves(v)]
    if isinstance(x, dict):
        return [y for k in x for y in _leaves(x[k])]
    return [x]


# ------------------------------------------------------------------------------------ cond

def np_select(p, a, b):
    return a if p else b


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_runs_the_branch_the_predicate_picks(sign):
    x = np.array([1.0, 2.0, 3.0], F32) * sign
    y = np.array([0.5, -1.0, 2.0], F32)

    def f(x, y):
        return tw.cond(tw.reduce_sum(x) > 0, lambda: x * y + 1.0, lambda: tw.exp(x) - y)

    expected = np_select(x.sum() > 0, x * y + 1, np.exp(x) - y)
    assert_same(on_every_target(f, x, y), expected)
    assert_same(f(tw.constant(x), tw.constant(y)).numpy(), expected)  # eager
    assert ops_of(f, x, y).count("If") == 1


def test_cond_with_a_python_bool_only_traces_one_branch():
    def f(x, flag):
        return tw.cond(flag, lambda: x + 1.0, lambda: x * 0.0)

    assert_same(tw.compile(f)(np.ones(2, F32), True), np.full(2, 2.0, F32))
    assert "If" not in ops_of(f, np.ones(2, F32), True)


def test_cond_returns_nested_structures_and_captures_outer_tensors():
    def f(x, p):
        out = tw.cond(p, lambda: {"a": x * 2.0, "b": (x, tw.constant(1))},
                      lambda: {"a": x - 1.0, "b": (x * x, tw.constant(2))})
        return out["a"], out["b"][0], out["b"][1]

    x = np.array([1.5, -2.0], F32)
    for p in (True, False):
        got = on_every_target(f, x, np.bool_(p))
        want = (x * 2, x, np.int32(1)) if p else (x - 1, x * x, np.int32(2))
        for g, w in zip(got, want):
            assert_same(g, np.asarray(w))


def test_cond_output_dim_is_unknown_where_the_branches_differ():
    def f(x):
        return tw.cond(x[0] > 0, lambda: x, lambda: tw.concat([x, x], 0))

    graph = tw.compile(f).get_concrete_function(np.ones(2, F32)).graph
    assert graph.results[0].type == TensorType("f32", [None])
    assert_same(tw.compile(f)(np.array([-1.0, 2.0], F32)), np.array([-1, 2, -1, 2], F32))


def test_cond_branches_with_different_dtypes_fail_naming_the_results():
    with pytest.raises(tw.errors.DTypeError) as err:
        tw.compile(lambda x: tw.cond(x[0] > 0, lambda: x, lambda: tw.cast(x, tw.int32)))(
            np.ones(2, F32))
    msg = str(err.value)
    assert "then branch gives f32[2]" in msg and "else branch gives i32[2]" in msg and HERE in msg


def test_cond_branches_with_different_ranks_or_structures_fail():
    with pytest.raises(tw.errors.ShapeError, match="different ranks") as err:
        tw.compile(lambda x: tw.cond(x[0] > 0, lambda: x, lambda: x[0]))(np.ones(2, F32))
    assert HERE in str(err.value)
    with pytest.raises(tw.errors.TracingError, match="same structure") as err:
        tw.compile(lambda x: tw.cond(x[0] > 0, lambda: (x, x), lambda: x))(np.ones(2, F32))
    assert HERE in str(err.value)


def test_cond_predicate_must_be_a_bool_scalar():
    with pytest.raises(tw.errors.TracingError, match="bool scalar") as err:
        tw.compile(lambda x: tw.cond(x > 0, lambda: x, lambda: -x))(np.ones(2, F32))
    assert HERE in str(err.value)


def test_python_control_flow_on_a_traced_tensor_points_to_cond_and_while_loop():
    def f(x):
        if tw.reduce_sum(x) > 0:
            return x
        return -x

    with pytest.raises(tw.errors.TracingError) as err:
        tw.compile(f)(np.ones(2, F32))
    assert "tw.cond" in str(err.value) and "tw.while_loop" in str(err.value)
    assert HERE in str(err.value)


def test_cond_branches_may_return_nothing_and_only_the_taken_one_runs():
    v = tw.Variable(0.0, name="cf_cond_side_effects")

    @tw.compile
    def f(p):
        tw.cond(p, lambda: v.assign_add(1.0, read_value=False),
                lambda: v.assign_sub(10.0, read_value=False))
        return v.read_value()

    assert float(f(np.bool_(True))) == 1.0
    assert float(f(np.bool_(True))) == 2.0
    assert float(f(np.bool_(False))) == -8.0


# ---------------------------------------------------------------------------- while_loop

def np_loop(x, n):
    """a = sin(a) * 0.9 + x, n times, from a = x."""
    a = x.copy()
    for _ in range(n):
        a = (np.sin(a) * F32(0.9) + x).astype(x.dtype)
    return a


def test_while_loop_matches_an_unrolled_numpy_loop():
    def f(x, n):
        return tw.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, tw.sin(a) * 0.9 + x), (0, x))

    x = np.array([0.1, -0.4, 2.0], F32)
    for n in (0, 1, 7):
        i, a = on_every_target(f, x, np.int32(n))
        assert int(i) == n
        np.testing.assert_allclose(a, np_loop(x, n), rtol=1e-5)
        i_e, a_e = f(tw.constant(x), tw.constant(np.int32(n)))  # eager
        np.testing.assert_allclose(a_e.numpy(), np_loop(x, n), rtol=1e-5)


@given(n=st.integers(0, 6), x=st.floats(-2, 2), k=st.integers(1, 3))
def test_while_loop_with_nested_loop_vars(n, x, k):
    """dict and tuple loop variables; a Python-int loop bound; k-fold repeated state."""
    def f(x):
        state = {"count": tw.constant(0), "acc": (x, tw.zeros([k]))}

        def body(s):
            a, b = s["acc"]
            return {"count": s["count"] + 1, "acc": (a * 0.5 + 1.0, b + a)}

        out = tw.while_loop(lambda s: s["count"] < n, body, state)
        return out["count"], out["acc"][0], out["acc"][1]

    a, b = np.float32(x), np.zeros(k, F32)
    for _ in range(n):
        a, b = np.float32(a * 0.5 + 1), (b + a).astype(F32)
    count, got_a, got_b = tw.compile(f)(np.float32(x))
    assert int(count) == n
    np.testing.assert_allclose(got_a, a, rtol=1e-6)
    np.testing.assert_allclose(got_b, b, rtol=1e-6)


def test_while_loop_with_one_loop_variable_accepts_a_bare_tensor_from_the_body():
    f = tw.compile(lambda x: tw.while_loop(lambda a: a < 100.0, lambda a: a * 2.0, [x]))
    assert_same(f(np.float32(3.0))[0], np.float32(192.0))
    eager = tw.while_loop(lambda a: a < 100.0, lambda a: a * 2.0, tw.constant(np.float32(3.0)))
    assert float(eager) == 192.0


def test_maximum_iterations_as_an_int_and_as_a_tensor():
    def f(x, m):
        a = tw.while_loop(lambda i, a: i < 100, lambda i, a: (i + 1, a + 1.0), (0, x),
                          maximum_iterations=7)[1]
        b = tw.while_loop(lambda i, a: i < 100, lambda i, a: (i + 1, a + 1.0), (0, x),
                          maximum_iterations=m)[1]
        return a, b

    a, b = on_every_target(f, np.float32(0), np.int32(4))
    assert (float(a), float(b)) == (7.0, 4.0)
    loops = [n for n in tw.compile(f).get_concrete_function(np.float32(0), np.int32(4)).graph.nodes
             if n.op == "While"]
    assert [n.attrs["maximum_iterations"] for n in loops] == [7, -1]
    eager = tw.while_loop(lambda a: a < 100.0, lambda a: a + 1.0, [tw.constant(0.0)],
                          maximum_iterations=3)
    assert float(eager[0]) == 3.0


def test_shape_invariants_let_a_loop_variable_grow():
    def f(x):
        return tw.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, tw.concat([a, a + 1.0], 0)),
                             (0, x), shape_invariants=(None, [None]))[1]

    x = np.array([1.0, 2.0], F32)
    want = x
    for _ in range(3):
        want = np.concatenate([want, want + 1])
    assert_same(on_every_target(f, x), want)
    graph = tw.compile(f).get_concrete_function(x).graph
    assert graph.results[0].type == TensorType("f32", [None])


def test_a_loop_variable_that_changes_shape_without_invariant_fails_clearly():
    def f(x):
        return tw.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, tw.concat([a, a], 0)),
                             (0, x))

    with pytest.raises(tw.errors.ShapeError) as err:
        tw.compile(f)(np.ones(2, F32))
    msg = str(err.value)
    assert "loop_vars[1]" in msg and "[2]" in msg and "[4]" in msg
    assert "shape_invariants" in msg and HERE in msg


def test_shape_invariant_that_does_not_fit_the_initial_value_fails():
    with pytest.raises(tw.errors.ShapeError, match=r"invariant \[3\].*initial shape \[2\]") as err:
        tw.compile(lambda x: tw.while_loop(lambda a: a[0] < 1.0, lambda a: a, [x],
                                           shape_invariants=[[3]]))(np.ones(2, F32))
    assert HERE in str(err.value)


def test_body_changing_a_dtype_and_cond_not_returning_a_bool_fail():
    with pytest.raises(tw.errors.DTypeError, match=r"loop_vars\[1\].*f32.*i32") as err:
        tw.compile(lambda x: tw.while_loop(lambda i, a: i < 3,
                                           lambda i, a: (i + 1, tw.cast(a, tw.int32)),
                                           (0, x)))(np.ones(2, F32))
    assert HERE in str(err.value)
    with pytest.raises(tw.errors.TracingError, match="bool scalar"):
        tw.compile(lambda x: tw.while_loop(lambda a: a, lambda a: a, [x]))(np.ones(2, F32))
    with pytest.raises(tw.errors.TracingError, match="structure of loop_vars"):
        tw.compile(lambda x: tw.while_loop(lambda a, b: a < 1.0, lambda a, b: a, (x, x)))(
            np.float32(0))


def test_loop_with_a_cond_inside_and_a_nested_loop():
    def f(x):
        def body(i, a):
            a = tw.cond(tw.reduce_sum(a) > 2.0, lambda: a * 0.5, lambda: a + x)

            def inner(j, b):
                return j + 1, b + 0.1 * tw.cast(j, tw.float32)
            _, a = tw.while_loop(lambda j, b: j < i, inner, (0, a))
            return i + 1, a
        return tw.while_loop(lambda i, a: i < 5, body, (0, x))[1]

    x = np.array([0.7, 0.2], F32)
    a = x.copy()
    for i in range(5):
        a = a * F32(0.5) if a.sum() > 2 else a + x
        for j in range(i):
            a = a + F32(0.1) * F32(j)
    np.testing.assert_allclose(on_every_target(f, x), a, rtol=1e-6)
    ops = ops_of(f, x)
    assert ops.count("While") == 2 and ops.count("If") == 1


def test_regions_read_only_their_arguments():
    """Captured tensors are explicit inputs (extra loop variables the body passes on)."""
    def f(x, y):
        def body(i, a):
            return i + 1, tw.cond(a[0] > 0, lambda: a * y, lambda: a + y)
        return tw.while_loop(lambda i, a: i < 3, body, (0, x))[1]

    graph = tw.compile(f).get_concrete_function(np.ones(2, F32), np.ones(2, F32)).graph

    def check(g: Graph) -> None:
        defined = set(g.args) | {v for n in g.nodes for v in n.outputs}
        for n in g.nodes:
            assert all(v in defined for v in n.inputs), n
            for r in n.regions:
                check(r)

    for n in graph.nodes:
        for r in n.regions:
            check(r)
    loop = next(n for n in graph.nodes if n.op == "While")
    body = loop.regions[1]
    assert body.results[2] is body.args[2]  # y passes through unchanged


def test_loops_read_variables_and_assign_them():
    w = tw.Variable(np.array([1.5, 2.0], F32), name="cf_w")
    counter = tw.Variable(0.0, name="cf_counter")

    @tw.compile
    def f(x):
        def body(i, a):
            counter.assign_add(1.0)
            return i + 1, a * w + counter.read_value()
        return tw.while_loop(lambda i, a: i < 3, body, (0, x))[1]

    got = f(np.zeros(2, F32))
    a, c = np.zeros(2, F32), 0.0
    for _ in range(3):
        c += 1
        a = a * np.array([1.5, 2.0], F32) + F32(c)
    np.testing.assert_allclose(got, a)
    assert float(counter.numpy()) == 3.0
    graph = f.get_concrete_function(np.zeros(2, F32)).graph
    loop = next(n for n in graph.nodes if n.op == "While")
    # w is only read: one read before the loop, passed in; counter stays in the body.
    assert any(v.producer is not None and v.producer.op == "ReadVariable" for v in loop.inputs)
    body = loop.regions[1]
    assert "AssignAddVariable" in [n.op for n in body.nodes]
    handles = {n.attrs["shared_name"] for n in body.nodes if n.op == "VarHandle"}
    assert handles == {counter.shared_name}


def test_loop_cond_sees_the_updates_of_the_body():
    v = tw.Variable(0.0, name="cf_cond_reads")

    @tw.compile
    def f():
        def body(i):
            v.assign_add(1.0)
            return i + 1
        return tw.while_loop(lambda i: v.read_value() < 5.0, body, [0])[0]

    assert int(f()) == 5 and float(v.numpy()) == 5.0


def test_stateful_ops_around_a_loop_keep_program_order():
    v = tw.Variable(1.0, name="cf_order")

    @tw.compile
    def f():
        v.assign(2.0)
        a = tw.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + v.read_value()),
                          (0, tw.constant(0.0)))[1]
        v.assign(100.0)
        return a

    assert float(f()) == 6.0 and float(v.numpy()) == 100.0


def test_random_ops_in_a_loop_draw_new_numbers_each_iteration():
    @tw.compile
    def f():
        def body(i, acc):
            row = tw.random.uniform([3], seed=7)
            return i + 1, tw.concat([acc, tw.expand_dims(row, 0)], 0)
        return tw.while_loop(lambda i, a: i < 4, body, (0, tw.zeros([0, 3])),
                             shape_invariants=(None, [None, 3]))[1]

    rows = f()
    assert rows.shape == (4, 3) and len({tuple(r) for r in rows}) == 4


def test_ten_thousand_iterations_in_bounded_memory():
    """No recursion (10,000 nested calls would exceed Python's limit), and nothing kept
    from one iteration to the next. Speed is measured in benchmarks/, not here."""
    n = 10_000

    @tw.compile
    def f(x):
        return tw.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * 0.5 + x), (0, x))

    x = np.ones(1000, np.float64)
    f(x)  # trace and compile outside the measurement
    tracemalloc.start()
    i, a = f(x)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert int(i) == n
    np.testing.assert_allclose(a, 2 * x)
    assert peak < 40 * x.nbytes, f"peak {peak} bytes for {x.nbytes}-byte loop variables"


def test_an_endless_loop_stops_at_the_step_deadline():
    f = tw.compile(lambda x: tw.while_loop(lambda a: a > -1.0, lambda a: a + 1.0, [x])[0])
    exe = f.get_concrete_function(np.float32(0)).executable
    start = time.perf_counter()
    with pytest.raises(tw.errors.DeadlineExceededError):
        exe(np.float32(0), timeout=0.3)
    assert time.perf_counter() - start < 5


# ------------------------------------------------------------------- case, scan, foldl

@pytest.mark.parametrize("first", [6.0, 3.0, 0.0])
def test_case_picks_the_first_true_predicate_or_the_default(first):
    def f(x):
        return tw.case([(x[0] > 5, lambda: x * 2.0), (x[0] > 2, lambda: x * 3.0)],
                       default=lambda: x * 0.0)

    x = np.array([first, 1.0], F32)
    want = x * 2 if first > 5 else x * 3 if first > 2 else x * 0
    assert_same(on_every_target(f, x), want)
    assert_same(f(tw.constant(x)).numpy(), want)


def test_case_without_default_and_exclusive_check_at_run_time():
    f = tw.compile(lambda x: tw.case([(x[0] > 5, lambda: x * 2.0), (x[0] > 2, lambda: x * 3.0)],
                                     exclusive=True))
    assert_same(f(np.array([3.0, 1.0], F32)), np.array([9.0, 3.0], F32))
    with pytest.raises(tw.errors.InvalidArgumentError, match="more than one predicate"):
        f(np.array([6.0, 1.0], F32))
    with pytest.raises(tw.errors.InvalidArgumentError, match="no predicate is true"):
        f(np.array([0.0, 1.0], F32))


def test_scan_and_foldl_match_numpy():
    x = np.arange(12, dtype=F32).reshape(4, 3)
    assert_same(on_every_target(lambda x: tw.scan(lambda a, e: a + e, x), x), np.cumsum(x, 0))
    want = np.zeros(3, F32)
    rows = []
    for e in x:
        want = want * 2 + e
        rows.append(want)
    assert_same(on_every_target(lambda x: tw.scan(lambda a, e: a * 2.0 + e, x,
                                                  initializer=tw.zeros([3])), x),
                np.stack(rows))
    assert_same(on_every_target(lambda x: tw.foldl(lambda a, e: a + e, x), x), x.sum(0))
    assert_same(on_every_target(lambda x: tw.foldl(lambda a, e: a + tw.reduce_sum(e), x,
                                                   initializer=tw.constant(0.0)), x),
                np.float32(x.sum()))
    eager = tw.scan(lambda a, e: a + e, tw.constant(x))
    assert_same(eager.numpy(), np.cumsum(x, 0))


def test_scan_over_nested_elems_and_a_length_known_only_at_run_time():
    @tw.compile(input_signature=[tw.TensorSpec([None, 2], tw.float32),
                                 tw.TensorSpec([None], tw.int32)])
    def f(x, k):
        out = tw.scan(lambda acc, e: {"s": acc["s"] + e[0], "n": acc["n"] + e[1]}, (x, k),
                      initializer={"s": tw.zeros([2]), "n": tw.constant(0)})
        return out["s"], out["n"]

    for n in (5, 1, 0):
        x = np.arange(2 * n, dtype=F32).reshape(n, 2)
        k = np.arange(n, dtype=np.int32)
        s, c = f(x, k)
        assert_same(s, np.cumsum(x, 0).reshape(n, 2))
        assert_same(c, np.cumsum(k).astype(np.int32))


# ------------------------------------------------------------------- IR text and stages

def _fn_with_all_control_flow(x, y):
    def body(i, a):
        a = tw.cond(tw.reduce_sum(a) > 1.0, lambda: a * 0.5 + y, lambda: tw.tanh(a @ y))
        return i + 1, a
    out = tw.while_loop(lambda i, a: i < 3, body, (0, x))[1]
    loss = tw.reduce_sum(out * out)
    return loss, tw.gradients(loss, [x, y])


@pytest.mark.parametrize("stage", ["traced", "optimized", "placed", "partitioned"])
def test_graphs_with_if_and_while_print_and_parse_back(stage):
    x, y = np.full((2, 2), 0.3, F32), np.eye(2, dtype=F32)
    cf = tw.compile(_fn_with_all_control_flow).get_concrete_function(x, y)
    graph = cf.graph if stage == "traced" else run_pipeline(cf.graph, stage)
    text = str(graph)
    assert '"tw.While"' in text and '"tw.If"' in text and '"tw.StackPop"' in text
    assert graph_diff(graph, parse_graph(text)) is None


def test_optimized_graph_computes_what_the_traced_graph_computes():
    x, y = np.full((2, 2), 0.3, F32), np.array([[1.0, 0.5], [-0.5, 1.0]], F32)
    cf = tw.compile(_fn_with_all_control_flow).get_concrete_function(x, y)
    reference = ReferenceExecutable(cf.graph)(x, y)
    optimized = ReferenceExecutable(run_pipeline(cf.graph, "optimized"))(x, y)
    for a, b in zip(reference, optimized):
        assert_same(b, a)
    for a, b in zip(reference, cf.call_flat([x, y])):
        assert_same(b, a)


def test_loops_placed_and_partitioned_over_two_devices_give_the_same_results():
    devices = len(tw.config.list_logical_devices("CPU"))
    x, y = np.full((2, 2), 0.3, F32), np.array([[1.0, 0.5], [-0.5, 1.0]], F32)
    single = tw.compile(_fn_with_all_control_flow)(x, y)
    local = "/job:localhost/replica:0/task:0/device:CPU:"

    def split(x, y):
        with tw.device(local + "1"):
            y = y * 1.0
        return _fn_with_all_control_flow(x, y)

    try:
        tw.config.set_logical_devices("CPU", 2)
        f = tw.compile(split)
        got = f(x, y)
        graph = run_pipeline(f.get_concrete_function(x, y).graph, "partitioned")
    finally:
        tw.config.set_logical_devices("CPU", devices)
    assert len({n.assigned_device for n in graph.nodes}) == 2
    assert {"Send", "Recv", "While", "If"} <= {n.op for n in graph.walk()}
    for inner in (n for n in graph.nodes if n.regions):
        assert all(m.assigned_device == inner.assigned_device for r in inner.regions
                   for m in r.walk())
    for a, b in zip(_leaves(single), _leaves(got)):
        assert_same(b, a)


def test_dump_shows_the_loop_ops(tmp_path, capsys):
    from tensorweave.cli import main
    src = tmp_path / "model.py"
    src.write_text("import tensorweave as tw\n\n"
                   "@tw.compile(input_signature=[tw.TensorSpec([], tw.float32)])\n"
                   "def f(x):\n"
                   "    return tw.while_loop(lambda a: a < 10.0, lambda a: a * 2.0, [x])[0]\n")
    assert main(["dump", f"{src}:f", "--stage", "partitioned"]) == 0
    out = capsys.readouterr().out
    assert '"tw.While"' in out and "tw.assigned_device" in out
    parse_graph(out)


# ----------------------------------------------------------------------- TensorFlow 1

def test_tf1_cond_and_while_loop_in_graph_mode():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2])
        w = tf.Variable(np.array([1.5, 2.0], F32), name="w")
        i, a = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * w + x),
                             [tf.constant(0), tf.zeros([2])])
        y = tf.cond(tf.reduce_sum(a) > 10.0, lambda: a * 2.0, lambda: a)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got_i, got_y = sess.run([i, y], {x: np.ones(2, F32)})
    want = np.zeros(2, F32)
    for _ in range(3):
        want = want * np.array([1.5, 2.0], F32) + 1
    assert int(got_i) == 3
    np.testing.assert_allclose(got_y, want * 2 if want.sum() > 10 else want)


def test_tf1_variables_updated_in_a_loop_body():
    g = tf.Graph()
    with g.as_default():
        c = tf.Variable(0.0, name="c")
        n = tf.while_loop(lambda i: i < 4, lambda i: [tf.identity(i + 1) + 0 * tf.cast(
            c.assign_add(2.0), tf.int32)], [tf.constant(0)])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert int(sess.run(n)) == 4  # one loop variable: TensorFlow 1 returns it
            assert float(sess.run(c)) == 8.0


# ---------------------------------------------------------------------------- the ops

def _stack_graph(pushes: int, pops: int, max_size: int = -1) -> Graph:
    g = Graph("stack")
    x = g.add_arg(TensorType("f32", [2]), "x")
    h = g.add_node("Stack", [], {"max_size": max_size}).outputs[0]
    for _ in range(pushes):
        h = g.add_node("StackPush", [h, x]).outputs[0]
    outs = []
    for _ in range(pops):
        pop = g.add_node("StackPop", [h], {"elem_types": (TensorType("f32", [2]),)})
        h, value = pop.outputs
        outs.append(value)
    g.set_results(outs)
    return g


def test_stack_ops_push_and_pop_in_reverse_and_fail_clearly():
    x = np.array([1.0, 2.0], F32)
    assert len(ReferenceExecutable(_stack_graph(2, 2))(x)) == 2
    with pytest.raises(tw.errors.InvalidArgumentError, match="empty stack"):
        ReferenceExecutable(_stack_graph(1, 2))(x)
    with pytest.raises(tw.errors.InvalidArgumentError, match="full"):
        ReferenceExecutable(_stack_graph(3, 0, max_size=2))(x)
    assert _stack_graph(0, 0).nodes[0].outputs[0].type == RESOURCE


def test_while_op_checks_its_regions():
    g = Graph("bad")
    x = g.add_arg(TensorType("f32", [2]), "x")
    cond, body = Graph("c"), Graph("b")
    cond.add_arg(TensorType("f32", [2]))
    cond.set_results([cond.args[0]])  # not a bool scalar
    body.add_arg(TensorType("f32", [2]))
    body.set_results([body.args[0]])
    with pytest.raises(tw.errors.DTypeError, match="one bool scalar"):
        g.add_node("While", [x], regions=[cond, body])


def test_control_dependencies_on_outer_ops_inside_a_body_order_the_whole_node():
    v = tw.Variable(0.0, name="cf_outer_control")

    @tw.compile
    def f(x):
        bump = v.assign_add(5.0)

        def body(i, a):
            with tw.control_dependencies([bump]):
                return i + 1, a + 1.0
        return tw.while_loop(lambda i, a: i < 2, body, (0, x))[1]

    assert float(f(np.float32(1.0))) == 3.0
    graph = f.get_concrete_function(np.float32(1.0)).graph
    loop = next(n for n in graph.nodes if n.op == "While")
    assert any(c.op == "ReadVariable" for c in loop.control_inputs)
    assert all(c.graph is r for r in loop.regions for n in r.nodes for c in n.control_inputs)


def test_kernels_run_hand_written_regions_that_read_enclosing_values():
    g = Graph("hand_written")
    x = g.add_arg(TensorType("f32", []), "x")
    step = g.add_node("Const", [], {"value": np.array(2.0, F32)}).outputs[0]
    cond, body = Graph("c"), Graph("b")
    a = cond.add_arg(TensorType("f32", []), "a")
    limit = cond.add_node("Const", [], {"value": np.array(10.0, F32)}).outputs[0]
    cond.set_results([cond.add_node("Less", [a, limit]).outputs[0]])
    b = body.add_arg(TensorType("f32", []), "a")
    body.set_results([body.add_node("Add", [b, step]).outputs[0]])  # `step` is outer
    loop = g.add_node("While", [x], regions=[cond, body])
    g.set_results(loop.outputs)
    assert float(ReferenceExecutable(g)(np.float32(1.0))[0]) == 11.0
