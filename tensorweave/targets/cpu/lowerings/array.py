"""Lowerings of the array family: copies with static index maps (Transpose, Concat, Pack,
Unpack, Split, Slice, StridedSlice, Pad, Tile, BroadcastTo ...), gathers and scatters
(Gather, UnsortedSegmentSum, OneHot, DynamicUpdateRow), creation (Fill, Range, Shape ...)
and the standalone elementwise Select and Cast.

Shapes are static, so every index map is worked out here, in Python, as an affine loop
nest (`_Nest`: per operand an offset and one stride per loop). Nests drop unit dims and
merge adjacent dims that stay contiguous in every operand, so the innermost loop is as
long as possible; a contiguous innermost run becomes one `memcpy`. Copies move raw bytes
through integers of the element's width (bool is one byte), never through float
registers.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np

from ....compiler.dtypes import DType
from ....compiler.ir import Node
from ....compiler.ops.array import StridedSlice, _strided_plan
from ....compiler.types import format_shape
from ....errors import ShapeError
from ..elementwise import Lanes, OpInfo, emit_op
from ..lowering import I8, I32, I64, LoweringContext, lowering

Offsets = list[ir.Value]

# transposing copies go through square tiles of this many elements a side, so that both
# the rows read and the rows written stay in L1
_TILE = 16


# ------------------------------------------------------------------------ shape helpers

def _size(shape: Sequence[int]) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _strides(shape: Sequence[int]) -> list[int]:
    """Row-major strides, in elements."""
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= int(n)
    return out[::-1]


def _shape(cx: LoweringContext, k: int = 0, output: bool = True) -> list[int]:
    t = cx.out_types[k] if output else cx.in_types[k]
    return [int(d) for d in t.shape]


def _itemsize(dtype: DType) -> int:
    return dtype.np.itemsize


def _raw_type(dtype: DType) -> ir.IntType:
    """The integer type of `dtype`'s width: copies and fills move these."""
    return ir.IntType(8 * _itemsize(dtype))


def _raw_in(cx: LoweringContext, k: int) -> ir.Value:
    return cx.b.bitcast(cx.input(k), ir.PointerType(_raw_type(cx.in_types[k].dtype)))


def _raw_out(cx: LoweringContext, k: int) -> ir.Value:
    return cx.b.bitcast(cx.output(k), ir.PointerType(_raw_type(cx.out_types[k].dtype)))


def _raw_bits(dtype: DType, value: object) -> int:
    """`value` converted to `dtype` as NumPy converts it, as a signed integer of the same
    bytes (bool: 0 or 1)."""
    with np.errstate(all="ignore"):
        arr = np.asarray(value).astype(dtype.np).reshape(1)
    return int(arr.view(np.dtype(f"i{_itemsize(dtype)}"))[0])


def _at(cx: LoweringContext, ptr: ir.Value, offset: ir.Value | int) -> ir.Value:
    return cx.b.gep(ptr, [I64(offset) if isinstance(offset, int) else offset])


def _add(cx: LoweringContext, base: ir.Value, index: ir.Value | int, stride: int) -> ir.Value:
    """``base + index * stride`` (i64), folding the trivial cases."""
    if stride == 0:
        return base
    if isinstance(index, int):
        return cx.b.add(base, I64(index * stride)) if index else base
    term = index if stride == 1 else cx.b.mul(index, I64(stride))
    return cx.b.add(base, term)


def _for(cx: LoweringContext, n: int, body: Callable[[ir.Value | int], None],
         name: str = "j") -> None:
    """``for j in range(n): body(j)`` with no loop at all for n <= 1."""
    if n == 1:
        body(0)
    elif n > 1:
        with cx.loop(0, n, name=name) as j:
            body(j)


# ---------------------------------------------------------------------- fills and runs

def _copy_run(cx: LoweringContext, dst: ir.Value, doff: ir.Value | int, src: ir.Value,
              soff: ir.Value | int, n: int, itemsize: int) -> None:
    """Copy `n` contiguous elements (raw pointers, element offsets)."""
    if n == 1:
        cx.b.store(cx.b.load(_at(cx, src, soff)), _at(cx, dst, doff))
    elif n > 1:
        cx.memcpy(_at(cx, dst, doff), _at(cx, src, soff), n * itemsize)


def _fill(cx: LoweringContext, dst: ir.Value, off: ir.Value | int, n: int, dtype: DType,
          bits: int) -> None:
    """Store the raw value `bits` into `n` contiguous elements of raw pointer `dst`."""
    if n <= 0:
        return
    size = _itemsize(dtype)
    raw = bits.to_bytes(size, "little", signed=True)
    if len(set(raw)) == 1:  # every byte alike (zeros above all): memset
        cx.memset(_at(cx, dst, off), raw[0], n * size)
        return
    value = ir.Constant(_raw_type(dtype), bits)
    base = _at(cx, dst, off)
    _for(cx, n, lambda j: cx.b.store(value, _at(cx, base, j)), name="fill")


