"""``tw.keras.optimizers``: Keras' optimizers, with tf_keras 2.x's names, arguments and
defaults, as the `tw.optimizers` that implement their update rules.

As in Keras, a number given as `learning_rate` is kept in a variable: ``opt.learning_rate
= 0.01`` (or `LearningRateScheduler`, `ReduceLROnPlateau`) assigns it, and a compiled
training step reads the new value without being traced again. A
``tw.keras.optimizers.schedules`` schedule is evaluated at each step instead."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import optimizers as _tw
from ..frontend import schedules
from ..frontend.variables import Variable
from . import backend

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "Nadam", "Ftrl", "Lion", "Adafactor", "get", "serialize", "deserialize",
           "schedules"]

Optimizer = _tw.Optimizer
_COMMON = ("clipnorm", "clipvalue", "global_clipnorm")


class _KerasOptimizer:
    """Keras' optimizer behaviour over a `tw.optimizers` class: the learning rate in a
    variable, Keras' common arguments, `get_config`."""

    def _keras_setup(self, kwargs: dict[str, Any],
                     allowed: tuple[str, ...] = ()) -> dict[str, Any]:
        """Check Keras' common arguments; returns those the tw optimizer takes."""
        what = type(self).__name__
        weight_decay = kwargs.pop("weight_decay", None)
        if weight_decay is not None and "weight_decay" not in allowed:
            raise NotImplementedError(f"tw.keras.optimizers.{what}: weight_decay is "
                                      f"supported by AdamW only")
        if kwargs.pop("use_ema", False):
            raise NotImplementedError(f"tw.keras.optimizers.{what}: use_ema is not "
                                      f"supported")
        for ignored in ("ema_momentum", "ema_overwrite_frequency", "jit_compile",
                        "is_legacy_optimizer", "decay"):
            value = kwargs.pop(ignored, None)
            if ignored == "decay" and value:
                raise NotImplementedError(f"tw.keras.optimizers.{what}: decay is not "
                                          f"supported; use a learning rate schedule")
        unknown = sorted(set(kwargs) - set(_COMMON))
        if unknown:
            raise TypeError(f"tw.keras.optimizers.{what}: unexpected keyword argument(s) "
                            f"{', '.join(unknown)}")
        return {k: kwargs.get(k) for k in _COMMON}

    @staticmethod
    def _as_variable(learning_rate: Any, name: str) -> Any:
        if isinstance(learning_rate, bool) or not isinstance(
                learning_rate, (int, float, np.floating, np.integer)):
            return learning_rate   # a schedule, callable, tensor or variable: as given
        with backend.eval_scope():
            return Variable(np.asarray(learning_rate, np.float32), trainable=False,
                            name=f"{name}/learning_rate")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("learning_rate", "lr") and "learning_rate" in self.__dict__:
            current = self.__dict__["learning_rate"]
            if isinstance(current, Variable) and not isinstance(value, Variable) and \
                    not isinstance(value, schedules.LearningRateSchedule) and not callable(value):
                current.assign(np.asarray(value, current.dtype.np), read_value=False)
                return
            name = "learning_rate"
        super().__setattr__(name, value)

    @property
    def lr(self) -> Any:
        """Keras' old name of `learning_rate`."""
        return self.learning_rate

    def get_config(self) -> dict[str, Any]:
        """The constructor's arguments (the learning rate as a number)."""
        lr = self.learning_rate
        if isinstance(lr, Variable):
            lr = float(lr.numpy())
        config = {"name": self.name, "learning_rate": lr}
        for k in _COMMON:
            config[k] = getattr(self, k)
        config.update(self._keras_config())
        return config

    def _keras_config(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Any:
        return cls(**config)


class SGD(_KerasOptimizer, _tw.Momentum):
    """Gradient descent, with momentum (``m = momentum*m - lr*g; var += m``) and
    Nesterov's variant when asked (tw.optimizers.SGD / Momentum)."""

    def __init__(self, learning_rate: Any = 0.01, momentum: float = 0.0,
                 nesterov: bool = False, name: str = "SGD", **kwargs: Any) -> None:
        common = self._keras_setup(kwargs)
        if not 0 <= momentum <= 1:
            raise ValueError(f"`momentum` must be between [0, 1]. Received: "
                             f"momentum={momentum} (of type {type(momentum)}).")
        _tw.Momentum.__init__(self, self._as_variable(learning_rate, name), momentum,
                              nesterov, name, **common)
        if not momentum:
            self._slot_inits = {}   # plain descent: no momentum slot, tw SGD's update

    def _apply(self, var, grad, slots):
        if not self._slot_inits:
            return _tw.SGD._apply(self, var, grad, slots)
        return super()._apply(var, grad, slots)

    def _apply_sparse(self, var, grad, slots):
        if not self._slot_inits:
            return _tw.SGD._apply_sparse(self, var, grad, slots)
        return super()._apply_sparse(var, grad, slots)

    def _keras_config(self):
        return {"momentum": self.momentum, "nesterov": self.nesterov}


class Adam(_KerasOptimizer, _tw.Adam):
    """Adam (Kingma & Ba), tf_keras' defaults: learning_rate 0.001, epsilon 1e-7."""

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, amsgrad: bool = False, name: str = "Adam",
                 **kwargs: Any) -> None:
        common = self._keras_setup(kwargs)
        _tw.Adam.__init__(self, self._as_variable(learning_rate, name), beta_1, beta_2,
                          epsilon, amsgrad, name, **common)

    def _keras_config(self):
        return {"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon,
                "amsgrad": self.amsgrad}


