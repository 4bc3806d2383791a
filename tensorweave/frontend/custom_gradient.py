"""`tw.custom_gradient`: a function whose gradient the user writes (TensorFlow's
``tf.custom_gradient``).

The decorated function returns ``(y, grad_fn)``. Its result is ``y`` passed through one
``CustomGradient`` node whose inputs are the function's tensor arguments, a read of each
variable the function used, and ``y`` itself; its outputs are copies of ``y``. The
node's gradient calls ``grad_fn`` on the incoming gradients and hands back what it
returns for the arguments and variables; ``y``'s own inputs get no gradient, so the ops
inside the function are never differentiated. Gradients are built while tracing
(`tw.gradients`, a traced tape) or replayed by an eager `GradientTape`, so ``grad_fn``
always runs on tensors of the graph being built; ``key`` finds it in `_GRAD_FNS`.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..compiler.registry import attr, def_op, register_gradient
from ..compiler.types import TensorType
from ..errors import CompileError, DTypeError, TracingError
from . import building, nest
from .building import apply_op, convert_to_tensor, user_location
from .context import current_builder
from .indexed_slices import IndexedSlices
from .tape import GradientTape
from .variables import Variable

CustomGradient = def_op(
    "CustomGradient", ["*inputs"], {"num_outputs": attr("int"), "key": attr("int")},
    doc="Copies of its last num_outputs inputs; its gradient is the user's grad_fn of "
        "tw.custom_gradient, registered under `key` while tracing.")


@CustomGradient.infer
def _infer(*inputs: Any, num_outputs: int, key: int) -> list[Any]:
    if not 1 <= num_outputs <= len(inputs):
        raise CompileError(f"num_outputs {num_outputs} is not in [1, {len(inputs)}]")
    outs = list(inputs[len(inputs) - num_outputs:])
    for t in outs:
        if not isinstance(t, TensorType):
            raise CompileError(f"custom_gradient outputs must be tensors, got {t}")
    return outs


@CustomGradient.kernel("reference")
def _kernel(*inputs: Any, num_outputs: int, key: int) -> tuple:
    # copies: results never alias inputs
    return tuple(np.array(a, copy=True) for a in inputs[len(inputs) - num_outputs:])


@dataclass
class _Entry:
    grad_fn: Callable
    fn_name: str
    num_args: int
    variables: list[Variable]


_GRAD_FNS: dict[int, _Entry] = {}
_keys = itertools.count(1)
_lock = threading.Lock()


@register_gradient("CustomGradient")
def _custom_gradient_grad(op: Any, *dys: Any) -> list[Any]:
    entry = _GRAD_FNS.get(op.get_attr("key"))
    if entry is None:
        raise CompileError("the grad_fn of this tw.custom_gradient node is gone (it was "
                           "made in another process)")
    n_out = op.get_attr("num_outputs")
    if any(d is None for d in dys):  # non-float outputs have no gradient: give zeros
        from .ops import array
        dys = tuple(d if d is not None else array.zeros_like(o)
                    for d, o in zip(dys, op.outputs))
    where = f"tw.custom_gradient: the grad_fn of {entry.fn_name}"
    if entry.variables:
        got = entry.grad_fn(*dys, variables=list(entry.variables))
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise CompileError(f"{where} uses variables, so it must return (input "
                               f"gradients, variable gradients), got {_describe(got)}")
        input_grads, var_grads = got
        var_grads = _as_list(var_grads)
        if len(var_grads) != len(entry.variables):
            raise CompileError(f"{where} returned {len(var_grads)} variable gradients for "
                               f"{len(entry.variables)} variables "
                               f"({', '.join(v.name for v in entry.variables)})")
    else:
        input_grads, var_grads = entry.grad_fn(*dys), []
    input_grads = _as_list(input_grads)
    if len(input_grads) != entry.num_args:
        raise CompileError(f"{where} returned {len(input_grads)} gradients for "
                           f"{entry.num_args} inputs")
    like = op.inputs[:entry.num_args + len(entry.variables)]
    grads = []
    for g, x in zip([*input_grads, *var_grads], like):
        # (a variable's lookups may give IndexedSlices: they stay sparse, for optimizers)
        grads.append(None if g is None else g if isinstance(g, IndexedSlices) else
                     convert_to_tensor(g, dtype_hint=x.dtype))
    return grads + [None] * n_out


def _as_list(x: Any) -> list[Any]:
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _describe(x: Any) -> str:
    return f"a {type(x).__name__}" + (f" of {len(x)}" if isinstance(x, (list, tuple)) else "")


class _ReadCollector:
    """Notes the trainable variables an eager function reads on this thread (an eager
    observer)."""

    def __init__(self) -> None:
        self.variables: dict[str, Variable] = {}
        self._thread = threading.get_ident()

    def record_read(self, source: Any, tensor: Any) -> None:
        if isinstance(source, Variable) and source.trainable and \
                threading.get_ident() == self._thread:
            self.variables.setdefault(source.shared_name, source)

    def record_op(self, op: str, inputs: Any, attrs: Any, results: Any) -> None:
        if threading.get_ident() != self._thread:
            return
        for x in inputs:
            if isinstance(x, Variable) and x.trainable:
                self.variables.setdefault(x.shared_name, x)


def custom_gradient(f: Callable | None = None) -> Callable:
    """Decorate `f`, which returns ``(y, grad_fn)``, so that gradients through it are
    ``grad_fn(*dys)``: one gradient per (flattened) tensor argument, None for none.

    If `f` reads trainable variables, ``grad_fn`` must take a ``variables`` keyword
    argument (the list of those variables) and return ``(input_gradients,
    variable_gradients)``. Works with `tw.gradients`/`tw.grad` in traced functions and
    with `tw.GradientTape` eagerly and traced."""
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        leaves, tree = nest.flatten(list(args))
        xs = [convert_to_tensor(x) for x in leaves]
        call_args = nest.unflatten(tree, xs)
        builder = current_builder()
        recording = False
        if builder is None:
            # the function's own ops are not recorded (its gradient is grad_fn): this
            # thread's tapes pause, and a collector notes the variables it reads
            tapes = [o for o in building.eager_observers
                     if isinstance(o, GradientTape) and o._mine()]
            recording = bool(tapes)
            collector = _ReadCollector()
            for tape in tapes:
                tape._stop()
            building.eager_observers.append(collector)
            try:
                out = f(*call_args, **kwargs)
            finally:
                building.eager_observers.remove(collector)
                for tape in tapes:
                    tape._start()
            used = list(collector.variables.values())
        else:
            before = {id(n) for n in builder.graph.nodes}
            out = f(*call_args, **kwargs)
            used = _traced_variables(builder, before)
        y, grad_fn = _split(out, f)
        if used and not _takes_variables(grad_fn):
            raise DTypeError(f"tw.custom_gradient: {_name(f)} uses the variables "
                             f"{', '.join(v.name for v in used)}, so its grad_fn must take a "
                             f"keyword argument 'variables' (and return (input gradients, "
                             f"variable gradients))", location=str(user_location()))
        y_leaves, y_tree = nest.flatten(y)
        ys = [convert_to_tensor(v) for v in y_leaves]
        if not ys:
            raise TracingError(f"tw.custom_gradient: {_name(f)} returned no tensor",
                               location=str(user_location()))
        if builder is None and not recording:
            return nest.unflatten(y_tree, ys)  # no tape records: no node needed
        outs = with_gradient(xs, used, ys, grad_fn, _name(f))
        return nest.unflatten(y_tree, outs)

    return wrapper


def with_gradient(xs: list[Any], variables: list[Variable], ys: list[Any],
                  grad_fn: Callable, name: str) -> list[Any]:
    """Copies of `ys` out of one ``CustomGradient`` node over `xs`, a read of each of
    `variables` and `ys`, whose gradient is ``grad_fn`` (called as `custom_gradient`
    describes), in the graph being built or eagerly."""
    reads = [convert_to_tensor(v) for v in variables]
    with _lock:
        key = next(_keys)
    _GRAD_FNS[key] = _Entry(grad_fn, name, len(xs), list(variables))
    outs = apply_op("CustomGradient", [*xs, *reads, *ys],
                    {"num_outputs": len(ys), "key": key}, name=name)
    # grad_fn lives as long as what can still be differentiated: the graph being built,
    # or (eagerly) the results, which the tapes that recorded them keep alive
    builder = current_builder()
    weakref.finalize(builder.graph if builder is not None else outs[0],
                     _GRAD_FNS.pop, key, None)
    return outs


def _name(f: Callable) -> str:
    return getattr(f, "__name__", "custom_gradient")


def _split(out: Any, f: Callable) -> tuple[Any, Callable]:
    if not (isinstance(out, tuple) and len(out) == 2 and callable(out[1])):
        raise DTypeError(f"tw.custom_gradient: {_name(f)} must return (y, grad_fn), it "
                         f"returned {_describe(out)}", location=str(user_location()))
    return out


def _takes_variables(fn: Callable) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == "variables" or p.kind is inspect.Parameter.VAR_KEYWORD
               for p in params)


def _traced_variables(builder: Any, before: set[int]) -> list[Variable]:
    """The trainable variables read by the nodes created since `before`."""
    out: dict[str, Variable] = {}
    for n in builder.graph.nodes:
        if id(n) in before:
            continue
        for v in n.inputs:
            p = v.producer
            if p is not None and p.op == "VarHandle":
                var = builder.variables.get(p.attrs["shared_name"])
                if var is not None and var.trainable:
                    out.setdefault(var.shared_name, var)
    return list(out.values())


__all__ = ["custom_gradient"]