# ------------------------------------------------------------------------ loop nests

@dataclass
class _Nest:
    """Element (i_0 .. i_r-1) of operand k sits at ``offsets[k] + sum_d i_d * strides[k][d]``
    (in elements); operand 0 is the one written."""

    shape: list[int]
    offsets: list[int]
    strides: list[list[int]]

    def simplified(self) -> _Nest | None:
        """The same nest without unit dims and with mergeable neighbours merged (None
        when it has no elements)."""
        if any(n == 0 for n in self.shape):
            return None
        shape: list[int] = []
        strides: list[list[int]] = [[] for _ in self.offsets]
        for d, n in enumerate(self.shape):
            if n == 1:
                continue
            if shape and all(st[-1] == s[d] * n for st, s in zip(strides, self.strides)):
                shape[-1] *= n
                for st, s in zip(strides, self.strides):
                    st[-1] = s[d]
            else:
                shape.append(n)
                for st, s in zip(strides, self.strides):
                    st.append(s[d])
        if not shape:
            return _Nest([1], list(self.offsets), [[0] for _ in self.offsets])
        return _Nest(shape, list(self.offsets), strides)


Inner = Callable[[Offsets, int, list[int]], None]


def _walk(cx: LoweringContext, nest: _Nest, inner: Inner,
          dims: Sequence[int] | None = None, offsets: Offsets | None = None) -> None:
    """Loop over `dims` (default: all but the last dim) and call
    ``inner(offsets, count, strides)`` to emit the last dim at each point."""
    if dims is None:
        dims = range(len(nest.shape) - 1)
    dims = list(dims)
    offs = offsets if offsets is not None else [I64(o) for o in nest.offsets]
    if not dims:
        inner(offs, nest.shape[-1], [s[-1] for s in nest.strides])
        return
    d = dims[0]

    def body(i: ir.Value | int) -> None:
        moved = [_add(cx, o, i, s[d]) for o, s in zip(offs, nest.strides)]
        _walk(cx, nest, inner, dims[1:], moved)
    _for(cx, nest.shape[d], body, name=f"d{d}")


def _copy_inner(cx: LoweringContext, dst: ir.Value, src: ir.Value, itemsize: int) -> Inner:
    """Innermost dim of a copy: one memcpy when both sides are contiguous, a splat when
    the source does not move (broadcasts), else an element loop."""
    def inner(offs: Offsets, n: int, strides: list[int]) -> None:
        (do, so), (ds, ss) = offs, strides
        if ds == 1 and ss == 1:
            _copy_run(cx, dst, do, src, so, n, itemsize)
        elif ss == 0:
            value = cx.b.load(_at(cx, src, so))
            _for(cx, n, lambda j: cx.b.store(value, _at(cx, dst, _add(cx, do, j, ds))))
        else:
            _for(cx, n, lambda j: cx.b.store(cx.b.load(_at(cx, src, _add(cx, so, j, ss))),
                                             _at(cx, dst, _add(cx, do, j, ds))))
    return inner


def _copy(cx: LoweringContext, dst: ir.Value, src: ir.Value, nest: _Nest, itemsize: int
          ) -> None:
    """Emit ``dst[nest] = src[nest]`` (raw pointers; operand 0 is dst)."""
    simple = nest.simplified()
    if simple is None:
        return
    ds, ss = simple.strides
    r = len(simple.shape)
    if r >= 2 and ds[-1] == 1 and abs(ss[-1]) > 1:
        # a transpose: tile if the source is contiguous along another dim
        along = [d for d in range(r - 1) if ss[d] == 1]
        if along and simple.shape[along[-1]] >= _TILE and simple.shape[-1] >= _TILE:
            _copy_tiled(cx, dst, src, simple, along[-1])
            return
    _walk(cx, simple, _copy_inner(cx, dst, src, itemsize))


def _copy_tiled(cx: LoweringContext, dst: ir.Value, src: ir.Value, nest: _Nest, p: int
                ) -> None:
    """A transposing copy in `_TILE`-square tiles over dim `p` (contiguous in the source)
    and the last dim (contiguous in the destination)."""
    b, r = cx.b, len(nest.shape)
    big_p, big_l = nest.shape[p], nest.shape[-1]

    def upto(start: ir.Value, n: int) -> ir.Value:
        end = b.add(start, I64(_TILE))
        if n % _TILE == 0:  # whole tiles: a constant trip count
            return end
        return b.select(b.icmp_signed("<", end, I64(n)), end, I64(n))

    def tiles(offs: Offsets, _n: int, _s: list[int]) -> None:
        with cx.loop(0, big_p, step=_TILE, name="tp") as tp, \
                cx.loop(0, big_l, step=_TILE, name="tl") as tl, \
                cx.loop(tp, upto(tp, big_p), name="ip") as ip:
            row = [_add(cx, o, ip, s[p]) for o, s in zip(offs, nest.strides)]
            with cx.loop(tl, upto(tl, big_l), name="il") as il:
                d = _add(cx, row[0], il, nest.strides[0][-1])
                s = _add(cx, row[1], il, nest.strides[1][-1])
                b.store(b.load(_at(cx, src, s)), _at(cx, dst, d))
    _walk(cx, nest, tiles, [d for d in range(r - 1) if d != p])


