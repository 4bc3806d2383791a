"""TensorFlow 1's functional layers (``tf.layers.dense``, ``conv2d``, ``max_pooling2d``,
``average_pooling2d``, ``dropout``, ``flatten``, ``batch_normalization``).

Each call opens a variable scope named after the layer (``dense``, ``dense_1``, ... or
`name`) and makes its variables with `get_variable` in the default graph, so they are
named as in TensorFlow (``dense/kernel``, ``dense/bias``), are trainable and global, and
are shared with ``reuse=True``. Kernels default to Glorot uniform and biases to zeros,
TensorFlow's defaults. Images are NHWC (``channels_last``) or NCHW
(``channels_first``); ``batch_normalization`` takes any `axis`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import tensorweave as _tw

from ...errors import DTypeError, InvalidArgumentError, ShapeError, UnimplementedError
from ...frontend.building import convert_to_tensor, user_location
from ...frontend.ops import array as _array
from ...frontend.ops import math as _math
from ...frontend.ops import nn as _nn
from ...frontend.ops import normalization as _norm
from ...frontend.ops.dropout import dropout as _dropout
from .activations import v1_activations
from .graph import GraphKeys, get_default_graph, in_default_graph
from .initializers import ones_initializer, zeros_initializer
from .var_scope import get_variable, get_variable_scope, variable_scope

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


def _channels_first(data_format: str) -> bool:
    """Whether images are NCHW (``channels_first``) rather than NHWC."""
    if data_format not in ("channels_last", "channels_first"):
        raise InvalidArgumentError(f"data_format must be 'channels_last' or "
                                   f"'channels_first', got {data_format!r}",
                                   location=str(user_location()))
    return data_format == "channels_first"


def _to_nhwc(x: Any, channels_first: bool) -> Any:
    # (the NN ops take NHWC: an NCHW layer runs them between two transposes)
    return _array.transpose(x, [0, 2, 3, 1]) if channels_first else x


def _from_nhwc(y: Any, channels_first: bool) -> Any:
    return _array.transpose(y, [0, 3, 1, 2]) if channels_first else y


def _no_activity_regularizer(layer: str, activity_regularizer: Any) -> None:
    # (its loss would be missing from the REGULARIZATION_LOSSES the model minimizes)
    if activity_regularizer is not None:
        raise UnimplementedError(f"tf.layers.{layer}(activity_regularizer=...) is not "
                                 f"supported", location=str(user_location()))


def _floating(layer: str, x: Any) -> None:
    # (an integer kernel would get get_variable's integer default, zeros: a dead layer)
    if not x.dtype.is_floating:
        raise DTypeError(f"tf.layers.{layer}: a {layer} layer can only be built with a "
                         f"floating-point dtype, got inputs of dtype {x.dtype.ir_name}",
                         location=str(user_location()))


def _layer_scope(name: str | None, default_name: str, reuse: Any) -> Any:
    """The variable scope of a layer: `name`, else a unique `default_name` (``dense``,
    ``dense_1``); a layer asked to reuse without a name reuses `default_name` itself,
    as TensorFlow's layers do."""
    if name is None and reuse:
        name = default_name
    return variable_scope(name, default_name=default_name, reuse=reuse)


# Keras' names for activations, which TensorFlow's layers also take as strings:
# the tw.nn function of each ("linear": none)
_ACTIVATIONS = {"linear": None, "relu": "relu", "relu6": "relu6", "elu": "elu", "selu": "selu",
                "sigmoid": "sigmoid", "tanh": "tanh", "softmax": "softmax",
                "softplus": "softplus", "softsign": "softsign", "swish": "swish",
                "silu": "swish", "gelu": "gelu", "log_softmax": "log_softmax"}


_V1_ACTIVATIONS = v1_activations()


def _activation(activation: Callable | str | None) -> Callable | None:
    if not isinstance(activation, str):
        return activation
    if activation == "exponential":
        return _math.exp
    if activation not in _ACTIVATIONS:
        raise InvalidArgumentError(f"unknown activation {activation!r}; known: "
                                   f"{', '.join(sorted([*_ACTIVATIONS, 'exponential']))}",
                                   location=str(user_location()))
    name = _ACTIVATIONS[activation]
    # (named as TensorFlow's: "elu" gives dense/Elu)
    return None if name is None else _V1_ACTIVATIONS.get(name) or getattr(_tw.nn, name)


def _finish(y: Any, bias: Any, activation: Callable | None) -> Any:
    if bias is not None:
        y = _nn.bias_add(y, bias)
    return activation(y) if activation is not None else y


