"""Differential checks of the ahead-of-time library and of the IR text form on random
programs (`tests/differential.py`).

* An ahead-of-time library (generated GEMM, no BLAS, its own step) called through ctypes
  on a program's arguments gives what the reference target gives, within the program's
  own error bounds (exact values bitwise). Programs that use an op without a native
  lowering are refused with UnimplementedError, which is the documented behaviour.
* The IR text of a program's graph, as traced and after the cpu pipeline (what a
  distributed task receives), parses back to an equal graph that prints the same text,
  and the parsed graph computes bitwise the same results as the original.

A library costs about a second to build (LLVM + cc), so few programs run here; for a
longer hunt raise ``TW_FUZZ_EXAMPLES``.
"""

from __future__ import annotations

import ctypes
import os

import numpy as np
from hypothesis import HealthCheck, given, settings

import tensorweave as tw
from tensorweave.compiler.equality import graph_diff
from tensorweave.compiler.parser import parse_graph
from tensorweave.compiler.pipeline import run_pipeline
from tensorweave.compiler.printer import print_graph
from tensorweave.errors import UnimplementedError
from tensorweave.runtime.dataflow import DataflowExecutable
from tensorweave.targets import cpu
from tensorweave.targets.cpu.aot import build_library
from tests import differential as D
from tests.helpers import needs_c_compiler


def _examples(n: int):
    return settings(max_examples=int(os.environ.get("TW_FUZZ_EXAMPLES", n)), deadline=None,
                    derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def call_library(lib, args: list[np.ndarray]) -> tuple[int, list[np.ndarray]]:
    """Call ``<name>_run`` of a built library through ctypes: (status, results). Result
    buffers start filled with 0xAB bytes, so a result the library never writes shows."""
    run = getattr(ctypes.CDLL(lib.library), f"{lib.name}_run")
    run.restype = ctypes.c_int
    graph = lib.plan.graph
    args = [np.ascontiguousarray(a, dtype=v.type.dtype.np) for a, v in zip(args, graph.args)]
    results = []
    for v in graph.results:
        n = int(np.prod(v.type.shape, dtype=np.int64)) * np.dtype(v.type.dtype.np).itemsize
        raw = np.full(max(n, 1), 0xAB, np.uint8)[:n]
        results.append(raw.view(v.type.dtype.np).reshape(v.type.shape))
    arg_ptrs = (ctypes.c_void_p * max(1, len(args)))(*[a.ctypes.data for a in args])
    res_ptrs = (ctypes.c_void_p * max(1, len(results)))(*[r.ctypes.data for r in results])
    return run(arg_ptrs, res_ptrs), results


def _check_library(prog: D.Program, out_dir: str) -> None:
    if prog.var_inits:
        return  # (a library holds frozen variables and refuses assignments)
    cf = tw.compile(prog).get_concrete_function(*prog.args)
    try:
        lib = build_library(cf, out_dir, name="prog")
    except UnimplementedError:
        return
    want = D.run(prog, "reference")
    status, got = call_library(lib, prog.args)
    assert status == 0, f"status {status}\n{prog.text()}"
    D.compare(got, want, prog.tolerances(), "aot library vs reference", prog)


needs_cc = needs_c_compiler


@needs_cc
@_examples(12)
@given(prog=D.programs(big=False))
def test_library_matches_the_reference_on_random_programs(prog, tmp_path_factory):
    _check_library(prog, str(tmp_path_factory.mktemp("lib")))


@needs_cc
@_examples(10)
@given(prog=D.programs(mode="control", big=False))
def test_library_matches_the_reference_on_programs_with_control_flow(prog, tmp_path_factory):
    _check_library(prog, str(tmp_path_factory.mktemp("lib")))


@needs_cc
@_examples(8)
@given(prog=D.programs(big=False, specials=True))
def test_library_matches_the_reference_with_nan_inf_and_signed_zeros(prog, tmp_path_factory):
    _check_library(prog, str(tmp_path_factory.mktemp("lib")))


def _bits(xs: list) -> list[tuple]:
    return [(np.asarray(x).dtype, np.asarray(x).shape, np.asarray(x).tobytes()) for x in xs]


@_examples(15)
@given(prog=D.programs(mode="control", big=False))
def test_ir_text_round_trip_keeps_graphs_and_results(prog):
    if prog.var_inits:
        prog.make_vars()
    cf = tw.compile(prog).get_concrete_function(*prog.args)
    cpu._register_with_executor()
    for graph in (cf.graph, run_pipeline(cf.graph, target="cpu")):
        text = print_graph(graph)
        parsed = parse_graph(text)
        assert graph_diff(graph, parsed) is None, f"{graph_diff(graph, parsed)}\n{prog.text()}"
        assert print_graph(parsed) == text
        if not prog.var_inits:
            assert _bits(DataflowExecutable(parsed, "cpu")(*prog.args)) == \
                _bits(DataflowExecutable(graph, "cpu")(*prog.args)), prog.text()
