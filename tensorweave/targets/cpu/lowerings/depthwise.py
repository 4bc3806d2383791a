"""Native lowerings of DepthwiseConv2dNative and its two gradient ops (f32, f64).

Forward: a loop nest over (image row, output column), split over threads by output rows
(each chunk writes its own rows, so results do not depend on the thread count). An output
pixel's ``C * multiplier`` channels go in groups of up to `DEPTHWISE_VECTORS` explicit
vectors (then single vectors, then single channels); for each group every filter tap
whose input position is inside the image adds ``x[c] * filter[tap, c, m]`` to channel
``c * multiplier + m`` in accumulators that stay in registers, starting from 0, and the
sums are stored once: taps in the reference kernel's (row-major) order, padding skipped
instead of read. Padded taps add nothing in the reference either, so both compute the
same sums in the same order (bitwise equal results). (Summing in the output, zeroed and
then read and written per tap, was miscompiled at O2 by an LLVM InstCombine bug:
docs/llvm_o2_miscompile.md.)

Input gradient: gathered, not scattered, so threads own disjoint input rows: each input
pixel visits the taps in row-major order and takes the output pixel that read it through
that tap (when the stride divides the offset), adding ``sum_m dy[c*M+m] * filter[tap,
c, m]``, the reference's per-tap order. Filter gradient: threads own filter taps; each tap
sums ``x * dy`` over the output pixels whose input position is inside the image, in f64
for f32 (a stack row of ``C * M`` sums), rounded once.
"""

from __future__ import annotations

import llvmlite.ir as ir

from ....compiler.ir import Node
from ..lowering import F64, I64, LoweringContext, lowering
from .nn import _at, _floats_only, _lanes, _lin, _parallel, _zero_output, window

# Vectors of output channels the forward lowering sums together per pass over the taps
# (their accumulators stay in registers; the tap loop's bounds checks are shared).
DEPTHWISE_VECTORS = 4
# A filter-gradient row of f64 sums (C * M of them) lives on the stack; larger rows run
# the reference kernel instead.
MAX_SUM_ROW = 1 << 14


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
    vectors = cm // lanes
    group = min(DEPTHWISE_VECTORS, vectors)  # vectors summed together per pass of the taps
    groups = vectors // group if group else 0
    scalar = cx.scalar(dtype)

    def body(k: LoweringContext, ptrs: list[ir.Value], begin: ir.Value, end: ir.Value) -> None:
        x, w, out = ptrs
        b = k.b
        vt = ir.VectorType(scalar, lanes)
        accs = [k.alloca(vt, name=f"vsum{v}") for v in range(group)]
        one = k.alloca(scalar, name="sum") if vectors * lanes < cm else None
        with k.loop(begin, end, name="row") as r:
            n, i = b.udiv(r, I64(g.oh)), b.urem(r, I64(g.oh))
            ih0 = _lin(k, (i, g.sh), -g.pt)
            with k.loop(0, g.ow, name="col") as j:
                iw0 = _lin(k, (j, g.sw), -g.pl)
                orow = _at(k, out, b.mul(b.add(b.mul(r, I64(g.ow)), j), I64(cm)))
                where = (g, mult, n, ih0, iw0, x, w, orow)
                if groups:
                    with k.loop(0, groups, name="cg") as gi:
                        _channel_sums(k, where, b.mul(gi, I64(group * lanes)), accs)
                for v in range(groups * group, vectors):  # (fewer than `group` left)
                    _channel_sums(k, where, I64(v * lanes), accs[:1])
                if one is not None:
                    with k.loop(vectors * lanes, cm, name="cs") as q:
                        _channel_sums(k, where, q, [one])

    _parallel(cx, rows, rows * g.ow * cm * g.kh * g.kw,
              [cx.input(0), cx.input(1), cx.output(0)], body, "rows")
    cx.ret_ok()


