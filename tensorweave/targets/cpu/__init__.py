"""The cpu target: fused loop nests compiled through llvmlite, BLAS for matrix products.

The pipeline's ``fused`` stage (this target only) groups elementwise ops and the
reductions they feed into ``Fusion`` nodes; here each becomes one JIT-compiled native
kernel (`fused`, `codegen`, `elementwise`), MatMul calls BLAS (`blas`), and every other
op runs its reference kernel (`kernels` lists what is native). The graph runs on the
dataflow executor, like the reference target, with these per-node kernels.

Not yet (issue 4): one native function per partition (today every node is still
dispatched from Python), intra-op parallelism, output-buffer reuse, an on-disk compile
cache, ahead-of-time libraries, native conv/pooling/softmax-family ops and gradients.
"""

from __future__ import annotations

from typing import Any

from ...compiler.ir import Graph
from .kernels import kernel_provider, native_kernel, native_nodes, prepare_kernel

TARGET = "cpu"


def _register_with_executor() -> None:
    """Give the dataflow executor the cpu target's per-node kernels."""
    from ...runtime.dataflow import register_kernel_provider
    register_kernel_provider(TARGET, kernel_provider)


def compile_graph(graph: Graph, resources: Any = None) -> Any:
    """An executable for `graph` (already through the pipeline, ``fused`` included) on
    the cpu target: ``exe(*arrays) -> list of results``; one native function per step
    where the graph allows it (`executable.CpuExecutable`)."""
    from .executable import CpuExecutable
    return CpuExecutable(graph, resources)


__all__ = ["TARGET", "compile_graph", "kernel_provider", "native_kernel", "native_nodes",
           "prepare_kernel"]
