"""The first passes (shape inference, constant folding, CSE, DCE) and the `optimized`
stage: each rewrite's effect on the IR, and that results never change."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.compiler import Graph, SourceLoc, TensorType
from tensorweave.compiler.dtypes import as_dtype
from tensorweave.compiler.ir import Node
from tensorweave.compiler.pipeline import run_pipeline, stage_names
from tensorweave.compiler.registry import all_ops, def_op, get_op
from tensorweave.compiler.types import ResourceType
from tensorweave.compiler.verifier import verify
from tensorweave.frontend.building import apply_op1
from tensorweave.passes.constant_folding import fold_constants
from tensorweave.passes.cse import attr_key, cse
from tensorweave.passes.dce import dce
from tensorweave.passes.shape_inference import infer_shapes, specialize
from tensorweave.runtime import ResourceManager
from tensorweave.targets.reference import ReferenceExecutable, evaluate

F32 = np.float32


# ----------------------------------------------------------------- test-only ops

def _test_op(name: str, **kwargs):
    """Declare an op used only by these tests (once per process)."""
    return get_op(name) if name in all_ops() else def_op(name, **kwargs)


# A draw from a generator: pure in the registry's eyes, but its kernel needs a context.
Draw = _test_op("PassesTestDraw", inputs=["x"], doc="x plus a per-call counter.")
Draw.infer(lambda x: x)
Draw.kernel("reference", context=True)(
    lambda ctx, x: x + np.asarray(ctx.next_call_index(), x.dtype))

# A pure op whose kernel rejects its inputs at run time.
Fails = _test_op("PassesTestFails", inputs=["x"], doc="Always raises.")
Fails.infer(lambda x: x)


@Fails.kernel("reference")
def _fails(x):
    raise tw.errors.InvalidArgumentError("bad value for PassesTestFails")


# A functional call: runs its region on its inputs (stands in for If/While bodies).
Call = _test_op("PassesTestCall", inputs=["*args"], num_regions=1, doc="Calls its region.")


@Call.infer
def _call_infer(*args, regions):
    return [v.type for v in regions[0].results]


@Call.kernel("reference", context=True)
def _call_kernel(ctx, *args):
    region = ctx.node.regions[0]
    return tuple(evaluate(region, list(args), ctx.resources, ctx.counters))


# ----------------------------------------------------------------------- helpers

def traced(fn, *arrays) -> Graph:
    return tw.compile(fn).get_concrete_function(*arrays).graph


def run(graph: Graph, *args, resources=None) -> list[np.ndarray]:
    return ReferenceExecutable(graph, resources or ResourceManager())(*args)


def ops(graph: Graph) -> list[str]:
    return [n.op for n in graph.nodes]


def applied(pass_fn, graph: Graph, **kwargs) -> Graph:
    """`pass_fn` applied to a copy of `graph`, checked by the verifier."""
    g = graph.copy()
    result = pass_fn(g, **kwargs)
    g = result if result is not None else g
    verify(g, after=pass_fn.__name__)
    return g


def assert_same_results(before, after) -> None:
    assert len(before) == len(after)
    for b, a in zip(before, after):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def const(g: Graph, value, **kwargs) -> Node:
    return g.add_node("Const", [], {"value": np.asarray(value)}, **kwargs)


def f32(*shape) -> TensorType:
    return TensorType("f32", shape)


# ------------------------------------------------------------------ the pipeline

def test_optimized_stage_is_registered_after_traced():
    names = stage_names()
    assert names.index("optimized") == names.index("traced") + 1


def test_run_pipeline_works_on_a_copy_and_keeps_results():
    def f(x):
        y = x * tw.constant(2.0) * tw.constant(3.0)
        unused = x - 1.0  # noqa: F841
        return x * 1.0 + y + y, tw.constant(1.0) + tw.constant(2.0)

    x = np.arange(6, dtype=F32).reshape(2, 3)
    g = traced(f, x)
    snapshot = [(n, n.op, list(n.inputs), [v.type for v in n.outputs], list(n.control_inputs))
                for n in g.nodes]
    results = list(g.results)
    out = run_pipeline(g, "optimized")
    assert [(n, n.op, list(n.inputs), [v.type for v in n.outputs], list(n.control_inputs))
            for n in g.nodes] == snapshot
    assert g.results == results
    assert len(out.nodes) < len(g.nodes) and not set(out.nodes) & set(g.nodes)
    assert_same_results(run(g, x), run(out, x))
    assert tw.compile(f)(x)[1] == 3.0


# ----------------------------------------------------------------- shape inference

def test_specialize_refines_every_type_and_leaves_the_input_alone():
    @tw.compile(input_signature=[tw.TensorSpec([None, 3], tw.float32)])
    def f(x):
        return tw.reduce_sum(x * 2.0, axis=1), tw.transpose(x)

    g = f.get_concrete_function().graph
    s = specialize(g, [f32(4, 3)])
    verify(s)
    assert [v.type for v in s.results] == [f32(4), f32(3, 4)]
    assert [v.type for v in g.results] == [f32(None), f32(3, None)]
    by_name = specialize(g, {"x": tw.TensorSpec([5, None], tw.float32)})
    assert by_name.args[0].type == f32(5, 3)
    assert specialize(g, [None]).args[0].type == f32(None, 3)


def test_specialize_rejects_conflicting_types():
    g = Graph("g")
    x = g.add_arg(f32(None, 3), "x")
    g.set_results([g.add_node("Identity", [x]).outputs[0]])
    with pytest.raises(tw.errors.ShapeError, match=r"argument 'x'.*f32\[\?,3\] to f32\[2,4\]"):
        specialize(g, [f32(2, 4)])
    with pytest.raises(tw.errors.DTypeError, match="argument 'x'"):
        specialize(g, [TensorType("f64", [2, 3])])
    with pytest.raises(tw.errors.VerificationError, match="takes 1 arguments"):
        specialize(g, [])
    with pytest.raises(tw.errors.VerificationError, match="no argument named 'y'"):
        specialize(g, {"y": f32(2, 3)})


def test_infer_shapes_merges_stated_and_inferred_types():
    g = Graph("g")
    x = g.add_arg(f32(None, 3), "x")
    ident = g.add_node("Identity", [x], output_types=[f32(2, None)])
    neg = g.add_node("Neg", [ident.outputs[0]])
    g.set_results([neg.outputs[0]])
    infer_shapes(g)
    verify(g)
    assert ident.outputs[0].type == f32(2, 3) and neg.outputs[0].type == f32(2, 3)


def test_infer_shapes_names_op_node_and_location_on_inconsistency():
    g = Graph("g")
    x = g.add_arg(f32(3), "x")
    y = g.add_arg(f32(3), "y")
    add = g.add_node("Add", [x, y], name="total", loc=SourceLoc("model.py", 12))
    g.set_results([add.outputs[0]])
    y.type = f32(4)
    with pytest.raises(tw.errors.ShapeError) as err:
        infer_shapes(g)
    assert "Add 'total' (model.py:12)" in str(err.value)
    y.type = TensorType("i32", [3])
    with pytest.raises(tw.errors.DTypeError, match="Add 'total'"):
        infer_shapes(g)
    y.type = f32(3)
    add.outputs[0].type = f32(5)
    with pytest.raises(tw.errors.ShapeError, match=r"output 0 has type f32\[5\] in the IR"):
        infer_shapes(g)


def test_infer_shapes_refines_inside_regions():
    g, region = _call_graph(f32(None))
    region.args[0].type = f32(3)
    infer_shapes(g)
    verify(g)
    assert region.results[0].type == f32(3) and g.results[0].type == f32(3)


# ---------------------------------------------------------------- constant folding

def test_constant_subgraph_folds_to_one_const():
    def f(x):
        c = (tw.constant(2.0) * tw.constant(3.0) + tw.constant(1.0)) * tw.constant([1.0, 2.0])
        return x * c

    x = np.array([1, 2], F32)
    g = traced(f, x)
    folded = applied(dce, applied(fold_constants, g))
    assert ops(folded) == ["Const", "Mul"]
    const_node = folded.nodes[0]
    assert const_node.attrs["value"].tolist() == [7.0, 14.0]
    assert not const_node.attrs["value"].flags.writeable
    assert_same_results(run(g, x), run(folded, x))


def test_folded_const_keeps_name_location_and_device():
    g = Graph("g")
    a = const(g, np.ones(2, F32))
    loc = SourceLoc("model.py", 7)
    neg = g.add_node("Neg", [a.outputs[0]], name="negated", device="/cpu:0", loc=loc)
    g.set_results([neg.outputs[0]])
    folded = applied(fold_constants, g)
    new = folded.results[0].producer
    assert (new.op, new.name, new.loc, new.device) == ("Const", "negated", loc, "/cpu:0")
    assert new.attrs["value"].tolist() == [-1.0, -1.0]


def test_folding_respects_the_size_limit():
    g = Graph("g")
    a = const(g, np.ones((1024, 1), F32))
    b = const(g, np.ones((1, 1025), F32))
    add = g.add_node("Add", [a.outputs[0], b.outputs[0]])
    g.set_results([add.outputs[0]])
    assert "Add" in ops(applied(fold_constants, g))  # 1,049,600 elements > 2**20
    small = Graph("small")
    c = const(small, np.ones((2, 2), F32))
    small.set_results([small.add_node("Neg", [c.outputs[0]]).outputs[0]])
    assert "Neg" in ops(applied(fold_constants, small, max_elements=3))
    assert "Neg" not in ops(applied(fold_constants, small, max_elements=4))


def test_folding_leaves_state_context_and_failing_kernels_alone():
    v = tw.Variable(np.ones(2, F32), name="fold_state")

    def f():
        r = v.read_value() + 0.5
        drawn = apply_op1("PassesTestDraw", [tw.constant(1.0)])
        failing = apply_op1("PassesTestFails", [tw.constant(1.0)])
        assign = v.assign_add(tw.constant([1.0, 1.0]), read_value=False)  # noqa: F841
        with tw.control_dependencies([v.read_value()]):
            after = tw.constant(2.0) * tw.constant(3.0)
        return r, drawn, failing, after

    g = traced(f)
    folded = applied(fold_constants, g)
    assert {"ReadVariable", "PassesTestDraw", "PassesTestFails", "Mul"} <= set(ops(folded))
    with pytest.raises(tw.errors.InvalidArgumentError, match="PassesTestFails"):
        run(folded, resources=_resources_with(v))


def test_folding_inside_a_region_uses_outer_constants():
    g = Graph("g")
    x = g.add_arg(f32(2), "x")
    two = const(g, np.full(2, 2, F32))
    region = Graph("body")
    rx = region.add_arg(f32(2), "rx")
    three = region.add_node("Add", [two.outputs[0], const(region, np.ones(2, F32)).outputs[0]])
    region.set_results([region.add_node("Mul", [rx, three.outputs[0]]).outputs[0]])
    call = g.add_node("PassesTestCall", [x], regions=[region])
    g.set_results([call.outputs[0]])
    folded = applied(dce, applied(fold_constants, g))
    body = folded.nodes[-1].regions[0]
    assert ops(body) == ["Const", "Mul"] and ops(folded) == ["PassesTestCall"]
    assert run(folded, np.array([1, 2], F32))[0].tolist() == [3.0, 6.0]


# ----------------------------------------------------------- algebraic identities

def _binary_graph(op, x_type, c_value, const_first=False):
    g = Graph("g")
    x = g.add_arg(x_type, "x")
    c = const(g, c_value).outputs[0]
    node = g.add_node(op, [c, x] if const_first else [x, c])
    g.set_results([node.outputs[0]])
    return g


@pytest.mark.parametrize("op,neutral,const_first", [
    ("Mul", 1, False), ("Mul", 1, True), ("Add", -0.0, False), ("Add", -0.0, True),
    ("Sub", 0.0, False)])
def test_neutral_operand_is_removed_only_without_broadcast(op, neutral, const_first):
    x = np.arange(6, dtype=F32).reshape(2, 3)
    for c_value in (F32(neutral), np.full((1, 3), neutral, F32)):
        g = _binary_graph(op, f32(2, 3), c_value, const_first)
        simplified = applied(fold_constants, g)
        assert simplified.results[0] is simplified.args[0]
        assert_same_results(run(g, x), run(simplified, x))
    # x is f32[3]: the constant broadcasts it to [2,3], so the op stays.
    g = _binary_graph(op, f32(3), np.full((2, 3), neutral, F32), const_first)
    assert op in ops(applied(fold_constants, g))
    # not a neutral value
    g = _binary_graph(op, f32(2, 3), F32(2), const_first)
    assert op in ops(applied(fold_constants, g))


def test_neutral_operand_with_unknown_dims():
    g = _binary_graph("Mul", f32(None, 3), np.ones((1, 3), F32))
    assert ops(applied(dce, applied(fold_constants, g))) == []
    g = _binary_graph("Mul", f32(None), np.ones(3, F32))  # would fix the unknown dim
    assert "Mul" in ops(applied(fold_constants, g))


@pytest.mark.parametrize("op,zero,const_first", [
    ("Add", 0.0, False), ("Add", 0.0, True), ("Sub", -0.0, False)])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_a_zero_that_changes_the_sign_of_minus_zero_is_kept(op, zero, const_first, dtype):
    """-0.0 + 0.0 is +0.0 and -0.0 - (-0.0) is +0.0: those ops are not identities, and
    removing them made 1 / (x + 0.0) -inf where the graph's own arithmetic gives +inf."""
    x = np.array([-0.0, 0.0, -1.5], dtype)
    g = _binary_graph(op, TensorType(as_dtype(dtype), (3,)), dtype(zero), const_first)
    simplified = applied(fold_constants, g)
    assert op in ops(simplified)
    want = x + zero if op == "Add" else x - zero
    got = run(simplified, x)[0]
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert np.signbit(want).tolist() == [False, False, True]  # -0.0 became +0.0


