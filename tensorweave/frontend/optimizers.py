"""Optimizers written as ordinary graph code, as the paper argues: the update of each
variable is built from the public op functions (reads, arithmetic, assignments), and
optimizer state lives in slot variables created once per (optimizer, variable).

The update rules are TensorFlow's training ops (``ApplyGradientDescent``,
``ApplyMomentum``, ``ApplyAdagrad``, ``ApplyAdadelta``, ``ApplyRMSProp``, ``ApplyAdam``,
``ApplyFtrl(V2)``, ``ApplyProximalGradientDescent``, ``ApplyProximalAdagrad``,
``ApplyAdagradDA``), so models trained with `tw.compat.v1.train` match TensorFlow 1 step
for step; Adamax, Lion, Adafactor, AdamW and Nadam are Keras' rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..compiler.types import format_shape
from ..errors import CompileError, DTypeError, ShapeError, TracingError
from . import eager_update, trace_dependencies
from . import ops as _ops  # noqa: F401  (registers the op functions used below)
from .autodiff import sparse_gradients
from .building import constant, convert_to_tensor, user_location
from .context import colocate_with, current_builder, name_scope
from .grouping import group
from .indexed_slices import IndexedSlices, to_dense
from .ops.scatter import deduplicate, gather_rows, scatter_sub, scatter_update
from .variables import Variable


def _math():
    from .ops import math
    return math


class Optimizer:
    """Base class: subclasses define `_slot_inits` (slot name -> initial value) and
    `_apply(var, grad, slots)`, which returns the update ops.

    Every optimizer takes Keras' gradient clipping arguments (at most one of them):
    `clipnorm` rescales each gradient whose L2 norm exceeds it, `clipvalue` clips each
    element to ``[-clipvalue, clipvalue]``, `global_clipnorm` rescales all gradients
    together when the norm of all of them exceeds it (``tf.clip_by_global_norm``). On an
    `IndexedSlices` gradient they act on its values, as TensorFlow's do.

    `learning_rate` is a number, a tensor, a callable of no arguments, or a
    `tw.optimizers.schedules.LearningRateSchedule`, evaluated at `iterations` (the
    number of steps applied so far) inside the step being built.

    Outside any graph (TensorFlow 2's eager loop: gradients from a `tw.GradientTape`),
    `apply_gradients` and `minimize` update the variables at once: the update is traced
    once into a compiled function and called (`frontend/eager_update.py`), so an eager
    step leaves the same variables and state as the same step inside ``@tw.compile``."""

    _slot_inits: dict[str, float] = {}
    # tw.optimizers count their steps in `iterations` (as Keras' do); TensorFlow 1's
    # optimizers only when a schedule or their rule needs it
    _always_count_steps = True
    _needs_step = False
    # private attributes that change the update an eager step traces (its public ones
    # all do: `eager_update._hyper_key`)
    _eager_key_attrs: tuple[str, ...] = ("_slot_inits",)
    # while an eager step traces its update: the learning rate (already evaluated) it uses
    _lr_override: Any = None

    def __init__(self, learning_rate: Any, name: str, clipnorm: float | None = None,
                 clipvalue: float | None = None, global_clipnorm: float | None = None) -> None:
        self.learning_rate = learning_rate
        self.name = name
        given = [k for k, v in (("clipnorm", clipnorm), ("clipvalue", clipvalue),
                                ("global_clipnorm", global_clipnorm)) if v is not None]
        if len(given) > 1:
            raise ValueError(f"{type(self).__name__}: only one of clipnorm, clipvalue and "
                             f"global_clipnorm can be set, got {', '.join(given)}")
        for k, v in (("clipnorm", clipnorm), ("clipvalue", clipvalue),
                     ("global_clipnorm", global_clipnorm)):
            if v is not None and not (isinstance(v, (int, float)) and v > 0):
                raise ValueError(f"{type(self).__name__}: {k} must be a positive number, "
                                 f"got {v!r}")
        self.clipnorm, self.clipvalue, self.global_clipnorm = clipnorm, clipvalue, global_clipnorm
        self._slots: dict[str, dict[str, Variable]] = {}
        self._slot_owner: dict[str, Variable] = {}  # variable shared name -> variable
        self._iterations: Variable | None = None
        self._non_slot: dict[str, Variable] = {}  # other state (e.g. Nadam's u_product)
        # values read from a checkpoint before the state they belong to existed
        self._deferred_slots: dict[tuple[str, str], np.ndarray] = {}
        self._deferred_non_slot: dict[str, np.ndarray] = {}
        self._call: dict[str, Any] = {}  # per apply_gradients call: lr, step, ...

    def __setattr__(self, name: str, value: Any) -> None:
        # A hyperparameter (a public attribute, or a private one named in
        # `_eager_key_attrs`) that a tw.compile trace read is a constant of that trace:
        # setting another value drops the trace, so the next call traces with it (as a
        # Keras optimizer's hyperparameter variables would change the next step).
        if "_trace_watchers" in self.__dict__ and _is_hyperparameter(self, name) and \
                not _same_value(self.__dict__.get(name, _UNSET), value):
            trace_dependencies.changed(self)
        object.__setattr__(self, name, value)

    # -- slots ---------------------------------------------------------------------------
    def _slot_initial(self, slot: str, var: Variable) -> np.ndarray:
        return np.full([d or 0 for d in var.shape], self._slot_inits[slot], dtype=var.dtype.np)

    def get_slot(self, var: Variable, name: str) -> Variable:
        """The slot variable `name` (e.g. ``"m"``) that holds this optimizer's state for `var`."""
        return self._slots[var.shared_name][name]

    def get_slot_names(self) -> list[str]:
        """The names of the per-variable slots this optimizer keeps."""
        return list(self._slot_inits)

    def variables(self) -> list[Variable]:
        """All state of this optimizer (slots, other state, and the step counter if it
        has one)."""
        out = [s for slots in self._slots.values() for s in slots.values()]
        out += list(self._non_slot.values())
        return out + ([self._iterations] if self._iterations is not None else [])

    @property
    def iterations(self) -> Variable | None:
        """The number of steps applied (an int64 variable, created by the first
        `apply_gradients`; None before it)."""
        return self._iterations

    def _slot_variable_name(self, slot: str) -> str:
        """The name of slot `slot`'s variable, after its variable's name and a slash."""
        return f"{self.name}/{slot}"

    def _ensure_slots(self, var: Variable) -> dict[str, Variable]:
        slots = self._slots.get(var.shared_name)
        if slots is None:
            slots = {s: var._create_slot(self._slot_variable_name(s), self._slot_initial(s, var))
                     for s in self._slot_inits}
            for s, slot in slots.items():
                restored = self._deferred_slots.pop((var.shared_name, s), None)
                if restored is not None:
                    _restore_into(slot, restored, f"slot '{s}' of {var.name}")
            self._slots[var.shared_name] = slots
            self._slot_owner[var.shared_name] = var
        return slots

    def _state_variable(self, like: Variable, name: str, initial: np.ndarray) -> Variable:
        """Optimizer state that is not per-variable (the step counter...), created beside
        `like` (on its device, in its resource manager) with `initial`'s dtype."""
        if type(like)._create_slot is Variable._create_slot:
            from .checkpoint import pending_slot_value
            var = Variable.__new__(Variable)
            var._init_state(np.asarray(initial), None, f"{like.shared_name}/{self.name}/{name}",
                            False, like._resources)
            restored = pending_slot_value(var.shared_name)
            if restored is not None:
                var._state.assign(restored)
        else:  # TensorFlow 1 graph variables: named by the optimizer alone
            var = like._create_non_slot(f"{self.name}/{name}", initial)
        restored = self._deferred_non_slot.pop(name, None)
        if restored is not None:
            _restore_into(var, restored, f"{self.name}'s {name}")
        return var

    def _step_counter(self, like: Variable) -> Variable:
        if self._iterations is None:
            self._iterations = self._state_variable(like, "iterations", np.zeros((), np.int64))
        return self._iterations

    def _non_slot_variable(self, like: Variable, name: str, initial: np.ndarray) -> Variable:
        if name not in self._non_slot:
            self._non_slot[name] = self._state_variable(like, name, initial)
        return self._non_slot[name]

    # -- public API ----------------------------------------------------------------------
    def compute_gradients(self, loss: Any, var_list: Sequence[Variable] | None = None, *,
                          tape: Any = None, grad_loss: Any = None) -> list[tuple[Any, Variable]]:
        """``[(gradient, variable), ...]`` for `loss` (a tensor, or a callable returning one).
        The gradient of a variable that only Gathers read (an embedding) is a
        `tw.IndexedSlices` of the rows looked up. `grad_loss` (in a graph) is the gradient
        of the loss, instead of ones: the gradients are those of ``sum(loss * grad_loss)``.

        Outside any graph, `loss` is a callable run under a `tw.GradientTape` (or a tensor
        that `tape` recorded), `var_list` may be a callable, and None means the trainable
        variables the loss read."""
        if current_builder() is None and not eager_update.is_symbolic(loss):
            if grad_loss is not None:
                raise ValueError(f"{type(self).__name__}.compute_gradients: grad_loss works in "
                                 f"a graph (tw.compile or a tw.compat.v1 Graph); eagerly, "
                                 f"multiply the loss by it")
            return eager_update.eager_gradients(self, loss, var_list, tape)
        if callable(loss):
            loss = loss()
        variables = self._default_var_list(var_list)
        grads = sparse_gradients([loss], variables,
                                 grad_ys=None if grad_loss is None else [grad_loss])
        return list(zip(grads, variables))

    def apply_gradients(self, grads_and_vars: Any, name: str | None = None) -> Any:
        """Add the update ops for ``(gradient, variable)`` pairs; returns an op grouping them.
        Pairs whose gradient is None are skipped (that variable does not affect the loss).
        Gradients are clipped first when the optimizer was given `clipnorm`, `clipvalue`
        or `global_clipnorm`.

        Outside any graph the update runs at once (see the class docstring) and
        `iterations` is returned."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise CompileError("no gradients provided for any variable")
        for _, var in pairs:
            if not isinstance(var, Variable):
                raise TypeError(f"apply_gradients expects variables, got {var!r}")
        if current_builder() is None:
            if any(eager_update.is_symbolic(g) for g, _ in pairs):
                raise TracingError(f"{type(self).__name__}.apply_gradients got gradients "
                                   f"of a graph: call it inside @tw.compile or the "
                                   f"tw.compat.v1 Graph (as_default) they belong to")
            return eager_update.apply_eagerly(self, pairs, name)
        trace_dependencies.note(self)  # the trace bakes in the hyperparameters
        updates = []
        with name_scope(name or self.name):
            pairs = [(g if isinstance(g, IndexedSlices) else convert_to_tensor(g), v)
                     for g, v in pairs]
            for g, v in pairs:
                self._check_gradient(g, v)
            pairs = self._clip(pairs)
            self._call = {}
            if self._always_count_steps or self._needs_step or _is_schedule(self.learning_rate):
                with colocate_with(pairs[0][1]):
                    counter = self._step_counter(pairs[0][1])
                    # read once, before this step's increment (ordered by the automatic
                    # control dependencies on the counter)
                    self._call["step"] = counter.read_value()
            try:
                self._prepare(pairs)
                # a variable's earlier updates in this call: a second pair of the same
                # variable updates after them, reading the slots they wrote (TensorFlow
                # 1 applies one read-modify-write op per pair; read together, the second
                # pair's slot assignment would drop the first's)
                earlier: dict[str, list] = {}
                for g, var in pairs:
                    slots = self._ensure_slots(var)
                    before = earlier.setdefault(var.shared_name, [])
                    # The update runs where the variable lives (a parameter server): only
                    # the gradient crosses the network (only the rows of a sparse one), as
                    # in TensorFlow.
                    with colocate_with(var), _after(before):
                        if isinstance(g, IndexedSlices):
                            ops = self._apply_sparse(var, g, slots) or []
                        else:
                            ops = self._apply(var, g, slots) or []
                    updates.extend(ops)
                    before.extend(ops)
                updates.extend(self._finish(pairs) or [])
                if self._iterations is not None and "step" in self._call:
                    with colocate_with(self._iterations):
                        updates.append(self._iterations.assign_add(1, read_value=False))
            finally:
                self._call = {}
        return group(*updates)

    def _check_gradient(self, grad: Any, var: Variable) -> None:
        """A gradient of the variable's dtype and shape (the rows of it, for slices);
        otherwise an error naming both, rather than a failing op inside the update."""
        sparse = isinstance(grad, IndexedSlices)
        values = convert_to_tensor(grad.values) if sparse else grad
        what = "IndexedSlices values" if sparse else "gradient"
        got = tuple(values.shape)
        want = tuple(var.shape)
        if sparse:  # one row per index: only the dims after the first must agree
            got, want = got[1:], want[1:]
        fits = values.dtype is var.dtype and len(got) == len(want) and all(
            a is None or b is None or a == b for a, b in zip(got, want))
        if not fits:
            loc = user_location()
            err = DTypeError if values.dtype is not var.dtype else ShapeError
            rows = " (after the first dim)" if sparse else ""
            raise err(f"the {what} for variable '{var.name}' must have the variable's "
                      f"dtype and shape{rows}: expected {var.dtype.ir_name}"
                      f"{format_shape(var.shape)}, got {values.dtype.ir_name}"
                      f"{format_shape(values.shape)}",
                      op=f"{type(self).__name__}.apply_gradients",
                      location=str(loc) if loc is not None else None)

    def minimize(self, loss: Any, var_list: Sequence[Variable] | None = None,
                 global_step: Variable | None = None, name: str | None = None, *,
                 tape: Any = None, grad_loss: Any = None) -> Any:
        """Compute gradients of `loss` and apply them; returns the training op.
        `grad_loss` as in `compute_gradients`.

        Outside any graph (Keras style): ``opt.minimize(loss_fn, var_list)`` with a
        callable `loss` updates the variables at once and returns `iterations`; a loss
        tensor needs the `tape` that recorded it."""
        grads_and_vars = (self.compute_gradients(loss, var_list, tape=tape) if grad_loss is None
                          else self.compute_gradients(loss, var_list, tape=tape,
                                                      grad_loss=grad_loss))
        if all(g is None for g, _ in grads_and_vars):
            names = ", ".join(v.name for _, v in grads_and_vars)
            raise CompileError(f"no gradients: none of the variables [{names}] affects the loss")
        train = self.apply_gradients(grads_and_vars, name=name)
        if current_builder() is None:
            if global_step is not None:
                global_step.assign_add(1, read_value=False)
            return train
        if global_step is not None:
            from .context import control_dependencies
            with control_dependencies([train]):
                global_step.assign_add(1, read_value=False)
            b = current_builder()
            return b.graph.nodes[-1] if b is not None else None
        return train

    def _default_var_list(self, var_list: Sequence[Variable] | None) -> list[Variable]:
        if var_list is not None:
            return list(var_list)
        b = current_builder()
        found = [v for v in b.variables.values() if v.trainable]
        if not found:
            raise CompileError("no trainable variables to optimize; pass var_list")
        return found

    # -- clipping ------------------------------------------------------------------------
    def _clip(self, pairs: list) -> list:
        """The pairs with clipped gradients (Keras' ``_clip_gradients``)."""
        if self.clipnorm is not None:
            return [(_map_values(g, lambda t: _math().clip_by_norm(t, self.clipnorm)), v)
                    for g, v in pairs]
        if self.clipvalue is not None:
            m = _math()
            c = self.clipvalue
            return [(_map_values(g, lambda t: m.minimum(m.maximum(t, -c), c)), v)
                    for g, v in pairs]
        if self.global_clipnorm is not None:
            grads = _math().clip_by_global_norm([g for g, _ in pairs], self.global_clipnorm)[0]
            return list(zip(grads, [v for _, v in pairs]))
        return pairs

    # -- hooks ---------------------------------------------------------------------------
    def _current_lr(self) -> Any:
        """The learning rate of the step being built (a schedule evaluated once per call)."""
        if "lr" not in self._call:
            lr = self.learning_rate
            if self._lr_override is not None:  # an eager step evaluated it already
                lr = self._lr_override
            elif _is_schedule(lr):
                lr = lr(self._call["step"])
            elif callable(lr):
                lr = lr()
            self._call["lr"] = lr
        return self._call["lr"]

    def _lr(self, var: Variable) -> Any:
        return _in_dtype_of(self._current_lr(), var)

    def _step_as(self, var: Variable) -> Any:
        """The number of steps applied before this one, in `var`'s dtype."""
        return _math().cast(self._call["step"], var.dtype)

    def _prepare(self, pairs: list) -> None:
        """Per-call values shared by every variable's update (in ``self._call``)."""

    def _apply(self, var: Variable, grad: Any, slots: dict[str, Variable]) -> list:
        raise NotImplementedError

    def _apply_sparse(self, var: Variable, grad: IndexedSlices,
                      slots: dict[str, Variable]) -> list:
        """The update for a sparse gradient; by default the dense update of its dense
        tensor (built next to the variable, so only the slices travel)."""
        return self._apply(var, to_dense(grad), slots)

    def _finish(self, pairs: list) -> list:
        return []


_UNSET = object()


def _after(ops: list) -> Any:
    """Build under control dependencies on `ops` (none: no scope)."""
    import contextlib

    from .context import control_dependencies
    return control_dependencies(ops) if ops else contextlib.nullcontext()


def _is_hyperparameter(opt: Optimizer, name: str) -> bool:
    """Whether attribute `name` can change the update a trace builds (the same rule as
    the eager updates' cache key, `eager_update._hyper_key`)."""
    return not name.startswith("_") or name in opt._eager_key_attrs


def _same_value(old: Any, new: Any) -> bool:
    """Whether setting `new` over `old` leaves a traced update as it is: the same
    object, or an equal Python number of the same type (bitwise for floats: -0.0)."""
    if old is new:
        return True
    if type(old) is not type(new) or not isinstance(new, (bool, int, float, str)):
        return False
    return old.hex() == new.hex() if isinstance(new, float) else old == new


def _is_schedule(lr: Any) -> bool:
    from .schedules import LearningRateSchedule
    return isinstance(lr, LearningRateSchedule)


def _restore_into(var: Variable, value: np.ndarray, what: str) -> None:
    value = np.asarray(value)
    want = tuple(d or 0 for d in var.shape)
    if value.shape != want or value.dtype != var.dtype.np:
        raise ValueError(f"checkpoint value for {what} has {value.dtype}{list(value.shape)}, "
                         f"the optimizer's state is {var.dtype.np}{list(want)}")
    var._state.assign(value)


def _in_dtype_of(value: Any, var: Variable) -> Any:
    """A hyperparameter for `var`'s update: a Python number as it is (exact in the
    variable's dtype), a tensor or variable cast to that dtype."""
    return _math().cast(value, var.dtype) if not isinstance(value, (int, float)) else value


def _map_values(g: Any, fn: Callable[[Any], Any]) -> Any:
    """`fn` on a dense gradient, or on the values of an `IndexedSlices` one."""
    if isinstance(g, IndexedSlices):
        return IndexedSlices(fn(g.values), g.indices, g.dense_shape)
    return fn(g)


class SGD(Optimizer):
    """Plain gradient descent: ``var -= learning_rate * grad``."""

    def __init__(self, learning_rate: Any = 0.01, name: str = "SGD",
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None) -> None:
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm)

    def _apply(self, var, grad, slots):
        return [var.assign_sub(self._lr(var) * grad, read_value=False)]

    def _apply_sparse(self, var, grad, slots):
        # only the rows of the slices change (TensorFlow's ResourceScatterSub)
        return [scatter_sub(var, grad.indices, self._lr(var) * grad.values)]


class Momentum(Optimizer):
    """``accum = momentum * accum + grad; var -= lr * accum`` (Nesterov:
    ``var -= lr * grad + lr * momentum * accum``)."""

    _slot_inits = {"momentum": 0.0}

    def __init__(self, learning_rate: Any = 0.01, momentum: float = 0.9, nesterov: bool = False,
                 name: str = "Momentum",
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None) -> None:
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm)
        self.momentum = momentum
        self.nesterov = nesterov

    def _apply(self, var, grad, slots):
        acc = slots["momentum"]
        lr = self._lr(var)
        new_acc = acc.read_value() * self.momentum + grad
        ops = [acc.assign(new_acc, read_value=False)]
        if self.nesterov:
            ops.append(var.assign_sub(grad * lr + new_acc * self.momentum * lr, read_value=False))
        else:
            ops.append(var.assign_sub(lr * new_acc, read_value=False))
        return ops

    def _apply_sparse(self, var, grad, slots):
        # TensorFlow's ResourceSparseApplyMomentum: only the touched rows of the variable
        # and of the accumulator change (repeated indices summed first)
        values, rows = deduplicate(grad.values, grad.indices)
        acc = slots["momentum"]
        lr = self._lr(var)
        new_acc = gather_rows(acc, rows) * self.momentum + values
        step = values * lr + new_acc * self.momentum * lr if self.nesterov else lr * new_acc
        return [scatter_update(acc, rows, new_acc), scatter_sub(var, rows, step)]