@in_default_graph
def dense(inputs: TensorLike, units: int, activation: Callable | str | None = None,
          use_bias: bool = True, kernel_initializer: Any = None,
          bias_initializer: Any = None, kernel_regularizer: Any = None,
          bias_regularizer: Any = None, activity_regularizer: Any = None,
          kernel_constraint: Any = None, bias_constraint: Any = None, trainable: bool = True,
          name: str | None = None, reuse: Any = None) -> Any:
    """``activation(inputs @ kernel + bias)`` over the last axis of `inputs`, with
    variables ``<name>/kernel`` (``[in, units]``) and ``<name>/bias`` (``[units]``)."""
    _no_activity_regularizer("dense", activity_regularizer)
    activation = _activation(activation)
    x = convert_to_tensor(inputs)
    _floating("dense", x)
    in_dim = x.shape[-1]  # (None for an unknown rank too)
    if in_dim is None:
        # TensorFlow's words (its Dense layer's build)
        raise ShapeError("The last dimension of the inputs to `Dense` should be defined. "
                         "Found `None`.", op="tf.layers.dense",
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
           activation: Callable | str | None = None, use_bias: bool = True,
           kernel_initializer: Any = None, bias_initializer: Any = None,
           kernel_regularizer: Any = None, bias_regularizer: Any = None,
           activity_regularizer: Any = None, kernel_constraint: Any = None,
           bias_constraint: Any = None, trainable: bool = True, name: str | None = None,
           reuse: Any = None) -> Any:
    """A 2-D convolution layer on NHWC `inputs` (NCHW with ``channels_first``):
    variables ``<name>/kernel`` (``[kh, kw, in_channels, filters]``) and ``<name>/bias``
    (``[filters]``); `padding` is ``'valid'`` or ``'same'``."""
    first = _channels_first(data_format)
    _no_activity_regularizer("conv2d", activity_regularizer)
    activation = _activation(activation)
    x = convert_to_tensor(inputs)
    if len(x.shape) != 4 or x.shape[1 if first else -1] is None:
        raise ShapeError(f"tf.layers.conv2d: inputs must be {'NCHW' if first else 'NHWC'} "
                         f"with known channels, got {x.shape}", location=str(user_location()))
    x = _to_nhwc(x, first)
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
        return _from_nhwc(_finish(y, bias, activation), first)


def _pooling(pool: Callable, default_name: str, inputs: TensorLike, pool_size: IntOrPair,
             strides: IntOrPair, padding: str, data_format: str, name: str | None) -> Any:
    first = _channels_first(data_format)
    with variable_scope(name, default_name=default_name):
        y = pool(_to_nhwc(convert_to_tensor(inputs), first), ksize=_pair(pool_size, "pool_size"),
                 strides=_pair(strides, "strides"), padding=_padding(padding))
        return _from_nhwc(y, first)


@in_default_graph
def max_pooling2d(inputs: TensorLike, pool_size: IntOrPair, strides: IntOrPair,
                  padding: str = "valid", data_format: str = "channels_last",
                  name: str | None = None) -> Any:
    """Max pooling over `pool_size` windows of NHWC (or ``channels_first``) `inputs`."""
    return _pooling(_nn.max_pool2d, "max_pooling2d", inputs, pool_size, strides, padding,
                    data_format, name)


@in_default_graph
def average_pooling2d(inputs: TensorLike, pool_size: IntOrPair, strides: IntOrPair,
                      padding: str = "valid", data_format: str = "channels_last",
                      name: str | None = None) -> Any:
    """Average pooling over `pool_size` windows of NHWC (or ``channels_first``) `inputs`
    (padding not counted)."""
    return _pooling(_nn.avg_pool2d, "average_pooling2d", inputs, pool_size, strides, padding,
                    data_format, name)


@in_default_graph
def dropout(inputs: TensorLike, rate: float = 0.5, noise_shape: Any = None,
            seed: int | None = None, training: Any = False, name: str | None = None) -> Any:
    """Dropout with rate `rate` while `training`, the identity otherwise. `training` is a
    Python bool or a boolean tensor (a placeholder fed at run time); with a tensor the
    rate becomes ``rate if training else 0``, which keeps every element unscaled."""
    if isinstance(rate, (int, float)) and not (
            0 <= rate < 1 or (rate == 1 and training is False)):
        # (with a training tensor, rate 1 would scale by 1 / 0: NaN while training)
        raise InvalidArgumentError(f"tf.layers.dropout: rate must be in [0, 1), got {rate}",
                                   location=str(user_location()))
    x = convert_to_tensor(inputs)
    # under the layer's name scope, as TensorFlow's (``dropout/...``, ``dropout_1/Identity``)
    with _layer_scope(name, "dropout", None):
        if isinstance(training, bool):
            if not training:
                return _array.identity(x)
            return _dropout(x, rate=rate, noise_shape=noise_shape, seed=seed)
        training = convert_to_tensor(training)
        effective = _math.cast(training, x.dtype) * rate
        return _dropout(x, rate=effective, noise_shape=noise_shape, seed=seed)


