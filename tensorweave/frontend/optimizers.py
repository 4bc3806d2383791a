"""Optimizers written as ordinary graph code, as the paper argues: the update of each
variable is built from the public op functions (reads, arithmetic, assignments), and
optimizer state lives in slot variables created once per (optimizer, variable).

The update rules are TensorFlow's training ops (``ApplyGradientDescent``,
``ApplyMomentum``, ``ApplyAdagrad``, ``ApplyAdadelta``, ``ApplyRMSProp``, ``ApplyAdam``,
``ApplyFtrl``), so models trained with `tw.compat.v1.train` match TensorFlow 1 step for
step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import CompileError, TracingError
from . import ops as _ops  # noqa: F401  (registers the op functions used below)
from .autodiff import sparse_gradients
from .building import constant, convert_to_tensor
from .context import colocate_with, current_builder, name_scope
from .grouping import group
from .indexed_slices import IndexedSlices, to_dense
from .ops.scatter import deduplicate, gather_rows, scatter_sub, scatter_update
from .variables import Variable


def _math():
    from .ops import math
    return math


class Optimizer:
    """Base class: subclasses define `_slots` (slot name -> initial value) and
    `_apply(var, grad, slots)`, which returns the update ops."""

    _slot_inits: dict[str, float] = {}

    def __init__(self, learning_rate: Any, name: str) -> None:
        self.learning_rate = learning_rate
        self.name = name
        self._slots: dict[str, dict[str, Variable]] = {}
        self._iterations: Variable | None = None

    # -- slots ---------------------------------------------------------------------------
    def _slot_initial(self, slot: str, var: Variable) -> np.ndarray:
        return np.full([d or 0 for d in var.shape], self._slot_inits[slot], dtype=var.dtype.np)

    def get_slot(self, var: Variable, name: str) -> Variable:
        """The slot variable `name` (e.g. ``"m"``) that holds this optimizer's state for `var`."""
        return self._slots[var.shared_name][name]

    def get_slot_names(self) -> list[str]:
        return list(self._slot_inits)

    def variables(self) -> list[Variable]:
        """All state of this optimizer (slots, and the step counter if it has one)."""
        out = [s for slots in self._slots.values() for s in slots.values()]
        return out + ([self._iterations] if self._iterations is not None else [])

    def _ensure_slots(self, var: Variable) -> dict[str, Variable]:
        slots = self._slots.get(var.shared_name)
        if slots is None:
            slots = {s: var._create_slot(f"{self.name}/{s}", self._slot_initial(s, var))
                     for s in self._slot_inits}
            self._slots[var.shared_name] = slots
        return slots

    def _step_counter(self, like: Variable) -> Variable:
        if self._iterations is None:
            self._iterations = like._create_slot(f"{self.name}/iterations",
                                                 np.zeros((), like.dtype.np))
        return self._iterations

    # -- public API ----------------------------------------------------------------------
    def compute_gradients(self, loss: Any, var_list: Sequence[Variable] | None = None
                          ) -> list[tuple[Any, Variable]]:
        """``[(gradient, variable), ...]`` for `loss` (a tensor, or a callable returning one).
        The gradient of a variable that only Gathers read (an embedding) is a
        `tw.IndexedSlices` of the rows looked up."""
        if callable(loss):
            loss = loss()
        variables = self._default_var_list(var_list)
        grads = sparse_gradients([loss], variables)
        return list(zip(grads, variables))

    def apply_gradients(self, grads_and_vars: Any, name: str | None = None) -> Any:
        """Add the update ops for ``(gradient, variable)`` pairs; returns an op grouping them.
        Pairs whose gradient is None are skipped (that variable does not affect the loss)."""
        if current_builder() is None:
            raise TracingError(f"{type(self).__name__}.apply_gradients builds update ops: call "
                               f"it inside @tw.compile or a tw.compat.v1 Graph")
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise CompileError("no gradients provided for any variable")
        updates = []
        with name_scope(name or self.name):
            for g, var in pairs:
                if not isinstance(var, Variable):
                    raise TypeError(f"apply_gradients expects variables, got {var!r}")
                if not isinstance(g, IndexedSlices):
                    g = convert_to_tensor(g)
                slots = self._ensure_slots(var)
                # The update runs where the variable lives (a parameter server): only
                # the gradient crosses the network (only the rows of a sparse one), as
                # in TensorFlow.
                with colocate_with(var):
                    if isinstance(g, IndexedSlices):
                        updates.extend(self._apply_sparse(var, g, slots) or [])
                    else:
                        updates.extend(self._apply(var, g, slots) or [])
            updates.extend(self._finish(pairs) or [])
        return group(*updates)

    def minimize(self, loss: Any, var_list: Sequence[Variable] | None = None,
                 global_step: Variable | None = None, name: str | None = None) -> Any:
        """Compute gradients of `loss` and apply them; returns the training op."""
        grads_and_vars = self.compute_gradients(loss, var_list)
        if all(g is None for g, _ in grads_and_vars):
            names = ", ".join(v.name for _, v in grads_and_vars)
            raise CompileError(f"no gradients: none of the variables [{names}] affects the loss")
        train = self.apply_gradients(grads_and_vars, name=name)
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

    # -- hooks ---------------------------------------------------------------------------
    def _lr(self, var: Variable) -> Any:
        lr = self.learning_rate() if callable(self.learning_rate) else self.learning_rate
        return _math().cast(lr, var.dtype) if not isinstance(lr, (int, float)) else lr

    def _apply(self, var: Variable, grad: Any, slots: dict[str, Variable]) -> list:
        raise NotImplementedError

    def _apply_sparse(self, var: Variable, grad: IndexedSlices,
                      slots: dict[str, Variable]) -> list:
        """The update for a sparse gradient; by default the dense update of its dense
        tensor (built next to the variable, so only the slices travel)."""
        return self._apply(var, to_dense(grad), slots)

    def _finish(self, pairs: list) -> list:
        return []


