"""LLVM IR for fused loop nests.

A fused cluster (the region of a ``Fusion`` node) becomes a `Program`: its inputs, its
ops in order (each writes one slot) and which slots it returns. A `Layout` says how the
loops run for one family of shapes: the loop dims after dropping size-1 dims and merging
neighbours that every operand treats alike, which trailing dims are reduced, and for
each operand (inputs, then elementwise outputs) which dims it spans; a dim it does not
span is broadcast (stride 0). Sizes are run-time values, so one compiled kernel serves
every shape with the same layout.

The generated function is

    i32 @<name>(i8** inputs, i8** outputs, i64* sizes)

It loads the buffer pointers and calls an internal body whose buffer parameters are
``noalias``, except those a donated argument can share (`KernelBuilder._noalias_buffers`).
The body runs the loop nest; the innermost dim is processed `width` lanes at
a time with explicit vector instructions (loads of contiguous operands, splats of
broadcast ones) and then one element at a time for the remainder. Reductions (over the
trailing dims) keep vector accumulators that are combined, after each row, in a fixed
tree order; float sums and means accumulate in f64 (so float32 sums do not drift) in
blocks of `BLOCK` vectors added into a running total (so float64 sums stay accurate
too). The return value is 0, or a status from `elementwise` (an integer division by
zero, a negative integer power).

Built with ``threads > 1`` (the "Fusion" lowering does so for big nests), the outermost
loop, over a kept dim, is cut into blocks run on several threads (`parallel`); the
blocks start at multiples of `align` (the vector width when that loop is the vectorized
one), so every element is computed by the same instructions as in one pass.

A full output of `NONTEMPORAL_MIN_BYTES` or more of a loop bound by memory (no op of
`COMPUTE_BOUND_OPS`) is written with non-temporal (streaming) vector stores wherever a
store's address is aligned to its vector (or to a cache line): such a result cannot stay
in the cache for its reader anyway, and a normal store would first read every line it
writes (read-for-ownership), a third of the memory traffic of ``y = f(x)``. The alignment
is checked per store at run time (the caching allocator's blocks are aligned, NumPy's
arrays often are not), and the body ends with a fence, as streaming stores are weakly
ordered. The values stored are the same either way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import llvmlite.ir as ir

from ...compiler.dtypes import DType, bool_, float64, int64
from ...errors import UnimplementedError
from . import parallel
from .elementwise import (
    EMITTERS,
    F64,
    I8,
    I32,
    I64,
    Lanes,
    OpInfo,
    emit_op,
    memory_type,
    nan_max,
    scalar_type,
)
from .step_abi import ALIGN

REDUCTIONS = frozenset({"Sum", "Mean", "Max", "Min", "Prod", "All", "Any"})
BLOCK = 256  # vectors per block of a blocked (two-level) float sum
# Blocks per thread of a loop nest split over threads: threads claim them as they go, so a
# thread that starts late (the cores are busy) gets less work instead of delaying the
# others. Measured on 2 cores: no difference when they are free; gelu over 2^24 floats
# with the other core busy: 25.8 ms in 1 block per thread, 22.7 ms in 4 (26.9 ms on one
# thread).
FUSED_BLOCKS = 4
# Outputs of at least this many bytes are written with non-temporal stores (see the module
# docstring). A choice, not a measured optimum: well past the L2 caches, so a result this
# big is not read back from the cache anyway (the L3 size the VMs here report is not
# real). The gain on the AVX-512 host of issue 13: x*a+b over 2^24 float32 5.7 -> 3.2 ms
# (benchmarks/README.md).
NONTEMPORAL_MIN_BYTES = 16 << 20
# Ops whose elements cost tens of instructions (a polynomial, a division, or a libm call
# per lane): a loop with one of them is bound by compute, not memory, and streaming its
# stores only costs. Measured on the AMD EPYC AVX2 host (CPU time, 2^24 float32, one
# thread): the W4 gelu (tanh) 20-22 ms streamed, 14 ms with normal stores; x*a+b gains
# from streaming on both hosts (5.7 -> 3.2 ms on the AVX-512 host).
COMPUTE_BOUND_OPS = frozenset({
    "Exp", "Log", "Log1p", "Expm1", "Erf", "Tanh", "Sigmoid", "Pow", "Atan2", "Sin", "Cos",
    "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Lgamma",
    "Digamma", "Erfc", "Softplus"})
_I8PP = ir.PointerType(ir.PointerType(I8))
# What a chunk of a kernel split over threads gets: the kernel's (inputs, outputs, sizes).
_CTX = ir.LiteralStructType([_I8PP, _I8PP, ir.PointerType(I64)])


# ------------------------------------------------------------------------ descriptions

@dataclass(frozen=True)
class Instr:
    """One op of a program: reads `args` slots, writes the next slot."""

    op: str
    attrs: tuple  # the op's attributes that change the generated code, as sorted items
    args: tuple[int, ...]
    in_dtypes: tuple[DType, ...]
    out_dtype: DType

    @property
    def is_reduction(self) -> bool:
        return self.op in REDUCTIONS


@dataclass(frozen=True)
class Program:
    """A fused cluster: slots 0..n-1 are the inputs, slot n+i is instrs[i]'s result."""

    input_dtypes: tuple[DType, ...]
    instrs: tuple[Instr, ...]
    outputs: tuple[int, ...]

    def dtype(self, slot: int) -> DType:
        n = len(self.input_dtypes)
        return self.input_dtypes[slot] if slot < n else self.instrs[slot - n].out_dtype

    def instr(self, slot: int) -> Instr | None:
        n = len(self.input_dtypes)
        return None if slot < n else self.instrs[slot - n]

    @property
    def has_reductions(self) -> bool:
        return any(i.is_reduction for i in self.instrs)

    def full_outputs(self) -> list[int]:
        """Positions (in `outputs`) of the outputs that are not reductions."""
        return [k for k, s in enumerate(self.outputs)
                if not (self.instr(s) is not None and self.instr(s).is_reduction)]