def test_integer_zero_is_neutral_in_add():
    g = applied(fold_constants,
                _binary_graph("Add", TensorType(as_dtype(np.int32), (3,)), np.int32(0), True))
    assert g.results[0] is g.args[0]


def test_zero_minus_x_is_kept():
    g = _binary_graph("Sub", f32(3), F32(0), const_first=True)
    assert "Sub" in ops(applied(fold_constants, g))


def test_identity_chains_collapse_unless_ordered_or_placed():
    v = tw.Variable(np.zeros(2, F32), name="ident_order")

    def f(x):
        chain = tw.identity(tw.identity(tw.identity(x)))
        assign = v.assign(x, read_value=False)  # noqa: F841
        with tw.control_dependencies([v.read_value()]):
            ordered = tw.identity(x)
        with tw.device("/device:CPU:1"):
            placed = tw.identity(x)
        return chain, ordered, placed

    x = np.array([1, 2], F32)
    g = traced(f, x)
    simplified = applied(dce, applied(fold_constants, g))
    chain, ordered, placed = simplified.results
    assert chain is simplified.args[0]
    assert ordered.producer.op == "Identity" and ordered.producer.control_inputs
    assert placed.producer.op == "Identity" and placed.producer.device == "/device:CPU:1"
    assert ops(simplified).count("Identity") == 2
    assert_same_results(run(g, x, resources=_resources_with(v)),
                        run(simplified, x, resources=_resources_with(v)))


