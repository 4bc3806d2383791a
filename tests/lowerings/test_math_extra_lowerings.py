"""Native code for issue 14's elementwise ops (`targets/cpu/elementwise.py`): each one,
alone and fused with others, against its reference kernel on special values (NaN, +-inf,
+-0, exact halves, values outside the inverse functions' domains, overflow), in float32
and float64, and the fused clusters really run natively."""

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.compiler import Graph, TensorType
from tensorweave.compiler.pipeline import compile_graph, run_pipeline
from tensorweave.targets.cpu import native_nodes
from tests.helpers import assert_same

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5,
                    2.5, -2.5, 0.49999997, 0.999, -0.999, 1.001, 1e-30, 1e30, 100.0, -100.0])
VALUES = np.concatenate([SPECIAL, np.linspace(-30, 30, 61), np.arange(-16, 17) / 4])


def _graph(op: str, dtypes) -> Graph:
    g = Graph(op)
    args = [g.add_arg(TensorType(d, (n,))) for d, n in dtypes]
    g.set_results([g.add_node(op, args).outputs[0]])
    return g


def _check_native(graph: Graph) -> None:
    lowered = run_pipeline(graph, target="cpu")
    fusions = [n for n in lowered.nodes if n.op == "Fusion"]
    assert fusions and set(native_nodes(lowered)) >= set(fusions)


# libm and NumPy's own float32 kernels may differ by a few ulp; float64 calls the same libm
TOL = {F32: {"rtol": 1e-6, "atol": 0}, F64: {"rtol": 1e-15, "atol": 0}}


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
@pytest.mark.parametrize("op", ["Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Round",
                                "IsNan", "IsInf", "IsFinite"])
def test_unary_native_code_matches_the_reference_kernel(op, dtype):
    x = VALUES.astype(dtype)
    g = _graph(op, [(dtype, x.size)])
    _check_native(g)
    with np.errstate(all="ignore"):
        ref = compile_graph(g, "reference")(x)
    cpu = compile_graph(g, "cpu")(x)
    assert_same(cpu[0], ref[0], **TOL[dtype])


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_atan2_native_code_matches_the_reference_kernel(dtype):
    y = np.repeat(SPECIAL, SPECIAL.size).astype(dtype)
    x = np.tile(SPECIAL, SPECIAL.size).astype(dtype)
    g = _graph("Atan2", [(dtype, y.size), (dtype, x.size)])
    _check_native(g)
    ref, cpu = compile_graph(g, "reference")(y, x), compile_graph(g, "cpu")(y, x)
    assert_same(cpu[0], ref[0], **TOL[dtype])


def test_round_of_integers_is_native_and_exact():
    x = np.array([-7, 0, 3, 2**31 - 1], np.int32)
    g = _graph("Round", [(np.int32, 4)])
    _check_native(g)
    np.testing.assert_array_equal(compile_graph(g, "cpu")(x)[0], x)


def test_new_ops_fuse_with_others_into_one_native_kernel():
    def f(x, y):
        z = tw.atan2(tw.sinh(x), tw.cosh(y)) + tw.round(x * 2.5) - tw.tan(tw.atan(y))
        return tw.where(tw.is_finite(z), z, tw.zeros_like(z)), tw.reduce_sum(
            tw.asin(tw.clip_by_value(x, -1.0, 1.0)) + tw.acos(x * 0.0), axis=-1)

    x = np.linspace(-3, 3, 40).reshape(5, 8).astype(np.float32)
    y = np.linspace(-1, 1, 40).reshape(5, 8).astype(np.float32)
    graph = run_pipeline(tw.compile(f).get_concrete_function(x, y).graph, target="cpu")
    fusions = [n for n in graph.nodes if n.op == "Fusion"]
    assert fusions and set(native_nodes(graph)) >= set(fusions)
    ops = {m.op for n in fusions for m in n.regions[0].nodes}
    assert {"Atan2", "Sinh", "Cosh", "Round", "Tan", "Atan", "IsFinite", "Asin", "Acos"} <= ops
    for got, want in zip(tw.compile(f, target="cpu")(x, y),
                         tw.compile(f, target="reference")(x, y)):
        assert_same(got, want, rtol=1e-6, atol=1e-6)
