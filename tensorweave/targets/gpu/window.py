"""Sliding-window kernels on NHWC tensors: Conv2D and its two gradients, MaxPool and
AvgPool and their gradients, one thread per output element (direct loops over the
window, no im2col buffer).

The geometry (output size, padding before each spatial dim) is TensorFlow's, from the
op declarations' `window_output_size`, with static shapes baked into the code.
Gradients are written as gathers, not scatters: each input element (or filter tap)
sums the contributions that reach it, so no atomics are needed and results do not
depend on timing. A convolution accumulates float32 in float32, as cuDNN does; pooling
gradients send each window's gradient to the first maximal element (row-major), and
average pooling counts only the real elements of a window, as the reference kernels do.
"""

from __future__ import annotations

import numpy as np

from ...compiler.ir import Node
from ...compiler.ops.nn import window_output_size
from .epilogue import GpuEpilogue
from .source import Kernel, Unsupported, Writer, decompose, launch_1d, module, numba_type


def _geometry(in_hw, k_hw, strides, dilations, padding, explicit=()):
    """(out_h, out_w), (pad_top, pad_left), (stride_h, stride_w), (dil_h, dil_w)."""
    pads = [(0, 0), (0, 0)] if not explicit else [(explicit[2], explicit[3]),
                                                   (explicit[4], explicit[5])]
    s, d = (strides[1], strides[2]), (dilations[1], dilations[2])
    h = window_output_size(in_hw[0], k_hw[0], s[0], d[0], padding, pads[0])
    w = window_output_size(in_hw[1], k_hw[1], s[1], d[1], padding, pads[1])
    return (h[0], w[0]), (h[1], w[1]), s, d


def _shape(v) -> list[int]:
    return [int(s) for s in v.type.shape]


def _float_node(node: Node) -> str:
    dt = node.outputs[0].type.dtype
    if dt.kind != "float":
        raise Unsupported(f"{node.op} of {dt.ir_name}")
    if any(int(np.prod(_shape(v), dtype=np.int64)) == 0 for v in node.inputs + node.outputs):
        raise Unsupported("empty input or result")
    return numba_type(dt)


def _start(w: Writer, name: str, params: list[str], total: int, shape: list[int],
           prefix: str) -> list[str]:
    w("@cuda.jit")
    w(f"def {name}({', '.join(params)}):")
    w.depth += 1
    w(f"for o in range(cuda.grid(1), {total}, cuda.gridsize(1)):")
    w.depth += 1
    return decompose(w, "o", shape, prefix)


def _finish(node: Node, w: Writer, name: str, total: int, t: str) -> Kernel:
    grid, block = launch_1d(total)
    types = [numba_type(v.type.dtype) for v in node.inputs] + [t]
    return Kernel(name, module(w), types, grid, block)


def _params(node: Node) -> list[str]:
    return [f"in{k}" for k in range(len(node.inputs))] + ["out"]


def conv2d_kernel(node: Node, name: str, epilogue: GpuEpilogue | None = None) -> Kernel:
    """Conv2D: out[n,y,x,o] = sum over taps and input channels. With `epilogue` (`node`
    is its region's Conv2D: a FusedConv2D), the parameters after the input and the
    filter are the epilogue's, and each thread stores the epilogue's outputs for its
    element instead of the sum."""
    t = _float_node(node)
    n, ih, iw, c = _shape(node.inputs[0])
    kh, kw, _, oc = _shape(node.inputs[1])
    (oh, ow), (pt, pl), (sh, sw), (dh, dw) = _geometry(
        (ih, iw), (kh, kw), node.attrs["strides"], node.attrs.get("dilations", (1, 1, 1, 1)),
        node.attrs["padding"], node.attrs.get("explicit_paddings", ()))
    total = n * oh * ow * oc
    w = Writer()
    params = _params(node) if epilogue is None else ["in0", "in1", *epilogue.params]
    b, y, x, o = _start(w, name, params, total, [n, oh, ow, oc], "c")
    w(f"acc = {t}(0)")
    w(f"for i in range({kh}):")
    w(f"    h = {y} * {sh} - {pt} + i * {dh}")
    w(f"    if h < 0 or h >= {ih}:")
    w("        continue")
    w(f"    for j in range({kw}):")
    w(f"        v = {x} * {sw} - {pl} + j * {dw}")
    w(f"        if v < 0 or v >= {iw}:")
    w("            continue")
    w(f"        xb = (({b} * {ih} + h) * {iw} + v) * {c}")
    w(f"        wb = (i * {kw} + j) * {c * oc} + {o}")
    w(f"        for ch in range({c}):")
    w(f"            acc = {t}(acc + in0[xb + ch] * in1[wb + ch * {oc}])")
    if epilogue is None:
        w("out[o] = acc")
        return _finish(node, w, name, total, t)
    epilogue.store(w, "acc", "o", o)
    grid, block = launch_1d(total)
    types = [numba_type(v.type.dtype) for v in node.inputs] + epilogue.types
    return Kernel(name, module(w), types, grid, block)