def _channel_sums(k: LoweringContext, where: tuple, q: ir.Value, accs: list[ir.Value]
                  ) -> None:
    """Output channels q.. of one pixel (consecutive vectors of them, one per slot of
    `accs`, or channel q alone for one scalar slot): the in-image taps' ``x * w`` added
    in row-major tap order to 0, then stored once. (The slots are stack slots that
    mem2reg turns into registers: summing in the output itself, zeroed and then read and
    written per tap, is the pattern LLVM's InstCombine store merging miscompiles at O2,
    docs/llvm_o2_miscompile.md.) No contraction: the reference rounds the product before
    adding."""
    g, mult, n, ih0, iw0, x, w, orow = where
    b = k.b
    t = accs[0].type.pointee
    vector = isinstance(t, ir.VectorType)
    width = t.count if vector else 1
    align = 4 if isinstance(t, ir.VectorType) and isinstance(t.element, ir.FloatType) else 8
    cm = g.c * mult

    def at(ptr: ir.Value, index: ir.Value) -> ir.Value:
        p = _at(k, ptr, index)
        return b.bitcast(p, ir.PointerType(t)) if vector else p

    def load(ptr: ir.Value, index: ir.Value) -> ir.Value:
        return b.load(at(ptr, index), align=align) if vector else b.load(at(ptr, index))

    qs = [q if v == 0 else b.add(q, I64(v * width)) for v in range(len(accs))]
    for acc in accs:
        b.store(ir.Constant(t, None), acc)  # (zeroinitializer: +0.0, the reference's start)
    with k.loop(0, g.kh, name="di") as di:
        ih = b.add(ih0, b.mul(di, I64(g.dh)))
        with k.if_then(_inside(k, ih, g.h)):
            with k.loop(0, g.kw, name="dj") as dj:
                iw = b.add(iw0, b.mul(dj, I64(g.dw)))
                with k.if_then(_inside(k, iw, g.w)):
                    pix = _lin(k, (n, g.h * g.w), (ih, g.w), (iw, 1))
                    xrow = _at(k, x, b.mul(pix, I64(g.c)))
                    tap = b.add(b.mul(di, I64(g.kw)), dj)
                    wrow = _at(k, w, b.mul(tap, I64(cm)))
                    for acc, qv in zip(accs, qs):
                        xv = load(xrow, qv) if mult == 1 else _spread(k, xrow, qv, mult, t)
                        b.store(b.fadd(b.load(acc), b.fmul(xv, load(wrow, qv))), acc)
    for acc, qv in zip(accs, qs):
        total = b.load(acc)
        if vector:
            b.store(total, at(orow, qv), align=align)
        else:
            b.store(total, at(orow, qv))


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


# The gradients unroll the multiplier loop; larger multipliers run the reference kernel.
MAX_UNROLLED_MULTIPLIER = 64


def _filter_grad_supported(node: Node) -> bool:
    g, mult = _geometry(node)
    return _floats_only(node) and g.c * mult <= MAX_SUM_ROW and mult <= MAX_UNROLLED_MULTIPLIER


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
    zero = ir.Constant(cx.scalar(dtype), 0.0)

    def body(k: LoweringContext, ptrs: list[ir.Value], begin: ir.Value, end: ir.Value) -> None:
        w, dy, dx = ptrs
        b = k.b
        with k.loop(begin, end, name="row") as r:
            n, ih = b.udiv(r, I64(g.h)), b.urem(r, I64(g.h))
            with k.loop(0, g.w, name="col") as iw:
                xrow = _at(k, dx, b.mul(b.add(b.mul(r, I64(g.w)), iw), I64(g.c)))
                with k.loop(0, g.c, name="z") as q:
                    b.store(zero, _at(k, xrow, q))
                with k.loop(0, g.kh, name="di") as di:
                    i, ok_h = _source(k, _lin(k, (ih, 1), g.pt, (di, -g.dh)), g.sh, g.oh)
                    with k.if_then(ok_h):
                        with k.loop(0, g.kw, name="dj") as dj:
                            j, ok_w = _source(k, _lin(k, (iw, 1), g.pl, (dj, -g.dw)), g.sw,
                                              g.ow)
                            with k.if_then(ok_w):
                                opix = _lin(k, (n, g.oh * g.ow), (i, g.ow), (j, 1))
                                grow = _at(k, dy, b.mul(opix, I64(cm)))
                                tap = b.add(b.mul(di, I64(g.kw)), dj)
                                wrow = _at(k, w, b.mul(tap, I64(cm)))
                                _gather_channels(k, grow, wrow, xrow, g.c, mult)

    _parallel(cx, rows, rows * g.w * cm * g.kh * g.kw,
              [cx.input(0), cx.input(1), cx.output(0)], body, "rows")
    cx.ret_ok()


