"""MatMul as a tiled shared-memory kernel.

Each block computes a TILE x TILE tile of C = op(A) @ op(B) (op: optional transpose,
from the node's attributes), walking K in steps of TILE: the block's threads load one
tile of A and one of B into shared memory (each thread one element of each, so global
loads are coalesced along the contiguous dimension of the untransposed operand), sync,
and each thread accumulates its dot product from shared memory. Batched products use
the grid's third dimension, with NumPy's broadcasting of the batch dims (an operand
without a batch dim, or with size 1 there, is reused). Float32 accumulates in float32 (as cuBLAS
does without split-K), float64 in float64, integers in int64 wrapped to the dtype. With an
epilogue (a FusedMatMul: `epilogue.py`) each thread applies the elementwise cluster to its
element of C, rounded to the dtype, and stores the cluster's outputs instead of C.
"""

from __future__ import annotations

import numpy as np

from ...compiler.ir import Node
from .epilogue import GpuEpilogue
from .fused import Unsupported
from .source import Kernel, Writer, decompose, has_gpu_type, module, numba_type, offset_expr

TILE = 16
MAX_GRID_YZ = 65535  # blocks along a grid's y and z dimensions (x takes 2**31 - 1)


def _batch_steps(batch: list[int], batch_out: list[int], matrix: int) -> list[int]:
    """Element offset per step of each result batch dim for an operand with batch dims
    `batch` (right-aligned, NumPy broadcasting) and `matrix` elements per matrix."""
    padded = [1] * (len(batch_out) - len(batch)) + batch
    steps, acc = [0] * len(batch_out), matrix
    for d in range(len(batch_out) - 1, -1, -1):
        if padded[d] != 1:
            steps[d] = acc
        acc *= padded[d]
    return steps


def matmul_kernel(node: Node, name: str, accumulate: bool = False,
                  epilogue: GpuEpilogue | None = None) -> Kernel:
    """The kernel of MatMul `node` (static shapes). Raises `Unsupported`. With
    `accumulate`, C is added to (``c = c + product``, the product rounded to the dtype
    first, as a separate sum of the two would): a loop's weight gradient summed in
    place (`loops.py`). With `epilogue` (`node` is its region's MatMul), the kernel's
    parameters after A and B are the epilogue's, and it stores the epilogue's outputs."""
    if accumulate and epilogue is not None:
        raise ValueError("a product that accumulates has no epilogue")
    a_t, b_t = node.inputs[0].type, node.inputs[1].type
    out = node.outputs[0].type
    dt = out.dtype
    if not has_gpu_type(dt) or dt.kind == "bool":
        raise Unsupported(f"MatMul of {dt.ir_name}")
    batch_out = [int(s) for s in out.shape[:-2]]
    ta, tb = bool(node.attrs.get("transpose_a")), bool(node.attrs.get("transpose_b"))
    m, n = int(out.shape[-2]), int(out.shape[-1])
    k = int(a_t.shape[-2] if ta else a_t.shape[-1])
    batch = int(np.prod(batch_out, dtype=np.int64)) if batch_out else 1
    if m * n * batch == 0:
        raise Unsupported("empty result")
    # row tiles on the grid's x dimension (up to 2**31 - 1 blocks: a product of a huge
    # batch), column tiles on y and the batch on z (up to 65535 each)
    if batch > MAX_GRID_YZ:
        raise Unsupported("more batch entries than a grid's z dimension")
    if -(-n // TILE) > MAX_GRID_YZ:
        raise Unsupported(f"more column tiles ({-(-n // TILE)}) than a grid's y dimension")
    # per batch dim of the result, how far each operand moves (0: broadcast along it)
    a_step = _batch_steps([int(s) for s in a_t.shape[:-2]], batch_out, m * k)
    b_step = _batch_steps([int(s) for s in b_t.shape[:-2]], batch_out, k * n)
    t = numba_type(dt)
    acc = t if dt.kind == "float" else "int64"
    # element (row i, col kk) of op(A) and (row kk, col j) of op(B), batch offset included
    a_at = (lambda i, kk: f"a[ab + ({kk}) * {m} + ({i})]") if ta else \
        (lambda i, kk: f"a[ab + ({i}) * {k} + ({kk})]")
    b_at = (lambda kk, j: f"b[bb + ({j}) * {k} + ({kk})]") if tb else \
        (lambda kk, j: f"b[bb + ({kk}) * {n} + ({j})]")
    w = Writer()
    w("@cuda.jit")
    tail = epilogue.params if epilogue is not None else ["c"]
    w(f"def {name}(a, b, {', '.join(tail)}):")
    with w.indent():
        w(f"sa = cuda.shared.array(({TILE}, {TILE}), {t})")
        w(f"sb = cuda.shared.array(({TILE}, {TILE}), {t})")
        w("tx = cuda.threadIdx.x")
        w("ty = cuda.threadIdx.y")
        w(f"j = cuda.blockIdx.y * {TILE} + tx")
        w(f"i = cuda.blockIdx.x * {TILE} + ty")
        w("z = cuda.blockIdx.z")
        coords = decompose(w, "z", batch_out, "zc") if batch_out else []
        w(f"ab = {offset_expr(coords, a_step)}")
        w(f"bb = {offset_expr(coords, b_step)}")
        w(f"total = {acc}(0)")
        w(f"for k0 in range(0, {k}, {TILE}):")
        with w.indent():
            # tile loads: A's tile is indexed [row ty][k tx], B's [k ty][col tx]; a
            # transposed A reads its contiguous dim along ty instead (still in bounds)
            w(f"if i < {m} and k0 + tx < {k}:")
            w(f"    sa[ty, tx] = {a_at('i', 'k0 + tx')}")
            w("else:")
            w(f"    sa[ty, tx] = {t}(0)")
            w(f"if j < {n} and k0 + ty < {k}:")
            w(f"    sb[ty, tx] = {b_at('k0 + ty', 'j')}")
            w("else:")
            w(f"    sb[ty, tx] = {t}(0)")
            w("cuda.syncthreads()")
            w(f"for kk in range({TILE}):")
            w(f"    total = {acc}(total + {acc}(sa[ty, kk]) * {acc}(sb[kk, tx]))")
            w("cuda.syncthreads()")
        w(f"if i < {m} and j < {n}:")
        if epilogue is not None:
            with w.indent():
                w(f"o = z * {m * n} + i * {n} + j")
                w(f"pv = {t}(total)")
                epilogue.store(w, "pv", "o", "j")
        else:
            at = f"c[z * {m * n} + i * {n} + j]"
            w(f"    {at} = {t}({at} + {t}(total))" if accumulate else f"    {at} = {t}(total)")
    grid = (-(-m // TILE), -(-n // TILE), batch)
    types = [t, t, *(epilogue.types if epilogue is not None else [t])]
    return Kernel(name, module(w), types, grid, (TILE, TILE), False,
                  2 * TILE * TILE * dt.np.itemsize)


__all__ = ["TILE", "matmul_kernel"]
