"""Native lowerings of DepthwiseConv2dNative and its two gradient ops (f32, f64).

Forward: a loop nest over (image row, output column), split over threads by output rows
(each chunk writes its own rows, so results do not depend on the thread count). An output
pixel's ``C * multiplier`` channels go in groups of up to `DEPTHWISE_VECTORS` explicit
vectors (then single vectors, then single channels); for each group every filter tap
whose input position is inside the image adds ``x[c] * filter[tap, c, m]`` to channel
``c * multiplier + m`` in accumulators that stay in registers, starting from 0, and the
sums are stored once: taps in the reference kernel's (row-major) order; a padded tap adds
``0 * filter[tap, c, m]`` as the reference's zero padding does (NaN for an inf or NaN
filter value, else +-0, which leaves the sum as it is), so both compute the same sums in
the same order (bitwise equal results). (Summing in the output, zeroed and
then read and written per tap, was miscompiled at O2 by an LLVM InstCombine bug:
docs/llvm_o2_miscompile.md.)

Input gradient: gathered, not scattered, so threads own disjoint input rows: each input
pixel's channels go in groups of up to `INPUT_GRAD_VECTORS` vectors; for each group the
taps are visited in row-major order, taking the output pixel that read this one through
that tap (when the stride divides the offset), and ``sum_m dy[c*M+m] * filter[tap, c,
m]`` is added to register accumulators from 0, stored once: the reference's per-tap
order. Filter gradient: threads own filter taps; each tap's ``C * M`` elements go in
groups of up to `FILTER_GRAD_VECTORS` vectors, each summing ``x * dy`` over the output
pixels whose input position is inside the image in f64 registers (for f32), rounded and
stored once. No lowering here reads back an element it stored (the pattern the
InstCombine bug needs).
"""

from __future__ import annotations

import llvmlite.ir as ir

from ....compiler.ir import Node
from ..lowering import F64, I64, LoweringContext, lowering
from .nn import (
    _at,
    _channel_groups,
    _floats_only,
    _lanes,
    _lanes_of,
    _lin,
    _parallel,
    _slot_channels,
    _store_sums,
    _strided,
    _zero_output,
    window,
)

# Vectors of output channels the forward lowering sums together per pass over the taps
# (their accumulators stay in registers; the tap loop's bounds checks are shared).
DEPTHWISE_VECTORS = 4
# Vectors of input-gradient channels summed together per pass over the taps (measured,
# 8x56x56x64 3x3, one thread: 4 vectors 1.74 ms, 8 1.33 ms; 8x28x28x128 stride 2: 0.27,
# 0.20 ms).
INPUT_GRAD_VECTORS = 8
# Vectors of filter-gradient channels summed together per pass over the output pixels.
# More than the registers hold (f64 sums for f32 take two per vector on AVX2): a spilled
# accumulator costs less than another pass over x and dy, which bounds this kernel
# (measured, 8x56x56x64 3x3, one thread: 4 vectors 4.5 ms, 8 2.4 ms, 16 2.4 ms;
# 8x28x28x128 stride 2: 0.76, 0.47, 0.45 ms).
FILTER_GRAD_VECTORS = 16


def _geometry(node: Node):
    """(window over the forward input, channel multiplier) of a depthwise node."""
    a = node.attrs
    if node.op == "DepthwiseConv2dNative":
        x, f = node.inputs[0].type.shape, node.inputs[1].type.shape
    elif node.op == "DepthwiseConv2dNativeBackpropInput":
        x, f = node.outputs[0].type.shape, node.inputs[0].type.shape
    else:
        x, f = node.inputs[0].type.shape, node.outputs[0].type.shape
    return window(x, f[:2], a), int(f[3])


def _inside(k: LoweringContext, v: ir.Value, size: int) -> ir.Value:
    b = k.b
    return b.and_(b.icmp_signed(">=", v, I64(0)), b.icmp_signed("<", v, I64(size)))


def _source(k: LoweringContext, pos: ir.Value, stride: int, size: int
            ) -> tuple[ir.Value, ir.Value]:
    """(the output index o with o * stride == pos, whether it exists and is < size)."""
    b = k.b
    safe = b.select(b.icmp_signed(">=", pos, I64(0)), pos, I64(0))
    o = b.udiv(safe, I64(stride))
    ok = b.and_(b.icmp_signed(">=", pos, I64(0)),
                b.and_(b.icmp_unsigned("==", b.urem(safe, I64(stride)), I64(0)),
                       b.icmp_signed("<", o, I64(size))))
    return o, ok


