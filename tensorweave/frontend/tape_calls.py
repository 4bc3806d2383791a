"""Calls of compiled functions while an eager `GradientTape` records: TensorFlow 2's
``with tf.GradientTape() as tape: loss = model(x)`` where ``model`` is a ``tf.function``.

The call runs compiled, as any other. An eager tape cannot see inside it, so the results
come out of one ``CustomGradient`` node (`custom_gradient`) whose inputs are the call's
eager tensor arguments and a read of every trainable variable the trace reads. When the
tape differentiates, that node's gradient traces the Python function once more, into
the tape's own graph, on those inputs, and differentiates it there: the forward pass is
recomputed op by op, which gives the same values only when the function is a pure
function of its inputs and variables. A trace with stateful ops (random numbers,
variable assignments, queues) would recompute different values, so such calls are
refused with an error naming the op, not differentiated wrongly; so is a gradient taken
after a variable the call read was assigned (the values it read at the call are kept to
check that).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.registry import get_op
from ..errors import UnimplementedError
from . import building, nest
from .building import convert_to_tensor, user_location
from .tensor import EagerTensor

# stateful ops that recompute to the same values (they only read, check or print)
_REPLAYABLE = frozenset({"VarHandle", "ReadVariable", "Assert", "Print", "NoOp",
                         "VarIsInitialized"})


def recording_tapes() -> list[Any]:
    """The GradientTapes recording eagerly on this thread."""
    from .tape import GradientTape
    return [o for o in building.eager_observers
            if isinstance(o, GradientTape) and o._mine()]


def call_recorded(function: Any, args: tuple, kwargs: dict, tapes: list[Any]) -> Any:
    """`function(*args, **kwargs)` while `tapes` record: differentiable through the call
    (module docstring)."""
    from .custom_gradient import with_gradient
    leaves, tree = nest.flatten((args, kwargs))
    xs_at = [i for i, x in enumerate(leaves) if isinstance(x, EagerTensor)]
    xs = [leaves[i] for i in xs_at]
    for tape in tapes:  # the compiled call itself runs unobserved
        tape._stop()
    try:
        cf = function.get_concrete_function(*args, **kwargs)
        used = [v for v in cf.variables if v.trainable and v.dtype.is_floating]
        followed = used or any(id(x) in tape._values for tape in tapes for x in xs)
        if followed:
            # refused before it runs: a refused call leaves the variables as they were
            _refuse_stateful(cf.graph, function)
        out = function(*args, **kwargs)
    finally:
        for tape in tapes:
            tape._start()
    if not followed:
        return out  # nothing the tapes follow flows in
    out_leaves, out_tree = nest.flatten(out)
    results = [i for i, y in enumerate(out_leaves) if isinstance(y, np.ndarray)]
    if not results:
        return out
    # what the call read: the gradient recomputes the call, reading the variables anew,
    # which gives this call's gradient only while they still hold these values
    read_at_call = [(v, v.numpy()) for v in cf.variables]
    where = str(user_location())

    def grad_fn(*dys: Any, variables: Any = None) -> Any:
        # inside the tape's graph: the recorded eager arguments stand for their values
        # there (`_TapeBuilder.lift_eager`); variables are read anew
        from .autodiff import sparse_gradients
        _refuse_changed(read_at_call, function, where)
        _refuse_retraced(function, args, kwargs, cf, where)
        traced = [convert_to_tensor(x) for x in xs]
        call_leaves = list(leaves)
        for i, t in zip(xs_at, traced):
            call_leaves[i] = t
        call_args, call_kwargs = nest.unflatten(tree, call_leaves)
        recomputed, _ = nest.flatten(function.python_function(*call_args, **call_kwargs))
        ys = [convert_to_tensor(recomputed[i]) for i in results]
        pairs = [(y, d) for y, d in zip(ys, dys) if y.dtype.is_floating]
        # (lookups of a variable keep their IndexedSlices, as outside a compiled call)
        grads = sparse_gradients([y for y, _ in pairs], [*traced, *used],
                                 grad_ys=[d for _, d in pairs]) if pairs else \
            [None] * (len(traced) + len(used))
        if not used:  # (the CustomGradient node then takes the input gradients only)
            return grads[:len(traced)]
        return grads[:len(traced)], grads[len(traced):]

    # (the variables are read eagerly here, so the tapes note the reads)
    outs = with_gradient(xs, used, [EagerTensor(out_leaves[i]) for i in results], grad_fn,
                         getattr(function, "name", "function"))
    for i, t in zip(results, outs):
        out_leaves[i] = t
    return nest.unflatten(out_tree, out_leaves)


def _refuse_stateful(graph: Any, function: Any) -> None:
    for node in _all_nodes(graph):
        if node.op in _REPLAYABLE or not get_op(node.op).stateful:
            continue
        where = f" ({node.loc})" if getattr(node, "loc", None) else ""
        raise UnimplementedError(
            f"{getattr(function, 'name', 'a compiled function')} was called while an eager "
            f"GradientTape records, and its trace has the stateful op {node.op} "
            f"'{node.name}'{where}: the tape differentiates a compiled call by recomputing "
            f"it, which would not reproduce that op's values. Take the gradient inside "
            f"the compiled function (a GradientTape or tw.gradients in it), or call the "
            f"Python function itself under the tape",
            location=str(user_location()))


def _refuse_changed(read_at_call: list[tuple[Any, np.ndarray]], function: Any,
                    where: str) -> None:
    for v, before in read_at_call:
        now = v.numpy()
        if now.shape != before.shape or now.tobytes() != before.tobytes():
            raise UnimplementedError(
                f"{getattr(function, 'name', 'a compiled function')} was called while an "
                f"eager GradientTape recorded, and the variable '{v.name}' it reads was "
                f"assigned after that call: the tape differentiates a compiled call by "
                f"recomputing it, which would use the new value and give another "
                f"function's gradient. Take the gradient before assigning the variable "
                f"(or call the Python function itself under the tape)", location=where)


def _refuse_retraced(function: Any, args: tuple, kwargs: dict, cf: Any, where: str) -> None:
    """The gradient re-runs the Python function: refuse when a fresh trace of it at the
    call's argument types differs from the trace the call ran (it reads Python state,
    e.g. a closed-over value, that changed since), which would give another function's
    gradient. Graphs without a fingerprint (`printer.graph_fingerprint`) are not
    checked."""
    from ..compiler.printer import graph_fingerprint
    from .function import TensorSpec
    before = graph_fingerprint(cf.graph)
    if before is None:
        return
    leaves, tree, names = function._bind(args, kwargs)
    tensor_idx, _, _ = function._classify(leaves, names)
    specs = [TensorSpec(a.type.shape, a.type.dtype, name=a.name) for a in cf.graph.args]
    if len(specs) != len(tensor_idx):
        return
    fresh = function._trace(leaves, tree, names, tensor_idx, specs, count=False)
    if graph_fingerprint(fresh.graph) != before:
        raise UnimplementedError(
            f"{getattr(function, 'name', 'a compiled function')} was called while an eager "
            f"GradientTape recorded, and tracing it again now gives another graph (it "
            f"reads Python state, such as a closed-over value, that changed after the "
            f"call): the tape differentiates a compiled call by recomputing it, which "
            f"would give another function's gradient. Take the gradient before changing "
            f"that state (or call the Python function itself under the tape)",
            location=where)


def _all_nodes(graph: Any) -> Any:
    for node in graph.nodes:
        yield node
        for region in getattr(node, "regions", ()) or ():
            yield from _all_nodes(region)


__all__ = ["call_recorded", "recording_tapes"]
