"""Intra-op parallelism of the cpu target (`targets/cpu/parallel.py`): big fused loop
nests and big GEMMs run on several threads and give bit-for-bit the results of one
thread; failing chunks report their status; ``TW_NUM_THREADS=1`` generates serial code.

The thread count is read when the code is generated, so each case compiles the same
function twice, with ``TW_NUM_THREADS`` set to 1 and to 2 (the IR, and so the JIT cache
key, differs), and checks that the 2-thread code really is the parallel one."""

from __future__ import annotations

import ctypes

import llvmlite.ir as ir
import numpy as np
import pytest

import tensorweave as tw
from tensorweave.errors import InvalidArgumentError
from tensorweave.targets.cpu import jit, parallel
from tensorweave.targets.cpu.lowering import (
    I32,
    I64,
    blas_row_align,
    compile_node,
    emit_node_function,
)
from tests.lowerings.helpers import single_node

BIG = parallel.MIN_FUSED_WORK + 3  # odd: chunks end in a scalar remainder


@pytest.fixture
def ir_texts(monkeypatch):
    """The IR texts this test JIT-compiles (in order)."""
    texts: list[str] = []
    compile_module, compile_keyed = jit.compile_module, jit.compile_keyed

    def spy(ir_text, names, **kw):
        texts.append(ir_text)
        return compile_module(ir_text, names, **kw)

    def spy_keyed(key_text, build_ir, names, **kw):
        texts.append(build_ir())  # (whether or not the cache answers)
        return compile_keyed(key_text, build_ir, names, **kw)

    def spy_digest(key, build_ir, names, **kw):  # a step made from its record (plan_cache)
        texts.append(build_ir())
        return compile_digest(key, build_ir, names, **kw)
    compile_digest = jit.compile_digest
    monkeypatch.setattr(jit, "compile_module", spy)
    monkeypatch.setattr(jit, "compile_keyed", spy_keyed)
    monkeypatch.setattr(jit, "compile_digest", spy_digest)
    return texts


def _run(monkeypatch, ir_texts, threads: int, fn, *args):
    """`fn` compiled for the cpu target with `threads` threads, run on `args`: its
    results (or the error it raised) and whether its code starts threads."""
    monkeypatch.setenv("TW_NUM_THREADS", str(threads))
    before = len(ir_texts)
    try:
        out = tw.compile(fn, target="cpu")(*args)
    except InvalidArgumentError as e:
        out = e
    threaded = any("pthread_create" in t for t in ir_texts[before:])
    return out, threaded


def _same_bits(a, b) -> None:
    a, b = (list(x) if isinstance(x, (list, tuple)) else [x] for x in (a, b))
    assert len(a) == len(b)
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


def _serial_and_parallel(monkeypatch, ir_texts, fn, *args):
    one, threaded1 = _run(monkeypatch, ir_texts, 1, fn, *args)
    two, threaded2 = _run(monkeypatch, ir_texts, 2, fn, *args)
    assert not threaded1, "TW_NUM_THREADS=1 generated threads"
    assert threaded2, "the 2-thread build did not split the kernel"
    return one, two


# ------------------------------------------------------------------------- fused

def _gelu(x, a):
    y = x * a + 0.25
    return 0.5 * y * (1.0 + tw.tanh(0.7978845608 * (y + 0.044715 * y * y * y)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_big_fused_elementwise_kernel_is_identical_on_two_threads(monkeypatch, ir_texts,
                                                                    dtype):
    x = np.random.default_rng(0).standard_normal(BIG).astype(dtype)
    one, two = _serial_and_parallel(monkeypatch, ir_texts, _gelu, x, dtype(1.5))
    _same_bits(one, two)
    np.testing.assert_allclose(one, _gelu_numpy(x, 1.5), rtol=1e-5, atol=1e-6)


def _gelu_numpy(x, a):
    y = x.astype(np.float64) * a + 0.25
    return 0.5 * y * (1.0 + np.tanh(0.7978845608 * (y + 0.044715 * y ** 3)))


def test_big_fused_kernel_with_broadcasting_rows(monkeypatch, ir_texts):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1031, 517)).astype(np.float32)
    b = rng.standard_normal(517).astype(np.float32)
    col = rng.standard_normal((1031, 1)).astype(np.float32)

    def f(x, b, col):
        return tw.exp(x * b - col), x + b
    one, two = _serial_and_parallel(monkeypatch, ir_texts, f, x, b, col)
    _same_bits(one, two)
    np.testing.assert_allclose(one[0], np.exp(x * b - col), rtol=1e-5)