def test_control_edges_on_a_removed_identity_move_to_its_input():
    g = Graph("g")
    x = g.add_arg(f32(2), "x")
    neg = g.add_node("Neg", [x])
    ident = g.add_node("Identity", [neg.outputs[0]])
    later = g.add_node("Identity", [x], control_inputs=[ident])
    g.set_results([ident.outputs[0], later.outputs[0]])
    fold_constants(g)
    verify(g)
    assert later.control_inputs == [neg]
    assert g.results[0] is neg.outputs[0]


def test_double_neg_same_cast_reshape_and_identity_transpose_vanish():
    def f(x):
        return (tw.negative(tw.negative(x)), tw.cast(x, tw.float32),
                tw.reshape(x, [2, 3]), tw.transpose(x, [0, 1]))

    def kept(x):
        return (tw.negative(x), tw.cast(x, tw.float64), tw.reshape(x, [3, 2]),
                tw.transpose(x, [1, 0]))

    x = np.arange(6, dtype=F32).reshape(2, 3)
    g = traced(f, x)
    simplified = applied(dce, applied(fold_constants, g))
    assert simplified.nodes == [] and all(r is simplified.args[0] for r in simplified.results)
    assert_same_results(run(g, x), run(simplified, x))
    g = traced(kept, x)
    assert ops(applied(dce, applied(fold_constants, g))) == ["Neg", "Cast", "Reshape", "Transpose"]


