"""`BatchNormalization` and `LayerNormalization` (tf_keras 2.x).

`BatchNormalization` in training normalizes with the batch's mean and (biased) variance
and moves its moving statistics toward them by ``1 - momentum``; in inference, or when
the layer is frozen (``trainable = False``, Keras 2's rule), it uses the moving
statistics. As tf_keras, 4-D and 5-D inputs normalized along their channel axis take
the fused kernel's path (``tw.nn.fused_batch_norm``), whose moving variance moves toward
the Bessel-corrected batch variance ``n / (n - 1)``; other inputs (after a `Dense`, for
instance) move it toward the biased one."""

from __future__ import annotations

from typing import Any

import tensorweave as tw

from ..engine.base_layer import Layer
from ..engine.input_spec import InputSpec, layer_error
from .core import add_configured_weight, config_of, no_constraint, set_weight_options

__all__ = ["BatchNormalization", "LayerNormalization"]


def _axes(axis: Any) -> list[int]:
    if isinstance(axis, (list, tuple)):
        return [int(a) for a in axis]
    if isinstance(axis, int):
        return [axis]
    raise TypeError(f"Expected an int or a list/tuple of ints for the argument 'axis', but "
                    f"received: {axis}")


def _resolve_axes(layer: Layer, axes: list[int], rank: int) -> list[int]:
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise layer_error(layer.name, f"Invalid value for `axis` argument. Expected 0 <= "
                                          f"axis < inputs.rank (with inputs.rank={rank}). "
                                          f"Received: axis={a}")
        out.append(a % rank)
    if len(set(out)) != len(out):
        raise layer_error(layer.name, f"Duplicate axis: {axes}")
    return sorted(out)


def _add_scale_and_offset(layer: Layer, param_shape: list[int]) -> None:
    """The layer's `gamma` (when `scale`) and `beta` (when `center`), else None."""
    layer.gamma = (add_configured_weight(layer, "gamma", param_shape)
                   if layer.scale else None)
    layer.beta = (add_configured_weight(layer, "beta", param_shape)
                  if layer.center else None)