def test_big_row_reductions_are_identical_on_two_threads(monkeypatch, ir_texts):
    x = np.random.default_rng(2).standard_normal((2053, 301)).astype(np.float32)

    def f(x):
        return (tw.reduce_sum(x * x, axis=-1), tw.reduce_max(x, axis=1),
                tw.reduce_mean(tw.exp(x), axis=-1, keepdims=True))
    one, two = _serial_and_parallel(monkeypatch, ir_texts, f, x)
    _same_bits(one, two)
    np.testing.assert_allclose(one[0], (x.astype(np.float64) ** 2).sum(-1), rtol=1e-5)
    np.testing.assert_array_equal(one[1], x.max(1))


def test_a_full_reduction_stays_on_one_thread(monkeypatch, ir_texts):
    x = np.random.default_rng(3).standard_normal(BIG).astype(np.float32)
    out, threaded = _run(monkeypatch, ir_texts, 2, lambda x: tw.reduce_sum(x * 2.0), x)
    assert not threaded  # one output row: nothing independent to split
    np.testing.assert_allclose(out, 2 * x.astype(np.float64).sum(), rtol=1e-5)


def test_small_kernels_stay_on_one_thread(monkeypatch, ir_texts):
    x = np.ones(1000, np.float32)
    out, threaded = _run(monkeypatch, ir_texts, 2, lambda x: tw.exp(x) + 1.0, x)
    assert not threaded
    np.testing.assert_allclose(out, np.e + 1, rtol=1e-6)


# ----------------------------------------------------------------------- errors

