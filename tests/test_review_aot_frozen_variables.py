"""An ahead-of-time library holds no variables: every read of one is frozen into a
constant when the library is built, and a function that changes one is refused. Two
ways around that gave garbage with status 0 (the library read through a null variable
table):

* a variable read by row (``ResourceGather``: `scatter.gather_rows`, and the optimized
  stage's rewrite of ``Gather(ReadVariable(v), ids)``) was not frozen;
* an assignment inside a ``tw.cond`` branch or a ``tw.while_loop`` body was not refused
  (only the top-level graph was searched), nor was the read after it frozen.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.errors import CompileError
from tensorweave.frontend.ops import scatter
from tensorweave.targets.cpu.aot import build_library
from tests.helpers import call_library, needs_c_compiler

pytestmark = needs_c_compiler
S = tw.TensorSpec


def test_rows_gathered_from_a_variable_are_frozen(tmp_path):
    table = tw.Variable(np.arange(12, dtype=np.float32).reshape(4, 3), name="table")

    @tw.compile(input_signature=[S([2], tw.int32)])
    def lookup(ids):
        return scatter.gather_rows(table, ids) * 2.0

    lib = build_library(lookup.get_concrete_function(), str(tmp_path), name="lookup")
    table.assign(np.zeros((4, 3), np.float32))  # the library keeps the value it was built with
    status, (got,) = call_library(lib, [np.array([1, 3], np.int32)])
    assert status == 0
    np.testing.assert_array_equal(got, np.array([[6, 8, 10], [18, 20, 22]], np.float32))


def test_embedding_lookup_in_an_optimized_graph_is_frozen(tmp_path):
    # (a guard: freezing runs before the optimized stage rewrites Gather(ReadVariable)
    # into ResourceGather, so this one always froze)
    table = tw.Variable(np.arange(12, dtype=np.float64).reshape(6, 2), name="emb")

    @tw.compile(input_signature=[S([3], tw.int64)])
    def lookup(ids):
        return tw.gather(table, ids)

    lib = build_library(lookup.get_concrete_function(), str(tmp_path), name="emb")
    status, (got,) = call_library(lib, [np.array([5, 0, 2], np.int64)])
    assert status == 0
    np.testing.assert_array_equal(got, np.arange(12.0).reshape(6, 2)[[5, 0, 2]])


def test_an_assignment_inside_a_cond_branch_is_refused(tmp_path):
    v = tw.Variable(np.array([1.0, 2.0, 3.0], np.float32), name="v_cond")

    @tw.compile(input_signature=[S([], tw.bool), S([3], tw.float32)])
    def f(p, x):
        return tw.cond(p, lambda: v.assign_add(x), lambda: v.read_value()) + 0.0

    with pytest.raises(CompileError, match="AssignAddVariable.*changes a variable"):
        build_library(f.get_concrete_function(), str(tmp_path), name="f")


def test_an_assignment_inside_a_loop_body_is_refused(tmp_path):
    v = tw.Variable(np.array([1.0, 2.0, 3.0], np.float32), name="v_loop")

    @tw.compile(input_signature=[S([3], tw.float32)])
    def f(x):
        def body(i, y):
            return i + 1, v.assign_add(y) * 1.0
        return tw.while_loop(lambda i, y: i < 3, body, (tw.constant(0), x))[1]

    with pytest.raises(CompileError, match="AssignAddVariable.*changes a variable"):
        build_library(f.get_concrete_function(), str(tmp_path), name="f")


def test_a_plan_that_still_uses_a_variable_is_refused():
    # the safety net behind freezing: a library passes no variable table to its step
    from tensorweave.compiler.pipeline import run_pipeline
    from tensorweave.targets.cpu.aot import _plan
    v = tw.Variable(np.array([1.0, 2.0], np.float32), name="v_unfrozen")

    @tw.compile(input_signature=[S([2], tw.float32)])
    def f(x):
        return x * v

    graph = run_pipeline(f.get_concrete_function().graph, target="cpu")  # not frozen
    with pytest.raises(CompileError, match="still uses the variables v_unfrozen"):
        _plan(graph)
