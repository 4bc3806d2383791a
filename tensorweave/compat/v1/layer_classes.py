"""TensorFlow 1's layer classes (``tf.layers.Dense``, ``Conv2D``, ``MaxPooling2D``,
``AveragePooling2D``, ``Flatten``, ``Dropout``, ``BatchNormalization``).

A layer is configured when constructed and makes its variables on its first call, in a
variable scope named after it (``dense``, ``dense_1``, ... made unique in the enclosing
scope, or from `name`), as TensorFlow's do; later calls enter that scope again and reuse
the variables. Each runs its functional layer of ``layers.py`` in that scope.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ...frontend.building import convert_to_tensor
from . import layers as _layers
from .graph import GraphKeys, get_default_graph, in_default_graph
from .var_scope import AUTO_REUSE, get_variable, variable_scope

TensorLike = Any


def snake_case(name: str) -> str:
    """TensorFlow's layer base names: ``BasicLSTMCell`` -> ``basic_lstm_cell``."""
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()


_UIDS: weakref.WeakKeyDictionary[Any, dict[str, int]] = weakref.WeakKeyDictionary()
_UIDS_LOCK = threading.Lock()


def _object_name(base: str) -> str:
    """TensorFlow 1's name of a layer object made without a name: ``dense_1``, ``dense_2``,
    ... counted per graph from 1 (its variables' scope is chosen on the first call and
    may differ: the first Dense called gets ``dense/``)."""
    with _UIDS_LOCK:
        counts = _UIDS.setdefault(get_default_graph(), {})
        counts[base] = counts.get(base, 0) + 1
        return f"{base}_{counts[base]}"


# Keras's shape hints, harmless to ignore here; any other keyword is a mistake to report
# (a misspelt `state_is_tupel=False` silently ignored would change the model)
_IGNORED_KWARGS = frozenset({"autocast", "dynamic", "input_shape", "batch_input_shape",
                             "input_dim"})


def refuse_unknown_kwargs(cls: str, kwargs: dict) -> None:
    """A TypeError naming the keyword arguments `cls` does not take."""
    unknown = sorted(set(kwargs) - _IGNORED_KWARGS)
    if unknown:
        raise TypeError(f"{cls}() got unexpected keyword argument(s) {', '.join(unknown)}")