def _no_batch_norm_extras(**given: Any) -> None:
    # (each changes the training math; an error rather than a model trained without it)
    for what, value in given.items():
        if value not in (None, False):
            raise UnimplementedError(f"tf.layers.batch_normalization({what}=...) is not "
                                     f"supported", location=str(user_location()))


@in_default_graph
def batch_normalization(inputs: TensorLike, axis: int | Sequence[int] = -1,
                        momentum: float = 0.99, epsilon: float = 1e-3, center: bool = True,
                        scale: bool = True, beta_initializer: Any = None,
                        gamma_initializer: Any = None, moving_mean_initializer: Any = None,
                        moving_variance_initializer: Any = None, beta_regularizer: Any = None,
                        gamma_regularizer: Any = None, beta_constraint: Any = None,
                        gamma_constraint: Any = None, training: Any = False,
                        trainable: bool = True, name: str | None = None, reuse: Any = None,
                        renorm: bool = False, renorm_clipping: Any = None,
                        renorm_momentum: float = 0.99, fused: bool | None = None,
                        virtual_batch_size: int | None = None, adjustment: Any = None) -> Any:
    """Batch normalization over every axis but `axis` (an int or ints), with variables
    ``<name>/gamma``, ``beta`` (trainable, unless `scale`/`center` are False) and
    ``moving_mean``, ``moving_variance`` (not trainable).

    While `training` (a Python bool or a boolean tensor fed at run time) the batch's
    mean and biased variance normalize the inputs, and two ops in the ``UPDATE_OPS``
    collection move the moving statistics toward them (``moving -= (moving - batch) *
    (1 - momentum)``, unchanged when a `training` tensor is False): run them with the
    training step, as in TensorFlow. Otherwise the moving statistics normalize. As in
    TensorFlow, where its fused kernel would run (`fused` not False, a 4-D or 5-D float32
    or half input, one channel axis: 1 or the last), moving_variance moves toward the
    Bessel-corrected batch variance (``n / (n - 1)``), elsewhere toward the biased one."""
    _no_batch_norm_extras(renorm=renorm, renorm_clipping=renorm_clipping,
                          virtual_batch_size=virtual_batch_size, adjustment=adjustment)
    _refuse_constraints("batch_normalization", beta_constraint, gamma_constraint)
    x = convert_to_tensor(inputs)
    _floating("batch_normalization", x)
    rank = len(x.shape)
    raw_axes = [axis] if isinstance(axis, int) else list(axis)
    if not raw_axes or any(not -rank <= a < rank for a in raw_axes):
        raise InvalidArgumentError(f"tf.layers.batch_normalization: axis {axis} is out of "
                                   f"range for inputs {x.shape}", location=str(user_location()))
    axes = sorted({a % rank for a in raw_axes})
    fused = _uses_fused_kernel(fused, rank, raw_axes, axes, x.dtype.ir_name)
    if any(x.shape[a] is None for a in axes):
        raise ShapeError(f"tf.layers.batch_normalization: inputs {x.shape} must have known "
                         f"dims along axis {axis}", location=str(user_location()))
    # one parameter per normalized position: [C] for one axis, else broadcastable
    param_shape = [x.shape[axes[0]]] if len(axes) == 1 else \
        [x.shape[i] if i in axes else 1 for i in range(rank)]
    broadcast = [x.shape[i] if i in axes else 1 for i in range(rank)]
    reduce_axes = [i for i in range(rank) if i not in axes]
    # half-precision inputs keep float32 parameters and statistics, as TensorFlow
    pdtype = x.dtype if x.dtype.ir_name not in ("f16", "bf16") else _math.float32
    xc = _math.cast(x, pdtype) if pdtype is not x.dtype else x
    with _layer_scope(name, "batch_normalization", reuse):
        gamma = get_variable("gamma", param_shape, dtype=pdtype,
                             initializer=gamma_initializer or ones_initializer(),
                             regularizer=gamma_regularizer, trainable=trainable) \
            if scale else None
        beta = get_variable("beta", param_shape, dtype=pdtype,
                            initializer=beta_initializer or zeros_initializer(),
                            regularizer=beta_regularizer, trainable=trainable) \
            if center else None
        # the moving statistics are never partitioned (TensorFlow turns the scope's
        # partitioner off for them: their updates assign to whole variables)
        scope = get_variable_scope()
        partitioner, scope.partitioner = scope.partitioner, None
        try:
            moving_mean = get_variable("moving_mean", param_shape, dtype=pdtype,
                                       initializer=moving_mean_initializer or
                                       zeros_initializer(), trainable=False)
            moving_var = get_variable("moving_variance", param_shape, dtype=pdtype,
                                      initializer=moving_variance_initializer or
                                      ones_initializer(), trainable=False)
        finally:
            scope.partitioner = partitioner

        def shaped(v: Any) -> Any:
            return None if v is None else _array.reshape(v, broadcast)

        if isinstance(training, bool) and not training:
            mean, var = convert_to_tensor(moving_mean), convert_to_tensor(moving_var)
        else:
            batch_mean, batch_var = _norm.moments(xc, reduce_axes)
            if len(axes) > 1:
                batch_mean = _array.reshape(batch_mean, param_shape)
                batch_var = _array.reshape(batch_var, param_shape)
            # TensorFlow's fused kernel returns the Bessel-corrected variance and the
            # layer moves moving_variance toward it (the non-fused path: the biased one)
            update_var = batch_var
            if fused:
                count = _math.cast(_array.size(xc), pdtype) / \
                    _math.cast(_array.size(batch_var), pdtype)
                update_var = batch_var * (count / _math.maximum(count - 1.0, 1.0))
            if isinstance(training, bool):
                mean, var = batch_mean, batch_var
            else:
                flag = convert_to_tensor(training)
                mean = _math.where(flag, batch_mean, convert_to_tensor(moving_mean))
                var = _math.where(flag, batch_var, convert_to_tensor(moving_var))
                update_var = _math.where(flag, update_var, convert_to_tensor(moving_var))
            if trainable:  # (TensorFlow leaves a frozen layer's updates out of UPDATE_OPS)
                graph = get_default_graph()
                for moving, value in ((moving_mean, mean), (moving_var, update_var)):
                    # with a training tensor that is False, value is `moving`: no change
                    delta = (convert_to_tensor(moving) - value) * (1.0 - momentum)
                    graph.add_to_collection(GraphKeys.UPDATE_OPS,
                                            moving.assign_sub(delta, read_value=False))
        y = _norm.batch_normalization(xc, shaped(mean), shaped(var), shaped(beta),
                                      shaped(gamma), epsilon)
        return _math.cast(y, x.dtype) if xc is not x else y


