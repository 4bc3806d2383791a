"""Native lowerings of the reductions (Sum, Mean, Max, Min, Prod, All, Any, ReduceToLike),
ArgMax/ArgMin and the softmax family (Softmax, LogSoftmax and the two cross entropies).

Loop structure. A reduction first simplifies its (static) shape: size-1 dims are dropped
and neighbouring dims that are both reduced or both kept are merged, which leaves
alternating kept and reduced dims. Then

- last dim kept (e.g. a sum over a leading axis): each output row is accumulated a chunk
  of columns at a time; the contiguous strips of input of ROWS reduced positions at a
  time are combined into the chunk's accumulators element by element (no horizontal
  work), and the accumulators are converted into the output at the end (or are the
  output itself when no conversion is needed);
- last dim reduced: every output element combines contiguous input into `W` lanes of
  partial results (several registers wide, so the additions do not wait on each other),
  the remainder one element at a time, and then the lanes pairwise.

Inner loops are written with explicit vectors of a constant width plus a scalar
remainder, so they vectorize whatever LLVM's alias analysis concludes about the buffers.
The softmax family works the same way along its axis (rows when it is the last axis,
chunks of columns otherwise).

Numerics follow the reference kernels: float sums, means and products accumulate in f64
and round once; integer sums and products wrap in the input's type (the same bits as
NumPy's int64 result cast back); integer means divide the int64 sum by the count,
truncating toward zero; Max/Min propagate NaN; ArgMax/ArgMin give the first extreme
element, a NaN counting as the extreme (np.argmax). The softmax family subtracts the row
maximum, exponentiates in the input's precision (f32: `elementwise.exp_f32`), sums in
f64 and takes the logarithm in f64. Empty reductions give the reference's values (Sum 0,
Prod 1, Mean NaN, All true, Any false) or its errors (Max/Min, integer Mean, ArgMax/ArgMin)
as status codes; out-of-range sparse labels are a status code too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np

from ....compiler.dtypes import DType, bool_, float64, int64, uint8
from ....compiler.ir import Node
from ....compiler.ops.common import normalize_axes, normalize_axis
from .. import jit
from ..elementwise import Lanes, exp_f32, memory_type, nan_max, scalar_type
from ..lowering import F64, I1, I32, I64, LoweringContext, lowering

# Columns accumulated at once when the last dim is kept: the accumulators (at most 8 KiB
# of f64) stay in L1 while every reduced row streams its strip through them.
CHUNK = 1024
# Reduced rows combined per pass over a chunk's accumulators (loaded and stored once).
ROWS = 4

Combine = Callable[[Lanes, ir.Value, ir.Value], ir.Value]
Loops = Sequence[tuple[int, tuple[int, ...]]]


def _prod(values: Sequence[int]) -> int:
    return int(np.prod(list(values), dtype=np.int64))


# ------------------------------------------------------------------ emission helpers

class _Kernel:
    """A `LoweringContext` with the vector helpers the lowerings here share."""

    def __init__(self, cx: LoweringContext) -> None:
        self.cx = cx
        self.b = cx.b
        self._status = cx.alloca(I32, name="lanes.status")  # Lanes wants one; never set
        self.vector_bits = jit.host_info().vector_bits

    def lanes(self, width: int) -> Lanes:
        """An emission context for `width` lanes at the builder's position."""
        return Lanes(self.cx.module, self.b, width, self._status)

    def width(self, bits: int, n: int, registers: int = 1) -> int:
        """Lanes for strips over `n` elements of `bits`-bit values: `registers` full
        vector registers, halved while wider than `n` (at least 4; 1 when n < 4)."""
        if n < 4:
            return 1
        w = min(64, max(4, self.vector_bits // bits) * registers)
        while w > 4 and w > n:
            w //= 2
        return w

    # ------------------------------------------------------------------ memory
    def _ptr(self, base: ir.Value, index: ir.Value, width: int) -> ir.Value:
        p = self.b.gep(base, [index])
        if width == 1:
            return p
        return self.b.bitcast(p, ir.PointerType(ir.VectorType(base.type.pointee, width)))

    def load(self, lanes: Lanes, base: ir.Value, index: ir.Value) -> ir.Value:
        """`lanes.width` consecutive elements from `base[index]` (memory types: bool is
        i8)."""
        return self.b.load(self._ptr(base, index, lanes.width), align=_align(base))

    def store(self, lanes: Lanes, base: ir.Value, index: ir.Value, value: ir.Value) -> None:
        """Store `lanes.width` consecutive elements at `base[index]`."""
        self.b.store(value, self._ptr(base, index, lanes.width), align=_align(base))

    # ------------------------------------------------------------------- loops
    def strips(self, n: int, width: int, body: Callable[[Lanes, ir.Value], None],
               name: str = "j") -> None:
        """``body(lanes, i)`` for i in [0, n): `width` elements at a time, then the
        remainder one by one (`lanes.width` says which). (Masked vector tails were
        slower on AMD Zen 3: its masked loads and stores are slow.)"""
        full = n - n % width if width > 1 else 0
        if full:
            with self.cx.loop(0, full, width, name=f"{name}.v") as i:
                body(self.lanes(width), i)
        if full < n:
            with self.cx.loop(full, n, name=f"{name}.s") as i:
                body(self.lanes(1), i)

    def nest(self, loops: Loops, offsets: Sequence[ir.Value],
             body: Callable[[list[ir.Value]], None], name: str = "d") -> None:
        """Nested counted loops; `loops` holds (size, strides): each loop index times
        stride k is added to offset k; ``body(offsets)`` runs innermost."""
        if not loops:
            body(list(offsets))
            return
        (size, strides), rest = loops[0], loops[1:]
        with self.cx.loop(0, size, name=name) as i:
            moved = [self.add(off, self.b.mul(i, I64(s))) if s else off
                     for off, s in zip(offsets, strides)]
            self.nest(rest, moved, body, name)

    def row_blocks(self, start: int, stop: int, body: Callable[[ir.Value, int], None]) -> None:
        """``body(r, count)`` for the rows [start, stop): ROWS rows at a time, then the
        remaining rows together (`count` is static)."""
        rest = (stop - start) % ROWS
        if stop - start >= ROWS:
            with self.cx.loop(start, stop - rest, ROWS, name="rows") as r:
                body(r, ROWS)
        if rest:
            body(I64(stop - rest), rest)

    def chunks(self, n: int, body: Callable[[ir.Value, int], None]) -> None:
        """``body(start, size)`` over [0, n) in chunks of at most CHUNK (static sizes)."""
        size = min(n, CHUNK)
        full = n // size
        if full > 1:
            with self.cx.loop(0, full * size, size, name="chunk") as c:
                body(c, size)
        elif full == 1:
            body(I64(0), size)
        if n % size:
            body(I64(full * size), n % size)

    def add(self, a: ir.Value, b: ir.Value | int) -> ir.Value:
        """a + b (i64), skipping a constant zero."""
        if isinstance(b, int):
            return a if b == 0 else self.b.add(a, I64(b))
        return self.b.add(a, b)


def _align(ptr: ir.Value) -> int:
    t = ptr.type.pointee
    return 4 if isinstance(t, ir.FloatType) else 8 if isinstance(t, ir.DoubleType) \
        else max(1, t.width // 8)


def _halves(b: ir.IRBuilder, v: ir.Value, n: int) -> tuple[ir.Value, ir.Value]:
    """The low and high halves of the `n` lanes of `v` (scalars when n is 2)."""
    half = n // 2
    lo = b.shuffle_vector(v, v, ir.Constant(ir.VectorType(I32, half), list(range(half))))
    hi = b.shuffle_vector(v, v, ir.Constant(ir.VectorType(I32, half), list(range(half, n))))
    if half == 1:
        return b.extract_element(lo, I32(0)), b.extract_element(hi, I32(0))
    return lo, hi


def _horizontal(k: _Kernel, combine: Combine, v: ir.Value, width: int) -> ir.Value:
    """Combine the lanes of `v` pairwise (halves, then quarters ...) into a scalar."""
    n = width
    while n > 1:
        v = combine(k.lanes(n // 2), *_halves(k.b, v, n))
        n //= 2
    return v


class _Partial:
    """Partial results of a reduction over contiguous elements: a vector of `width`
    lanes fed by the vector strips, a scalar fed by the remainder."""

    def __init__(self, k: _Kernel, dtype: DType, init: object, combine: Combine,
                 width: int) -> None:
        self.k, self.dtype, self.init, self.combine, self.width = k, dtype, init, combine, width
        t = scalar_type(dtype)
        self.vec = k.cx.alloca(ir.VectorType(t, width), name="part.v") if width > 1 else None
        self.one = k.cx.alloca(t, name="part.s")

    def reset(self) -> None:
        """Start over with the identity element in every lane."""
        if self.vec is not None:
            self.k.b.store(self.k.lanes(self.width).dconst(self.dtype, self.init), self.vec)
        self.k.b.store(self.k.lanes(1).dconst(self.dtype, self.init), self.one)

    def add(self, lanes: Lanes, x: ir.Value) -> None:
        """Combine `x` (a full vector or one element) into the partial results."""
        slot = self.vec if lanes.width > 1 else self.one
        self.k.b.store(self.combine(lanes, self.k.b.load(slot), x), slot)

    def total(self) -> ir.Value:
        """Everything added so far, combined into one scalar."""
        if self.vec is None:
            return self.k.b.load(self.one)
        v = _horizontal(self.k, self.combine, self.k.b.load(self.vec), self.width)
        return self.combine(self.k.lanes(1), v, self.k.b.load(self.one))


def _bits(dtype: DType) -> int:
    return 8 if dtype is bool_ else dtype.bits


# ------------------------------------------------------------------------ reducers

@dataclass(frozen=True)
class _Reducer:
    """How one reduction op accumulates elements of `src` and finishes its result."""

    op: str  # Sum, Mean, Max, Min, Prod, All, Any
    src: DType
    count: int  # elements combined into each output element

    @property
    def acc(self) -> DType:
        """Accumulation dtype: f64 for float sums/means/products, i64 for integer means,
        one byte for All/Any, else the input's own dtype."""
        if self.op in ("All", "Any"):
            return uint8
        if self.op in ("Sum", "Mean", "Prod") and self.src.kind == "float":
            return float64
        return int64 if self.op == "Mean" else self.src

    @property
    def init(self) -> object:
        """The identity element of the combine."""
        op, acc = self.op, self.acc
        if op in ("Sum", "Mean", "Any"):
            return 0.0 if acc.kind == "float" else 0
        if op in ("Prod", "All"):
            return 1.0 if acc.kind == "float" else 1
        if acc.kind == "float":
            return -np.inf if op == "Max" else np.inf
        info = np.iinfo(acc.np)
        return int(info.min if op == "Max" else info.max)

    @property
    def direct(self) -> bool:
        """Whether the output buffer itself can hold the accumulators."""
        return self.op != "Mean" and memory_type(self.acc) == memory_type(self.src)

    def to_acc(self, lanes: Lanes, x: ir.Value) -> ir.Value:
        """Elements as loaded from memory -> accumulator values."""
        b, acc = lanes.b, self.acc
        if self.src is bool_:
            return b.zext(b.icmp_unsigned("!=", x, lanes.const(scalar_type(uint8), 0)),
                          lanes.ty(uint8))
        if acc is self.src:
            return x
        if acc.kind == "float":
            return b.fpext(x, lanes.ty(acc))
        return (b.sext if self.src.kind == "int" else b.zext)(x, lanes.ty(acc))

    def combine(self, lanes: Lanes, a: ir.Value, x: ir.Value) -> ir.Value:
        """The accumulator after taking in `x`."""
        b, op, is_float = lanes.b, self.op, self.acc.kind == "float"
        if op in ("Sum", "Mean"):
            return b.fadd(a, x) if is_float else b.add(a, x)
        if op == "Prod":
            return b.fmul(a, x) if is_float else b.mul(a, x)
        if op in ("Max", "Min"):
            return nan_max(lanes, self.acc, a, x, ">" if op == "Max" else "<")
        return b.and_(a, x) if op == "All" else b.or_(a, x)

    def finish(self, lanes: Lanes, total: ir.Value) -> ir.Value:
        """Accumulator -> output element (memory type)."""
        b, acc = lanes.b, self.acc
        if self.op == "Mean":
            if acc.kind == "float":
                total = b.fdiv(total, lanes.const(F64, float(self.count)))
            else:
                total = b.sdiv(total, lanes.const(I64, self.count))
        if acc is self.src or self.src is bool_:
            return total
        if acc.kind == "float":
            return b.fptrunc(total, lanes.ty(self.src))
        return b.trunc(total, lanes.ty(self.src))


# ---------------------------------------------------------------------- reductions

def _merged_dims(shape: Sequence[int], axes: Sequence[int]) -> list[tuple[int, bool]]:
    """(size, reduced) of `shape` with size-1 dims dropped and neighbouring dims of the
    same kind merged (row-major order makes each merged dim contiguous)."""
    dims: list[list] = []
    for d, size in enumerate(shape):
        if size == 1:
            continue
        red = d in axes
        if dims and dims[-1][1] == red:
            dims[-1][0] *= size
        else:
            dims.append([size, red])
    return [(int(s), r) for s, r in dims]


def _strides(dims: Sequence[tuple[int, bool]]) -> tuple[list[int], list[int]]:
    """Row-major input strides of `dims` and output strides (0 for reduced dims)."""
    in_st, out_st = [0] * len(dims), [0] * len(dims)
    s_in = s_out = 1
    for i in range(len(dims) - 1, -1, -1):
        size, red = dims[i]
        in_st[i] = s_in
        s_in *= size
        if not red:
            out_st[i] = s_out
            s_out *= size
    return in_st, out_st


def emit_reduction(cx: LoweringContext, op: str, shape: Sequence[int], axes: Sequence[int],
                   x: ir.Value, out: ir.Value) -> None:
    """Reduce the dense `x` of static `shape` over `axes` with `op` into `out` (the kept
    dims in order) and finish the function; status 1 for an undefined empty reduction."""
    k = _Kernel(cx)
    src = cx.in_types[0].dtype
    count = _prod([shape[a] for a in axes])
    out_size = _prod([d for i, d in enumerate(shape) if i not in axes])
    red = _Reducer(op, src, count)
    if out_size == 0:
        cx.ret_ok()
        return
    if count == 0:
        if op in ("Max", "Min") or op == "Mean" and src.kind != "float":
            cx.fail_if(I1(1), 1)
        else:  # Sum 0, Prod 1, All true, Any false, float Mean NaN (0 / 0)
            _fill(k, out, out_size, red.finish(k.lanes(1), k.lanes(1).dconst(red.acc, red.init)))
        cx.ret_ok()
        return
    dims = _merged_dims(shape, axes)
    if not any(r for _, r in dims):  # nothing to combine: every output is its input
        cx.memcpy(out, x, out_size * src.itemsize)
    elif dims[-1][1]:
        _reduce_along_rows(k, red, dims, x, out)
    else:
        _reduce_into_rows(k, red, dims, x, out)
    cx.ret_ok()


def _fill(k: _Kernel, out: ir.Value, n: int, value: ir.Value) -> None:
    """Store `value` into out[0:n]."""
    w = k.width(8 * _align(out), n)
    k.strips(n, w, lambda lanes, i: k.store(lanes, out, i, lanes.splat(value)))


def _reduce_into_rows(k: _Kernel, red: _Reducer, dims: Sequence[tuple[int, bool]],
                      x: ir.Value, out: ir.Value) -> None:
    """Last dim kept: for every output row, a chunk of columns at a time, combine the
    strip of each reduced position into the chunk's accumulators."""
    in_st, out_st = _strides(dims)
    cols = dims[-1][0]
    kept = [(s, (in_st[i], out_st[i])) for i, (s, r) in enumerate(dims[:-1]) if not r]
    reduced = [(s, (in_st[i],)) for i, (s, r) in enumerate(dims) if r]
    (n_rows, (row_stride,)), reduced = reduced[-1], reduced[:-1]
    w = k.width(max(_bits(red.src), _bits(red.acc)), min(cols, CHUNK), registers=2)
    buf = None if red.direct else k.cx.alloca(memory_type(red.acc), min(cols, CHUNK),
                                              name="acc")

    # The accumulators are a row of up to CHUNK columns in memory (the output itself
    # when `red.direct`), initialized and then read, combined and written per reduced
    # row: too many to keep in registers. It is the memory pattern of
    # docs/llvm_o2_miscompile.md; tests/test_review_sums_grid.py checks it at O1-O3.
    def chunk(in_off: ir.Value, out_off: ir.Value, n: int) -> None:
        acc, acc_off = (out, out_off) if buf is None else (buf, I64(0))

        def init(lanes: Lanes, j: ir.Value) -> None:
            k.store(lanes, acc, k.add(acc_off, j), lanes.dconst(red.acc, red.init))

        def rows(first: ir.Value, r: ir.Value, count: int) -> None:
            at = k.add(first, k.b.mul(r, I64(row_stride)))

            def body(lanes: Lanes, j: ir.Value) -> None:
                a = k.load(lanes, acc, k.add(acc_off, j))
                for u in range(count):  # rows in order: the same sums as one at a time
                    v = k.load(lanes, x, k.add(k.add(at, j), u * row_stride))
                    a = red.combine(lanes, a, red.to_acc(lanes, v))
                k.store(lanes, acc, k.add(acc_off, j), a)
            k.strips(n, w, body)

        def step(offsets: list[ir.Value]) -> None:
            k.row_blocks(0, n_rows, lambda r, count: rows(offsets[0], r, count))

        def finish(lanes: Lanes, j: ir.Value) -> None:
            total = k.load(lanes, buf, j)
            k.store(lanes, out, k.add(out_off, j), red.finish(lanes, total))

        k.strips(n, w, init)
        k.nest(reduced, [in_off], step, name="r")
        if buf is not None:
            k.strips(n, w, finish)

    def row(offsets: list[ir.Value]) -> None:
        k.chunks(cols, lambda c, n: chunk(k.add(offsets[0], c), k.add(offsets[1], c), n))

    k.nest(kept, [I64(0), I64(0)], row, name="o")


def _reduce_along_rows(k: _Kernel, red: _Reducer, dims: Sequence[tuple[int, bool]],
                       x: ir.Value, out: ir.Value) -> None:
    """Last dim reduced: every output element combines contiguous rows of input into
    lanes of partial results, then the lanes pairwise."""
    in_st, out_st = _strides(dims)
    n = dims[-1][0]
    kept = [(s, (in_st[i], out_st[i])) for i, (s, r) in enumerate(dims) if not r]
    reduced = [(s, (in_st[i],)) for i, (s, r) in enumerate(dims[:-1]) if r]
    part = _Partial(k, red.acc, red.init, red.combine,
                    k.width(max(_bits(red.src), _bits(red.acc)), n, registers=4))

    def element(offsets: list[ir.Value]) -> None:
        part.reset()

        def row(inner: list[ir.Value]) -> None:
            k.strips(n, part.width, lambda lanes, i: part.add(lanes, red.to_acc(
                lanes, k.load(lanes, x, k.add(inner[0], i)))))

        k.nest(reduced, [offsets[0]], row, name="r")
        one = k.lanes(1)
        k.store(one, out, offsets[1], red.finish(one, part.total()))

    k.nest(kept, [I64(0), I64(0)], element, name="o")


def _reduction_lowering(op: str) -> None:
    messages = {1: f"{op} over axes with no elements is undefined"}
    if op == "Mean":
        messages = {1: "Mean of an integer tensor over axes with no elements"}

    @lowering(op, messages=messages)
    def _emit(cx: LoweringContext) -> None:
        shape = cx.in_types[0].shape
        axes = normalize_axes(cx.attrs.get("axes"), len(shape))
        emit_reduction(cx, op, shape, axes, cx.input(0), cx.output(0))


for _op in ("Sum", "Mean", "Max", "Min", "Prod", "All", "Any"):
    _reduction_lowering(_op)


def _reduce_like_axes(grad: Sequence[int], like: Sequence[int]) -> tuple[int, ...] | None:
    """The axes ReduceToLike sums over, or None when `grad` is no broadcast of `like`."""
    lead = len(grad) - len(like)
    if lead < 0:
        return None
    axes = list(range(lead))
    for i, d in enumerate(like):
        if d == 1 and grad[lead + i] != 1:
            axes.append(lead + i)
        elif d != grad[lead + i]:
            return None
    return tuple(axes)


def _reduce_like_supported(node: Node) -> bool:
    return _reduce_like_axes(node.inputs[0].type.shape, node.inputs[1].type.shape) is not None


@lowering("ReduceToLike", supports=_reduce_like_supported)
def _reduce_to_like(cx: LoweringContext) -> None:
    """A Sum over the broadcast axes (bool: a sum cast to bool is Any)."""
    shape = cx.in_types[0].shape
    axes = _reduce_like_axes(shape, cx.in_types[1].shape)
    op = "Any" if cx.in_types[0].dtype is bool_ else "Sum"
    emit_reduction(cx, op, shape, axes, cx.input(0), cx.output(0))


# ----------------------------------------------------------------- ArgMax / ArgMin

def _better(lanes: Lanes, dtype: DType, op: str, x: ir.Value, best: ir.Value) -> ir.Value:
    """Whether `x` replaces `best`: strictly more extreme, or the first NaN."""
    if dtype.kind != "float":
        return lanes.icmp(dtype, op, x, best)
    # best is no NaN, and x is more extreme or NaN (unordered)
    b = lanes.b
    return b.and_(b.fcmp_ordered("ord", best, best), b.fcmp_unordered(op, x, best))


def _split_axis(shape: Sequence[int], axis: int) -> tuple[int, int, int]:
    return _prod(shape[:axis]), int(shape[axis]), _prod(shape[axis + 1:])


def _arg_status(node: Node, status: int) -> tuple[str, Node]:
    """ArgMax/ArgMin over an empty axis (the reference kernel's message: the axis and
    shape are all there is to say, and they are static)."""
    shape = list(node.inputs[0].type.shape)
    return (f"{node.op} along axis {node.attrs.get('axis', 0)} of a tensor of shape {shape}: "
            "that axis has no elements", node)


def _arg_lowering(op: str) -> None:
    cmp = ">" if op == "ArgMax" else "<"

    @lowering(op, messages={1: f"{op} along an axis with no elements"}, describe=_arg_status)
    def _emit(cx: LoweringContext) -> None:
        k = _Kernel(cx)
        t = cx.in_types[0]
        outer, n, inner = _split_axis(t.shape, normalize_axis(cx.attrs.get("axis", 0), t.rank))
        if outer * inner == 0:
            cx.ret_ok()
            return
        if n == 0:
            cx.fail_if(I1(1), 1)
            cx.ret_ok()
            return
        if inner == 1:
            _arg_along_rows(k, t.dtype, cmp, outer, n)
        else:
            _arg_into_rows(k, t.dtype, cmp, outer, n, inner)
        cx.ret_ok()


def _int_as(b: ir.IRBuilder, v: ir.Value, t: ir.Type) -> ir.Value:
    """Non-negative integer `v` as the integer type `t`."""
    if v.type == t:
        return v
    return b.trunc(v, t) if v.type.width > t.width else b.zext(v, t)


def _same(lanes: Lanes, dtype: DType, x: ir.Value, y: ir.Value) -> ir.Value:
    """Whether x and y are equally extreme: equal, or both NaN."""
    if dtype.kind != "float":
        return lanes.b.icmp_unsigned("==", x, y)
    b = lanes.b
    both_nan = b.and_(b.fcmp_unordered("uno", x, x), b.fcmp_unordered("uno", y, y))
    return b.or_(b.fcmp_ordered("==", x, y), both_nan)


def _arg_along_rows(k: _Kernel, dtype: DType, cmp: str, outer: int, n: int) -> None:
    """Extreme over contiguous rows: lane l of a vector keeps the best of elements l,
    l + W, l + 2W ... with its index; the lanes then combine (ties and NaNs go to the
    smaller index), and the remainder is scanned one element at a time."""
    cx, b = k.cx, k.b
    x, out = cx.input(0), cx.output(0)
    idx_t = I32 if n < 2**31 else I64
    w = k.width(max(dtype.bits, idx_t.width), n)  # one register: masks stay whole
    full = n - n % w if w > 1 else 0
    one = k.lanes(1)
    best = cx.alloca(scalar_type(dtype), name="best")
    where = cx.alloca(idx_t, name="where")
    if full:
        vbest = cx.alloca(ir.VectorType(scalar_type(dtype), w), name="best.v")
        vwhere = cx.alloca(ir.VectorType(idx_t, w), name="where.v")
        iota = ir.Constant(ir.VectorType(idx_t, w), list(range(w)))
    with cx.loop(0, outer, name="o") as o:
        base = b.mul(o, I64(n))
        if full:
            lanes = k.lanes(w)
            b.store(k.load(lanes, x, base), vbest)
            b.store(iota, vwhere)
            with cx.loop(w, full, w, name="v") as i:
                v, cur = k.load(lanes, x, b.add(base, i)), b.load(vbest)
                take = _better(lanes, dtype, cmp, v, cur)
                b.store(b.select(take, v, cur), vbest)
                at = b.add(lanes.splat(_int_as(b, i, idx_t)), iota)
                b.store(b.select(take, at, b.load(vwhere)), vwhere)
            cur, cur_at = _arg_lanes(k, dtype, cmp, b.load(vbest), b.load(vwhere), w)
            b.store(cur, best)
            b.store(cur_at, where)
        else:
            b.store(k.load(one, x, base), best)
            b.store(ir.Constant(idx_t, 0), where)
        if max(full, 1) < n:
            with cx.loop(max(full, 1), n, name="r") as r:
                v, cur = k.load(one, x, b.add(base, r)), b.load(best)
                take = _better(one, dtype, cmp, v, cur)
                b.store(b.select(take, v, cur), best)
                b.store(b.select(take, _int_as(b, r, idx_t), b.load(where)), where)
        k.store(one, out, o, _int_as(b, b.load(where), out.type.pointee))


def _arg_lanes(k: _Kernel, dtype: DType, cmp: str, best: ir.Value, where: ir.Value,
               width: int) -> tuple[ir.Value, ir.Value]:
    """The best of `width` lanes of (value, index) pairs: halves, then quarters ... are
    compared lane by lane (branch-free); ties and NaNs go to the smaller index."""
    b = k.b
    n = width
    while n > 1:
        (v_lo, v_hi), (i_lo, i_hi) = _halves(b, best, n), _halves(b, where, n)
        lanes = k.lanes(n // 2)
        take = b.or_(_better(lanes, dtype, cmp, v_hi, v_lo),
                     b.and_(_same(lanes, dtype, v_hi, v_lo), b.icmp_unsigned("<", i_hi, i_lo)))
        best, where = b.select(take, v_hi, v_lo), b.select(take, i_hi, i_lo)
        n //= 2
    return best, where


def _arg_into_rows(k: _Kernel, dtype: DType, cmp: str, outer: int, n: int, inner: int
                   ) -> None:
    """Extreme along a non-last axis: running best values (a chunk of columns) and their
    indices (in the output row), updated ROWS rows per pass."""
    cx, b = k.cx, k.b
    x, out = cx.input(0), cx.output(0)
    idx_t = out.type.pointee
    w = k.width(max(dtype.bits, idx_t.width), min(inner, CHUNK), registers=2)
    best = cx.alloca(scalar_type(dtype), min(inner, CHUNK), name="best")

    def chunk(o: ir.Value, c: ir.Value, size: int) -> None:
        x0 = b.add(b.mul(o, I64(n * inner)), c)
        out0 = b.add(b.mul(o, I64(inner)), c)

        def init(lanes: Lanes, j: ir.Value) -> None:
            k.store(lanes, best, j, k.load(lanes, x, b.add(x0, j)))
            k.store(lanes, out, b.add(out0, j), lanes.splat(ir.Constant(idx_t, 0)))

        def rows(r: ir.Value, count: int) -> None:
            xr = b.add(x0, b.mul(r, I64(inner)))

            def step(lanes: Lanes, j: ir.Value) -> None:
                cur, cur_at = k.load(lanes, best, j), k.load(lanes, out, b.add(out0, j))
                for u in range(count):
                    v = k.load(lanes, x, k.add(b.add(xr, j), u * inner))
                    take = _better(lanes, dtype, cmp, v, cur)
                    at = lanes.splat(_int_as(b, k.add(r, u), idx_t))
                    cur, cur_at = b.select(take, v, cur), b.select(take, at, cur_at)
                k.store(lanes, best, j, cur)
                k.store(lanes, out, b.add(out0, j), cur_at)

            k.strips(size, w, step)

        k.strips(size, w, init)
        k.row_blocks(1, n, rows)

    with cx.loop(0, outer, name="o") as o:
        k.chunks(inner, lambda c, size: chunk(o, c, size))


for _op in ("ArgMax", "ArgMin"):
    _arg_lowering(_op)


# ------------------------------------------------------------------ softmax family

def _exp(lanes: Lanes, dtype: DType, x: ir.Value) -> ir.Value:
    return exp_f32(lanes, x) if dtype.bits == 32 else lanes.intrinsic("exp", x)


def _widen(lanes: Lanes, dtype: DType, x: ir.Value) -> ir.Value:
    return x if dtype.bits == 64 else lanes.b.fpext(x, lanes.wrap(F64))


def _narrow(lanes: Lanes, dtype: DType, x: ir.Value) -> ir.Value:
    return x if dtype.bits == 64 else lanes.b.fptrunc(x, lanes.ty(dtype))


def _fadd(lanes: Lanes, a: ir.Value, x: ir.Value) -> ir.Value:
    return lanes.b.fadd(a, x)


@dataclass
class _RowStats:
    """Per-row softmax statistics: the row maximum (input dtype) and the f64 sum of
    exp(x - max)."""

    max: ir.Value
    sum: ir.Value


class _Rows:
    """Softmax machinery along contiguous rows of `n` elements of `dtype`."""

    def __init__(self, k: _Kernel, dtype: DType, n: int) -> None:
        self.k, self.dtype, self.n = k, dtype, n
        self.w = k.width(64, n, registers=2)  # f64 sums are the widest values

        def fmax(lanes: Lanes, a: ir.Value, x: ir.Value) -> ir.Value:
            return nan_max(lanes, dtype, a, x, ">")

        self.max_part = _Partial(k, dtype, -np.inf, fmax, self.w)
        self.sum_part = _Partial(k, float64, 0.0, _fadd, self.w)

    def stats(self, x: ir.Value, base: ir.Value,
              on_exp: Callable[[Lanes, ir.Value, ir.Value], None] | None = None) -> _RowStats:
        """Max and sum of exp(x - max) over the row at `base`; ``on_exp(lanes, i, e)``
        sees each strip of exponentials (to store them)."""
        k, dt = self.k, self.dtype
        self.max_part.reset()
        k.strips(self.n, self.w, lambda lanes, i: self.max_part.add(
            lanes, k.load(lanes, x, k.add(base, i))), name="max")
        m = self.max_part.total()
        self.sum_part.reset()

        def body(lanes: Lanes, i: ir.Value) -> None:
            v = k.load(lanes, x, k.add(base, i))
            e = _exp(lanes, dt, lanes.b.fsub(v, lanes.splat(m)))
            if on_exp is not None:
                on_exp(lanes, i, e)
            self.sum_part.add(lanes, _widen(lanes, dt, e))

        k.strips(self.n, self.w, body, name="exp")
        return _RowStats(m, self.sum_part.total())


def _softmax_lowering(op: str) -> None:
    log = op == "LogSoftmax"

    @lowering(op)
    def _emit(cx: LoweringContext) -> None:
        k = _Kernel(cx)
        t = cx.in_types[0]
        outer, n, inner = _split_axis(t.shape, normalize_axis(cx.attrs.get("axis", -1), t.rank))
        if outer * n * inner:
            if inner == 1:
                _softmax_rows(k, t.dtype, log, outer, n)
            else:
                _softmax_columns(k, t.dtype, log, outer, n, inner)
        cx.ret_ok()


def _softmax_rows(k: _Kernel, dtype: DType, log: bool, outer: int, n: int) -> None:
    """Softmax along the last axis: per row max, exp and f64 sum, then scale (Softmax:
    exp * (1 / sum)) or shift (LogSoftmax: (x - max) - log(sum))."""
    cx, b = k.cx, k.b
    x, out = cx.input(0), cx.output(0)
    rows = _Rows(k, dtype, n)
    one = k.lanes(1)
    with cx.loop(0, outer, name="row") as r:
        base = b.mul(r, I64(n))

        def keep(lanes: Lanes, i: ir.Value, e: ir.Value) -> None:
            k.store(lanes, out, b.add(base, i), e)

        st = rows.stats(x, base, None if log else keep)
        if log:
            lse = _narrow(one, dtype, one.intrinsic("log", st.sum))

            def shift(lanes: Lanes, i: ir.Value) -> None:
                v = k.load(lanes, x, b.add(base, i))
                y = b.fsub(b.fsub(v, lanes.splat(st.max)), lanes.splat(lse))
                k.store(lanes, out, b.add(base, i), y)

            k.strips(n, rows.w, shift, name="out")
        else:
            inv = _narrow(one, dtype, b.fdiv(ir.Constant(F64, 1.0), st.sum))

            def scale(lanes: Lanes, i: ir.Value) -> None:
                e = k.load(lanes, out, b.add(base, i))
                k.store(lanes, out, b.add(base, i), b.fmul(e, lanes.splat(inv)))

            k.strips(n, rows.w, scale, name="out")


def _softmax_columns(k: _Kernel, dtype: DType, log: bool, outer: int, n: int, inner: int
                     ) -> None:
    """Softmax along a non-last axis: per chunk of columns, running maxima and f64 sums
    in buffers, updated a row at a time (contiguous strips)."""
    cx, b = k.cx, k.b
    x, out = cx.input(0), cx.output(0)
    size = min(inner, CHUNK)
    w = k.width(64, size, registers=2)
    mx = cx.alloca(scalar_type(dtype), size, name="max")
    sm = cx.alloca(F64, size, name="sum")

    def over_rows(x0: ir.Value, n_cols: int, body: Callable[[Lanes, ir.Value, ir.Value], None]
                  ) -> None:
        with cx.loop(0, n, name="r") as r:
            xr = b.add(x0, b.mul(r, I64(inner)))
            k.strips(n_cols, w, lambda lanes, j: body(lanes, j, b.add(xr, j)))

    def chunk(o: ir.Value, c: ir.Value, n_cols: int) -> None:
        x0 = b.add(b.mul(o, I64(n * inner)), c)

        def init(lanes: Lanes, j: ir.Value) -> None:
            k.store(lanes, mx, j, lanes.dconst(dtype, -np.inf))
            k.store(lanes, sm, j, lanes.const(F64, 0.0))

        def running_max(lanes: Lanes, j: ir.Value, at: ir.Value) -> None:
            cur, v = k.load(lanes, mx, j), k.load(lanes, x, at)
            k.store(lanes, mx, j, nan_max(lanes, dtype, cur, v, ">"))

        def running_sum(lanes: Lanes, j: ir.Value, at: ir.Value) -> None:
            v = k.load(lanes, x, at)
            e = _exp(lanes, dtype, b.fsub(v, k.load(lanes, mx, j)))
            if not log:
                k.store(lanes, out, at, e)
            k.store(lanes, sm, j, b.fadd(k.load(lanes, sm, j), _widen(lanes, dtype, e)))

        def finish_sums(lanes: Lanes, j: ir.Value) -> None:
            s = k.load(lanes, sm, j)
            if log:  # log(sum), kept in f64 until the final shift
                k.store(lanes, sm, j, lanes.intrinsic("log", s))
            else:  # the scale 1 / sum replaces the maxima, which are no longer needed
                k.store(lanes, mx, j, _narrow(lanes, dtype, b.fdiv(lanes.const(F64, 1.0), s)))

        def result(lanes: Lanes, j: ir.Value, at: ir.Value) -> None:
            if log:
                shifted = b.fsub(k.load(lanes, x, at), k.load(lanes, mx, j))
                y = b.fsub(shifted, _narrow(lanes, dtype, k.load(lanes, sm, j)))
            else:
                y = b.fmul(k.load(lanes, out, at), k.load(lanes, mx, j))
            k.store(lanes, out, at, y)

        k.strips(n_cols, w, init)
        over_rows(x0, n_cols, running_max)
        over_rows(x0, n_cols, running_sum)
        k.strips(n_cols, w, finish_sums)
        over_rows(x0, n_cols, result)

    with cx.loop(0, outer, name="o") as o:
        k.chunks(inner, lambda c, n_cols: chunk(o, c, n_cols))


for _op in ("Softmax", "LogSoftmax"):
    _softmax_lowering(_op)


def _same_shapes(node: Node) -> bool:
    return tuple(node.inputs[0].type.shape) == tuple(node.inputs[1].type.shape)


@lowering("SoftmaxCrossEntropyWithLogits", supports=_same_shapes)
def _softmax_xent(cx: LoweringContext) -> None:
    """Per row of classes: max, exp (kept in backprop) and f64 sum; then
    loss = -sum(labels * log_p) (in f64) and backprop = exp * (1 / sum) - labels."""
    k, b = _Kernel(cx), cx.b
    t = cx.in_types[0]
    n = int(t.shape[-1])
    batch = _prod(t.shape[:-1])
    x, y, loss, grad = cx.input(0), cx.input(1), cx.output(0), cx.output(1)
    if batch and not n:
        _fill(k, loss, batch, cx.const(t.dtype, 0.0))
    if not batch * n:
        cx.ret_ok()
        return
    dt, one = t.dtype, k.lanes(1)
    rows = _Rows(k, dt, n)
    total = _Partial(k, float64, 0.0, _fadd, rows.w)
    with cx.loop(0, batch, name="row") as r:
        base = b.mul(r, I64(n))
        st = rows.stats(x, base, lambda lanes, i, e: k.store(lanes, grad, b.add(base, i), e))
        lse = _narrow(one, dt, one.intrinsic("log", st.sum))
        inv = _narrow(one, dt, b.fdiv(ir.Constant(F64, 1.0), st.sum))
        total.reset()

        def body(lanes: Lanes, i: ir.Value) -> None:
            at = b.add(base, i)
            v, lab = k.load(lanes, x, at), k.load(lanes, y, at)
            log_p = b.fsub(b.fsub(v, lanes.splat(st.max)), lanes.splat(lse))
            total.add(lanes, _widen(lanes, dt, b.fmul(lab, log_p)))
            e = k.load(lanes, grad, at)
            k.store(lanes, grad, at, b.fsub(b.fmul(e, lanes.splat(inv)), lab))

        k.strips(n, rows.w, body, name="xent")
        k.store(one, loss, r, _narrow(one, dt, b.fneg(total.total())))
    cx.ret_ok()


@lowering("SparseSoftmaxCrossEntropyWithLogits",
          messages={1: "received a label value which is outside the valid range of "
                       "[0, classes) (classes: the size of the last axis of logits)"})
def _sparse_xent(cx: LoweringContext) -> None:
    """Labels checked first (any outside [0, classes) -> status 1); then per row max,
    exp and f64 sum; backprop = exp * (1 / sum) with 1 subtracted at the label,
    loss = -((x[label] - max) - log(sum)) in f64."""
    k, b = _Kernel(cx), cx.b
    t = cx.in_types[0]
    n = int(t.shape[-1])
    batch = _prod(t.shape[:-1])
    x, labels, loss, grad = cx.input(0), cx.input(1), cx.output(0), cx.output(1)
    label_t = labels.type.pointee
    with cx.loop(0, batch, name="check") as r:
        # unsigned: a negative label compares as huge
        label = k.load(k.lanes(1), labels, r)
        cx.fail_if(b.icmp_unsigned(">=", label, ir.Constant(label_t, n)), 1)
    if not batch * n:
        cx.ret_ok()
        return
    dt, one = t.dtype, k.lanes(1)
    rows = _Rows(k, dt, n)
    with cx.loop(0, batch, name="row") as r:
        base = b.mul(r, I64(n))
        st = rows.stats(x, base, lambda lanes, i, e: k.store(lanes, grad, b.add(base, i), e))
        lse = one.intrinsic("log", st.sum)
        inv = _narrow(one, dt, b.fdiv(ir.Constant(F64, 1.0), st.sum))

        def scale(lanes: Lanes, i: ir.Value) -> None:
            at = b.add(base, i)
            k.store(lanes, grad, at, b.fmul(k.load(lanes, grad, at), lanes.splat(inv)))

        k.strips(n, rows.w, scale, name="scale")
        label = k.load(k.lanes(1), labels, r)
        at = b.add(base, label if label_t == I64 else b.sext(label, I64))
        picked = b.fsub(b.fsub(_widen(one, dt, k.load(one, x, at)), _widen(one, dt, st.max)),
                        lse)
        k.store(one, loss, r, _narrow(one, dt, b.fneg(picked)))
        k.store(one, grad, at, b.fsub(k.load(one, grad, at), cx.const(dt, 1.0)))
    cx.ret_ok()


__all__ = ["CHUNK", "emit_reduction"]