class Adagrad(Optimizer):
    """``accum += grad**2; var -= lr * grad / (sqrt(accum) + epsilon)``."""

    def __init__(self, learning_rate: Any = 0.001, initial_accumulator_value: float = 0.1,
                 epsilon: float = 1e-7, name: str = "Adagrad",
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None) -> None:
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm)
        self._slot_inits = {"accumulator": initial_accumulator_value}
        self.epsilon = epsilon

    def _apply(self, var, grad, slots):
        m = _math()
        acc = slots["accumulator"]
        new_acc = acc.read_value() + m.square(grad)
        denom = m.sqrt(new_acc) + self.epsilon if self.epsilon else m.sqrt(new_acc)
        return [acc.assign(new_acc, read_value=False),
                var.assign_sub(self._lr(var) * grad / denom, read_value=False)]

    def _apply_sparse(self, var, grad, slots):
        # TensorFlow's ResourceSparseApplyAdagrad: the dense rule on the touched rows
        # (repeated indices summed first); the others would not change anyway
        m = _math()
        values, rows = deduplicate(grad.values, grad.indices)
        acc = slots["accumulator"]
        new_acc = gather_rows(acc, rows) + m.square(values)
        denom = m.sqrt(new_acc) + self.epsilon if self.epsilon else m.sqrt(new_acc)
        return [scatter_update(acc, rows, new_acc),
                scatter_sub(var, rows, self._lr(var) * values / denom)]


