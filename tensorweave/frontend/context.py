"""Where new ops go: the stack of graph builders, name scopes, device scopes and control
dependencies.

While a function is traced (or a v1 `Graph` is the default), a `GraphBuilder` is on this
thread's stack and every op function appends nodes to its graph. With no builder, op
functions run eagerly.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from ..compiler.ir import Graph, Node, Value


class GraphBuilder:
    """Builds one graph: holds the scopes and the bookkeeping that tracing needs.

    With `auto_control_deps` (traced functions, as in TensorFlow 2), stateful ops that touch
    the same resource are chained by control edges in program order.
    """

    def __init__(self, graph: Graph, *, auto_control_deps: bool = True,
                 kind: str = "function") -> None:
        self.graph = graph
        self.kind = kind
        self.auto_control_deps = auto_control_deps
        self.name_scopes: list[str] = []
        self.device_stack: list[str | None] = []
        self.control_stack: list[list[Node]] = []
        self.var_handles: dict[str, Value] = {}
        self.variables: dict[str, Any] = {}  # shared name -> Variable used in this graph
        self.last_stateful: dict[Any, Node] = {}
        self.side_effect_nodes: list[Node] = []

    def scoped_name(self, name: str) -> str:
        return "/".join([*self.name_scopes, name]) if self.name_scopes else name

    @property
    def device(self) -> str | None:
        return self.device_stack[-1] if self.device_stack else None

    def control_inputs(self) -> list[Node]:
        out: list[Node] = []
        for group in self.control_stack:
            out.extend(n for n in group if n not in out)
        return out


_state = threading.local()


def _stack() -> list[GraphBuilder]:
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    return stack


def current_builder() -> GraphBuilder | None:
    """The builder ops go to now, or None (eager)."""
    stack = _stack()
    return stack[-1] if stack else None


@contextlib.contextmanager
def building(builder: GraphBuilder | None) -> Iterator[GraphBuilder | None]:
    """Make `builder` current for the duration of the block (None: eager)."""
    stack = _stack()
    stack.append(builder)
    try:
        yield builder
    finally:
        stack.pop()


@contextlib.contextmanager
def name_scope(name: str) -> Iterator[str]:
    """Prefix the names of ops created in the block with ``name/``."""
    b = current_builder()
    if b is None:
        yield name
        return
    b.name_scopes.append(name.rstrip("/"))
    try:
        yield b.scoped_name("")
    finally:
        b.name_scopes.pop()


@contextlib.contextmanager
def device(spec: str | None) -> Iterator[None]:
    """Request that ops created in the block run on device `spec` (e.g. ``"/cpu:0"``)."""
    b = current_builder()
    if b is None:
        yield
        return
    b.device_stack.append(spec)
    try:
        yield
    finally:
        b.device_stack.pop()


@contextlib.contextmanager
def control_dependencies(deps: Any) -> Iterator[None]:
    """Ops created in the block run only after the ops (or tensors' producers) in `deps`."""
    b = current_builder()
    if b is None or deps is None:
        yield
        return
    nodes: list[Node] = []
    for d in deps:
        node = d if isinstance(d, Node) else getattr(d, "op", None)
        if isinstance(node, Node):
            nodes.append(node)
        elif not hasattr(d, "op"):
            raise TypeError(f"control_dependencies expects ops or tensors, got {d!r}")
    b.control_stack.append(nodes)
    try:
        yield
    finally:
        b.control_stack.pop()