def _accumulate(cx: LoweringContext, dst: ir.Value, src: ir.Value, nest: _Nest, dtype: DType
                ) -> None:
    """Emit ``dst[nest] += src[nest]`` (typed pointers). (PadGrad's mirrored blocks added
    onto the copied centre: a read-back of stored elements, the memory pattern of
    docs/llvm_o2_miscompile.md; tests/test_review_sums_grid.py checks PadGrad.)"""
    simple = nest.simplified()
    if simple is None:
        return
    b, is_float = cx.b, dtype.kind == "float"

    def inner(offs: Offsets, n: int, strides: list[int]) -> None:
        def one(j: ir.Value | int) -> None:
            pd = _at(cx, dst, _add(cx, offs[0], j, strides[0]))
            ps = _at(cx, src, _add(cx, offs[1], j, strides[1]))
            x, y = b.load(pd), b.load(ps)
            b.store(b.fadd(x, y) if is_float else b.add(x, y), pd)
        _for(cx, n, one)
    _walk(cx, simple, inner)


def _rows(cx: LoweringContext, outer: int, parts: Sequence[tuple], itemsize: int) -> None:
    """For each of `outer` rows, the contiguous copies `parts`: tuples (dst, dst_offset,
    dst_row_stride, src, src_offset, src_row_stride, run), in elements."""
    parts = [p for p in parts if p[6] > 0]
    if outer == 0 or not parts:
        return

    def row(o: ir.Value | int) -> None:
        for dst, doff, dstride, src, soff, sstride, run in parts:
            _copy_run(cx, dst, _add(cx, I64(doff), o, dstride), src,
                      _add(cx, I64(soff), o, sstride), run, itemsize)
    _for(cx, outer, row, name="row")


def _done(cx: LoweringContext) -> None:
    cx.ret_ok()


# ------------------------------------------------------------------- permuting copies

@lowering("Transpose")
def _transpose(cx: LoweringContext) -> None:
    """Output element i reads input element sum_k i_k * in_stride[perm[k]]."""
    shape_in = _shape(cx, 0, output=False)
    in_strides = _strides(shape_in)
    perm = [int(p) % len(shape_in) for p in cx.attrs["perm"]] if shape_in else []
    out = _shape(cx)
    nest = _Nest(out, [0, 0], [_strides(out), [in_strides[p] for p in perm]])
    _copy(cx, _raw_out(cx, 0), _raw_in(cx, 0), nest, _itemsize(cx.out_types[0].dtype))
    _done(cx)


@lowering("Concat")
def _concat(cx: LoweringContext) -> None:
    """Per row of the dims before the axis, one contiguous run per input."""
    out = _shape(cx)
    ax = int(cx.attrs["axis"]) % len(out)
    outer, inner = _size(out[:ax]), _size(out[ax + 1:])
    dst, parts, off = _raw_out(cx, 0), [], 0
    for k, t in enumerate(cx.in_types):
        run = int(t.shape[ax]) * inner
        if run:
            parts.append((dst, off, out[ax] * inner, _raw_in(cx, k), 0, run, run))
        off += run
    _rows(cx, outer, parts, _itemsize(cx.out_types[0].dtype))
    _done(cx)


@lowering("Pack")
def _pack(cx: LoweringContext) -> None:
    """Concat of inputs viewed with a unit dim at the axis."""
    out = _shape(cx)
    ax = int(cx.attrs["axis"]) % len(out)
    outer, inner, n = _size(out[:ax]), _size(out[ax + 1:]), len(cx.in_types)
    dst = _raw_out(cx, 0)
    parts = [(dst, k * inner, n * inner, _raw_in(cx, k), 0, inner, inner)
             for k in range(n)] if inner else []
    _rows(cx, outer, parts, _itemsize(cx.out_types[0].dtype))
    _done(cx)


@lowering("Unpack")
def _unpack(cx: LoweringContext) -> None:
    """Output k takes index k of the axis from each row."""
    x = _shape(cx, 0, output=False)
    ax = int(cx.attrs["axis"]) % len(x)
    outer, inner, n = _size(x[:ax]), _size(x[ax + 1:]), x[ax]
    src = _raw_in(cx, 0)
    parts = [(_raw_out(cx, k), 0, inner, src, k * inner, n * inner, inner)
             for k in range(len(cx.out_types))] if inner else []
    _rows(cx, outer, parts, _itemsize(cx.in_types[0].dtype))
    _done(cx)