@dataclass(frozen=True)
class Layout:
    """The loop structure: `n_outer` kept dims then `n_inner` reduced dims; `masks[j]`
    tells which of those dims operand j (inputs, then the full outputs) spans."""

    n_outer: int
    n_inner: int
    masks: tuple[tuple[bool, ...], ...]

    @property
    def rank(self) -> int:
        return self.n_outer + self.n_inner


def check_supported(program: Program) -> None:
    """Raise UnimplementedError unless every op and dtype has native code."""
    for dt in program.input_dtypes:
        scalar_type(dt)
    for ins in program.instrs:
        scalar_type(ins.out_dtype)
        if not ins.is_reduction and ins.op not in EMITTERS:
            raise UnimplementedError(f"the cpu target cannot generate code for op {ins.op}")


# Ops that cost about ten simple ones per element (libm-style polynomials, integer
# division): measured on AVX2, tanh over float32 takes ~1.2 ns an element, a multiply-add
# ~0.1 ns in cache.
EXPENSIVE_OPS = frozenset({"Exp", "Log", "Log1p", "Expm1", "Erf", "Tanh", "Sigmoid", "Sin",
                           "Cos", "Pow", "FloorDiv", "FloorMod", "Tan", "Asin", "Acos", "Atan",
                           "Atan2", "Sinh", "Cosh"})
# The special functions (special_functions.py) cost more still: a scalar double call per
# lane, lgamma ~90 ns an element, erfinv and the Bessel functions ~0.5 us.
EXPENSIVE_OPS |= {"Lgamma", "Digamma", "Polygamma", "Erfc", "Erfinv", "Ndtri", "BesselI0e",
                  "BesselI1e", "Xlogy", "Xlog1py"}
EXPENSIVE_WEIGHT = 8


