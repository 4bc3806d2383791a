"""Native lowerings: one LLVM function per node, for nodes whose shapes are all known.

A lowering turns one node, with every input and output shape static, into

    i32 @<name>(i8** inputs, i8** outputs)

that reads dense row-major input buffers and writes dense row-major output buffers
(allocated by the caller), returning 0 or a status code > 0 that its registration maps
to a message. Shapes, strides and attributes are constants in the generated code, so
LLVM sees every trip count. The whole-step compiler (`step`) calls these functions one
after the other from one native function per partition; `compile_node` compiles a
single node on its own (per-node kernels and tests).

Registering a lowering::

    @lowering("Transpose", messages={1: "..."})
    def _transpose(cx: LoweringContext) -> None:
        src, dst = cx.input(0), cx.output(0)     # typed pointers
        with cx.loop(0, n) as i: ...             # counted loops
        cx.ret_ok()                              # or cx.fail_if(cond, 1)

`supports(node) -> bool` (optional) declines nodes the lowering does not handle (a dtype,
an attribute); such nodes run their reference kernel instead. Matrix products inside a
lowering call `cx.gemm(...)`, which the module resolves to BLAS when JIT-compiling and to
a generated kernel in ahead-of-time libraries.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import llvmlite.ir as ir
import numpy as np

from ...compiler.dtypes import DType, bool_
from ...compiler.ir import Node
from ...compiler.types import TensorType
from ...errors import TensorWeaveError, UnimplementedError
from . import parallel
from .elementwise import F32, F64, I1, I8, I32, I64, memory_type, scalar_type
from .epilogue import GemmEpilogue
from .loops import counted_loop

I8P = ir.PointerType(I8)
I8PP = ir.PointerType(I8P)
NODE_FUNCTION_TYPE = ir.FunctionType(I32, [I8PP, I8PP])

# GEMM flavours a module can be built with: "blas" calls SciPy's BLAS (JIT only);
# "generated" defines a loop-nest GEMM in the module (ahead-of-time libraries).
GEMM_MODES = ("blas", "generated")


@dataclass(frozen=True)
class NativeLowering:
    """How to emit one op: `emit(cx)`, which nodes it takes, and its status messages."""

    op: str
    emit: Callable[[LoweringContext], None]
    messages: Mapping[int, str] = field(default_factory=dict)
    supports: Callable[[Node], bool] | None = None
    # For lowerings whose statuses need the node to explain (fused clusters, the shapes
    # involved): status -> (message, the node to blame).
    describe: Callable[[Node, int], tuple[str, Node]] | None = None
    # Whether a failure is explained by the op's reference kernel run on the same inputs
    # where they are at hand (`reference_explanation`): it names the bad element (which
    # index, its value), which a status code cannot carry.
    explained_by_reference: bool = False


LOWERINGS: dict[str, NativeLowering] = {}


def lowering(*ops: str, messages: Mapping[int, str] | None = None,
             supports: Callable[[Node], bool] | None = None,
             describe: Callable[[Node, int], tuple[str, Node]] | None = None,
             explained_by_reference: bool = False
             ) -> Callable[[Callable[[LoweringContext], None]], Callable]:
    """Register the decorated ``emit(cx)`` as the native lowering of `ops`."""
    def deco(fn: Callable[[LoweringContext], None]) -> Callable:
        for op in ops:
            LOWERINGS[op] = NativeLowering(op, fn, dict(messages or {}), supports, describe,
                                           explained_by_reference)
        return fn
    return deco


def _ensure_registered() -> None:
    # The lowering families register themselves on import.
    from . import lowerings  # noqa: F401


def static_types(node: Node) -> bool:
    """Whether every input and output of `node` is a tensor of known shape."""
    return all(isinstance(v.type, TensorType) and v.type.is_fully_defined
               for v in list(node.inputs) + list(node.outputs))


def native_dtype(dtype: DType) -> bool:
    """Whether the cpu target computes in `dtype` natively (not f16/bf16)."""
    try:
        scalar_type(dtype)
        return True
    except UnimplementedError:
        return False


def find_lowering(node: Node) -> NativeLowering | None:
    """The lowering that takes `node`, or None (unknown op, unknown shapes, an
    unsupported dtype, or the lowering declines it)."""
    _ensure_registered()
    low = LOWERINGS.get(node.op)
    # (of the ops with regions, only fused clusters, `fusion` tag, are lowered as nodes)
    if low is None or node.regions and "fusion" not in node.opdef.tags or \
            not static_types(node):
        return None
    if not all(native_dtype(v.type.dtype) for v in list(node.inputs) + list(node.outputs)):
        return None
    if low.supports is not None:
        try:
            if not low.supports(node):
                return None
        except UnimplementedError:
            return None
    return low


# ------------------------------------------------------------------------ the context

class LoweringContext:
    """What an emitter gets: the node (static shapes), the module, the function being
    built and a builder positioned in it, plus helpers for loops, errors and GEMM."""

    def __init__(self, node: Node, module: ir.Module, fn: ir.Function, gemm_mode: str) -> None:
        self.node = node
        self.module = module
        self.fn = fn
        self.gemm_mode = gemm_mode
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self._entry = self.b.block
        self.in_types: list[TensorType] = [v.type for v in node.inputs]
        self.out_types: list[TensorType] = [v.type for v in node.outputs]
        self.attrs = node.attrs
        self._status = self.b.alloca(I32, name="status")
        self.b.store(I32(0), self._status)

    # ------------------------------------------------------------- buffers and types
    def _buffer(self, table: ir.Value, k: int, dtype: DType, name: str) -> ir.Value:
        raw = self.b.load(self.b.gep(table, [I64(k)]), name=f"{name}{k}.raw")
        return self.b.bitcast(raw, ir.PointerType(memory_type(dtype)), name=f"{name}{k}")

    def input(self, k: int) -> ir.Value:
        """Typed pointer to input `k` (element type: `memory_type`; bool is i8)."""
        return self._buffer(self.fn.args[0], k, self.in_types[k].dtype, "in")

    def output(self, k: int) -> ir.Value:
        """Typed pointer to output `k`."""
        return self._buffer(self.fn.args[1], k, self.out_types[k].dtype, "out")

    @staticmethod
    def scalar(dtype: DType) -> ir.Type:
        """The register type of one element of `dtype` (bool: i1)."""
        return scalar_type(dtype)

    @staticmethod
    def memory(dtype: DType) -> ir.Type:
        """The memory type of one element of `dtype` (bool: i8)."""
        return memory_type(dtype)

    def const(self, dtype: DType, value: Any) -> ir.Constant:
        """`value` as an LLVM constant of `dtype`'s register type."""
        if dtype is bool_:
            return ir.Constant(I1, int(bool(value)))
        return ir.Constant(scalar_type(dtype), value)

    def load(self, ptr: ir.Value, index: ir.Value | int, dtype: DType) -> ir.Value:
        """Element `index` of `ptr` as a register value (bool: i1)."""
        v = self.b.load(self.b.gep(ptr, [_i64(index)]))
        return self.b.trunc(v, I1) if dtype is bool_ else v

    def store(self, ptr: ir.Value, index: ir.Value | int, value: ir.Value, dtype: DType) -> None:
        """Store register `value` as element `index` of `ptr` (bool: widened to i8)."""
        if dtype is bool_:
            value = self.b.zext(value, I8)
        self.b.store(value, self.b.gep(ptr, [_i64(index)]))

    def alloca(self, t: ir.Type, count: int = 1, name: str = "") -> ir.Value:
        """A stack slot (or array) in the entry block."""
        with self.b.goto_block(self._entry):
            self.b.position_at_start(self._entry)
            return self.b.alloca(t, size=None if count == 1 else I64(count), name=name)

    # ------------------------------------------------------------------------ loops
    def loop(self, start: ir.Value | int, stop: ir.Value | int, step: int = 1,
             name: str = "i") -> contextlib.AbstractContextManager[ir.Value]:
        """``for (i = start; i < stop; i += step)``: the body is emitted inside the
        ``with`` block; yields the i64 index."""
        return counted_loop(self.b, _i64(start), _i64(stop), step, name)

    @contextlib.contextmanager
    def if_then(self, cond: ir.Value) -> Iterator[None]:
        """Emit the ``with`` block only when `cond` (i1) holds."""
        with self.b.if_then(cond):
            yield

    # ----------------------------------------------------------------- statuses
    def fail_if(self, cond: ir.Value, code: int) -> None:
        """Return status `code` from the function when `cond` (i1) holds."""
        if code not in self._messages():
            raise UnimplementedError(f"{self.node.op}: status {code} has no message")
        with self.b.if_then(cond, likely=False):
            self.b.ret(I32(code))

    def _messages(self) -> Mapping[int, str]:
        low = LOWERINGS.get(self.node.op)
        return low.messages if low else {}

    def ret_ok(self) -> None:
        """Finish the function: return 0."""
        self.b.ret(I32(0))

    # ----------------------------------------------------------------- memory
    def memcpy(self, dst: ir.Value, src: ir.Value, nbytes: ir.Value | int) -> None:
        """Copy `nbytes` bytes (non-overlapping)."""
        fn = _declare(self.module, "llvm.memcpy.p0i8.p0i8.i64",
                      ir.FunctionType(ir.VoidType(), [I8P, I8P, I64, I1]))
        self.b.call(fn, [self.b.bitcast(dst, I8P), self.b.bitcast(src, I8P), _i64(nbytes),
                         I1(0)])

    def memset(self, dst: ir.Value, byte: int, nbytes: ir.Value | int) -> None:
        """Fill `nbytes` bytes with `byte` (0 for zeros of any dtype)."""
        fn = _declare(self.module, "llvm.memset.p0i8.i64",
                      ir.FunctionType(ir.VoidType(), [I8P, I8, I64, I1]))
        self.b.call(fn, [self.b.bitcast(dst, I8P), I8(byte), _i64(nbytes), I1(0)])

    # ------------------------------------------------------------------- GEMM
    @property
    def in_parallel_region(self) -> bool:
        """Whether the function being built is a chunk of `parallel.parallel_for` (it
        runs on our own threads, beside other chunks)."""
        return self.fn.function_type == parallel.CHUNK_TYPE

    def gemm(self, dtype: DType, trans_a: bool, trans_b: bool, m: Any, n: Any, k: Any,
             alpha: float, a: ir.Value, lda: Any, b: ir.Value, ldb: Any, beta: float,
             c: ir.Value, ldc: Any, epilogue: GemmEpilogue | None = None) -> None:
        """Row-major ``C = alpha * op(A) @ op(B) + beta * C`` with C m x n, op(A) m x k
        and op(B) k x n; lda/ldb/ldc are row strides in elements (as in cblas).

        With an `epilogue` (C dense: ``ldc == n``), its function runs on the rows or
        columns of C that each GEMM call computed, right after that call on the same
        thread (a BLAS product split over threads: on each thread's chunk, still in
        its cache), instead of in a pass of its own over all of C."""
        fn = gemm_function(self.module, dtype, self.gemm_mode)
        serial = self.module.globals.get(fn.name + ".serial")
        split = None
        if serial is not None and self.gemm_mode == "blas":
            # (in a chunk of a parallel region, on our own threads: one call, never the
            # BLAS library's threads on top of ours)
            split = None if self.in_parallel_region else \
                gemm_plan(dtype, trans_a, trans_b, m, n, k)
            if split is None:
                fn = serial  # cutting this product would change its bits: one call
            elif split == "blas":
                fn = blas_threads_function(self.module, dtype)
                split = None  # (one call: an epilogue runs after it, over all of C)
            elif split == "cols" and epilogue is None:
                fn = _gemm_cols_function(self.module, fn, serial, dtype)
        t = scalar_type(dtype)
        args = [I32(int(trans_a)), I32(int(trans_b)), _i64(m), _i64(n), _i64(k),
                ir.Constant(t, alpha), a, _i64(lda), b, _i64(ldb), ir.Constant(t, beta),
                c, _i64(ldc)]
        if epilogue is None:
            self.b.call(fn, args)
            return
        if split is None:
            # one call (or, generated GEMMs on several threads, a call that cuts C by
            # rows itself), then the epilogue over C
            self.b.call(fn, args)
            self.b.call(epilogue.fn, [epilogue.ins, epilogue.outs, _i64(epilogue.base),
                                      I64(0), _i64(m), I64(0), _i64(n)])
            return
        _gemm_chunks_with_epilogue(self, serial, split, args, epilogue, dtype)


