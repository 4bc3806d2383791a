"""Native cpu code for the special functions (`targets/cpu/special_functions.py`): every
special op compiles into the fused kernels (alone and with other ops), and its accuracy
on dense sweeps:
- float32 (computed in double, rounded once): within F32_MAX_ULP of the float64
  reference, measured 0.5 ulp on every sweep here (at most 0.50000x);
- float64: erfc is libm's, the reference's own (Python's math.erfc), so equal to it;
  lgamma (libm's) and digamma (our own double code, Cephes' method) within 1e-14
  relative of the reference where the result is >= 1 in magnitude and 2e-15 absolute
  below (the functions have zeros: 1 and 2 for lgamma, 1.4616... and one in each
  (-n-1, -n) for psi, where relative precision is lost), digamma against mpmath where
  installed; erfinv and ndtri (Halley on libm's erf/erfc) within 2e-15 relative for
  normal inputs (subnormal probabilities lose precision: ndtri(5e-324) is off by 1e-6);
  bessel_i0e/i1e (series) within 4e-15; polygamma within 1e-14 for x >= -40 (further
  left, odd orders sum terms that cancel, on every target alike).
Ops without native code would run their cluster on the reference kernels; none is left
(tests/test_fusion.py checks that every fused op has native code)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.compiler import Graph, TensorType
from tensorweave.compiler.pipeline import compile_graph, run_pipeline
from tensorweave.targets.cpu import native_nodes
from tests.helpers import assert_same, call_library, has_c_compiler

F32_MAX_ULP = 0.51


def _graph(op: str, dtype, n: int, arity: int = 1) -> Graph:
    g = Graph(op)
    args = [g.add_arg(TensorType(np.dtype(dtype), (n,))) for _ in range(arity)]
    g.set_results([g.add_node(op, args).outputs[0]])
    return g


def _native_and_reference(op: str, *arrays):
    g = _graph(op, arrays[0].dtype, arrays[0].size, len(arrays))
    lowered = run_pipeline(g, target="cpu")
    fusions = [n for n in lowered.nodes if n.op == "Fusion"]
    assert fusions and set(native_nodes(lowered)) >= set(fusions), f"{op} is not native"
    with np.errstate(all="ignore"):
        ref = compile_graph(g, "reference")(*arrays)[0]
    return np.asarray(compile_graph(g, "cpu")(*arrays)[0]), np.asarray(ref)


def _float32_sweep(lo: float, hi: float, n: int) -> np.ndarray:
    """`n` float32 values evenly spaced in bit pattern (so in ulps) over [lo, hi], both
    of one sign."""
    a, b = (np.array([lo, hi], np.float32).view(np.int32).astype(np.int64))
    return np.unique(np.linspace(a, b, n).astype(np.int32)).view(np.float32)


def _ulps_f32(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in units of the float32 spacing at `exact` (float64 arithmetic)."""
    exact = exact.astype(np.float64)
    spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


SWEEPS = {  # op: float32 ranges swept (both signs where the op is defined there)
    "Lgamma": [(1e-30, 3e36), (-1e-30, -40.0)],
    "Digamma": [(1e-30, 3e38), (-1e-30, -40.0)],
    "Erfc": [(1e-30, 10.0), (-1e-30, -10.0)],
    "Erfinv": [(1e-30, 1.0), (-1e-30, -1.0)],
    "Ndtri": [(1e-37, 1.0)],
    "BesselI0e": [(1e-30, 3e38), (-1e-30, -1e4)],
    "BesselI1e": [(1e-30, 3e38), (-1e-30, -1e4)],
}


@pytest.mark.parametrize("op", list(SWEEPS))
def test_float32_is_the_double_result_rounded_once(op):
    x = np.concatenate([_float32_sweep(lo, hi, 40_000) for lo, hi in SWEEPS[op]])
    cpu, _ = _native_and_reference(op, x)
    # the exact value: the reference kernel in float64 (SciPy, independent of this code)
    g64 = _graph(op, np.float64, x.size)
    with np.errstate(all="ignore"):
        exact = np.asarray(compile_graph(g64, "reference")(x.astype(np.float64))[0])
    finite = np.isfinite(exact) & (np.abs(exact) < np.finfo(np.float32).max)
    assert_same(cpu[~finite], exact[~finite].astype(np.float32), rtol=0, atol=0)
    ulps = _ulps_f32(cpu[finite], exact[finite])
    assert ulps.max() <= F32_MAX_ULP, f"{op}: {ulps.max():.3f} ulp at x = {x[finite][ulps.argmax()]!r}"


_X64 = np.concatenate([np.linspace(-40.0, 40.0, 8001) + 0.0123,
                       np.geomspace(1e-300, 1e300, 2000), -np.geomspace(1e-300, 1e15, 500),
                       [0.0, -0.0, -1.0, -3.0, np.inf, -np.inf, np.nan]])
_U64 = np.concatenate([np.linspace(-1.0, 1.0, 8001), np.geomspace(1e-300, 1.0, 1000),
                       1 - np.geomspace(1e-16, 0.5, 500), -np.geomspace(1e-300, 1.0, 500),
                       [2.0, -1.5, np.inf, np.nan]])
_P64 = np.concatenate([np.linspace(0.0, 1.0, 8001), np.geomspace(2.3e-308, 1.0, 1500),
                       1 - np.geomspace(1e-16, 0.5, 500), [-0.5, 1.5, np.nan]])
