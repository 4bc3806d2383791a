"""Softmax, LogSoftmax and the softmax cross entropies, one block per row of classes.

A block finds the row's maximum and the sum of ``exp(x - max)`` with two shared-memory
tree reductions (`reductions.block_tree`; the sum in float64), then writes its outputs
from ``log_p = x - max - log(sum)``: the same stable formulas as the reference kernels,
one read of the row per pass. The cross entropies reduce the last axis (the classes);
Softmax and LogSoftmax take any axis (its elements then lie a fixed stride apart).
"""

from __future__ import annotations

import numpy as np

from ...compiler.dtypes import float64
from ...compiler.ir import Node
from .fused import Unsupported
from .reductions import Accumulator, block_tree, shared_decl
from .source import Kernel, Writer, has_gpu_type, module, numba_type, pow2_block

# status codes of the sparse cross entropy
STATUS_BAD_LABEL = 1


def softmax_kernel(node: Node, name: str) -> Kernel:
    """The kernel of Softmax, LogSoftmax, SoftmaxCrossEntropyWithLogits or
    SparseSoftmaxCrossEntropyWithLogits `node`. Raises `Unsupported`."""
    logits = node.inputs[0].type
    dt = logits.dtype
    if dt.kind != "float" or not has_gpu_type(dt):
        raise Unsupported(f"{node.op} of {dt.ir_name}")
    shape = [int(s) for s in logits.shape]
    if not shape:
        raise Unsupported(f"{node.op} of a scalar")
    axis = len(shape) - 1
    if node.op in ("Softmax", "LogSoftmax"):
        axis = int(node.attrs.get("axis", -1)) % len(shape)
    classes = shape[axis]
    inner = int(np.prod(shape[axis + 1:], dtype=np.int64))  # the classes' stride
    rows = int(np.prod(shape[:axis], dtype=np.int64)) * inner
    if rows * classes == 0:
        raise Unsupported("empty logits")

    def at(j: str) -> str:
        """Where class `j` of the current row is."""
        return f"base + {j}" if inner == 1 else f"base + {j} * {inner}"

    xj = at("j")
    t = numba_type(dt)
    block = pow2_block(classes)
    mx = Accumulator("Max", dt, dt)
    total = Accumulator("Sum", dt, float64)
    sparse = node.op == "SparseSoftmaxCrossEntropyWithLogits"
    dense = node.op == "SoftmaxCrossEntropyWithLogits"
    if node.op in ("Softmax", "LogSoftmax"):
        params, types = ["x", "out"], [t, t]
    elif dense:
        params, types = ["x", "y", "loss", "backprop"], [t, t, t, t]
    else:
        params = ["x", "labels", "loss", "backprop", "status"]
        types = [t, numba_type(node.inputs[1].type.dtype), t, t, "int32"]
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}({', '.join(params)}):")
    with w.indent():
        w(shared_decl("shm", mx, block))
        w(shared_decl("shs", total, block))
        if dense:
            w(shared_decl("shl", total, block))
        w("tid = cuda.threadIdx.x")
        w(f"for row in range(cuda.blockIdx.x, {rows}, cuda.gridDim.x):")
        with w.indent():
            if inner == 1:
                w(f"base = row * {classes}")
            else:  # rows are (outer, inner) pairs; classes lie `inner` apart
                w(f"base = (row // {inner}) * {classes * inner} + row % {inner}")
            w(f"m = {mx.init()}")
            w(f"for j in range(tid, {classes}, {block}):")
            w(f"    m = {mx.combine('m', f'x[{xj}]')}")
            block_tree(w, [(mx, "m", "shm")], block)
            w("top = shm[0]")
            w("s = float64(0)")
            w(f"for j in range(tid, {classes}, {block}):")
            w(f"    s += float64({t}(math.exp(x[{xj}] - top)))")
            block_tree(w, [(total, "s", "shs")], block)
            w(f"lse = {t}(math.log(shs[0]))")
            if node.op == "Softmax":
                w(f"sm = {t}(shs[0])")
                w(f"for j in range(tid, {classes}, {block}):")
                w(f"    out[{xj}] = {t}({t}(math.exp(x[{xj}] - top)) / sm)")
            elif node.op == "LogSoftmax":
                w(f"for j in range(tid, {classes}, {block}):")
                w(f"    out[{xj}] = {t}(x[{xj}] - top - lse)")
            elif dense:
                w("part = float64(0)")
                w(f"for j in range(tid, {classes}, {block}):")
                w(f"    lp = {t}(x[{xj}] - top - lse)")
                w(f"    part += float64(y[{xj}]) * float64(lp)")
                w(f"    backprop[{xj}] = {t}({t}(math.exp(lp)) - y[{xj}])")
                block_tree(w, [(total, "part", "shl")], block)
                w("if tid == 0:")
                w(f"    loss[row] = {t}(-shl[0])")
            else:
                w("label = labels[row]")
                w(f"bad = label < 0 or label >= {classes}")
                w("if bad and tid == 0:")
                w(f"    status[0] = {STATUS_BAD_LABEL}")
                w(f"for j in range(tid, {classes}, {block}):")
                w(f"    lp = {t}(x[{xj}] - top - lse)")
                w(f"    one = {t}(1) if j == label else {t}(0)")
                w(f"    backprop[{xj}] = {t}({t}(math.exp(lp)) - one)")
                w("if tid == 0 and not bad:")
                w(f"    loss[row] = {t}(-{t}(x[{at('label')}] - top - lse))")
            w("cuda.syncthreads()")  # the shared arrays are reused by the next row
    shared = block * (dt.np.itemsize + 8 + (8 if dense else 0))
    return Kernel(name, module(w), types, (max(1, min(rows, 65535)),), (block,), sparse, shared)


def bad_label_message(node: Node) -> str:
    """The error of a label outside [0, classes) (the value is not reported back)."""
    classes = node.inputs[0].type.shape[-1]
    return f"received a label value which is outside the valid range of [0, {classes})"


__all__ = ["STATUS_BAD_LABEL", "bad_label_message", "softmax_kernel"]