def test_reshape_with_one_unknown_dim_to_the_same_type_vanishes():
    @tw.compile(input_signature=[tw.TensorSpec([None, 3], tw.float32)])
    def f(x):
        return tw.reshape(x, [-1, 3])

    g = f.get_concrete_function().graph
    simplified = applied(fold_constants, g)
    assert simplified.results[0] is simplified.args[0]


# ------------------------------------------------------------------------------ CSE

def test_cse_merges_duplicate_expressions_and_constants():
    def f(x, y):
        a = x * y + tw.constant(2.0)
        b = x * y + tw.constant(2.0)
        return a - b, tw.exp(a) + tw.exp(b)

    x, y = np.array([1, 2], F32), np.array([3, 4], F32)
    g = traced(f, x, y)
    merged = applied(cse, g)
    assert ops(merged).count("Mul") == 1 and ops(merged).count("Const") == 1
    assert ops(merged).count("Add") == 2 and ops(merged).count("Exp") == 1
    assert_same_results(run(g, x, y), run(merged, x, y))


def test_cse_compares_constants_exactly():
    g = Graph("g")
    values = [np.float32(0.0), np.float32(-0.0), np.float32(np.nan), np.float32(np.nan),
              np.array([1], np.int32), np.array([1], np.int64), np.array([[1]], np.int32),
              np.array([1], np.int32)]
    nodes = [const(g, v) for v in values]
    g.set_results([n.outputs[0] for n in nodes])
    merged = applied(cse, g)
    assert len(merged.nodes) == 6  # the two NaNs and the two i32[1] merge
    assert merged.results[2] is merged.results[3] and merged.results[4] is merged.results[7]
    assert merged.results[0] is not merged.results[1]