FLOAT64_CASES = {  # op: (inputs, rtol, absolute bound where |result| < 1)
    "Lgamma": (_X64, 1e-14, 2e-15),
    "Digamma": (_X64, 1e-14, 2e-15),
    "Erfinv": (_U64, 2e-15, None),
    "Ndtri": (_P64, 2e-15, None),
    "BesselI0e": (_X64, 4e-15, None),
    "BesselI1e": (_X64, 4e-15, None),
}


def test_float64_erfc_is_libms_as_the_reference():
    x = _X64[np.isnan(_X64) | (np.abs(_X64) < 26.5)]  # subnormal from 26.55 on
    cpu, ref = _native_and_reference("Erfc", x)
    assert_same(cpu, ref, rtol=0, atol=0)


@pytest.mark.parametrize("op", list(FLOAT64_CASES))
def test_float64_against_the_reference(op):
    x, rtol, small_atol = FLOAT64_CASES[op]
    cpu, ref = _native_and_reference(op, x)
    small = np.abs(ref) < 1 if small_atol is not None else np.zeros(ref.shape, bool)
    assert_same(cpu[~small], ref[~small], rtol=rtol, atol=0)
    assert_same(cpu[small], ref[small], rtol=0, atol=small_atol or 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_polygamma_orders_against_the_reference(dtype):
    x = np.concatenate([np.linspace(-40.0, 40.0, 801) + 0.0123, np.geomspace(1e-30, 1e30, 61),
                        [0.0, -1.0, -4.0, np.inf, -np.inf, np.nan, -2.0 ** 21]]).astype(dtype)
    for n in (0.0, 1.0, 2.0, 3.0, 6.0, 30.0, -1.0, 2.5, np.nan):
        cpu, ref = _native_and_reference("Polygamma", np.full(x.shape, n, dtype), x)
        if n == 0.0 and dtype == np.float64:  # psi: absolute next to its zeros
            assert_same(cpu, ref, rtol=1e-14, atol=2e-15)
        else:
            assert_same(cpu, ref, rtol=1e-14 if dtype == np.float64 else 3e-7, atol=0)


def test_float64_digamma_against_mpmath_next_to_poles_and_zeros():
    mp = pytest.importorskip("mpmath")
    x = np.concatenate([-n + np.array([1e-12, 1e-6, 0.01, 0.4999, 0.5, 0.73, 0.99])
                        for n in range(0, 6)] + [1.4616321449683622 + np.linspace(-1e-3, 1e-3, 21),
                                                 np.array([1e-300, 0.25, 9.99, 10.0, 1e8])])
    cpu, _ = _native_and_reference("Digamma", x)
    with mp.workdps(40):
        exact = np.array([float(mp.digamma(mp.mpf(float(v)))) for v in x])
    err = np.abs(cpu - exact)
    assert (err <= np.maximum(1e-15, 4e-16 * np.abs(exact))).all(), \
        f"{err.max()} at x = {x[err.argmax()]!r}"


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("op", ["Xlogy", "Xlog1py", "Xdivy"])
def test_xlogy_family_native_code(op, dtype):
    special = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-30, 1e30, np.inf, -np.inf, np.nan])
    x = np.repeat(special, special.size).astype(dtype)
    y = np.tile(special, special.size).astype(dtype)
    cpu, ref = _native_and_reference(op, x, y)
    # float64: both are x * log(y) (or log1p, /) in the operands' precision with libm;
    # float32: log rounded, then the product rounded (the reference rounds once)
    assert_same(cpu, ref, rtol=2.5e-7 if dtype == np.float32 else 1e-15, atol=0)
    np.testing.assert_array_equal(cpu[x == 0], 0.0)


def test_special_functions_fuse_with_other_ops_into_one_native_kernel():
    def f(x, y):
        a = tw.math.lgamma(x * 2.0 + 1.0) - tw.math.digamma(y) * tw.math.erfc(x)
        return tw.reduce_sum(a + tw.math.xlogy(x, y) - tw.math.xdivy(y, x)
                             + tw.math.xlog1py(x, y), axis=-1)

    x = np.linspace(0.1, 3.0, 24).reshape(4, 6)
    y = np.linspace(0.5, 7.0, 24).reshape(4, 6)
    graph = run_pipeline(tw.compile(f).get_concrete_function(x, y).graph, target="cpu")
    fusions = [n for n in graph.nodes if n.op == "Fusion"]
    assert len(fusions) == 1 and set(native_nodes(graph)) >= set(fusions)
    ops = {m.op for m in fusions[0].regions[0].nodes}
    assert {"Lgamma", "Digamma", "Erfc", "Xlogy", "Xdivy", "Xlog1py", "Sum"} <= ops
    assert_same(np.asarray(tw.compile(f, target="cpu")(x, y)),
                np.asarray(tw.compile(f, target="reference")(x, y)), rtol=1e-14)


@pytest.mark.skipif(not has_c_compiler(), reason="no C compiler to link the library")
def test_ahead_of_time_library_computes_lgamma_and_digamma(tmp_path):
    from tensorweave.targets.cpu.aot import build_library

    spec = tw.TensorSpec([5], tw.float64)
    fn = tw.compile(lambda x: tw.math.lgamma(x) + tw.math.digamma(x) * tw.math.erfc(x),
                    input_signature=[spec])
    lib = build_library(fn.get_concrete_function(), str(tmp_path), name="special")
    x = np.array([0.5, 1.5, 3.0, 10.0, -2.5])
    status, (out,) = call_library(lib, [x])
    want = np.asarray(tw.compile(fn.python_function, target="reference")(x))
    assert status == 0
    assert_same(out, want, rtol=1e-14)
