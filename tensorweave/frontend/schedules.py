"""``tw.optimizers.schedules``: learning rates that change with the training step, with
TensorFlow 2's names, arguments and formulas (``tf.keras.optimizers.schedules``).

A schedule is a callable ``schedule(step) -> learning rate`` built from ordinary ops, so
an optimizer given one as its ``learning_rate`` evaluates it on its ``iterations``
variable *inside* the compiled training step: the step number is a run-time value, and
a compiled step is traced once however long training runs. Called eagerly (with a
Python int or an eager tensor) a schedule returns an eager tensor.

As in TensorFlow, the arithmetic is done in the dtype of ``initial_learning_rate``
converted to a tensor (float32 for a Python float); the step is cast to it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..compiler.dtypes import DType
from . import ops as _ops  # noqa: F401  (registers the op functions used below)
from .building import convert_to_tensor
from .context import name_scope

__all__ = ["LearningRateSchedule", "ExponentialDecay", "PiecewiseConstantDecay", "CosineDecay",
           "PolynomialDecay", "InverseTimeDecay", "serialize", "deserialize"]


def _m():
    from .ops import math as m
    return m


def _step(step: Any, dtype: DType) -> Any:
    """The step as a tensor of the schedule's dtype (TensorFlow casts it the same way)."""
    return _m().cast(convert_to_tensor(step), dtype)


def _positive(value: Any, what: str, cls: str) -> None:
    if isinstance(value, (int, float)) and not value > 0:
        raise ValueError(f"{cls}: {what} must be > 0, got {value}")