@pytest.mark.parametrize("zero_at", [BIG - 1, 5])
def test_a_failing_chunk_reports_its_error(monkeypatch, ir_texts, zero_at):
    """An integer division by zero in the second chunk (last element), or the first."""
    x = np.arange(BIG, dtype=np.int32)
    y = np.ones(BIG, np.int32)
    y[zero_at] = 0
    one, two = _serial_and_parallel(monkeypatch, ir_texts, lambda x, y: x // y + 1, x, y)
    for e in (one, two):
        assert isinstance(e, InvalidArgumentError) and "division by zero" in str(e), e


def test_the_failure_reported_is_the_one_one_thread_reports(monkeypatch, ir_texts):
    """A negative power in the first chunk, a division by zero in the second: one thread
    reports the last failure it met, and so do two."""
    x = np.full(BIG, 2, np.int32)
    y = np.ones(BIG, np.int32)
    p = np.ones(BIG, np.int32)
    p[3] = -1
    y[BIG - 2] = 0
    one, two = _serial_and_parallel(monkeypatch, ir_texts,
                                    lambda x, y, p: (x // y) + tw.pow(x, p), x, y, p)
    assert isinstance(one, InvalidArgumentError) and isinstance(two, InvalidArgumentError)
    assert str(one) == str(two)


# ------------------------------------------------------------------------- GEMM

@pytest.mark.parametrize("mode", ["blas", "generated"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True)])
def test_big_matmul_is_identical_on_two_threads(monkeypatch, mode, dtype, ta, tb):
    m, n, k = (301, 257, 200) if mode == "blas" else (130, 96, 350)
    assert m * n * k >= parallel.MIN_GEMM_FLOPS
    rng = np.random.default_rng(4)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    node = single_node("MatMul", [a, b], transpose_a=ta, transpose_b=tb)
    outs = []
    for threads in (1, 2):
        monkeypatch.setenv("TW_NUM_THREADS", str(threads))
        module = ir.Module()
        emit_node_function(module, node, "f", mode)
        assert ("pthread_create" in str(module)) == (threads == 2)
        outs.append(compile_node(node, mode)([a, b])[0])
    _same_bits(outs[0], outs[1])
    want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    np.testing.assert_allclose(outs[0], want, rtol=1e-4, atol=1e-4)


def test_matmul_in_a_step_is_identical_on_two_threads(monkeypatch, ir_texts):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((256, 300)).astype(np.float32)
    w = rng.standard_normal((300, 200)).astype(np.float32)
    one, two = _serial_and_parallel(monkeypatch, ir_texts,
                                    lambda x, w: tw.nn.relu(tw.matmul(x, w)), x, w)
    _same_bits(one, two)


def test_blas_row_alignment_is_measured():
    # OpenBLAS (SciPy's) computes C in tiles of a few rows; cuts must respect them
    for dt in ("f32", "f64"):
        t = blas_row_align(dt)
        assert t is None or 1 <= t <= 96


# ----------------------------------------------------------- the facility itself

def _chunk_recorder(combine: str, threads: int, fail_from: int = -1):
    """A JIT-compiled ``run(int64* log, i64 total, i64 align)``: parallel_for over
    [0, total) whose chunk adds 1 to log[i] for each of its i and returns
    100 + begin when begin >= fail_from >= 0."""
    module = ir.Module()
    chunk = parallel.define_chunk(module, "chunk")
    b = ir.IRBuilder(chunk.append_basic_block("entry"))
    log = b.bitcast(chunk.args[0], ir.PointerType(I64))
    begin, end = chunk.args[1], chunk.args[2]
    head, body, done = (chunk.append_basic_block(s) for s in ("head", "body", "done"))
    pre = b.block
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64)
    i.add_incoming(begin, pre)
    b.cbranch(b.icmp_signed("<", i, end), body, done)
    b.position_at_end(body)
    p = b.gep(log, [i])
    b.store(b.add(b.load(p), I64(1)), p)
    i.add_incoming(b.add(i, I64(1)), body)
    b.branch(head)
    b.position_at_end(done)
    fails = b.and_(b.icmp_signed(">=", I64(fail_from), I64(0)),
                   b.icmp_signed(">=", begin, I64(fail_from)))
    b.ret(b.select(fails, b.add(b.trunc(begin, I32), I32(100)), I32(0)))

    run = ir.Function(module, ir.FunctionType(I32, [ir.PointerType(I64), I64, I64]), "run")
    rb = ir.IRBuilder(run.append_basic_block("entry"))
    # parallel_for takes a constant align; dispatch on the few the test uses
    out = rb.alloca(I32)
    for align in (1, 4):
        with rb.if_then(rb.icmp_signed("==", run.args[2], I64(align))):
            rb.store(parallel.parallel_for(rb, chunk, run.args[0], run.args[1], threads,
                                           align, combine), out)
    rb.ret(rb.load(out))
    compiled = jit.compile_module(str(module), ["run"])
    fn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(
        compiled.address("run"))
    return fn, compiled


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
@pytest.mark.parametrize("total", [0, 1, 2, 7, 1000])
@pytest.mark.parametrize("align", [1, 4])
def test_parallel_for_covers_the_range_once(threads, total, align):
    fn, keep = _chunk_recorder("first", threads)
    log = np.zeros(total + 1, np.int64)
    assert fn(log.ctypes.data, total, align) == 0
    assert log[:total].tolist() == [1] * total and log[total] == 0


def test_parallel_for_combines_statuses_in_chunk_order():
    log = np.zeros(1000, np.int64)
    first, keep1 = _chunk_recorder("first", 4, fail_from=250)
    last, keep2 = _chunk_recorder("last", 4, fail_from=250)
    # chunks start at 0, 250, 500, 750: chunks 1..3 fail with 100 + their start
    assert first(log.ctypes.data, 1000, 1) == 350
    assert last(log.ctypes.data, 1000, 1) == 850
    failing_first_chunk, keep3 = _chunk_recorder("first", 4, fail_from=0)
    assert failing_first_chunk(log.ctypes.data, 1000, 1) == 100


def test_chunk_count():
    assert parallel.chunk_count(0, 4) == 1
    assert parallel.chunk_count(3, 8) == 3
    assert parallel.chunk_count(1000, 4) == 4
    assert parallel.chunk_count(10, 2, align=8) == 2
    assert parallel.chunk_count(8, 2, align=8) == 1


def test_num_threads_reads_the_environment(monkeypatch):
    import os
    monkeypatch.setenv("TW_NUM_THREADS", "3")
    assert parallel.num_threads() == 3
    monkeypatch.setenv("TW_NUM_THREADS", "0")
    assert parallel.num_threads() == len(os.sched_getaffinity(0))
    monkeypatch.delenv("TW_NUM_THREADS")
    assert parallel.num_threads() == len(os.sched_getaffinity(0))
    monkeypatch.setenv("TW_NUM_THREADS", "lots")
    with pytest.raises(InvalidArgumentError, match="TW_NUM_THREADS"):
        parallel.num_threads()