def _split_parts(cx: LoweringContext) -> None:
    """Split/SplitLike: output k is a contiguous run of each row of the input."""
    x = _shape(cx, 0, output=False)
    ax = int(cx.attrs["axis"]) % len(x)
    outer, inner = _size(x[:ax]), _size(x[ax + 1:])
    src, parts, off = _raw_in(cx, 0), [], 0
    for k, t in enumerate(cx.out_types):
        run = int(t.shape[ax]) * inner
        if run:
            parts.append((_raw_out(cx, k), 0, run, src, off, x[ax] * inner, run))
        off += run
    _rows(cx, outer, parts, _itemsize(cx.in_types[0].dtype))
    _done(cx)


lowering("Split")(_split_parts)
lowering("SplitLike")(_split_parts)


# ------------------------------------------------------------------------- slicing

@lowering("Slice")
def _slice(cx: LoweringContext) -> None:
    """A box of the input: offset `begin`, the input's strides."""
    in_strides = _strides(_shape(cx, 0, output=False))
    out = _shape(cx)
    start = sum(int(b) * s for b, s in zip(cx.attrs["begin"], in_strides))
    nest = _Nest(out, [0, start], [_strides(out), in_strides])
    _copy(cx, _raw_out(cx, 0), _raw_in(cx, 0), nest, _itemsize(cx.out_types[0].dtype))
    _done(cx)


def _strided_attrs(node: Node) -> dict:
    return {k: node.attrs[k] for k in StridedSlice.attrs}


def _strided_nest(shape: Sequence[int], attrs: dict) -> tuple[list[int], int, list[int]]:
    """(counts, offset, strides) of the elements a strided slice of `shape` reads, one
    entry per input dim, in the input's elements (strides may be negative)."""
    plan, _ = _strided_plan(list(shape), attrs)
    in_strides = _strides(shape)
    counts = [int(c) for _, c, _ in plan]
    offset = sum(int(b) * s for (b, c, _), s in zip(plan, in_strides) if c)
    strides = [int(st) * s for (_, _, st), s in zip(plan, in_strides)]
    return counts, offset, strides


def _strided_supported(node: Node) -> bool:
    like = node.inputs[-1].type  # StridedSlice: the input; the gradient: `like`
    try:
        _strided_nest([int(d) for d in like.shape], _strided_attrs(node))
    except ShapeError:
        return False
    return True


@lowering("StridedSlice", supports=_strided_supported)
def _strided_slice(cx: LoweringContext) -> None:
    """The plan's counts, in order, are the output's elements (shrunk dims count 1,
    new axes add unit dims): a copy from an affine view of the input."""
    counts, offset, strides = _strided_nest(_shape(cx, 0, output=False),
                                            _strided_attrs(cx.node))
    nest = _Nest(counts, [0, offset], [_strides(counts), strides])
    _copy(cx, _raw_out(cx, 0), _raw_in(cx, 0), nest, _itemsize(cx.out_types[0].dtype))
    _done(cx)


@lowering("StridedSliceGrad", supports=_strided_supported)
def _strided_slice_grad(cx: LoweringContext) -> None:
    """Zeros, then dy written where StridedSlice reads (no element is read twice)."""
    out = _shape(cx)
    counts, offset, strides = _strided_nest(out, _strided_attrs(cx.node))
    dtype = cx.out_types[0].dtype
    dst = _raw_out(cx, 0)
    cx.memset(dst, 0, _size(out) * _itemsize(dtype))
    nest = _Nest(counts, [offset, 0], [strides, _strides(counts)])
    _copy(cx, dst, _raw_in(cx, 0), nest, _itemsize(dtype))
    _done(cx)


# ------------------------------------------------------------------------- padding

def _pairs(cx: LoweringContext, rank: int) -> list[tuple[int, int]]:
    p = [int(v) for v in cx.attrs["paddings"]]
    return [(p[2 * i], p[2 * i + 1]) for i in range(rank)]


def _pad_levels(shape: Sequence[int], pairs: Sequence[tuple[int, int]]
                ) -> tuple[list[tuple[int, int, int]], int]:
    """(size, before, after) per dim, without the trailing unpadded dims, which become
    the copy unit (returned, in elements)."""
    levels = [(int(n), b, a) for n, (b, a) in zip(shape, pairs)]
    unit = 1
    while levels and levels[-1][1:] == (0, 0):
        unit *= levels.pop()[0]
    return levels, unit


