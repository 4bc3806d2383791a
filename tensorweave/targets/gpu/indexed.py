"""Data movement with an index table computed at plan time from the reference kernel
itself: StridedSlice, StridedSliceGrad and Pad in REFLECT/SYMMETRIC mode, and PadGrad
(every mode) from Pad's.

These ops only move elements, but their index rules (masks, ellipses, negative strides,
mirrored borders) are intricate. With static shapes, running the op's reference kernel
once on the *positions* of its input (``arange(size)``) gives, for every output element,
the input element it holds; that table becomes a constant of the step and the kernel is
one gather, ``out[o] = x[table[o]]`` (``-1``: a zero, for the gradients, which write into
zeros). The GPU result is then the reference semantics by construction, at the cost of
reading one index per element. PadGrad goes the other way: an input element receives
its own gradient and, with mirrored padding, those of its mirror images, so its table is
a list of sources per element (CSR: `pad_grad_tables`) and the kernel sums them.
"""

from __future__ import annotations

import numpy as np

from ...compiler.ir import Node
from .source import Kernel, Unsupported, Writer, launch_1d, module, numba_type


def _reference(node: Node, *inputs: np.ndarray) -> np.ndarray:
    kdef = node.opdef.kernels.get("reference")
    if kdef is None or kdef.context:
        raise Unsupported(f"{node.op} has no plain reference kernel to derive indices from")
    attrs = {k: v for k, v in node.attrs.items() if not k.startswith("_")}
    with np.errstate(all="ignore"):
        result = kdef.fn(*inputs, **attrs)
    return np.asarray(result[0] if isinstance(result, (tuple, list)) else result)


def _shape(v) -> tuple[int, ...]:
    return tuple(int(s) for s in v.type.shape)


def index_table(node: Node) -> np.ndarray:
    """For each element of `node`'s output, the position of the input element it holds
    (-1: none, a zero). Raises `Unsupported` for ops or modes this does not cover."""
    op = node.op
    if op == "Pad" and node.attrs.get("mode") in ("REFLECT", "SYMMETRIC"):
        pass
    elif op not in ("StridedSlice", "StridedSliceGrad"):
        raise Unsupported(f"no index table for {op} {node.attrs.get('mode', '')}".rstrip())
    src = _shape(node.inputs[0])
    size = int(np.prod(src, dtype=np.int64))
    if op == "StridedSliceGrad":  # positions + 1 written into zeros: 0 means untouched
        like = np.zeros(_shape(node.inputs[1]), np.int64)
        positions = np.arange(1, size + 1, dtype=np.int64).reshape(src)
        table = _reference(node, positions, like) - 1
    else:
        table = _reference(node, np.arange(size, dtype=np.int64).reshape(src))
    if table.shape != _shape(node.outputs[0]):
        raise Unsupported("the index table does not have the output's shape")
    dtype = np.int32 if size < 2 ** 31 else np.int64
    return np.ascontiguousarray(table.reshape(-1), dtype=dtype)


def indexed_kernel(node: Node, name: str, table: np.ndarray) -> Kernel:
    """``out[o] = x[table[o]]`` (zero where the table holds -1)."""
    src, out = node.inputs[0].type, node.outputs[0].type
    t = numba_type(out.dtype)
    total = int(table.size)
    if total == 0 or int(np.prod(_shape(node.inputs[0]), dtype=np.int64)) == 0:
        raise Unsupported("empty input or result")
    shape_donor = len(node.inputs) > 1  # StridedSliceGrad's `like`
    params = ["x"] + (["like"] if shape_donor else []) + ["table", "out"]
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}({', '.join(params)}):")
    w(f"    for o in range(cuda.grid(1), {total}, cuda.gridsize(1)):")
    w("        i = table[o]")
    if node.op == "StridedSliceGrad":
        w(f"        out[o] = x[i] if i >= 0 else {t}(0)")
    else:
        w("        out[o] = x[i]")
    grid, block = launch_1d(total)
    types = [numba_type(src.dtype)]
    if shape_donor:
        types.append(numba_type(node.inputs[1].type.dtype))
    types += [_index_type(table), t]
    return Kernel(name, module(w), types, grid, block)


def pad_grad_tables(node: Node) -> tuple[np.ndarray, np.ndarray]:
    """PadGrad's sources as CSR: for input element ``i``, the positions of `grad` that
    Pad filled from it are ``sources[offsets[i]:offsets[i + 1]]`` (the element itself and,
    in REFLECT/SYMMETRIC mode, its mirror images, which add up). Made by running Pad's
    reference kernel on the input's positions (-1 in the constant border)."""
    from ...compiler.registry import get_op
    mode = node.attrs.get("mode", "CONSTANT")
    in_shape = _shape(node.outputs[0])
    size = int(np.prod(in_shape, dtype=np.int64))
    pad = get_op("Pad").kernels["reference"].fn
    with np.errstate(all="ignore"):
        src = np.asarray(pad(np.arange(size, dtype=np.int64).reshape(in_shape),
                             paddings=list(node.attrs["paddings"]), mode=mode,
                             constant_value=-1)).reshape(-1)
    if src.size != int(np.prod(_shape(node.inputs[0]), dtype=np.int64)):
        raise Unsupported("the mirrored positions do not have grad's shape")
    order = np.argsort(src, kind="stable")  # each element's sources in grad order
    order = order[src[order] >= 0]
    offsets = np.searchsorted(src[order], np.arange(size + 1))
    dtype = np.int32 if src.size < 2 ** 31 else np.int64
    return (np.ascontiguousarray(offsets, dtype=dtype), np.ascontiguousarray(order, dtype=dtype))


def pad_grad_kernel(node: Node, name: str, offsets: np.ndarray, sources: np.ndarray) -> Kernel:
    """``out[i] = sum of grad[sources[k]] for k in offsets[i]..offsets[i+1]``, one thread per
    input element in a fixed order (no atomics). Floats add in their own type, as the
    reference's folds do; integers in int64, wrapped to their type at the end (the same
    modular sum)."""
    out = node.outputs[0].type
    t = numba_type(out.dtype)
    total = int(offsets.size - 1)
    if total == 0 or sources.size == 0:
        raise Unsupported("empty input or result")
    acc = t if out.dtype.is_floating else "int64"
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(grad, offsets, sources, out):")
    w(f"    for i in range(cuda.grid(1), {total}, cuda.gridsize(1)):")
    w(f"        s = {acc}(0)")
    w("        for k in range(offsets[i], offsets[i + 1]):")
    w(f"            s = {acc}(s + grad[sources[k]])")
    w(f"        out[i] = {t}(s)")
    grid, block = launch_1d(total)
    it = _index_type(offsets)
    return Kernel(name, module(w), [numba_type(node.inputs[0].type.dtype), it, it, t], grid,
                  block)


def _index_type(table: np.ndarray) -> str:
    return "int32" if table.dtype == np.int32 else "int64"


__all__ = ["index_table", "indexed_kernel", "pad_grad_kernel", "pad_grad_tables"]