def test_attr_key_is_exact():
    assert attr_key(float("nan")) == attr_key(float("nan"))
    assert attr_key(0.0) != attr_key(-0.0)
    assert attr_key(True) != attr_key(1) and attr_key(1) != attr_key(1.0)
    assert attr_key((1, 2)) == attr_key([1, 2]) and attr_key((1, 2)) != attr_key((2, 1))
    assert attr_key(np.zeros(2, F32)) != attr_key(np.zeros((1, 2), F32))
    assert attr_key(np.zeros(2, F32)) != attr_key(np.zeros(2, np.int32))
    assert attr_key(tw.float32) != attr_key(tw.float64)


def test_cse_keeps_random_and_stateful_ops_apart():
    v = tw.Variable(np.zeros(2, F32), name="cse_state")

    def f():
        one = tw.constant(1.0)
        drawn = (apply_op1("PassesTestDraw", [one]),
                 apply_op1("PassesTestDraw", [one]))
        before = v.read_value()
        v.assign_add(tw.constant([1.0, 1.0]), read_value=False)
        after = v.read_value()
        return drawn, before, after

    g = traced(f)
    merged = applied(cse, g)
    assert ops(merged).count("PassesTestDraw") == 2 and ops(merged).count("ReadVariable") == 2
    drawn0, drawn1, before, after = run(merged, resources=_resources_with(v))
    assert drawn0 == 1.0 and drawn1 == 1.0  # each node counts its own calls
    assert before.tolist() == [0.0, 0.0] and after.tolist() == [1.0, 1.0]


@pytest.mark.skipif("RandomUniform" not in all_ops(), reason="no random ops")
def test_random_ops_are_neither_merged_nor_folded():
    g = Graph("g")
    draws = [g.add_node("RandomUniform", [], {"shape": (3,), "seed": 7, "seed2": 1})
             for _ in range(2)]
    g.set_results([g.add_node("Identity", [d.outputs[0]]).outputs[0] for d in draws])
    optimized = run_pipeline(g, "optimized")
    assert ops(optimized) == ["RandomUniform", "RandomUniform"]
    assert_same_results(run(g), run(optimized))


def _resources_with(var: tw.Variable) -> ResourceManager:
    rm = ResourceManager()
    rm.create_variable(var.shared_name, var.dtype, var.shape).assign(var.numpy())
    return rm