@lowering("Pad")
def _pad(cx: LoweringContext) -> None:
    """Every output element is written once: constant runs are filled and input rows
    copied (CONSTANT), or each output index reads its mirrored input index (REFLECT,
    SYMMETRIC)."""
    shape = _shape(cx, 0, output=False)
    dtype = cx.in_types[0].dtype
    size = _itemsize(dtype)
    src, dst = _raw_in(cx, 0), _raw_out(cx, 0)
    levels, unit = _pad_levels(shape, _pairs(cx, len(shape)))
    if _size(_shape(cx)) == 0:
        _done(cx)
        return
    if not levels:
        _copy_run(cx, dst, 0, src, 0, _size(shape), size)
    elif cx.attrs["mode"] == "CONSTANT":
        n, b, a = levels[-1]
        levels[-1] = (n * unit, b * unit, a * unit)
        _pad_constant(cx, dst, src, levels, _raw_bits(dtype, cx.attrs["constant_value"]), dtype)
    else:
        _pad_mirror(cx, dst, src, levels, unit, size, 1 if cx.attrs["mode"] == "REFLECT" else 0)
    _done(cx)


def _pad_constant(cx: LoweringContext, dst: ir.Value, src: ir.Value,
                  levels: list[tuple[int, int, int]], bits: int, dtype: DType) -> None:
    """Per level: fill the `before` block, recurse into (or copy) the middle rows, fill
    the `after` block; each block is contiguous in the output."""
    out_strides = _strides([n + b + a for n, b, a in levels])
    in_strides = _strides([n for n, _, _ in levels])
    last = len(levels) - 1

    def level(k: int, dbase: ir.Value, sbase: ir.Value) -> None:
        n, b, a = levels[k]
        os_, is_ = out_strides[k], in_strides[k]
        _fill(cx, dst, dbase, b * os_, dtype, bits)
        if k == last:
            _copy_run(cx, dst, _add(cx, dbase, b, 1), src, sbase, n, _itemsize(dtype))
        else:
            first = _add(cx, dbase, b, os_)
            _for(cx, n, lambda i: level(k + 1, _add(cx, first, i, os_), _add(cx, sbase, i, is_)),
                 name=f"p{k}")
        _fill(cx, dst, _add(cx, dbase, b + n, os_), a * os_, dtype, bits)
    level(0, I64(0), I64(0))


def _pad_mirror(cx: LoweringContext, dst: ir.Value, src: ir.Value,
                levels: list[tuple[int, int, int]], unit: int, size: int, edge: int) -> None:
    """REFLECT (edge 1) / SYMMETRIC (edge 0): output index j of a level reads input index
    b-1-j+edge before the input, j-b inside it and n-1-edge-(j-b-n) after it."""
    out_strides = [s * unit for s in _strides([n + b + a for n, b, a in levels])]
    in_strides = [s * unit for s in _strides([n for n, _, _ in levels])]
    last, bld = len(levels) - 1, cx.b

    def mirrored(j: ir.Value, n: int, b: int, a: int) -> ir.Value:
        if b == a == 0:
            return j
        before = bld.sub(I64(b - 1 + edge), j)
        inside = bld.sub(j, I64(b))
        after = bld.sub(I64(2 * n - 1 - edge + b), j)
        return bld.select(bld.icmp_signed("<", j, I64(b)), before,
                          bld.select(bld.icmp_signed("<", j, I64(b + n)), inside, after))

    def level(k: int, dbase: ir.Value, sbase: ir.Value) -> None:
        n, b, a = levels[k]
        os_, is_ = out_strides[k], in_strides[k]
        if k < last:
            with cx.loop(0, n + b + a, name=f"p{k}") as j:
                level(k + 1, _add(cx, dbase, j, os_), _add(cx, sbase, mirrored(j, n, b, a), is_))
            return
        # before and after the input: units read backwards from a mirrored start
        for count, dstart, sstart, name in ((b, 0, b - 1 + edge, "before"),
                                            (a, b + n, n - 1 - edge, "after")):
            d0, s0 = _add(cx, dbase, dstart, os_), _add(cx, sbase, sstart, is_)
            _for(cx, count, lambda j, d0=d0, s0=s0: _copy_run(
                cx, dst, _add(cx, d0, j, os_), src, _add(cx, s0, j, -is_), unit, size), name=name)
        _copy_run(cx, dst, _add(cx, dbase, b, os_), src, sbase, n * unit, size)
    level(0, I64(0), I64(0))


def _pad_grad_supported(node: Node) -> bool:
    # mirrored padding adds gradients up, which bool cannot
    return node.attrs["mode"] == "CONSTANT" or node.outputs[0].type.dtype.kind != "bool"