class Adadelta(Optimizer):
    """TensorFlow's ApplyAdadelta: running averages of squared gradients and updates."""

    _slot_inits = {"accum": 0.0, "accum_update": 0.0}

    def __init__(self, learning_rate: Any = 0.001, rho: float = 0.95, epsilon: float = 1e-7,
                 name: str = "Adadelta",
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None) -> None:
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm)
        self.rho = rho
        self.epsilon = epsilon

    def _rule(self, grad, old_accum, old_update):
        """(new accum, new accum_update, the step) from the old slot values."""
        m = _math()
        rho, eps = self.rho, self.epsilon
        new_accum = old_accum * rho + m.square(grad) * (1 - rho)
        update = m.sqrt(old_update + eps) / m.sqrt(new_accum + eps) * grad
        new_update = old_update * rho + m.square(update) * (1 - rho)
        return new_accum, new_update, update

    def _apply(self, var, grad, slots):
        accum, accum_update = slots["accum"], slots["accum_update"]
        new_accum, new_update, update = self._rule(grad, accum.read_value(),
                                                   accum_update.read_value())
        return [accum.assign(new_accum, read_value=False),
                accum_update.assign(new_update, read_value=False),
                var.assign_sub(self._lr(var) * update, read_value=False)]

    def _apply_sparse(self, var, grad, slots):
        # TensorFlow's (Resource)SparseApplyAdadelta: only the touched rows of the slots
        # and the variable change (repeated indices summed first); densified, the other
        # rows' accumulators would decay at every step
        values, rows = deduplicate(grad.values, grad.indices)
        accum, accum_update = slots["accum"], slots["accum_update"]
        new_accum, new_update, update = self._rule(values, gather_rows(accum, rows),
                                                   gather_rows(accum_update, rows))
        return [scatter_update(accum, rows, new_accum),
                scatter_update(accum_update, rows, new_update),
                scatter_sub(var, rows, self._lr(var) * update)]


