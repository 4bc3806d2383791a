"""Code generators: each turns a graph (one partition) into something callable."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError

TARGETS = ("reference", "cpu", "gpu")


def compile_for_target(graph: Any, target: str, resources: Any = None) -> Any:
    """Compile `graph` (the pipeline's output) for `target` and return a callable
    ``exe(*arrays) -> list`` that runs it with the dataflow executor, all devices at
    once. (`reference.ReferenceExecutable` stays the simple in-order oracle.)"""
    if target == "reference":
        from ..runtime.dataflow import DataflowExecutable
        return DataflowExecutable(graph, target, resources)
    if target == "cpu":
        from .cpu import compile_graph
        return compile_graph(graph, resources)
    if target == "gpu":
        from .gpu import compile_graph as compile_gpu
        return compile_gpu(graph, resources)
    raise CompileError(f"unknown target {target!r}; available: {', '.join(TARGETS)}")
