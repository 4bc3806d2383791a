"""Which node becomes which kernel: one table keyed by op name (as the cpu target's
lowerings), plus the ops that need no kernel at all (views of their input's buffer).

`lower(node, name)` returns a `Lowered`: the generated kernel, and for kernels that can
fail, how to turn their status into an error message and the op to blame (a Fusion's
status names the member op, with its line). Nodes with no entry, or whose generator
raises `Unsupported`, run on the host through their reference kernel; the reason is
kept so ``native_reason``-style reports can say why.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ...compiler.ir import Node
from ..cpu.fused import FusedKernel
from .epilogue import GpuEpilogue
from .fused import Unsupported, fused_kernel
from .indexed import index_table, indexed_kernel, pad_grad_kernel, pad_grad_tables
from .layout import (
    bad_gather_nd_message,
    bad_index_message,
    gather_kernel,
    gather_nd_kernel,
    transpose_kernel,
)
from .matmul import matmul_kernel
from .movement import (
    broadcast_kernel,
    concat_kernel,
    one_hot_kernel,
    pad_kernel,
    slice_kernel,
    split_kernel,
    tile_kernel,
)
from .random import STATEFUL, STATELESS, random_kernel
from .reduce import arg_reduce_kernel, l2_loss_kernel, reduce_kernel, reduce_to_like_kernel
from .reductions import REDUCTIONS
from .rows import bad_row_message, update_row_kernel
from .scatter import bad_segment_message, segment_sum_kernel, zero_kernel
from .softmax import bad_label_message, softmax_kernel
from .source import Kernel
from .window import (
    avg_pool_grad_kernel,
    conv2d_backprop_filter_kernel,
    conv2d_backprop_input_kernel,
    conv2d_kernel,
    max_pool_grad_kernel,
    pool_kernel,
)

# ops whose result is their first input's buffer, reinterpreted (row-major, same bytes)
VIEW_OPS = frozenset({"Identity", "StopGradient", "Reshape", "ReshapeLike", "ExpandDims",
                      "Squeeze"})

# (status code, then the kernel's detail entries, if any) -> (message, node to blame)
ErrorFn = Callable[..., tuple[str, Node]]


@dataclass
class Lowered:
    """A node's kernel and, when it can fail, the decoder of its status; `init` kernels
    run first, on the node's outputs only (zeroing what the kernel accumulates into);
    `tables` are constants the kernel reads after the node's inputs (index tables);
    `call_index`: the kernel's first parameter is a one-element uint32 array holding the
    node's call index, written by the step before each launch (stateful random ops)."""

    kernel: Kernel
    errors: ErrorFn | None = None
    init: list[Kernel] = field(default_factory=list)
    tables: list[np.ndarray] = field(default_factory=list)
    call_index: bool = False


def _fusion(node: Node, name: str) -> Lowered:
    kernel = fused_kernel(node, name)
    decode = None
    if kernel.can_fail:
        fk = FusedKernel(node)
        decode = fk.status_error
    return Lowered(kernel, decode)


def _fused_product(node: Node, name: str) -> Lowered:
    """A FusedMatMul / FusedConv2D (stage ``epilogue``): the product's kernel applying
    the elementwise cluster in its store (`epilogue.py`)."""
    epilogue = GpuEpilogue(node)
    head = epilogue.head
    if head.op == "MatMul":
        return Lowered(matmul_kernel(head, name, epilogue=epilogue))
    return Lowered(conv2d_kernel(head, name, epilogue=epilogue))


def _plain(gen: Callable[[Node, str], Kernel]) -> Callable[[Node, str], Lowered]:
    def lower(node: Node, name: str) -> Lowered:
        return Lowered(gen(node, name))
    return lower


def _softmax(node: Node, name: str) -> Lowered:
    kernel = softmax_kernel(node, name)
    if not kernel.can_fail:
        return Lowered(kernel)
    return Lowered(kernel, lambda status: (bad_label_message(node), node))


def _segment_sum(node: Node, name: str) -> Lowered:
    kernel = segment_sum_kernel(node, name)
    return Lowered(kernel, lambda status: (bad_segment_message(node), node),
                   [zero_kernel(node, name + "_zero")])