def _i64(x: ir.Value | int) -> ir.Value:
    return I64(int(x)) if isinstance(x, (int, np.integer)) else x


def _declare(module: ir.Module, name: str, ftype: ir.FunctionType) -> ir.Function:
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ftype, name)
    return fn


# ------------------------------------------------------------------------- GEMM

def gemm_function(module: ir.Module, dtype: DType, mode: str) -> ir.Function:
    """``void tw_gemm_<dt>(i32 ta, i32 tb, i64 m, i64 n, i64 k, T alpha, T* a, i64 lda,
    T* b, i64 ldb, T beta, T* c, i64 ldc)`` in `module` (defined once per module).

    With `parallel.num_threads()` > 1 (read now), products of `parallel.MIN_GEMM_FLOPS`
    multiply-adds or more are split by rows of C over threads (`_gemm_split_rows`),
    with bit-for-bit the results of one call."""
    name = f"tw_gemm_{dtype.ir_name}"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    if dtype.ir_name not in ("f32", "f64"):
        raise UnimplementedError(f"no GEMM for {dtype.ir_name}")
    ftype = _gemm_type(dtype)
    if mode not in GEMM_MODES:
        raise UnimplementedError(f"unknown GEMM mode {mode!r}")
    fn = ir.Function(module, ftype, name)
    fn.linkage = "internal"
    threads = parallel.num_threads()
    align = 1 if mode == "generated" or threads == 1 else blas_row_align(dtype.ir_name)
    if align is None:  # this BLAS's rows depend on how C is cut: never cut it
        threads = 1
    # With one thread `fn` is the serial GEMM itself (exactly the code of a serial build);
    # with more, `fn` splits big products by rows over calls of the serial one.
    serial = fn
    if threads > 1:
        serial = ir.Function(module, ftype, name + ".serial")
        serial.linkage = "internal"
    if mode == "blas":
        _gemm_via_blas(module, serial, dtype)
    else:
        _gemm_generated(serial, dtype)
    if threads > 1:
        _gemm_split_rows(module, fn, serial, threads, align)
    return fn


