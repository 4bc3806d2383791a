"""Convolution layers: `Conv1D` and `Conv2D` (``valid`` / ``same`` padding, strides,
dilation, ``channels_last`` or ``channels_first``; `Conv1D` also ``causal``), on
``tw.nn.conv1d`` / ``tw.nn.conv2d``. Kernels are ``(*kernel_size, in_channels,
filters)``, as in tf_keras."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorweave as tw

from .. import activations
from ..engine.base_layer import Layer
from ..engine.input_spec import InputSpec, layer_error
from .core import _data_format, add_configured_weight, config_of, no_constraint, set_weight_options

__all__ = ["Conv", "Conv1D", "Conv2D", "Convolution1D", "Convolution2D", "normalize_tuple",
           "conv_output_length"]


def normalize_tuple(value: Any, n: int, name: str, allow_zero: bool = False) -> tuple[int, ...]:
    """An int or a sequence of `n` ints as an `n`-tuple, each positive (or 0 when
    allowed); tf_keras' messages otherwise."""
    if isinstance(value, (int,)) and not isinstance(value, bool):
        values: tuple[int, ...] = (value,) * n
    else:
        try:
            values = tuple(int(v) for v in value)
        except (TypeError, ValueError):
            raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. "
                             f"Received {name}={value}") from None
        if len(values) != n:
            raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. "
                             f"Received {name}={value}")
    low = 0 if allow_zero else 1
    if any(v < low for v in values):
        req = "`>= 0`" if allow_zero else "`> 0`"
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received "
                         f"{name}={value} including values {req} not satisfied")
    return values


def conv_output_length(length: int | None, size: int, padding: str, stride: int,
                       dilation: int = 1) -> int | None:
    """The output length of a convolution or pooling along one dim."""
    if length is None:
        return None
    size = size + (size - 1) * (dilation - 1)
    if padding in ("same", "causal"):
        out = length
    else:
        out = length - size + 1
    return (out + stride - 1) // stride


class Conv(Layer):
    """The `rank`-D convolution layer behind `Conv1D` and `Conv2D`."""

    rank = 2

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 data_format: str | None = None, dilation_rate: Any = 1, groups: int = 1,
                 activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, **kwargs: Any) -> None:
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        what = type(self).__name__
        no_constraint(what, kernel_constraint=kernel_constraint,
                      bias_constraint=bias_constraint)
        if isinstance(filters, float) and filters.is_integer():
            filters = int(filters)
        if not isinstance(filters, int) or isinstance(filters, bool) or filters <= 0:
            raise ValueError(f"Invalid value for argument `filters`. Expected a strictly "
                             f"positive value. Received filters={filters}.")
        if groups != 1:
            raise NotImplementedError(f"{what}: groups other than 1 are not supported by "
                                      f"tw.keras")
        self.filters = filters
        self.groups = groups
        self.kernel_size = normalize_tuple(kernel_size, self.rank, "kernel_size")
        self.strides = normalize_tuple(strides, self.rank, "strides")
        self.dilation_rate = normalize_tuple(dilation_rate, self.rank, "dilation_rate")
        self.padding = str(padding).lower()
        allowed = ("valid", "same", "causal") if self.rank == 1 else ("valid", "same")
        if self.padding not in allowed:
            raise ValueError(f"The `padding` argument must be a list/tuple or one of "
                             f"{', '.join(repr(a) for a in allowed)}. Received: {padding}")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"`strides > 1` not supported in conjunction with "
                             f"`dilation_rate > 1`. Received: strides={self.strides} and "
                             f"dilation_rate={self.dilation_rate}")
        self.data_format = _data_format(data_format)
        if self.padding == "causal" and self.data_format != "channels_last":
            raise ValueError("Causal padding is only supported for `Conv1D` with "
                             "channels_last.")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        set_weight_options(self, kernel_initializer=kernel_initializer,
                           bias_initializer=bias_initializer,
                           kernel_regularizer=kernel_regularizer,
                           bias_regularizer=bias_regularizer)
        self.input_spec = InputSpec(min_ndim=self.rank + 2)

    @property
    def _channel_axis(self) -> int:
        return -1 if self.data_format == "channels_last" else 1

    def build(self, input_shape: Any) -> None:
        axis = self._channel_axis
        channels = input_shape[axis]
        if channels is None:
            raise layer_error(self.name, f"The channel dimension of the inputs should be "
                                         f"defined. The input_shape received is "
                                         f"{tuple(input_shape)}, where axis {axis} (0-based) "
                                         f"is the channel dimension, which found to be `None`.")
        self.input_spec = InputSpec(min_ndim=self.rank + 2, axes={axis: channels})
        self.kernel = add_configured_weight(self, "kernel",
                                            [*self.kernel_size, channels, self.filters])
        self.bias = (add_configured_weight(self, "bias", [self.filters])
                     if self.use_bias else None)
        self.built = True

    def _check_output(self, spatial: Sequence[int | None], shape: Any) -> None:
        for length, k, s, d in zip(spatial, self.kernel_size, self.strides, self.dilation_rate):
            out = conv_output_length(length, k, self.padding, s, d)
            if out is not None and out <= 0:
                raise layer_error(self.name, f"One of the dimensions in the output is <= 0 "
                                             f"due to downsampling in {self.name}. Consider "
                                             f"increasing the input size. Received input "
                                             f"shape {tuple(shape)} which would produce output "
                                             f"shape with a zero or negative value in a "
                                             f"dimension.")

    def call(self, inputs: Any) -> Any:
        rank = len(inputs.shape)
        if rank != self.rank + 2:
            raise layer_error(self.name, f"expected inputs of rank {self.rank + 2} (batch, "
                                         f"spatial dims, channels), got shape "
                                         f"{tuple(inputs.shape)}")
        x = inputs
        if self.data_format == "channels_first":
            x = tw.transpose(x, [0, *range(2, rank), 1])
        self._check_output(tuple(x.shape[1:-1]), inputs.shape)
        padding = self.padding.upper()
        if self.rank == 1:
            if self.padding == "causal":
                left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
                x = tw.pad(x, [[0, 0], [left, 0], [0, 0]])
                padding = "VALID"
            y = tw.nn.conv1d(x, self.kernel, stride=self.strides[0], padding=padding,
                             dilations=self.dilation_rate[0])
        else:
            y = tw.nn.conv2d(x, self.kernel, strides=list(self.strides), padding=padding,
                             dilations=list(self.dilation_rate))
        if self.use_bias:
            y = tw.nn.bias_add(y, self.bias)
        if self.data_format == "channels_first":
            y = tw.transpose(y, [0, rank - 1, *range(1, rank - 1)])
        return self.activation(y)

    def get_config(self) -> dict[str, Any]:
        return config_of(self, filters=self.filters, kernel_size=list(self.kernel_size),
                         strides=list(self.strides), padding=self.padding,
                         data_format=self.data_format, dilation_rate=list(self.dilation_rate),
                         groups=self.groups, activation=self.activation,
                         use_bias=self.use_bias, kernel_initializer=self.kernel_initializer,
                         bias_initializer=self.bias_initializer,
                         kernel_regularizer=self.kernel_regularizer,
                         bias_regularizer=self.bias_regularizer)


class Conv1D(Conv):
    """1-D convolution over ``(batch, steps, channels)`` (``padding='causal'`` pads on the
    left only)."""

    rank = 1


class Conv2D(Conv):
    """2-D convolution over ``(batch, rows, cols, channels)`` (or channels first)."""

    rank = 2


Convolution1D = Conv1D
Convolution2D = Conv2D