class AdamW(_KerasOptimizer, _tw.AdamW):
    """Adam with decoupled weight decay (default 0.004)."""

    def __init__(self, learning_rate: Any = 0.001, weight_decay: float = 0.004,
                 beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7,
                 amsgrad: bool = False, name: str = "AdamW", **kwargs: Any) -> None:
        common = self._keras_setup(kwargs, allowed=("weight_decay",))
        _tw.AdamW.__init__(self, self._as_variable(learning_rate, name), weight_decay, beta_1,
                           beta_2, epsilon, amsgrad, name, **common)

    def _keras_config(self):
        return {"weight_decay": self.weight_decay, "beta_1": self.beta_1,
                "beta_2": self.beta_2, "epsilon": self.epsilon, "amsgrad": self.amsgrad}


class RMSprop(_KerasOptimizer, _tw.RMSProp):
    """RMSprop: ``v = rho*v + (1-rho)*g**2; var -= lr * g / sqrt(v + epsilon)``, with
    momentum and centering when asked."""

    def __init__(self, learning_rate: Any = 0.001, rho: float = 0.9, momentum: float = 0.0,
                 epsilon: float = 1e-7, centered: bool = False, name: str = "RMSprop",
                 **kwargs: Any) -> None:
        common = self._keras_setup(kwargs)
        _tw.RMSProp.__init__(self, self._as_variable(learning_rate, name), rho, momentum,
                             epsilon, centered, name, **common)

    def _keras_config(self):
        return {"rho": self.rho, "momentum": self.momentum, "epsilon": self.epsilon,
                "centered": self.centered}


class Adagrad(_KerasOptimizer, _tw.Adagrad):
    """Adagrad: per-weight learning rates from the sum of squared gradients."""

    def __init__(self, learning_rate: Any = 0.001, initial_accumulator_value: float = 0.1,
                 epsilon: float = 1e-7, name: str = "Adagrad", **kwargs: Any) -> None:
        common = self._keras_setup(kwargs)
        self.__dict__["_keras_initial_accumulator_value"] = initial_accumulator_value
        _tw.Adagrad.__init__(self, self._as_variable(learning_rate, name),
                             initial_accumulator_value, epsilon, name, **common)

    def _keras_config(self):
        return {"initial_accumulator_value": self._keras_initial_accumulator_value,
                "epsilon": self.epsilon}


class Adadelta(_KerasOptimizer, _tw.Adadelta):
    """Adadelta: steps scaled by running averages of squared gradients and updates."""

    def __init__(self, learning_rate: Any = 0.001, rho: float = 0.95, epsilon: float = 1e-7,
                 name: str = "Adadelta", **kwargs: Any) -> None:
        common = self._keras_setup(kwargs)
        _tw.Adadelta.__init__(self, self._as_variable(learning_rate, name), rho, epsilon,
                              name, **common)

    def _keras_config(self):
        return {"rho": self.rho, "epsilon": self.epsilon}