def _gemm_type(dtype: DType) -> ir.FunctionType:
    """``void (i32 ta, i32 tb, i64 m, i64 n, i64 k, T alpha, T* a, i64 lda, T* b, i64 ldb,
    T beta, T* c, i64 ldc)``: every GEMM function's type (`gemm_function`)."""
    t = scalar_type(dtype)
    tp = ir.PointerType(t)
    return ir.FunctionType(ir.VoidType(), [I32, I32, I64, I64, I64, t, tp, I64, tp, I64, t,
                                           tp, I64])


def _gemm_via_blas(module: ir.Module, fn: ir.Function, dtype: DType) -> None:
    """Define `fn` as one BLAS call on one thread: under the BLAS lock as a reader
    (`blas.LOCK_SYMBOL`: no threaded call changes the library's thread count
    meanwhile)."""
    lock = _blas_lock(module)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.call(_rwlock_function(module, "pthread_rwlock_rdlock"), [lock])
    b.call(_blas_call_function(module, dtype), list(fn.args))
    b.call(_rwlock_function(module, "pthread_rwlock_unlock"), [lock])
    b.ret_void()


def _blas_lock(module: ir.Module) -> ir.Value:
    """The process's BLAS readers-writer lock (`blas.LOCK_SYMBOL`, an external global)."""
    from .blas import LOCK_SYMBOL
    lock = module.globals.get(LOCK_SYMBOL)
    if lock is None:
        lock = ir.GlobalVariable(module, I8, LOCK_SYMBOL)
    return lock


def _rwlock_function(module: ir.Module, name: str) -> ir.Function:
    return _declare(module, name, ir.FunctionType(I32, [I8P]))


def blas_threads_function(module: ir.Module, dtype: DType, wait: bool = False) -> ir.Function:
    """``tw_gemm_<dt>.blas_threads`` (defined once per module, the signature of
    `gemm_function`'s): the product on `parallel.num_threads()` of the BLAS library's
    own threads, as the only BLAS call in flight: it takes the BLAS lock as the writer,
    sets the library's thread count, calls the BLAS and sets the count back. When
    another BLAS call is in flight (another step, on another thread) it does not wait:
    it runs the product on one thread, with the same bits (`gemm_plan` allows only such
    products) and no third thread on cores the other call keeps busy.

    `wait` (the probe's ``.blas_threads_wait``): wait for the lock instead; C is left
    untouched if it cannot be taken."""
    from .blas import GET_THREADS, SET_THREADS
    name = f"tw_gemm_{dtype.ir_name}.blas_threads" + ("_wait" if wait else "")
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    serial = None
    if not wait:
        serial = gemm_function(module, dtype, "blas")
        serial = module.globals.get(serial.name + ".serial") or serial
    fn = ir.Function(module, _gemm_type(dtype), name)
    fn.linkage = "internal"
    lock = _blas_lock(module)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    taken = b.call(_rwlock_function(module, "pthread_rwlock_wrlock" if wait
                                    else "pthread_rwlock_trywrlock"), [lock])
    with b.if_else(b.icmp_signed("==", taken, I32(0))) as (threaded, one):
        with threaded:
            get = _declare(module, GET_THREADS, ir.FunctionType(I32, []))
            set_ = _declare(module, SET_THREADS, ir.FunctionType(ir.VoidType(), [I32]))
            before = b.call(get, [])
            b.call(set_, [I32(parallel.num_threads())])
            b.call(_blas_call_function(module, dtype), list(fn.args))
            b.call(set_, [before])
            b.call(_rwlock_function(module, "pthread_rwlock_unlock"), [lock])
        with one:
            if serial is not None:
                b.call(serial, list(fn.args))
    b.ret_void()
    return fn


def _blas_call_function(module: ir.Module, dtype: DType) -> ir.Function:
    """``tw_gemm_<dt>.blas_call`` (once per module, `gemm_function`'s signature): the BLAS
    call itself, no lock. Row-major C = op(A) op(B) is column-major C^T = op(B)^T
    op(A)^T: call the Fortran routine with B first and m, n swapped (every argument by
    pointer).

    The BLAS takes its sizes as 32-bit ints: a product with a size or leading dimension
    past the int32 range runs the generated GEMM (int64 loops) instead of the BLAS
    with truncated sizes, which refuses them or reads the wrong rows (C left as it
    was: a silently wrong product)."""
    from .blas import _GEMM
    name = f"tw_gemm_{dtype.ir_name}.blas_call"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    t = scalar_type(dtype)
    tp = ir.PointerType(t)
    i32p = ir.PointerType(I32)
    fn = ir.Function(module, _gemm_type(dtype), name)
    fn.linkage = "internal"
    blas = _declare(module, _GEMM[dtype.ir_name],
                    ir.FunctionType(ir.VoidType(), [I8P, I8P, i32p, i32p, i32p, tp, tp, i32p, tp,
                                                    i32p, tp, tp, i32p]))
    ta, tb, m, n, k, alpha, a, lda, b_, ldb, beta, c, ldc = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    def slot(t_: ir.Type, value: ir.Value) -> ir.Value:
        p = b.alloca(t_)
        b.store(value, p)
        return p

    def trans(flag: ir.Value) -> ir.Value:
        return slot(I8, b.select(b.icmp_signed("!=", flag, I32(0)), I8(ord("T")), I8(ord("N"))))

    wide = None
    for size in (m, n, k, lda, ldb, ldc):
        past = b.icmp_signed(">", size, I64(2**31 - 1))
        wide = past if wide is None else b.or_(wide, past)
    with b.if_then(wide, likely=False):
        b.call(_gemm_generated_function(module, dtype), list(fn.args))
        b.ret_void()
    args = [trans(tb), trans(ta), slot(I32, b.trunc(n, I32)), slot(I32, b.trunc(m, I32)),
            slot(I32, b.trunc(k, I32)), slot(t, alpha), b_, slot(I32, b.trunc(ldb, I32)), a,
            slot(I32, b.trunc(lda, I32)), slot(t, beta), c, slot(I32, b.trunc(ldc, I32))]
    b.call(blas, args)
    b.ret_void()
    return fn


def _gemm_generated_function(module: ir.Module, dtype: DType) -> ir.Function:
    """``tw_gemm_<dt>.generated`` (once per module, `gemm_function`'s signature): the
    generated GEMM, for the products the BLAS cannot take (`_blas_call_function`)."""
    name = f"tw_gemm_{dtype.ir_name}.generated"
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, _gemm_type(dtype), name)
        fn.linkage = "internal"
        _gemm_generated(fn, dtype)
    return fn


