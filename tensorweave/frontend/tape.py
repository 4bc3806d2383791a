"""`tw.GradientTape`: TensorFlow 2's recorder of operations for automatic differentiation.

Two modes, chosen when the tape is entered:

Eager (no graph being built)
    While the tape records, every eager op (`building._run_eager`) whose operands include
    a tensor the tape tracks is mirrored as a node of the tape's own graph: watched
    tensors and reads of watched variables are its arguments, operands the tape does not
    track are constants, and each recorded eager result maps to its node's output. The
    gradient is then the ordinary symbolic autodiff pass (`passes/autodiff.add_gradients`)
    run on that graph, and the gradient nodes it adds are *replayed* eagerly, one
    ``apply_op`` each, on the recorded values (nothing of the forward pass is recomputed).
    Replaying makes the gradient computation itself a sequence of eager ops, so an outer
    tape records it like any other computation: nested tapes give higher derivatives.

Traced (inside ``@tw.compile`` or a v1 graph)
    The tape notes which nodes of the graph were created while it recorded.
    ``gradient`` is `tw.gradients` restricted to them: only values that depend on a
    watched tensor (or a read of a watched variable) through recorded nodes carry
    gradients; everything else is a stop. Nested tapes work because gradient nodes built
    while an outer tape records are recorded by it.
"""

from __future__ import annotations

import contextlib
import enum
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..compiler.ir import Graph, Node, Value
from ..compiler.types import TensorType
from ..errors import CompileError, DTypeError, ShapeError
from . import building, nest
from .building import apply_op, convert_to_tensor, user_location
from .context import GraphBuilder, current_builder, name_scope
from .context import building as building_ctx
from .indexed_slices import IndexedSlices, aggregate, dense
from .tensor import EagerTensor, Tensor
from .variables import Variable


class UnconnectedGradients(enum.Enum):
    """What `GradientTape.gradient` returns for a source the target does not depend on:
    None (``NONE``) or zeros of the source's shape (``ZERO``)."""

    NONE = "none"
    ZERO = "zero"


def _unconnected(value: Any) -> UnconnectedGradients:
    try:
        return UnconnectedGradients(value.value if isinstance(value, UnconnectedGradients)
                                    else value)
    except ValueError:
        raise ValueError(f"unconnected_gradients must be 'none' or 'zero' (or a "
                         f"tw.UnconnectedGradients), got {value!r}") from None


def _where() -> str | None:
    loc = user_location()
    return str(loc) if loc else None


_ONCE = ("A non-persistent GradientTape can only be used to compute one set of gradients "
         "(or jacobians); create the tape with persistent=True to call gradient() more "
         "than once")


class _TapeBuilder(GraphBuilder):
    """Builds gradient nodes into a tape's graph; recorded eager tensors used by gradient
    functions (a custom gradient's closure, say) stand for their graph values."""

    def __init__(self, graph: Graph, tape: GradientTape) -> None:
        super().__init__(graph, auto_control_deps=False, kind="function")
        self.tape = tape

    def lift_eager(self, t: EagerTensor) -> Tensor | None:
        entry = self.tape._values.get(id(t))
        return Tensor(entry[1], self) if entry is not None else None