class RMSProp(Optimizer):
    """TensorFlow's ApplyRMSProp / ApplyCenteredRMSProp:
    ``ms = rho*ms + (1-rho)*g**2; mom = momentum*mom + lr*g/sqrt(ms [- mg**2] + eps);
    var -= mom``."""

    def __init__(self, learning_rate: Any = 0.001, rho: float = 0.9, momentum: float = 0.0,
                 epsilon: float = 1e-7, centered: bool = False, name: str = "RMSProp",
                 initial_ms: float = 0.0,
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None) -> None:
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm)
        self.rho, self.momentum, self.epsilon, self.centered = rho, momentum, epsilon, centered
        self._slot_inits = {"rms": initial_ms, "momentum": 0.0}
        if centered:
            self._slot_inits["mg"] = 0.0

    def _rule(self, var, grad, read):
        """The new slot values {slot: value} from the gradient and `read(slot)`."""
        m = _math()
        rho = self.rho
        new = {"rms": read("rms") * rho + m.square(grad) * (1 - rho)}
        denom_sq = new["rms"]
        if self.centered:
            new["mg"] = read("mg") * rho + grad * (1 - rho)
            denom_sq = new["rms"] - m.square(new["mg"])
        new["momentum"] = (read("momentum") * self.momentum
                           + self._lr(var) * grad / m.sqrt(denom_sq + self.epsilon))
        return new

    def _apply(self, var, grad, slots):
        new = self._rule(var, grad, lambda k: slots[k].read_value())
        ops = [slots[k].assign(v, read_value=False) for k, v in new.items()]
        ops.append(var.assign_sub(new["momentum"], read_value=False))
        return ops

    def _apply_sparse(self, var, grad, slots):
        # TensorFlow's ResourceSparseApply(Centered)RMSProp: only the touched rows of the
        # slots and the variable change (repeated indices summed first)
        values, rows = deduplicate(grad.values, grad.indices)
        new = self._rule(var, values, lambda k: gather_rows(slots[k], rows))
        ops = [scatter_update(slots[k], rows, v) for k, v in new.items()]
        ops.append(scatter_sub(var, rows, new["momentum"]))
        return ops


