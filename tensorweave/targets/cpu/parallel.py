"""Intra-op parallelism for generated code: a parallel-for over POSIX threads.

A loop over ``[0, total)`` whose iterations are independent is written as a *chunk
function*

    i32 @chunk(i8* ctx, i64 begin, i64 end)      ; 0, or a status > 0

that runs iterations ``begin..end-1`` on the data `ctx` points to. `parallel_for` emits a
call that cuts the range into at most `threads` contiguous chunks of equal length (a
multiple of `align`, the last one shorter), starts one thread per chunk after the first
(``pthread_create``; libc, no runtime library), runs the first chunk on the calling
thread, joins the others (``pthread_join``) and returns the chunks' statuses combined in
chunk order: the first nonzero one (``combine="first"``) or the last (``"last"``, for
kernels whose serial code reports the last failure). A thread that cannot be started
(``pthread_create`` fails: too many threads) has its chunk run on the calling thread
instead, so the result never depends on it.

The thread count is part of the generated code: `num_threads()` (``TW_NUM_THREADS``,
else the CPUs this process may run on) is read when the IR is generated, so changing
it changes the IR, and therefore the JIT and disk cache keys. Callers emit exactly
their serial code when it is 1, and use threads only for work large enough to repay
starting them (`MIN_FUSED_ELEMENTS`, `MIN_GEMM_FLOPS`: measured, see below).

Threads are started for each call and joined before it returns (no pool, no state
across calls): about 20-60 us per call on the 2-core development machine, paid only by
kernels that take milliseconds.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import llvmlite.ir as ir

from ...errors import InvalidArgumentError
from .elementwise import I8, I32, I64

I8P = ir.PointerType(I8)
CHUNK_TYPE = ir.FunctionType(I32, [I8P, I64, I64])
CHUNK_PTR = ir.PointerType(CHUNK_TYPE)
# pthread_t is an unsigned long on Linux (glibc, musl) and a pointer on macOS: 8 bytes.
PTHREAD_T = I64
THREAD_START_TYPE = ir.FunctionType(I8P, [I8P])
# struct task { chunk fn; i8* ctx; i64 begin; i64 end; i32 status; i32 started; }
TASK_TYPE = ir.LiteralStructType([CHUNK_PTR, I8P, I64, I64, I32, I32])
TRAMPOLINE = "tw_parallel_thread"

# Below these sizes a kernel runs on one thread (starting and joining a thread costs
# tens of microseconds). Measured on the 2-core development machine (AMD EPYC, AVX2):
# - fused loop nests: 2^18 elements is where two threads start to win for cheap
#   elementwise clusters (a few hundred microseconds of work); dearer ones (gelu: ~1.6 ns
#   per element) win from about 2^15;
# - GEMM: 2^22 multiply-adds (~0.1 ms in one sgemm thread) is where splitting C's rows
#   over two threads starts to pay.
MIN_FUSED_ELEMENTS = 1 << 18
MIN_GEMM_FLOPS = 1 << 22


def num_threads() -> int:
    """Threads a parallel kernel may use: ``TW_NUM_THREADS`` when set (0 or empty: the
    default), else the number of CPUs this process may run on."""
    raw = os.environ.get("TW_NUM_THREADS", "").strip()
    if raw:
        try:
            n = int(raw)
        except ValueError:
            raise InvalidArgumentError(f"TW_NUM_THREADS must be an integer, got {raw!r}") \
                from None
        if n < 0:
            raise InvalidArgumentError(f"TW_NUM_THREADS must be >= 0, got {n}")
        if n > 0:
            return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no sched_getaffinity (macOS)
        return max(1, os.cpu_count() or 1)


def chunk_count(total: int, threads: int, align: int = 1) -> int:
    """How many chunks `parallel_for` makes of `total` iterations (the threads it uses,
    the calling one included)."""
    if total <= 0 or threads <= 1:
        return 1
    per = -(-total // threads)
    per = -(-per // align) * align
    return -(-total // per)


def _declare(module: ir.Module, name: str, ftype: ir.FunctionType) -> ir.Function:
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ftype, name)
    return fn


def define_chunk(module: ir.Module, name: str) -> ir.Function:
    """A new internal chunk function ``i32 @name(i8* ctx, i64 begin, i64 end)`` (no body)."""
    fn = ir.Function(module, CHUNK_TYPE, name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    return fn


def parallel_for(b: ir.IRBuilder, chunk: ir.Function, ctx: ir.Value, total: ir.Value | int,
                 threads: int, align: int = 1, combine: str = "first") -> ir.Value:
    """Emit, at `b`, ``chunk(ctx, begin, end)`` over ``[0, total)`` on up to `threads`
    threads; returns the combined i32 status (see the module docstring). Chunk starts
    are multiples of `align`. With ``threads == 1`` this is one call of the chunk."""
    if threads < 1 or align < 1:
        raise ValueError(f"parallel_for: threads={threads}, align={align}")
    if combine not in ("first", "last"):
        raise ValueError(f"parallel_for: combine={combine!r}")
    total = I64(int(total)) if isinstance(total, int) else total
    ctx = b.bitcast(ctx, I8P)
    if threads == 1:
        return b.call(chunk, [ctx, I64(0), total])
    runner = _runner(b.module, threads, combine)
    return b.call(runner, [chunk, ctx, total, I64(align)])


# ------------------------------------------------------------------- the runtime code

class _Loops:
    """Counted loops at a builder (phi form)."""

    def __init__(self, b: ir.IRBuilder) -> None:
        self.b = b

    @contextlib.contextmanager
    def loop(self, start: ir.Value, stop: ir.Value, name: str) -> Iterator[ir.Value]:
        b = self.b
        pre = b.block
        head = b.append_basic_block(f"{name}.head")
        body = b.append_basic_block(f"{name}.body")
        done = b.append_basic_block(f"{name}.done")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64, name=name)
        i.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<", i, stop), body, done)
        b.position_at_end(body)
        yield i
        i.add_incoming(b.add(i, I64(1)), b.block)
        b.branch(head)
        b.position_at_end(done)


def _trampoline(module: ir.Module) -> ir.Function:
    """``i8* tw_parallel_thread(i8* task)``: what a started thread runs: the task's chunk,
    its status stored back into the task."""
    fn = module.globals.get(TRAMPOLINE)
    if fn is not None:
        return fn
    fn = ir.Function(module, THREAD_START_TYPE, TRAMPOLINE)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    task = b.bitcast(fn.args[0], ir.PointerType(TASK_TYPE))

    def field(k: int) -> ir.Value:
        return b.gep(task, [I32(0), I32(k)])

    status = b.call(b.load(field(0)), [b.load(field(1)), b.load(field(2)), b.load(field(3))])
    b.store(status, field(4))
    b.ret(ir.Constant(I8P, None))
    return fn


def _runner(module: ir.Module, threads: int, combine: str) -> ir.Function:
    """``i32 tw_parallel_for.<threads>.<combine>(chunk, i8* ctx, i64 total, i64 align)``,
    defined once per module and thread count (its arrays of tasks and thread ids have
    `threads` entries)."""
    name = f"tw_parallel_for.{threads}.{combine}"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(I32, [CHUNK_PTR, I8P, I64, I64]), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")  # its stack arrays belong in its own frame
    chunk, ctx, total, align = fn.args
    create = _declare(module, "pthread_create", ir.FunctionType(
        I32, [ir.PointerType(PTHREAD_T), I8P, ir.PointerType(THREAD_START_TYPE), I8P]))
    join = _declare(module, "pthread_join", ir.FunctionType(
        I32, [PTHREAD_T, ir.PointerType(I8P)]))
    start = _trampoline(module)

    b = ir.IRBuilder(fn.append_basic_block("entry"))
    loops = _Loops(b)
    tasks = b.alloca(ir.ArrayType(TASK_TYPE, threads), name="tasks")
    tids = b.alloca(ir.ArrayType(PTHREAD_T, threads), name="tids")
    result = b.alloca(I32, name="result")
    # per = round_up(ceil(total / threads), align); count = ceil(total / per)
    per = b.sdiv(b.add(total, I64(threads - 1)), I64(threads))
    per = b.mul(b.sdiv(b.add(per, b.sub(align, I64(1))), align), align, name="per")
    per = b.select(b.icmp_signed("<", per, I64(1)), I64(1), per)
    count = b.sdiv(b.add(total, b.sub(per, I64(1))), per, name="count")

    def field(t: ir.Value, k: int) -> ir.Value:
        return b.gep(tasks, [I64(0), t, I32(k)])

    def bounds(t: ir.Value) -> tuple[ir.Value, ir.Value]:
        begin = b.mul(t, per)
        end = b.add(begin, per)
        return begin, b.select(b.icmp_signed("<", end, total), end, total)

    # start chunks 1..count-1; run a chunk here when its thread cannot be started
    with loops.loop(I64(1), count, "spawn") as t:
        begin, end = bounds(t)
        for k, v in enumerate((chunk, ctx, begin, end, I32(0), I32(1))):
            b.store(v, field(t, k))
        rc = b.call(create, [b.gep(tids, [I64(0), t]), ir.Constant(I8P, None), start,
                             b.bitcast(b.gep(tasks, [I64(0), t]), I8P)])
        with b.if_then(b.icmp_signed("!=", rc, I32(0)), likely=False):
            b.store(I32(0), field(t, 5))
            b.store(b.call(chunk, [ctx, begin, end]), field(t, 4))
    # chunk 0 on this thread
    _, end0 = bounds(I64(0))
    b.store(b.call(chunk, [ctx, I64(0), end0], name="status0"), result)
    # join, and combine the statuses in chunk order
    with loops.loop(I64(1), count, "join") as t:
        with b.if_then(b.icmp_signed("!=", b.load(field(t, 5)), I32(0))):
            b.call(join, [b.load(b.gep(tids, [I64(0), t])), ir.Constant(ir.PointerType(I8P),
                                                                          None)])
        status = b.load(field(t, 4))
        old = b.load(result)
        keep_old = b.icmp_signed("!=", old, I32(0)) if combine == "first" else \
            b.icmp_signed("==", status, I32(0))
        b.store(b.select(keep_old, old, status), result)
    b.ret(b.load(result))
    return fn


__all__ = ["CHUNK_TYPE", "MIN_FUSED_ELEMENTS", "MIN_GEMM_FLOPS", "chunk_count", "define_chunk",
           "num_threads", "parallel_for"]