class SGD(Optimizer):
    """Plain gradient descent: ``var -= learning_rate * grad``."""

    def __init__(self, learning_rate: Any = 0.01, name: str = "SGD") -> None:
        super().__init__(learning_rate, name)

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
                 name: str = "Momentum") -> None:
        super().__init__(learning_rate, name)
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
                 epsilon: float = 1e-7, name: str = "Adagrad") -> None:
        super().__init__(learning_rate, name)
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
                 name: str = "Adadelta") -> None:
        super().__init__(learning_rate, name)
        self.rho = rho
        self.epsilon = epsilon

    def _apply(self, var, grad, slots):
        m = _math()
        accum, accum_update = slots["accum"], slots["accum_update"]
        rho, eps = self.rho, self.epsilon
        new_accum = accum.read_value() * rho + m.square(grad) * (1 - rho)
        old_update = accum_update.read_value()
        update = m.sqrt(old_update + eps) / m.sqrt(new_accum + eps) * grad
        new_update = old_update * rho + m.square(update) * (1 - rho)
        return [accum.assign(new_accum, read_value=False),
                accum_update.assign(new_update, read_value=False),
                var.assign_sub(self._lr(var) * update, read_value=False)]


class RMSProp(Optimizer):
    """TensorFlow's ApplyRMSProp / ApplyCenteredRMSProp:
    ``ms = rho*ms + (1-rho)*g**2; mom = momentum*mom + lr*g/sqrt(ms [- mg**2] + eps);
    var -= mom``."""

    def __init__(self, learning_rate: Any = 0.001, rho: float = 0.9, momentum: float = 0.0,
                 epsilon: float = 1e-7, centered: bool = False, name: str = "RMSProp",
                 initial_ms: float = 0.0) -> None:
        super().__init__(learning_rate, name)
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
    ``var -= lr_t * m / (sqrt(v) + epsilon)``."""

    _slot_inits = {"m": 0.0, "v": 0.0}

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, name: str = "Adam") -> None:
        super().__init__(learning_rate, name)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon

    def _apply(self, var, grad, slots):
        m = _math()
        t = self._step_counter(var).read_value() + 1
        b1, b2 = self.beta_1, self.beta_2
        lr_t = self._lr(var) * m.sqrt(1 - m.pow(constant(b2, var.dtype), t)) / (
            1 - m.pow(constant(b1, var.dtype), t))
        new_m = slots["m"].read_value() * b1 + grad * (1 - b1)
        new_v = slots["v"].read_value() * b2 + m.square(grad) * (1 - b2)
        return [slots["m"].assign(new_m, read_value=False),
                slots["v"].assign(new_v, read_value=False),
                var.assign_sub(lr_t * new_m / (m.sqrt(new_v) + self.epsilon), read_value=False)]

    def _finish(self, pairs):
        counter = self._iterations
        return [] if counter is None else [counter.assign_add(1, read_value=False)]


class Ftrl(Optimizer):
    """TensorFlow's ApplyFtrl (FTRL-proximal, McMahan et al. 2013)."""

    def __init__(self, learning_rate: Any = 0.001, learning_rate_power: float = -0.5,
                 initial_accumulator_value: float = 0.1, l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, name: str = "Ftrl") -> None:
        super().__init__(learning_rate, name)
        self._slot_inits = {"accumulator": initial_accumulator_value, "linear": 0.0}
        self.lr_power = learning_rate_power
        self.l1 = l1_regularization_strength
        self.l2 = l2_regularization_strength

    def _rule(self, var, grad, old_acc, old_lin, w):
        """(new accumulator, new linear, new weights) from the old values."""
        m = _math()
        lr = self._lr(var)
        new_acc = old_acc + m.square(grad)
        p = -self.lr_power
        sigma = (m.pow(new_acc, p) - m.pow(old_acc, p)) / lr
        new_lin = old_lin + grad - sigma * w
        quadratic = m.pow(new_acc, p) / lr + 2 * self.l2
        shrunk = (m.sign(new_lin) * self.l1 - new_lin) / quadratic
        new_w = m.where(m.abs(new_lin) > self.l1, shrunk, m.multiply(shrunk, 0.0))
        return new_acc, new_lin, new_w

    def _apply(self, var, grad, slots):
        acc, lin = slots["accumulator"], slots["linear"]
        new_acc, new_lin, new_w = self._rule(var, grad, acc.read_value(), lin.read_value(),
                                             var.read_value())
        return [acc.assign(new_acc, read_value=False), lin.assign(new_lin, read_value=False),
                var.assign(new_w, read_value=False)]

    def _apply_sparse(self, var, grad, slots):
        # TensorFlow's ResourceSparseApplyFtrl: only the touched rows change (repeated
        # indices summed first)
        values, rows = deduplicate(grad.values, grad.indices)
        acc, lin = slots["accumulator"], slots["linear"]
        new_acc, new_lin, new_w = self._rule(var, values, gather_rows(acc, rows),
                                             gather_rows(lin, rows), gather_rows(var, rows))
        return [scatter_update(acc, rows, new_acc), scatter_update(lin, rows, new_lin),
                scatter_update(var, rows, new_w)]


OPTIMIZERS: dict[str, Callable[..., Optimizer]] = {
    "sgd": SGD, "momentum": Momentum, "adagrad": Adagrad, "adadelta": Adadelta,
    "rmsprop": RMSProp, "adam": Adam, "ftrl": Ftrl}