def conv2d_backprop_input_kernel(node: Node, name: str) -> Kernel:
    """Conv2DBackpropInput: each input element sums the output gradients of the windows
    that read it, times the filter tap that read it."""
    t = _float_node(node)
    kh, kw, c, oc = _shape(node.inputs[0])
    n, oh, ow, _ = _shape(node.inputs[1])
    _, ih, iw, _ = _shape(node.outputs[0])
    (goh, gow), (pt, pl), (sh, sw), (dh, dw) = _geometry(
        (ih, iw), (kh, kw), node.attrs["strides"], node.attrs.get("dilations", (1, 1, 1, 1)),
        node.attrs["padding"], node.attrs.get("explicit_paddings", ()))
    if (goh, gow) != (oh, ow):
        raise Unsupported("out_backprop does not match the geometry (an error at run time)")
    total = n * ih * iw * c
    w = Writer()
    b, y, x, ch = _start(w, name, _params(node), total, [n, ih, iw, c], "c")
    w(f"acc = {t}(0)")
    w(f"for i in range({kh}):")
    w(f"    hy = {y} + {pt} - i * {dh}")  # = out_y * stride when a window reads row y
    w(f"    if hy < 0 or hy % {sh} != 0 or hy // {sh} >= {oh}:")
    w("        continue")
    w(f"    for j in range({kw}):")
    w(f"        wx = {x} + {pl} - j * {dw}")
    w(f"        if wx < 0 or wx % {sw} != 0 or wx // {sw} >= {ow}:")
    w("            continue")
    w(f"        gb = (({b} * {oh} + hy // {sh}) * {ow} + wx // {sw}) * {oc}")
    w(f"        fb = ((i * {kw} + j) * {c} + {ch}) * {oc}")
    w(f"        for k in range({oc}):")
    w(f"            acc = {t}(acc + in1[gb + k] * in0[fb + k])")
    w("out[o] = acc")
    return _finish(node, w, name, total, t)


def conv2d_backprop_filter_kernel(node: Node, name: str) -> Kernel:
    """Conv2DBackpropFilter: each filter tap sums input times output gradient over the
    batch and the output positions."""
    t = _float_node(node)
    n, ih, iw, c = _shape(node.inputs[0])
    _, oh, ow, oc = _shape(node.inputs[1])
    kh, kw, _, _ = _shape(node.outputs[0])
    (goh, gow), (pt, pl), (sh, sw), (dh, dw) = _geometry(
        (ih, iw), (kh, kw), node.attrs["strides"], node.attrs.get("dilations", (1, 1, 1, 1)),
        node.attrs["padding"], node.attrs.get("explicit_paddings", ()))
    if (goh, gow) != (oh, ow):
        raise Unsupported("out_backprop does not match the geometry (an error at run time)")
    total = kh * kw * c * oc
    w = Writer()
    i, j, ch, k = _start(w, name, _params(node), total, [kh, kw, c, oc], "c")
    w(f"acc = {t}(0)")
    w(f"for b in range({n}):")
    w(f"    for y in range({oh}):")
    w(f"        h = y * {sh} - {pt} + {i} * {dh}")
    w(f"        if h < 0 or h >= {ih}:")
    w("            continue")
    w(f"        for x in range({ow}):")
    w(f"            v = x * {sw} - {pl} + {j} * {dw}")
    w(f"            if v < 0 or v >= {iw}:")
    w("                continue")
    w(f"            acc = {t}(acc + in0[((b * {ih} + h) * {iw} + v) * {c} + {ch}]"
      f" * in1[((b * {oh} + y) * {ow} + x) * {oc} + {k}])")
    w("out[o] = acc")
    return _finish(node, w, name, total, t)


def _pool_geometry(node: Node, in_shape: list[int]):
    k = node.attrs["ksize"]
    return _geometry(in_shape[1:3], (k[1], k[2]), node.attrs["strides"], (1, 1, 1, 1),
                     node.attrs["padding"])


def pool_kernel(node: Node, name: str) -> Kernel:
    """MaxPool (padding never wins, NaN does) and AvgPool (real elements only)."""
    t = _float_node(node) if node.op == "AvgPool" else None
    dt = node.outputs[0].type.dtype
    t = t or numba_type(dt)
    if node.op == "MaxPool" and any(int(np.prod(_shape(v), dtype=np.int64)) == 0
                                    for v in node.inputs + node.outputs):
        raise Unsupported("empty input or result")
    n, ih, iw, c = _shape(node.inputs[0])
    (oh, ow), (pt, pl), (sh, sw), _ = _pool_geometry(node, [n, ih, iw, c])
    kh, kw = node.attrs["ksize"][1], node.attrs["ksize"][2]
    total = n * oh * ow * c
    w = Writer()
    b, y, x, ch = _start(w, name, _params(node), total, [n, oh, ow, c], "c")
    w("count = 0")
    w(f"acc = {t}(0)")
    w(f"for i in range({kh}):")
    w(f"    h = {y} * {sh} - {pt} + i")
    w(f"    if h < 0 or h >= {ih}:")
    w("        continue")
    w(f"    for j in range({kw}):")
    w(f"        v = {x} * {sw} - {pl} + j")
    w(f"        if v < 0 or v >= {iw}:")
    w("            continue")
    w(f"        e = in0[(({b} * {ih} + h) * {iw} + v) * {c} + {ch}]")
    if node.op == "MaxPool":
        nan = " or e != e" if dt.kind == "float" else ""
        w(f"        if count == 0 or (acc == acc and (e > acc{nan})):")
        w("            acc = e")
    else:
        w(f"        acc = {t}(acc + e)")
    w("        count += 1")
    w("out[o] = acc" if node.op == "MaxPool" else f"out[o] = {t}(acc / {t}(count))")
    return _finish(node, w, name, total, t)


