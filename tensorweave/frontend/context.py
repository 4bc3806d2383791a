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
        # TensorFlow 1's naming (v1 graphs): name scopes are made unique like op names,
        # and names are unique ignoring case (TensorFlow's ``Graph._names_in_use``: lower
        # case name -> times asked for); fetching by name depends on it
        self.tf1_naming = kind == "v1"
        self.names_in_use: dict[str, int] = {}
        # Device requests, innermost last: a spec string, None (clears what is below),
        # or a device function of the node being created (TensorFlow's device functions,
        # e.g. ``replica_device_setter``).
        self.device_stack: list[Any] = []
        self.control_stack: list[list[Node]] = []
        self.var_handles: dict[str, Value] = {}
        self.variables: dict[str, Any] = {}  # shared name -> Variable used in this graph
        self.last_stateful: dict[Any, Node] = {}
        self.side_effect_nodes: list[Node] = []

    def scoped_name(self, name: str) -> str:
        return "/".join([*self.name_scopes, name]) if self.name_scopes else name

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """`name` under the current name scope, made unique as TensorFlow's
        ``Graph.unique_name``: the first ``a`` is ``a``, the next ``a_1``, ``a_2`` (skipping
        any taken, ignoring case); a name ending in ``/`` is taken exactly (the name
        scope it closes). Outside v1 graphs only the scope is added: the IR graph makes
        node names unique."""
        if name.endswith("/"):
            exact = name[:-1]
            if self.tf1_naming and mark_as_used:
                key = exact.lower()
                self.names_in_use[key] = max(self.names_in_use.get(key, 0), 1)
            return exact
        name = self.scoped_name(name)
        if not self.tf1_naming:
            return name
        key = name.lower()
        i = self.names_in_use.get(key, 0)
        if mark_as_used:
            self.names_in_use[key] = i + 1
        if i == 0:
            return name
        base_key = key
        while key in self.names_in_use:
            key = f"{base_key}_{i}"
            i += 1
        if mark_as_used:
            self.names_in_use[key] = 1
        return f"{name}_{i - 1}"

    @property
    def device(self) -> str | None:
        """The requested device string of new nodes, ignoring device functions (use
        `device_for` with the node when the stack may hold them)."""
        top = next((d for d in reversed(self.device_stack) if not callable(d)), None)
        return top if isinstance(top, str) else None

    @property
    def has_device_functions(self) -> bool:
        """Whether a device function applies to new nodes (none cleared by a None)."""
        for d in reversed(self.device_stack):
            if d is None:
                return False
            if callable(d):
                return True
        return False

    def device_for(self, node: Node) -> str | None:
        """The device request of a new `node`, as TensorFlow applies its device stack:
        innermost scope first, each outer string filling only the fields still unset,
        and each device function called on the node with the request of the scopes
        inside it (``node.device``), its answer replacing that request."""
        from ..runtime.devices import DeviceSpec
        current: str | None = None
        for entry in reversed(self.device_stack):
            if entry is None:
                # clears the scopes outside it: their device functions are not called (a
                # strategy's state, e.g. round robin's next task, must not count it)
                break
            if callable(entry):
                node.device = current
                answer = entry(node)
                if answer is not None:
                    current = DeviceSpec.from_string(answer).to_string()
                continue
            entry = getattr(entry, "given", entry)  # (the scope's own spec: _Request)
            current = (DeviceSpec.from_string(entry).merge(current).to_string()
                       if current else DeviceSpec.from_string(entry).to_string())
        return current

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
def name_scope(name: str | None) -> Iterator[str]:
    """Prefix the names of ops created in the block with ``name/``; yields the scope,
    ``outer/name/``.

    In v1 graphs, as TensorFlow 1's ``Graph.name_scope``: the scope name is made unique
    (a second ``name_scope("s")`` is ``s_1/``), a name ending in ``/`` re-enters that
    scope exactly (an absolute name: what a first ``with tf.name_scope("s") as scope``
    gave), and None or ``""`` is the root scope."""
    b = current_builder()
    if b is None:
        yield name
        return
    if b.tf1_naming:
        if not name:
            stack, scope = [], ""
        elif name.endswith("/"):
            stack, scope = [name[:-1]], name
        else:
            unique = b.unique_name(name)
            stack, scope = [unique], f"{unique}/"
        saved, b.name_scopes = b.name_scopes, stack
        try:
            yield scope
        finally:
            b.name_scopes = saved
        return
    if not name:  # (a scope that adds nothing)
        yield b.scoped_name("")
        return
    b.name_scopes.append(name.rstrip("/"))
    try:
        yield b.scoped_name("")
    finally:
        b.name_scopes.pop()


class _Request(str):
    """A device scope's request merged with the scopes outside it (what `device` gives
    nodes), remembering the spec the scope itself gave (`given`): `device_for` applies
    the scopes one by one around device functions, as TensorFlow does."""

    given: str

    def __new__(cls, merged: str, given: str) -> _Request:
        request = super().__new__(cls, merged)
        request.given = given
        return request


@contextlib.contextmanager
def device(spec: Any) -> Iterator[None]:
    """Request that ops created in the block run on device `spec` (e.g. ``"/cpu:0"``).

    Nested scopes merge, the inner one's fields winning: ``/job:worker`` around
    ``/gpu:0`` requests ``/job:worker/device:GPU:0``. ``None`` clears the request. A
    callable is a *device function* (TensorFlow's): called with each node created in the
    block (``node.op`` is its op name, ``node.device`` the request so far), it returns
    the node's device or None (e.g. ``tw.train.replica_device_setter(...)``)."""
    b = current_builder()
    if b is None:
        yield
        return
    from ..runtime.devices import DeviceSpec
    if callable(spec):
        b.device_stack.append(spec)
        try:
            yield
        finally:
            b.device_stack.pop()
        return
    parsed = DeviceSpec.from_string(spec)  # a bad name fails here, at the user's line
    outer = b.device
    if spec is not None and outer:
        spec = _Request(DeviceSpec.from_string(outer).merge(parsed).to_string(), spec)
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


@contextlib.contextmanager
def colocate_with(op: Any) -> Iterator[None]:
    """Place the ops created in the block on the same device as `op` (a node, a tensor or
    a variable), whatever the cost model would choose. Recorded as the private attribute
    ``_colocate_with`` (node names) that the placement pass reads."""
    b = current_builder()
    if b is None or op is None:
        yield
        return
    target = _colocation_target(op)
    start = len(b.graph.nodes)
    # As in TensorFlow, device scopes and functions outside the block do not apply to
    # the colocated ops: the colocation alone decides their device.
    b.device_stack.append(None)
    try:
        yield
    finally:
        b.device_stack.pop()
        for n in b.graph.nodes[start:]:
            if n is not target:
                names = tuple(n.attrs.get("_colocate_with", ()))
                n.attrs["_colocate_with"] = names if target.name in names else (*names,
                                                                                 target.name)


def _colocation_target(op: Any) -> Node:
    if hasattr(op, "handle") and hasattr(op, "shared_name"):  # a tw.Variable
        op = op.handle()
    node = op if isinstance(op, Node) else getattr(op, "producer", None)
    if node is None and not isinstance(op, Value):
        node = getattr(op, "op", None)
    if not isinstance(node, Node):
        raise TypeError(f"colocate_with expects an op, a tensor or a variable made by an op "
                        f"of this graph, got {op!r}")
    return node
