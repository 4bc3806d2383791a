"""TensorFlow 1's ``Session.partial_run_setup`` / ``Session.partial_run``: one step run in
pieces, feeds given as they become known, fetches taken as they become computable.

TensorFlow runs each op of the step at most once. Here each piece is a ``Session.run``
whose feeds are everything fed so far plus every tensor fetched so far, so what earlier
pieces fetched is never recomputed; what they computed without fetching is recomputed if
a later piece needs it. That is the same value for pure ops; for an op with state or side
effects (random numbers, variable updates, queues, prints, ``tf.py_func``) it would not
be, so a piece that would run such an op a second time is an error naming it (fetch its
result in the earlier piece instead), never a second, different draw.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from ...compiler import ir
from ...compiler.registry import get_op
from ...errors import InvalidArgumentError, UnimplementedError
from ...frontend import nest
from ...frontend.tensor import Tensor
from ...passes.prune import extract_subgraph

# Stateful ops whose second run changes nothing: running them again is harmless.
_HARMLESS = frozenset({"NoOp", "ReadVariable", "VarIsInitialized", "If", "While"})
_WRITES = ("Assign", "ResourceScatter", "Restore")

_handles = itertools.count()


@dataclass
class _State:
    fetches: dict[int, Any]            # id -> ir.Value / ir.Node allowed as fetches
    feeds: dict[int, ir.Value]         # id -> ir.Value allowed as feeds
    fed: dict[Tensor, Any] = field(default_factory=dict)        # fed so far
    computed: dict[Tensor, Any] = field(default_factory=dict)   # fetched so far
    done: set[int] = field(default_factory=set)                 # ids fetched or fed
    ran: dict[str, str] = field(default_factory=dict)           # stateful node name -> op
    wrote: bool = False                                         # a variable was updated


def _side_effects(node: ir.Node) -> bool:
    """Whether running `node` twice differs from running it once."""
    if node.op in _HARMLESS:
        return any(_side_effects(n) for r in node.regions for n in r.nodes)
    try:
        return get_op(node.op).stateful
    except Exception:  # an op this process does not know: assume the worst
        return True


def _reads(node: ir.Node) -> bool:
    """Whether `node` reads a variable (itself or in its regions): its second run gives
    another value once something was written."""
    return node.op == "ReadVariable" or any(_reads(n) for r in node.regions for n in r.nodes)


def setup(session: Any, fetches: Any, feeds: Any = None) -> str:
    """Start a partial run of `fetches` with `feeds` to be fed; its handle."""
    allowed: dict[int, Any] = {}
    for leaf in nest.flatten(fetches)[0]:
        _, x = session._resolve_fetch(leaf)
        allowed[id(x)] = x
    fed: dict[int, ir.Value] = {}
    for key in nest.flatten(feeds or [])[0]:
        t = session.graph.get_tensor_by_name(key) if isinstance(key, str) else key
        if not isinstance(t, Tensor) or t.value.graph is not session.graph.ir:
            raise InvalidArgumentError(f"partial_run_setup: cannot feed {key!r}: not a "
                                       f"tensor of this graph")
        fed[id(t.value)] = t.value
    handle = f"partial_run_{next(_handles)}"
    session.__dict__.setdefault("_partial_runs", {})[handle] = _State(allowed, fed)
    return handle


def run(session: Any, handle: str, fetches: Any, feed_dict: dict | None = None) -> Any:
    """The next piece of partial run `handle` (see the module docstring)."""
    state = session.__dict__.get("_partial_runs", {}).get(handle)
    if state is None:
        raise InvalidArgumentError("Must run 'setup' before performing partial runs!")
    new_feeds: dict[Tensor, Any] = {}
    for key, value in (feed_dict or {}).items():
        t = session.graph.get_tensor_by_name(key) if isinstance(key, str) else key
        if not isinstance(t, Tensor) or id(t.value) not in state.feeds:
            name = getattr(t, "name", key)
            raise InvalidArgumentError(f"The feed {name} was not specified in "
                                       f"partial_run_setup.")
        if id(t.value) in state.done:
            raise InvalidArgumentError(f"The feed {t.name} has already been fed.")
        new_feeds[t] = value
    leaves = nest.flatten(fetches)[0]
    resolved = [session._resolve_fetch(leaf) for leaf in leaves]
    for leaf, (_, x) in zip(leaves, resolved):
        name = getattr(leaf, "name", leaf)
        if id(x) not in state.fetches:
            raise InvalidArgumentError(f"The fetch {name} was not specified in "
                                       f"partial_run_setup.")
        if id(x) in state.done:
            raise InvalidArgumentError(f"The fetch {name} has already been fetched.")

    feeds = {**state.fed, **new_feeds, **state.computed}
    values = [x for k, x in resolved if k == "value"]
    targets = [x for k, x in resolved if k == "op"]
    sub = extract_subgraph(session.graph.ir, values, targets,
                           [t.value for t in feeds], name="partial_run")
    effects = {n.name: n.op for n in sub.nodes if _side_effects(n)}
    writes = any(op.startswith(_WRITES) for op in effects.values())
    # reads (and loops or conds holding one) are not effects, but rerun after a write
    # they see another value than the one their first run gave
    reads = {n.name: n.op for n in sub.nodes if n.name not in effects and _reads(n)}
    for name, op in {**effects, **reads}.items():
        again = name in state.ran and (name not in reads or state.wrote or writes)
        if again:
            raise UnimplementedError(
                f"{op} '{name}' ran in an earlier partial_run of this handle "
                f"and this one needs it again; tensorweave would run it a second time "
                f"(TensorFlow runs it once): fetch what you need from it in the earlier "
                f"call (list it in partial_run_setup)", op="Session.partial_run")
    result = session.run(fetches, feeds)
    state.ran.update(effects)
    state.ran.update(reads)
    state.wrote = state.wrote or writes
    state.fed.update(new_feeds)
    state.done.update(id(t.value) for t in new_feeds)
    flat = nest.flatten(result)[0] if not isinstance(fetches, (Tensor, ir.Node, str)) \
        else [result]
    for leaf, (kind, x), value in zip(leaves, resolved, flat):
        state.done.add(id(x))
        tensor = session.graph.get_tensor_by_name(leaf) if isinstance(leaf, str) else leaf
        if kind == "value" and isinstance(tensor, Tensor):
            state.computed[tensor] = value  # fed to later pieces: never computed again
    return result
