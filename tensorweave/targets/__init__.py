"""Code generators: each turns a graph (one partition) into something callable."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError

TARGETS = ("reference",)


def compile_for_target(graph: Any, target: str, resources: Any = None) -> Any:
    """Compile `graph` for `target` and return a callable ``exe(*arrays) -> list``."""
    if target == "reference":
        from .reference import ReferenceExecutable
        return ReferenceExecutable(graph, resources)
    raise CompileError(f"unknown target {target!r}; available: {', '.join(TARGETS)}")