class LearningRateSchedule:
    """Base class of learning-rate schedules: subclasses define ``__call__(step)``
    (built from op functions, so it works on a traced step tensor) and ``get_config``."""

    def __call__(self, step: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __call__(step)")

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments that rebuild this schedule."""
        raise NotImplementedError(f"{type(self).__name__} must define get_config()")

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> LearningRateSchedule:
        """A schedule built from `get_config`'s output."""
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class _StepDecay(LearningRateSchedule):
    """What ExponentialDecay and InverseTimeDecay share: their arguments, and the decay
    progress ``step / decay_steps`` (floored with `staircase`); subclasses apply it to
    the rate in `_decayed`."""

    def __init__(self, initial_learning_rate: Any, decay_steps: Any, decay_rate: Any,
                 staircase: bool = False, name: str | None = None) -> None:
        _positive(decay_steps, "decay_steps", type(self).__name__)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def _decayed(self, lr: Any, rate: Any, p: Any) -> Any:
        raise NotImplementedError

    def __call__(self, step: Any) -> Any:
        m = _m()
        with name_scope(self.name or type(self).__name__):
            lr = convert_to_tensor(self.initial_learning_rate)
            dtype = lr.dtype
            p = _step(step, dtype) / m.cast(convert_to_tensor(self.decay_steps), dtype)
            if self.staircase:
                p = m.floor(p)
            return self._decayed(lr, m.cast(convert_to_tensor(self.decay_rate), dtype), p)

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments."""
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class ExponentialDecay(_StepDecay):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)``; with `staircase`
    the exponent is ``floor(step / decay_steps)`` (the rate drops every `decay_steps`)."""

    def _decayed(self, lr: Any, rate: Any, p: Any) -> Any:
        return lr * _m().pow(rate, p)


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` while ``step <= boundaries[0]``, ``values[i]`` while
    ``boundaries[i-1] < step <= boundaries[i]``, ``values[-1]`` after the last boundary."""

    def __init__(self, boundaries: Sequence[Any], values: Sequence[Any],
                 name: str | None = None) -> None:
        if len(boundaries) != len(values) - 1:
            raise ValueError(f"PiecewiseConstantDecay: the length of boundaries should be 1 "
                             f"less than the length of values, got {len(boundaries)} "
                             f"boundaries and {len(values)} values")
        if any(b2 < b1 for b1, b2 in zip(boundaries, boundaries[1:])):
            raise ValueError(f"PiecewiseConstantDecay: boundaries must be increasing, got "
                             f"{list(boundaries)}")
        self.boundaries = list(boundaries)
        self.values = list(values)
        self.name = name

    def __call__(self, step: Any) -> Any:
        m = _m()
        with name_scope(self.name or "PiecewiseConstant"):
            values = [convert_to_tensor(v) for v in self.values]
            dtype = values[0].dtype
            x = convert_to_tensor(step)
            # from the last interval back, so the first boundary the step does not exceed wins
            out = values[-1]
            for b, v in zip(reversed(self.boundaries), reversed(values[:-1])):
                bound = m.cast(convert_to_tensor(b), x.dtype)
                out = m.where(m.less_equal(x, bound), m.cast(v, dtype), out)
            return out

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments."""
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class CosineDecay(LearningRateSchedule):
    """Cosine decay (Loshchilov & Hutter, SGDR) from `initial_learning_rate`, or, with
    `warmup_target`, a linear warmup from `initial_learning_rate` to `warmup_target`
    over `warmup_steps` steps followed by the cosine decay from `warmup_target`:
    ``lr0 * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps))
    + alpha)``."""

    def __init__(self, initial_learning_rate: Any, decay_steps: Any, alpha: float = 0.0,
                 name: str | None = None, warmup_target: Any = None,
                 warmup_steps: Any = 0) -> None:
        _positive(decay_steps, "decay_steps", "CosineDecay")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.alpha = alpha
        self.name = name
        self.warmup_target = warmup_target
        self.warmup_steps = warmup_steps

    def _decay(self, step: Any, decay_steps: Any, decay_from: Any, dtype: DType) -> Any:
        m = _m()
        cosine = 0.5 * (1.0 + m.cos(convert_to_tensor(math.pi, dtype=dtype) * (step / decay_steps)))
        return decay_from * ((1 - self.alpha) * cosine + self.alpha)

    def __call__(self, step: Any) -> Any:
        m = _m()
        with name_scope(self.name or "CosineDecay"):
            lr = convert_to_tensor(self.initial_learning_rate)
            dtype = lr.dtype
            decay_steps = m.cast(convert_to_tensor(self.decay_steps), dtype)
            s = _step(step, dtype)
            if self.warmup_target is None:
                return self._decay(m.minimum(s, decay_steps), decay_steps, lr, dtype)
            target = m.cast(convert_to_tensor(self.warmup_target), dtype)
            warmup = m.cast(convert_to_tensor(self.warmup_steps), dtype)
            s = m.minimum(s, decay_steps + warmup)
            # both branches are computed and one selected (TensorFlow uses tf.cond); the
            # warmup branch's 0/0 with warmup_steps=0 is never selected then
            warming = (target - lr) * (s / warmup) + lr
            decaying = self._decay(s - warmup, decay_steps, target, dtype)
            return m.where(m.less(s, warmup), warming, decaying)

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments."""
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name,
                "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


class PolynomialDecay(LearningRateSchedule):
    """``(lr0 - end) * (1 - step / decay_steps) ** power + end`` with the step capped at
    `decay_steps`; with `cycle`, `decay_steps` grows to the next multiple of itself
    above the step instead (``ceil(step / decay_steps)`` times, at least once)."""

    def __init__(self, initial_learning_rate: Any, decay_steps: Any,
                 end_learning_rate: Any = 0.0001, power: Any = 1.0, cycle: bool = False,
                 name: str | None = None) -> None:
        _positive(decay_steps, "decay_steps", "PolynomialDecay")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    def __call__(self, step: Any) -> Any:
        m = _m()
        with name_scope(self.name or "PolynomialDecay"):
            lr = convert_to_tensor(self.initial_learning_rate)
            dtype = lr.dtype
            end = m.cast(convert_to_tensor(self.end_learning_rate), dtype)
            power = m.cast(convert_to_tensor(self.power), dtype)
            s = _step(step, dtype)
            decay_steps = m.cast(convert_to_tensor(self.decay_steps), dtype)
            if self.cycle:
                # step 0 would give a multiplier of 0 (and 0/0 below): TensorFlow uses 1
                mult = m.where(m.equal(s, 0.0), m.cast(convert_to_tensor(1.0), dtype),
                               m.ceil(s / decay_steps))
                decay_steps = decay_steps * mult
            else:
                s = m.minimum(s, decay_steps)
            return (lr - end) * m.pow(1 - s / decay_steps, power) + end

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments."""
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "end_learning_rate": self.end_learning_rate,
                "power": self.power, "cycle": self.cycle, "name": self.name}


class InverseTimeDecay(_StepDecay):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)``; with
    `staircase`, ``floor(step / decay_steps)`` in place of ``step / decay_steps``."""

    def _decayed(self, lr: Any, rate: Any, p: Any) -> Any:
        return lr / (1 + rate * p)


_BY_NAME = {c.__name__: c for c in (ExponentialDecay, PiecewiseConstantDecay, CosineDecay,
                                    PolynomialDecay, InverseTimeDecay)}


def serialize(schedule: LearningRateSchedule) -> dict[str, Any]:
    """``{"class_name": ..., "config": ...}`` for a built-in schedule (Keras' format)."""
    return {"class_name": type(schedule).__name__, "config": schedule.get_config()}


def deserialize(config: dict[str, Any]) -> LearningRateSchedule:
    """The schedule `serialize` described."""
    cls = _BY_NAME.get(config.get("class_name"))
    if cls is None:
        raise ValueError(f"unknown learning-rate schedule {config.get('class_name')!r}; "
                         f"expected one of {sorted(_BY_NAME)}")
    return cls.from_config(config["config"])


def __dir__() -> list[str]:
    return sorted(__all__)
