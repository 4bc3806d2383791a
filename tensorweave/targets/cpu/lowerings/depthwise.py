"""Native lowering of DepthwiseConv2dNative (f32, f64; its two gradient ops run their
reference kernels through the callback path).

A loop nest over (image row, output column), split over threads by output rows (each
chunk writes its own rows, so results do not depend on the thread count). An output
pixel's ``C * multiplier`` channels are zeroed, then each filter tap whose input position
is inside the image adds ``x[c] * filter[tap, c, m]`` to channel ``c * multiplier + m``:
taps in the reference kernel's (row-major) order, padding skipped instead of read, and
the channel loop innermost and contiguous in the input, the filter and the output, so it
vectorizes. Padded taps add nothing in the reference either, so both compute the same
sums in the same order.
"""

from __future__ import annotations

import llvmlite.ir as ir

from ....compiler.ir import Node
from ..lowering import I64, LoweringContext, lowering
from .nn import _at, _floats_only, _lin, _parallel, window


def _geometry(node: Node):
    x, f = node.inputs[0].type.shape, node.inputs[1].type.shape
    return window(x, f[:2], node.attrs), int(f[3])


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
    zero = ir.Constant(cx.scalar(dtype), 0.0)

    def body(k: LoweringContext, ptrs: list[ir.Value], begin: ir.Value, end: ir.Value) -> None:
        x, w, out = ptrs
        b = k.b
        with k.loop(begin, end, name="row") as r:
            n, i = b.udiv(r, I64(g.oh)), b.urem(r, I64(g.oh))
            ih0 = _lin(k, (i, g.sh), -g.pt)
            with k.loop(0, g.ow, name="col") as j:
                iw0 = _lin(k, (j, g.sw), -g.pl)
                orow = _at(k, out, b.mul(b.add(b.mul(r, I64(g.ow)), j), I64(cm)))
                with k.loop(0, cm, name="z") as q:
                    b.store(zero, _at(k, orow, q))
                with k.loop(0, g.kh, name="di") as di:
                    ih = b.add(ih0, b.mul(di, I64(g.dh)))
                    inside_h = b.and_(b.icmp_signed(">=", ih, I64(0)),
                                      b.icmp_signed("<", ih, I64(g.h)))
                    with k.if_then(inside_h):
                        with k.loop(0, g.kw, name="dj") as dj:
                            iw = b.add(iw0, b.mul(dj, I64(g.dw)))
                            inside_w = b.and_(b.icmp_signed(">=", iw, I64(0)),
                                              b.icmp_signed("<", iw, I64(g.w)))
                            with k.if_then(inside_w):
                                pix = _lin(k, (n, g.h * g.w), (ih, g.w), (iw, 1))
                                xrow = _at(k, x, b.mul(pix, I64(g.c)))
                                tap = b.add(b.mul(di, I64(g.kw)), dj)
                                wrow = _at(k, w, b.mul(tap, I64(cm)))
                                _accumulate(k, xrow, wrow, orow, g.c, mult)

    _parallel(cx, rows, rows * g.ow * cm * g.kh * g.kw,
              [cx.input(0), cx.input(1), cx.output(0)], body, "rows")
    cx.ret_ok()


def _accumulate(k: LoweringContext, xrow: ir.Value, wrow: ir.Value, orow: ir.Value, c: int,
                mult: int) -> None:
    """orow[c*M + m] += xrow[c] * wrow[c*M + m] (no contraction: the reference rounds the
    product before adding)."""
    b = k.b
    if mult == 1:
        with k.loop(0, c, name="c") as ch:
            p = _at(k, orow, ch)
            b.store(b.fadd(b.load(p), b.fmul(b.load(_at(k, xrow, ch)),
                                              b.load(_at(k, wrow, ch)))), p)
        return
    with k.loop(0, c, name="c") as ch:
        xv = b.load(_at(k, xrow, ch))
        base = b.mul(ch, I64(mult))
        with k.loop(0, mult, name="m") as m:
            idx = b.add(base, m)
            p = _at(k, orow, idx)
            b.store(b.fadd(b.load(p), b.fmul(xv, b.load(_at(k, wrow, idx)))), p)
