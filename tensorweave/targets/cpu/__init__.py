"""The cpu target: whole steps compiled through llvmlite into one native function.

`executable.CpuExecutable` is what `@tw.compile(target="cpu")` runs: per argument
shapes it plans the graph as one step (`step`) whose nodes are native lowerings
(`lowering`, `lowerings/`), fused loop nests (`fused`, `codegen`, `elementwise`) and BLAS
calls (`blas`), JIT-compiled and cached on disk (`jit`, `disk_cache`). Graphs a single
native step cannot run go to the dataflow executor with this target's per-node kernels
(`kernels`). `aot` writes the same code as a shared library callable from C.
"""

from __future__ import annotations

from typing import Any

from ...compiler.ir import Graph

TARGET = "cpu"

# the dataflow executor's per-node kernels, imported on first use: a step whose code and
# record come from the disk cache (`plan_cache`) never needs them
_KERNEL_NAMES = ("kernel_provider", "native_kernel", "native_nodes", "prepare_kernel")


def __getattr__(name: str) -> Any:
    if name in _KERNEL_NAMES:
        from . import kernels
        return getattr(kernels, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _register_with_executor() -> None:
    """Give the dataflow executor the cpu target's per-node kernels."""
    from ...runtime.dataflow import register_kernel_provider
    from .kernels import kernel_provider
    register_kernel_provider(TARGET, kernel_provider)


def compile_graph(graph: Graph, resources: Any = None) -> Any:
    """An executable for `graph` (already through the pipeline, ``fused`` included) on
    the cpu target: ``exe(*arrays) -> list of results``; one native function per step
    where the graph allows it (`executable.CpuExecutable`)."""
    from .executable import CpuExecutable
    return CpuExecutable(graph, resources)


__all__ = ["TARGET", "compile_graph", "kernel_provider", "native_kernel", "native_nodes",
           "prepare_kernel"]