class Adam(Optimizer):
    """TensorFlow's ApplyAdam: ``lr_t = lr * sqrt(1 - beta2**t) / (1 - beta1**t)``,
    ``m = beta1*m + (1-beta1)*g``, ``v = beta2*v + (1-beta2)*g**2``,
    ``var -= lr_t * m / (sqrt(v) + epsilon)``. With `amsgrad` (Reddi et al. 2018, as
    Keras), the update divides by the running maximum of `v` (slot ``vhat``) instead."""

    _slot_inits = {"m": 0.0, "v": 0.0}
    _needs_step = True

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, amsgrad: bool = False, name: str = "Adam",
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None) -> None:
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        self.amsgrad = amsgrad
        if amsgrad:
            self._slot_inits = {"m": 0.0, "v": 0.0, "vhat": 0.0}

    def _apply(self, var, grad, slots):
        m = _math()
        t = self._step_as(var) + 1
        b1, b2 = self.beta_1, self.beta_2
        lr_t = self._lr(var) * m.sqrt(1 - m.pow(constant(b2, var.dtype), t)) / (
            1 - m.pow(constant(b1, var.dtype), t))
        new_m = slots["m"].read_value() * b1 + grad * (1 - b1)
        new_v = slots["v"].read_value() * b2 + m.square(grad) * (1 - b2)
        ops = [slots["m"].assign(new_m, read_value=False),
               slots["v"].assign(new_v, read_value=False)]
        denom_v = new_v
        if self.amsgrad:
            denom_v = m.maximum(slots["vhat"].read_value(), new_v)
            ops.append(slots["vhat"].assign(denom_v, read_value=False))
        ops.append(var.assign_sub(lr_t * new_m / (m.sqrt(denom_v) + self.epsilon),
                                  read_value=False))
        return ops


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter 2019), as Keras' AdamW:
    each step first shrinks the variable, ``var -= learning_rate * weight_decay * var``,
    then applies the Adam update. Variables named by `exclude_from_weight_decay` are
    not decayed."""

    _eager_key_attrs = (*Optimizer._eager_key_attrs, "_excluded_vars", "_excluded_names")

    def __init__(self, learning_rate: Any = 0.001, weight_decay: float = 0.004,
                 beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7,
                 amsgrad: bool = False, name: str = "AdamW",
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None) -> None:
        if weight_decay is None:
            raise ValueError("AdamW: weight_decay must be a number, got None")
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, name, clipnorm,
                         clipvalue, global_clipnorm)
        self.weight_decay = weight_decay
        self._excluded_vars: set[int] = set()
        self._excluded_names: list[str] = []

    def exclude_from_weight_decay(self, var_list: Sequence[Variable] | None = None,
                                  var_names: Sequence[str] | None = None) -> None:
        """Do not decay the variables in `var_list`, nor those whose name contains one
        of the strings in `var_names` (Keras' rule)."""
        self._excluded_vars.update(id(v) for v in var_list or [])
        self._excluded_names.extend(var_names or [])
        trace_dependencies.changed(self)  # traces that decayed these variables

    def _decays(self, var: Variable) -> bool:
        if id(var) in self._excluded_vars:
            return False
        return not any(n in var.name for n in self._excluded_names)

    def _weight_decay(self, var: Variable) -> list:
        if not self.weight_decay or not self._decays(var):
            return []
        # before the Adam update, on the variable as it was (Keras' _apply_weight_decay)
        return [var.assign_sub(var.read_value() * (self._lr(var) * self.weight_decay),
                               read_value=False)]

    def _apply(self, var, grad, slots):
        return self._weight_decay(var) + super()._apply(var, grad, slots)


class Nadam(Optimizer):
    """Keras' Nadam (Dozat 2016): Adam with Nesterov momentum and the momentum cache
    schedule ``u_t = beta_1 * (1 - 0.5 * 0.96**t)``. With ``U_t = u_1 * ... * u_t``
    (kept in the ``u_product`` variable)::

        m = beta_1*m + (1-beta_1)*g;  v = beta_2*v + (1-beta_2)*g**2
        m_hat = u_{t+1} * m / (1 - U_t * u_{t+1}) + (1 - u_t) * g / (1 - U_t)
        v_hat = v / (1 - beta_2**t)
        var -= lr * m_hat / (sqrt(v_hat) + epsilon)
    """

    _slot_inits = {"m": 0.0, "v": 0.0}
    _needs_step = True
    _DECAY = 0.96

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, name: str = "Nadam",
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None) -> None:
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon

    def _prepare(self, pairs):
        # one u_product for all variables, in the first variable's dtype (as Keras)
        first = pairs[0][1]
        with colocate_with(first):
            u_prod = self._non_slot_variable(first, "u_product", np.ones((), first.dtype.np))
            self._call["u_product_old"] = u_prod.read_value()

    def _u(self, var: Variable, step: Any) -> Any:
        m = _math()
        return self.beta_1 * (1.0 - 0.5 * m.pow(constant(self._DECAY, var.dtype), step))

    def _u_product(self, var: Variable) -> Any:
        """U_t in `var`'s dtype: the stored product times this step's u_t."""
        m = _math()
        t = self._step_as(var) + 1
        return m.cast(self._call["u_product_old"], var.dtype) * self._u(var, t)

    def _apply(self, var, grad, slots):
        m = _math()
        t = self._step_as(var) + 1
        b1, b2 = self.beta_1, self.beta_2
        u_t, u_next = self._u(var, t), self._u(var, t + 1)
        u_prod = self._u_product(var)
        u_prod_next = u_prod * u_next
        new_m = slots["m"].read_value() * b1 + grad * (1 - b1)
        new_v = slots["v"].read_value() * b2 + m.square(grad) * (1 - b2)
        m_hat = new_m * u_next / (1 - u_prod_next) + grad * (1 - u_t) / (1 - u_prod)
        v_hat = new_v / (1 - m.pow(constant(b2, var.dtype), t))
        return [slots["m"].assign(new_m, read_value=False),
                slots["v"].assign(new_v, read_value=False),
                var.assign_sub(m_hat * self._lr(var) / (m.sqrt(v_hat) + self.epsilon),
                               read_value=False)]

    def _finish(self, pairs):
        u_prod = self._non_slot["u_product"]
        with colocate_with(u_prod):
            return [u_prod.assign(self._u_product(u_prod), read_value=False)]


