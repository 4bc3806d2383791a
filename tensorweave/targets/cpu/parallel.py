"""Intra-op parallelism for generated code: a parallel-for over POSIX threads.

A loop over ``[0, total)`` whose iterations are independent is written as a *chunk
function*

    i32 @chunk(i8* ctx, i64 begin, i64 end)      ; 0, or a status > 0

that runs iterations ``begin..end-1`` on the data `ctx` points to. `parallel_for` emits a
call that cuts the range into at most ``threads * blocks`` contiguous blocks of equal
length (a multiple of `align`; the last one shorter), starts up to ``threads - 1``
threads (``pthread_create`` from libc; no runtime library), runs block 0 on the calling
thread, and then every thread, the calling one included, claims the next unclaimed block
(an atomic counter) until none is left. The caller joins the threads
(``pthread_join``) and returns the blocks' statuses combined in block order: the first
nonzero one (``combine="first"``) or the last (``"last"``, for kernels whose serial code
reports the last failure it meets). Which thread runs a block never changes what the
block computes, so results do not depend on timing; a thread that starts late (the
cores are busy) just claims fewer blocks, and one that cannot be started at all leaves
its blocks to the others.

The thread count is part of the generated code: `num_threads()` (``TW_NUM_THREADS``,
else the CPUs this process may run on) is read when the IR is generated, so changing
it changes the IR, and therefore the JIT and disk cache keys. Callers emit exactly
their serial code when it is 1, and use threads only for work large enough to repay
starting them (`MIN_FUSED_WORK`, `MIN_GEMM_FLOPS`: measured, see below).

Threads are started for each call and joined before it returns (no pool, no state
across calls): about 30 us per call on the 2-core development machine.
"""

from __future__ import annotations

import os

import llvmlite.ir as ir

from ...errors import InvalidArgumentError
from .elementwise import I8, I32, I64
from .loops import counted_loop

I8P = ir.PointerType(I8)
CHUNK_TYPE = ir.FunctionType(I32, [I8P, I64, I64])
CHUNK_PTR = ir.PointerType(CHUNK_TYPE)
# pthread_t is an unsigned long on Linux (glibc, musl) and a pointer on macOS: 8 bytes.
PTHREAD_T = I64
THREAD_START_TYPE = ir.FunctionType(I8P, [I8P])
# struct job { chunk fn; i8* ctx; i64 total; i64 per; i64 count; i64 next; i32* statuses; }
# shared by the threads of one parallel_for: blocks of `per` iterations, `count` of them,
# `next` the first one nobody has claimed yet
JOB_TYPE = ir.LiteralStructType([CHUNK_PTR, I8P, I64, I64, I64, I64, ir.PointerType(I32)])
TRAMPOLINE = "tw_parallel_thread"

# Below these sizes a kernel runs on one thread: starting and joining a thread costs
# ~30 us. Measured on the 2-core development machine (AMD EPYC, AVX2), time with one
# thread -> two threads:
# - fused loop nests, `MIN_FUSED_WORK` in elements times `codegen.work_per_element`:
#   x * 2 + 1 over 2^18 elements 34 -> 53 us, 2^20 125 -> 99 us, 2^24 6.5 -> 4.3 ms;
#   gelu (tanh: ~18 units an element) over 2^14 32 -> 46 us, 2^16 110 -> 94 us,
#   2^18 416 -> 264 us, 2^24 27 -> 14.7 ms. 2^21 units: 2^20 elements of x * 2 + 1,
#   2^17 of gelu;
# - GEMM, in multiply-adds (m n k): 2^20 45 -> 65 us, 2^21 68 -> 68 us, 2^22 122 ->
#   101 us, 2^24 400 -> 250 us, 256x1024x784 4.7 -> 2.7 ms.
MIN_FUSED_WORK = 1 << 21
# The same in elements, for loops doing a simple op or two per element touched.
MIN_FUSED_ELEMENTS = 1 << 20
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
    """How many threads, the calling one included, get part of `total` iterations cut
    into chunks of ``ceil(total / threads)`` rounded up to a multiple of `align` (1: the
    loop is not worth splitting)."""
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
                 threads: int, align: int = 1, combine: str = "first", blocks: int = 1
                 ) -> ir.Value:
    """Emit, at `b`, ``chunk(ctx, begin, end)`` over ``[0, total)`` on up to `threads`
    threads, in up to ``threads * blocks`` blocks starting at multiples of `align`;
    returns the combined i32 status (see the module docstring). With ``threads == 1``
    this is one call of the chunk."""
    if threads < 1 or align < 1 or blocks < 1:
        raise ValueError(f"parallel_for: threads={threads}, align={align}, blocks={blocks}")
    if combine not in ("first", "last"):
        raise ValueError(f"parallel_for: combine={combine!r}")
    total = I64(int(total)) if isinstance(total, int) else total
    ctx = b.bitcast(ctx, I8P)
    if threads == 1:
        return b.call(chunk, [ctx, I64(0), total])
    runner = _runner(b.module, threads, blocks, combine)
    return b.call(runner, [chunk, ctx, total, I64(align)])


# ------------------------------------------------------------------- the runtime code


def _field(b: ir.IRBuilder, job: ir.Value, k: int) -> ir.Value:
    return b.gep(job, [I32(0), I32(k)])