def test_cse_merges_var_handles_and_redirects_control_edges():
    g = Graph("g")
    attrs = {"shared_name": "w", "dtype": tw.float32, "shape": (2,)}
    h1, h2 = g.add_node("VarHandle", [], attrs), g.add_node("VarHandle", [], attrs)
    other = g.add_node("VarHandle", [], {**attrs, "shared_name": "u"})
    r1 = g.add_node("ReadVariable", [h1.outputs[0]])
    r2 = g.add_node("ReadVariable", [h2.outputs[0]], control_inputs=[h2, r1])
    r3 = g.add_node("ReadVariable", [other.outputs[0]])
    g.set_results([r1.outputs[0], r2.outputs[0], r3.outputs[0]])
    cse(g)
    verify(g)
    assert ops(g).count("VarHandle") == 2
    assert r2.inputs[0] is h1.outputs[0] and r2.control_inputs == [h1, r1]
    assert isinstance(r2.inputs[0].type, ResourceType)


def test_cse_respects_control_inputs_and_devices():
    g = Graph("g")
    x = g.add_arg(f32(2), "x")
    n = g.add_node("Neg", [x])
    plain = g.add_node("Identity", [x])
    ordered = g.add_node("Identity", [x], control_inputs=[n])
    ordered_too = g.add_node("Identity", [x], control_inputs=[n])
    placed = g.add_node("Identity", [x], device="/device:CPU:1")
    g.set_results([v.outputs[0] for v in (n, plain, ordered, ordered_too, placed)])
    merged = applied(cse, g)
    assert merged.results[3] is merged.results[2]
    assert len({id(r) for r in merged.results}) == 4


def test_cse_is_linear_on_wide_graphs():
    g = Graph("wide")
    x = g.add_arg(f32(2), "x")
    layer = [g.add_node("Neg", [x]).outputs[0] for _ in range(3000)]
    layer = [g.add_node("Identity", [v]).outputs[0] for v in layer]
    g.set_results(layer)
    cse(g)
    assert len(g.nodes) == 2 and len(set(g.results)) == 1


def test_cse_inside_regions():
    g, region = _call_graph(f32(2), duplicate=True)
    assert ops(region).count("Neg") == 2
    merged = applied(cse, g)
    assert ops(merged.nodes[-1].regions[0]).count("Neg") == 1
    x = np.array([1, 2], F32)
    assert_same_results(run(g, x), run(merged, x))


# ------------------------------------------------------------------------------ DCE

def test_dce_removes_unused_nodes_but_keeps_assignments_and_their_inputs():
    v = tw.Variable(np.zeros(2, F32), name="dce_assign")

    def f(x):
        unused = tw.exp(x) * 3.0  # noqa: F841
        v.assign(x + 1.0, read_value=False)
        return x

    x = np.array([1, 2], F32)
    g = traced(f, x)
    pruned = applied(dce, g)
    assert "Exp" not in ops(pruned) and "Mul" not in ops(pruned)
    assert {"AssignVariable", "Add", "VarHandle", "Const"} <= set(ops(pruned))
    rm = _resources_with(v)
    assert_same_results(run(g, x, resources=_resources_with(v)), run(pruned, x, resources=rm))
    assert rm.variable(v.shared_name).read().tolist() == [2.0, 3.0]


def test_dce_keeps_control_inputs_of_live_nodes_and_drops_dead_chains():
    g = Graph("g")
    x = g.add_arg(f32(2), "x")
    first = g.add_node("Neg", [x])
    live = g.add_node("Identity", [x], control_inputs=[first])
    dead = g.add_node("Exp", [x])
    dead_after = g.add_node("Identity", [x], control_inputs=[dead])
    g.set_results([live.outputs[0]])
    dce(g)
    verify(g)
    assert g.nodes == [first, live] and dead_after.control_inputs == [dead]


def test_dce_cleans_regions_and_keeps_what_they_capture():
    g = Graph("g")
    x = g.add_arg(f32(2), "x")
    captured = const(g, np.ones(2, F32))
    g.add_node("Exp", [x])  # dead
    region = Graph("body")
    rx = region.add_arg(f32(2), "rx")
    neg = region.add_node("Neg", [rx])
    region.add_node("Exp", [rx])  # dead inside the region
    region.set_results([region.add_node("Add", [neg.outputs[0], captured.outputs[0]]).outputs[0]])
    g.set_results([g.add_node("PassesTestCall", [x], regions=[region]).outputs[0]])
    dce(g)
    verify(g)
    assert ops(g) == ["Const", "PassesTestCall"] and ops(region) == ["Neg", "Add"]