class Ftrl(Optimizer):
    """TensorFlow's ApplyFtrl / ApplyFtrlV2 (FTRL-proximal, McMahan et al. 2013)::

        g_s = grad + 2 * l2_shrinkage * var            (grad when l2_shrinkage is 0)
        new_accum = accum + grad**2
        linear += g_s - (new_accum**-p - accum**-p) / lr * var      (p: learning_rate_power)
        l2' = l2 + beta / (2 * lr)
        var = (sign(linear) * l1 - linear) / (new_accum**-p / lr + 2 * l2') if |linear| > l1
              else 0
    """

    # the accumulator slot's name: Keras' "accumulator"; TensorFlow 1's FtrlOptimizer
    # calls it "accum" (its get_slot / get_slot_names)
    _accumulator_slot = "accumulator"

    def __init__(self, learning_rate: Any = 0.001, learning_rate_power: float = -0.5,
                 initial_accumulator_value: float = 0.1, l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, name: str = "Ftrl",
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None,
                 l2_shrinkage_regularization_strength: float = 0.0,
                 beta: float = 0.0) -> None:
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm)
        # TensorFlow's and Keras' checks (the kernel's rule assumes them)
        what = type(self).__name__
        _check_at_least(what, "initial_accumulator_value", initial_accumulator_value, 0.0)
        _check_at_least(what, "l1_regularization_strength", l1_regularization_strength, 0.0)
        _check_at_least(what, "l2_regularization_strength", l2_regularization_strength, 0.0)
        _check_at_least(what, "l2_shrinkage_regularization_strength",
                        l2_shrinkage_regularization_strength, 0.0)
        if isinstance(learning_rate_power, (int, float)) and learning_rate_power > 0:
            raise ValueError(f"{what}: learning_rate_power must be less than or equal to 0, "
                             f"got {learning_rate_power!r}")
        self._slot_inits = {self._accumulator_slot: initial_accumulator_value, "linear": 0.0}
        self.lr_power = learning_rate_power
        self.l1 = l1_regularization_strength
        self.l2 = l2_regularization_strength
        self.l2_shrinkage = l2_shrinkage_regularization_strength
        self.beta = 0.0 if beta is None else beta

    def _rule(self, var, grad, old_acc, old_lin, w):
        """(new accumulator, new linear, new weights) from the old values."""
        m = _math()
        lr = self._lr(var)
        new_acc = old_acc + m.square(grad)
        p = -_in_dtype_of(self.lr_power, var)
        sigma = (m.pow(new_acc, p) - m.pow(old_acc, p)) / lr
        # TensorFlow 1 applies ApplyFtrl (no shrinkage term) when l2_shrinkage is 0:
        # `grad + 0 * var` would turn an infinite weight's gradient into NaN
        shrinking = not (isinstance(self.l2_shrinkage, (int, float)) and self.l2_shrinkage == 0)
        g_s = grad + w * (2 * _in_dtype_of(self.l2_shrinkage, var)) if shrinking else grad
        new_lin = old_lin + (g_s - sigma * w)  # the kernel's `linear += ...`
        l2 = _in_dtype_of(self.l2, var)
        if not (isinstance(self.beta, (int, float)) and self.beta == 0):
            # TensorFlow 1 folds beta into l2 (its FtrlOptimizer._prepare, the rate
            # bounded below by 1e-36)
            floor = max(lr, 1e-36) if isinstance(lr, (int, float)) else m.maximum(lr, 1e-36)
            l2 = l2 + _in_dtype_of(self.beta, var) / (2 * floor)
        quadratic = m.pow(new_acc, p) / lr + 2 * l2
        l1 = _in_dtype_of(self.l1, var)
        shrunk = (m.sign(new_lin) * l1 - new_lin) / quadratic
        new_w = m.where(m.abs(new_lin) > l1, shrunk, m.multiply(shrunk, 0.0))
        return new_acc, new_lin, new_w

    def _apply(self, var, grad, slots):
        acc, lin = slots[self._accumulator_slot], slots["linear"]
        new_acc, new_lin, new_w = self._rule(var, grad, acc.read_value(), lin.read_value(),
                                             var.read_value())
        return [acc.assign(new_acc, read_value=False), lin.assign(new_lin, read_value=False),
                var.assign(new_w, read_value=False)]

    def _apply_sparse(self, var, grad, slots):
        # TensorFlow's ResourceSparseApplyFtrl(V2): only the touched rows change (repeated
        # indices summed first)
        values, rows = deduplicate(grad.values, grad.indices)
        acc, lin = slots[self._accumulator_slot], slots["linear"]
        new_acc, new_lin, new_w = self._rule(var, values, gather_rows(acc, rows),
                                             gather_rows(lin, rows), gather_rows(var, rows))
        return [scatter_update(acc, rows, new_acc), scatter_update(lin, rows, new_lin),
                scatter_update(var, rows, new_w)]


class Adamax(Optimizer):
    """Keras' Adamax (Kingma & Ba 2015, section 7.1: Adam with the infinity norm)::

        m = m + (grad - m) * (1 - beta_1);  u = max(beta_2 * u, |grad|)
        var -= lr * m / ((1 - beta_1**t) * (u + epsilon))

    Slots ``m`` and ``u`` (tf_keras' names). A sparse gradient updates as its dense
    tensor (repeated rows summed), as tf_keras' sparse rule does: every row's slots
    decay at every step."""

    _slot_inits = {"m": 0.0, "u": 0.0}
    _needs_step = True

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, name: str = "Adamax",
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None) -> None:
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon

    def _apply(self, var, grad, slots):
        m = _math()
        t = self._step_as(var) + 1
        b1 = self.beta_1
        old_m = slots["m"].read_value()
        new_m = old_m + (grad - old_m) * (1 - b1)
        new_u = m.maximum(slots["u"].read_value() * self.beta_2, m.abs(grad))
        correction = 1 - m.pow(constant(b1, var.dtype), t)
        return [slots["m"].assign(new_m, read_value=False),
                slots["u"].assign(new_u, read_value=False),
                var.assign_sub(self._lr(var) * new_m / (correction * (new_u + self.epsilon)),
                               read_value=False)]


class Lion(Optimizer):
    """Keras' Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms")::

        var -= lr * sign(beta_1 * m + (1 - beta_1) * grad)
        m = beta_2 * m + (1 - beta_2) * grad

    Slot ``m`` (tf_keras' name). A sparse gradient updates as its dense tensor (repeated
    rows summed), as Keras does."""

    _slot_inits = {"m": 0.0}

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.99,
                 name: str = "Lion",
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None) -> None:
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm)
        if isinstance(beta_1, (int, float)) and not 0 < beta_1 <= 1:
            # Keras' check: beta_1 = 0 makes Lion SignSGD
            raise ValueError(f"Lion: beta_1 must be in (0, 1], got {beta_1!r}")
        self.beta_1, self.beta_2 = beta_1, beta_2

    def _apply(self, var, grad, slots):
        m = _math()
        b1, b2 = self.beta_1, self.beta_2
        old_m = slots["m"].read_value()
        direction = m.sign(old_m * b1 + grad * (1 - b1))
        return [var.assign_sub(self._lr(var) * direction, read_value=False),
                slots["m"].assign(old_m * b2 + grad * (1 - b2), read_value=False)]