def work_per_element(program: Program) -> int:
    """A rough cost of one element of the loop nest in simple-op units (to decide
    whether a kernel is worth splitting over threads)."""
    return max(1, sum(EXPENSIVE_WEIGHT if i.op in EXPENSIVE_OPS else 1
                      for i in program.instrs))


def vector_width(program: Program, vector_bits: int) -> int:
    """Lanes per vector: a full register of the widest element type in the program."""
    widest = max([8] + [d.bits for d in program.input_dtypes if d is not bool_]
                 + [i.out_dtype.bits for i in program.instrs if i.out_dtype is not bool_])
    return max(4, min(32, vector_bits // widest))


# ----------------------------------------------------------------------- reductions

@dataclass(frozen=True)
class _Acc:
    """How one reduction accumulates: type, initial value, combine, finalize."""

    acc_dtype: DType
    init: Any


def _accumulator(ins: Instr) -> _Acc:
    src = ins.in_dtypes[0]
    if ins.op in ("All", "Any"):
        return _Acc(bool_, 1 if ins.op == "All" else 0)
    if ins.op in ("Sum", "Mean", "Prod"):
        acc = float64 if src.kind == "float" else int64
        one = 1.0 if acc is float64 else 1
        return _Acc(acc, one if ins.op == "Prod" else 0 * one)
    # Max / Min in the input's own type
    if src.kind == "float":
        inf = float("inf")
        return _Acc(src, -inf if ins.op == "Max" else inf)
    lo, hi = (0, 2 ** src.bits - 1) if src.kind == "uint" else \
        (-(2 ** (src.bits - 1)), 2 ** (src.bits - 1) - 1)
    return _Acc(src, lo if ins.op == "Max" else hi)


def _combine(cx: Lanes, ins: Instr, acc_dtype: DType, a: ir.Value, x: ir.Value) -> ir.Value:
    b = cx.b
    if ins.op in ("Sum", "Mean"):
        return b.fadd(a, x) if acc_dtype.kind == "float" else b.add(a, x)
    if ins.op == "Prod":
        return b.fmul(a, x) if acc_dtype.kind == "float" else b.mul(a, x)
    if ins.op in ("Max", "Min"):
        return nan_max(cx, acc_dtype, a, x, ">" if ins.op == "Max" else "<")
    return b.and_(a, x) if ins.op == "All" else b.or_(a, x)


def _to_acc(cx: Lanes, src: DType, acc: DType, x: ir.Value) -> ir.Value:
    if src is acc:
        return x
    if acc.kind == "float":
        return cx.b.fpext(x, cx.ty(acc))
    return cx.b.sext(x, cx.ty(acc)) if src.kind == "int" else cx.b.zext(x, cx.ty(acc))


def _from_acc(cx: Lanes, acc: DType, dst: DType, x: ir.Value) -> ir.Value:
    if acc is dst:
        return x
    if acc.kind == "float":
        return cx.b.fptrunc(x, cx.ty(dst))
    return cx.b.trunc(x, cx.ty(dst))


# ------------------------------------------------------------------------- the builder

class KernelBuilder:
    """Builds the LLVM module of one (program, layout, width)."""

    def __init__(self, program: Program, layout: Layout, width: int, name: str = "tw_fused",
                 module: ir.Module | None = None, threads: int = 1, align: int = 1) -> None:
        """`threads` > 1 splits the outermost loop (dim 0) over that many threads, in
        chunks starting at multiples of `align` (see `emit`); it must be a kept dim."""
        self.p = program
        self.layout = layout
        self.width = width
        self.name = name
        self.module = module if module is not None else ir.Module(name=name)
        self.n_in = len(program.input_dtypes)
        self.full = program.full_outputs()
        self.reductions = [k for k in range(len(program.outputs)) if k not in self.full]
        if threads > 1 and layout.n_outer == 0:
            raise UnimplementedError("only loops over kept dims can be split over threads")
        self.threads = threads
        self.align = align
        self.range: tuple[ir.Value, ir.Value] | None = None  # dim 0's chunk, when split

    # ---------------------------------------------------------------- entry points
    def build(self) -> str:
        """The module's IR text."""
        self.emit()
        return str(self.module)

    def emit(self) -> ir.Function:
        """Define the kernel ``i32 @<name>(i8** inputs, i8** outputs, i64* sizes)`` in
        the module (with an internal body ``<name>.body``) and return it.

        Split over threads, the body takes the range of dim 0 to run as two more
        arguments, ``<name>.chunk(i8* ctx, i64 begin, i64 end)`` calls it for one chunk,
        and the kernel runs the chunks with `parallel.parallel_for`, returning the last
        failing chunk's status, as the serial loop returns the last failure it met."""
        if self.threads == 1:
            return self._wrapper(self._body())
        return self._parallel_wrapper(self._chunk(self._body()))

    def _operand_dtypes(self) -> list[DType]:
        """Element types of the buffers: inputs, then every output (in order)."""
        return list(self.p.input_dtypes) + [self.p.dtype(s) for s in self.p.outputs]

    def _buffer_args(self, b: ir.IRBuilder, ins: ir.Value, outs: ir.Value) -> list[ir.Value]:
        """The body's typed buffer arguments, loaded from the pointer tables."""
        args = []
        for j, dt in enumerate(self._operand_dtypes()):
            table, k = (ins, j) if j < self.n_in else (outs, j - self.n_in)
            raw = b.load(b.gep(table, [I64(k)]))
            args.append(b.bitcast(raw, ir.PointerType(memory_type(dt))))
        return args

    def _wrapper(self, body: ir.Function) -> ir.Function:
        fn = ir.Function(self.module, ir.FunctionType(I32, [_I8PP, _I8PP, ir.PointerType(I64)]),
                         self.name)
        ins, outs, sizes = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.ret(b.call(body, self._buffer_args(b, ins, outs) + [sizes]))
        return fn

    def _noalias_buffers(self) -> list[int]:
        """The body's buffer arguments (inputs, then outputs) it may mark ``noalias``.

        ``noalias`` promises LLVM that memory written through one argument is reached
        through no other while the body runs; the promise rests on where buffers come
        from. The step planner (`step._Planner`) never overlaps two values of one call:
        workspace offsets (`_place`) free a value only for definitions after its last
        use, so an output never lands on an input of the same node; results get
        distinct buffers (one per alias root); result buffers are reused only when
        nobody else holds them (`executable.NativeStep._results`, the dispatcher's
        refcount-1 check), so an argument is never a reused result; variables are
        updated by `step._update_function` and memmove, neither ``noalias``. The one
        exception is ``donate_argnums``: `allocator.donation_pairs` computes a result
        into the donated argument that an elementwise body reads at the output's own
        index, so such an input and the output are the same memory. Inputs spanning
        every loop dim (the only ones that can be that argument: a donated input has as
        many elements as the result) and the full outputs are therefore not
        ``noalias``; broadcast inputs and reduction outputs still are (they are never
        the donated buffer), so broadcast loads stay hoisted out of the inner loop."""
        n_in = self.n_in
        full_span = [j for j in range(n_in) if all(self.layout.masks[j])]
        shared = set(full_span) | {n_in + k for k in self.full} if self.full else set()
        return [j for j in range(n_in + len(self.p.outputs)) if j not in shared]

    def _chunk(self, body: ir.Function) -> ir.Function:
        """``i32 <name>.chunk(i8* ctx, i64 begin, i64 end)``: the body on rows begin..end-1
        of dim 0; ctx points to a `_CTX` (the kernel's arguments)."""
        fn = parallel.define_chunk(self.module, self.name + ".chunk")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ctx = b.bitcast(fn.args[0], ir.PointerType(_CTX))
        ins, outs, sizes = (b.load(b.gep(ctx, [I32(0), I32(j)])) for j in range(3))
        b.ret(b.call(body, self._buffer_args(b, ins, outs) + [sizes, fn.args[1], fn.args[2]]))
        return fn

    def _parallel_wrapper(self, chunk: ir.Function) -> ir.Function:
        fn = ir.Function(self.module, ir.FunctionType(I32, [_I8PP, _I8PP, ir.PointerType(I64)]),
                         self.name)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ctx = b.alloca(_CTX, name="ctx")
        for j, arg in enumerate(fn.args):
            b.store(arg, b.gep(ctx, [I32(0), I32(j)]))
        total = b.load(fn.args[2], name="n0")
        b.ret(parallel.parallel_for(b, chunk, ctx, total, self.threads, self.align,
                                    combine="last", blocks=FUSED_BLOCKS))
        return fn

    def _body(self) -> ir.Function:
        dts = self._operand_dtypes()
        ftype = ir.FunctionType(I32, [ir.PointerType(memory_type(d)) for d in dts]
                                + [ir.PointerType(I64)] + [I64, I64] * (self.threads > 1))
        fn = ir.Function(self.module, ftype, self.name + ".body")
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        fn.attributes.add("nounwind")
        n_buf = len(dts)
        for j in self._noalias_buffers():
            fn.args[j].add_attribute("noalias")
        self.fn = fn
        self.entry = fn.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)
        self.buffers = list(fn.args[:n_buf])
        self.status = self.b.alloca(I32, name="status")
        self.b.store(I32(0), self.status)
        sizes_ptr = fn.args[n_buf]
        if self.threads > 1:
            self.range = (fn.args[n_buf + 1], fn.args[n_buf + 2])
        self.sizes = [self.b.load(self.b.gep(sizes_ptr, [I64(d)]), name=f"n{d}")
                      for d in range(self.layout.rank)]
        self.strides = [self._strides(m) for m in self.layout.masks]
        outer_mask = (True,) * self.layout.n_outer + (False,) * self.layout.n_inner
        self.row_strides = self._strides(outer_mask)
        self.streaming = self._streaming_flags()
        self.streamed = False
        self._dims(0, [I64(0)] * len(self.layout.masks), I64(0))
        if self.streamed:  # streaming stores are weakly ordered: a fence before returning
            big = self.streaming.values()
            with self.b.if_then(functools.reduce(self.b.or_, big)):
                self.b.fence("seq_cst")
        self.b.ret(self.b.load(self.status))
        return fn

    def _streaming_flags(self) -> dict[int, ir.Value]:
        """Per full-output itemsize: whether an output of it (all full outputs have the
        loop nest's element count) is big enough for non-temporal stores (run-time
        values: sizes are arguments)."""
        if not self.full or self.layout.rank == 0 or \
                any(i.op in COMPUTE_BOUND_OPS for i in self.p.instrs):
            return {}
        b = self.b
        count: ir.Value = I64(1)
        for n in self.sizes:
            count = b.mul(count, n)
        flags = {}
        for k in self.full:
            dt = self.p.dtype(self.p.outputs[k])
            if dt.itemsize not in flags:  # (bools are stored as bytes: itemsize 1)
                flags[dt.itemsize] = b.icmp_signed(">=", b.mul(count, I64(dt.itemsize)),
                                                   I64(NONTEMPORAL_MIN_BYTES))
        return flags

    # ----------------------------------------------------------------- loop nests
    def _strides(self, mask: Sequence[bool]) -> list[ir.Value]:
        """Element strides of an operand spanning the dims in `mask` (0 where it does not)."""
        out: list[ir.Value] = [I64(0)] * len(mask)
        running: ir.Value = I64(1)
        for d in reversed(range(len(mask))):
            if mask[d]:
                out[d] = running
                running = self.b.mul(running, self.sizes[d])
        return out

    def _alloca(self, t: ir.Type, name: str = "") -> ir.Value:
        """A stack slot in the entry block (promoted to a register by mem2reg)."""
        with self.b.goto_block(self.entry):
            self.b.position_at_start(self.entry)
            return self.b.alloca(t, name=name)

    def _loop(self, start: ir.Value, stop: ir.Value, step: int,
              body: Callable[[ir.Value], None], name: str) -> None:
        """``for (i = start; i < stop; i += step) body(i)``."""
        b = self.b
        counter = self._alloca(I64, name)
        b.store(start, counter)
        cond = self.fn.append_basic_block(name + ".cond")
        block = self.fn.append_basic_block(name + ".body")
        after = self.fn.append_basic_block(name + ".end")
        b.branch(cond)
        b.position_at_end(cond)
        i = b.load(counter)
        b.cbranch(b.icmp_signed("<", i, stop), block, after)
        b.position_at_end(block)
        body(i)
        b.store(b.add(i, I64(step)), counter)
        b.branch(cond)
        b.position_at_end(after)

    def _dims(self, d: int, offsets: list[ir.Value], row: ir.Value) -> None:
        """Emit the loops over dims d.. with operand offsets (and the reduction-row index)
        accumulated over the outer dims so far."""
        layout = self.layout
        if d == layout.n_outer and layout.n_inner:
            self._reduction_row(offsets, row)
            return
        if d == layout.rank - 1:
            self._innermost(d, offsets)
            return

        def body(i: ir.Value) -> None:
            self._dims(d + 1, self._advance(offsets, d, i),
                       self.b.add(row, self.b.mul(i, self.row_strides[d])))
        start, stop = self._extent(d)
        self._loop(start, stop, 1, body, f"d{d}")

    def _extent(self, d: int) -> tuple[ir.Value, ir.Value]:
        """The range dim `d`'s loop runs over: all of it, or this chunk's part of dim 0."""
        if d == 0 and self.range is not None:
            return self.range
        return I64(0), self.sizes[d]

    def _advance(self, offsets: list[ir.Value], d: int, i: ir.Value) -> list[ir.Value]:
        return [o if not self.layout.masks[j][d] else
                self.b.add(o, self.b.mul(i, self.strides[j][d]))
                for j, o in enumerate(offsets)]

    def _innermost(self, d: int, offsets: list[ir.Value]) -> None:
        """The vectorized innermost loop of an elementwise kernel, then its remainder."""
        start, n = self._extent(d)
        if self.range is None or d != 0:
            vec_stop = self.b.sub(n, self.b.srem(n, I64(self.width)))
        else:  # a chunk (starting at a multiple of the width: the same vectors as serial)
            length = self.b.sub(n, start)
            vec_stop = self.b.add(start, self.b.sub(length, self.b.srem(length,
                                                                        I64(self.width))))
        self._loop(start, vec_stop, self.width,
                   lambda i: self._element(self.width, d, offsets, i), "vec")
        self._loop(vec_stop, n, 1, lambda i: self._element(1, d, offsets, i), "rem")

    # ------------------------------------------------------------------ the body
    def _element(self, width: int, d: int, offsets: list[ir.Value], i: ir.Value
                 ) -> dict[int, ir.Value]:
        """Compute every slot for lanes i..i+width-1 of innermost dim d; store the full
        outputs; return the slot values (reductions read theirs from here)."""
        cx = Lanes(self.module, self.b, width, self.status)
        offs = self._advance(offsets, d, i)
        values: dict[int, ir.Value] = {}

        def value(slot: int) -> ir.Value:
            if slot not in values:
                values[slot] = self._load(cx, slot, offs[slot], d)
            return values[slot]

        for k, ins in enumerate(self.p.instrs):
            slot = self.n_in + k
            if ins.is_reduction:
                values[slot] = value(ins.args[0])  # the caller accumulates it
                continue
            args = [value(a) for a in ins.args] if ins.op not in ("ZerosLike", "OnesLike") else []
            info = OpInfo(ins.op, dict(ins.attrs), ins.in_dtypes, ins.out_dtype, k)
            values[slot] = emit_op(cx, info, args)
        for pos, k in enumerate(self.full):
            j = self.n_in + pos  # operand index of this output's buffer in masks/offsets
            self._store(cx, self.p.outputs[k], values[self.p.outputs[k]], self.n_in + k,
                        offs[j], self.layout.masks[j][d])
        return values

    def _load(self, cx: Lanes, slot: int, offset: ir.Value, d: int) -> ir.Value:
        dt = self.p.input_dtypes[slot]
        b = self.b
        ptr = b.gep(self.buffers[slot], [offset])
        if cx.width > 1 and self.layout.masks[slot][d]:
            vt = ir.VectorType(memory_type(dt), cx.width)
            v = b.load(b.bitcast(ptr, ir.PointerType(vt)), align=dt.itemsize)
        else:
            v = cx.splat(b.load(ptr))
        if dt is bool_:
            v = b.icmp_unsigned("!=", v, cx.const(I8, 0))
        return v

    def _store(self, cx: Lanes, slot: int, v: ir.Value, buffer: int, offset: ir.Value,
               contiguous: bool) -> None:
        dt = self.p.dtype(slot)
        b = self.b
        if dt is bool_:
            v = b.zext(v, cx.wrap(I8))
        ptr = b.gep(self.buffers[buffer], [offset])
        if cx.width > 1 and contiguous:
            self._vector_store(v, ptr, dt.itemsize)
        else:
            if cx.width > 1:  # every lane holds the same value (the output is broadcast)
                v = b.extract_element(v, I32(0))
            b.store(v, ptr)

    def _vector_store(self, v: ir.Value, ptr: ir.Value, itemsize: int) -> None:
        """Store vector `v` at `ptr`: non-temporal when the output is big and `ptr` is
        aligned (see the module docstring), a normal unaligned store otherwise."""
        b = self.b
        typed = b.bitcast(ptr, ir.PointerType(v.type))
        big = self.streaming.get(itemsize)
        if big is None:
            b.store(v, typed, align=itemsize)
            return
        align = min(ALIGN, itemsize * v.type.count)  # (the pool's blocks' alignment)
        offset = b.and_(b.ptrtoint(ptr, I64), I64(align - 1))
        stream = b.and_(big, b.icmp_unsigned("==", offset, I64(0)))
        with b.if_else(stream, likely=True) as (streamed, normal):
            with streamed:
                store = b.store(v, typed, align=align)
                store.set_metadata("nontemporal", self.module.add_metadata([I32(1)]))
            with normal:
                b.store(v, typed, align=itemsize)
        self.streamed = True

    # --------------------------------------------------------------- reductions
    def _reduction_row(self, offsets: list[ir.Value], row: ir.Value) -> None:
        """One output row of every reduction: init, loop over the reduced dims, store."""
        b, w = self.b, self.width
        reds = [(k, self.p.instr(self.p.outputs[k])) for k in self.reductions]
        accs = []
        for k, ins in reds:
            acc = _accumulator(ins)
            at = scalar_type(acc.acc_dtype)
            vec_slot = self._alloca(ir.VectorType(at, w), f"acc{k}.v")
            blk_slot = self._alloca(ir.VectorType(at, w), f"acc{k}.b")
            sc_slot = self._alloca(at, f"acc{k}.s")
            vcx = Lanes(self.module, b, w, self.status)
            b.store(vcx.dconst(acc.acc_dtype, acc.init), vec_slot)
            b.store(Lanes(self.module, b, 1, self.status).dconst(acc.acc_dtype, acc.init),
                    sc_slot)
            accs.append((k, ins, acc, vec_slot, blk_slot, sc_slot))
        self._inner_dims(self.layout.n_outer, offsets, accs)
        count = I64(1)
        for d in range(self.layout.n_outer, self.layout.rank):
            count = b.mul(count, self.sizes[d])
        for k, ins, acc, vec_slot, _, sc_slot in accs:
            cx1 = Lanes(self.module, b, 1, self.status)
            total = _combine(cx1, ins, acc.acc_dtype,
                             self._horizontal(ins, acc, b.load(vec_slot)), b.load(sc_slot))
            if ins.op == "Mean":
                if acc.acc_dtype.kind == "float":
                    total = b.fdiv(total, b.sitofp(count, F64))
                else:
                    total = b.sdiv(total, b.select(b.icmp_signed("==", count, I64(0)),
                                                   I64(1), count))
            out = _from_acc(cx1, acc.acc_dtype, ins.out_dtype, total)
            if ins.out_dtype is bool_:
                out = b.zext(out, I8)
            b.store(out, b.gep(self.buffers[self.n_in + k], [row]))

    def _horizontal(self, ins: Instr, acc: _Acc, v: ir.Value) -> ir.Value:
        """Combine the lanes of `v` pairwise (halves, then quarters ...): a fixed order."""
        b = self.b
        n = self.width
        while n > 1:
            half = n // 2
            cx = Lanes(self.module, b, half, self.status)
            lo = b.shuffle_vector(v, v, ir.Constant(ir.VectorType(I32, half), list(range(half))))
            hi = b.shuffle_vector(v, v, ir.Constant(ir.VectorType(I32, half),
                                                    list(range(half, n))))
            if half == 1:
                lo, hi = b.extract_element(lo, I32(0)), b.extract_element(hi, I32(0))
                cx = Lanes(self.module, b, 1, self.status)
            v = _combine(cx, ins, acc.acc_dtype, lo, hi)
            n = half
        return v

    def _inner_dims(self, d: int, offsets: list[ir.Value], accs: list) -> None:
        if d == self.layout.rank - 1:
            self._reduce_innermost(d, offsets, accs)
            return
        self._loop(I64(0), self.sizes[d], 1,
                   lambda i: self._inner_dims(d + 1, self._advance(offsets, d, i), accs),
                   f"r{d}")

    def _reduce_innermost(self, d: int, offsets: list[ir.Value], accs: list) -> None:
        """Blocked vector accumulation over the innermost reduced dim, then the rest."""
        b, w = self.b, self.width
        n = self.sizes[d]
        vec_stop = b.sub(n, b.srem(n, I64(w)))
        vcx = Lanes(self.module, b, w, self.status)

        def accumulate(width: int, i: ir.Value, slot_of: Callable) -> None:
            values = self._element(width, d, offsets, i)
            cx = Lanes(self.module, b, width, self.status)
            for k, ins, acc, *slots in accs:
                x = _to_acc(cx, ins.in_dtypes[0], acc.acc_dtype, values[self.p.outputs[k]])
                ptr = slot_of(slots)
                b.store(_combine(cx, ins, acc.acc_dtype, b.load(ptr), x), ptr)

        def block(start: ir.Value) -> None:
            for _, _, acc, _, blk_slot, _ in accs:
                b.store(vcx.dconst(acc.acc_dtype, acc.init), blk_slot)
            end = b.add(start, I64(BLOCK * w))
            end = b.select(b.icmp_signed("<", end, vec_stop), end, vec_stop)
            self._loop(start, end, w, lambda i: accumulate(w, i, lambda s: s[1]), "vec")
            for _, ins, acc, vec_slot, blk_slot, _ in accs:
                b.store(_combine(vcx, ins, acc.acc_dtype, b.load(vec_slot), b.load(blk_slot)),
                        vec_slot)

        self._loop(I64(0), vec_stop, BLOCK * w, block, "blk")
        self._loop(vec_stop, n, 1, lambda i: accumulate(1, i, lambda s: s[2]), "rem")


def build_kernel(program: Program, layout: Layout, width: int, name: str = "tw_fused") -> str:
    """The LLVM IR text of the kernel for `program` with `layout`."""
    check_supported(program)
    return KernelBuilder(program, layout, width, name).build()