def _uses_fused_kernel(fused: bool | None, rank: int, raw_axes: list[int], axes: list[int],
                       dtype: str) -> bool:
    """Whether TensorFlow 1's batch_normalization layer takes its fused kernel, which
    changes the moving variance's update: with `fused` True or None, 4-D or 5-D inputs
    normalized along one channel axis (1 or the last) in a float32 or half dtype."""
    if fused is False or rank not in (4, 5):
        return False
    if len(raw_axes) != 1 or raw_axes[0] not in (-4, -3, -1, 1, 3, 4) or \
            dtype not in ("f16", "bf16", "f32"):
        return False
    if axes[0] in (1, rank - 1):
        return True
    if rank == 4:  # (TensorFlow refuses a fused 4-D layer on another axis)
        raise InvalidArgumentError(f"tf.layers.batch_normalization: the fused kernel takes "
                                   f"axis 1 or 3 of a 4-D input, got axis {raw_axes[0]}; "
                                   f"pass fused=False", location=str(user_location()))
    return False


def _refuse_constraints(layer: str, *constraints: Any) -> None:
    if any(c is not None for c in constraints):
        raise UnimplementedError(f"tf.layers.{layer}: constraints are not supported",
                                 location=str(user_location()))


@in_default_graph
def flatten(inputs: TensorLike, name: str | None = None, data_format: str = "channels_last"
            ) -> Any:
    """`inputs` reshaped to ``[batch, features]`` (the non-batch dims must be known).
    With ``data_format="channels_first"`` the channels (axis 1) are moved last first, as
    TensorFlow does, so the features come in the order of a ``channels_last`` model."""
    first = _channels_first(data_format)
    x = convert_to_tensor(inputs)
    rest = x.shape[2:] + x.shape[1:2] if first and len(x.shape) >= 3 else x.shape[1:]
    if any(d is None for d in rest):
        raise ShapeError(f"tf.layers.flatten: the dims after the batch must be known, got "
                         f"{x.shape}", location=str(user_location()))
    batch = -1 if x.shape[0] is None else x.shape[0]
    # under the layer's name scope, as TensorFlow's (``flatten/Reshape``)
    with _layer_scope(name, "flatten", None):
        if first and len(x.shape) >= 3:
            x = _array.transpose(x, [0, *range(2, len(x.shape)), 1])
        return _array.reshape(x, [batch, math.prod(rest)])


__all__ = ["dense", "conv2d", "max_pooling2d", "average_pooling2d", "dropout", "flatten",
           "batch_normalization"]


def __dir__() -> list[str]:
    return sorted(__all__)
