"""Static trip counts of While loops, for planning a loop as device launches.

A loop planned on the device runs its body's prepared launches a fixed number of times,
with no per-iteration download of the cond's flag, so the step planner must know that
number when it plans. `TripCounter` finds it exactly, by running the loop's *counter
slice* on the host at plan time with the reference kernels:

- the loop variables whose initial value is known at plan time (a constant, a small
  value computed from constants, or the final value of an earlier loop's counter: the
  gradient loop of a `tw.scan` counts down from the forward loop's iteration count) and
  whose next value the body computes from such variables and constants only, with pure
  ops (no variables, random draws or stacks);
- the cond must depend on those variables only (and pure ops).

The slice is then iterated as the reference `While` kernel does (cond, at most
``maximum_iterations`` times), which gives the trip count and the slice's final values
(known values for later loops). Anything else (a cond that reads a tensor computed on the
device, a stateful op in the cond) has no static trip count: the planner keeps such a
loop as a host call and says why.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ...compiler.ir import Graph, Node, Value
from ...compiler.types import TensorType

MAX_TRIPS = 1 << 16        # longer loops are not simulated at plan time
MAX_KNOWN_ELEMENTS = 1024  # values larger than this are not evaluated on the host


class NoTripCount(Exception):
    """The loop has no trip count known at plan time (the message says why)."""


def _pure(node: Node) -> bool:
    """Whether `node` computes its outputs from its inputs alone (no state, no effects)."""
    if node.op == "Fusion":
        return all(_pure(n) for r in node.regions for n in r.nodes)
    if node.regions or node.opdef.stateful:
        return False
    return all(isinstance(v.type, TensorType) for v in (*node.inputs, *node.outputs))


def _small(v: Value) -> bool:
    t = v.type
    return isinstance(t, TensorType) and t.is_fully_defined and \
        int(t.num_elements) <= MAX_KNOWN_ELEMENTS


class _Slice:
    """The nodes of `graph` that `wanted` depend on, in order, evaluated with the
    reference kernels on given argument values. `args` is the set of the graph's
    arguments the slice reads."""

    def __init__(self, graph: Graph, wanted: Iterable[Value]) -> None:
        need: set[Node] = set()
        self.args: set[Value] = set()
        stack = list(wanted)
        seen: set[Value] = set()
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            if v.producer is None:
                self.args.add(v)
                continue
            need.add(v.producer)
            stack.extend(v.producer.inputs)
        self.nodes = [n for n in graph.topological_order() if n in need]
        self.pure = all(_pure(n) for n in self.nodes)
        self._kernels: list | None = None

    def run(self, env: dict[Value, np.ndarray]) -> dict[Value, np.ndarray]:
        from ..reference.executor import PreparedKernel
        if self._kernels is None:
            self._kernels = [PreparedKernel(n) for n in self.nodes]
        env = dict(env)
        with np.errstate(all="ignore"):
            for node, kernel in zip(self.nodes, self._kernels):
                outs = kernel([env[v] for v in node.inputs], None, None)
                env.update(zip(node.outputs, (np.asarray(o) for o in outs)))
        return env


class TripCounter:
    """Trip counts of the While nodes of one graph, and the values known at plan time
    that they need (see the module docstring). Results are memoized per node/value."""

    def __init__(self) -> None:
        self._values: dict[Value, np.ndarray | None] = {}
        self._trips: dict[Node, tuple[int, dict[int, np.ndarray]] | str] = {}

    def value(self, v: Value) -> np.ndarray | None:
        """`v`'s value when it is known at plan time (small values only), else None."""
        if v in self._values:
            return self._values[v]
        self._values[v] = None  # (cycles cannot occur in a DAG; this guards re-entry)
        out = self._compute(v)
        self._values[v] = out
        return out

    def _compute(self, v: Value) -> np.ndarray | None:
        node = v.producer
        if node is None or not _small(v):
            return None
        if node.op == "Const":
            return np.asarray(node.attrs["value"], dtype=v.type.dtype.np).reshape(
                tuple(int(s) for s in v.type.shape))
        if node.op == "While":
            found = self._trips.get(node)
            if found is None:
                try:
                    self.trips(node)
                except NoTripCount:
                    return None
                found = self._trips[node]
            return found[1].get(v.index) if isinstance(found, tuple) else None
        if not _pure(node):
            return None
        ins = [self.value(x) for x in node.inputs]
        if any(x is None for x in ins):
            return None
        from ..reference.executor import PreparedKernel
        with np.errstate(all="ignore"):
            try:
                outs = PreparedKernel(node)(ins, None, None)
            except Exception:  # noqa: BLE001 - the step will report it when it runs
                return None
        for out, value in zip(node.outputs, outs):
            self._values[out] = np.asarray(value)
        return self._values[v]

    def trips(self, node: Node) -> int:
        """How many times While `node`'s body runs. Raises `NoTripCount`."""
        found = self._trips.get(node)
        if found is None:
            try:
                found = self._count(node)
            except NoTripCount as e:
                found = str(e)
            self._trips[node] = found
        if isinstance(found, str):
            raise NoTripCount(found)
        return found[0]

    def _count(self, node: Node) -> tuple[int, dict[int, np.ndarray]]:
        cond_g, body_g = node.regions
        init = {k: self.value(v) for k, v in enumerate(node.inputs)}
        known = {k for k, x in init.items() if x is not None}
        # the next value of each known variable: which variables it reads, whether pure
        slices = {k: _Slice(body_g, [body_g.results[k]]) for k in known}
        deps = {k: {a.index for a in s.args} for k, s in slices.items() if s.pure}
        known = set(deps)
        while True:  # drop the variables whose next value needs an unknown one
            kept = {k for k in known if deps[k] <= known}
            if kept == known:
                break
            known = kept
        cond = _Slice(cond_g, cond_g.results)
        if not cond.pure:
            raise NoTripCount("its cond has stateful ops")
        if not {a.index for a in cond.args} <= known:
            raise NoTripCount("its cond reads a value known only at run time")
        body = _Slice(body_g, [body_g.results[k] for k in sorted(known)])
        limit = int(node.attrs.get("maximum_iterations", -1))
        values = {k: init[k] for k in known}
        trips = 0
        while limit < 0 or trips < limit:
            env = cond.run({cond_g.args[k]: values[k] for k in known})
            if not bool(env[cond_g.results[0]]):
                break
            if trips >= MAX_TRIPS:
                raise NoTripCount(f"it runs more than {MAX_TRIPS} iterations")
            env = body.run({body_g.args[k]: values[k] for k in known})
            values = {k: env[body_g.results[k]] for k in known}
            trips += 1
        return trips, values


__all__ = ["MAX_TRIPS", "NoTripCount", "TripCounter"]