def _gather_channels(k: LoweringContext, grow: ir.Value, wrow: ir.Value, xrow: ir.Value,
                     c: int, mult: int) -> None:
    """xrow[c] += sum_m grow[c*M + m] * wrow[c*M + m] (the sum first, as the reference)."""
    b = k.b
    with k.loop(0, c, name="c") as ch:
        base = b.mul(ch, I64(mult))
        total = b.fmul(b.load(_at(k, grow, base)), b.load(_at(k, wrow, base)))
        for m in range(1, mult):  # multipliers are small: unrolled
            idx = b.add(base, I64(m))
            total = b.fadd(total, b.fmul(b.load(_at(k, grow, idx)), b.load(_at(k, wrow, idx))))
        p = _at(k, xrow, ch)
        b.store(b.fadd(b.load(p), total), p)


@lowering("DepthwiseConv2dNativeBackpropFilter", supports=_filter_grad_supported)
def _depthwise_backprop_filter(cx: LoweringContext) -> None:
    """dw[di, dj, c, m] = sum over output pixels whose tap (di, dj) is inside the image
    of x[n, ih, iw, c] * dy[n, i, j, c*M + m], summed in f64 for f32."""
    g, mult = _geometry(cx.node)
    dtype = cx.out_types[0].dtype
    cm = g.c * mult
    taps = g.kh * g.kw
    if taps * cm == 0:
        cx.ret_ok()
        return
    wide = dtype.name != "f64"
    scalar = cx.scalar(dtype)

    def body(k: LoweringContext, ptrs: list[ir.Value], begin: ir.Value, end: ir.Value) -> None:
        x, dy, dw = ptrs
        b = k.b
        acc = k.alloca(F64, cm, name="sums")
        with k.loop(begin, end, name="tap") as tap:
            di, dj = b.udiv(tap, I64(g.kw)), b.urem(tap, I64(g.kw))
            with k.loop(0, cm, name="z") as q:
                b.store(ir.Constant(F64, 0.0), _at(k, acc, q))
            with k.loop(0, g.n * g.oh, name="orow") as r:
                n, i = b.udiv(r, I64(g.oh)), b.urem(r, I64(g.oh))
                ih = _lin(k, (i, g.sh), -g.pt, (di, g.dh))
                with k.if_then(_inside(k, ih, g.h)):
                    with k.loop(0, g.ow, name="ocol") as j:
                        iw = _lin(k, (j, g.sw), -g.pl, (dj, g.dw))
                        with k.if_then(_inside(k, iw, g.w)):
                            pix = _lin(k, (n, g.h * g.w), (ih, g.w), (iw, 1))
                            xrow = _at(k, x, b.mul(pix, I64(g.c)))
                            grow = _at(k, dy, b.mul(b.add(b.mul(r, I64(g.ow)), j), I64(cm)))
                            with k.loop(0, g.c, name="c") as ch:
                                xv = b.load(_at(k, xrow, ch))
                                xv = b.fpext(xv, F64) if wide else xv
                                base = b.mul(ch, I64(mult))
                                for m in range(mult):
                                    idx = b.add(base, I64(m)) if m else base
                                    gv = b.load(_at(k, grow, idx))
                                    gv = b.fpext(gv, F64) if wide else gv
                                    p = _at(k, acc, idx)
                                    b.store(b.fadd(b.load(p), b.fmul(xv, gv)), p)
            wrow = _at(k, dw, b.mul(tap, I64(cm)))
            with k.loop(0, cm, name="out") as q:
                v = b.load(_at(k, acc, q))
                b.store(b.fptrunc(v, scalar) if wide else v, _at(k, wrow, q))

    _parallel(cx, taps, taps * g.n * g.oh * g.ow * cm,
              [cx.input(0), cx.input(1), cx.output(0)], body, "taps")
    cx.ret_ok()