class Adamax(_KerasOptimizer, _tw.Adamax):
    """Adamax: Adam with the infinity norm."""

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, name: str = "Adamax", **kwargs: Any) -> None:
        common = self._keras_setup(kwargs)
        _tw.Adamax.__init__(self, self._as_variable(learning_rate, name), beta_1, beta_2,
                            epsilon, name, **common)

    def _keras_config(self):
        return {"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon}


class Nadam(_KerasOptimizer, _tw.Nadam):
    """Nadam: Adam with Nesterov momentum."""

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, name: str = "Nadam", **kwargs: Any) -> None:
        common = self._keras_setup(kwargs)
        _tw.Nadam.__init__(self, self._as_variable(learning_rate, name), beta_1, beta_2,
                           epsilon, name, **common)

    def _keras_config(self):
        return {"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon}


class Ftrl(_KerasOptimizer, _tw.Ftrl):
    """FTRL-proximal."""

    def __init__(self, learning_rate: Any = 0.001, learning_rate_power: float = -0.5,
                 initial_accumulator_value: float = 0.1, l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, name: str = "Ftrl",
                 l2_shrinkage_regularization_strength: float = 0.0, beta: float = 0.0,
                 **kwargs: Any) -> None:
        common = self._keras_setup(kwargs)
        self.__dict__["_keras_initial_accumulator_value"] = initial_accumulator_value
        _tw.Ftrl.__init__(self, self._as_variable(learning_rate, name), learning_rate_power,
                          initial_accumulator_value, l1_regularization_strength,
                          l2_regularization_strength, name, **common,
                          l2_shrinkage_regularization_strength=l2_shrinkage_regularization_strength,
                          beta=beta)

    def _keras_config(self):
        return {"learning_rate_power": self.lr_power,
                "initial_accumulator_value": self._keras_initial_accumulator_value,
                "l1_regularization_strength": self.l1, "l2_regularization_strength": self.l2,
                "l2_shrinkage_regularization_strength": self.l2_shrinkage, "beta": self.beta}


class Lion(_KerasOptimizer, _tw.Lion):
    """Lion (Chen et al. 2023): signed momentum updates; tf_keras' default learning rate
    0.0001."""

    def __init__(self, learning_rate: Any = 0.0001, beta_1: float = 0.9, beta_2: float = 0.99,
                 name: str = "Lion", **kwargs: Any) -> None:
        common = self._keras_setup(kwargs)
        _tw.Lion.__init__(self, self._as_variable(learning_rate, name), beta_1, beta_2, name,
                          **common)

    def _keras_config(self):
        return {"beta_1": self.beta_1, "beta_2": self.beta_2}


class Adafactor(_KerasOptimizer, _tw.Adafactor):
    """Adafactor: factored second moments."""

    def __init__(self, learning_rate: Any = 0.001, beta_2_decay: float = -0.8,
                 epsilon_1: float = 1e-30, epsilon_2: float = 1e-3, clip_threshold: float = 1.0,
                 relative_step: bool = True, name: str = "Adafactor", **kwargs: Any) -> None:
        common = self._keras_setup(kwargs)
        _tw.Adafactor.__init__(self, self._as_variable(learning_rate, name), beta_2_decay,
                               epsilon_1, epsilon_2, clip_threshold, relative_step, name,
                               **common)

    def _keras_config(self):
        return {"beta_2_decay": self.beta_2_decay, "epsilon_1": self.epsilon_1,
                "epsilon_2": self.epsilon_2, "clip_threshold": self.clip_threshold,
                "relative_step": self.relative_step}


_BY_NAME: dict[str, type] = {
    "sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop, "adagrad": Adagrad,
    "adadelta": Adadelta, "adamax": Adamax, "nadam": Nadam, "ftrl": Ftrl, "lion": Lion,
    "adafactor": Adafactor,
}


def get(identifier: Any) -> Any:
    """An optimizer from a name (``'adam'``: a new one with Keras' defaults), an
    optimizer object (a `tw.keras.optimizers` or `tw.optimizers` one), or a config."""
    if isinstance(identifier, _tw.Optimizer):
        return identifier
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}; "
                             f"known: {', '.join(sorted(_BY_NAME))}")
        return cls()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}")


def serialize(optimizer: Any) -> dict[str, Any]:
    """``{'class_name': ..., 'config': ...}`` of a Keras optimizer."""
    if not isinstance(optimizer, _KerasOptimizer):
        raise ValueError(f"cannot serialize {type(optimizer).__name__}: only "
                         f"tw.keras.optimizers can be saved with a model's config")
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}


def deserialize(config: dict[str, Any], custom_objects: dict[str, Any] | None = None) -> Any:
    """The optimizer `serialize` described."""
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _BY_NAME.get(name.lower())
    if cls is None:
        raise ValueError(f"Unknown optimizer class {name!r}")
    return cls.from_config(config.get("config", {}))
