"""LLVM's InstCombine drops a store in a loop (docs/llvm_o2_miscompile.md): the bug behind
the DepthwiseConv2dNative miscompile at O2 (tests/test_review_cpu_depthwise_opt_level.py).

`mergeStoreIntoSuccessor` merges the header's ``store 0.0, %ptr`` and the latch's
``store 1.0, %ptr`` into one store in their common successor, as if the latch's edge back
to the header were the forward edge of an if/then triangle. ``%ptr`` is computed in the
header, so on that back edge the header's store goes to the NEXT element and the latch's
store was not dead. Right answer: p = [1, 1]; after InstCombine: [0, 1].

The pipeline tests are strict xfails: they pin that the LLVM we link still miscompiles the
function at every level (O3 included: our default is right for the depthwise shape by
luck, not immune). When an llvmlite/LLVM upgrade fixes the pass they XPASS and fail; then
update docs/llvm_o2_miscompile.md and reconsider O2 (`jit.opt_level`)."""

import ctypes

import llvmlite.binding as llvm
import numpy as np
import pytest

from tensorweave.targets.cpu import jit

# The minimal reproducer (the same text as docs/llvm_o2_miscompile.md). Free of undefined
# behaviour: no inbounds/nsw/nuw/noalias, both stores in bounds of p[2], nothing read.
STORE_IN_LOOP_IR = """
define void @f(ptr %p) {
entry:
  br label %header

header:
  %i = phi i64 [ 0, %entry ], [ 1, %latch ]
  %ptr = getelementptr float, ptr %p, i64 %i
  store float 0.0, ptr %ptr
  br label %dest

dest:
  %from.latch = phi i1 [ false, %header ], [ true, %latch ]
  br i1 %from.latch, label %exit, label %latch

latch:
  store float 1.0, ptr %ptr
  %last = icmp eq i64 %i, 1
  br i1 %last, label %dest, label %header

exit:
  ret void
}
"""
RIGHT = np.array([1.0, 1.0], np.float32)


def _run(address: int) -> np.ndarray:
    p = np.full(2, np.nan, np.float32)
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)(p.ctypes.data)
    return p


def _run_module(module: llvm.ModuleRef) -> np.ndarray:
    """Code-generate `module` as it is (no IR passes) and run @f."""
    engine = llvm.create_mcjit_compiler(module, jit.new_target_machine())
    try:
        engine.finalize_object()
        return _run(engine.get_function_address("f"))
    finally:
        engine.close()


def test_unoptimized_reproducer_is_right():
    # the harness's control: code generation alone computes the right answer, so a wrong
    # one below comes from the IR passes
    jit._initialize()
    with jit.LLVM_LOCK:
        module = llvm.parse_assembly(STORE_IN_LOOP_IR)
        module.verify()
        got = _run_module(module)
    np.testing.assert_array_equal(got, RIGHT)


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="LLVM InstCombine mergeStoreIntoSuccessor merges across a loop "
                          "back edge (docs/llvm_o2_miscompile.md)")
def test_instcombine_alone_keeps_the_latch_store():
    jit._initialize()
    with jit.LLVM_LOCK:
        module = llvm.parse_assembly(STORE_IN_LOOP_IR)
        module.verify()
        builder = llvm.create_pass_builder(jit.target_machine(),
                                           llvm.create_pipeline_tuning_options(speed_level=0))
        passes = llvm.create_new_function_pass_manager()
        passes.add_instruction_combine_pass()
        passes.run(module.get_function("f"), builder)
        got = _run_module(module)
    np.testing.assert_array_equal(got, RIGHT)


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="LLVM InstCombine mergeStoreIntoSuccessor merges across a loop "
                          "back edge (docs/llvm_o2_miscompile.md)")
@pytest.mark.parametrize("level", ["1", "2", "3"])
def test_our_pipeline_keeps_the_latch_store(level, monkeypatch):
    monkeypatch.setenv("TW_LLVM_OPT", level)
    compiled = jit.compile_module(STORE_IN_LOOP_IR, ["f"])
    np.testing.assert_array_equal(_run(compiled.address("f")), RIGHT)