class Layer:
    """The base of TensorFlow 1's layers: ``layer(inputs, ...)`` (or ``apply``) makes the
    variables on the first call (``build``) inside the layer's variable scope, then runs
    ``call``. `variables` / `trainable_variables` / `non_trainable_variables` (also
    spelled ``*_weights``) list what `add_weight` made."""

    def __init__(self, trainable: bool = True, name: str | None = None, dtype: Any = None,
                 _scope: Any = None, _reuse: Any = None, **kwargs: Any) -> None:
        refuse_unknown_kwargs(type(self).__name__, kwargs)
        self.trainable = trainable
        base = snake_case(type(self).__name__)
        self._name = name or _object_name(base)
        self._base_name = name or base
        self._given_scope, self._reuse = _scope, _reuse
        self._dtype = dtype
        self._scope: Any = None
        self.built = False
        self._trainable_weights: list[Any] = []
        self._non_trainable_weights: list[Any] = []
        self._updates: list[Any] = []

    # -- TensorFlow 1's API -----------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def scope_name(self) -> str:
        """The full name of the layer's variable scope (after the first call)."""
        if self._scope is None:
            raise ValueError(f"No name available for layer scope because the layer "
                             f"{self._name!r} has not been used yet")
        return self._scope.name

    @property
    def dtype(self) -> Any:
        return self._dtype

    @property
    def trainable_variables(self) -> list[Any]:
        return list(self._trainable_weights) if self.trainable else []

    trainable_weights = trainable_variables

    @property
    def non_trainable_variables(self) -> list[Any]:
        return list(self._non_trainable_weights) + \
            ([] if self.trainable else list(self._trainable_weights))

    non_trainable_weights = non_trainable_variables

    @property
    def variables(self) -> list[Any]:
        """Every variable of the layer: the trainable ones first."""
        return list(self._trainable_weights) + list(self._non_trainable_weights)

    weights = variables

    @property
    def updates(self) -> list[Any]:
        """The update ops the layer made (BatchNormalization's moving averages)."""
        return list(self._updates)

    def add_weight(self, name: str, shape: Sequence[int], dtype: Any = None,
                   initializer: Any = None, regularizer: Any = None, trainable: bool = True,
                   constraint: Any = None, **kwargs: Any) -> Any:
        """`get_variable` in the layer's scope, remembered in `variables`."""
        var = get_variable(name, list(shape), dtype=dtype or self._dtype,
                           initializer=initializer, regularizer=regularizer,
                           trainable=trainable and self.trainable, constraint=constraint)
        (self._trainable_weights if trainable else self._non_trainable_weights).append(var)
        return var

    add_variable = add_weight

    def build(self, input_shape: tuple) -> None:
        """Make the layer's variables for inputs of `input_shape` (called once)."""
        self.built = True

    def call(self, inputs: Any, **kwargs: Any) -> Any:
        """The layer's computation (inside its variable scope)."""
        raise NotImplementedError(f"{type(self).__name__}.call")

    @in_default_graph
    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """Build on the first call, then `call`."""
        with self._entered_scope(kwargs.pop("scope", None)):
            if not self.built:
                x = convert_to_tensor(inputs) if not isinstance(inputs, (list, tuple)) \
                    else convert_to_tensor(inputs[0])
                if self._dtype is None:
                    self._dtype = x.dtype
                self.build(tuple(x.shape))
                self.built = True
            return self.call(inputs, *args, **kwargs)

    def apply(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """``layer(inputs, ...)``."""
        return self.__call__(inputs, *args, **kwargs)

    # -- scopes ---------------------------------------------------------------------------
    def _entered_scope(self, scope: Any) -> Any:
        if self._scope is not None:
            return variable_scope(self._scope, reuse=AUTO_REUSE)
        return FirstScope(self, scope if scope is not None else self._given_scope)


class FirstScope:
    """The first call's variable scope, kept by the layer (or recurrent cell): `scope` when given (the
    variables go straight in it, as TensorFlow's), else a scope named after the layer,
    made unique in the enclosing one (or, when the layer reuses, its name as it is)."""

    def __init__(self, layer: Any, scope: Any) -> None:
        self.layer, self.scope = layer, scope

    def __enter__(self) -> Any:
        layer = self.layer
        if self.scope is not None:
            self._cm = variable_scope(self.scope, reuse=layer._reuse)
        elif layer._reuse:
            self._cm = variable_scope(layer._base_name, reuse=layer._reuse)
        else:
            self._cm = variable_scope(None, default_name=layer._base_name)
        layer._scope = self._cm.__enter__()
        return layer._scope

    def __exit__(self, *exc: Any) -> Any:
        return self._cm.__exit__(*exc)


def _existing(name: str) -> Any:
    """The variable `name` of the current scope (made by a functional layer)."""
    return get_variable(name)


class _FunctionalWeights(Layer):
    """A layer whose first call runs a functional layer that makes ``kernel`` (and
    ``bias``) in the layer's scope; they are then looked up for `kernel`/`bias`."""

    _use_bias: bool

    def _run(self, fn: Callable, inputs: Any, **config: Any) -> Any:
        # the functional layer enters this layer's scope object again (no new scope);
        # reuse after the first call
        y = fn(inputs, name=self._scope, reuse=True if self._trainable_weights else None,
               trainable=self.trainable, **config)
        if not self._trainable_weights:
            with variable_scope(self._scope, reuse=True):
                self.kernel = _existing("kernel")
                self.bias = _existing("bias") if self._use_bias else None
            self._trainable_weights = [self.kernel] + ([self.bias] if self._use_bias else [])
        return y


class Dense(_FunctionalWeights):
    """``activation(inputs @ kernel + bias)`` over the last axis (``tf.layers.Dense``);
    `kernel` ``[in, units]`` and `bias` ``[units]`` after the first call."""

    def __init__(self, units: int, activation: Callable | None = None, use_bias: bool = True,
                 kernel_initializer: Any = None, bias_initializer: Any = None,
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, trainable: bool = True, name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.units = int(units)
        self.activation = activation
        self._use_bias = use_bias
        self._config = dict(kernel_initializer=kernel_initializer,
                            bias_initializer=bias_initializer,
                            kernel_regularizer=kernel_regularizer,
                            bias_regularizer=bias_regularizer,
                            activity_regularizer=activity_regularizer,
                            kernel_constraint=kernel_constraint, bias_constraint=bias_constraint)

    def call(self, inputs: Any) -> Any:
        return self._run(_layers.dense, inputs, units=self.units, activation=self.activation,
                         use_bias=self._use_bias, **self._config)


class Conv2D(_FunctionalWeights):
    """A 2-D convolution layer on NHWC inputs (``tf.layers.Conv2D``): `kernel`
    ``[kh, kw, in, filters]`` and `bias` ``[filters]`` after the first call."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1),
                 padding: str = "valid", data_format: str = "channels_last",
                 dilation_rate: Any = (1, 1), activation: Callable | None = None,
                 use_bias: bool = True, kernel_initializer: Any = None,
                 bias_initializer: Any = None, kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 kernel_constraint: Any = None, bias_constraint: Any = None,
                 trainable: bool = True, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.filters = int(filters)
        self._use_bias = use_bias
        self._config = dict(kernel_size=kernel_size, strides=strides, padding=padding,
                            data_format=data_format, dilation_rate=dilation_rate,
                            activation=activation, use_bias=use_bias,
                            kernel_initializer=kernel_initializer,
                            bias_initializer=bias_initializer,
                            kernel_regularizer=kernel_regularizer,
                            bias_regularizer=bias_regularizer,
                            activity_regularizer=activity_regularizer,
                            kernel_constraint=kernel_constraint, bias_constraint=bias_constraint)

    def call(self, inputs: Any) -> Any:
        return self._run(_layers.conv2d, inputs, filters=self.filters, **self._config)


class _Stateless(Layer):
    """A layer without variables, running a functional layer."""

    def __init__(self, fn: Callable, config: dict, name: str | None, **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        self._fn, self._config = fn, config

    def call(self, inputs: Any) -> Any:
        return self._fn(inputs, **self._config)


class MaxPooling2D(_Stateless):
    """Max pooling over `pool_size` windows of NHWC inputs (``tf.layers.MaxPooling2D``)."""

    def __init__(self, pool_size: Any, strides: Any, padding: str = "valid",
                 data_format: str = "channels_last", name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(_layers.max_pooling2d, dict(pool_size=pool_size, strides=strides,
                                                     padding=padding, data_format=data_format),
                         name, **kwargs)


class AveragePooling2D(_Stateless):
    """Average pooling over `pool_size` windows of NHWC inputs
    (``tf.layers.AveragePooling2D``)."""

    def __init__(self, pool_size: Any, strides: Any, padding: str = "valid",
                 data_format: str = "channels_last", name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(_layers.average_pooling2d,
                         dict(pool_size=pool_size, strides=strides, padding=padding,
                              data_format=data_format), name, **kwargs)


class Flatten(_Stateless):
    """Inputs reshaped to ``[batch, features]`` (``tf.layers.Flatten``)."""

    def __init__(self, data_format: str = "channels_last", name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(_layers.flatten, dict(data_format=data_format), name, **kwargs)


class Dropout(Layer):
    """Dropout with rate `rate` when called with ``training=True`` (or a boolean tensor
    that is true); the identity otherwise (``tf.layers.Dropout``)."""

    def __init__(self, rate: float = 0.5, noise_shape: Any = None, seed: int | None = None,
                 name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    def call(self, inputs: Any, training: Any = False) -> Any:
        return _layers.dropout(inputs, rate=self.rate, noise_shape=self.noise_shape,
                               seed=self.seed, training=training)


class BatchNormalization(Layer):
    """Batch normalization over every axis but `axis` (``tf.layers.BatchNormalization``):
    ``layer(x, training=...)`` runs ``tf.layers.batch_normalization`` in the layer's scope
    (variables ``gamma``, ``beta``, ``moving_mean``, ``moving_variance``, the moving-average
    updates in ``UPDATE_OPS`` and in `updates`; `training` a Python bool or a boolean
    tensor). The constructor takes that function's arguments."""

    def __init__(self, axis: Any = -1, momentum: float = 0.99, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer: Any = None,
                 gamma_initializer: Any = None, moving_mean_initializer: Any = None,
                 moving_variance_initializer: Any = None, beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, renorm: bool = False, renorm_clipping: Any = None,
                 renorm_momentum: float = 0.99, fused: Any = None, trainable: bool = True,
                 virtual_batch_size: Any = None, adjustment: Any = None,
                 name: str | None = None, **kwargs: Any) -> None:
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.axis, self.momentum, self.epsilon = axis, momentum, epsilon
        self.center, self.scale = center, scale
        self._config = dict(
            axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
            beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
            moving_mean_initializer=moving_mean_initializer,
            moving_variance_initializer=moving_variance_initializer,
            beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
            beta_constraint=beta_constraint, gamma_constraint=gamma_constraint, renorm=renorm,
            renorm_clipping=renorm_clipping, renorm_momentum=renorm_momentum, fused=fused,
            virtual_batch_size=virtual_batch_size, adjustment=adjustment)

    def call(self, inputs: Any, training: Any = False) -> Any:
        first = not self.variables
        graph = get_default_graph()
        before = len(graph.get_collection(GraphKeys.UPDATE_OPS))
        y = _layers.batch_normalization(inputs, training=training, trainable=self.trainable,
                                        name=self._scope, reuse=None if first else True,
                                        **self._config)
        self._updates.extend(graph.get_collection(GraphKeys.UPDATE_OPS)[before:])
        if first:
            with variable_scope(self._scope, reuse=True):
                self.gamma = _existing("gamma") if self.scale else None
                self.beta = _existing("beta") if self.center else None
                self.moving_mean = _existing("moving_mean")
                self.moving_variance = _existing("moving_variance")
            self._trainable_weights = [v for v in (self.gamma, self.beta) if v is not None]
            self._non_trainable_weights = [self.moving_mean, self.moving_variance]
        return y


__all__ = ["AveragePooling2D", "BatchNormalization", "Conv2D", "Dense", "Dropout", "Flatten",
           "Layer", "MaxPooling2D"]
