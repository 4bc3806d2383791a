"""Kernels that build a tensor from other tensors' elements by index arithmetic: Concat,
Pack, Slice, Tile, BroadcastTo, Pad (constant mode) and OneHot, and their inverse Split and
Unpack (one input, several outputs). (Fill needs no kernel: constant folding makes it a
Const.)

Each is one thread per output element: the thread splits its linear index into output
coordinates (static sizes) and computes which input element, or which constant, goes
there. Writes coalesce; reads do too wherever the innermost output dim maps to the
innermost input dim (all but Concat/Pack along the last axis and OneHot along a leading
axis).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...compiler.dtypes import DType
from ...compiler.ir import Node
from .fused import Unsupported
from .source import (
    Kernel,
    Writer,
    decompose,
    has_gpu_type,
    launch_1d,
    module,
    numba_type,
    offset_expr,
    row_major_strides,
)

# body(writer, output coordinates) -> the expression stored at that output element
Body = Callable[[Writer, list[str]], str]


def _static(shape) -> list[int]:
    return [int(s) for s in shape]


def constant(dtype: DType, value: float) -> str:
    """`value` (an attribute stored as a float) converted to `dtype`, as source."""
    t = numba_type(dtype)
    if math.isnan(value):
        return f"{t}(math.nan)"
    if math.isinf(value):
        return f"{t}({'-' if value < 0 else ''}math.inf)"
    return f"{t}({float(value)!r})"


def _kernel(node: Node, name: str, params: list[str], body: Body) -> Kernel:
    """One thread per element of `node`'s output; `params` name its inputs."""
    out = node.outputs[0].type
    if not has_gpu_type(out.dtype) or not all(has_gpu_type(v.type.dtype) for v in node.inputs):
        raise Unsupported(f"{node.op} of a dtype without GPU code")
    shape = _static(out.shape)
    total = int(np.prod(shape, dtype=np.int64))
    if total == 0 or any(int(np.prod(_static(v.type.shape), dtype=np.int64)) == 0
                         for v in node.inputs):
        raise Unsupported("empty input or result")
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}({', '.join(params + ['out'])}):")
    with w.indent():
        w(f"for o in range(cuda.grid(1), {total}, cuda.gridsize(1)):")
        with w.indent():
            coords = decompose(w, "o", shape, "c") if shape else []
            w(f"out[o] = {body(w, coords)}")
    grid, block = launch_1d(total)
    types = [numba_type(v.type.dtype) for v in node.inputs] + [numba_type(out.dtype)]
    return Kernel(name, module(w), types, grid, block)


def concat_kernel(node: Node, name: str) -> Kernel:
    """Concat (along an existing axis) and Pack (along a new one)."""
    shapes = [_static(v.type.shape) for v in node.inputs]
    out_rank = node.outputs[0].type.rank
    axis = int(node.attrs.get("axis", 0)) % out_rank
    if node.op == "Pack":  # each input is one slice of the new axis
        shapes = [s[:axis] + [1] + s[axis:] for s in shapes]
    params = [f"x{k}" for k in range(len(shapes))]

    def body(w: Writer, coords: list[str]) -> str:
        start, last = 0, len(shapes) - 1
        for k, s in enumerate(shapes):
            local = list(coords)
            local[axis] = f"({coords[axis]} - {start})" if start else coords[axis]
            element = f"{params[k]}[{offset_expr(local, row_major_strides(s))}]"
            if last == 0:
                return element
            if k == last:
                w("else:")
            else:
                w(f"{'if' if k == 0 else 'elif'} {coords[axis]} < {start + s[axis]}:")
            w(f"    v = {element}")
            start += s[axis]
        return "v"
    return _kernel(node, name, params, body)


def slice_kernel(node: Node, name: str) -> Kernel:
    """Slice: the block starting at `begin`."""
    src = _static(node.inputs[0].type.shape)
    begin = [int(b) for b in node.attrs["begin"]]
    strides = row_major_strides(src)

    def body(w: Writer, coords: list[str]) -> str:
        shifted = [f"({c} + {b})" if b else c for c, b in zip(coords, begin)]
        return f"x[{offset_expr(shifted, strides)}]"
    return _kernel(node, name, ["x"], body)


def tile_kernel(node: Node, name: str) -> Kernel:
    """Tile: input coordinate = output coordinate modulo the input's size."""
    src = _static(node.inputs[0].type.shape)
    strides = row_major_strides(src)

    def body(w: Writer, coords: list[str]) -> str:
        wrapped = [f"({c} % {n})" if n != 1 else "0" for c, n in zip(coords, src)]
        return f"x[{offset_expr(wrapped, strides)}]"
    return _kernel(node, name, ["x"], body)


