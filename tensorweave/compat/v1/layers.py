"""TensorFlow 1's functional layers (``tf.layers.dense``, ``conv2d``, ``max_pooling2d``,
``average_pooling2d``, ``dropout``, ``flatten``).

Each call opens a variable scope named after the layer (``dense``, ``dense_1``, ... or
`name`) and makes its variables with `get_variable` in the default graph, so they are
named as in TensorFlow (``dense/kernel``, ``dense/bias``), are trainable and global, and
are shared with ``reuse=True``. Kernels default to Glorot uniform and biases to zeros,
TensorFlow's defaults. Images are NHWC (``channels_last``) only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ...errors import DTypeError, InvalidArgumentError, ShapeError, UnimplementedError
from ...frontend.building import convert_to_tensor, user_location
from ...frontend.ops import array as _array
from ...frontend.ops import math as _math
from ...frontend.ops import nn as _nn
from ...frontend.ops.dropout import dropout as _dropout
from .graph import in_default_graph
from .initializers import zeros_initializer
from .var_scope import get_variable, variable_scope

TensorLike = Any
IntOrPair = int | Sequence[int]


def _pair(value: IntOrPair, what: str) -> tuple[int, int]:
    if isinstance(value, int):
        return value, value
    pair = tuple(int(v) for v in value)
    if len(pair) != 2:
        raise InvalidArgumentError(f"{what} must be an int or two ints, got {value!r}",
                                   location=str(user_location()))
    return pair  # type: ignore[return-value]


def _padding(padding: str) -> str:
    upper = padding.upper()
    if upper not in ("VALID", "SAME"):
        raise InvalidArgumentError(f"padding must be 'valid' or 'same', got {padding!r}",
                                   location=str(user_location()))
    return upper


def _channels_last(data_format: str) -> None:
    if data_format != "channels_last":
        raise UnimplementedError(f"data_format={data_format!r}: only 'channels_last' (NHWC) "
                                 f"is supported", location=str(user_location()))


def _no_activity_regularizer(layer: str, activity_regularizer: Any) -> None:
    # (its loss would be missing from the REGULARIZATION_LOSSES the model minimizes)
    if activity_regularizer is not None:
        raise UnimplementedError(f"tf.layers.{layer}(activity_regularizer=...) is not "
                                 f"supported", location=str(user_location()))


def _floating(layer: str, x: Any) -> None:
    # (an integer kernel would get get_variable's integer default, zeros: a dead layer)
    if not x.dtype.is_floating:
        raise DTypeError(f"tf.layers.{layer}: a {layer} layer can only be built with a "
                         f"floating-point dtype, got inputs of dtype {x.dtype.name}",
                         location=str(user_location()))


def _layer_scope(name: str | None, default_name: str, reuse: Any) -> Any:
    """The variable scope of a layer: `name`, else a unique `default_name` (``dense``,
    ``dense_1``); a layer asked to reuse without a name reuses `default_name` itself,
    as TensorFlow's layers do."""
    if name is None and reuse:
        name = default_name
    return variable_scope(name, default_name=default_name, reuse=reuse)


def _finish(y: Any, bias: Any, activation: Callable | None) -> Any:
    if bias is not None:
        y = _nn.bias_add(y, bias)
    return activation(y) if activation is not None else y


@in_default_graph
def dense(inputs: TensorLike, units: int, activation: Callable | None = None,
          use_bias: bool = True, kernel_initializer: Any = None,
          bias_initializer: Any = None, kernel_regularizer: Any = None,
          bias_regularizer: Any = None, activity_regularizer: Any = None,
          kernel_constraint: Any = None, bias_constraint: Any = None, trainable: bool = True,
          name: str | None = None, reuse: Any = None) -> Any:
    """``activation(inputs @ kernel + bias)`` over the last axis of `inputs`, with
    variables ``<name>/kernel`` (``[in, units]``) and ``<name>/bias`` (``[units]``)."""
    _no_activity_regularizer("dense", activity_regularizer)
    x = convert_to_tensor(inputs)
    _floating("dense", x)
    in_dim = x.shape[-1]
    if in_dim is None:
        raise ShapeError("tf.layers.dense: the last dim of the inputs must be known",
                         location=str(user_location()))
    with _layer_scope(name, "dense", reuse):
        kernel = get_variable("kernel", [in_dim, units], dtype=x.dtype,
                              initializer=kernel_initializer, regularizer=kernel_regularizer,
                              constraint=kernel_constraint, trainable=trainable)
        bias = get_variable("bias", [units], dtype=x.dtype,
                            initializer=bias_initializer or zeros_initializer(),
                            regularizer=bias_regularizer, constraint=bias_constraint,
                            trainable=trainable) \
            if use_bias else None
        if len(x.shape) == 2:
            y = _math.matmul(x, kernel)
        else:
            # a matmul over the last axis: fold the leading dims (one may be unknown)
            lead = list(x.shape[:-1])
            if sum(d is None for d in lead) > 1:
                raise ShapeError(f"tf.layers.dense: inputs {x.shape} have more than one "
                                 f"unknown leading dim", location=str(user_location()))
            y = _math.matmul(_array.reshape(x, [-1, in_dim]), kernel)
            y = _array.reshape(y, [-1 if d is None else d for d in lead] + [units])
        return _finish(y, bias, activation)


