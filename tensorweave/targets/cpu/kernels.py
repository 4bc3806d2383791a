"""Per-node kernels of the cpu target.

`prepare_kernel(node)` is the cpu target's kernel provider for the dataflow executor
(`tensorweave.runtime.dataflow`): it returns a callable
``kernel(inputs, resources, counters, step) -> outputs`` for one node.

Native today:
- ``Fusion`` nodes (made by the ``fused`` stage), one JIT-compiled loop nest each
  (`fused.FusedKernel`), in f32, f64, i8, i16, i32, i64, u8 and bool, of these ops:
  Neg, Abs, Square, Sign, Relu, Exp, Log, Log1p, Expm1, Erf, Sqrt, Rsqrt, Sin, Cos, Tanh, Sigmoid,
  Floor, Ceil, Reciprocal, LogicalNot, Tan, Asin, Acos, Atan, Sinh, Cosh, Round, IsNan,
  IsInf, IsFinite, Add, Sub, Mul, Div, FloorDiv, FloorMod, Pow, Atan2,
  Maximum, Minimum, SquaredDifference, Equal, NotEqual, Less, LessEqual, Greater,
  GreaterEqual, LogicalAnd, LogicalOr, BitwiseAnd, BitwiseOr, BitwiseXor, Invert, LeftShift,
  RightShift, AddN, Select, Cast, Identity, StopGradient,
  BiasAdd, ZerosLike, OnesLike, BroadcastTo (`elementwise.EMITTERS`), and the
  reductions Sum, Mean, Max, Min, Prod, All, Any over trailing axes (`codegen`);
- ``MatMul`` in f32/f64 through SciPy's BLAS (sgemm/dgemm by function pointer) and in
  i8/i16/i32/i64/u8 through a generated loop kernel, batched and transposed
  (`blas.MatMulKernel`);
- ``FusedConv2D`` and ``FusedMatMul`` (stage ``epilogue``) with static shapes, their
  native lowering compiled on its own (`lowering.compile_node`).

Every other node runs its reference (NumPy) kernel, and so does a Fusion node whose
region the code generators cannot handle (f16/bf16, ops without an emitter).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...compiler.ir import Graph, Node
from ...compiler.types import TensorType, format_shape
from ...errors import InternalError, UnimplementedError
from ..reference.executor import PreparedKernel, check_arguments
from .blas import MatMulKernel, supports_matmul
from .fused import try_fused_kernel

Kernel = Callable[..., list[Any]]


def native_kernel(node: Node) -> Kernel | None:
    """The native kernel of `node`, or None when it has none (see the module docstring)."""
    if node.op == "Fusion":
        return try_fused_kernel(node)
    if node.op in ("FusedConv2D", "FusedMatMul"):
        from .lowering import compile_node, find_lowering
        if find_lowering(node) is None:  # (unknown shapes: the region's reference kernels)
            return None
        try:
            return compile_node(node)
        except UnimplementedError:
            return None
    if node.op == "MatMul":
        t = node.outputs[0].type
        if isinstance(t, TensorType) and supports_matmul(t.dtype):
            try:
                return MatMulKernel(node)
            except UnimplementedError:
                return None
    return None


class CheckedKernel:
    """Checks a native kernel's outputs against the IR types (debug mode, `TW_VERIFY`)."""

    def __init__(self, node: Node, kernel: Kernel) -> None:
        self.node = node
        self.kernel = kernel

    def __call__(self, inputs: Sequence[Any], *rest: Any) -> list[Any]:
        outs = self.kernel(inputs, *rest)
        for value, out in zip(self.node.outputs, outs):
            t = value.type
            arr = np.asarray(out)
            if arr.dtype != t.dtype.np or not t.accepts(t.dtype, arr.shape):
                raise InternalError(f"cpu kernel produced {arr.dtype}{format_shape(arr.shape)} "
                                    f"for output {value.index}, the IR says {t}",
                                    **self.node.error_context())
        return outs


def prepare_kernel(node: Node) -> Kernel:
    """The cpu target's kernel for one node: native where possible, else reference."""
    kernel = native_kernel(node)
    if kernel is None:
        return PreparedKernel(node)
    if os.environ.get("TW_VERIFY", "") not in ("", "0"):
        return CheckedKernel(node, kernel)
    return kernel


def kernel_provider() -> tuple[Callable[[Node], Kernel], Callable]:
    """What the dataflow executor asks a target for: (prepare, check_arguments)."""
    return prepare_kernel, check_arguments


def native_nodes(graph: Graph) -> list[Node]:
    """The nodes of `graph` that run native code on the cpu target (for tests and
    reports)."""
    return [n for n in graph.nodes if native_kernel(n) is not None]
