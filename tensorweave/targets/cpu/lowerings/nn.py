"""Native lowerings of the nn family: 2-D convolution and its two gradients, max and average
pooling and their gradients, bias addition and its gradient, and the L2 loss (f32, f64;
other dtypes are declined and run their reference kernels).

Convolutions are, by preference, a direct loop nest with register tiles (section "direct
convolution"): each step of the contraction multiplies a few broadcast scalars by a few
vectors of output channels into accumulators that stay in registers, reading the
zero-padded images (one small stack frame per image) and the filter (packed by channel
group) in place. Conv2D and the input gradient (for stride 1: the correlation of padded
dY with the flipped, transposed filter) tile output pixels x output channels; the filter
gradient tiles filter rows x output channels and sums over pixels. Work is split over
threads by images, or for the filter gradient by (channel group, kernel row), so results
do not depend on the thread count. On the W3 shapes (5x5 filters, SAME) this runs at
~95 GFLOP/s on one znver3 core against ~60-70 for im2col + BLAS; the measurements are in
the comments at the thresholds below. The register tiles follow the host's vector
registers (`VECTOR_BYTES`, `REGISTERS`): on an AVX-512 core (issue 13's host, one
thread) W3's second convolution runs at ~149 GFLOP/s with 512-bit tiles, ~89 with the
AVX2 tiles and ~85 as im2col + OpenBLAS's SkylakeX sgemm (forward 8.6 / 14.4 / 15.2 ms;
filter gradient 8.0 / 12.4 / 12.4; input gradient 8.1 / 14.5 / 13.3; the first layer's
forward 0.54 / 0.80 / 1.83 and filter gradient 0.82 / 1.10 / 2.68), so the direct nest
stays preferred there too.

Where the direct nest does not apply (dilated filters; strided or over-padded input
gradients; input gradients with too few input channels to fill vectors; images whose
frames would not fit `DIRECT_STACK_BYTES`) convolutions are im2col + GEMM, in blocks of
output pixels so the patch matrix never exists whole: a block's patches (``rows x
KH*KW*C``, columns ordered like a flattened HWIO filter) are gathered into a stack buffer
of at most `SCRATCH_BYTES` and consumed by one `cx.gemm` while still in cache (Conv2D:
``out[block] = patches @ W``; filter gradient: ``dW += patches^T @ dY[block]``; input
gradient: ``dpatches = dY[block] @ W^T`` scattered back, adding, into the zeroed dX).
1x1 stride-1 unpadded filters are a single GEMM on the tensors as they are.

FusedConv2D (stage ``epilogue``: a Conv2D and the elementwise ops after it, such as bias
+ ReLU) takes the same paths with its epilogue (`epilogue.Epilogue`) applied to each
register tile's final sums before they are stored, or to each GEMM block's rows right
after the GEMM call that computed them: the bias-added and activated values are
written once, and the raw convolution never is (long sums keep their partial sums in
the epilogue's carrier output until their last block).

Pooling and its gradients are loop nests over (image, output row, output column) with
the window's taps clipped to the input, so padding costs nothing, and the channels in
groups of explicit vectors that stay in registers across the taps. MaxPool propagates NaN
like ``np.max``; MaxPoolGrad routes each window's gradient to the element ``np.argmax``
picks on the -inf padded window (the first maximum in row-major order, the first NaN, and
for an all -inf window starting in padding, the padding: the gradient is dropped).

BiasAddGrad and L2Loss accumulate f32 in f64.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np

from ....compiler.ir import Node
from ....compiler.ops.nn import window_output_size
from .. import parallel
from ..epilogue import Epilogue, epilogue_of
from ..lowering import F64, I1, I32, I64, LoweringContext, lowering

FLOAT_DTYPES = ("f32", "f64")

# Largest stack buffer for a block of im2col patches (half of this machine's L2; threads
# have at least the default 8 MiB stack). Larger blocks amortize BLAS's packing of the
# filter better (W3's second convolution: 21 ms at 256 KiB, 17 ms at 1 MiB) but that
# shape goes direct; the blocked path is the fallback.
SCRATCH_BYTES = 256 * 1024
# A convolution whose single patch row is bigger than this is declined (runs its
# reference kernel) rather than putting a huge array on the stack.
MAX_PATCH_ROW_BYTES = 1024 * 1024
# Channels per pass of BiasAddGrad over the rows (their f64 sums stay in registers; 128
# f32 channels are 16 AVX2 vectors, more than the registers hold, but a spilled sum costs
# less than another pass over the rows).
CHANNEL_BLOCK = 128
# Loop-carried float adds that may be reassociated (so reductions vectorize).
REDUCE_FLAGS = ("reassoc", "contract")


# ----------------------------------------------------------------------- geometry

@dataclass(frozen=True)
class Window:
    """Static geometry of a window op on an NHWC input: sizes, strides, dilations and the
    padding before each spatial dim, plus the output's spatial size."""

    n: int
    h: int
    w: int
    c: int
    kh: int
    kw: int
    sh: int
    sw: int
    dh: int
    dw: int
    pt: int
    pl: int
    oh: int
    ow: int

    @property
    def patch(self) -> int:
        """Length of one im2col row: KH * KW * C."""
        return self.kh * self.kw * self.c

    @property
    def pixels(self) -> int:
        """Output pixels: N * OH * OW (the rows of the patch matrix)."""
        return self.n * self.oh * self.ow

    @property
    def is_pointwise(self) -> bool:
        """Whether the patch matrix is the input itself (1x1 window, stride 1, no pad)."""
        return (self.kh == self.kw == self.sh == self.sw == 1 and self.pt == self.pl == 0
                and self.oh == self.h and self.ow == self.w)


def window(input_shape, k_hw, attrs, pool: bool = False) -> Window:
    """The `Window` of an op with NHWC `input_shape`, window size `k_hw` and the op's
    attrs (strides, padding, and for convolutions dilations and explicit_paddings)."""
    strides = attrs["strides"]
    dil = (1, 1, 1, 1) if pool else tuple(attrs.get("dilations") or (1, 1, 1, 1))
    padding = attrs["padding"]
    ex = list(attrs.get("explicit_paddings") or ()) if not pool else []
    pads = [(ex[2], ex[3]), (ex[4], ex[5])] if ex else [(0, 0), (0, 0)]
    n, h, w, c = (int(d) for d in input_shape)
    kh, kw = int(k_hw[0]), int(k_hw[1])
    oh, pt, _ = window_output_size(h, kh, strides[1], dil[1], padding, pads[0])
    ow, pl, _ = window_output_size(w, kw, strides[2], dil[2], padding, pads[1])
    return Window(n, h, w, c, kh, kw, strides[1], strides[2], dil[1], dil[2], pt, pl, oh, ow)


def _conv_window(node: Node) -> tuple[Window, int]:
    """(window over the conv input, output channels) of a Conv2D-family node."""
    a = node.attrs
    if node.op == "Conv2D":
        x, f = node.inputs[0].type.shape, node.inputs[1].type.shape
    elif node.op == "Conv2DBackpropInput":
        x, f = node.outputs[0].type.shape, node.inputs[0].type.shape
    else:
        x, f = node.inputs[0].type.shape, node.outputs[0].type.shape
    return window(x, f[:2], a), int(f[3])


def _pool_window(node: Node) -> Window:
    x = node.outputs[0].type.shape if node.op in ("MaxPoolGrad", "AvgPoolGrad") \
        else node.inputs[0].type.shape
    return window(x, node.attrs["ksize"][1:3], node.attrs, pool=True)


# ------------------------------------------------------------------ supports

def _floats_only(node: Node) -> bool:
    return all(v.type.dtype.ir_name in FLOAT_DTYPES for v in list(node.inputs) + list(node.outputs))


# ------------------------------------------------------------------ small helpers

def _smax(cx: LoweringContext, a: ir.Value, b: ir.Value) -> ir.Value:
    return cx.b.select(cx.b.icmp_signed(">", a, b), a, b)


def _smin(cx: LoweringContext, a: ir.Value, b: ir.Value) -> ir.Value:
    return cx.b.select(cx.b.icmp_signed("<", a, b), a, b)


def _lin(cx: LoweringContext, *terms: tuple[ir.Value, int] | int) -> ir.Value:
    """sum of value * constant (and plain constants), as i64."""
    b = cx.b
    total: ir.Value = I64(0)
    for t in terms:
        if isinstance(t, int):
            total = b.add(total, I64(t)) if t else total
            continue
        v, k = t
        if k:
            total = b.add(total, v if k == 1 else b.mul(v, I64(k)))
    return total


def _at(cx: LoweringContext, ptr: ir.Value, index: ir.Value) -> ir.Value:
    return cx.b.gep(ptr, [index])


def _clip_taps(cx: LoweringContext, start: ir.Value, k: int, size: int
               ) -> tuple[ir.Value, ir.Value]:
    """[lo, hi) of the taps t (dilation 1) with 0 <= start + t < size; empty is lo == hi."""
    lo = _smin(cx, _smax(cx, cx.b.sub(I64(0), start), I64(0)), I64(k))
    hi = _smax(cx, _smin(cx, cx.b.sub(I64(size), start), I64(k)), lo)
    return lo, hi


def _nan(cx: LoweringContext, x: ir.Value) -> ir.Value:
    return cx.b.fcmp_unordered("uno", x, x)


def _zero_output(cx: LoweringContext, k: int = 0) -> None:
    t = cx.out_types[k]
    nbytes = int(t.num_elements) * t.dtype.np.itemsize
    if nbytes:
        cx.memset(cx.output(k), 0, nbytes)


