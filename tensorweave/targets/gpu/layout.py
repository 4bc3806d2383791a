"""Data movement kernels: Transpose and Gather, one thread per output element.

A transpose reads the input through permuted strides (the writes coalesce, the reads
are strided); a gather copies ``params[..., indices[i], ...]`` along its axis after
checking the index, reporting one out of range through the kernel's status.
"""

from __future__ import annotations

import numpy as np

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

STATUS_BAD_INDEX = 1


def transpose_kernel(node: Node, name: str) -> Kernel:
    """The kernel of Transpose `node`. Raises `Unsupported`."""
    src, out = node.inputs[0].type, node.outputs[0].type
    if not has_gpu_type(src.dtype):
        raise Unsupported(f"Transpose of {src.dtype.name}")
    perm = [int(p) % max(1, src.rank) for p in node.attrs["perm"]]
    out_shape = [int(s) for s in out.shape]
    total = int(np.prod(out_shape, dtype=np.int64))
    if total == 0:
        raise Unsupported("empty result")
    in_strides = row_major_strides([int(s) for s in src.shape])
    strides = [in_strides[p] for p in perm]  # input stride of each output dim
    t = numba_type(src.dtype)
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(x, out):")
    with w.indent():
        w(f"for o in range(cuda.grid(1), {total}, cuda.gridsize(1)):")
        with w.indent():
            coords = decompose(w, "o", out_shape, "c") if out_shape else []
            w(f"out[o] = x[{offset_expr(coords, strides)}]")
    grid, block = launch_1d(total)
    return Kernel(name, module(w), [t, t], grid, block)


def gather_kernel(node: Node, name: str) -> Kernel:
    """The kernel of Gather `node` (``batch_dims=0``). Raises `Unsupported`."""
    params, indices = node.inputs[0].type, node.inputs[1].type
    if node.attrs.get("batch_dims", 0):
        raise Unsupported("Gather with batch_dims")
    if not has_gpu_type(params.dtype):
        raise Unsupported(f"Gather of {params.dtype.name}")
    shape = [int(s) for s in params.shape]
    ax = int(node.attrs.get("axis", 0)) % len(shape)
    outer = int(np.prod(shape[:ax], dtype=np.int64))
    n = shape[ax]
    inner = int(np.prod(shape[ax + 1:], dtype=np.int64))
    count = int(np.prod([int(s) for s in indices.shape], dtype=np.int64))
    total = outer * count * inner
    if total == 0:
        raise Unsupported("empty result")
    t = numba_type(params.dtype)
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(params, indices, out, status):")
    with w.indent():
        w(f"for o in range(cuda.grid(1), {total}, cuda.gridsize(1)):")
        with w.indent():
            w(f"e = o % {inner}")
            w(f"rest = o // {inner}")
            w(f"i = rest % {count}")
            w(f"b = rest // {count}")
            w("ix = indices[i]")
            w(f"if ix < 0 or ix >= {n}:")
            w(f"    status[0] = {STATUS_BAD_INDEX}")
            w("else:")
            w(f"    out[o] = params[(b * {n} + ix) * {inner} + e]")
    grid, block = launch_1d(total)
    return Kernel(name, module(w), [t, numba_type(indices.dtype), t, "int32"], grid, block,
                  True)


def bad_index_message(node: Node) -> str:
    params = node.inputs[0].type
    ax = int(node.attrs.get("axis", 0)) % params.rank
    return (f"an index is not in [0, {params.shape[ax]}) (dimension {ax} of params, shape "
            f"{list(params.shape)})")


__all__ = ["STATUS_BAD_INDEX", "bad_index_message", "gather_kernel", "transpose_kernel"]
