"""Grouping side effects: `no_op` and `group` (an op that runs after all of its inputs)."""

from __future__ import annotations

from typing import Any

from ..compiler.ir import Node
from .building import apply_op
from .context import control_dependencies, current_builder


def no_op(name: str | None = None) -> Node | None:
    """An op that does nothing (useful with `control_dependencies`)."""
    apply_op("NoOp", [], name=name)
    b = current_builder()
    return b.graph.nodes[-1] if b is not None else None


def group(*inputs: Any, name: str | None = None) -> Node | None:
    """An op that completes when every op or tensor in `inputs` has run; returns the op
    (None outside a graph, where everything has already run)."""
    deps: list[Any] = []
    for x in inputs:
        if isinstance(x, (list, tuple)):
            deps.extend(x)
        elif x is not None:
            deps.append(x)
    if current_builder() is None:
        return None
    with control_dependencies(deps):
        return no_op(name=name or "group")