class Adafactor(Optimizer):
    """Keras 3's Adafactor (Shazeer & Stern 2018). With ``t`` the step (1 at the first),
    ``rho = min(lr, 1 / sqrt(t))``, ``beta_2 = 1 - t**beta_2_decay``,
    ``sq = grad**2 + epsilon_1``::

        variables of rank >= 2 (second moments factored over the last two dims):
          r = beta_2 * r + (1 - beta_2) * mean(sq, axis=-1)
          c = beta_2 * c + (1 - beta_2) * mean(sq, axis=-2)
          v = (r / mean(r, axis=-1))[..., None] * c[..., None, :]
        others:  v = beta_2 * v + (1 - beta_2) * sq
        u = grad / sqrt(v);  u /= max(1, rms(u) / clip_threshold)
        var -= max(epsilon_2, rms(var)) * rho * u

    (``rms(x) = sqrt(mean(x**2))`` over all elements). Slots ``r``, ``c`` (shapes
    ``var.shape[:-1]`` and ``var.shape[:-2] + var.shape[-1:]``; 0-d placeholders for
    variables of rank < 2, as Keras) and ``v``. `relative_step` is kept for Keras'
    signature: its rule clamps the rate by ``1 / sqrt(t)`` either way. A sparse gradient
    updates as its dense tensor (repeated rows summed)."""

    _slot_inits = {"r": 0.0, "c": 0.0, "v": 0.0}
    _needs_step = True

    def __init__(self, learning_rate: Any = 0.001, beta_2_decay: float = -0.8,
                 epsilon_1: float = 1e-30, epsilon_2: float = 1e-3, clip_threshold: float = 1.0,
                 relative_step: bool = True, name: str = "Adafactor",
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None) -> None:
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm)
        self.beta_2_decay, self.epsilon_1, self.epsilon_2 = beta_2_decay, epsilon_1, epsilon_2
        self.clip_threshold, self.relative_step = clip_threshold, relative_step

    def _slot_initial(self, slot: str, var: Variable) -> np.ndarray:
        shape = [d or 0 for d in var.shape]
        if slot != "v":
            if len(shape) < 2:
                shape = []
            elif slot == "r":
                shape = shape[:-1]
            else:
                shape = shape[:-2] + shape[-1:]
        return np.zeros(shape, dtype=var.dtype.np)

    def _apply(self, var, grad, slots):
        m = _math()
        t = self._step_as(var) + 1
        rho = m.minimum(self._lr(var), 1 / m.sqrt(t))
        w = var.read_value()
        alpha = m.maximum(constant(self.epsilon_2, var.dtype), _rms(w)) * rho
        sq = m.square(grad) + self.epsilon_1
        beta_2 = 1 - m.pow(t, constant(self.beta_2_decay, var.dtype))
        r, c, v = slots["r"], slots["c"], slots["v"]
        ops = []
        if len(var.shape) >= 2:
            from .ops.array import expand_dims
            new_r = beta_2 * r.read_value() + (1 - beta_2) * m.reduce_mean(sq, axis=-1)
            new_c = beta_2 * c.read_value() + (1 - beta_2) * m.reduce_mean(sq, axis=-2)
            new_v = (expand_dims(new_r / m.reduce_mean(new_r, axis=-1, keepdims=True), -1)
                     * expand_dims(new_c, -2))
            ops += [r.assign(new_r, read_value=False), c.assign(new_c, read_value=False)]
        else:
            new_v = beta_2 * v.read_value() + (1 - beta_2) * sq
        u = grad / m.sqrt(new_v)
        u = u / m.maximum(constant(1.0, var.dtype), _rms(u) / self.clip_threshold)
        return ops + [v.assign(new_v, read_value=False),
                      var.assign_sub(alpha * u, read_value=False)]


def _rms(x: Any) -> Any:
    """``sqrt(mean(x**2))`` over all elements."""
    m = _math()
    return m.sqrt(m.reduce_mean(m.square(x)))


def _check_at_least(what: str, arg: str, value: Any, low: float, strict: bool = False) -> None:
    """A ValueError naming `arg` when the Python number `value` is below `low` (or equal
    to it, `strict`); tensors are not checked (their value is known when the step runs)."""
    if not isinstance(value, (int, float)):
        return
    if value < low or (strict and value == low):
        bound = f"greater than {low}" if strict else f"greater than or equal to {low}"
        raise ValueError(f"{what}: {arg} must be {bound}, got {value!r}")


def _proximal_step(w: Any, grad: Any, lr: Any, l1: Any, l2: Any) -> Any:
    """TensorFlow's proximal update (ApplyProximalGradientDescent; ApplyProximalAdagrad
    with its per-element rate): a gradient step, then the L1 shrinkage and L2 scaling::

        prox = w - lr * grad
        w = sign(prox) * max(|prox| - lr * l1, 0) / (1 + lr * l2)   (prox / (1 + lr * l2)
                                                                      when l1 is 0)
    """
    m = _math()
    prox = w - lr * grad
    scale = 1 + lr * l2
    if isinstance(l1, (int, float)) and l1 <= 0:  # the kernel's `l1 > 0` branch
        return prox / scale
    # (a tensor l1 of 0 gives sign(prox) * |prox| = prox: the same values)
    return m.sign(prox) * m.maximum(m.abs(prox) - lr * l1, 0.0) / scale


class ProximalGradientDescent(Optimizer):
    """TensorFlow's ApplyProximalGradientDescent (Duchi & Singer 2009, forward-backward
    splitting): ``prox = var - lr * grad``, then
    ``var = sign(prox) * max(|prox| - lr * l1, 0) / (1 + lr * l2)``. No slots."""

    def __init__(self, learning_rate: Any = 0.01, l1_regularization_strength: Any = 0.0,
                 l2_regularization_strength: Any = 0.0, name: str = "ProximalGradientDescent",
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None) -> None:
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm)
        what = type(self).__name__
        _check_at_least(what, "l1_regularization_strength", l1_regularization_strength, 0.0)
        _check_at_least(what, "l2_regularization_strength", l2_regularization_strength, 0.0)
        self.l1 = l1_regularization_strength
        self.l2 = l2_regularization_strength

    def _new_value(self, var, w, grad):
        return _proximal_step(w, grad, self._lr(var), _in_dtype_of(self.l1, var),
                              _in_dtype_of(self.l2, var))

    def _apply(self, var, grad, slots):
        return [var.assign(self._new_value(var, var.read_value(), grad), read_value=False)]

    def _apply_sparse(self, var, grad, slots):
        # TensorFlow's (Resource)SparseApplyProximalGradientDescent, which the optimizer
        # gives the slices with repeated indices summed: only those rows change
        values, rows = deduplicate(grad.values, grad.indices)
        return [scatter_update(var, rows, self._new_value(var, gather_rows(var, rows), values))]


