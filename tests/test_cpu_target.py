"""The cpu target: generated code against the reference target.

Random graphs of elementwise ops and trailing reductions (static and unknown dims,
broadcasting, every fused dtype) must give the reference target's results; special
values (NaN, inf, -0, integer extremes) must follow NumPy; errors in native code must
be the reference's errors, naming the op and this file's line; float32 sums over 10^6
elements must not drift; the generated elementwise loop must be vector code; MatMul goes
through BLAS; kernels are compiled once per layout."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tensorweave.compiler import Graph, TensorType
from tensorweave.compiler.dtypes import float32
from tensorweave.compiler.pipeline import compile_graph, run_pipeline
from tensorweave.targets.cpu import jit, native_nodes
from tensorweave.targets.cpu.codegen import Instr, Layout, Program, build_kernel
from tests.helpers import assert_same, line_of

F32, F64, I32, I64 = (np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64))

SMOOTH_UNARY = ["Neg", "Abs", "Square", "Relu", "Exp", "Tanh", "Sigmoid", "Sin", "Cos"]
SMOOTH_BINARY = ["Add", "Sub", "Mul", "Maximum", "Minimum", "SquaredDifference"]
INT_UNARY = ["Neg", "Abs", "Square", "Sign", "Relu"]
INT_BINARY = ["Add", "Sub", "Mul", "Maximum", "Minimum", "SquaredDifference", "Div",
              "FloorDiv", "FloorMod"]
COMPARISONS = ["Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"]
REDUCTIONS = ["Sum", "Mean", "Max", "Min", "Prod"]


def run_both(graph: Graph, *arrays):
    """(reference results or error, cpu results or error) of `graph` on `arrays`."""
    out = []
    for target in ("reference", "cpu"):
        try:
            out.append(compile_graph(graph, target)(*arrays))
        except tw.errors.InvalidArgumentError as e:
            out.append(e)
    return out


def assert_close(got, want, dtype) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    finite = np.abs(want[np.isfinite(want)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    rtol = 2e-4 if np.dtype(dtype) == F32 else 1e-10
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale, equal_nan=True)


# ----------------------------------------------------------------------- random graphs

@st.composite
def random_graphs(draw):
    """A graph of 1-7 elementwise ops over 1-3 broadcastable inputs, maybe reduced over
    its trailing axes at the end, and arrays to run it on."""
    dtype = draw(st.sampled_from([F32, F64, I32, I64]))
    n_in = draw(st.integers(1, 3))
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=n_in, min_dims=0, max_dims=3,
                                                    min_side=0, max_side=5)).input_shapes
    dynamic = draw(st.booleans())
    g = Graph("random")
    values = [g.add_arg(TensorType(dtype, [None] * len(s) if dynamic else s), f"x{i}")
              for i, s in enumerate(shapes)]
    is_float = dtype.kind == "f"
    unary, binary = (SMOOTH_UNARY, SMOOTH_BINARY) if is_float else (INT_UNARY, INT_BINARY)
    for _ in range(draw(st.integers(1, 7))):
        kind = draw(st.sampled_from(["unary", "binary", "binary", "select"]))
        pick = st.sampled_from(values)
        if kind == "unary":
            node = g.add_node(draw(st.sampled_from(unary)), [draw(pick)])
        elif kind == "binary":
            node = g.add_node(draw(st.sampled_from(binary)), [draw(pick), draw(pick)])
        else:  # a comparison of two inputs picks one of two values (comparing computed
            # values would turn last-bit differences, FMA contraction, into different picks)
            args = st.sampled_from(values[:n_in])
            cond = g.add_node(draw(st.sampled_from(COMPARISONS)), [draw(args), draw(args)])
            node = g.add_node("Select", [cond.outputs[0], draw(pick), draw(pick)])
        values.append(node.outputs[0])
    results = [values[-1]]
    last = values[-1].type
    if last.rank and draw(st.booleans()):
        k = draw(st.integers(1, last.rank))
        red = g.add_node(draw(st.sampled_from(REDUCTIONS)), [values[-1]],
                         {"axes": list(range(-k, 0)), "keepdims": draw(st.booleans())})
        results.append(red.outputs[0])
    if draw(st.booleans()) and len(values) > n_in + 1:  # an intermediate used outside too
        results.append(values[n_in])
    g.set_results(results)
    lo, hi = (-3, 3) if is_float else (-6, 6)
    elements = st.floats(lo, hi, width=8 * dtype.itemsize) if is_float else st.integers(lo, hi)
    arrays = [draw(hnp.arrays(dtype, s, elements=elements)) for s in shapes]
    return g, arrays


@given(random_graphs())
def test_random_graphs_match_the_reference_target(case):
    graph, arrays = case
    ref, cpu = run_both(graph, *arrays)
    if isinstance(ref, Exception):
        # Both must fail. With several failing ops, which error comes first depends on the
        # order a target runs them in (the cpu target runs fused clusters in its own
        # order), so the message is only required to name an op and say what failed.
        assert isinstance(cpu, tw.errors.InvalidArgumentError), cpu
        assert "'" in str(cpu) and ":" in str(cpu), cpu
        return
    assert not isinstance(cpu, Exception), cpu
    for got, want in zip(cpu, ref):
        assert_close(got, want, arrays[0].dtype)


def test_random_graph_fusions_are_native():
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)

    def f(x):
        return tw.reduce_sum(tw.tanh(x * 2.0 + 1.0), axis=-1), tw.exp(x) - x

    graph = run_pipeline(tw.compile(f).get_concrete_function(x).graph, target="cpu")
    fusions = [n for n in graph.nodes if n.op == "Fusion"]
    assert fusions and set(native_nodes(graph)) >= set(fusions)


# ------------------------------------------------------------------ special values

SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 3.0, -7.0,
                    1e-30, 1e30], np.float64)


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("op", ["Maximum", "Minimum", "FloorDiv", "FloorMod", "Div", "Pow",
                                "Equal", "NotEqual", "Less", "GreaterEqual"])
def test_binary_special_values_follow_numpy(op, dtype):
    x = np.repeat(SPECIAL, SPECIAL.size).astype(dtype)
    y = np.tile(SPECIAL, SPECIAL.size).astype(dtype)
    g = Graph("special")
    a, b = g.add_arg(TensorType(dtype, x.shape)), g.add_arg(TensorType(dtype, y.shape))
    g.set_results([g.add_node(op, [a, b]).outputs[0]])
    ref, cpu = run_both(g, x, y)
    assert_same(cpu[0], ref[0], rtol=1e-6 if dtype == F32 else 1e-14, atol=0)


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("op", ["Sign", "Relu", "Abs", "Floor", "Ceil", "Sqrt", "Exp", "Log",
                                "Log1p", "Tanh", "Sigmoid", "Reciprocal", "Rsqrt"])
def test_unary_special_values_follow_numpy(op, dtype):
    x = np.concatenate([SPECIAL, np.linspace(-30, 30, 61), [1e-4, -1e-4, 0.5]]).astype(dtype)
    g = Graph("special")
    a = g.add_arg(TensorType(dtype, x.shape))
    g.set_results([g.add_node(op, [a]).outputs[0]])
    ref, cpu = run_both(g, x)
    assert_same(cpu[0], ref[0], rtol=4e-7 if dtype == F32 else 1e-15, atol=0)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8])
def test_integer_extremes_wrap_like_numpy(dtype):
    info = np.iinfo(dtype)
    vals = np.array(sorted(v for v in {info.min, info.min + 1, -7, -1, 0, 1, 7, info.max}
                           if info.min <= v <= info.max), dtype)
    x, y = np.repeat(vals, vals.size), np.tile(vals, vals.size)
    y_nonzero = np.where(y == 0, 3, y).astype(dtype)
    for op in ("Add", "Sub", "Mul", "Maximum", "Minimum", "FloorDiv", "FloorMod", "Div",
               "SquaredDifference"):
        g = Graph("ints")
        a, b = g.add_arg(TensorType(x.dtype, x.shape)), g.add_arg(TensorType(x.dtype, x.shape))
        g.set_results([g.add_node(op, [a, b]).outputs[0]])
        ref, cpu = run_both(g, x, y_nonzero)
        np.testing.assert_array_equal(cpu[0], ref[0], err_msg=op)
    for op in ("Neg", "Abs", "Square", "Sign", "Relu"):
        g = Graph("ints")
        a = g.add_arg(TensorType(x.dtype, x.shape))
        g.set_results([g.add_node(op, [a]).outputs[0]])
        ref, cpu = run_both(g, x)
        np.testing.assert_array_equal(cpu[0], ref[0], err_msg=op)


def test_casts_follow_numpy_on_this_machine():
    floats = np.array([0.0, -0.0, 0.7, -0.7, 2.5, -2.5, 127.9, -128.9, 1e3, -1e3, 3e9],
                      np.float32)
    ints = np.array([0, 1, -1, 127, -128, 255, 70000, -70000], np.int32)
    bools = np.array([True, False])
    for src in (floats, floats.astype(np.float64), ints, ints.astype(np.int64), bools):
        for dst in ("f32", "f64", "i8", "i16", "i32", "i64", "u8", "i1"):
            g = Graph("cast")
            a = g.add_arg(TensorType(src.dtype, src.shape))
            g.set_results([g.add_node("Cast", [a], {"dtype": dst}).outputs[0]])
            ref, cpu = run_both(g, src)
            if src.dtype.kind == "f" and dst in ("i8", "i16", "u8"):
                fits = np.abs(src) < 127  # out of range: NumPy's answer is platform-defined
                np.testing.assert_array_equal(cpu[0][fits], ref[0][fits])
            else:
                np.testing.assert_array_equal(cpu[0], ref[0], err_msg=f"{src.dtype} -> {dst}")


# ------------------------------------------------------------------------- reductions

def test_float32_sum_of_a_million_elements_does_not_drift():
    rng = np.random.default_rng(0)
    x = (rng.random(10 ** 6) + 100.0).astype(np.float32)  # naive f32 sums lose ~1e-4 here
    exact = np.sum(x.astype(np.float64))
    f = tw.compile(lambda x: (tw.reduce_sum(x), tw.reduce_mean(x),
                              tw.reduce_sum(x * x, axis=-1)), target="cpu")
    total, mean, squares = f(x)
    assert abs(float(total) - exact) <= np.spacing(np.float32(exact))
    assert abs(float(mean) - exact / x.size) <= np.spacing(np.float32(exact / x.size))
    exact_sq = np.sum(x.astype(np.float64) ** 2)
    assert abs(float(squares) - exact_sq) <= 2 * np.spacing(np.float32(exact_sq))


def test_float64_sum_of_a_million_elements_is_accurate():
    x = np.random.default_rng(1).standard_normal(10 ** 6) + 10.0
    exact = float(np.sum(x.astype(np.longdouble)))
    got = float(tw.compile(lambda x: tw.reduce_sum(x), target="cpu")(x))
    assert abs(got - exact) <= 1e-13 * abs(exact)


def test_reductions_over_rows_with_keepdims_and_empty_axes():
    f = tw.compile(lambda x: (tw.reduce_max(x, axis=-1, keepdims=True),
                              tw.reduce_prod(x, axis=[1, 2]), tw.reduce_all(x > 0.0, axis=-1),
                              tw.reduce_any(x > 1.5, axis=-1)), target="cpu")
    x = np.random.default_rng(2).random((4, 3, 37)).astype(np.float32) + 0.5
    for got, want in zip(f(x), (x.max(-1, keepdims=True), x.prod((1, 2)), (x > 0).all(-1),
                                (x > 1.5).any(-1))):
        assert_same(got, want, rtol=1e-5)
    empty = np.zeros((3, 0), np.float32)
    g = tw.compile(lambda x: (tw.reduce_sum(x, axis=-1), tw.reduce_mean(x, axis=-1),
                              tw.reduce_prod(x, axis=-1)), target="cpu")
    s, m, p = g(empty)
    assert_same(s, np.zeros(3, np.float32))
    assert np.isnan(m).all() and (p == 1).all()

    @tw.compile(target="cpu")
    def bad(x):
        return tw.reduce_max(x, axis=-1)

    with pytest.raises(tw.errors.InvalidArgumentError, match="no elements") as err:
        bad(empty)
    assert "Max" in str(err.value) and line_of(bad.python_function, "reduce_max") in str(err.value)


# ----------------------------------------------------------------------------- errors

def test_integer_division_by_zero_in_native_code_names_op_and_line():
    @tw.compile(target="cpu")
    def f(x, y):
        return tw.exp(tw.cast(x // y, tw.float32))

    x, y = np.arange(1, 41, dtype=np.int32), np.ones(40, np.int32)
    assert_same(f(x, y), np.exp(x.astype(np.float32)))
    y[33] = 0  # in the vector part and in the remainder of other sizes
    with pytest.raises(tw.errors.InvalidArgumentError, match="integer division by zero") as err:
        f(x, y)
    assert "FloorDiv" in str(err.value) and line_of(f.python_function, "x // y") in str(err.value)


def test_negative_integer_power_is_an_error():
    f = tw.compile(lambda x, y: tw.pow(x, y), target="cpu")
    assert_same(f(np.array([2, -3, 0], np.int64), np.array([10, 3, 0], np.int64)),
                np.array([1024, -27, 1], np.int64))
    with pytest.raises(tw.errors.InvalidArgumentError, match="negative integer powers"):
        f(np.array([2], np.int64), np.array([-1], np.int64))


def test_unknown_dims_are_checked_at_run_time():
    spec = tw.TensorSpec([None, None], tw.float32)
    f = tw.compile(lambda x, y: x * y + 1.0, input_signature=[spec, spec], target="cpu")
    a = np.ones((2, 3), np.float32)
    assert_same(f(a, np.full((1, 3), 2.0, np.float32)), np.full((2, 3), 3.0, np.float32))
    assert_same(f(a[:, :1], a), np.full((2, 3), 2.0, np.float32))
    with pytest.raises(tw.errors.InvalidArgumentError, match="broadcast"):
        f(a, np.ones((2, 4), np.float32))


def test_layouts_the_kernel_cannot_run_fall_back_to_the_reference_kernels():
    spec = tw.TensorSpec([None, None], tw.float32)

    @tw.compile(input_signature=[spec, spec, spec], target="cpu")
    def f(x, y, z):
        t = x + y
        return tw.reduce_sum(t, axis=-1), t * z  # t * z may outgrow the reduced loop

    x = np.arange(3, dtype=np.float32).reshape(1, 3)
    z = np.full((4, 3), 2.0, np.float32)
    total, product = f(x, x, z)  # runs the region with reference kernels
    assert_same(total, np.array([6.0], np.float32))
    assert_same(product, np.broadcast_to(4 * x, (4, 3)))
    total, product = f(x, x, z[:1])  # the native kernel
    assert_same(product, 4 * x)

    @tw.compile(target="cpu")
    def g(x, empty):
        m = tw.minimum(x, x)
        return m, empty * m  # an empty loop space must still compute m

    m, e = g(np.array([1.5], np.float32), np.zeros((0, 2), np.float32))
    assert_same(m, np.array([1.5], np.float32)) and assert_same(e, np.zeros((0, 2), np.float32))


# ---------------------------------------------------------------------- generated code

def test_elementwise_kernel_assembly_has_a_vector_loop():
    program = Program((float32, float32), (
        Instr("Mul", (), (0, 1), (float32, float32), float32),
        Instr("Add", (), (2, 0), (float32, float32), float32)), (3,))
    text = build_kernel(program, Layout(1, 0, ((True,), (True,), (True,))), width=8)
    asm = jit.assembly(text)
    packed = re.findall(r"\b(v(?:mul|add|fmadd\d*)ps)\b[^\n]*%[yz]mm", asm)
    assert packed, asm[:2000]


def test_steps_are_compiled_once_per_shape():
    """A step is native code specialized to its shapes: compiled once per shape, and a
    second function with the same ops and shapes reuses the same machine code."""
    def fn(x, y):
        return tw.sigmoid(x) * y - 3.0

    f, g = tw.compile(fn, target="cpu"), tw.compile(fn, target="cpu")
    for shape in [(2, 3), (9, 1), (4, 4, 4)]:
        a = np.random.default_rng(3).random(shape).astype(np.float32)
        assert_same(f(a, a), (1 / (1 + np.exp(-a))) * a - 3, rtol=1e-6)
        misses = jit.STATS.misses
        assert_same(f(a, a), (1 / (1 + np.exp(-a))) * a - 3, rtol=1e-6)
        assert_same(g(a, a), (1 / (1 + np.exp(-a))) * a - 3, rtol=1e-6)
        assert jit.STATS.misses == misses


def test_matmul_uses_blas_and_matches_numpy():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((3, 5, 7)), rng.standard_normal((9, 7))
    f = tw.compile(lambda a, b: tw.matmul(a, b, transpose_b=True), target="cpu")
    for dtype in (F32, F64):
        assert_same(f(a.astype(dtype), b.astype(dtype)),
                    np.matmul(a, b.T).astype(dtype), rtol=1e-5, atol=1e-5)
    ints = tw.compile(lambda a, b: tw.matmul(a, b, transpose_a=True), target="cpu")
    ia, ib = rng.integers(-9, 9, (4, 6, 3)), rng.integers(-9, 9, (6, 5))
    assert_same(ints(ia.astype(np.int32), ib.astype(np.int32)),
                np.matmul(np.swapaxes(ia, -1, -2), ib).astype(np.int32))
    graph = run_pipeline(f.get_concrete_function(a.astype(F32), b.astype(F32)).graph,
                         target="cpu")
    assert [n.op for n in native_nodes(graph)] == ["MatMul"]


def test_concurrent_calls_share_one_executable():
    f = tw.compile(lambda x: tw.reduce_sum(tw.exp(x) * 2.0, axis=-1), target="cpu")
    x = np.random.default_rng(5).random((64, 1000)).astype(np.float32)
    want = f(x)
    errors = []

    def worker():
        try:
            for _ in range(20):
                np.testing.assert_allclose(f(x), want, rtol=0)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