def _block(b: ir.IRBuilder, job: ir.Value, t: ir.Value) -> ir.Value:
    """Run block `t` of `job` and store its status."""
    per, total = b.load(_field(b, job, 3)), b.load(_field(b, job, 2))
    begin = b.mul(t, per)
    end = b.add(begin, per)
    end = b.select(b.icmp_signed("<", end, total), end, total)
    status = b.call(b.load(_field(b, job, 0)), [b.load(_field(b, job, 1)), begin, end])
    b.store(status, b.gep(b.load(_field(b, job, 6)), [t]))
    return status


def _work(module: ir.Module) -> ir.Function:
    """``void tw_parallel_work(job*)``: claim blocks of the job (an atomic counter) and
    run them until none is left. Every thread runs it, the calling one included."""
    name = "tw_parallel_work"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.PointerType(JOB_TYPE)]), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    job = fn.args[0]
    head = fn.append_basic_block("claim")
    body = fn.append_basic_block("run")
    done = fn.append_basic_block("done")
    b.branch(head)
    b.position_at_end(head)
    t = b.atomic_rmw("add", _field(b, job, 5), I64(1), "monotonic", name="t")
    b.cbranch(b.icmp_signed("<", t, b.load(_field(b, job, 4))), body, done)
    b.position_at_end(body)
    _block(b, job, t)
    b.branch(head)
    b.position_at_end(done)
    b.ret_void()
    return fn


def _trampoline(module: ir.Module) -> ir.Function:
    """``i8* tw_parallel_thread(i8* job)``: what a started thread runs."""
    fn = module.globals.get(TRAMPOLINE)
    if fn is not None:
        return fn
    fn = ir.Function(module, THREAD_START_TYPE, TRAMPOLINE)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.call(_work(module), [b.bitcast(fn.args[0], ir.PointerType(JOB_TYPE))])
    b.ret(ir.Constant(I8P, None))
    return fn


def _runner(module: ir.Module, threads: int, blocks: int, combine: str) -> ir.Function:
    """``i32 tw_parallel_for.<threads>.<blocks>.<combine>(chunk, i8* ctx, i64 total,
    i64 align)``, defined once per module and shape of the job."""
    name = f"tw_parallel_for.{threads}.{blocks}.{combine}"
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

    b = ir.IRBuilder(fn.append_basic_block("entry"))
    most = threads * blocks
    job = b.alloca(JOB_TYPE, name="job")
    statuses = b.alloca(ir.ArrayType(I32, most), name="statuses")
    tids = b.alloca(ir.ArrayType(PTHREAD_T, threads), name="tids")
    started = b.alloca(ir.ArrayType(I8, threads), name="started")
    result = b.alloca(I32, name="result")
    # per = round_up(ceil(total / most), align); count = ceil(total / per) <= most
    per = b.sdiv(b.add(total, I64(most - 1)), I64(most))
    per = b.mul(b.sdiv(b.add(per, b.sub(align, I64(1))), align), align)
    per = b.select(b.icmp_signed("<", per, I64(1)), I64(1), per, name="per")
    count = b.sdiv(b.add(total, b.sub(per, I64(1))), per, name="count")
    count = b.select(b.icmp_signed("<", count, I64(1)), I64(1), count)
    status_ptr = b.gep(statuses, [I64(0), I64(0)])
    # block 0 is the calling thread's; the others go to whoever claims them first
    for k, v in enumerate((chunk, ctx, total, per, count, I64(1), status_ptr)):
        b.store(v, _field(b, job, k))
    helpers = b.sub(b.select(b.icmp_signed("<", count, I64(threads)), count, I64(threads)),
                    I64(1), name="helpers")
    arg = b.bitcast(job, I8P)
    with counted_loop(b, I64(0), helpers, name="spawn") as t:
        rc = b.call(create, [b.gep(tids, [I64(0), t]), ir.Constant(I8P, None),
                             _trampoline(module), arg])
        # a thread that cannot be started leaves its blocks to the others
        b.store(b.zext(b.icmp_signed("==", rc, I32(0)), I8), b.gep(started, [I64(0), t]))
    _block(b, job, I64(0))
    b.call(_work(module), [job])
    with counted_loop(b, I64(0), helpers, name="join") as t:
        with b.if_then(b.icmp_signed("!=", b.load(b.gep(started, [I64(0), t])), I8(0))):
            b.call(join, [b.load(b.gep(tids, [I64(0), t])),
                          ir.Constant(ir.PointerType(I8P), None)])
    # the blocks' statuses, combined in block order
    b.store(I32(0), result)
    with counted_loop(b, I64(0), count, name="combine") as t:
        status = b.load(b.gep(statuses, [I64(0), t]))
        old = b.load(result)
        keep_old = b.icmp_signed("!=", old, I32(0)) if combine == "first" else \
            b.icmp_signed("==", status, I32(0))
        b.store(b.select(keep_old, old, status), result)
    b.ret(b.load(result))
    return fn


__all__ = ["CHUNK_TYPE", "MIN_FUSED_ELEMENTS", "MIN_FUSED_WORK", "MIN_GEMM_FLOPS",
           "chunk_count", "define_chunk", "num_threads", "parallel_for"]