@lowering("DepthwiseConv2dNative", supports=_floats_only)
def _depthwise(cx: LoweringContext) -> None:
    """out[n, i, j, c*M + m] = sum over in-image taps of x[n, ih, iw, c] * w[di, dj, c, m]."""
    g, mult = _geometry(cx.node)
    dtype = cx.out_types[0].dtype
    cm = g.c * mult
    rows = g.n * g.oh
    if rows * g.ow * cm == 0:
        cx.ret_ok()
        return
    lanes = _lanes(dtype)
    scalar = cx.scalar(dtype)

    def body(k: LoweringContext, ptrs: list[ir.Value], begin: ir.Value, end: ir.Value) -> None:
        x, w, out = ptrs
        b = k.b
        with k.loop(begin, end, name="row") as r:
            n, i = b.udiv(r, I64(g.oh)), b.urem(r, I64(g.oh))
            ih0 = _lin(k, (i, g.sh), -g.pt)
            with k.loop(0, g.ow, name="col") as j:
                iw0 = _lin(k, (j, g.sw), -g.pl)
                orow = _at(k, out, b.mul(b.add(b.mul(r, I64(g.ow)), j), I64(cm)))
                where = (g, mult, n, ih0, iw0, x, w, orow)
                _channel_groups(k, cm, lanes, scalar,
                                lambda q, accs: _channel_sums(k, where, q, accs),
                                DEPTHWISE_VECTORS)

    _parallel(cx, rows, rows * g.ow * cm * g.kh * g.kw,
              [cx.input(0), cx.input(1), cx.output(0)], body, "rows")
    cx.ret_ok()


def _channel_sums(k: LoweringContext, where: tuple, q: ir.Value, accs: list[ir.Value]
                  ) -> None:
    """Output channels q.. of one pixel (consecutive vectors of them, one per slot of
    `accs`, or channel q alone for one scalar slot): the in-image taps' ``x * w`` added
    in row-major tap order to 0, then stored once. No contraction: the reference rounds
    the product before adding."""
    g, mult, n, ih0, iw0, x, w, orow = where
    b = k.b
    t, qs = _slot_channels(accs, k, q)
    cm = g.c * mult
    for acc in accs:
        b.store(ir.Constant(t, None), acc)  # (zeroinitializer: +0.0, the reference's start)
    with k.loop(0, g.kh, name="di") as di:
        ih = b.add(ih0, b.mul(di, I64(g.dh)))
        row_inside = _inside(k, ih, g.h)
        with k.loop(0, g.kw, name="dj") as dj:
            iw = b.add(iw0, b.mul(dj, I64(g.dw)))
            tap = b.add(b.mul(di, I64(g.kw)), dj)
            wrow = _at(k, w, b.mul(tap, I64(cm)))
            with b.if_else(b.and_(row_inside, _inside(k, iw, g.w))) as (inside, padding):
                with inside:
                    pix = _lin(k, (n, g.h * g.w), (ih, g.w), (iw, 1))
                    xrow = _at(k, x, b.mul(pix, I64(g.c)))
                    for acc, qv in zip(accs, qs):
                        xv = _strided(k, xrow, qv, 1, t)[0] if mult == 1 else _spread(k, xrow, qv,
                                                                                   mult, t)
                        b.store(b.fadd(b.load(acc), b.fmul(xv, _strided(k, wrow, qv, 1, t)[0])),
                                acc)
                with padding:  # (0 * w: +-0, which leaves a sum that starts at +0 as it
                    # is, unless w is inf or NaN, whose NaN the reference's zeros give too)
                    for acc, qv in zip(accs, qs):
                        zero_w = b.fmul(ir.Constant(t, None), _strided(k, wrow, qv, 1, t)[0])
                        b.store(b.fadd(b.load(acc), zero_w), acc)
    _store_sums(k, accs, qs, orow, t)