def _gemm_generated(fn: ir.Function, dtype: DType) -> None:
    """A self-contained GEMM (i-p-j loop order, vectorized by LLVM over j), for libraries
    that must not depend on a BLAS."""
    ta, tb, m, n, k, alpha, a, lda, b_, ldb, beta, c, ldc = fn.args
    # (noalias holds: C never overlaps A or B. A product's output is a workspace value
    # placed after its inputs' last use, a result buffer or the loop's accumulator
    # (outer_acc, whose A and B are the histories: `step._Planner`), and a donated
    # argument takes a result only from a Fusion (`allocator._elementwise_reader`);
    # A and B may be the same memory, f(x, x): both are only read)
    for p in (a, b_, c):
        p.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    t = scalar_type(dtype)
    zero = ir.Constant(t, 0.0)
    a_row_major = b.icmp_signed("==", ta, I32(0))
    b_row_major = b.icmp_signed("==", tb, I32(0))
    with counted_loop(b, I64(0), m, name="i") as i:
        crow = b.mul(i, ldc)
        with counted_loop(b, I64(0), n, name="z") as j:
            pc = b.gep(c, [b.add(crow, j)])
            old = b.load(pc)
            scaled = b.select(b.fcmp_ordered("==", beta, zero), zero, b.fmul(old, beta))
            b.store(scaled, pc)
        with counted_loop(b, I64(0), k, name="p") as p:
            a_idx = b.select(a_row_major, b.add(b.mul(i, lda), p), b.add(b.mul(p, lda), i))
            av = b.fmul(b.load(b.gep(a, [a_idx])), alpha)
            with counted_loop(b, I64(0), n, name="j") as j:
                b_idx = b.select(b_row_major, b.add(b.mul(p, ldb), j), b.add(b.mul(j, ldb), p))
                pc = b.gep(c, [b.add(crow, j)])
                b.store(b.fadd(b.load(pc), b.fmul(av, b.load(b.gep(b_, [b_idx])))), pc)
    b.ret_void()


# Candidate row tiles of a BLAS (the rows of C its kernel computes together), smallest
# first; `blas_row_align` keeps the first one that makes cutting C exact.
_ROW_TILES = (1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96)
_PROBE_ROWS = 2 * _ROW_TILES[-1] + 5  # rows of the probe product (k = n = 40)


@functools.cache
def blas_row_align(dtype_name: str) -> int | None:
    """Where this process's BLAS may cut a row-major C into row blocks without changing
    one bit of it: the smallest row count `t` such that C computed as separate calls on
    row blocks starting at multiples of `t` equals C computed in one call, on a probe
    product; None when no candidate does (or there is no BLAS, or the BLAS runs several
    threads of its own: ``TW_BLAS_THREADS`` other than 1), and the GEMM is never cut.

    Measured because it differs between kernels: OpenBLAS's sgemm on AVX2 (Haswell/Zen)
    computes 12 rows of C together and its rounding depends on a row's place in that
    tile (a cut at a row that is not a multiple of 12 changes the last bits of the rows
    around it); its dgemm works on 2. The probe checks the cuts of a product with
    `_PROBE_ROWS` rows at the multiples of each candidate tile in turn (a few
    milliseconds, once per process and dtype) and keeps the first tile found exact."""
    if os.environ.get("TW_BLAS_THREADS", "1").strip() != "1":
        return None
    from .blas import _GEMM, blas_addresses, register_blas
    if not register_blas():
        return None
    dt = np.float32 if dtype_name == "f32" else np.float64
    ptr = ctypes.c_void_p
    blas = ctypes.CFUNCTYPE(None, *[ptr] * 13)(blas_addresses()[_GEMM[dtype_name]])
    # A first guess of the alignment only: each product is checked at its own shape
    # before it is split (`_split_is_exact`).
    k = n = 40
    # irregular values with full mantissas (numpy.random would cost an import)
    a = np.sin(np.arange(_PROBE_ROWS * k) * 1.618).reshape(_PROBE_ROWS, k).astype(dt)
    b = np.cos(np.arange(k * n) * 0.577).reshape(k, n).astype(dt)

    def rows(lo: int, hi: int) -> np.ndarray:
        # row-major C[lo:hi] = A[lo:hi] @ B as column-major C^T = B^T A^T
        c = np.zeros((hi - lo, n), dt)
        i32 = [ctypes.c_int32(v) for v in (n, hi - lo, k, n, k, n)]
        scal = np.array([1.0, 0.0], dt)
        no = ctypes.c_char(b"N")
        blas(ctypes.byref(no), ctypes.byref(no), *[ctypes.byref(v) for v in i32[:3]],
             scal[0:].ctypes.data, b.ctypes.data, ctypes.byref(i32[3]),
             a[lo:hi].ctypes.data, ctypes.byref(i32[4]), scal[1:].ctypes.data, c.ctypes.data,
             ctypes.byref(i32[5]))
        return c

    from .blas import serial_calls
    with serial_calls():  # (one BLAS thread, whatever other threads do meanwhile)
        whole = rows(0, _PROBE_ROWS)

        @functools.cache
        def exact(r: int) -> bool:  # is cutting C at row r exact?
            return np.array_equal(whole, np.vstack([rows(0, r), rows(r, _PROBE_ROWS)]))

        for t in _ROW_TILES:
            if all(exact(r) for r in range(t, _PROBE_ROWS, t)):
                return t
    return None


PROBE_MAX_MACS = 1 << 31
"""Largest product whose split is checked at its own shape (two BLAS calls at compile
time, ~0.1 s at this size); bigger products are not split."""