class BatchNormalization(Layer):
    """Normalize each feature (along `axis`) by batch statistics in training and by
    moving averages of them in inference; then ``gamma * x + beta``."""

    def __init__(self, axis: Any = -1, momentum: float = 0.99, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", moving_mean_initializer: Any = "zeros",
                 moving_variance_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, synchronized: bool = False,
                 fused: bool | None = None, renorm: bool = False,
                 virtual_batch_size: int | None = None, adjustment: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        no_constraint("BatchNormalization", beta_constraint=beta_constraint,
                      gamma_constraint=gamma_constraint)
        if renorm or virtual_batch_size is not None or adjustment is not None:
            raise NotImplementedError("BatchNormalization: renorm, virtual_batch_size and "
                                      "adjustment are not supported by tw.keras")
        self.axis = _axes(axis)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center, self.scale = center, scale
        self.synchronized = synchronized   # one device: the same statistics
        self.fused = fused
        set_weight_options(self, beta_initializer=beta_initializer,
                           gamma_initializer=gamma_initializer,
                           moving_mean_initializer=moving_mean_initializer,
                           moving_variance_initializer=moving_variance_initializer,
                           beta_regularizer=beta_regularizer,
                           gamma_regularizer=gamma_regularizer)
        self.supports_masking = True

    def build(self, input_shape: Any) -> None:
        rank = len(input_shape)
        if rank == 0:
            raise layer_error(self.name, f"Input has undefined rank. Received: input_shape="
                                         f"{tuple(input_shape)}.")
        self._axes_resolved = _resolve_axes(self, self.axis, rank)
        for a in self._axes_resolved:
            if input_shape[a] is None:
                raise layer_error(self.name, f"Input has undefined `axis` dimension. "
                                             f"Received input with shape "
                                             f"{tuple(input_shape)} and axis={self.axis}")
        self.input_spec = InputSpec(ndim=rank, axes={a: input_shape[a]
                                                     for a in self._axes_resolved})
        channel = self._axes_resolved
        fusable = (len(channel) == 1 and ((rank == 4 and channel[0] in (1, 3)) or
                                          (rank == 5 and channel[0] in (1, 4))))
        if self.fused and not fusable:
            raise layer_error(self.name, f"`fused=True` is only supported for 4D/5D inputs "
                                         f"normalized along axis 1 or the last axis; got "
                                         f"rank {rank} and axis={self.axis}")
        self._fused_format = None
        if fusable and self.fused is not False:
            self._fused_format = {(4, 1): "NCHW", (4, 3): "NHWC", (5, 1): "NCDHW",
                                  (5, 4): "NDHWC"}[(rank, channel[0])]
        param_shape = [input_shape[a] for a in channel]
        self._param_shape = param_shape
        _add_scale_and_offset(self, param_shape)
        self.moving_mean = add_configured_weight(self, "moving_mean", param_shape,
                                                 trainable=False)
        self.moving_variance = add_configured_weight(self, "moving_variance", param_shape,
                                                     trainable=False)
        self.built = True

    def _broadcast(self, v: Any, rank: int) -> Any:
        """A parameter of the normalized axes shaped to broadcast against the input."""
        if v is None:
            return None
        if self._axes_resolved == [rank - 1]:
            return v
        shape = [1] * rank
        for a in self._axes_resolved:
            shape[a] = None
        dims = iter(v.shape)
        return tw.reshape(v, [next(dims) if d is None else 1 for d in shape])

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        training = bool(training) and self.trainable   # a frozen layer runs in inference
        rank = len(inputs.shape)
        if self._fused_format is not None:
            return self._fused(inputs, training)
        reduction = [a for a in range(rank) if a not in self._axes_resolved]
        if training:
            mean, variance = tw.nn.moments(inputs, reduction, keepdims=False)
            decay = 1.0 - self.momentum
            for var, value in ((self.moving_mean, mean), (self.moving_variance, variance)):
                var.assign_sub((var.read_value() - tw.cast(value, var.dtype)) * decay,
                               read_value=False)
        else:
            mean, variance = self.moving_mean.read_value(), self.moving_variance.read_value()
        return tw.nn.batch_normalization(
            inputs, self._broadcast(mean, rank), self._broadcast(variance, rank),
            self._broadcast(self.beta, rank), self._broadcast(self.gamma, rank), self.epsilon)

    def _fused(self, inputs: Any, training: bool) -> Any:
        shape = self._param_shape
        gamma = self.gamma if self.scale else tw.ones(shape, inputs.dtype)
        beta = self.beta if self.center else tw.zeros(shape, inputs.dtype)
        if not training:
            y, _, _ = tw.nn.fused_batch_norm(inputs, gamma, beta, mean=self.moving_mean,
                                             variance=self.moving_variance,
                                             epsilon=self.epsilon,
                                             data_format=self._fused_format, is_training=False)
            return y
        y, mean, variance = tw.nn.fused_batch_norm(
            inputs, gamma, beta, mean=self.moving_mean.read_value(),
            variance=self.moving_variance.read_value(), epsilon=self.epsilon,
            data_format=self._fused_format, is_training=True,
            exponential_avg_factor=1.0 - self.momentum)
        self.moving_mean.assign(mean, read_value=False)
        self.moving_variance.assign(variance, read_value=False)
        return y

    def get_config(self) -> dict[str, Any]:
        return config_of(self, axis=self.axis if len(self.axis) > 1 else self.axis[0],
                         momentum=self.momentum, epsilon=self.epsilon, center=self.center,
                         scale=self.scale, beta_initializer=self.beta_initializer,
                         gamma_initializer=self.gamma_initializer,
                         moving_mean_initializer=self.moving_mean_initializer,
                         moving_variance_initializer=self.moving_variance_initializer,
                         beta_regularizer=self.beta_regularizer,
                         gamma_regularizer=self.gamma_regularizer,
                         synchronized=self.synchronized)


class LayerNormalization(Layer):
    """Normalize each example over `axis` (default the last) by its own mean and
    variance; then ``gamma * x + beta``."""

    def __init__(self, axis: Any = -1, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        no_constraint("LayerNormalization", beta_constraint=beta_constraint,
                      gamma_constraint=gamma_constraint)
        self.axis = _axes(axis)
        self.epsilon = float(epsilon)
        self.center, self.scale = center, scale
        set_weight_options(self, beta_initializer=beta_initializer,
                           gamma_initializer=gamma_initializer,
                           beta_regularizer=beta_regularizer,
                           gamma_regularizer=gamma_regularizer)
        self.supports_masking = True

    def build(self, input_shape: Any) -> None:
        rank = len(input_shape)
        self._axes_resolved = _resolve_axes(self, self.axis, rank)
        param_shape = [input_shape[a] for a in self._axes_resolved]
        if any(d is None for d in param_shape):
            raise layer_error(self.name, f"the normalized axes {self.axis} of the input shape "
                                         f"{tuple(input_shape)} must be known")
        _add_scale_and_offset(self, param_shape)
        self.built = True

    def call(self, inputs: Any) -> Any:
        rank = len(inputs.shape)
        shape = [inputs.shape[a] if a in self._axes_resolved else 1 for a in range(rank)]

        def param(v: Any) -> Any:
            if v is None or self._axes_resolved == [rank - 1]:
                return v
            return tw.reshape(v, shape)

        return tw.nn.layer_normalization(inputs, param(self.gamma), param(self.beta),
                                         axis=self._axes_resolved, epsilon=self.epsilon)

    def get_config(self) -> dict[str, Any]:
        return config_of(self, axis=self.axis if len(self.axis) > 1 else self.axis[0],
                         epsilon=self.epsilon, center=self.center, scale=self.scale,
                         beta_initializer=self.beta_initializer,
                         gamma_initializer=self.gamma_initializer,
                         beta_regularizer=self.beta_regularizer,
                         gamma_regularizer=self.gamma_regularizer)