def _spread(k: LoweringContext, xrow: ir.Value, q: ir.Value, mult: int, t: ir.Type
            ) -> ir.Value:
    """The input values of output channels q.. (channel q reads input channel q // M): one
    scalar, or a vector of them built lane by lane (a vector load would read past the
    pixel's channels in the last block)."""
    b = k.b
    if not isinstance(t, ir.VectorType):
        return b.load(_at(k, xrow, b.udiv(q, I64(mult))))
    v = ir.Constant(t, None)
    for lane in range(t.count):
        src = b.udiv(b.add(q, I64(lane)), I64(mult))
        v = b.insert_element(v, b.load(_at(k, xrow, src)), ir.IntType(32)(lane))
    return v


# The input gradient unrolls the multiplier loop; larger multipliers run the reference
# kernel.
MAX_UNROLLED_MULTIPLIER = 64


def _backprop_input_supported(node: Node) -> bool:
    return _floats_only(node) and _geometry(node)[1] <= MAX_UNROLLED_MULTIPLIER


@lowering("DepthwiseConv2dNativeBackpropInput", supports=_backprop_input_supported)
def _depthwise_backprop_input(cx: LoweringContext) -> None:
    """dx[n, ih, iw, c] = sum over taps (row-major) reaching an output pixel of
    sum_m dy[n, i, j, c*M + m] * w[di, dj, c, m]; the input_like operand is not read."""
    g, mult = _geometry(cx.node)
    dtype = cx.out_types[0].dtype
    cm = g.c * mult
    rows = g.n * g.h
    if rows * g.w * g.c == 0:
        cx.ret_ok()
        return
    if g.oh * g.ow * cm == 0:  # no output pixel read the input
        _zero_output(cx)
        cx.ret_ok()
        return
    lanes = _lanes(dtype)
    scalar = cx.scalar(dtype)

    def body(k: LoweringContext, ptrs: list[ir.Value], begin: ir.Value, end: ir.Value) -> None:
        w, dy, dx = ptrs
        b = k.b
        with k.loop(begin, end, name="row") as r:
            n, ih = b.udiv(r, I64(g.h)), b.urem(r, I64(g.h))
            with k.loop(0, g.w, name="col") as iw:
                xrow = _at(k, dx, b.mul(b.add(b.mul(r, I64(g.w)), iw), I64(g.c)))
                where = (g, mult, n, ih, iw, w, dy, xrow)
                _channel_groups(k, g.c, lanes, scalar,
                                lambda q, accs: _input_grad_sums(k, where, q, accs),
                                INPUT_GRAD_VECTORS)

    _parallel(cx, rows, rows * g.w * cm * g.kh * g.kw,
              [cx.input(0), cx.input(1), cx.output(0)], body, "rows")
    cx.ret_ok()


def _input_grad_sums(k: LoweringContext, where: tuple, q: ir.Value, accs: list[ir.Value]
                     ) -> None:
    """Input channels q.. of one input pixel (a vector of them per slot of `accs`, or
    channel q alone): for each tap (row-major) whose output pixel read this one (the
    stride divides the offset), ``sum_m dy[c*M + m] * w[tap, c, m]`` (m in order) added
    to 0 in a register; stored once. Gathered, not scattered: threads own disjoint input
    rows, and an input element is never read back from memory (the zero-then-add pattern
    LLVM's InstCombine store merging miscompiles, docs/llvm_o2_miscompile.md). The same
    operations in the same order as adding each tap's sum to a zeroed dx."""
    g, mult, n, ih, iw, w, dy, xrow = where
    b = k.b
    t, qs = _slot_channels(accs, k, q)
    cm = g.c * mult
    for acc in accs:
        b.store(ir.Constant(t, None), acc)
    with k.loop(0, g.kh, name="di") as di:
        i, ok_h = _source(k, _lin(k, (ih, 1), g.pt, (di, -g.dh)), g.sh, g.oh)
        with k.if_then(ok_h):
            with k.loop(0, g.kw, name="dj") as dj:
                j, ok_w = _source(k, _lin(k, (iw, 1), g.pl, (dj, -g.dw)), g.sw, g.ow)
                with k.if_then(ok_w):
                    opix = _lin(k, (n, g.oh * g.ow), (i, g.ow), (j, 1))
                    grow = _at(k, dy, b.mul(opix, I64(cm)))
                    tap = b.add(b.mul(di, I64(g.kw)), dj)
                    wrow = _at(k, w, b.mul(tap, I64(cm)))
                    for acc, qv in zip(accs, qs):
                        base = b.mul(qv, I64(mult)) if mult > 1 else qv
                        total = None
                        # (multipliers are small: unrolled)
                        for gv, wv in zip(_strided(k, grow, base, mult, t),
                                          _strided(k, wrow, base, mult, t)):
                            prod = b.fmul(gv, wv)
                            total = prod if total is None else b.fadd(total, prod)
                        b.store(b.fadd(b.load(acc), total), acc)
    _store_sums(k, accs, qs, xrow, t)