def test_dce_keeps_a_region_that_assigns():
    v = tw.Variable(np.zeros(2, F32), name="dce_region")
    g = Graph("g")
    x = g.add_arg(f32(2), "x")
    region = Graph("body")
    rx = region.add_arg(f32(2), "rx")
    handle = region.add_node("VarHandle", [], {"shared_name": v.shared_name, "dtype": tw.float32,
                                               "shape": (2,)})
    region.add_node("AssignVariable", [handle.outputs[0], rx])
    region.set_results([rx])
    g.add_node("PassesTestCall", [x], regions=[region])
    g.set_results([x])
    pruned = applied(dce, g)
    assert ops(pruned) == ["PassesTestCall"]
    rm = _resources_with(v)
    run(pruned, np.array([5, 6], F32), resources=rm)
    assert rm.variable(v.shared_name).read().tolist() == [5.0, 6.0]


def _call_graph(arg_type: TensorType, duplicate: bool = False) -> tuple[Graph, Graph]:
    """``PassesTestCall(x)`` whose region returns ``-rx`` (plus a second ``-rx`` added to
    the first when `duplicate`)."""
    g = Graph("g")
    x = g.add_arg(arg_type, "x")
    region = Graph("body")
    rx = region.add_arg(arg_type, "rx")
    out = region.add_node("Neg", [rx]).outputs[0]
    if duplicate:
        out = region.add_node("Add", [out, region.add_node("Neg", [rx]).outputs[0]]).outputs[0]
    region.set_results([out])
    call = g.add_node("PassesTestCall", [x], regions=[region])
    g.set_results([call.outputs[0]])
    return g, region


# -------------------------------------------------- random graphs: results unchanged

_CONSTS = [F32(0), F32(1), F32(-0.0), F32(2.5), F32(np.nan), np.ones(3, F32), np.zeros((2, 1), F32),
           np.array([[1, -2, 0]], F32), np.full((2, 3), 1, F32)]
_BINARY = [op for op in ("Add", "Sub", "Mul") if op in all_ops()]
_UNARY = [op for op in ("Neg", "Identity") if op in all_ops()]


@st.composite
def random_graphs(draw):
    g = Graph("random")
    pool = [g.add_arg(f32(2, 3), "x"), g.add_arg(f32(3), "y")]
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["const", "unary", "binary", "binary", "shape"]))
        if kind == "const":
            pool.append(const(g, draw(st.sampled_from(_CONSTS))).outputs[0])
        elif kind == "unary" or not _BINARY:
            op = draw(st.sampled_from(_UNARY))
            pool.append(g.add_node(op, [draw(st.sampled_from(pool))]).outputs[0])
        elif kind == "binary":
            a, b = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
            try:
                pool.append(g.add_node(draw(st.sampled_from(_BINARY)), [a, b]).outputs[0])
            except tw.errors.ShapeError:
                continue
        else:
            pool.append(_shape_op(g, draw(st.sampled_from(pool)), draw(st.booleans())))
    results = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
    g.set_results(results)
    return g


def _shape_op(g: Graph, v, identity: bool):
    """A Transpose, Reshape or Cast that is (or is not) an identity on `v`."""
    rank = v.type.rank
    if rank == 2 and "Transpose" in all_ops():
        return g.add_node("Transpose", [v], {"perm": (0, 1) if identity else (1, 0)}).outputs[0]
    if "Reshape" in all_ops():
        shape = v.type.shape if identity else (-1,)
        return g.add_node("Reshape", [v], {"shape": shape}).outputs[0]
    return g.add_node("Cast", [v], {"dtype": tw.float32}).outputs[0]


@given(random_graphs())
def test_optimized_graph_computes_the_same_results(g):
    x = np.array([[1, -0.0, np.inf], [0.5, -3, np.nan]], F32)
    y = np.array([2, 0, -1], F32)
    before = run(g, x, y)
    optimized = run_pipeline(g, "optimized")
    assert len(optimized.nodes) <= len(g.nodes)
    assert not any(n.op == "Identity" for n in optimized.nodes)
    assert_same_results(before, run(optimized, x, y))
    assert_same_results(before, run(g, x, y))  # the input graph is untouched
