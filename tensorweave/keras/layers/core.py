"""Core layers: `Dense`, `Activation`, `Dropout`, `Flatten`, `Reshape`, `Permute`,
`RepeatVector`, `Lambda` and `Embedding` (tf_keras 2.x arguments and results)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import tensorweave as tw

from .. import activations, initializers, regularizers
from ..engine.base_layer import Layer
from ..engine.input_spec import InputSpec, layer_error

__all__ = ["Dense", "Activation", "Dropout", "Flatten", "Reshape", "Permute", "RepeatVector",
           "Lambda", "Embedding", "no_constraint", "config_of", "set_weight_options",
           "add_configured_weight"]


def no_constraint(layer: str, **constraints: Any) -> None:
    """Refuse weight constraints (tw.keras does not apply them after updates)."""
    given = [k for k, v in constraints.items() if v is not None]
    if given:
        raise NotImplementedError(f"{layer}: weight constraints ({', '.join(given)}) are not "
                                  f"supported by tw.keras")


def config_of(layer: Layer, **fields: Any) -> dict[str, Any]:
    """A layer's config: the base fields plus `fields`, with activations, initializers
    and regularizers serialized."""
    config = Layer.get_config(layer)
    for key, value in fields.items():
        if key.endswith("activation"):
            value = activations.serialize(value)
        elif key.endswith("initializer"):
            value = initializers.serialize(value)
        elif key.endswith("regularizer"):
            value = regularizers.serialize(value)
        config[key] = value
    if layer.activity_regularizer is not None:
        config["activity_regularizer"] = regularizers.serialize(layer.activity_regularizer)
    return config


def set_weight_options(layer: Layer, **options: Any) -> None:
    """Keras' ``<weight>_initializer`` / ``<weight>_regularizer`` arguments as the layer's
    attributes of those names, through `initializers.get` / `regularizers.get`."""
    for key, value in options.items():
        if key.endswith("_initializer"):
            setattr(layer, key, initializers.get(value))
        elif key.endswith("_regularizer"):
            setattr(layer, key, regularizers.get(value))
        else:
            raise TypeError(f"set_weight_options: {key!r} is not an initializer or "
                            f"regularizer argument")


def add_configured_weight(layer: Layer, name: str, shape: Sequence[int],
                          option: str | None = None, initializer: Any = None,
                          trainable: bool = True) -> Any:
    """``layer.add_weight(name)`` with the layer's ``<option>_initializer`` (unless
    `initializer` is given) and ``<option>_regularizer`` (None when it has none);
    `option` defaults to `name` (Keras calls ``recurrent_kernel``'s option
    ``recurrent``)."""
    option = option or name
    if initializer is None:
        initializer = getattr(layer, f"{option}_initializer")
    return layer.add_weight(name, shape=shape, initializer=initializer,
                            regularizer=getattr(layer, f"{option}_regularizer", None),
                            trainable=trainable)


def _positive_int(value: Any, what: str, layer: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int,)) and not (
            hasattr(value, "__index__")):
        raise ValueError(f"{layer}: Received an invalid value for `{what}`, expected a "
                         f"positive integer. Received: {what}={value!r}")
    value = int(value)
    if value <= 0:
        raise ValueError(f"{layer}: Received an invalid value for `{what}`, expected a "
                         f"positive integer. Received: {what}={value}")
    return value


class Dense(Layer):
    """``activation(inputs @ kernel + bias)``; for inputs of rank > 2 the product is over
    the last axis."""

    def __init__(self, units: int, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, **kwargs: Any) -> None:
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        no_constraint("Dense", kernel_constraint=kernel_constraint,
                      bias_constraint=bias_constraint)
        self.units = _positive_int(units, "units", "Dense")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        set_weight_options(self, kernel_initializer=kernel_initializer,
                           bias_initializer=bias_initializer,
                           kernel_regularizer=kernel_regularizer,
                           bias_regularizer=bias_regularizer)
        self.input_spec = InputSpec(min_ndim=2)

    def build(self, input_shape: Any) -> None:
        last_dim = input_shape[-1]
        if last_dim is None:
            raise layer_error(self.name, f"The last dimension of the inputs to a Dense layer "
                                         f"should be defined. Found None. Full input shape "
                                         f"received: {tuple(input_shape)}")
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last_dim})
        self.kernel = add_configured_weight(self, "kernel", [last_dim, self.units])
        self.bias = (add_configured_weight(self, "bias", [self.units])
                     if self.use_bias else None)
        self.built = True

    def call(self, inputs: Any) -> Any:
        rank = len(inputs.shape)
        if rank == 2:
            outputs = tw.matmul(inputs, self.kernel)
        else:
            outputs = tw.tensordot(inputs, self.kernel, [[rank - 1], [0]])
        if self.use_bias:
            outputs = tw.nn.bias_add(outputs, self.bias)
        return self.activation(outputs)

    def get_config(self) -> dict[str, Any]:
        return config_of(self, units=self.units, activation=self.activation,
                         use_bias=self.use_bias, kernel_initializer=self.kernel_initializer,
                         bias_initializer=self.bias_initializer,
                         kernel_regularizer=self.kernel_regularizer,
                         bias_regularizer=self.bias_regularizer)


class Activation(Layer):
    """An activation function as a layer: ``Activation('relu')``."""

    def __init__(self, activation: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True
        self.activation = activations.get(activation)

    def call(self, inputs: Any) -> Any:
        return self.activation(inputs)

    def get_config(self) -> dict[str, Any]:
        return config_of(self, activation=self.activation)


class Dropout(Layer):
    """In training, zero each input with probability `rate` and scale the others by
    ``1 / (1 - rate)``; the identity in inference. `noise_shape` shares the mask along
    its 1 dims (None entries follow the input)."""

    def __init__(self, rate: float, noise_shape: Sequence[int | None] | None = None,
                 seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(rate, (int, float)) and not 0 <= rate <= 1:
            raise ValueError(f"Invalid value received for argument `rate`. Expected a float "
                             f"value between 0 and 1. Received: rate={rate}")
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed
        self.supports_masking = True

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        if not training or (isinstance(self.rate, (int, float)) and self.rate == 0):
            return tw.identity(inputs)
        noise = None
        if self.noise_shape is not None:
            noise = [d if n is None else n for n, d in zip(self.noise_shape, inputs.shape)]
        return tw.nn.dropout(inputs, rate=self.rate, noise_shape=noise, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return config_of(self, rate=self.rate, noise_shape=self.noise_shape, seed=self.seed)


class Flatten(Layer):
    """Each example as a vector: ``(batch, d1, d2, ...) -> (batch, d1 * d2 * ...)``."""

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = _data_format(data_format)
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs: Any) -> Any:
        rank = len(inputs.shape)
        if self.data_format == "channels_first" and rank > 2:
            inputs = tw.transpose(inputs, [0, *range(2, rank), 1])
        if rank == 1:
            return tw.expand_dims(inputs, 1)
        rest = inputs.shape[1:]
        if any(d is None for d in rest):
            if inputs.shape[0] is None:
                raise layer_error(self.name, f"Flatten needs the non-batch dims known when "
                                             f"the graph is built; got shape "
                                             f"{tuple(inputs.shape)}")
            return tw.reshape(inputs, [inputs.shape[0], -1])
        return tw.reshape(inputs, [-1, math.prod(rest)])

    def get_config(self) -> dict[str, Any]:
        return config_of(self, data_format=self.data_format)


def _resolve_target(input_shape: Sequence[int | None], target: tuple[int, ...],
                    layer: str) -> tuple[int, ...]:
    """`target` with its one -1 worked out from the input's size (tf_keras' rule and
    messages)."""
    unknown = [i for i, d in enumerate(target) if d < 0]
    if len(unknown) > 1:
        raise layer_error(layer, f"There must be at most one unknown dimension in "
                                 f"output_shape. Received: output_shape={target}.")
    known = math.prod(d for d in target if d >= 0)
    if any(d is None for d in input_shape):
        return target
    original = math.prod(input_shape)
    msg = (f"total size of new array must be unchanged, input_shape = {list(input_shape)}, "
           f"output_shape = {list(target)}")
    if unknown:
        if known == 0 or original % known != 0:
            raise layer_error(layer, msg)
        out = list(target)
        out[unknown[0]] = original // known
        return tuple(out)
    if original != known:
        raise layer_error(layer, msg)
    return target


class Reshape(Layer):
    """Each example reshaped to `target_shape` (one dim may be -1)."""

    def __init__(self, target_shape: Sequence[int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)

    def call(self, inputs: Any) -> Any:
        target = _resolve_target(tuple(inputs.shape[1:]), self.target_shape, self.name)
        batch = inputs.shape[0]
        if batch is not None:
            return tw.reshape(inputs, [batch, *target])
        if any(d < 0 for d in target) or math.prod(target) == 0:
            raise layer_error(self.name, f"Reshape to {self.target_shape} needs the input's "
                                         f"non-batch dims known when the graph is built; got "
                                         f"shape {tuple(inputs.shape)}")
        return tw.reshape(inputs, [-1, *target])

    def get_config(self) -> dict[str, Any]:
        return config_of(self, target_shape=list(self.target_shape))


class Permute(Layer):
    """The non-batch dims reordered: ``Permute((2, 1))`` swaps the two after the batch."""

    def __init__(self, dims: Sequence[int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dims = tuple(int(d) for d in dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(f"Invalid permutation argument `dims` for Permute Layer. The "
                             f"set of indices in `dims` must be consecutive and start from "
                             f"1. Received dims={self.dims}")
        self.input_spec = InputSpec(ndim=len(self.dims) + 1)

    def call(self, inputs: Any) -> Any:
        return tw.transpose(inputs, [0, *self.dims])

    def get_config(self) -> dict[str, Any]:
        return config_of(self, dims=list(self.dims))


class RepeatVector(Layer):
    """``(batch, features) -> (batch, n, features)``."""

    def __init__(self, n: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.n = _positive_int(n, "n", "RepeatVector")
        self.input_spec = InputSpec(ndim=2)

    def call(self, inputs: Any) -> Any:
        return tw.tile(tw.expand_dims(inputs, 1), [1, self.n, 1])

    def get_config(self) -> dict[str, Any]:
        return config_of(self, n=self.n)


class Lambda(Layer):
    """``function(inputs, **arguments)`` as a layer (no weights; not savable in a
    config)."""

    def __init__(self, function: Callable[..., Any], output_shape: Any = None,
                 mask: Any = None, arguments: dict[str, Any] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if mask is not None:
            raise NotImplementedError("Lambda: masks are not supported by tw.keras")
        self.function = function
        self.arguments = dict(arguments or {})
        self._output_shape = output_shape

    def call(self, inputs: Any) -> Any:
        return self.function(inputs, **self.arguments)

    def get_config(self) -> dict[str, Any]:
        raise NotImplementedError(f"Lambda layer '{self.name}': its function cannot be saved "
                                  f"in a config; write a Layer subclass with get_config, or "
                                  f"save the weights only")


class Embedding(Layer):
    """Rows of an ``(input_dim, output_dim)`` table for integer ids:
    ``(batch, ...) -> (batch, ..., output_dim)``."""

    def __init__(self, input_dim: int, output_dim: int,
                 embeddings_initializer: Any = "uniform", embeddings_regularizer: Any = None,
                 activity_regularizer: Any = None, embeddings_constraint: Any = None,
                 mask_zero: bool = False, input_length: int | None = None,
                 sparse: bool = False, **kwargs: Any) -> None:
        if input_length is not None and "input_shape" not in kwargs:
            kwargs["input_shape"] = (input_length,)
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        no_constraint("Embedding", embeddings_constraint=embeddings_constraint)
        if mask_zero:
            raise NotImplementedError("Embedding: mask_zero (masking) is not supported by "
                                      "tw.keras")
        if sparse:
            raise NotImplementedError("Embedding: sparse outputs are not supported by tw.keras")
        self.input_dim = _positive_int(input_dim, "input_dim", "Embedding")
        self.output_dim = _positive_int(output_dim, "output_dim", "Embedding")
        set_weight_options(self, embeddings_initializer=embeddings_initializer,
                           embeddings_regularizer=embeddings_regularizer)
        self.mask_zero = mask_zero
        self.input_length = input_length

    def build(self, input_shape: Any) -> None:
        self.embeddings = add_configured_weight(self, "embeddings",
                                                [self.input_dim, self.output_dim])
        self.built = True

    def call(self, inputs: Any) -> Any:
        if inputs.dtype not in (tw.int32, tw.int64):
            inputs = tw.cast(inputs, tw.int32)
        return tw.nn.embedding_lookup(self.embeddings, inputs)

    def get_config(self) -> dict[str, Any]:
        return config_of(self, input_dim=self.input_dim, output_dim=self.output_dim,
                         embeddings_initializer=self.embeddings_initializer,
                         embeddings_regularizer=self.embeddings_regularizer,
                         mask_zero=self.mask_zero, input_length=self.input_length)


def _data_format(value: str | None) -> str:
    value = (value or "channels_last").lower()
    if value not in ("channels_last", "channels_first"):
        raise ValueError(f'The `data_format` argument must be one of "channels_first", '
                         f'"channels_last". Received: {value}')
    return value