@lowering("DepthwiseConv2dNativeBackpropFilter", supports=_floats_only)
def _depthwise_backprop_filter(cx: LoweringContext) -> None:
    """dw[di, dj, c, m] = sum over output pixels of x[n, ih, iw, c] * dy[n, i, j, c*M + m]
    (x = 0 where tap (di, dj) reads the padding), summed in f64 for f32."""
    g, mult = _geometry(cx.node)
    dtype = cx.out_types[0].dtype
    cm = g.c * mult
    taps = g.kh * g.kw
    if taps * cm == 0:
        cx.ret_ok()
        return
    lanes = _lanes(dtype)

    def body(k: LoweringContext, ptrs: list[ir.Value], begin: ir.Value, end: ir.Value) -> None:
        x, dy, dw = ptrs
        b = k.b
        with k.loop(begin, end, name="tap") as tap:
            di, dj = b.udiv(tap, I64(g.kw)), b.urem(tap, I64(g.kw))
            wrow = _at(k, dw, b.mul(tap, I64(cm)))
            where = (g, mult, di, dj, x, dy, wrow)
            _channel_groups(k, cm, lanes, F64 if dtype.ir_name != "f64" else cx.scalar(dtype),
                            lambda q, accs: _filter_grad_sums(k, where, q, accs),
                            FILTER_GRAD_VECTORS)

    _parallel(cx, taps, taps * g.n * g.oh * g.ow * cm,
              [cx.input(0), cx.input(1), cx.output(0)], body, "taps")
    cx.ret_ok()


def _filter_grad_sums(k: LoweringContext, where: tuple, q: ir.Value, accs: list[ir.Value]
                      ) -> None:
    """Filter elements q.. (flat c * M + m) of one tap: ``x * dy`` over the output pixels
    (in order; ``0 * dy`` where the input position is padding), summed in f64 registers (the
    slots' type) from 0 and rounded and stored once (the sums were a stack row, zeroed and
    then read and written per pixel: the pattern of docs/llvm_o2_miscompile.md). The same
    sums in the same order."""
    g, mult, di, dj, x, dy, wrow = where
    b = k.b
    t, qs = _slot_channels(accs, k, q)
    io = _lanes_of(t, wrow.type.pointee)  # the tensors' lanes
    cm = g.c * mult
    for acc in accs:
        b.store(ir.Constant(t, None), acc)
    with k.loop(0, g.n * g.oh, name="orow") as r:
        n, i = b.udiv(r, I64(g.oh)), b.urem(r, I64(g.oh))
        ih = _lin(k, (i, g.sh), -g.pt, (di, g.dh))
        row_inside = _inside(k, ih, g.h)
        with k.loop(0, g.ow, name="ocol") as j:
            iw = _lin(k, (j, g.sw), -g.pl, (dj, g.dw))
            grow = _at(k, dy, b.mul(b.add(b.mul(r, I64(g.ow)), j), I64(cm)))
            with b.if_else(b.and_(row_inside, _inside(k, iw, g.w))) as (inside, padding):
                with inside:
                    pix = _lin(k, (n, g.h * g.w), (ih, g.w), (iw, 1))
                    xrow = _at(k, x, b.mul(pix, I64(g.c)))
                    for acc, qv in zip(accs, qs):
                        xv = _strided(k, xrow, qv, 1, io)[0] if mult == 1 else _spread(
                            k, xrow, qv, mult, io)
                        gv = _strided(k, grow, qv, 1, io)[0]
                        if io != t:
                            xv, gv = b.fpext(xv, t), b.fpext(gv, t)
                        b.store(b.fadd(b.load(acc), b.fmul(xv, gv)), acc)
                with padding:  # (the padding's 0 * dy, as in the forward lowering)
                    for acc, qv in zip(accs, qs):
                        gv = _strided(k, grow, qv, 1, io)[0]
                        if io != t:
                            gv = b.fpext(gv, t)
                        b.store(b.fadd(b.load(acc), b.fmul(ir.Constant(t, None), gv)), acc)
    _store_sums(k, accs, qs, wrow, io)