@lowering("PadGrad", supports=_pad_grad_supported)
def _pad_grad(cx: LoweringContext) -> None:
    """The centre of the gradient, plus (mirrored modes) every padded block added onto
    the input elements it mirrors: per dim the segments centre, before (reversed) and
    after (reversed), one accumulating nest per combination."""
    grad, out = _shape(cx, 0, output=False), _shape(cx)
    dtype = cx.out_types[0].dtype
    gs, os_ = _strides(grad), _strides(out)
    pairs = _pairs(cx, len(grad))
    centre = _Nest(out, [0, sum(b * s for (b, _), s in zip(pairs, gs))], [os_, gs])
    _copy(cx, _raw_out(cx, 0), _raw_in(cx, 0), centre, _itemsize(dtype))
    if cx.attrs["mode"] != "CONSTANT":
        edge = 1 if cx.attrs["mode"] == "REFLECT" else 0
        # per dim: (count, first output index, output step, first grad index)
        segments = [[(n, 0, 1, b), (b, b - 1 + edge, -1, 0), (a, n - 1 - edge, -1, b + n)]
                    for n, (b, a) in zip(out, pairs)]
        typed_out, typed_in = cx.output(0), cx.input(0)
        for combo in itertools.product(*segments):
            if all(seg[2] == 1 for seg in combo) or any(seg[0] == 0 for seg in combo):
                continue
            nest = _Nest([seg[0] for seg in combo],
                         [sum(seg[1] * s for seg, s in zip(combo, os_)),
                          sum(seg[3] * s for seg, s in zip(combo, gs))],
                         [[seg[2] * s for seg, s in zip(combo, os_)], gs])
            _accumulate(cx, typed_out, typed_in, nest, dtype)
    _done(cx)


# ------------------------------------------------------------------- Tile / broadcast

@lowering("Tile")
def _tile(cx: LoweringContext) -> None:
    """The output viewed as [m0, d0, m1, d1, ...]: the copies m_k read with stride 0."""
    shape = _shape(cx, 0, output=False)
    mult = [int(m) for m in cx.attrs["multiples"]]
    in_strides = _strides(shape)
    view = [x for m, d in zip(mult, shape) for x in (m, d)]
    src_strides = [x for s in in_strides for x in (0, s)]
    nest = _Nest(view, [0, 0], [_strides(view), src_strides])
    _copy(cx, _raw_out(cx, 0), _raw_in(cx, 0), nest, _itemsize(cx.out_types[0].dtype))
    _done(cx)


def _broadcast_strides(shape: Sequence[int], out: Sequence[int]) -> list[int]:
    """Strides reading a tensor of `shape` broadcast to `out` (0 on broadcast dims)."""
    lead = len(out) - len(shape)
    strides = _strides(shape)
    return [0] * lead + [0 if d == 1 else s for d, s in zip(shape, strides)]


@lowering("BroadcastTo")
def _broadcast_to(cx: LoweringContext) -> None:
    """A copy whose source strides are 0 along the broadcast dims."""
    out = _shape(cx)
    nest = _Nest(out, [0, 0], [_strides(out),
                               _broadcast_strides(_shape(cx, 0, output=False), out)])
    _copy(cx, _raw_out(cx, 0), _raw_in(cx, 0), nest, _itemsize(cx.out_types[0].dtype))
    _done(cx)


# --------------------------------------------------------------- gathers and scatters

def _index(cx: LoweringContext, ptr: ir.Value, at: ir.Value | int, dtype: DType) -> ir.Value:
    """An integer element as i64 (sign- or zero-extended)."""
    v = cx.b.load(_at(cx, ptr, at))
    if v.type.width == 64:
        return v
    return cx.b.zext(v, I64) if dtype.kind == "uint" else cx.b.sext(v, I64)


def _gather_status(node: Node, status: int) -> tuple[str, Node]:
    """A failed Gather's message from its types alone (where the indices are not at hand
    for the reference kernel to name the bad one: inside a loop's body)."""
    params = node.inputs[0].type
    ax = int(node.attrs.get("axis", 0)) % params.rank
    return (f"indices out of range: an index is not in [0, {params.shape[ax]}) (dimension "
            f"{ax} of params, shape {format_shape(params.shape)})", node)


@lowering("Gather", messages={1: "indices out of range"}, describe=_gather_status,
          explained_by_reference=True)
def _gather(cx: LoweringContext) -> None:
    """One contiguous row of params per index (per row of the dims before the axis),
    after a bounds check of every index."""
    params = _shape(cx, 0, output=False)
    ax = int(cx.attrs["axis"]) % len(params)
    outer, n, inner = _size(params[:ax]), params[ax], _size(params[ax + 1:])
    m = int(cx.in_types[1].num_elements)
    idt = cx.in_types[1].dtype
    size = _itemsize(cx.out_types[0].dtype)
    src, ind, dst = _raw_in(cx, 0), cx.input(1), _raw_out(cx, 0)
    copy_now = outer == 1 and inner > 0

    def check(t: ir.Value | int) -> None:
        k = _index(cx, ind, t, idt)
        cx.fail_if(cx.b.icmp_unsigned(">=", k, I64(n)), 1)  # negatives too
        if copy_now:
            _copy_run(cx, dst, _add(cx, I64(0), t, inner), src, cx.b.mul(k, I64(inner)),
                      inner, size)
    _for(cx, m, check, name="t")
    if outer > 1 and inner > 0 and m > 0:
        def row(o: ir.Value | int) -> None:
            def one(t: ir.Value | int) -> None:
                k = _index(cx, ind, t, idt)
                d = _add(cx, _add(cx, I64(0), o, m * inner), t, inner)
                s = _add(cx, cx.b.mul(k, I64(inner)), o, n * inner)
                _copy_run(cx, dst, d, src, s, inner, size)
            _for(cx, m, one, name="t")
        _for(cx, outer, row, name="o")
    _done(cx)


