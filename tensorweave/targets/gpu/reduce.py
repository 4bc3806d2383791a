"""Reductions over any axes (those the ``fused`` stage leaves alone: ``Sum(x, axis=0)``
of a bias gradient, ``Mean`` over leading axes ...) and ArgMax/ArgMin.

One thread per output element walks the reduced elements in row-major order; for the
common reduction over leading axes, consecutive threads read consecutive addresses, so
the loads coalesce. When there are few outputs and many elements each (a bias gradient
summed over a large batch), one block per output shares the walk and combines in a
shared-memory tree instead. (Reductions over trailing axes are fused and use one block
per row, `fused`.)
"""

from __future__ import annotations

import numpy as np

from ...compiler.dtypes import bool_
from ...compiler.ir import Node
from .fused import Unsupported
from .reductions import REDUCTIONS, accumulator, block_tree, shared_decl
from .source import (
    Kernel,
    Writer,
    decompose,
    has_gpu_type,
    launch_1d,
    module,
    numba_type,
    offset_expr,
    pow2_block,
    row_major_strides,
)

# when a reduction gets one block per output instead of one thread (a heuristic, not
# measured on a GPU yet): at most this many outputs, at least this many elements each
BLOCK_REDUCE_MAX_OUTPUTS = 4096
BLOCK_REDUCE_MIN_COUNT = 64


def _axes(node: Node, attr: str) -> tuple[int, ...]:
    rank = node.inputs[0].type.rank
    axes = node.attrs.get(attr)
    if axes is None:
        return tuple(range(rank))
    if isinstance(axes, int):
        axes = (axes,)
    return tuple(sorted({a % rank for a in axes}))


def _split(shape: list[int], axes: tuple[int, ...]) -> tuple[list[int], list[int], list[int],
                                                             list[int]]:
    """Kept sizes and strides, reduced sizes and strides (in the input)."""
    strides = row_major_strides(shape)
    kept = [d for d in range(len(shape)) if d not in axes]
    return ([shape[d] for d in kept], [strides[d] for d in kept],
            [shape[d] for d in axes], [strides[d] for d in axes])


def reduce_kernel(node: Node, name: str) -> Kernel:
    """The kernel of reduction `node` (Sum, Mean, Max, Min, Prod, All, Any). Raises
    `Unsupported`."""
    if node.op not in REDUCTIONS:
        raise Unsupported(f"{node.op} is not a reduction")
    return _reduction(node.op, node, _axes(node, "axes"), name)


def reduce_to_like_kernel(node: Node, name: str) -> Kernel:
    """ReduceToLike (a broadcast gradient summed back to the shape of `like`) and
    BiasAddGrad (summed over all but the last axis): Sums over static axes."""
    grad = [int(s) for s in node.inputs[0].type.shape]
    if node.op == "BiasAddGrad":
        return _reduction("Sum", node, tuple(range(len(grad) - 1)), name)
    like = [int(s) for s in node.inputs[1].type.shape]
    lead = len(grad) - len(like)
    if lead < 0:
        raise Unsupported("like has more dims than grad")
    axes = list(range(lead))
    for i, d in enumerate(like):
        if d == 1 and grad[lead + i] != 1:
            axes.append(lead + i)
        elif d != grad[lead + i]:
            raise Unsupported("grad is not a broadcast of like (an error at run time)")
    # `like` only gives the shape: the kernel takes its buffer and never reads it
    return _reduction("Sum", node, tuple(axes), name, shape_donor=True)


def l2_loss_kernel(node: Node, name: str) -> Kernel:
    """L2Loss: sum(x * x) / 2 over every element (squares summed in float64)."""
    if node.inputs[0].type.dtype.kind != "float":
        raise Unsupported(f"L2Loss of {node.inputs[0].type.dtype.ir_name}")
    return _reduction("Sum", node, tuple(range(node.inputs[0].type.rank)), name,
                      square_half=True)