def broadcast_kernel(node: Node, name: str) -> Kernel:
    """BroadcastTo (NumPy's rules: leading dims added, size-1 dims repeated)."""
    src = _static(node.inputs[0].type.shape)
    out = _static(node.outputs[0].type.shape)
    lead = len(out) - len(src)
    strides = row_major_strides(src)

    def body(w: Writer, coords: list[str]) -> str:
        mine = coords[lead:]
        picked = [c if n != 1 else "0" for c, n in zip(mine, src)]
        return f"x[{offset_expr(picked, strides)}]"
    return _kernel(node, name, ["x"], body)


def pad_kernel(node: Node, name: str) -> Kernel:
    """Pad in CONSTANT mode: inside the input's box its element, else the constant."""
    if node.attrs.get("mode", "CONSTANT") != "CONSTANT":
        raise Unsupported(f"Pad mode {node.attrs['mode']}")
    src = _static(node.inputs[0].type.shape)
    pads = [int(p) for p in node.attrs["paddings"]]
    before = pads[0::2]
    strides = row_major_strides(src)
    fill = constant(node.outputs[0].type.dtype, float(node.attrs.get("constant_value", 0.0)))

    def body(w: Writer, coords: list[str]) -> str:
        inside = " and ".join(f"{b} <= {c} < {b + n}" for c, b, n in zip(coords, before, src))
        shifted = [f"({c} - {b})" if b else c for c, b in zip(coords, before)]
        w(f"if {inside or 'True'}:")
        w(f"    v = x[{offset_expr(shifted, strides)}]")
        w("else:")
        w(f"    v = {fill}")
        return "v"
    return _kernel(node, name, ["x"], body)


def one_hot_kernel(node: Node, name: str) -> Kernel:
    """OneHot: `on_value` where the index equals the position along `axis`."""
    out = node.outputs[0].type
    idx = _static(node.inputs[0].type.shape)
    axis = int(node.attrs.get("axis", -1)) % out.rank
    strides = row_major_strides(idx)
    on = constant(out.dtype, float(node.attrs.get("on_value", 1.0)))
    off = constant(out.dtype, float(node.attrs.get("off_value", 0.0)))

    def body(w: Writer, coords: list[str]) -> str:
        rest = coords[:axis] + coords[axis + 1:]
        return f"({on} if indices[{offset_expr(rest, strides)}] == {coords[axis]} else {off})"
    return _kernel(node, name, ["indices"], body)


def split_kernel(node: Node, name: str) -> Kernel:
    """Split (parts along an axis) and Unpack (slices along an axis, which is removed):
    one thread per input element writes it into its part."""
    src = node.inputs[0].type
    if not has_gpu_type(src.dtype):
        raise Unsupported(f"{node.op} of {src.dtype.ir_name}")
    shape = _static(src.shape)
    axis = int(node.attrs.get("axis", 0)) % len(shape)
    total = int(np.prod(shape, dtype=np.int64))
    sizes = [1 if node.op == "Unpack" else _static(v.type.shape)[axis] for v in node.outputs]
    if total == 0 or 0 in sizes:
        raise Unsupported("empty input or part")
    params = [f"out{k}" for k in range(len(sizes))]
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(x, {', '.join(params)}):")
    with w.indent():
        w(f"for i in range(cuda.grid(1), {total}, cuda.gridsize(1)):")
        with w.indent():
            coords = decompose(w, "i", shape, "c")
            start = 0
            for k, n in enumerate(sizes):
                part = list(shape)
                part[axis] = n
                local = list(coords)
                local[axis] = f"({coords[axis]} - {start})" if start else coords[axis]
                cond = f"{coords[axis]} < {start + n}"
                store = f"out{k}[{offset_expr(local, row_major_strides(part))}] = x[i]"
                if len(sizes) == 1:
                    w(store)
                    break
                if k == len(sizes) - 1:
                    w("else:")
                else:
                    w(f"{'if' if k == 0 else 'elif'} {cond}:")
                w(f"    {store}")
                start += n
    grid, block = launch_1d(total)
    t = numba_type(src.dtype)
    return Kernel(name, module(w), [t] * (1 + len(sizes)), grid, block)


__all__ = ["broadcast_kernel", "concat_kernel", "constant", "one_hot_kernel", "pad_kernel",
           "slice_kernel", "split_kernel", "tile_kernel"]