def _block_rows(g: Window, itemsize: int) -> int:
    """Patch rows per block: as many as fit in `SCRATCH_BYTES` (at least one)."""
    return max(1, min(g.pixels, SCRATCH_BYTES // max(1, g.patch * itemsize)))


# ------------------------------------------- register sums over channel groups

def _channel_groups(k: LoweringContext, count: int, lanes: int, scalar: ir.Type,
                    body: Callable[[ir.Value, list[ir.Value]], None],
                    most: int = 4) -> None:
    """``body(q, slots)`` over channels [0, count) of one pixel or tap: groups of up to
    `most` vectors of `lanes` channels (a loop over the groups), then the
    vectors left (one at a time), then single channels (a loop). `slots` are stack slots
    of `scalar` vectors (one per vector of the group) or one `scalar`: mem2reg turns them
    into registers, so a body that sums into them and stores each total once never reads
    back what it wrote to memory (docs/llvm_o2_miscompile.md)."""
    b = k.b
    vectors = count // lanes
    group = min(most, vectors)  # vectors summed together per pass of the taps
    groups = vectors // group if group else 0
    vt = ir.VectorType(scalar, lanes)
    accs = [k.alloca(vt, name=f"vsum{v}") for v in range(group)]
    if groups:
        with k.loop(0, groups, name="cg") as gi:
            body(b.mul(gi, I64(group * lanes)), accs)
    for v in range(groups * group, vectors):  # (fewer than `group` left)
        body(I64(v * lanes), accs[:1])
    if vectors * lanes < count:
        one = k.alloca(scalar, name="sum")
        with k.loop(vectors * lanes, count, name="cs") as q:
            body(q, [one])


def _align(t: ir.Type) -> int:
    """The alignment the kernels give a load or store of `t`: its element's size."""
    element = t.element if isinstance(t, ir.VectorType) else t
    return 4 if isinstance(element, ir.FloatType) else 8


def _strided(k: LoweringContext, row: ir.Value, first: ir.Value, step: int, t: ir.Type
             ) -> list[ir.Value]:
    """For m in [0, step): ``row[first + m + l * step]`` for each lane l of `t` (a scalar
    type: row[first + m]). For vectors one load of ``step`` vectors' worth (row[first ..
    first + lanes * step), which the caller's channels cover), its lanes picked out by
    shuffles."""
    b = k.b
    if not isinstance(t, ir.VectorType):
        return [b.load(_at(k, row, b.add(first, I64(m)) if m else first)) for m in range(step)]
    wide = t if step == 1 else ir.VectorType(t.element, t.count * step)
    v = b.load(b.bitcast(_at(k, row, first), ir.PointerType(wide)), align=_align(t))
    if step == 1:
        return [v]
    lanes = ir.VectorType(ir.IntType(32), t.count)
    return [b.shuffle_vector(v, ir.Constant(wide, ir.Undefined),
                             ir.Constant(lanes, [m + lane * step for lane in range(t.count)]))
            for m in range(step)]


def _store_sums(k: LoweringContext, accs: list[ir.Value], qs: list[ir.Value], row: ir.Value,
                t: ir.Type) -> None:
    """Store each slot's total (converted to `t`, the output's lanes) at row[q]: the only
    store of those output elements."""
    b = k.b
    for acc, q in zip(accs, qs):
        total = b.load(acc)
        if total.type != t:
            total = b.fptrunc(total, t)
        b.store(total, b.bitcast(_at(k, row, q), ir.PointerType(t)), align=_align(t))


def _slot_channels(accs: list[ir.Value], k: LoweringContext, q: ir.Value
                   ) -> tuple[ir.Type, list[ir.Value]]:
    """(the slots' type, the first channel of each slot) for slots starting at channel q."""
    t = accs[0].type.pointee
    width = t.count if isinstance(t, ir.VectorType) else 1
    return t, [q if v == 0 else k.b.add(q, I64(v * width)) for v in range(len(accs))]


def _lanes_of(t: ir.Type, scalar: ir.Type) -> ir.Type:
    return ir.VectorType(scalar, t.count) if isinstance(t, ir.VectorType) else scalar



# ------------------------------------------------------------------ im2col / col2im

def _pixel(cx: LoweringContext, g: Window, p: ir.Value) -> tuple[ir.Value, ...]:
    """(n, ih0, iw0): image and top-left input position of output pixel `p`."""
    b = cx.b
    n = b.udiv(p, I64(g.oh * g.ow))
    rem = b.urem(p, I64(g.oh * g.ow))
    oh, ow = b.udiv(rem, I64(g.ow)), b.urem(rem, I64(g.ow))
    return n, _lin(cx, (oh, g.sh), -g.pt), _lin(cx, (ow, g.sw), -g.pl)


def _patch_rows(cx: LoweringContext, g: Window, x: ir.Value, buf: ir.Value, p0: ir.Value,
                rows: ir.Value, scatter: bool) -> None:
    """im2col (gather) rows [p0, p0 + rows) of the patch matrix of `x` into `buf`, or
    col2im (scatter=True): add `buf`'s rows back into `x` at the patches' positions."""
    b = cx.b
    with cx.loop(0, rows, name="r") as r:
        n, ih0, iw0 = _pixel(cx, g, b.add(p0, r))
        row = _at(cx, buf, b.mul(r, I64(g.patch)))
        if g.dw != 1:
            _kernel_rows(cx, g, x, row, n, ih0, iw0, None, scatter)
        else:
            j_lo, j_hi = _clip_taps(cx, iw0, g.kw, g.w)
            # most windows lie inside the input horizontally: constant-length rows there
            inside = b.and_(b.icmp_signed("==", j_lo, I64(0)),
                            b.icmp_signed("==", j_hi, I64(g.kw)))
            with b.if_else(inside) as (whole, clipped):
                with whole:
                    _kernel_rows(cx, g, x, row, n, ih0, iw0, None, scatter)
                with clipped:
                    _kernel_rows(cx, g, x, row, n, ih0, iw0, (j_lo, j_hi), scatter)


def _kernel_rows(cx: LoweringContext, g: Window, x: ir.Value, row: ir.Value, n: ir.Value,
                 ih0: ir.Value, iw0: ir.Value, clip: tuple[ir.Value, ir.Value] | None,
                 scatter: bool) -> None:
    """The KH kernel rows of one patch; `clip` = (j_lo, j_hi) when only those taps of
    each row are inside the input (dilation 1), None when all are (or taps are dilated,
    which `_dilated_taps` checks one by one)."""
    b = cx.b
    length = g.kw * g.c
    with cx.loop(0, g.kh, name="ki") as i:
        ih = b.add(ih0, b.mul(i, I64(g.dh)))
        ok = b.icmp_unsigned("<", ih, I64(g.h))  # 0 <= ih < H
        seg = _at(cx, row, b.mul(i, I64(length)))
        # x at (n, ih, iw0 + j, c) is src[j * C + c] (only read where valid)
        src = _at(cx, x, b.mul(_lin(cx, (n, g.h * g.w), (ih, g.w), (iw0, 1)), I64(g.c)))
        if g.dw != 1:
            _dilated_taps(cx, g, seg, src, iw0, ok, scatter)
        elif clip is None:
            _whole_span(cx, seg, src, ok, length, scatter)
        else:
            lo = b.mul(b.select(ok, clip[0], I64(0)), I64(g.c))
            hi = b.mul(b.select(ok, clip[1], I64(0)), I64(g.c))
            _span(cx, seg, src, lo, hi, length, scatter)


def _whole_span(cx: LoweringContext, seg: ir.Value, src: ir.Value, ok: ir.Value, length: int,
                scatter: bool) -> None:
    """One kernel row of one patch, all of whose taps are inside the input horizontally
    (and vertically iff `ok`): a constant-length copy, add or zero fill."""
    b = cx.b
    if scatter:
        with cx.if_then(ok), cx.loop(0, length, name="e") as e:
            d = _at(cx, src, e)
            b.store(b.fadd(b.load(d), b.load(_at(cx, seg, e))), d)
        return
    with b.if_else(ok) as (inside, padding):
        with inside, cx.loop(0, length, name="e") as e:
            b.store(b.load(_at(cx, src, e)), _at(cx, seg, e))
        with padding, cx.loop(0, length, name="z") as e:
            b.store(ir.Constant(seg.type.pointee, 0.0), _at(cx, seg, e))


def _span(cx: LoweringContext, seg: ir.Value, src: ir.Value, lo: ir.Value, hi: ir.Value,
          length: int, scatter: bool) -> None:
    """One kernel row of one patch: seg[lo:hi] <-> src[lo:hi]; gathers zero the rest."""
    b = cx.b
    if scatter:
        with cx.loop(lo, hi, name="e") as e:
            d = _at(cx, src, e)
            b.store(b.fadd(b.load(d), b.load(_at(cx, seg, e))), d)
        return
    zero = ir.Constant(seg.type.pointee, 0.0)
    with cx.loop(0, lo, name="z0") as e:
        b.store(zero, _at(cx, seg, e))
    with cx.loop(lo, hi, name="e") as e:
        b.store(b.load(_at(cx, src, e)), _at(cx, seg, e))
    with cx.loop(hi, length, name="z1") as e:
        b.store(zero, _at(cx, seg, e))


def _dilated_taps(cx: LoweringContext, g: Window, seg: ir.Value, src: ir.Value, iw0: ir.Value,
                  row_ok: ir.Value, scatter: bool) -> None:
    """One kernel row of one patch when taps are dilated: tap by tap, C at a time."""
    b = cx.b
    zero = ir.Constant(seg.type.pointee, 0.0)
    with cx.loop(0, g.kw, name="kj") as j:
        off = b.mul(j, I64(g.dw))
        ok = b.and_(row_ok, b.icmp_unsigned("<", b.add(iw0, off), I64(g.w)))
        s, d = _at(cx, src, b.mul(off, I64(g.c))), _at(cx, seg, b.mul(j, I64(g.c)))
        if scatter:
            with cx.if_then(ok), cx.loop(0, g.c, name="c") as c:
                b.store(b.fadd(b.load(_at(cx, s, c)), b.load(_at(cx, d, c))), _at(cx, s, c))
        else:
            with b.if_else(ok) as (inside, padding):
                with inside, cx.loop(0, g.c, name="c") as c:
                    b.store(b.load(_at(cx, s, c)), _at(cx, d, c))
                with padding, cx.loop(0, g.c, name="c") as c:
                    b.store(zero, _at(cx, d, c))


def _blocks(cx: LoweringContext, g: Window, body: Callable[[ir.Value, ir.Value, ir.Value], None],
            dtype=None) -> None:
    """Call ``body(buf, p0, rows)`` for consecutive blocks of patch rows; `buf` is the
    stack buffer holding one block (of `dtype`, default: the node's output's)."""
    dtype = dtype or cx.out_types[0].dtype
    rows = _block_rows(g, dtype.np.itemsize)
    buf = cx.alloca(cx.memory(dtype), rows * g.patch, name="patches")
    count = -(-g.pixels // rows)
    with cx.loop(0, count, name="blk") as blk:
        p0 = cx.b.mul(blk, I64(rows))
        body(buf, p0, _smin(cx, I64(rows), cx.b.sub(I64(g.pixels), p0)))


# ------------------------------------------------------------ direct convolution
#
# A register-tiled loop nest: a tile of `na` broadcast scalars (output pixels, or filter
# rows for the filter gradient) times `vectors` vectors of output channels lives in
# registers while the loops over the contraction run (one FMA per pair); operands come
# from the zero-padded image frames and the packed filter (or packed dY), with no patch
# matrix. 6 x 2 tiles keep 12 accumulators, 2 filter vectors and a broadcast in the 16
# AVX2 registers: 12 FMAs per 8 loads, so the FMA units, not the loads, set the pace.
# AVX-512 has 32 registers of twice the width: 14 x 2 tiles of 16-lane vectors, 28 FMAs
# per 16 loads, four times the multiply-adds of a step of the AVX2 tile.


def _host_vectors() -> tuple[int, int]:
    """(bytes per vector register, vector registers) of this host, from the features LLVM
    detects (`jit.host_info`): AVX-512 64 and 32, AVX2 32 and 16, else 16 and 16."""
    from ..jit import host_info
    bits = host_info().vector_bits
    return bits // 8, 32 if bits >= 512 else 16


# Read when the module is imported; the JIT's cache keys include the host's features.
VECTOR_BYTES, REGISTERS = _host_vectors()


def _lanes(dtype) -> int:
    return VECTOR_BYTES // dtype.np.itemsize


@dataclass(frozen=True)
class _Segment:
    """`repeat` consecutive groups of `vectors` vectors of `lanes` output channels, the
    first one starting at channel `start`."""

    start: int
    repeat: int
    vectors: int
    lanes: int

    @property
    def width(self) -> int:
        return self.vectors * self.lanes


def _segments(o: int, lanes: int, vectors: int) -> list[_Segment]:
    """Cover channels [0, o) with groups of `vectors` full vectors, then what is left."""
    out = []
    full, rest = divmod(o, vectors * lanes)
    if full:
        out.append(_Segment(0, full, vectors, lanes))
    start = full * vectors * lanes
    if rest >= lanes:
        out.append(_Segment(start, 1, rest // lanes, lanes))
        start += rest // lanes * lanes
    if o > start:
        out.append(_Segment(start, 1, 1, o - start))
    return out


def _tiles(count: int, most: int) -> list[tuple[int, int, int]]:
    """Split [0, count) into runs (start, repeat, size) of tiles of at most `most`,
    sized as evenly as possible (14 by 6: 5, 5, 4 rather than 6, 6, 2)."""
    if count <= 0:
        return []
    size = -(-count // -(-count // most))
    full, rest = divmod(count, size)
    return [(0, full, size)] + ([(full * size, 1, rest)] if rest else [])


def _tile_shape(dtype, o: int) -> tuple[int, int]:
    """(vectors of output channels, broadcast scalars) of a register tile."""
    vectors = 2 if o > _lanes(dtype) else 1
    return vectors, (REGISTERS - 1 - vectors) // vectors


def _vector_type(dtype, lanes: int) -> ir.Type:
    t = LoweringContext.scalar(dtype)
    return t if lanes == 1 else ir.VectorType(t, lanes)


def _vload(cx: LoweringContext, ptr: ir.Value, vt: ir.Type, align: int) -> ir.Value:
    """Load a vector (or a scalar, for one lane) of type `vt` from element pointer `ptr`."""
    if not isinstance(vt, ir.VectorType):
        return cx.b.load(ptr)
    return cx.b.load(cx.b.bitcast(ptr, ir.PointerType(vt)), align=align)


def _vstore(cx: LoweringContext, value: ir.Value, ptr: ir.Value, align: int) -> None:
    if isinstance(value.type, ir.VectorType):
        ptr = cx.b.bitcast(ptr, ir.PointerType(value.type))
    cx.b.store(value, ptr, align=align)


def _splat(cx: LoweringContext, x: ir.Value, vt: ir.Type) -> ir.Value:
    if not isinstance(vt, ir.VectorType):
        return x
    one = cx.b.insert_element(ir.Constant(vt, ir.Undefined), x, I32(0))
    return cx.b.shuffle_vector(one, ir.Constant(vt, ir.Undefined),
                               ir.Constant(ir.VectorType(I32, vt.count), [0] * vt.count))


def _carried_loop(cx: LoweringContext, start: ir.Value | int, stop: ir.Value | int,
                  init: list[ir.Value], body: Callable[[ir.Value, list[ir.Value]], list[ir.Value]],
                  name: str, unroll: bool = True) -> list[ir.Value]:
    """``for i in [start, stop): vals = body(i, vals)`` with `vals` in SSA registers
    (loop-carried phis); returns the final values. `unroll=False` tells LLVM not to
    unroll the loop."""
    b = cx.b
    start = I64(start) if isinstance(start, int) else start
    stop = I64(stop) if isinstance(stop, int) else stop
    pre = b.block
    head = b.append_basic_block(f"{name}.head")
    loop = b.append_basic_block(f"{name}.body")
    done = b.append_basic_block(f"{name}.done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64, name=name)
    i.add_incoming(start, pre)
    vals = [b.phi(v.type) for v in init]
    for phi, v in zip(vals, init):
        phi.add_incoming(v, pre)
    b.cbranch(b.icmp_signed("<", i, stop), loop, done)
    b.position_at_end(loop)
    new = body(i, vals)
    end = b.block
    i.add_incoming(b.add(i, I64(1)), end)
    for phi, v in zip(vals, new):
        phi.add_incoming(v, end)
    back = b.branch(head)
    if not unroll:
        back.set_metadata("llvm.loop", _no_unroll(cx.module))
    b.position_at_end(done)
    return vals


def _no_unroll(module: ir.Module) -> ir.MDValue:
    """Loop metadata that turns unrolling off. Fully unrolled short contractions (C=1
    filters) let LLVM keep every overlapping image load live, and the tile's registers
    spill. A loop ID is a fresh node whose first operand is itself."""
    flag = module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")])
    node = ir.values.MDValue(module, [flag], name=str(len(module.metadata)))
    node.operands = (node, flag)
    return node


@dataclass(frozen=True)
class _Tile:
    """One register tile: `na` scalars (a[q] at a + q * a_stride) times `vectors`
    vectors of `lanes` elements (b[t] at b + t * lanes), summed over the loops `levels`
    ((start, stop) each, outermost first); `a_at`/`b_at` map the loop indices to the
    operands' element pointers."""

    na: int
    a_stride: int
    vectors: int
    lanes: int
    levels: tuple[tuple[int, int], ...]
    a_at: Callable[[list[ir.Value]], ir.Value]
    b_at: Callable[[list[ir.Value]], ir.Value]
    unroll: bool = True  # whether LLVM may unroll the loops (see `_no_unroll`)


def _tile_sums(cx: LoweringContext, dtype, tile: _Tile) -> list[ir.Value]:
    """The accumulators of `tile` after its loops, indexed [q * vectors + t]."""
    b = cx.b
    vt = _vector_type(dtype, tile.lanes)
    size = dtype.np.itemsize
    zero = ir.Constant(vt, [ir.Constant(vt.element, 0.0)] * vt.count) \
        if isinstance(vt, ir.VectorType) else ir.Constant(vt, 0.0)

    def step(idx: list[ir.Value], accs: list[ir.Value]) -> list[ir.Value]:
        bp, ap = tile.b_at(idx), tile.a_at(idx)
        bv = [_vload(cx, _at(cx, bp, I64(t * tile.lanes)), vt, size) for t in range(tile.vectors)]
        out = []
        for q in range(tile.na):
            av = _splat(cx, b.load(_at(cx, ap, I64(q * tile.a_stride))), vt)
            for t in range(tile.vectors):
                prod = b.fmul(av, bv[t], flags=("contract",))
                out.append(b.fadd(accs[q * tile.vectors + t], prod, flags=("contract",)))
        return out

    def nest(depth: int, idx: list[ir.Value], accs: list[ir.Value]) -> list[ir.Value]:
        if depth == len(tile.levels):
            return step(idx, accs)
        lo, hi = tile.levels[depth]
        return _carried_loop(cx, lo, hi, accs, lambda i, v: nest(depth + 1, idx + [i], v),
                             name=f"k{depth}", unroll=tile.unroll)

    return nest(0, [], [zero] * (tile.na * tile.vectors))


def _over_runs(cx: LoweringContext, runs: list[tuple[int, int, int]],
               body: Callable[[ir.Value, int], None], name: str) -> None:
    """``body(start, size)`` for each tile of runs (start, repeat, size), consecutive
    tiles `size` apart (a loop over the repeats)."""
    for start, repeat, size in runs:
        if repeat == 1:
            body(I64(start), size)
            continue
        with cx.loop(0, repeat, name=name) as k:
            body(cx.b.add(I64(start), cx.b.mul(k, I64(size))), size)


def _over_segments(cx: LoweringContext, segs: list[_Segment],
                   body: Callable[[ir.Value, _Segment], None], name: str = "seg") -> None:
    """``body(o0, seg)`` for each group of channels of `segs` (o0: its first channel)."""
    for seg in segs:
        _over_runs(cx, [(seg.start, seg.repeat, seg.width)],
                   lambda o0, _w, seg=seg: body(o0, seg), name=name)


def _tile_grid(cx: LoweringContext, runs: list[tuple[int, int, int]], segs: list[_Segment],
               body: Callable[[ir.Value, int, ir.Value, _Segment], None]) -> None:
    """``body(start, na, o0, seg)`` over every tile of `runs` (outer) and channel group
    of `segs` (inner: a tile's image operands stay in cache across the groups)."""
    _over_runs(cx, runs, lambda s0, na: _over_segments(
        cx, segs, lambda o0, seg: body(s0, na, o0, seg)), name="tile")


@dataclass(frozen=True)
class _Source:
    """Images as the direct kernels read them: `hp` x `wp` x `c` per image, zero padded;
    `image(n)` emits what makes image n readable and returns its first element."""

    hp: int
    wp: int
    c: int
    image: Callable[[ir.Value], ir.Value]


def _padded_source(cx: LoweringContext, dtype, src: ir.Value, h: int, w: int, c: int,
                   top: int, left: int, hp: int, wp: int) -> _Source:
    """Images [h, w, c] of `src` placed at (top, left) of zeroed hp x wp frames (a stack
    buffer, zeroed once: the borders stay zero as the images are copied in), or read
    in place when no padding is needed."""
    if top == left == 0 and hp <= h and wp == w:
        return _Source(h, w, c, lambda n: _at(cx, src, cx.b.mul(n, I64(h * w * c))))
    size = dtype.np.itemsize
    buf = cx.alloca(cx.memory(dtype), hp * wp * c, name="frame")
    cx.memset(buf, 0, hp * wp * c * size)

    def image(n: ir.Value) -> ir.Value:
        with cx.loop(0, h, name="row") as r:
            dst = _at(cx, buf, _lin(cx, (r, wp * c), (top * wp + left) * c))
            cx.memcpy(dst, _at(cx, src, _lin(cx, (n, h * w * c), (r, w * c))), w * c * size)
        return buf
    return _Source(hp, wp, c, image)


def _tile_totals(cx: LoweringContext, dtype, accs: list[ir.Value], na: int, seg: _Segment,
                 row: Callable[[int], ir.Value], accumulate: bool | ir.Value) -> list[ir.Value]:
    """The tile's accumulators, each added to what is at row(q) + v * lanes when
    `accumulate` (always, or where the i1 value holds); same order as `accs`."""
    b = cx.b
    size = dtype.np.itemsize
    out = []
    for q in range(na):
        base = row(q)
        for v in range(seg.vectors):
            acc = accs[q * seg.vectors + v]
            p = _at(cx, base, I64(v * seg.lanes))
            if accumulate is True:
                acc = b.fadd(_vload(cx, p, acc.type, size), acc)
            elif accumulate is not False:  # the old value is garbage where not accumulating
                old = b.select(accumulate, _vload(cx, p, acc.type, size),
                               ir.Constant(acc.type, None))
                acc = b.fadd(old, acc)
            out.append(acc)
    return out


def _store_tile(cx: LoweringContext, dtype, accs: list[ir.Value], na: int, seg: _Segment,
                row: Callable[[int], ir.Value], accumulate: bool | ir.Value) -> None:
    """Write accumulator q * vectors + v at row(q) + v * lanes, or add it to what is
    there (`accumulate`: always, or where the i1 value holds)."""
    totals = _tile_totals(cx, dtype, accs, na, seg, row, accumulate)
    for q in range(na):
        base = row(q)
        for v in range(seg.vectors):
            _vstore(cx, totals[q * seg.vectors + v], _at(cx, base, I64(v * seg.lanes)),
                    dtype.np.itemsize)


@dataclass(frozen=True)
class _Tail:
    """An epilogue as a direct kernel applies it: `epi` with its pointers `ptrs` (as
    `Epilogue.pointers` gives them, reloaded in a thread's chunk function)."""

    epi: Epilogue
    ptrs: list[ir.Value]


def _finish_tile(cx: LoweringContext, tail: _Tail, values: list[ir.Value], na: int,
                 seg: _Segment, offset: Callable[[int], ir.Value], o0: ir.Value) -> None:
    """The epilogue on the tile's final values (index q * vectors + v: output pixel q,
    channels o0 + v * lanes ..), stored at element offset(q) + v * lanes of the outputs."""
    b = cx.b
    for q in range(na):
        base = offset(q)
        for v in range(seg.vectors):
            tail.epi.apply(b, cx.module, tail.ptrs, values[q * seg.vectors + v],
                           b.add(base, I64(v * seg.lanes)), b.add(o0, I64(v * seg.lanes)),
                           seg.lanes)


@dataclass(frozen=True)
class _Filter:
    """A [rows, o] matrix of filter rows the direct kernels multiply by: row-major (`o`
    apart) in place, or `packed` by output-channel group (the group starting at channel
    o0, `width` wide, is the contiguous [rows, width] block at o0 * rows) so a tile
    streams one dense block instead of rows O apart (which also share few L1 sets)."""

    ptr: ir.Value
    rows: int
    o: int
    packed: bool

    def at(self, cx: LoweringContext, row: ir.Value, o0: ir.Value, seg: _Segment) -> ir.Value:
        b = cx.b
        if self.packed:
            return _at(cx, self.ptr, b.add(b.mul(o0, I64(self.rows)), b.mul(row, I64(seg.width))))
        return _at(cx, self.ptr, b.add(b.mul(row, I64(self.o)), o0))


def _pack_filter(cx: LoweringContext, dtype, rows: int, o: int, segs: list[_Segment],
                 element: Callable[[ir.Value, ir.Value], ir.Value]) -> _Filter:
    """A packed `_Filter` on the stack whose (row k, channel ch) is ``*element(k, ch)``."""
    b = cx.b
    packed = cx.alloca(cx.memory(dtype), rows * o, name="filter.packed")

    def group(o0: ir.Value, seg: _Segment) -> None:
        block = _at(cx, packed, b.mul(o0, I64(rows)))
        with cx.loop(0, rows, name="k") as k, cx.loop(0, seg.width, name="v") as v:
            b.store(b.load(element(k, b.add(o0, v))),
                    _at(cx, block, b.add(b.mul(k, I64(seg.width)), v)))
    _over_segments(cx, segs, group, name="pack")
    return _Filter(packed, rows, o, True)


def _forward_segments(dtype, o: int) -> tuple[list[_Segment], int]:
    """(output-channel groups, most pixels per tile) of the direct forward kernel."""
    vectors, most = _tile_shape(dtype, o)
    return _segments(o, _lanes(dtype), vectors), most


def _parallel(cx: LoweringContext, total: int, work: int, shared: list[ir.Value],
              body: Callable[[LoweringContext, list[ir.Value], ir.Value, ir.Value], None],
              name: str, minimum: int | None = None) -> None:
    """Run ``body(cx_, shared_, begin, end)`` over [0, total) as chunks on the threads of
    `parallel.parallel_for` when `work` repays starting threads (at least `minimum`:
    multiply-adds, `parallel.MIN_GEMM_FLOPS` by default, or elements touched), else
    once inline. In a chunk, `cx_` builds the chunk function (its own stack: allocas
    there are per thread) and `shared_` are the `shared` pointers reloaded there.
    Chunks must write disjoint outputs, each the same way whatever the chunking, so
    results do not depend on the thread count."""
    threads = parallel.num_threads()
    if threads == 1 or total < 2 or work < (parallel.MIN_GEMM_FLOPS if minimum is None
                                            else minimum):
        body(cx, shared, I64(0), I64(total))
        return
    chunk = parallel.define_chunk(cx.module, f"{cx.fn.name}.{name}")
    sub = LoweringContext(cx.node, cx.module, chunk, cx.gemm_mode)
    ctx_type = ir.LiteralStructType([p.type for p in shared])
    ctx = sub.b.bitcast(chunk.args[0], ir.PointerType(ctx_type))
    body(sub, [sub.b.load(sub.b.gep(ctx, [I32(0), I32(k)])) for k in range(len(shared))],
         chunk.args[1], chunk.args[2])
    sub.ret_ok()
    slot = cx.alloca(ctx_type, name=f"{name}.ctx")
    for k, p in enumerate(shared):
        cx.b.store(p, cx.b.gep(slot, [I32(0), I32(k)]))
    parallel.parallel_for(cx.b, chunk, slot, total, threads)  # chunks always return 0


@dataclass(frozen=True)
class _Correlation:
    """A direct correlation (dilation 1) of `n` images [h, w, c], placed at (top, left)
    in zeroed hp x wp frames, with a [kh, kw, c, o] filter at strides (sh, sw), giving
    [oh, ow, o] per image."""

    n: int
    h: int
    w: int
    c: int
    top: int
    left: int
    hp: int
    wp: int
    kh: int
    kw: int
    sh: int
    sw: int
    oh: int
    ow: int
    o: int

    @property
    def rows(self) -> int:
        """Filter rows: kh * kw * c."""
        return self.kh * self.kw * self.c

    @property
    def work(self) -> int:
        return self.n * self.oh * self.ow * self.o * self.rows


def _run_correlation(cx: LoweringContext, dtype, job: _Correlation, src: ir.Value,
                     filt: _Filter, out: ir.Value, epi: Epilogue | None = None) -> None:
    """`_direct_forward` over all images, split by images over threads; with `epi`,
    its epilogue on every tile (`out` is then its carrier)."""
    extra = epi.pointers(cx) if epi is not None else []

    def body(cx_: LoweringContext, ptrs: list[ir.Value], begin: ir.Value, end: ir.Value) -> None:
        source = _padded_source(cx_, dtype, ptrs[0], job.h, job.w, job.c, job.top, job.left,
                                job.hp, job.wp)
        w = _Filter(ptrs[1], filt.rows, filt.o, filt.packed)
        tail = _Tail(epi, ptrs[3:]) if epi is not None else None
        _direct_forward(cx_, dtype, begin, end, source, w, job, ptrs[2], tail)
    _parallel(cx, job.n, job.work, [src, filt.ptr, out] + extra, body, "images")


def _direct_forward(cx: LoweringContext, dtype, begin: ir.Value, end: ir.Value,
                    src: _Source, w: _Filter, job: _Correlation, out: ir.Value,
                    tail: _Tail | None = None) -> None:
    """out[n, y, x, :] = sum over (i, j, c) of img[y*sh + i, x*sw + j, c] * w[i, j, c, :]
    for images [begin, end) (padding already in `src`); tiles of output pixels of one
    row times output channels. A tap row (j, c) is contiguous in the image and in the
    filter, so the contraction is two loops: kernel rows i, then e = j * C + c.

    With a `tail`, each tile's final sums go through its epilogue while still in
    registers (long sums: in their last block) instead of being stored as they are;
    `out` (the epilogue's carrier) holds only the partial sums of long ones."""
    b = cx.b
    c, wp, o = src.c, src.wp, w.o
    sh, sw, oh, ow = job.sh, job.sw, job.oh, job.ow
    segs, most = _forward_segments(dtype, o)
    e_len = job.kw * c
    with cx.loop(begin, end, name="img") as img:
        base = src.image(img)
        with cx.loop(0, oh, name="y") as y:
            def tile(x0: ir.Value, na: int, o0: ir.Value, seg: _Segment) -> None:
                def a_at(ix: list[ir.Value]) -> ir.Value:  # img[y*sh + i, x0*sw, e]
                    return _at(cx, base, _lin(cx, (y, sh * wp * c), (ix[0], wp * c),
                                              (x0, sw * c), (ix[1], 1)))

                def b_at(ix: list[ir.Value]) -> ir.Value:  # w[i, e, o0]
                    return w.at(cx, _lin(cx, (ix[0], e_len), (ix[1], 1)), o0, seg)

                def out_offset(q: int) -> ir.Value:
                    pix = _lin(cx, (img, oh * ow), (y, ow), (x0, 1), q)
                    return b.add(b.mul(pix, I64(o)), o0)

                def out_row(q: int) -> ir.Value:
                    return _at(cx, out, out_offset(q))

                # not unrolled: measured as fast for 5x5x32 filters, and C=1 filters
                # (fully unrolled) spill registers otherwise
                if job.kh * e_len <= BLOCK_TERMS:
                    t = _Tile(na, sw * c, seg.vectors, seg.lanes, ((0, job.kh), (0, e_len)),
                              a_at, b_at, unroll=False)
                    sums = _tile_sums(cx, dtype, t)
                    if tail is None:
                        _store_tile(cx, dtype, sums, na, seg, out_row, False)
                    else:
                        _finish_tile(cx, tail, _tile_totals(cx, dtype, sums, na, seg, out_row,
                                                            False), na, seg, out_offset, o0)
                    return
                # long sums: blocks of at most BLOCK_TERMS terms, added up in `out` (a
                # store read back by the next block: the memory pattern of
                # docs/llvm_o2_miscompile.md, kept because the blocking bounds f32
                # rounding; no zeroing store, and test_review_sums_grid checks it)
                with cx.loop(0, job.kh, name="ki") as i:
                    def block(e0: ir.Value, size: int, i: ir.Value = i) -> None:
                        t = _Tile(na, sw * c, seg.vectors, seg.lanes, ((0, size),),
                                  lambda ix: a_at([i, b.add(e0, ix[0])]),
                                  lambda ix: b_at([i, b.add(e0, ix[0])]), unroll=False)
                        first = b.and_(b.icmp_signed("==", i, I64(0)),
                                       b.icmp_signed("==", e0, I64(0)))
                        sums = _tile_sums(cx, dtype, t)
                        if tail is None:
                            _store_tile(cx, dtype, sums, na, seg, out_row, b.not_(first))
                            return
                        # the last block ends the sum: its totals go through the epilogue
                        last = b.and_(b.icmp_signed("==", i, I64(job.kh - 1)),
                                      b.icmp_signed("==", b.add(e0, I64(size)), I64(e_len)))
                        with b.if_else(last) as (final, partial):
                            with final:
                                _finish_tile(cx, tail, _tile_totals(
                                    cx, dtype, sums, na, seg, out_row, b.not_(first)), na, seg,
                                    out_offset, o0)
                            with partial:
                                _store_tile(cx, dtype, sums, na, seg, out_row, b.not_(first))
                    _over_runs(cx, _tiles(e_len, BLOCK_TERMS), block, name="eb")
            _tile_grid(cx, _tiles(ow, most), segs, tile)


def _direct_filter_grad(cx: LoweringContext, dtype, g: Window, o: int, job: _Correlation,
                        x: ir.Value, dy: ir.Value, dw: ir.Value) -> None:
    """dW[i, j, c, :] = sum over pixels of img[y*sh + i, x*sw + j, c] * dY[y, x, :]
    (dilation 1): tiles of filter rows (i, e = j * C + c, contiguous in the image and
    in dW) times a group of output channels, summed over one image's pixels in
    registers and then added to dW (so the long sum over the batch is blocked, as in
    a GEMM). The group's slice of dY is first packed contiguously when its rows are far
    apart: read in place, they fall into a few L1 sets and evict each other.

    Threads split the units (channel group, kernel row i), each unit summing over all
    images in order, so dW does not depend on the thread count; each thread frames
    the images itself."""
    vectors, most = _tile_shape(dtype, o)
    segs = _segments(o, _lanes(dtype), vectors)
    units = sum(seg.repeat for seg in segs) * g.kh
    # dW sums in memory across images (zeroed, then each image's register tile added):
    # the long sum over the batch is blocked by design, and an image's frame is built
    # once for all its tiles. tests/test_review_sums_grid.py checks this pattern (the
    # one docs/llvm_o2_miscompile.md describes) on tiny cases at O1-O3.
    _zero_output(cx)

    def body(cx_: LoweringContext, ptrs: list[ir.Value], begin: ir.Value, end: ir.Value) -> None:
        src = _padded_source(cx_, dtype, ptrs[0], job.h, job.w, job.c, job.top, job.left,
                             job.hp, job.wp)
        _filter_grad_units(cx_, dtype, g, o, segs, most, src, ptrs[1], ptrs[2], begin, end)
    _parallel(cx, units, g.pixels * o * g.patch, [x, dy, dw], body, "units")


def _filter_grad_units(cx: LoweringContext, dtype, g: Window, o: int, segs: list[_Segment],
                       most: int, src: _Source, dy: ir.Value, dw: ir.Value, begin: ir.Value,
                       end: ir.Value) -> None:
    """The units [begin, end) of `_direct_filter_grad`: unit s * kh + i is kernel row i
    of the s-th channel group (groups in channel order)."""
    b = cx.b
    c, wp = src.c, src.wp
    e_len = g.kw * c
    pixels = g.oh * g.ow
    pack = _packs_dy(g, o, dtype.np.itemsize)
    width = max(seg.width for seg in segs)
    packed = cx.alloca(cx.memory(dtype), pixels * width, name="dy.packed") if pack else None
    first_group = b.udiv(begin, I64(g.kh))
    last_group = b.udiv(b.add(end, I64(g.kh - 1)), I64(g.kh))
    with cx.loop(0, g.n, name="img") as img:
        base = src.image(img)
        s0 = 0
        for seg in segs:
            lo = _smax(cx, first_group, I64(s0))
            hi = _smin(cx, last_group, I64(s0 + seg.repeat))
            with cx.loop(lo, hi, name="grp") as s:
                o0 = _lin(cx, (s, seg.width), seg.start - s0 * seg.width)
                if packed is not None:
                    with cx.loop(0, pixels, name="px") as px:
                        row = _at(cx, dy, b.add(b.mul(_lin(cx, (img, pixels), (px, 1)), I64(o)),
                                                o0))
                        cx.memcpy(_at(cx, packed, b.mul(px, I64(seg.width))), row,
                                  seg.width * dtype.np.itemsize)
                    rows, stride = packed, seg.width
                else:
                    rows, stride = _at(cx, dy, b.add(b.mul(img, I64(pixels * o)), o0)), o
                unit0 = b.mul(s, I64(g.kh))
                i_lo = _smax(cx, b.sub(begin, unit0), I64(0))
                i_hi = _smin(cx, b.sub(end, unit0), I64(g.kh))
                with cx.loop(i_lo, i_hi, name="ki") as i:
                    def tile(e0: ir.Value, na: int, i=i, rows=rows, stride=stride, o0=o0,
                             seg=seg) -> None:
                        def a_at(ix: list[ir.Value]) -> ir.Value:  # img[y*sh + i, x*sw, e0]
                            return _at(cx, base, _lin(cx, (ix[0], g.sh * wp * c), (i, wp * c),
                                                      (ix[1], g.sw * c), (e0, 1)))

                        def b_at(ix: list[ir.Value]) -> ir.Value:  # dY[img, y, x, o0]
                            return _at(cx, rows, _lin(cx, (ix[0], g.ow * stride),
                                                      (ix[1], stride)))

                        t = _Tile(na, 1, seg.vectors, seg.lanes, ((0, g.oh), (0, g.ow)),
                                  a_at, b_at)
                        accs = _tile_sums(cx, dtype, t)
                        _store_tile(cx, dtype, accs, na, seg, lambda q: _at(cx, dw, b.add(b.mul(
                            _lin(cx, (i, e_len), (e0, 1), q), I64(o)), o0)), True)
                    _over_runs(cx, _tiles(e_len, most), tile, name="et")
            s0 += seg.repeat


# ------------------------------------------------------------------ convolutions
#
# Which way a convolution goes (`_conv_path`): 1x1 stride-1 unpadded filters are one
# GEMM on the tensors as they are; otherwise the direct loop nest where it applies
# (dilation 1; for the input gradient also stride 1, padding smaller than the filter and
# enough input channels to fill vectors) and its stack buffers fit `DIRECT_STACK_BYTES`;
# otherwise im2col + GEMM in blocks of rows.

DIRECT = True  # tests switch this off to run the im2col path on the same cases
# Stack buffers of a direct convolution (per thread): zero-padded image frames, the
# packed filter, packed dY. Threads started with pthread_create get the default 8 MiB.
DIRECT_STACK_BYTES = 512 * 1024
# Longer direct-convolution sums are cut into blocks of at most this many terms, added
# up in the output: float32 rounding error then grows with the block length, not with
# KH*KW*C (a GEMM blocks its k loop the same way). Costs ~4% on the W3 shapes.
BLOCK_TERMS = 256
# dY's channel groups are packed for the filter gradient when dY's rows are this far
# apart (or more): rows 256 bytes apart map to a quarter of the L1 sets and thrash
# (measured on W3's second convolution: 17.2 ms unpacked, 13.8 ms packed).
PACK_STRIDE_BYTES = 256


def _frame(g: Window) -> tuple[int, int]:
    """(rows, columns) of the zero-padded frame a forward window reads."""
    return (max(g.h + g.pt, (g.oh - 1) * g.sh + g.kh), max(g.w + g.pl, (g.ow - 1) * g.sw + g.kw))


def _frame_bytes(g: Window, itemsize: int) -> int:
    hp, wp = _frame(g)
    padded = g.pt or g.pl or hp > g.h or wp > g.w
    return hp * wp * g.c * itemsize if padded else 0


def _forward_job(g: Window, o: int) -> _Correlation:
    """The direct correlation computing Conv2D (the window's own geometry)."""
    hp, wp = _frame(g)
    return _Correlation(g.n, g.h, g.w, g.c, g.pt, g.pl, hp, wp, g.kh, g.kw, g.sh, g.sw,
                        g.oh, g.ow, o)


def _input_grad_job(g: Window, o: int) -> _Correlation | None:
    """The stride-1 correlation of zero-padded dY with the flipped, transposed filter
    that gives Conv2DBackpropInput, or None when that does not apply."""
    if not (g.sh == g.sw == g.dh == g.dw == 1):
        return None
    top, left = g.kh - 1 - g.pt, g.kw - 1 - g.pl
    hp, wp = g.h + g.kh - 1, g.w + g.kw - 1
    if top < 0 or left < 0 or top + g.oh > hp or left + g.ow > wp:
        return None
    return _Correlation(g.n, g.oh, g.ow, o, top, left, hp, wp, g.kh, g.kw, 1, 1, g.h, g.w, g.c)


def _packs_filter(g: Window, o: int, itemsize: int) -> bool:
    """Whether the direct Conv2D packs its filter (when the stack has room)."""
    return _frame_bytes(g, itemsize) + g.patch * o * itemsize <= DIRECT_STACK_BYTES


def _packs_dy(g: Window, o: int, itemsize: int) -> bool:
    """Whether the direct filter gradient packs dY (see `PACK_STRIDE_BYTES`)."""
    width = max(seg.width for seg in _segments(o, VECTOR_BYTES // itemsize, 2))
    return (o * itemsize >= PACK_STRIDE_BYTES and _frame_bytes(g, itemsize)
            + g.oh * g.ow * width * itemsize <= DIRECT_STACK_BYTES)


def _direct_ok(node: Node, g: Window, o: int, itemsize: int) -> bool:
    if not DIRECT or g.dh != 1 or g.dw != 1:
        return False
    if node.op != "Conv2DBackpropInput":
        return _frame_bytes(g, itemsize) <= DIRECT_STACK_BYTES
    job = _input_grad_job(g, o)
    # Few input channels (the correlation's outputs) fill vectors poorly, and many
    # output channels make that expensive: im2col + GEMM is faster there (measured:
    # C=1, O=32, 5x5 on 28x28 images, 0.18 ms direct vs 0.035 ms per image).
    lanes = VECTOR_BYTES // itemsize
    if job is None or 2 * g.c < lanes < 2 * o:
        return False
    return (job.hp * job.wp * o + g.patch * o) * itemsize <= DIRECT_STACK_BYTES


def _conv_path(node: Node) -> str | None:
    """"gemm", "direct" or "im2col" (see above), or None: declined, when only im2col
    applies and a single patch row exceeds `MAX_PATCH_ROW_BYTES`."""
    g, o = _conv_window(node)
    itemsize = node.outputs[0].type.dtype.np.itemsize
    if g.is_pointwise:
        return "gemm"
    if _direct_ok(node, g, o, itemsize):
        return "direct"
    return "im2col" if g.patch * itemsize <= MAX_PATCH_ROW_BYTES else None


def _conv_supported(node: Node) -> bool:
    return _floats_only(node) and _conv_path(node) is not None


def _conv_start(cx: LoweringContext) -> tuple[Window, int, str]:
    """(window, output channels, path) of the node; its stack frame stays its own (the
    buffers are big: inlined into a step function, several would add up)."""
    cx.fn.attributes.add("noinline")
    g, o = _conv_window(cx.node)
    return g, o, _conv_path(cx.node)


@lowering("Conv2D", supports=_conv_supported)
def _conv2d(cx: LoweringContext) -> None:
    """out[P, O] = patches[P, KH*KW*C] @ W[KH*KW*C, O]: a direct loop nest, or im2col
    (a block of rows at a time) + GEMM."""
    _emit_conv2d(cx, cx.node, cx.output(0), None)


def _fused_conv2d_supported(node: Node) -> bool:
    epi = epilogue_of(node)
    return epi is not None and epi.head.op == "Conv2D" and _conv_supported(epi.head)


@lowering("FusedConv2D", supports=_fused_conv2d_supported)
def _fused_conv2d(cx: LoweringContext) -> None:
    """A Conv2D with an epilogue (`epilogue.Epilogue`): on each register tile of the
    direct nest, or on each block of im2col / GEMM rows as the GEMM computes them."""
    epi = Epilogue(cx.node)
    _emit_conv2d(cx, epi.head, cx.output(epi.carrier), epi)


def _emit_conv2d(cx: LoweringContext, node: Node, out: ir.Value, epi: Epilogue | None) -> None:
    """`node`'s convolution (a Conv2D; inputs 0 and 1 of `cx`'s node) into `out`, and
    with `epi` its epilogue (`out` is then the epilogue's carrier)."""
    cx.fn.attributes.add("noinline")  # (big stack buffers: see `_conv_start`)
    g, o = _conv_window(node)
    path = _conv_path(node)
    dtype = node.outputs[0].type.dtype
    size = dtype.np.itemsize
    x, w = cx.input(0), cx.input(1)
    if g.pixels * o == 0:
        cx.ret_ok()
        return
    if g.patch == 0:
        cx.memset(out, 0, g.pixels * o * size)
        if epi is not None:
            epi.run_all(cx, g.pixels)
    elif path == "gemm":
        cx.gemm(dtype, False, False, g.pixels, o, g.c, 1.0, x, g.c, w, o, 0.0, out, o,
                epi.gemm_epilogue(cx) if epi is not None else None)
    elif path == "direct":
        filt = _Filter(w, g.patch, o, False)
        if _packs_filter(g, o, size):
            filt = _pack_filter(cx, dtype, g.patch, o, _forward_segments(dtype, o)[0],
                                lambda k, ch: _at(cx, w, _lin(cx, (k, o), (ch, 1))))
        _run_correlation(cx, dtype, _forward_job(g, o), x, filt, out, epi)
    else:
        def block(buf: ir.Value, p0: ir.Value, rows: ir.Value) -> None:
            _patch_rows(cx, g, x, buf, p0, rows, scatter=False)
            base = cx.b.mul(p0, I64(o))
            cx.gemm(dtype, False, False, rows, o, g.patch, 1.0, buf, g.patch, w, o, 0.0,
                    _at(cx, out, base), o, epi.gemm_epilogue(cx, base) if epi is not None
                    else None)
        _blocks(cx, g, block, dtype)
    cx.ret_ok()


@lowering("Conv2DBackpropFilter", supports=_conv_supported)
def _conv2d_backprop_filter(cx: LoweringContext) -> None:
    """dW[KH*KW*C, O] = patches^T @ dY: a direct loop nest, or the sum over blocks of
    im2col rows of patches^T @ dY[block]."""
    g, o, path = _conv_start(cx)
    dtype = cx.out_types[0].dtype
    x, dy, dw = cx.input(0), cx.input(1), cx.output(0)
    if g.patch * o == 0:
        cx.ret_ok()
        return
    if g.pixels == 0:
        _zero_output(cx)
    elif path == "gemm":
        cx.gemm(dtype, True, False, g.c, o, g.pixels, 1.0, x, g.c, dy, o, 0.0, dw, o)
    elif path == "direct":
        _direct_filter_grad(cx, dtype, g, o, _forward_job(g, o), x, dy, dw)
    else:
        _zero_output(cx)  # (each block's GEMM adds into dW: beta 1, blocked by design)

        def block(buf: ir.Value, p0: ir.Value, rows: ir.Value) -> None:
            _patch_rows(cx, g, x, buf, p0, rows, scatter=False)
            cx.gemm(dtype, True, False, g.patch, o, rows, 1.0, buf, g.patch,
                    _at(cx, dy, cx.b.mul(p0, I64(o))), o, 1.0, dw, o)
        _blocks(cx, g, block)
    cx.ret_ok()


@lowering("Conv2DBackpropInput", supports=_conv_supported)
def _conv2d_backprop_input(cx: LoweringContext) -> None:
    """dX: for stride 1, the correlation of zero-padded dY with the flipped, transposed
    filter (a direct loop nest); otherwise col2im(dY @ W^T), each block of patch
    gradients scattered (added) into the zeroed input gradient. The optional
    input_like operand is not read."""
    g, o, path = _conv_start(cx)
    dtype = cx.out_types[0].dtype
    w, dy, dx = cx.input(0), cx.input(1), cx.output(0)
    b = cx.b
    if g.n * g.h * g.w * g.c == 0:
        cx.ret_ok()
        return
    if g.pixels * o == 0:
        _zero_output(cx)
    elif path == "gemm":
        cx.gemm(dtype, False, True, g.pixels, g.c, o, 1.0, dy, o, w, o, 0.0, dx, g.c)
    elif path == "direct":
        # The correlation multiplies the zero frame around dY by the filter: with an inf
        # or NaN in the filter that gives NaN where the gradient (the reference, TF) sums
        # only real dY positions. Such a filter takes a plain loop nest over the real
        # positions (the scan costs one pass over the filter; the loop nest is less code
        # to compile beside the direct path than a second col2im path)
        with b.if_else(_all_finite(cx, dtype, w, g.patch * o)) as (finite, not_finite):
            with finite:
                _input_grad_direct(cx, dtype, g, o, w, dy, dx)
            with not_finite:
                _input_grad_real_taps(cx, dtype, g, o, w, dy, dx)
    else:
        _input_grad_col2im(cx, dtype, g, o, w, dy, dx)
    cx.ret_ok()


def _all_finite(cx: LoweringContext, dtype, ptr: ir.Value, count: int) -> ir.Value:
    """i1: no inf or NaN among `count` elements at `ptr` (v - v is 0 for a finite v and
    NaN otherwise; the reassociable sum of those vectorizes)."""
    b = cx.b
    scalar = cx.scalar(dtype)
    acc = cx.alloca(scalar, name="nonfinite")
    b.store(ir.Constant(scalar, 0.0), acc)
    with cx.loop(0, count, name="i") as i:
        v = b.load(_at(cx, ptr, i))
        b.store(b.fadd(b.load(acc), b.fsub(v, v), flags=REDUCE_FLAGS), acc)
    total = b.load(acc)
    return b.fcmp_ordered("==", total, total)


def _input_grad_direct(cx: LoweringContext, dtype, g: Window, o: int, w: ir.Value,
                       dy: ir.Value, dx: ir.Value) -> None:
    """Stride-1 dX: the correlation of zero-padded dY with the flipped, transposed filter."""
    b = cx.b
    taps = g.kh * g.kw

    def flipped(k: ir.Value, ch: ir.Value) -> ir.Value:
        # row k = (tap, o) of the flipped, transposed filter: w[taps - 1 - tap, ch, o]
        tap, oo = b.udiv(k, I64(o)), b.urem(k, I64(o))
        return _at(cx, w, _lin(cx, (b.sub(I64(taps - 1), tap), g.c * o), (ch, o), (oo, 1)))
    filt = _pack_filter(cx, dtype, taps * o, g.c, _forward_segments(dtype, g.c)[0], flipped)
    _run_correlation(cx, dtype, _input_grad_job(g, o), dy, filt, dx)


def _input_grad_real_taps(cx: LoweringContext, dtype, g: Window, o: int, w: ir.Value,
                          dy: ir.Value, dx: ir.Value) -> None:
    """Stride-1 dX as sums over real dY positions only: dx[n, r, q, c] = sum over taps
    (i, j) and o of dy[n, r + pt - i, q + pl - j, o] * w[i, j, c, o], the dY index in
    range. With f = kh - 1 - i (the flipped tap) the dY row is (r + pt - kh + 1) + f, so
    `_clip_taps` gives the range of f."""
    b = cx.b
    scalar = cx.scalar(dtype)
    acc = cx.alloca(scalar, name="dx_sum")
    with cx.loop(0, g.n, name="n") as n, cx.loop(0, g.h, name="r") as r:
        row0 = b.add(r, I64(g.pt - g.kh + 1))
        flo, fhi = _clip_taps(cx, row0, g.kh, g.oh)
        with cx.loop(0, g.w, name="q") as q:
            col0 = b.add(q, I64(g.pl - g.kw + 1))
            glo, ghi = _clip_taps(cx, col0, g.kw, g.ow)
            with cx.loop(0, g.c, name="c") as ch:
                b.store(ir.Constant(scalar, 0.0), acc)
                with cx.loop(flo, fhi, name="f") as f, cx.loop(glo, ghi, name="g") as gg:
                    dy_base = _lin(cx, (n, g.oh * g.ow * o), (b.add(row0, f), g.ow * o),
                                   (b.add(col0, gg), o))
                    w_base = _lin(cx, (b.sub(I64(g.kh - 1), f), g.kw * g.c * o),
                                  (b.sub(I64(g.kw - 1), gg), g.c * o), (ch, o))
                    with cx.loop(0, o, name="o") as oo:
                        term = b.fmul(b.load(_at(cx, dy, b.add(dy_base, oo))),
                                      b.load(_at(cx, w, b.add(w_base, oo))))
                        b.store(b.fadd(b.load(acc), term), acc)
                out = _lin(cx, (n, g.h * g.w * g.c), (r, g.w * g.c), (q, g.c), (ch, 1))
                b.store(b.load(acc), _at(cx, dx, out))


def _input_grad_col2im(cx: LoweringContext, dtype, g: Window, o: int, w: ir.Value,
                       dy: ir.Value, dx: ir.Value) -> None:
    """dX = col2im(dY @ W^T): each block of patch gradients scattered (added) into the
    zeroed dX (strided or over-padded windows overlap arbitrarily). The zero-then-add
    memory pattern of docs/llvm_o2_miscompile.md: tests/test_review_sums_grid.py checks
    this path on tiny cases at O1-O3."""
    b = cx.b
    _zero_output(cx)

    def block(buf: ir.Value, p0: ir.Value, rows: ir.Value) -> None:
        cx.gemm(dtype, False, True, rows, g.patch, o, 1.0,
                _at(cx, dy, b.mul(p0, I64(o))), o, w, o, 0.0, buf, g.patch)
        _patch_rows(cx, g, dx, buf, p0, rows, scatter=True)
    _blocks(cx, g, block)


# ------------------------------------------------------------------------ pooling
#
# Loop nests over (image, output row, output column) with the window's taps clipped to
# the input; per window, the channels go in groups of a few explicit vectors that stay
# in registers across the taps (a plain channel loop would be versioned by the
# vectorizer with run-time alias checks on every window, which cost more than the
# work on 32 channels).

POOL_VECTORS = 4       # vectors per channel group: MaxPool, AvgPool, AvgPoolGrad
POOL_GRAD_VECTORS = 2  # MaxPoolGrad keeps the max, the mask and the gradient live


def _tiles_input(g: Window) -> bool:
    """Whether the windows partition the input (no overlap, no padding, nothing left
    out): each input element then gets exactly one window's gradient, which can be
    stored rather than added to a zeroed output."""
    return (g.kh == g.sh and g.kw == g.sw and g.pt == g.pl == 0
            and g.oh * g.sh == g.h and g.ow * g.sw == g.w)


def _windows(cx: LoweringContext, g: Window,
             body: Callable[[ir.Value, ir.Value, ir.Value, ir.Value, ir.Value, ir.Value,
                             ir.Value, ir.Value], None], begin: ir.Value, end: ir.Value) -> None:
    """Loop over the output pixels of images [begin, end):
    ``body(n, opix, ih0, iw0, i_lo, i_hi, j_lo, j_hi)`` with
    `opix` the flat output pixel, (ih0, iw0) the window's top-left input position and
    [i_lo, i_hi) x [j_lo, j_hi) the taps that fall inside the input."""
    with cx.loop(begin, end, name="n") as n:
        with cx.loop(0, g.oh, name="oh") as oh:
            ih0 = _lin(cx, (oh, g.sh), -g.pt)
            i_lo, i_hi = _clip_taps(cx, ih0, g.kh, g.h)
            with cx.loop(0, g.ow, name="ow") as ow:
                iw0 = _lin(cx, (ow, g.sw), -g.pl)
                j_lo, j_hi = _clip_taps(cx, iw0, g.kw, g.w)
                opix = _lin(cx, (n, g.oh * g.ow), (oh, g.ow), (ow, 1))
                body(n, opix, ih0, iw0, i_lo, i_hi, j_lo, j_hi)


@dataclass(frozen=True)
class _PoolWindow:
    """One window as the pooling emitters see it (see `_windows`)."""

    n: ir.Value
    opix: ir.Value
    ih0: ir.Value
    iw0: ir.Value
    i_lo: ir.Value
    i_hi: ir.Value
    j_lo: ir.Value
    j_hi: ir.Value


GroupBody = Callable[[LoweringContext, list[ir.Value], _PoolWindow, ir.Value, _Segment], None]


def _pool_groups(cx: LoweringContext, g: Window, dtype, vectors: int, ptrs: list[ir.Value],
                 body: GroupBody) -> None:
    """``body(cx_, ptrs_, window, c0, group)`` for every window and channel group
    (windows outer, so a window's taps are read once for all its channels), split by
    images over threads when there is enough to do; `cx_` and `ptrs_` are the context
    and the `ptrs` to use (a thread's chunk function has its own)."""
    segs = _segments(g.c, _lanes(dtype), vectors)

    def images(cx_: LoweringContext, ptrs_: list[ir.Value], begin: ir.Value,
               end: ir.Value) -> None:
        def win(*args: ir.Value) -> None:
            w = _PoolWindow(*args)
            _over_segments(cx_, segs, lambda c0, seg: body(cx_, ptrs_, w, c0, seg), name="cg")
        _windows(cx_, g, win, begin, end)
    touched = (g.n * g.h * g.w + g.pixels) * g.c
    _parallel(cx, g.n, touched, ptrs, images, "images", parallel.MIN_FUSED_ELEMENTS)


def _fold_taps(cx: LoweringContext, g: Window, w: _PoolWindow, init: list[ir.Value],
               step: Callable[[ir.Value, list[ir.Value]], list[ir.Value]]) -> list[ir.Value]:
    """Fold ``vals = step(ipix, vals)`` over the window's in-input taps, row-major;
    `ipix` is the flat input pixel (n, ih, iw)."""
    b = cx.b

    def row(i: ir.Value, vals: list[ir.Value]) -> list[ir.Value]:
        base = b.mul(_lin(cx, (w.n, g.h), (b.add(w.ih0, i), 1)), I64(g.w))
        return _carried_loop(cx, w.j_lo, w.j_hi, vals,
                             lambda j, v: step(b.add(base, b.add(w.iw0, j)), v), name="tj")
    return _carried_loop(cx, w.i_lo, w.i_hi, init, row, name="ti")


def _group_ptrs(cx: LoweringContext, base: ir.Value, pix: ir.Value, c: int, c0: ir.Value,
                seg: _Segment) -> list[ir.Value]:
    """Element pointers of the group's vectors at pixel `pix` of an [.., c] tensor."""
    row = _at(cx, base, cx.b.add(cx.b.mul(pix, I64(c)), c0))
    return [_at(cx, row, I64(t * seg.lanes)) for t in range(seg.vectors)]


def _splat_const(dtype, lanes: int, value: float) -> ir.Constant:
    vt = _vector_type(dtype, lanes)
    if isinstance(vt, ir.VectorType):
        return ir.Constant(vt, [ir.Constant(vt.element, value)] * lanes)
    return ir.Constant(vt, value)


def _window_count(cx: LoweringContext, dtype, w: _PoolWindow, lanes: int) -> ir.Value:
    """How many real elements the window covers (the AvgPool divisor), splat."""
    b = cx.b
    cnt = b.mul(b.sub(w.i_hi, w.i_lo), b.sub(w.j_hi, w.j_lo))
    return _splat(cx, b.sitofp(cnt, cx.scalar(dtype)), _vector_type(dtype, lanes))


def _window_max(cx: LoweringContext, g: Window, dtype, x: ir.Value, w: _PoolWindow,
                c0: ir.Value, seg: _Segment) -> list[ir.Value]:
    """The group's max over the window's taps: a NaN wins (and stays), as in np.max;
    -inf for a window without real taps (padding is -inf in the reference)."""
    b = cx.b
    size = dtype.np.itemsize
    vt = _vector_type(dtype, seg.lanes)

    def step(ipix: ir.Value, best: list[ir.Value]) -> list[ir.Value]:
        out = []
        for p, m in zip(_group_ptrs(cx, x, ipix, g.c, c0, seg), best):
            v = _vload(cx, p, vt, size)
            out.append(b.select(b.or_(b.fcmp_ordered(">", v, m), _nan(cx, v)), v, m))
        return out
    return _fold_taps(cx, g, w, [_splat_const(dtype, seg.lanes, -np.inf)] * seg.vectors, step)


@lowering("MaxPool", supports=_floats_only)
def _max_pool(cx: LoweringContext) -> None:
    """The max over each window's in-input taps (padding never wins); NaN propagates."""
    g = _pool_window(cx.node)
    dtype = cx.out_types[0].dtype

    def group(k: LoweringContext, ptrs: list[ir.Value], w: _PoolWindow, c0: ir.Value,
              seg: _Segment) -> None:
        x, out = ptrs
        best = _window_max(k, g, dtype, x, w, c0, seg)
        for v, p in zip(best, _group_ptrs(k, out, w.opix, g.c, c0, seg)):
            _vstore(k, v, p, dtype.np.itemsize)
    if g.pixels * g.c:
        _pool_groups(cx, g, dtype, POOL_VECTORS, [cx.input(0), cx.output(0)], group)
    cx.ret_ok()


@lowering("MaxPoolGrad", supports=_floats_only)
def _max_pool_grad(cx: LoweringContext) -> None:
    """Each window's gradient goes to the element np.argmax picks on the -inf padded
    window: the first tap (row-major) equal to the window's max, or the first NaN; when
    the max is -inf and the window starts in padding, a padded element (the gradient is
    dropped). The max is recomputed from orig_input, as the reference does (orig_output
    is not read). Two passes per window: the max, then the routing."""
    g = _pool_window(cx.node)
    dtype = cx.out_types[0].dtype
    size = dtype.np.itemsize
    if g.n * g.h * g.w * g.c == 0:
        cx.ret_ok()
        return
    partition = _tiles_input(g)
    if not partition:
        # A scatter-add into the zeroed dx: where a window's gradient goes depends on
        # the window's max, so a gather would redo every covering window's max and
        # routing per element. The zero-then-add memory pattern of
        # docs/llvm_o2_miscompile.md: tests/test_review_sums_grid.py checks it at O1-O3.
        _zero_output(cx)

    def group(k: LoweringContext, ptrs: list[ir.Value], w: _PoolWindow, c0: ir.Value,
              seg: _Segment) -> None:
        x, dy, dx = ptrs
        b = k.b
        vt = _vector_type(dtype, seg.lanes)
        best = _window_max(k, g, dtype, x, w, c0, seg)
        grads = [_vload(k, p, vt, size) for p in _group_ptrs(k, dy, w.opix, g.c, c0, seg)]
        zero = _splat_const(dtype, seg.lanes, 0.0)
        starts_padded = b.or_(b.icmp_signed(">", w.i_lo, I64(0)),
                              b.icmp_signed(">", w.j_lo, I64(0)))
        lowest = _splat_const(dtype, seg.lanes, -np.inf)
        # `taken`: a lane's gradient has gone (or, to padding, will never go) somewhere
        taken0 = []
        for m in best:
            at_lowest = b.fcmp_ordered("==", m, lowest)
            taken0.append(b.and_(at_lowest, _splat(k, starts_padded, at_lowest.type)))
        every = ir.Constant(taken0[0].type, [ir.Constant(I1, 1)] * seg.lanes) \
            if seg.lanes > 1 else ir.Constant(I1, 1)

        def step(ipix: ir.Value, taken: list[ir.Value]) -> list[ir.Value]:
            out = []
            for p, d, m, gv, t in zip(_group_ptrs(k, x, ipix, g.c, c0, seg),
                                      _group_ptrs(k, dx, ipix, g.c, c0, seg),
                                      best, grads, taken):
                v = _vload(k, p, vt, size)
                hit = b.or_(b.fcmp_ordered("==", v, m), b.and_(_nan(k, v), _nan(k, m)))
                hit = b.and_(hit, b.xor(t, every))
                routed = b.select(hit, gv, zero)
                if not partition:
                    routed = b.fadd(_vload(k, d, vt, size), routed)
                _vstore(k, routed, d, size)
                out.append(b.or_(t, hit))
            return out
        _fold_taps(k, g, w, taken0, step)
    if g.pixels:
        _pool_groups(cx, g, dtype, POOL_GRAD_VECTORS, [cx.input(0), cx.input(2), cx.output(0)],
                     group)
    cx.ret_ok()


@lowering("AvgPool", supports=_floats_only)
def _avg_pool(cx: LoweringContext) -> None:
    """The mean of each window's in-input taps (SAME padding is not counted)."""
    g = _pool_window(cx.node)
    dtype = cx.out_types[0].dtype
    size = dtype.np.itemsize

    def group(k: LoweringContext, ptrs: list[ir.Value], w: _PoolWindow, c0: ir.Value,
              seg: _Segment) -> None:
        x, out = ptrs
        vt = _vector_type(dtype, seg.lanes)

        def step(ipix: ir.Value, sums: list[ir.Value]) -> list[ir.Value]:
            return [k.b.fadd(acc, _vload(k, p, vt, size))
                    for p, acc in zip(_group_ptrs(k, x, ipix, g.c, c0, seg), sums)]
        sums = _fold_taps(k, g, w, [_splat_const(dtype, seg.lanes, 0.0)] * seg.vectors, step)
        cnt = _window_count(k, dtype, w, seg.lanes)
        for v, p in zip(sums, _group_ptrs(k, out, w.opix, g.c, c0, seg)):
            _vstore(k, k.b.fdiv(v, cnt), p, size)
    if g.pixels * g.c:
        _pool_groups(cx, g, dtype, POOL_VECTORS, [cx.input(0), cx.output(0)], group)
    cx.ret_ok()


@lowering("AvgPoolGrad", supports=_floats_only)
def _avg_pool_grad(cx: LoweringContext) -> None:
    """Each window's gradient, divided by its real-element count, added to each of its
    in-input taps; the optional input_like operand is not read. Windows that partition
    the input store their share; otherwise each input element gathers the shares of the
    windows that cover it (`_avg_pool_grad_gather`)."""
    g = _pool_window(cx.node)
    dtype = cx.out_types[0].dtype
    size = dtype.np.itemsize
    if g.n * g.h * g.w * g.c == 0:
        cx.ret_ok()
        return
    if not _tiles_input(g):
        _avg_pool_grad_gather(cx, g, dtype)
        cx.ret_ok()
        return

    def group(k: LoweringContext, ptrs: list[ir.Value], w: _PoolWindow, c0: ir.Value,
              seg: _Segment) -> None:
        dy, dx = ptrs
        b = k.b
        vt = _vector_type(dtype, seg.lanes)
        cnt = _window_count(k, dtype, w, seg.lanes)
        shares = [b.fdiv(_vload(k, p, vt, size), cnt)
                  for p in _group_ptrs(k, dy, w.opix, g.c, c0, seg)]

        def step(ipix: ir.Value, vals: list[ir.Value]) -> list[ir.Value]:
            for p, share in zip(_group_ptrs(k, dx, ipix, g.c, c0, seg), shares):
                _vstore(k, share, p, size)
            return vals
        _fold_taps(k, g, w, [], step)
    if g.pixels:
        _pool_groups(cx, g, dtype, POOL_VECTORS, [cx.input(0), cx.output(0)], group)
    cx.ret_ok()


def _covering(cx: LoweringContext, pos: ir.Value, pad: int, k: int, stride: int, out: int
              ) -> tuple[ir.Value, ir.Value]:
    """[lo, hi) of the windows o (of `out`) whose taps o * stride - pad + [0, k) hold
    input position `pos`; empty is lo >= hi."""
    b = cx.b
    first = _smax(cx, _lin(cx, (pos, 1), pad - k + 1), I64(0))  # o * stride >= this
    lo = b.udiv(b.add(first, I64(stride - 1)), I64(stride))
    hi = _smin(cx, b.add(b.udiv(_lin(cx, (pos, 1), pad), I64(stride)), I64(1)), I64(out))
    return lo, hi


def _avg_pool_grad_gather(cx: LoweringContext, g: Window, dtype) -> None:
    """AvgPoolGrad for overlapping, padded or partial windows: each input element sums
    ``dy[window] / count(window)`` over the windows covering it, in row-major window
    order, in registers from 0, and is stored once. That is the order in which scattering
    each window's share into a zeroed dx adds them, so the results are the same bits,
    but no element is stored, read back and stored again: the pattern LLVM's
    InstCombine store merging can miscompile (docs/llvm_o2_miscompile.md). Threads own
    images. An image's shares are computed first, one division per window, into a stack
    buffer when they fit `SCRATCH_BYTES` (else each covering window's share is divided
    again: 3x3 windows at stride 1 divide 9 times as often)."""
    size = dtype.np.itemsize
    segs = _segments(g.c, _lanes(dtype), POOL_VECTORS)
    buffered = g.oh * g.ow * g.c * size <= SCRATCH_BYTES

    def images(k: LoweringContext, ptrs: list[ir.Value], begin: ir.Value, end: ir.Value
               ) -> None:
        dy, dx = ptrs
        b = k.b
        shares = k.alloca(k.memory(dtype), g.oh * g.ow * g.c, name="shares") \
            if buffered else None

        def count(oh: ir.Value, ow: ir.Value, vt: ir.Type) -> ir.Value:
            i_lo, i_hi = _clip_taps(k, _lin(k, (oh, g.sh), -g.pt), g.kh, g.h)
            j_lo, j_hi = _clip_taps(k, _lin(k, (ow, g.sw), -g.pl), g.kw, g.w)
            cells = b.mul(b.sub(i_hi, i_lo), b.sub(j_hi, j_lo))
            return _splat(k, b.sitofp(cells, k.scalar(dtype)), vt)

        with k.loop(begin, end, name="n") as n:
            image_dy = _at(k, dy, b.mul(n, I64(g.oh * g.ow * g.c)))
            if shares is not None:
                with k.loop(0, g.oh, name="soh") as oh, k.loop(0, g.ow, name="sow") as ow:
                    opix = _lin(k, (oh, g.ow), (ow, 1))

                    def divide(c0: ir.Value, seg: _Segment) -> None:
                        vt = _vector_type(dtype, seg.lanes)
                        cnt = count(oh, ow, vt)
                        for p, q in zip(_group_ptrs(k, image_dy, opix, g.c, c0, seg),
                                        _group_ptrs(k, shares, opix, g.c, c0, seg)):
                            _vstore(k, b.fdiv(_vload(k, p, vt, size), cnt), q, size)
                    _over_segments(k, segs, divide, name="scg")
            with k.loop(0, g.h, name="ih") as ih:
                oh_lo, oh_hi = _covering(k, ih, g.pt, g.kh, g.sh, g.oh)
                with k.loop(0, g.w, name="iw") as iw:
                    ow_lo, ow_hi = _covering(k, iw, g.pl, g.kw, g.sw, g.ow)
                    ipix = _lin(k, (n, g.h * g.w), (ih, g.w), (iw, 1))

                    def group(c0: ir.Value, seg: _Segment) -> None:
                        vt = _vector_type(dtype, seg.lanes)

                        def window(oh: ir.Value, ow: ir.Value, acc: list[ir.Value]
                                   ) -> list[ir.Value]:
                            opix = _lin(k, (oh, g.ow), (ow, 1))
                            if shares is not None:
                                parts = [_vload(k, p, vt, size) for p in
                                         _group_ptrs(k, shares, opix, g.c, c0, seg)]
                            else:
                                cnt = count(oh, ow, vt)
                                parts = [b.fdiv(_vload(k, p, vt, size), cnt) for p in
                                         _group_ptrs(k, image_dy, opix, g.c, c0, seg)]
                            return [b.fadd(a, part) for a, part in zip(acc, parts)]

                        sums = _carried_loop(
                            k, oh_lo, oh_hi, [_splat_const(dtype, seg.lanes, 0.0)] * seg.vectors,
                            lambda oh, v: _carried_loop(k, ow_lo, ow_hi, v,
                                                        lambda ow, a: window(oh, ow, a),
                                                        name="ow"), name="oh")
                        for v, p in zip(sums, _group_ptrs(k, dx, ipix, g.c, c0, seg)):
                            _vstore(k, v, p, size)
                    _over_segments(k, segs, group, name="cg")
    touched = (g.n * g.h * g.w + g.pixels) * g.c
    _parallel(cx, g.n, touched, [cx.input(0), cx.output(0)], images, "images",
              parallel.MIN_FUSED_ELEMENTS)


# ---------------------------------------------------------------- bias and loss

@lowering("BiasAdd", supports=_floats_only)
def _bias_add(cx: LoweringContext) -> None:
    """value + bias along the last axis: rows outer (split over threads when large),
    channels in groups of explicit vectors (no per-row alias checks)."""
    shape = cx.out_types[0].shape
    dtype = cx.out_types[0].dtype
    c = int(shape[-1])
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    size = dtype.np.itemsize
    segs = _segments(c, _lanes(dtype), 2 * POOL_VECTORS)

    def body(k: LoweringContext, ptrs: list[ir.Value], begin: ir.Value, end: ir.Value) -> None:
        v, bias, out = ptrs
        with k.loop(begin, end, name="row") as r:
            def group(c0: ir.Value, seg: _Segment) -> None:
                vt = _vector_type(dtype, seg.lanes)
                for vp, bp, op in zip(_group_ptrs(k, v, r, c, c0, seg),
                                      _group_ptrs(k, bias, I64(0), c, c0, seg),
                                      _group_ptrs(k, out, r, c, c0, seg)):
                    _vstore(k, k.b.fadd(_vload(k, vp, vt, size), _vload(k, bp, vt, size)),
                            op, size)
            _over_segments(k, segs, group, name="cg")
    if rows * c:
        _parallel(cx, rows, 2 * rows * c, [cx.input(0), cx.input(1), cx.output(0)], body,
                  "rows", parallel.MIN_FUSED_ELEMENTS)
    cx.ret_ok()


@lowering("BiasAddGrad", supports=_floats_only)
def _bias_add_grad(cx: LoweringContext) -> None:
    """The column sums of out_backprop viewed as [rows, C], summed in f64 for f32: groups
    of up to `CHANNEL_BLOCK` channels (in vectors), each summed over the rows in
    order in registers from 0 and rounded and stored once (a stack row of sums, zeroed
    and then read and written per row, is the memory pattern of
    docs/llvm_o2_miscompile.md)."""
    shape = cx.in_types[0].shape
    c = int(shape[-1])
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    dtype = cx.out_types[0].dtype
    g, out = cx.input(0), cx.output(0)
    b = cx.b
    if c == 0:
        cx.ret_ok()
        return
    scalar = cx.scalar(dtype)

    def sums(q: ir.Value, accs: list[ir.Value]) -> None:
        t, qs = _slot_channels(accs, cx, q)
        io = _lanes_of(t, scalar)  # the tensors' lanes
        for acc in accs:
            b.store(ir.Constant(t, None), acc)
        with cx.loop(0, rows, name="row") as r:
            grow = _at(cx, g, b.mul(r, I64(c)))
            for acc, qv in zip(accs, qs):
                v = _strided(cx, grow, qv, 1, io)[0]
                b.store(b.fadd(b.load(acc), b.fpext(v, t) if io != t else v), acc)
        _store_sums(cx, accs, qs, out, io)
    lanes = _lanes(dtype)
    _channel_groups(cx, c, lanes, F64, sums, max(1, CHANNEL_BLOCK // lanes))
    cx.ret_ok()


@lowering("L2Loss", supports=_floats_only)
def _l2_loss(cx: LoweringContext) -> None:
    """sum(t * t) / 2 with an f64 accumulator (reassociable, so the loop vectorizes)."""
    t = cx.in_types[0]
    size = int(t.num_elements)
    dtype = cx.out_types[0].dtype
    x, out = cx.input(0), cx.output(0)
    b = cx.b
    acc = cx.alloca(F64, name="sum")
    b.store(ir.Constant(F64, 0.0), acc)
    with cx.loop(0, size, name="i") as i:
        v = b.load(_at(cx, x, i))
        v = b.fpext(v, F64) if dtype.ir_name != "f64" else v
        b.store(b.fadd(b.load(acc), b.fmul(v, v, flags=REDUCE_FLAGS), flags=REDUCE_FLAGS), acc)
    half = b.fmul(b.load(acc), ir.Constant(F64, 0.5))
    b.store(b.fptrunc(half, cx.scalar(dtype)) if dtype.ir_name != "f64" else half, out)
    cx.ret_ok()