def col_align(dtype: DType) -> int:
    """Where `_gemm_split_cols` may cut the columns of C: at multiples of a cache line
    (64 bytes), so that no two threads write the same line of C."""
    return max(1, 64 // np.dtype(dtype.np).itemsize)


def gemm_split(dtype: DType, ta: bool, tb: bool, m: Any, n: Any, k: Any) -> str | None:
    """How the step splits this BLAS product over threads: ``"rows"`` (blocks of rows of
    C, `_gemm_split_rows`), ``"cols"`` (blocks of columns of C with all of K,
    `_gemm_cols_function`) or None (one serial call).

    Each thread's BLAS call packs its own copy of the operand the threads share: all of
    op(B) (k x n) for a row split, all of op(A) (m x k) for a column split. So the split
    that copies less is tried first (columns when m <= n: on the AVX-512 host of issue 13,
    two threads, the MLP step's products with m = 256 and n = 1024 ran at 252-283 GFLOP/s
    cut by columns and 122-160 cut by rows, and took 2-20% less CPU time; W3's products
    with m >> n took 5-25% less cut by rows), the other one next. Either must give the
    bits of one BLAS call: `blas_row_align` probes one shape, but OpenBLAS picks kernels
    by shape (on SkylakeX a dgemm with an odd n changes bits at nearly every row cut
    while n = 256 changes none), so each static shape big enough to be split is checked
    once, at its own size, transposes and cuts (`_probe_split`); dynamic shapes are not
    split."""
    if not all(isinstance(x, (int, np.integer)) for x in (m, n, k)):
        return None
    m, n, k = int(m), int(n), int(k)
    threads = parallel.num_threads()
    if threads == 1 or m * n * k < parallel.MIN_GEMM_FLOPS or m * n * k > PROBE_MAX_MACS:
        return None
    row = blas_row_align(dtype.ir_name)
    col = col_align(dtype)
    candidates = []
    if row is not None and m >= 2 * row:
        candidates.append(("rows", row))
    if row is not None and n >= 2 * col:  # (no row alignment: the BLAS runs threads)
        candidates.insert(0 if m <= n else len(candidates), ("cols", col))
    for how, align in candidates:
        if _probe_split(dtype.ir_name, bool(ta), bool(tb), m, n, k, threads, align, how):
            return how
    return None


@functools.cache
def _probe_split(dtype_name: str, ta: bool, tb: bool, m: int, n: int, k: int, threads: int,
                 align: int, how: str = "rows") -> bool:
    """Whether C computed as `threads` BLAS calls on blocks of rows (or columns) starting
    at multiples of `align` is bit for bit C computed in one call.

    The answer is kept in the disk cache too, beside the BLAS probe's (`executable.
    _blas_probe_key`: the library's path, size and time, the host CPU, the thread
    settings, the code generator's source): a new graph with products of shapes seen
    before (a model edited and run again) skips the probes, ~0.1 s of a W2/W3 compile."""
    from . import disk_cache
    args = (dtype_name, ta, tb, m, n, k, threads, align, how)
    answer = disk_cache.note(_split_probe_key(*args),
                             lambda: b"1" if _run_split_probe(*args) else b"0",
                             valid=lambda payload: payload in (b"0", b"1"))
    return answer == b"1"


def _split_probe_key(dtype_name: str, ta: bool, tb: bool, m: int, n: int, k: int,
                     threads: int, align: int, how: str) -> str | None:
    """The disk-cache key of one split probe's answer (None: not cached)."""
    return _probe_key("split probe v2", dtype_name, ta, tb, m, n, k, threads, align, how)


def _probe_key(what: str, *args: Any) -> str | None:
    """The disk-cache key of a per-shape probe's answer: `what` and `args` (the probe's
    arguments) under the BLAS probe's key (`executable._blas_probe_key`: the library, the
    host CPU, the thread settings, the code generator); None: not cached."""
    import hashlib

    from .executable import _blas_probe_key
    base = _blas_probe_key(os.environ.get("TW_BLAS_THREADS", ""))
    if base is None:
        return None
    text = f"tensorweave {what}\0{base}\0" + " ".join(str(a) for a in args)
    return hashlib.sha256(text.encode()).hexdigest()


# The last probed shape's whole product (the operands are always the same pool): when a
# column cut changes the bits, `gemm_split` probes a row cut of the same product next
# (every product of W2 and W3 on the znver4 host), which then runs only the cut calls.
_SPLIT_PROBE_WHOLE: dict[tuple, np.ndarray] = {}
_SPLIT_PROBE_KEEP_BYTES = 64 << 20


def _run_split_probe(dtype_name: str, ta: bool, tb: bool, m: int, n: int, k: int,
                     threads: int, align: int, how: str) -> bool:
    """`_probe_split`'s answer, computed: the product whole and cut, compared."""
    from .blas import _GEMM, blas_addresses
    dt = np.float32 if dtype_name == "f32" else np.float64
    ptr = ctypes.c_void_p
    blas = ctypes.CFUNCTYPE(None, *[ptr] * 13)(blas_addresses()[_GEMM[dtype_name]])
    # (pooled operands: a copy, where sin/cos of every element took a quarter of the probe)
    a = _probe_operands((k, m) if ta else (m, k), dt, 0)
    b = _probe_operands((n, k) if tb else (k, n), dt, 1)
    scal = np.array([1.0, 0.0], dt)
    flag = {False: ctypes.c_char(b"N"), True: ctypes.c_char(b"T")}

    def part(r0: int, r1: int, c0: int, c1: int, c: np.ndarray) -> None:
        # C[r0:r1, c0:c1] as _gemm_via_blas computes it: row-major C = op(A) op(B) is
        # column-major C^T = op(B)^T op(A)^T
        a_ptr = a.ctypes.data + (r0 if ta else r0 * k) * a.itemsize
        b_ptr = b.ctypes.data + (c0 * k if tb else c0) * b.itemsize
        i32 = [ctypes.c_int32(v) for v in (c1 - c0, r1 - r0, k, k if tb else n,
                                           m if ta else k, n)]
        blas(ctypes.byref(flag[tb]), ctypes.byref(flag[ta]), *[ctypes.byref(v) for v in i32[:3]],
             scal[0:].ctypes.data, b_ptr, ctypes.byref(i32[3]), a_ptr,
             ctypes.byref(i32[4]), scal[1:].ctypes.data, c[r0:r1, c0:].ctypes.data,
             ctypes.byref(i32[5]))

    from .blas import serial_calls
    shape = (dtype_name, ta, tb, m, n, k)
    whole = _SPLIT_PROBE_WHOLE.get(shape)
    cut = np.zeros((m, n), dt)
    total = m if how == "rows" else n
    per = -(-total // threads)
    per = -(-per // align) * align
    with serial_calls():  # (one BLAS thread, whatever other threads do meanwhile)
        if whole is None:
            whole = np.zeros((m, n), dt)
            part(0, m, 0, n, whole)
            _SPLIT_PROBE_WHOLE.clear()
            if whole.nbytes <= _SPLIT_PROBE_KEEP_BYTES:
                _SPLIT_PROBE_WHOLE[shape] = whole
        for lo in range(0, total, per):
            hi = min(total, lo + per)
            part(lo, hi, 0, n, cut) if how == "rows" else part(0, m, lo, hi, cut)
            block = np.s_[lo:hi, :] if how == "rows" else np.s_[:, lo:hi]
            if not np.array_equal(whole[block], cut[block]):
                return False  # (a cut that failed: on this host the first block tells)
    return True


# ------------------------------------------------ products on the BLAS's own threads

BLAS_THREADS_MARGIN = 0.05
"""How much faster than our own split (or one call) OpenBLAS's threads must run a
product, in the probe's medians, for `gemm_plan` to give it to them."""
_BLAS_THREADS_DRAWS = 3  # operand draws whose bits must all agree
_BLAS_THREADS_ROUNDS = 5  # timed rounds of each way (interleaved), after one warm-up


def blas_own_threads() -> bool:
    """Whether products may run on the BLAS library's own threads (`gemm_plan`):
    ``TW_BLAS_OWN_THREADS=1`` asks for it (off by default: on the znver4 host of this
    change no product of W2 or W5 kept its bits on OpenBLAS's threads, so the probes
    only added to cold compiles; on an Intel AVX-512 host most did, ~5% on the W2 step),
    the runtime's one-thread BLAS policy is in force (``TW_BLAS_THREADS`` 1: otherwise
    the library runs threads anyway), and the library's thread count can be set."""
    if os.environ.get("TW_BLAS_OWN_THREADS", "0").strip() != "1":
        return False
    return blas_threads_settable()


def blas_threads_settable() -> bool:
    """Whether the BLAS library's thread count can be set around one call
    (`blas.thread_control`) under the one-thread policy (``TW_BLAS_THREADS`` 1)."""
    if os.environ.get("TW_BLAS_THREADS", "1").strip() != "1":
        return False
    from .blas import register_blas, thread_control
    return register_blas() and thread_control() is not None


def gemm_plan(dtype: DType, ta: bool, tb: bool, m: Any, n: Any, k: Any) -> str | None:
    """How a BLAS product runs over threads: ``"blas"`` (one call on the BLAS library's
    own threads, `blas_threads_function`), else `gemm_split`'s answer (``"rows"``,
    ``"cols"``: our cut; None: one call on one thread).

    ``"blas"`` only where the probe (`_probe_blas_threads`) found the library's threads
    give one thread's bits at this shape, transposes and dtype in every draw, and run
    faster than the other answer by `BLAS_THREADS_MARGIN`: OpenBLAS cuts C by its own
    rules, and its kernels' rounding depends on where a cut falls (on the AVX2 host of
    this change nearly every product of W2 and W5 changed bits; on an AVX-512 host most
    kept them). Products in parallel regions (our own threads) never come here
    (`LoweringContext.gemm`)."""
    own = gemm_split(dtype, ta, tb, m, n, k)
    if not all(isinstance(x, (int, np.integer)) for x in (m, n, k)):
        return own
    m, n, k = int(m), int(n), int(k)
    threads = parallel.num_threads()
    if threads == 1 or not parallel.MIN_GEMM_FLOPS <= m * n * k <= PROBE_MAX_MACS \
            or dtype.ir_name not in ("f32", "f64") or not blas_own_threads():
        return own
    if _probe_blas_threads(dtype.ir_name, bool(ta), bool(tb), m, n, k, threads, own or "one"):
        return "blas"
    return own


@functools.cache
def _probe_blas_threads(dtype_name: str, ta: bool, tb: bool, m: int, n: int, k: int,
                        threads: int, own: str) -> bool:
    """Whether this product may run on `threads` of the BLAS library's threads instead of
    `own` (``"rows"``, ``"cols"``: our split; ``"one"``: one call): the same bits as one
    thread in every draw, and faster. Kept in the disk cache beside the split probes'
    answers (`_split_probe_key`'s base)."""
    from . import disk_cache
    args = (dtype_name, ta, tb, m, n, k, threads, own)
    answer = disk_cache.note(_probe_key("blas threads probe v1", *args),
                             lambda: b"1" if _run_blas_threads_probe(*args) else b"0",
                             valid=lambda payload: payload in (b"0", b"1"))
    return answer == b"1"


_PROBE_POOL = 4093  # values the probe operands repeat (a prime: no period meets a tile)


@functools.cache
def _probe_pool(draw: int) -> np.ndarray:
    """`_PROBE_POOL` pseudo-random float64 values with full mantissas, both signs and,
    after the first draw, exponents over 8 octaves: a hash of the index and `draw`
    (numpy.random would cost an import)."""
    with np.errstate(over="ignore"):
        x = np.arange(_PROBE_POOL, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        x += np.uint64(0x632BE59BD9B4E019 * (draw + 1) % (1 << 64))
        x ^= x >> np.uint64(29)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(32)
    v = 1.0 + (x >> np.uint64(12)).astype(np.float64) * 2.0 ** -52  # [1, 2)
    v[(x & np.uint64(8)) != 0] *= -1.0
    if draw:
        v *= np.exp2(np.arange(-3.0, 5.0))[(x & np.uint64(7)).astype(np.intp)]
    return v


def _probe_operands(shape: tuple[int, int], dt: Any, draw: int) -> np.ndarray:
    """An operand of the probes: `_probe_pool` repeated over `shape` (cheap: a copy)."""
    return np.resize(_probe_pool(draw).astype(dt), shape)


def _run_blas_threads_probe(dtype_name: str, ta: bool, tb: bool, m: int, n: int, k: int,
                            threads: int, own: str) -> bool:
    """`_probe_blas_threads`'s answer, computed: `blas_threads_exact`, then
    `blas_threads_faster`."""
    if threads != parallel.num_threads():  # (the kernels are built for this count)
        return False
    shape = (dtype_name, ta, tb, m, n, k)
    return blas_threads_exact(*shape) and blas_threads_faster(*shape, own)


def _probe_kernel(dtype_name: str, ta: bool, tb: bool, m: int, n: int, k: int,
                  timing: bool = False) -> Callable[[np.ndarray, np.ndarray, str], np.ndarray]:
    """``run(a, b, how)``: op(a) @ op(b) through the JIT'd GEMM code products run, built
    for `parallel.num_threads()`: ``how`` "one" (one thread) or "blas_wait" (the
    library's threads, `blas_threads_function` waiting for the lock) from a small module
    of its own (`_probe_gemms`: its compile is most of a probe); with `timing`, any key of
    `blas.SPLIT_CODES` through `blas.matmul_function` (our splits too)."""
    from ...compiler.dtypes import as_dtype
    dt = np.float32 if dtype_name == "f32" else np.float64
    if not timing:
        gemms = _probe_gemms(dtype_name, parallel.num_threads())

        def run_gemm(a: np.ndarray, b: np.ndarray, how: str) -> np.ndarray:
            c = np.full((m, n), np.nan, dt)  # (a writer that cannot take the lock: none)
            gemms[how](int(ta), int(tb), m, n, k, 1.0, a.ctypes.data, m if ta else k,
                       b.ctypes.data, k if tb else n, 0.0, c.ctypes.data, n)
            return c

        return run_gemm
    from .blas import SPLIT_CODES, matmul_function
    fn, _module = matmul_function(as_dtype(dt), runtime=True)  # (`jit` keeps the code)
    zero = np.zeros(1, np.int64)

    def run(a: np.ndarray, b: np.ndarray, how: str) -> np.ndarray:
        c = np.full((m, n), np.nan, dt)
        dims = np.array([m, n, k, int(ta), int(tb), SPLIT_CODES[how]], np.int64)
        fn(a.ctypes.data, b.ctypes.data, c.ctypes.data, 1, zero.ctypes.data, zero.ctypes.data,
           dims.ctypes.data)
        return c

    return run


@functools.cache
def _probe_gemms(dtype_name: str, threads: int) -> dict[str, Any]:
    """The bit probe's two GEMMs as ctypes functions of `_gemm_type`'s arguments: "one",
    one BLAS call on one thread (`_gemm_via_blas`), and "blas_wait", `threads` of the
    library's threads (`blas_threads_function`, waiting for the lock; `threads` is
    `parallel.num_threads()`, which the code generator reads), compiled for this
    process (tensorweave's own code: `jit.compile_module` with ``runtime``)."""
    from ...compiler.dtypes import as_dtype
    from . import jit
    dtype = as_dtype(np.float32 if dtype_name == "f32" else np.float64)
    module = ir.Module(name=f"tw_blas_probe_{dtype_name}")
    one = ir.Function(module, _gemm_type(dtype), "tw_probe_one")
    _gemm_via_blas(module, one, dtype)
    threaded = ir.Function(module, _gemm_type(dtype), "tw_probe_threads")
    b = ir.IRBuilder(threaded.append_basic_block("entry"))
    b.call(blas_threads_function(module, dtype, wait=True), list(threaded.args))
    b.ret_void()
    compiled = jit.compile_module(str(module), ["tw_probe_one", "tw_probe_threads"],
                                  runtime=True)
    scalar = ctypes.c_float if dtype_name == "f32" else ctypes.c_double
    i32, i64, ptr = ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p
    ftype = ctypes.CFUNCTYPE(None, i32, i32, i64, i64, i64, scalar, ptr, i64, ptr, i64, scalar,
                             ptr, i64)
    return {"one": ftype(compiled.address("tw_probe_one")),
            "blas_wait": ftype(compiled.address("tw_probe_threads")),
            "module": compiled}  # (kept alive with the functions)


def probe_operands(dtype_name: str, ta: bool, tb: bool, m: int, n: int, k: int,
                   draw: int) -> tuple[np.ndarray, np.ndarray]:
    """The probes' a and b of one draw (`_probe_operands`), laid out for `ta`, `tb`."""
    dt = np.float32 if dtype_name == "f32" else np.float64
    return (_probe_operands((k, m) if ta else (m, k), dt, draw),
            _probe_operands((n, k) if tb else (k, n), dt, draw + 7))


def blas_threads_exact(dtype_name: str, ta: bool, tb: bool, m: int, n: int, k: int) -> bool:
    """Whether the product on `parallel.num_threads()` of the BLAS library's threads
    gives one thread's bits in every one of `_BLAS_THREADS_DRAWS` operand draws."""
    run = _probe_kernel(dtype_name, ta, tb, m, n, k)
    for draw in range(_BLAS_THREADS_DRAWS):
        a, b = probe_operands(dtype_name, ta, tb, m, n, k, draw)
        if not np.array_equal(run(a, b, "one"), run(a, b, "blas_wait")):
            return False
    return True


def blas_threads_faster(dtype_name: str, ta: bool, tb: bool, m: int, n: int, k: int,
                        own: str) -> bool:
    """Whether the BLAS library's threads run the product faster than `own` (``"rows"``,
    ``"cols"``: our split; ``"one"``: one call) by `BLAS_THREADS_MARGIN`: medians of
    `_BLAS_THREADS_ROUNDS` interleaved rounds after a warm-up (so that both see the same
    load on a shared machine)."""
    import time
    run = _probe_kernel(dtype_name, ta, tb, m, n, k, timing=True)
    a, b = probe_operands(dtype_name, ta, tb, m, n, k, 0)
    times: dict[str, list[float]] = {own: [], "blas": []}
    for _ in range(_BLAS_THREADS_ROUNDS + 1):
        for how in times:
            start = time.perf_counter()
            run(a, b, how)
            times[how].append(time.perf_counter() - start)
    own_s, blas_s = (sorted(times[how][1:])[_BLAS_THREADS_ROUNDS // 2] for how in (own, "blas"))
    return blas_s < (1 - BLAS_THREADS_MARGIN) * own_s


def _gemm_split_rows(module: ir.Module, fn: ir.Function, serial: ir.Function,
                     threads: int, align: int) -> None:
    """Define `fn` (same signature as `serial`): products of at least
    `parallel.MIN_GEMM_FLOPS` multiply-adds run as calls of `serial` on blocks of rows of
    C (and of op(A)) starting at multiples of `align`, one per thread; smaller ones call
    `serial` once. Every element of C comes out the same as from one `serial` call."""
    ctx_type = ir.LiteralStructType([a.type for a in fn.args])
    chunk = parallel.define_chunk(module, fn.name + ".rows")
    cb = ir.IRBuilder(chunk.append_basic_block("entry"))
    ctx = cb.bitcast(chunk.args[0], ir.PointerType(ctx_type))
    ta, tb, m, n, k, alpha, a, lda, b_, ldb, beta, c, ldc = (
        cb.load(cb.gep(ctx, [I32(0), I32(j)])) for j in range(len(fn.args)))
    begin, end = chunk.args[1], chunk.args[2]
    # row i of op(A) is row i of A, or column i of A when A is transposed
    a_off = cb.select(cb.icmp_signed("==", ta, I32(0)), cb.mul(begin, lda), begin)
    cb.call(serial, [ta, tb, cb.sub(end, begin), n, k, alpha, cb.gep(a, [a_off]), lda, b_,
                     ldb, beta, cb.gep(c, [cb.mul(begin, ldc)]), ldc])
    cb.ret(I32(0))

    b = ir.IRBuilder(fn.append_basic_block("entry"))
    slot = b.alloca(ctx_type, name="ctx")
    m, n, k = fn.args[2:5]
    big = b.and_(b.icmp_signed(">=", b.mul(b.mul(m, n), k), I64(parallel.MIN_GEMM_FLOPS)),
                 b.icmp_signed(">=", m, I64(2 * align)))
    with b.if_else(big, likely=None) as (split, whole):
        with split:
            for j, arg in enumerate(fn.args):
                b.store(arg, b.gep(slot, [I32(0), I32(j)]))
            # one block per thread: each BLAS call packs all of op(B) again, so smaller
            # blocks cost more than they balance (256x1024x784 on 2 threads: 2.7 ms in
            # 2 blocks, 3.4 ms in 4, 4.3 ms in 8; one thread: 4.8 ms)
            parallel.parallel_for(b, chunk, slot, m, threads, align=align)
        with whole:
            b.call(serial, list(fn.args))
    b.ret_void()


def _gemm_cols_function(module: ir.Module, fn: ir.Function, serial: ir.Function,
                        dtype: DType) -> ir.Function:
    """``<fn>.cols`` (defined once per module, same signature as `serial`): C cut into
    blocks of columns (of op(B) too) starting at multiples of `col_align`, one per
    thread, each a `serial` call over all of K; products that `gemm_split` sends here
    are big enough to repay the threads."""
    name = fn.name + ".cols"
    cols = module.globals.get(name)
    if cols is not None:
        return cols
    cols = ir.Function(module, serial.function_type, name)
    cols.linkage = "internal"
    ctx_type = ir.LiteralStructType([a.type for a in cols.args])
    chunk = parallel.define_chunk(module, name + ".chunk")
    cb = ir.IRBuilder(chunk.append_basic_block("entry"))
    ctx = cb.bitcast(chunk.args[0], ir.PointerType(ctx_type))
    ta, tb, m, n, k, alpha, a, lda, b_, ldb, beta, c, ldc = (
        cb.load(cb.gep(ctx, [I32(0), I32(j)])) for j in range(len(cols.args)))
    begin, end = chunk.args[1], chunk.args[2]
    # column j of op(B) is column j of B, or row j of B when B is transposed
    b_off = cb.select(cb.icmp_signed("==", tb, I32(0)), begin, cb.mul(begin, ldb))
    cb.call(serial, [ta, tb, m, cb.sub(end, begin), k, alpha, a, lda, cb.gep(b_, [b_off]),
                     ldb, beta, cb.gep(c, [begin]), ldc])
    cb.ret(I32(0))

    b = ir.IRBuilder(cols.append_basic_block("entry"))
    slot = b.alloca(ctx_type, name="ctx")
    for j, arg in enumerate(cols.args):
        b.store(arg, b.gep(slot, [I32(0), I32(j)]))
    parallel.parallel_for(b, chunk, slot, cols.args[3], parallel.num_threads(),
                          align=col_align(dtype))
    b.ret_void()
    return cols


def _gemm_chunks_with_epilogue(cx: LoweringContext, serial: ir.Function, split: str,
                               args: list[ir.Value], epilogue: GemmEpilogue,
                               dtype: DType) -> None:
    """A product that `gemm_split` cuts (by ``"rows"`` of C at multiples of
    `blas_row_align`, or ``"cols"`` at multiples of `col_align`, as `_gemm_split_rows`
    and `_gemm_cols_function` cut it: the same bits), with the epilogue on each chunk
    right after its `serial` call: a chunk function of its own for this call site,
    whose context holds the GEMM's arguments and the epilogue's."""
    module = cx.module
    types = [a.type for a in serial.args] + [a.type for a in epilogue.fn.args[:3]]
    ctx_type = ir.LiteralStructType(types)
    chunk = parallel.define_chunk(module, cx.fn.name + f".gemm{len(module.globals)}")
    cb = ir.IRBuilder(chunk.append_basic_block("entry"))
    ctx = cb.bitcast(chunk.args[0], ir.PointerType(ctx_type))
    ta, tb, m, n, k, alpha, a, lda, b_, ldb, beta, c, ldc, ins, outs, base = (
        cb.load(cb.gep(ctx, [I32(0), I32(j)])) for j in range(len(types)))
    begin, end = chunk.args[1], chunk.args[2]
    if split == "rows":
        # row i of op(A) is row i of A, or column i of A when A is transposed
        a_off = cb.select(cb.icmp_signed("==", ta, I32(0)), cb.mul(begin, lda), begin)
        cb.call(serial, [ta, tb, cb.sub(end, begin), n, k, alpha, cb.gep(a, [a_off]), lda,
                         b_, ldb, beta, cb.gep(c, [cb.mul(begin, ldc)]), ldc])
        status = cb.call(epilogue.fn, [ins, outs, base, begin, end, I64(0), n])
    else:
        # column j of op(B) is column j of B, or row j of B when B is transposed
        b_off = cb.select(cb.icmp_signed("==", tb, I32(0)), begin, cb.mul(begin, ldb))
        cb.call(serial, [ta, tb, m, cb.sub(end, begin), k, alpha, a, lda,
                         cb.gep(b_, [b_off]), ldb, beta, cb.gep(c, [begin]), ldc])
        status = cb.call(epilogue.fn, [ins, outs, base, I64(0), m, begin, end])
    cb.ret(status)

    slot = cx.alloca(ctx_type, name="gemm.ctx")
    values = args + [epilogue.ins, epilogue.outs, _i64(epilogue.base)]
    for j, v in enumerate(values):
        cx.b.store(v, cx.b.gep(slot, [I32(0), I32(j)]))
    if split == "rows":
        total, align = args[2], blas_row_align(dtype.ir_name)
    else:
        total, align = args[3], col_align(dtype)
    parallel.parallel_for(cx.b, chunk, slot, total, parallel.num_threads(), align=align)


# --------------------------------------------------------------------- emission

def emit_node_function(module: ir.Module, node: Node, name: str, gemm_mode: str = "blas"
                       ) -> ir.Function:
    """Define ``i32 @name(i8** inputs, i8** outputs)`` computing `node` in `module`."""
    low = find_lowering(node)
    if low is None:
        raise UnimplementedError(f"op {node.op} has no native lowering for this node")
    fn = ir.Function(module, NODE_FUNCTION_TYPE, name)
    fn.attributes.add("nounwind")
    cx = LoweringContext(node, module, fn, gemm_mode)
    low.emit(cx)
    if not cx.b.block.is_terminated:
        raise UnimplementedError(f"the lowering of {node.op} did not finish its function "
                                 f"(call cx.ret_ok())")
    return fn


def status_error(node: Node, status: int) -> tuple[str, Node]:
    """The message of `node`'s lowering for a failing `status`, and the node to name in
    the error (`node`, or the op inside a fused cluster)."""
    from .stacks import MESSAGES, STACK_OPS
    if node.op in STACK_OPS and status in MESSAGES:  # (step actions, not lowerings)
        return MESSAGES[status], node
    low = LOWERINGS.get(node.op)
    if low is not None and low.describe is not None:
        return low.describe(node, status)
    if low is not None and status in low.messages:
        return low.messages[status], node
    return f"native kernel failed with status {status}", node


def reference_explanation(node: Node, inputs: Sequence[Any]) -> TensorWeaveError | None:
    """The error `node`'s reference kernel raises on the `inputs` its native code refused
    (the reference target's message: the bad element and its value, the op, the line),
    or None when the reference kernel accepts them."""
    from ..reference.executor import PreparedKernel
    try:
        with np.errstate(all="ignore"):
            PreparedKernel(node)(list(inputs), None, None)  # type: ignore[arg-type]
    except TensorWeaveError as e:
        return e
    return None


# ------------------------------------------------------------ one node on its own

class NodeKernel:
    """One node compiled on its own: ``kernel(inputs) -> outputs`` (NumPy arrays), also
    usable as a per-node kernel of the dataflow executor."""

    def __init__(self, node: Node, gemm_mode: str = "blas") -> None:
        import ctypes

        from . import jit
        self.node = node
        module = ir.Module(name=f"node_{node.op}")
        emit_node_function(module, node, "tw_node", gemm_mode)
        if gemm_mode == "blas":
            from .blas import register_blas
            register_blas()
        self._module = jit.compile_module(str(module), ["tw_node"], loop_vectorize=True)
        self._fn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)(
            self._module.address("tw_node"))
        self._out = [(v.type.shape, v.type.dtype.np) for v in node.outputs]
        self._in = [(v.type.shape, v.type.dtype.np) for v in node.inputs]
        self._ptrs = ctypes.c_void_p * max(1, len(self._in)), ctypes.c_void_p * max(1, len(self._out))

    def __call__(self, inputs: Sequence[Any], *rest: Any, **kw: Any) -> list[np.ndarray]:
        from ...errors import InvalidArgumentError
        from .fused import contiguous
        arrays = [contiguous(np.asarray(a, dtype=dt)) for a, (_, dt) in zip(inputs, self._in)]
        for a, (shape, _) in zip(arrays, self._in):
            if a.shape != tuple(shape):
                raise InvalidArgumentError(f"native kernel compiled for input shape "
                                           f"{list(shape)}, got {list(a.shape)}",
                                           **self.node.error_context())
        outs = [np.empty(s, d) for s, d in self._out]
        ins_p, outs_p = self._ptrs
        status = self._fn(ins_p(*[a.ctypes.data for a in arrays]),
                          outs_p(*[o.ctypes.data for o in outs]))
        if status:
            low = LOWERINGS.get(self.node.op)
            error = (reference_explanation(self.node, arrays)
                     if low is not None and low.explained_by_reference else None)
            if error is not None:
                raise error
            message, blamed = status_error(self.node, status)
            raise InvalidArgumentError(message, **blamed.error_context())
        return outs


def compile_node(node: Node, gemm_mode: str = "blas") -> NodeKernel:
    """JIT-compile `node`'s lowering on its own (shapes must be static)."""
    return NodeKernel(node, gemm_mode)


__all__ = ["F32", "F64", "GEMM_MODES", "I1", "I8", "I8P", "I8PP", "I32", "I64", "LOWERINGS",
           "LoweringContext", "NativeLowering", "NodeKernel", "col_align", "compile_node",
           "emit_node_function", "find_lowering", "gemm_function", "gemm_plan", "gemm_split",
           "lowering",
           "native_dtype", "reference_explanation", "static_types", "status_error"]