@in_default_graph
def conv2d(inputs: TensorLike, filters: int, kernel_size: IntOrPair,
           strides: IntOrPair = (1, 1), padding: str = "valid",
           data_format: str = "channels_last", dilation_rate: IntOrPair = (1, 1),
           activation: Callable | None = None, use_bias: bool = True,
           kernel_initializer: Any = None, bias_initializer: Any = None,
           kernel_regularizer: Any = None, bias_regularizer: Any = None,
           activity_regularizer: Any = None, kernel_constraint: Any = None,
           bias_constraint: Any = None, trainable: bool = True, name: str | None = None,
           reuse: Any = None) -> Any:
    """A 2-D convolution layer on NHWC `inputs`: variables ``<name>/kernel``
    (``[kh, kw, in_channels, filters]``) and ``<name>/bias`` (``[filters]``);
    `padding` is ``'valid'`` or ``'same'``."""
    _channels_last(data_format)
    _no_activity_regularizer("conv2d", activity_regularizer)
    x = convert_to_tensor(inputs)
    if len(x.shape) != 4 or x.shape[-1] is None:
        raise ShapeError(f"tf.layers.conv2d: inputs must be NHWC with known channels, got "
                         f"{x.shape}", location=str(user_location()))
    kh, kw = _pair(kernel_size, "kernel_size")
    with _layer_scope(name, "conv2d", reuse):
        kernel = get_variable("kernel", [kh, kw, x.shape[-1], filters], dtype=x.dtype,
                              initializer=kernel_initializer, regularizer=kernel_regularizer,
                              constraint=kernel_constraint, trainable=trainable)
        bias = get_variable("bias", [filters], dtype=x.dtype,
                            initializer=bias_initializer or zeros_initializer(),
                            regularizer=bias_regularizer, constraint=bias_constraint,
                            trainable=trainable) \
            if use_bias else None
        y = _nn.conv2d(x, kernel, strides=_pair(strides, "strides"), padding=_padding(padding),
                       dilations=_pair(dilation_rate, "dilation_rate"))
        return _finish(y, bias, activation)


def _pooling(pool: Callable, default_name: str, inputs: TensorLike, pool_size: IntOrPair,
             strides: IntOrPair, padding: str, data_format: str, name: str | None) -> Any:
    _channels_last(data_format)
    with variable_scope(name, default_name=default_name):
        return pool(convert_to_tensor(inputs), ksize=_pair(pool_size, "pool_size"),
                    strides=_pair(strides, "strides"), padding=_padding(padding))


@in_default_graph
def max_pooling2d(inputs: TensorLike, pool_size: IntOrPair, strides: IntOrPair,
                  padding: str = "valid", data_format: str = "channels_last",
                  name: str | None = None) -> Any:
    """Max pooling over `pool_size` windows of NHWC `inputs`."""
    return _pooling(_nn.max_pool2d, "max_pooling2d", inputs, pool_size, strides, padding,
                    data_format, name)


@in_default_graph
def average_pooling2d(inputs: TensorLike, pool_size: IntOrPair, strides: IntOrPair,
                      padding: str = "valid", data_format: str = "channels_last",
                      name: str | None = None) -> Any:
    """Average pooling over `pool_size` windows of NHWC `inputs` (padding not counted)."""
    return _pooling(_nn.avg_pool2d, "average_pooling2d", inputs, pool_size, strides, padding,
                    data_format, name)


@in_default_graph
def dropout(inputs: TensorLike, rate: float = 0.5, noise_shape: Any = None,
            seed: int | None = None, training: Any = False, name: str | None = None) -> Any:
    """Dropout with rate `rate` while `training`, the identity otherwise. `training` is a
    Python bool or a boolean tensor (a placeholder fed at run time); with a tensor the
    rate becomes ``rate if training else 0``, which keeps every element unscaled."""
    x = convert_to_tensor(inputs)
    if isinstance(training, bool):
        if not training:
            return x
        return _dropout(x, rate=rate, noise_shape=noise_shape, seed=seed, name=name)
    training = convert_to_tensor(training)
    effective = _math.cast(training, x.dtype) * rate
    return _dropout(x, rate=effective, noise_shape=noise_shape, seed=seed, name=name)


@in_default_graph
def flatten(inputs: TensorLike, name: str | None = None, data_format: str = "channels_last"
            ) -> Any:
    """`inputs` reshaped to ``[batch, features]`` (the non-batch dims must be known).
    With ``data_format="channels_first"`` the channels (axis 1) are moved last first, as
    TensorFlow does, so the features come in the order of a ``channels_last`` model."""
    if data_format not in ("channels_first", "channels_last"):
        raise InvalidArgumentError(f"tf.layers.flatten: data_format must be 'channels_first' "
                                   f"or 'channels_last', got {data_format!r}",
                                   location=str(user_location()))
    x = convert_to_tensor(inputs)
    if data_format == "channels_first" and len(x.shape) >= 3:
        rank = len(x.shape)
        x = _array.transpose(x, [0, *range(2, rank), 1])
    rest = x.shape[1:]
    if any(d is None for d in rest):
        raise ShapeError(f"tf.layers.flatten: the dims after the batch must be known, got "
                         f"{x.shape}", location=str(user_location()))
    batch = -1 if x.shape[0] is None else x.shape[0]
    return _array.reshape(x, [batch, math.prod(rest)], name=name)


__all__ = ["dense", "conv2d", "max_pooling2d", "average_pooling2d", "dropout", "flatten"]


def __dir__() -> list[str]:
    return sorted(__all__)