class ProximalAdagrad(Optimizer):
    """TensorFlow's ApplyProximalAdagrad: ``accum += grad**2``, then the proximal step
    of `ProximalGradientDescent` with the per-element rate ``lr / sqrt(accum)``. Slot
    ``accumulator``."""

    def __init__(self, learning_rate: Any = 0.001, initial_accumulator_value: float = 0.1,
                 l1_regularization_strength: Any = 0.0, l2_regularization_strength: Any = 0.0,
                 name: str = "ProximalAdagrad",
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None) -> None:
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm)
        what = type(self).__name__
        _check_at_least(what, "initial_accumulator_value", initial_accumulator_value, 0.0,
                        strict=True)
        _check_at_least(what, "l1_regularization_strength", l1_regularization_strength, 0.0)
        _check_at_least(what, "l2_regularization_strength", l2_regularization_strength, 0.0)
        self._slot_inits = {"accumulator": initial_accumulator_value}
        self.l1 = l1_regularization_strength
        self.l2 = l2_regularization_strength

    def _rule(self, var, w, grad, old_acc):
        """(new accumulator, new weights)."""
        new_acc = old_acc + _math().square(grad)
        rate = self._lr(var) / _math().sqrt(new_acc)
        return new_acc, _proximal_step(w, grad, rate, _in_dtype_of(self.l1, var),
                                       _in_dtype_of(self.l2, var))

    def _apply(self, var, grad, slots):
        acc = slots["accumulator"]
        new_acc, new_w = self._rule(var, var.read_value(), grad, acc.read_value())
        return [acc.assign(new_acc, read_value=False), var.assign(new_w, read_value=False)]

    def _apply_sparse(self, var, grad, slots):
        # TensorFlow's (Resource)SparseApplyProximalAdagrad on the slices with repeated
        # indices summed (as the optimizer gives them): only those rows change
        values, rows = deduplicate(grad.values, grad.indices)
        acc = slots["accumulator"]
        new_acc, new_w = self._rule(var, gather_rows(var, rows), values, gather_rows(acc, rows))
        return [scatter_update(acc, rows, new_acc), scatter_update(var, rows, new_w)]


class AdagradDA(Optimizer):
    """TensorFlow's ApplyAdagradDA (Adagrad dual averaging, Duchi et al. 2011), for
    sparse linear models. With ``T = global_step + 1`` (the step read before this one's
    increment, as TensorFlow 1's AdagradDAOptimizer)::

        g_acc += grad;  gg_acc += grad**2
        var = -lr * sign(g_acc) * max(|g_acc| - l1 * T, 0) / (l2 * T * lr + sqrt(gg_acc))

    (``-lr * g_acc / (...)`` when l1 is 0). Slots ``gradient_accumulator`` and
    ``gradient_squared_accumulator``; `global_step` is an integer variable or tensor."""

    _eager_key_attrs = (*Optimizer._eager_key_attrs, "_global_step")

    def __init__(self, learning_rate: Any, global_step: Any,
                 initial_gradient_squared_accumulator_value: float = 0.1,
                 l1_regularization_strength: Any = 0.0, l2_regularization_strength: Any = 0.0,
                 name: str = "AdagradDA",
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None) -> None:
        super().__init__(learning_rate, name, clipnorm, clipvalue, global_clipnorm)
        what = type(self).__name__
        if global_step is None:
            raise ValueError(f"{what}: global_step is required (the step count T of the "
                             f"update rule)")
        _check_at_least(what, "initial_gradient_squared_accumulator_value",
                        initial_gradient_squared_accumulator_value, 0.0, strict=True)
        _check_at_least(what, "l1_regularization_strength", l1_regularization_strength, 0.0)
        _check_at_least(what, "l2_regularization_strength", l2_regularization_strength, 0.0)
        self._slot_inits = {"gradient_accumulator": 0.0,
                            "gradient_squared_accumulator":
                                initial_gradient_squared_accumulator_value}
        self._global_step = global_step
        self.l1 = l1_regularization_strength
        self.l2 = l2_regularization_strength

    def _prepare(self, pairs):
        step = self._global_step
        if isinstance(step, Variable):
            with colocate_with(step):
                step = step.read_value()
        step = convert_to_tensor(step)
        if not step.dtype.is_integer or tuple(step.shape) != ():
            raise DTypeError(f"the global_step of {type(self).__name__} must be an integer "
                             f"scalar: expected int64[], got {step.dtype.ir_name}"
                             f"{format_shape(step.shape)}", op=f"{type(self).__name__}")
        # read once for every variable, before the caller's increment (which runs after
        # the update: the update reads it)
        self._call["da_step"] = step + 1

    def _rule(self, var, grad, old_g, old_gg):
        """(new gradient accumulator, new squared accumulator, new weights)."""
        m = _math()
        lr = self._lr(var)
        steps = m.cast(self._call["da_step"], var.dtype)
        new_g = old_g + grad
        new_gg = old_gg + m.square(grad)
        l1, l2 = _in_dtype_of(self.l1, var), _in_dtype_of(self.l2, var)
        denom = l2 * steps * lr + m.sqrt(new_gg)
        if isinstance(l1, (int, float)) and l1 <= 0:  # the kernel's `l1 > 0` branch
            return new_g, new_gg, -lr * new_g / denom
        shrunk = m.sign(new_g) * m.maximum(m.abs(new_g) - l1 * steps, 0.0)
        return new_g, new_gg, -lr * shrunk / denom

    def _apply(self, var, grad, slots):
        g_acc, gg_acc = slots["gradient_accumulator"], slots["gradient_squared_accumulator"]
        new_g, new_gg, new_w = self._rule(var, grad, g_acc.read_value(), gg_acc.read_value())
        return [g_acc.assign(new_g, read_value=False), gg_acc.assign(new_gg, read_value=False),
                var.assign(new_w, read_value=False)]

    def _apply_sparse(self, var, grad, slots):
        # TensorFlow's (Resource)SparseApplyAdagradDA on the slices with repeated indices
        # summed: only those rows change (the others are regularized when next seen)
        values, rows = deduplicate(grad.values, grad.indices)
        g_acc, gg_acc = slots["gradient_accumulator"], slots["gradient_squared_accumulator"]
        new_g, new_gg, new_w = self._rule(var, values, gather_rows(g_acc, rows),
                                          gather_rows(gg_acc, rows))
        return [scatter_update(g_acc, rows, new_g), scatter_update(gg_acc, rows, new_gg),
                scatter_update(var, rows, new_w)]


OPTIMIZERS: dict[str, Callable[..., Optimizer]] = {
    "sgd": SGD, "momentum": Momentum, "adagrad": Adagrad, "adadelta": Adadelta,
    "rmsprop": RMSProp, "adam": Adam, "adamw": AdamW, "nadam": Nadam, "ftrl": Ftrl,
    "adamax": Adamax, "lion": Lion, "adafactor": Adafactor}