class GradientTape:
    """Records operations on watched tensors so that `gradient` can differentiate them
    (TensorFlow 2's ``tf.GradientTape``).

    ``with tw.GradientTape() as tape: y = f(x)`` then ``tape.gradient(y, x)``. Tensors are
    recorded when watched (``tape.watch(x)``); trainable variables read inside the block
    are watched automatically unless ``watch_accessed_variables=False``. A tape that is
    not `persistent` computes one set of gradients (or one jacobian) only. Works eagerly
    and inside ``@tw.compile`` functions (where it builds symbolic gradients)."""

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True) -> None:
        self._persistent = bool(persistent)
        self._watch_accessed = bool(watch_accessed_variables)
        self._used = False
        self._recording = False
        self._entered = False
        self._thread: int | None = None
        self._builder: GraphBuilder | None = None  # traced mode: the graph being built
        self._reset_records()

    def _reset_records(self) -> None:
        # eager mode: the mirror graph, and each recorded eager tensor (by id, kept
        # alive so that ids stay unique) with its value there
        self._graph = Graph("gradient_tape")
        # the arguments that are eager reads of variables: a Gather of one has a sparse
        # gradient (grads/array.py), as a Gather of a ReadVariable in a graph has
        self._graph.variable_read_args = set()
        self._tape_builder = _TapeBuilder(self._graph, self)
        self._values: dict[int, tuple[EagerTensor, Value]] = {}
        self._eager_of: dict[Value, EagerTensor] = {}
        self._var_reads: dict[str, list[Value]] = {}  # shared name -> read arguments
        self._watched_vars: dict[str, Variable] = {}
        self._accessed_vars: dict[str, Variable] = {}
        # traced mode: ids of the nodes created while recording, and watched values
        self._recorded: set[int] = set()
        self._before: set[int] = set()
        self._watched_values: list[Value] = []

    # -- context ---------------------------------------------------------------------
    def __enter__(self) -> GradientTape:
        if self._entered:
            raise RuntimeError("this GradientTape is already recording (tapes are not "
                               "re-entrant)")
        self._entered = True
        self._builder = current_builder()
        self._thread = threading.get_ident()
        self._start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop()
        self._entered = False

    def _start(self) -> None:
        self._recording = True
        if self._builder is None:
            building.eager_observers.append(self)
        else:
            self._before = {id(n) for n in self._builder.graph.nodes}

    def _stop(self) -> None:
        if not self._recording:
            return
        self._recording = False
        if self._builder is None:
            building.eager_observers.remove(self)
        else:
            self._recorded.update(id(n) for n in self._builder.graph.nodes
                                  if id(n) not in self._before)

    @contextlib.contextmanager
    def stop_recording(self) -> Iterator[None]:
        """Ops run inside this block are not recorded (their results are constants to
        the tape)."""
        if not self._recording:
            raise RuntimeError("GradientTape.stop_recording: the tape is not recording")
        self._stop()
        try:
            yield
        finally:
            self._start()

    def reset(self) -> None:
        """Forget everything recorded so far (the tape keeps recording if it was)."""
        recording = self._recording
        self._stop()
        self._reset_records()
        if recording:
            self._start()

    # -- watching --------------------------------------------------------------------
    def watch(self, tensor: Any) -> None:
        """Record operations on `tensor` (a tensor, a variable, or a nest of them) from
        now on."""
        for t in nest.flatten(tensor)[0]:
            if isinstance(t, Variable):
                self._watched_vars[t.shared_name] = t
                continue
            if self._builder is None:
                if not isinstance(t, EagerTensor):
                    raise DTypeError(f"GradientTape.watch: expected a tensor or a variable, "
                                     f"got {type(t).__name__} (convert it with "
                                     f"tw.constant first)", location=_where())
                self._track_arg(t, "watched")
            else:
                value = convert_to_tensor(t).value
                if value not in self._watched_values:
                    self._watched_values.append(value)

    def watched_variables(self) -> tuple[Variable, ...]:
        """The variables this tape watches: those passed to `watch` and the trainable
        variables read while recording (with ``watch_accessed_variables``)."""
        out = dict(self._watched_vars)
        if self._builder is None:
            out.update({k: v for k, v in self._accessed_vars.items() if k not in out})
        else:
            for name, var in self._traced_reads()[1].items():
                out.setdefault(name, var)
        return tuple(out.values())

    def _track_arg(self, t: EagerTensor, name: str) -> Value:
        entry = self._values.get(id(t))
        if entry is not None:
            return entry[1]
        value = self._graph.add_arg(t.type, name)
        self._values[id(t)] = (t, value)
        self._eager_of[value] = t
        return value

    def _mine(self) -> bool:
        return self._recording and threading.get_ident() == self._thread

    # -- eager recording (called by building) -------------------------------------------
    def record_read(self, source: Any, tensor: Any) -> None:
        """An eager read of `source` gave `tensor`: track it when the variable is
        watched."""
        if not self._mine() or not isinstance(source, Variable) or \
                not isinstance(tensor, EagerTensor):
            return
        name = source.shared_name
        if name not in self._watched_vars:
            if not (self._watch_accessed and source.trainable):
                return
            self._accessed_vars.setdefault(name, source)
        if source.dtype.is_floating:
            value = self._track_arg(tensor, name)
            self._var_reads.setdefault(name, []).append(value)
            self._graph.variable_read_args.add(value)

    def record_op(self, op: str, inputs: Any, attrs: Any, results: list[Any]) -> None:
        """Mirror the eager op `op` in the tape's graph when it reads a tracked tensor."""
        if not self._mine() or not results:
            return
        if op == "ResourceGather" and self._watched_read(inputs[0]) is not None:
            # a lookup of a watched variable: a Gather of (all of) its value
            var = inputs[0]
            table = self._track_arg(EagerTensor(var.numpy()), var.shared_name)
            self._var_reads.setdefault(var.shared_name, []).append(table)
            self._graph.variable_read_args.add(table)
            op, inputs = "Gather", [table, inputs[1]]
        elif not any(isinstance(x, EagerTensor) and id(x) in self._values for x in inputs):
            return
        values = []
        for x in inputs:
            if isinstance(x, Value):
                values.append(x)
                continue
            if hasattr(x, "_eager_resource"):
                return  # other ops on variables (assignments) have no gradient
            entry = self._values.get(id(x)) if isinstance(x, EagerTensor) else None
            if entry is not None:
                values.append(entry[1])
            else:
                arr = np.array(convert_to_tensor(x)._array, copy=True)
                arr.flags.writeable = False
                values.append(self._graph.add_node("Const", [], {"value": arr}).outputs[0])
        node = self._graph.add_node(op, values, attrs, loc=building.user_location())
        for value, result in zip(node.outputs, results):
            if isinstance(value.type, TensorType) and isinstance(result, EagerTensor):
                self._values[id(result)] = (result, value)
                self._eager_of[value] = result

    def _watched_read(self, x: Any) -> Variable | None:
        if not isinstance(x, Variable) or not x.dtype.is_floating:
            return None
        if x.shared_name in self._watched_vars:
            return x
        if self._watch_accessed and x.trainable:
            self._accessed_vars.setdefault(x.shared_name, x)
            return x
        return None

    # -- gradients -------------------------------------------------------------------
    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: Any = UnconnectedGradients.NONE) -> Any:
        """The gradient of `target` (a tensor or a nest; their sum) with respect to each
        of `sources` (tensors or variables, any nest), in the structure of `sources`.
        `output_gradients` weights each target (default ones). A source the target does
        not depend on (through recorded ops) gives None, or zeros with
        ``unconnected_gradients=tw.UnconnectedGradients.ZERO``."""
        self._use()
        try:
            return self._gradient(target, sources, output_gradients,
                                  _unconnected(unconnected_gradients))
        finally:
            self._release()

    def _use(self) -> None:
        if not self._persistent:
            if self._used:
                raise RuntimeError(_ONCE)
            self._used = True

    def _release(self) -> None:
        """A used non-persistent tape lets go of what it recorded (eager values)."""
        if not self._persistent and self._builder is None:
            recording = self._recording
            watched, accessed = self._watched_vars, self._accessed_vars
            self._stop()
            self._reset_records()
            self._watched_vars, self._accessed_vars = watched, accessed
            if recording:
                self._start()

    def _gradient(self, target: Any, sources: Any, output_gradients: Any,
                  unconnected: UnconnectedGradients) -> Any:
        s_leaves, s_tree = nest.flatten(sources)
        t_leaves = nest.flatten(target)[0]
        for t in t_leaves:
            dtype = getattr(t, "dtype", None)
            if dtype is not None and not dtype.is_floating:
                # as TensorFlow; the autodiff pass would fail later, naming an inner op
                raise DTypeError(f"GradientTape.gradient: the dtype of the target tensor must "
                                 f"be floating point (f16, bf16, f32, f64), got "
                                 f"{dtype.ir_name}{list(t.shape)}", location=_where())
        g_leaves = None
        if output_gradients is not None:
            g_leaves = nest.flatten(output_gradients)[0]
            if len(g_leaves) != len(t_leaves):
                raise ValueError(f"GradientTape.gradient: output_gradients has "
                                 f"{len(g_leaves)} tensors for {len(t_leaves)} targets")
        if self._builder is None:
            grads = self._eager_gradient(t_leaves, s_leaves, g_leaves)
        else:
            grads = self._traced_gradient(t_leaves, s_leaves, g_leaves)
        if unconnected is UnconnectedGradients.ZERO:
            from .ops import array
            grads = [array.zeros_like(convert_to_tensor(s)) if g is None else g
                     for g, s in zip(grads, s_leaves)]
        return nest.unflatten(s_tree, grads)

    def _eager_gradient(self, targets: list[Any], sources: list[Any],
                        weights: list[Any] | None) -> list[Any]:
        from ..passes.autodiff import add_gradients
        ys, gys = [], []
        for i, t in enumerate(targets):
            entry = self._values.get(id(t)) if isinstance(t, EagerTensor) else None
            if entry is None:
                continue  # not computed from anything watched: contributes nothing
            ys.append(entry[1])
            gys.append(None if weights is None or weights[i] is None else weights[i])
        xs: list[list[Value]] = []
        for s in sources:
            if isinstance(s, Variable):
                xs.append(list(self._var_reads.get(s.shared_name, [])))
            elif isinstance(s, EagerTensor):
                entry = self._values.get(id(s))
                xs.append([entry[1]] if entry is not None else [])
            else:
                raise DTypeError(f"GradientTape.gradient: sources must be tensors or "
                                 f"variables, got {type(s).__name__}", location=_where())
        flat = [v for vs in xs for v in vs]
        if not ys or not flat:
            return [None] * len(sources)
        graph = self._graph
        first_new = len(graph.nodes)
        # A persistent tape asked inside its block records its own gradient computation
        # (the eager replay below), as TensorFlow's does: a later gradient of a value
        # computed from this one differentiates through it. A non-persistent tape, used
        # up by this call, does not.
        keep_recording = self._recording and self._persistent
        was_recording = self._recording
        if not keep_recording:
            self._stop()
        try:
            with building_ctx(self._tape_builder), name_scope("gradient_tape"):
                gy_values = None
                if weights is not None:
                    gy_values = [None if g is None else convert_to_tensor(
                        g, dtype=y.type.dtype).value for g, y in zip(gys, ys)]
                # a lookup of a variable keeps its IndexedSlices gradient, as
                # TensorFlow's tape gives it: an optimizer then applies its sparse rule
                flat_grads = add_gradients(ys, flat, gy_values, keep_sparse=True)
            wanted = [v for g in flat_grads if g is not None for v in _graph_values(g)]
            computed = self._replay(graph.nodes[first_new:], wanted)
        finally:
            if was_recording and not keep_recording:
                self._start()
        out, i = [], 0
        for vs in xs:
            parts = [_eager_of_gradient(g, computed) for g in flat_grads[i:i + len(vs)]
                     if g is not None]
            i += len(vs)
            # several reads of one variable: slices concatenate, a dense part densifies
            out.append(aggregate(parts) if parts else None)
        return out

    def _replay(self, nodes: list[Node], wanted: list[Value]) -> dict[Value, Any]:
        """Run the gradient `nodes` eagerly (those `wanted` needs), each through
        ``apply_op``, so that tapes still recording see them; returns the value of each
        wanted graph value."""
        new = {id(n) for n in nodes}
        needed: set[int] = set()
        stack = [w.producer for w in wanted if w.producer is not None]
        while stack:
            n = stack.pop()
            if id(n) not in new or id(n) in needed:
                continue
            needed.add(id(n))
            stack.extend(v.producer for v in n.inputs if v.producer is not None)
        env: dict[Value, Any] = dict(self._eager_of)
        with building_ctx(None):
            for n in nodes:
                if id(n) not in needed:
                    continue
                if n.regions:
                    raise CompileError(f"GradientTape: the gradient uses op {n.op} with "
                                       f"regions, which eager tapes cannot replay; "
                                       f"differentiate inside @tw.compile instead",
                                       **n.error_context())
                if n.op == "Const":
                    env[n.outputs[0]] = EagerTensor(n.attrs["value"])
                    continue
                if n.op == "VarHandle":  # a gradient function read a variable
                    env[n.outputs[0]] = self._tape_builder.variables[n.attrs["shared_name"]]
                    continue
                for v in n.inputs:
                    # a handle an earlier gradient made (one per variable and graph) and
                    # this one reuses: not among `nodes`
                    h = v.producer
                    if h is not None and h.op == "VarHandle" and v not in env:
                        env[v] = self._tape_builder.variables[h.attrs["shared_name"]]
                if n.op == "ReadVariable" and isinstance(env.get(n.inputs[0]), Variable):
                    # read as users do, so that tapes watching the variable see it
                    env[n.outputs[0]] = convert_to_tensor(env[n.inputs[0]])
                    continue
                outs = apply_op(n.op, [_lookup(env, v) for v in n.inputs], dict(n.attrs))
                for v, o in zip(n.outputs, outs):
                    env[v] = o
        # a gradient may also be a recorded value or a constant of the forward pass
        return {w: _lookup(env, w) for w in wanted}

    # -- traced mode ------------------------------------------------------------------
    def _recorded_now(self) -> set[int]:
        recorded = set(self._recorded)
        if self._recording:
            recorded.update(id(n) for n in self._builder.graph.nodes
                            if id(n) not in self._before)
        return recorded

    def _traced_reads(self) -> tuple[dict[str, list[Value]], dict[str, Variable], set[Value]]:
        """Reads of watched variables among the recorded nodes, the variables, and every
        value that depends on a watched tensor through recorded nodes."""
        builder = self._builder
        recorded = self._recorded_now()
        tracked: set[Value] = set(self._watched_values)
        reads: dict[str, list[Value]] = {}
        variables: dict[str, Variable] = {}
        for n in builder.graph.topological_order():
            if id(n) not in recorded:
                continue
            if n.op == "ReadVariable":
                handle = n.inputs[0].producer
                name = handle.attrs.get("shared_name") if handle is not None else None
                var = self._watched_vars.get(name) or builder.variables.get(name)
                if var is not None and n.outputs[0].type.dtype.is_floating and (
                        name in self._watched_vars or (self._watch_accessed and var.trainable)):
                    reads.setdefault(name, []).append(n.outputs[0])
                    variables.setdefault(name, var)
                    tracked.add(n.outputs[0])
                continue
            if any(v in tracked for v in n.inputs):
                tracked.update(n.outputs)
        return reads, variables, tracked

    def _traced_gradient(self, targets: list[Any], sources: list[Any],
                         weights: list[Any] | None) -> list[Any]:
        from ..passes.autodiff import add_gradients
        if current_builder() is not self._builder:
            raise RuntimeError("GradientTape.gradient must be called in the function (or "
                               "graph) the tape recorded")
        reads, _, tracked = self._traced_reads()
        from .control_flow import check_no_region_reads_reach
        # (reads inside a region that assigns the variable: no gradient, an error)
        check_no_region_reads_reach(
            self._builder.graph,
            [s.shared_name for s in sources if isinstance(s, Variable) and (
                s.shared_name in self._watched_vars or (self._watch_accessed and s.trainable))],
            [convert_to_tensor(t).value for t in targets], self._recorded_now())
        ys, gys = [], []
        for i, t in enumerate(targets):
            v = convert_to_tensor(t).value
            if v in tracked:
                ys.append(v)
                gys.append(None if weights is None or weights[i] is None
                           else convert_to_tensor(weights[i], dtype=v.type.dtype).value)
        xs: list[list[Value]] = []
        for s in sources:
            if isinstance(s, Variable):
                xs.append(list(reads.get(s.shared_name, [])))
            else:
                v = convert_to_tensor(s).value
                xs.append([v] if v in tracked else [])
        flat = [v for vs in xs for v in vs]
        if not ys or not flat:
            return [None] * len(sources)
        sources_set = set(flat)
        stops = [v for n in self._builder.graph.nodes for v in n.outputs
                 if v not in tracked and v not in sources_set and isinstance(v.type, TensorType)
                 and v.type.dtype.is_floating]
        with name_scope("gradient_tape"):
            grads = add_gradients(ys, flat, gys, stops, keep_sparse=True)
            out, i = [], 0
            for vs in xs:
                parts = [g for g in grads[i:i + len(vs)] if g is not None]
                i += len(vs)
                out.append(aggregate(parts) if parts else None)
        return out

    # -- jacobian --------------------------------------------------------------------
    def jacobian(self, target: Any, sources: Any,
                 unconnected_gradients: Any = UnconnectedGradients.NONE,
                 parallel_iterations: int | None = None,
                 experimental_use_pfor: bool = True) -> Any:
        """d target / d source for each source: shape ``target.shape + source.shape``
        (one gradient per element of `target`, whose shape must be known)."""
        del parallel_iterations, experimental_use_pfor  # one gradient per row, in order
        self._use()
        try:
            return self._jacobian(target, sources, _unconnected(unconnected_gradients))
        finally:
            self._release()

    def batch_jacobian(self, target: Any, source: Any,
                       unconnected_gradients: Any = UnconnectedGradients.NONE,
                       parallel_iterations: int | None = None,
                       experimental_use_pfor: bool = True) -> Any:
        """The jacobian of each batch row of `target` with respect to the same row of
        `source` (row ``b`` of `target` depending only on row ``b`` of `source`): shape
        ``[batch] + target.shape[1:] + source.shape[1:]``."""
        del parallel_iterations, experimental_use_pfor
        self._use()
        try:
            full = self._jacobian(target, source, _unconnected(unconnected_gradients))
        finally:
            self._release()
        if full is None:
            return None
        from .ops import array
        t, s = convert_to_tensor(target), convert_to_tensor(source)
        if not t.shape or not s.shape or t.shape[0] != s.shape[0]:
            raise ShapeError(f"GradientTape.batch_jacobian needs target and source with the "
                             f"same first (batch) dim, got {t.type} and {s.type}", location=_where())
        batch = t.shape[0]
        y = int(np.prod(t.shape[1:], dtype=np.int64))
        x = int(np.prod(s.shape[1:], dtype=np.int64))
        flat = array.reshape(full, [batch, y, batch, x])
        rows = [flat[b, :, b, :] for b in range(batch)]
        return array.reshape(array.stack(rows), [batch, *t.shape[1:], *s.shape[1:]])

    def _jacobian(self, target: Any, sources: Any, unconnected: UnconnectedGradients) -> Any:
        from .ops import array
        t = convert_to_tensor(target)
        if any(d is None for d in t.shape):
            raise ShapeError(f"GradientTape.jacobian needs a target of known shape, got "
                             f"{t.type}", location=_where())
        size = int(np.prod(t.shape, dtype=np.int64))
        s_leaves, s_tree = nest.flatten(sources)
        rows: list[list[Any]] = [[] for _ in s_leaves]
        for k in range(size):
            onehot = np.zeros(size, dtype=t.dtype.np)
            onehot[k] = 1
            weight = onehot.reshape(t.shape)
            got = nest.flatten(self._gradient(target, sources, [weight],
                                              UnconnectedGradients.ZERO))[0]
            for j, g in enumerate(got):
                rows[j].append(dense(g))
        out = []
        for j, s in enumerate(s_leaves):
            shape = tuple(convert_to_tensor(s).shape)
            if size == 0:
                dtype = convert_to_tensor(s).dtype
                out.append(array.zeros([*t.shape, *shape], dtype=dtype))
                continue
            connected = self._connected(target, s)
            if not connected and unconnected is UnconnectedGradients.NONE:
                out.append(None)
                continue
            out.append(array.reshape(array.stack(rows[j]), [*t.shape, *shape]))
        return nest.unflatten(s_tree, out)

    def _connected(self, target: Any, source: Any) -> bool:
        """Whether `target` depends on `source` through recorded ops."""
        if self._builder is None:
            if isinstance(source, Variable):
                xs = set(self._var_reads.get(source.shared_name, []))
            else:
                entry = self._values.get(id(source))
                xs = {entry[1]} if entry is not None else set()
            entry = self._values.get(id(target))
            if not xs or entry is None:
                return False
            return _depends(entry[1], xs)
        reads, _, tracked = self._traced_reads()
        if isinstance(source, Variable):
            xs = set(reads.get(source.shared_name, []))
        else:
            v = convert_to_tensor(source).value
            xs = {v} if v in tracked else set()
        y = convert_to_tensor(target).value
        return bool(xs) and y in tracked and _depends(y, xs)