def _indexed(node: Node, name: str) -> Lowered:
    table = index_table(node)
    return Lowered(indexed_kernel(node, name, table), tables=[table])


def _pad(node: Node, name: str) -> Lowered:
    if node.attrs.get("mode", "CONSTANT") == "CONSTANT":
        return Lowered(pad_kernel(node, name))
    return _indexed(node, name)


def _pad_grad(node: Node, name: str) -> Lowered:
    offsets, sources = pad_grad_tables(node)
    return Lowered(pad_grad_kernel(node, name, offsets, sources), tables=[offsets, sources])


def _gather_nd(node: Node, name: str) -> Lowered:
    return Lowered(gather_nd_kernel(node, name),
                   lambda status, *coords: (bad_gather_nd_message(node, status, coords), node))


def _random(node: Node, name: str) -> Lowered:
    return Lowered(random_kernel(node, name), call_index=node.op in STATEFUL)


def _update_row(node: Node, name: str) -> Lowered:
    return Lowered(update_row_kernel(node, name),
                   lambda status, index: (bad_row_message(node, index), node))


def _gather(node: Node, name: str) -> Lowered:
    return Lowered(gather_kernel(node, name), lambda status: (bad_index_message(node), node))


GENERATORS: dict[str, Callable[[Node, str], Lowered]] = {
    "Fusion": _fusion,
    "FusedMatMul": _fused_product,
    "FusedConv2D": _fused_product,
    "MatMul": _plain(matmul_kernel),
    "Transpose": _plain(transpose_kernel),
    "Gather": _gather,
    "GatherNd": _gather_nd,
    "DynamicUpdateRow": _update_row,
    "Concat": _plain(concat_kernel),
    "Pack": _plain(concat_kernel),
    "Slice": _plain(slice_kernel),
    "Tile": _plain(tile_kernel),
    "BroadcastTo": _plain(broadcast_kernel),
    "Pad": _pad,
    "PadGrad": _pad_grad,
    "StridedSlice": _indexed,
    "StridedSliceGrad": _indexed,
    "OneHot": _plain(one_hot_kernel),
    "Split": _plain(split_kernel),
    "Unpack": _plain(split_kernel),
    "UnsortedSegmentSum": _segment_sum,
    "Conv2D": _plain(conv2d_kernel),
    "Conv2DBackpropInput": _plain(conv2d_backprop_input_kernel),
    "Conv2DBackpropFilter": _plain(conv2d_backprop_filter_kernel),
    "MaxPool": _plain(pool_kernel),
    "AvgPool": _plain(pool_kernel),
    "MaxPoolGrad": _plain(max_pool_grad_kernel),
    "AvgPoolGrad": _plain(avg_pool_grad_kernel),
    "ArgMax": _plain(arg_reduce_kernel),
    "ArgMin": _plain(arg_reduce_kernel),
    **{op: _plain(reduce_kernel) for op in REDUCTIONS},
    "ReduceToLike": _plain(reduce_to_like_kernel),
    "BiasAddGrad": _plain(reduce_to_like_kernel),
    "L2Loss": _plain(l2_loss_kernel),
    **{op: _softmax for op in ("Softmax", "LogSoftmax", "SoftmaxCrossEntropyWithLogits",
                               "SparseSoftmaxCrossEntropyWithLogits")},
    **{op: _random for op in STATEFUL | STATELESS},
}


def kernel_name(node: Node, index: int) -> str:
    """A Python identifier for the kernel of `node`, unique within a step."""
    base = re.sub(r"\W", "_", node.name).strip("_") or node.op.lower()
    return f"k{index}_{base}"


def lower(node: Node, name: str) -> Lowered:
    """The kernel of `node` (static shapes). Raises `Unsupported` with the reason."""
    gen = GENERATORS.get(node.op)
    if gen is None:
        raise Unsupported(f"no GPU kernel for {node.op}")
    return gen(node, name)


__all__ = ["GENERATORS", "VIEW_OPS", "Lowered", "kernel_name", "lower"]