def max_pool_grad_kernel(node: Node, name: str) -> Kernel:
    """MaxPoolGrad: each input element sums the gradients of the windows whose first
    maximal element it is."""
    t = _float_node(node)
    n, ih, iw, c = _shape(node.inputs[0])
    (oh, ow), (pt, pl), (sh, sw), _ = _pool_geometry(node, [n, ih, iw, c])
    kh, kw = node.attrs["ksize"][1], node.attrs["ksize"][2]
    total = n * ih * iw * c
    w = Writer()
    b, y, x, ch = _start(w, name, _params(node), total, [n, ih, iw, c], "c")
    w(f"acc = {t}(0)")
    w(f"for i in range({kh}):")  # windows that contain (y, x): out_y * sh - pt + i == y
    w(f"    hy = {y} + {pt} - i")
    w(f"    if hy < 0 or hy % {sh} != 0 or hy // {sh} >= {oh}:")
    w("        continue")
    w(f"    wy = hy // {sh}")
    w(f"    for j in range({kw}):")
    w(f"        wx = {x} + {pl} - j")
    w(f"        if wx < 0 or wx % {sw} != 0 or wx // {sw} >= {ow}:")
    w("            continue")
    w(f"        wxo = wx // {sw}")
    # the window's first maximal element, row-major (NaN first, as argmax)
    w("        found = False")
    w(f"        best = {t}(0)")
    w("        bi = 0")
    w("        bj = 0")
    w(f"        for p in range({kh}):")
    w(f"            hh = wy * {sh} - {pt} + p")
    w(f"            if hh < 0 or hh >= {ih}:")
    w("                continue")
    w(f"            for q in range({kw}):")
    w(f"                vv = wxo * {sw} - {pl} + q")
    w(f"                if vv < 0 or vv >= {iw}:")
    w("                    continue")
    w(f"                e = in0[(({b} * {ih} + hh) * {iw} + vv) * {c} + {ch}]")
    w("                if not found or (best == best and (e > best or e != e)):")
    w("                    found = True")
    w("                    best = e")
    w("                    bi = p")
    w("                    bj = q")
    w("        if bi == i and bj == j:")
    w(f"            acc = {t}(acc + in2[(({b} * {oh} + wy) * {ow} + wxo) * {c} + {ch}])")
    w("out[o] = acc")
    return _finish(node, w, name, total, t)


def avg_pool_grad_kernel(node: Node, name: str) -> Kernel:
    """AvgPoolGrad: each input element sums grad / (real elements of the window) over the
    windows that contain it."""
    t = _float_node(node)
    n, ih, iw, c = _shape(node.outputs[0])
    (oh, ow), (pt, pl), (sh, sw), _ = _pool_geometry(node, [n, ih, iw, c])
    if [n, oh, ow, c] != _shape(node.inputs[0]):
        raise Unsupported("grad does not match the geometry (an error at run time)")
    kh, kw = node.attrs["ksize"][1], node.attrs["ksize"][2]
    total = n * ih * iw * c
    w = Writer()
    b, y, x, ch = _start(w, name, _params(node), total, [n, ih, iw, c], "c")
    w(f"acc = {t}(0)")
    w(f"for i in range({kh}):")
    w(f"    hy = {y} + {pt} - i")
    w(f"    if hy < 0 or hy % {sh} != 0 or hy // {sh} >= {oh}:")
    w("        continue")
    w(f"    wy = hy // {sh}")
    w(f"    rows = min(wy * {sh} - {pt} + {kh}, {ih}) - max(wy * {sh} - {pt}, 0)")
    w(f"    for j in range({kw}):")
    w(f"        wx = {x} + {pl} - j")
    w(f"        if wx < 0 or wx % {sw} != 0 or wx // {sw} >= {ow}:")
    w("            continue")
    w(f"        wxo = wx // {sw}")
    w(f"        cols = min(wxo * {sw} - {pl} + {kw}, {iw}) - max(wxo * {sw} - {pl}, 0)")
    w(f"        g = in0[(({b} * {oh} + wy) * {ow} + wxo) * {c} + {ch}]")
    w(f"        acc = {t}(acc + {t}(g / {t}(rows * cols)))")
    w("out[o] = acc")
    return _finish(node, w, name, total, t)


__all__ = ["avg_pool_grad_kernel", "conv2d_backprop_filter_kernel", "conv2d_backprop_input_kernel",
           "conv2d_kernel", "max_pool_grad_kernel", "pool_kernel"]