def _lookup(env: dict[Value, Any], v: Value) -> Any:
    """The eager value of `v`: computed or recorded (in `env`), or a constant's."""
    got = env.get(v)
    if got is None:
        producer = v.producer
        if producer is None or producer.op != "Const":
            raise CompileError(f"GradientTape: no recorded value for '{v.name}'")
        got = env[v] = EagerTensor(producer.attrs["value"])
    return got


def _depends(y: Value, xs: set[Value]) -> bool:
    seen: set[int] = set()
    stack = [y]
    while stack:
        v = stack.pop()
        if v in xs:
            return True
        p = v.producer
        if p is None or id(p) in seen:
            continue
        seen.add(id(p))
        stack.extend(p.inputs)
    return False


def _graph_values(g: Tensor | IndexedSlices) -> list[Value]:
    """The values of the tape's graph that make up the gradient `g`."""
    if isinstance(g, IndexedSlices):
        return [g.values.value, g.indices.value]
    return [g.value]


def _eager_of_gradient(g: Tensor | IndexedSlices, computed: dict[Value, Any]) -> Any:
    """The eager gradient of the graph gradient `g`, from the replayed `computed`."""
    if isinstance(g, IndexedSlices):
        return IndexedSlices(computed[g.values.value], computed[g.indices.value],
                             g.dense_shape)
    return computed[g.value]


__all__ = ["GradientTape", "UnconnectedGradients"]
