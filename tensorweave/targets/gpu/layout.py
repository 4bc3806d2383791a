"""Data movement kernels: Transpose, Gather and GatherNd, one thread per output element.

A transpose reads the input through permuted strides (the writes coalesce, the reads
are strided); a gather copies ``params[..., indices[i], ...]`` along its axis after
checking the index, reporting one out of range through the kernel's status. GatherNd
(``tw.gather_nd``, with ``batch_dims``: the gather with batch dims the op set has, since
Gather itself only takes ``batch_dims=0``) reads each index's coordinates, checks them
all, and copies the slice they address inside the element's own batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...compiler.ir import Node
from ...compiler.types import format_shape
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
        raise Unsupported(f"Transpose of {src.dtype.ir_name}")
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
        raise Unsupported(f"Gather of {params.dtype.ir_name}")
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


def gather_nd_kernel(node: Node, name: str) -> Kernel:
    """The kernel of GatherNd `node` (any ``batch_dims``). Raises `Unsupported`.

    With ``B = prod(params.shape[:batch_dims])`` batches, ``m`` indices per batch of
    ``depth`` coordinates each and slices of ``inner`` elements, output element
    ``o = (b * m + r) * inner + e`` is ``params[(b * block + sum_k idx_k * stride_k) *
    inner + e]`` where ``idx = indices[b * m + r, :]``, ``block`` is the number of slices
    of one batch and ``stride_k`` the row-major strides of the indexed dims."""
    params, indices = node.inputs[0].type, node.inputs[1].type
    if not has_gpu_type(params.dtype):
        raise Unsupported(f"GatherNd of {params.dtype.ir_name}")
    bd = int(node.attrs.get("batch_dims", 0))
    pshape = [int(s) for s in params.shape]
    ishape = [int(s) for s in indices.shape]
    depth = ishape[-1]
    dims = pshape[bd:bd + depth]
    block = int(np.prod(dims, dtype=np.int64))
    inner = int(np.prod(pshape[bd + depth:], dtype=np.int64))
    rows = int(np.prod(ishape[:-1], dtype=np.int64))  # all batches' indices
    per_batch = int(np.prod(ishape[bd:-1], dtype=np.int64))
    total = rows * inner
    if total == 0 or block == 0:
        raise Unsupported("empty result or params")
    strides = row_major_strides(dims)
    t = numba_type(params.dtype)
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(params, indices, out, status):")
    with w.indent():
        w(f"for o in range(cuda.grid(1), {total}, cuda.gridsize(1)):")
        with w.indent():
            w(f"e = o % {inner}")
            w(f"q = o // {inner}")  # which index row, over every batch
            w(f"pos = (q // {per_batch}) * {block}" if bd else "pos = 0")
            w("ok = True")
            for k in range(depth):
                w(f"c{k} = indices[q * {depth} + {k}]")
                w(f"if c{k} < 0 or c{k} >= {dims[k]}:")
                w("    ok = False")
                w(f"pos += c{k} * {strides[k]}")
            w("if ok:")
            w(f"    out[o] = params[pos * {inner} + e]")
            # the first failing thread to claim the status (compare-and-swap) writes its
            # index row and that row's coordinates (each as two int32 halves), so the
            # message can quote them as the reference does
            w("elif cuda.atomic.cas(status, 0, 0, int32(q + 1)) == 0:")
            with w.indent():
                if not depth:  # no coordinates: never out of range
                    w("pass")
                for k in range(depth):
                    w(f"v{k} = int64(c{k})")
                    w(f"status[{1 + 2 * k}] = int32(v{k} & 4294967295)")
                    w(f"status[{2 + 2 * k}] = int32(v{k} >> 32)")
    if rows >= 2**31 - 1:
        raise Unsupported("too many indices for an int32 status")
    grid, block_ = launch_1d(total)
    return Kernel(name, module(w), [t, numba_type(indices.dtype), t, "int32"], grid, block_,
                  True, status_width=1 + 2 * depth)


def bad_gather_nd_message(node: Node, status: int, halves: Sequence[int]) -> str:
    """GatherNd's error, worded as the reference kernel's: `status` is 1 + the flat
    position of a bad index among ``indices.shape[:-1]``, `halves` its coordinates as
    (low, high) int32 pairs. With several bad indices, the one reported is the first a
    GPU thread claimed, not necessarily the first in order."""
    params, indices = node.inputs[0].type, node.inputs[1].type
    bd = int(node.attrs.get("batch_dims", 0))
    lead = [int(s) for s in indices.shape[:-1]]
    where = [int(k) for k in np.unravel_index(status - 1, lead)] if lead else []
    coords = [(lo & 0xFFFFFFFF) | (hi << 32) for lo, hi in zip(halves[0::2], halves[1::2])]
    return (f"indices[{','.join(map(str, where))}] = {coords} does not index into param "
            f"shape {format_shape(params.shape)}"
            + (f" (after batch_dims={bd})" if bd else ""))


def bad_index_message(node: Node) -> str:
    params = node.inputs[0].type
    ax = int(node.attrs.get("axis", 0)) % params.rank
    return (f"an index is not in [0, {params.shape[ax]}) (dimension {ax} of params, shape "
            f"{list(params.shape)})")


__all__ = ["STATUS_BAD_INDEX", "bad_gather_nd_message", "bad_index_message", "gather_kernel",
           "gather_nd_kernel", "transpose_kernel"]