def _reduction(op: str, node: Node, axes: tuple[int, ...], name: str,
               shape_donor: bool = False, square_half: bool = False) -> Kernel:
    src = node.inputs[0].type
    out = node.outputs[0].type
    if not has_gpu_type(src.dtype):
        raise Unsupported(f"{node.op} of {src.dtype.ir_name}")
    shape = [int(s) for s in src.shape]
    ksz, kst, rsz, rst = _split(shape, axes)
    n_out = int(np.prod(ksz, dtype=np.int64))
    count = int(np.prod(rsz, dtype=np.int64))
    if n_out == 0 or count == 0:
        raise Unsupported("empty input or result")
    acc = accumulator(op, src.dtype)
    # few outputs, long reductions (a bias gradient: Sum over the batch of [4096, 10]):
    # one block per output, else one thread per output would walk `count` elements alone
    per_block = n_out <= BLOCK_REDUCE_MAX_OUTPUTS and count >= BLOCK_REDUCE_MIN_COUNT
    block = pow2_block(count) if per_block else 0
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(x, {'like, ' if shape_donor else ''}out):")
    with w.indent():
        if per_block:
            w(shared_decl("sh", acc, block))
            w("tid = cuda.threadIdx.x")
            w(f"for o in range(cuda.blockIdx.x, {n_out}, cuda.gridDim.x):")
        else:
            w(f"for o in range(cuda.grid(1), {n_out}, cuda.gridsize(1)):")
        with w.indent():
            base = offset_expr(decompose(w, "o", ksz, "k"), kst) if ksz else "0"
            w(f"base = {base}")
            w(f"a = {acc.init()}")
            w(f"for r in range(tid, {count}, {block}):" if per_block else
              f"for r in range({count}):")
            with w.indent():
                inner = offset_expr(decompose(w, "r", rsz, "q"), rst) if rsz else "0"
                w(f"e = {acc.convert(f'x[base + {inner}]')}")
                w(f"a = {acc.combine('a', 'e * e' if square_half else 'e')}")
            if per_block:
                block_tree(w, [(acc, "a", "sh")], block)
                w("if tid == 0:")
                w.depth += 1
            total = "sh[0]" if per_block else "a"
            total = f"{total} / 2.0" if square_half else total
            w(f"out[o] = {acc.finish(total, count, out.dtype)}")
            if per_block:
                w.depth -= 1
                w("cuda.syncthreads()")  # the shared array is reused by the next output
    if per_block:
        grid, blk = (max(1, min(n_out, 65535)),), (block,)
    else:
        grid, blk = launch_1d(n_out)
    types = [numba_type(src.dtype)]
    if shape_donor:
        types.append(numba_type(node.inputs[1].type.dtype))
    return Kernel(name, module(w), types + [numba_type(out.dtype)], grid, blk, False,
                  block * acc.acc.np.itemsize)


def arg_reduce_kernel(node: Node, name: str) -> Kernel:
    """The kernel of ArgMax/ArgMin `node`: the first extreme, the first NaN if any (as
    NumPy). Raises `Unsupported`."""
    src = node.inputs[0].type
    out = node.outputs[0].type
    if not has_gpu_type(src.dtype) or src.dtype is bool_ or src.rank == 0:
        raise Unsupported(f"{node.op} of {src.dtype.ir_name}[rank {src.rank}]")
    shape = [int(s) for s in src.shape]
    axes = _axes(node, "axis")
    ksz, kst, rsz, rst = _split(shape, axes)
    n_out = int(np.prod(ksz, dtype=np.int64))
    count, stride = rsz[0], rst[0]
    if n_out == 0 or count == 0:
        raise Unsupported("empty input or result")
    cmp = ">" if node.op == "ArgMax" else "<"
    is_float = src.dtype.kind == "float"
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(x, out):")
    with w.indent():
        w(f"for o in range(cuda.grid(1), {n_out}, cuda.gridsize(1)):")
        with w.indent():
            base = offset_expr(decompose(w, "o", ksz, "k"), kst) if ksz else "0"
            w(f"base = {base}")
            w("best = x[base]")
            w("at = 0")
            w(f"for r in range(1, {count}):")
            with w.indent():
                w(f"v = x[base + r * {stride}]")
                better = f"v {cmp} best"
                if is_float:  # once best is NaN it stays; a first NaN wins
                    better = f"best == best and ({better} or v != v)"
                w(f"if {better}:")
                w("    best = v")
                w("    at = r")
            w(f"out[o] = {numba_type(out.dtype)}(at)")
    grid, block = launch_1d(n_out)
    return Kernel(name, module(w), [numba_type(src.dtype), numba_type(out.dtype)], grid, block)


__all__ = ["arg_reduce_kernel", "l2_loss_kernel", "reduce_kernel", "reduce_to_like_kernel"]