@lowering("UnsortedSegmentSum",
          messages={1: "a segment id is not < num_segments"})
def _unsorted_segment_sum(cx: LoweringContext) -> None:
    """Zeros, then each data row added to its segment's row in data order (the order the
    reference's np.add.at uses, so float sums round the same way); negative ids drop
    their row."""
    ids_t, dtype = cx.in_types[1], cx.out_types[0].dtype
    out = _shape(cx)
    ns, inner = out[0], _size(out[1:])
    m = int(ids_t.num_elements)
    data, ids, dst = cx.input(0), cx.input(1), cx.output(0)
    # (a scatter-add by data-dependent ids into the zeroed output: the memory pattern of
    # docs/llvm_o2_miscompile.md, inherent here; tests/test_review_sums_grid.py checks it)
    cx.memset(dst, 0, _size(out) * _itemsize(dtype))
    b, is_float = cx.b, dtype.kind == "float"

    def one(t: ir.Value | int) -> None:
        s = _index(cx, ids, t, ids_t.dtype)
        cx.fail_if(b.icmp_signed(">=", s, I64(ns)), 1)
        with cx.if_then(b.icmp_signed(">=", s, I64(0))):
            dbase, sbase = b.mul(s, I64(inner)), _add(cx, I64(0), t, inner)

            def add(j: ir.Value | int) -> None:
                pd = _at(cx, dst, _add(cx, dbase, j, 1))
                x, y = b.load(pd), b.load(_at(cx, data, _add(cx, sbase, j, 1)))
                b.store(b.fadd(x, y) if is_float else b.add(x, y), pd)
            _for(cx, inner, add)
    _for(cx, m, one, name="t")
    _done(cx)


@lowering("OneHot")
def _one_hot(cx: LoweringContext) -> None:
    """off_value everywhere, then on_value where an index in [0, depth) points."""
    idx_t, dtype = cx.in_types[0], cx.out_types[0].dtype
    out = _shape(cx)
    ax = int(cx.attrs["axis"]) % len(out)
    depth = int(cx.attrs["depth"])
    outer, inner = _size(out[:ax]), _size(out[ax + 1:])
    on = _raw_bits(dtype, cx.attrs["on_value"])
    off = _raw_bits(dtype, cx.attrs["off_value"])
    dst, ind = _raw_out(cx, 0), cx.input(0)
    _fill(cx, dst, 0, _size(out), dtype, off)
    if on != off and depth > 0:
        b, value = cx.b, ir.Constant(_raw_type(dtype), on)

        def row(o: ir.Value | int) -> None:
            def one(t: ir.Value | int) -> None:
                k = _index(cx, ind, _add(cx, _add(cx, I64(0), o, inner), t, 1), idx_t.dtype)
                with cx.if_then(b.icmp_unsigned("<", k, I64(depth))):
                    at = _add(cx, _add(cx, _add(cx, I64(0), o, depth * inner), t, 1), k, inner)
                    b.store(value, _at(cx, dst, at))
            _for(cx, inner, one, name="t")
        _for(cx, outer, row, name="o")
    _done(cx)


def _update_row_status(node: Node, status: int) -> tuple[str, Node]:
    """A failed DynamicUpdateRow's message from its types (inside a loop's body, where
    the reference kernel cannot see the index to name it)."""
    rows = node.inputs[0].type.shape[0]
    return f"index is not in [0, {rows}) (rows of the tensor)", node


@lowering("DynamicUpdateRow",
          messages={1: "index is not in [0, n) (rows of the tensor)"},
          describe=_update_row_status, explained_by_reference=True)
def _dynamic_update_row(cx: LoweringContext) -> None:
    """Check the index, copy the tensor, then the row over row `index`."""
    shape = _shape(cx)
    rows, row = shape[0], _size(shape[1:])
    size = _itemsize(cx.out_types[0].dtype)
    k = _index(cx, cx.input(1), 0, cx.in_types[1].dtype)
    cx.fail_if(cx.b.icmp_unsigned(">=", k, I64(rows)), 1)
    dst = _raw_out(cx, 0)
    _copy_run(cx, dst, 0, _raw_in(cx, 0), 0, rows * row, size)
    _copy_run(cx, dst, cx.b.mul(k, I64(row)), _raw_in(cx, 2), 0, row, size)
    _done(cx)


# ------------------------------------------------------------------------- creation

def _fill_output(cx: LoweringContext, value: object) -> None:
    dtype = cx.out_types[0].dtype
    _fill(cx, _raw_out(cx, 0), 0, _size(_shape(cx)), dtype, _raw_bits(dtype, value))
    _done(cx)


@lowering("Fill")
def _fill_op(cx: LoweringContext) -> None:
    """`value` converted as the reference converts it, stored everywhere."""
    _fill_output(cx, cx.attrs["value"])


@lowering("ZerosLike")
def _zeros_like(cx: LoweringContext) -> None:
    """A memset."""
    _fill_output(cx, 0)


@lowering("OnesLike")
def _ones_like(cx: LoweringContext) -> None:
    """Ones of the output dtype."""
    _fill_output(cx, 1)


def _wrap64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


@lowering("Range")
def _range(cx: LoweringContext) -> None:
    """start + i * delta: in i64 for integers (then truncated), in f64 for floats (then
    rounded once), exactly the reference's arithmetic."""
    dtype = cx.out_types[0].dtype
    n = _size(_shape(cx))
    out, b = cx.output(0), cx.b
    start, delta = cx.attrs["start"], cx.attrs["delta"]
    if n == 0:
        _done(cx)
        return
    with cx.loop(0, n) as i:
        if dtype.kind == "float":
            v = b.fadd(ir.Constant(ir.DoubleType(), float(start)),
                       b.fmul(b.sitofp(i, ir.DoubleType()), ir.Constant(ir.DoubleType(),
                                                                         float(delta))))
            if dtype.bits == 32:
                v = b.fptrunc(v, ir.FloatType())
        else:
            v = b.add(I64(_wrap64(int(start))), b.mul(i, I64(_wrap64(int(delta)))))
            if dtype.bits < 64:
                v = b.trunc(v, ir.IntType(dtype.bits))
        b.store(v, _at(cx, out, i))
    _done(cx)


@lowering("Shape")
def _shape_op(cx: LoweringContext) -> None:
    """The static shape, stored."""
    dtype = cx.out_types[0].dtype
    out = cx.output(0)
    for k, d in enumerate(_shape(cx, 0, output=False)):
        cx.b.store(ir.Constant(ir.IntType(dtype.bits), int(d)), _at(cx, out, k))
    _done(cx)


@lowering("Size")
def _size_op(cx: LoweringContext) -> None:
    """The static number of elements, stored."""
    dtype = cx.out_types[0].dtype
    n = _size(_shape(cx, 0, output=False))
    cx.b.store(ir.Constant(ir.IntType(dtype.bits), _wrap64(n)), _at(cx, cx.output(0), 0))
    _done(cx)


# ---------------------------------------------------------------- Select and Cast

@lowering("Select")
def _select(cx: LoweringContext) -> None:
    """``condition ? x : y`` over the broadcast shape, on raw values."""
    out = _shape(cx)
    shapes = [_shape(cx, k, output=False) for k in range(3)]
    nest = _Nest(out, [0] * 4, [_strides(out)] + [_broadcast_strides(s, out) for s in shapes])
    simple = nest.simplified()
    if simple is not None:
        dst, cond, x, y = _raw_out(cx, 0), _raw_in(cx, 0), _raw_in(cx, 1), _raw_in(cx, 2)
        b = cx.b

        def inner(offs: Offsets, n: int, strides: list[int]) -> None:
            def one(j: ir.Value | int) -> None:
                at = [_add(cx, o, j, s) for o, s in zip(offs, strides)]
                c = b.icmp_unsigned("!=", b.load(_at(cx, cond, at[1])), I8(0))
                v = b.select(c, b.load(_at(cx, x, at[2])), b.load(_at(cx, y, at[3])))
                b.store(v, _at(cx, dst, at[0]))
            _for(cx, n, one)
        _walk(cx, simple, inner)
    _done(cx)


@lowering("Cast")
def _cast(cx: LoweringContext) -> None:
    """One flat loop through the elementwise Cast emitter (the fused kernels' rules)."""
    src_t, dst_t = cx.in_types[0].dtype, cx.out_types[0].dtype
    n = _size(_shape(cx))
    if src_t is dst_t:
        _copy_run(cx, _raw_out(cx, 0), 0, _raw_in(cx, 0), 0, n, _itemsize(dst_t))
        _done(cx)
        return
    src, dst = cx.input(0), cx.output(0)
    lanes = Lanes(cx.module, cx.b, 1, cx.alloca(I32, name="cast.status"))
    info = OpInfo("Cast", dict(cx.attrs), (src_t,), dst_t, 0)

    def one(i: ir.Value | int) -> None:
        cx.store(dst, i, emit_op(lanes, info, [cx.load(src, i, src_t)]), dst_t)
    _for(cx, n, one, name="i")
    _done(cx)
