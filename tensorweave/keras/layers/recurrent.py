"""Recurrent layers: `SimpleRNN`, `LSTM` and `GRU` over ``(batch, timesteps, features)``
with tf_keras 2.x's weights and equations (LSTM gates i, f, c, o; GRU gates z, r, h,
``reset_after=True`` by default with a ``(2, 3 * units)`` bias). The steps run as one
``tw.scan`` over time (its gradient is backpropagation through time); the input
projection of every step is one product before the loop.

Dropout inside the recurrence (`dropout`, `recurrent_dropout`), masks, `stateful` and
`time_major` are not supported (an error says so)."""

from __future__ import annotations

from typing import Any

import numpy as np

import tensorweave as tw

from .. import activations
from ..engine.base_layer import Layer
from ..engine.input_spec import InputSpec, layer_error
from .core import _positive_int, add_configured_weight, config_of, no_constraint, set_weight_options

__all__ = ["SimpleRNN", "LSTM", "GRU"]


class _Recurrent(Layer):
    """The loop and the arguments the three layers share."""

    _n_gates = 1
    _n_states = 1

    def __init__(self, units: int, activation: Any = "tanh",
                 recurrent_activation: Any = "sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, recurrent_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 kernel_constraint: Any = None, recurrent_constraint: Any = None,
                 bias_constraint: Any = None, dropout: float = 0.0,
                 recurrent_dropout: float = 0.0, return_sequences: bool = False,
                 return_state: bool = False, go_backwards: bool = False,
                 stateful: bool = False, unroll: bool = False, time_major: bool = False,
                 **kwargs: Any) -> None:
        kwargs.pop("implementation", None)   # a speed choice of tf_keras; same results
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        what = type(self).__name__
        no_constraint(what, kernel_constraint=kernel_constraint,
                      recurrent_constraint=recurrent_constraint, bias_constraint=bias_constraint)
        if dropout or recurrent_dropout:
            raise NotImplementedError(f"{what}: dropout and recurrent_dropout are not "
                                      f"supported by tw.keras; put a Dropout layer before or "
                                      f"after the recurrent layer")
        if stateful or time_major:
            raise NotImplementedError(f"{what}: stateful and time_major are not supported by "
                                      f"tw.keras")
        self.units = _positive_int(units, "units", what)
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = use_bias
        set_weight_options(self, kernel_initializer=kernel_initializer,
                           recurrent_initializer=recurrent_initializer,
                           bias_initializer=bias_initializer,
                           kernel_regularizer=kernel_regularizer,
                           recurrent_regularizer=recurrent_regularizer,
                           bias_regularizer=bias_regularizer)
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.go_backwards = go_backwards
        self.unroll = unroll   # the loop is compiled either way: same results
        self.input_spec = InputSpec(ndim=3)

    def _bias_shape(self) -> list[int]:
        return [self._n_gates * self.units]

    def _bias_initializer(self) -> Any:
        return self.bias_initializer

    def build(self, input_shape: Any) -> None:
        if isinstance(input_shape, list):   # called with initial states: the sequence first
            input_shape = input_shape[0]
        features = input_shape[-1]
        if features is None:
            raise layer_error(self.name, f"the feature dimension of the input must be known; "
                                         f"got shape {tuple(input_shape)}")
        self.input_spec = InputSpec(ndim=3, axes={-1: features})
        g = self._n_gates * self.units
        self.kernel = add_configured_weight(self, "kernel", [features, g])
        self.recurrent_kernel = add_configured_weight(self, "recurrent_kernel",
                                                      [self.units, g], option="recurrent")
        self.bias = (add_configured_weight(self, "bias", self._bias_shape(),
                                           initializer=self._bias_initializer())
                     if self.use_bias else None)
        self.built = True

    def _input_projection(self, x: Any) -> Any:
        """``x @ kernel (+ input bias)`` for every step: ``(batch, time, gates)``."""
        out = tw.tensordot(x, self.kernel, [[2], [0]])
        if self.use_bias:
            out = out + self._input_bias()
        return out

    def _input_bias(self) -> Any:
        return self.bias

    def _step(self, states: tuple, projected: Any) -> tuple:
        raise NotImplementedError

    def call(self, inputs: Any, initial_state: Any = None, training: bool | None = None,
             mask: Any = None) -> Any:
        if mask is not None:
            raise NotImplementedError(f"{type(self).__name__}: masks are not supported by "
                                      f"tw.keras")
        if isinstance(inputs, (list, tuple)):
            if initial_state is not None:
                raise layer_error(self.name, "initial_state given twice (in the inputs list "
                                             "and as an argument)")
            inputs, initial_state = inputs[0], list(inputs[1:])
        x = inputs
        if self.go_backwards:
            x = tw.reverse(x, [1])
        projected = tw.transpose(self._input_projection(x), [1, 0, 2])   # time first
        zeros = tw.zeros_like(projected[0][:, :self.units])
        if initial_state is None:
            states = tuple(zeros for _ in range(self._n_states))
        else:
            given = list(initial_state) if isinstance(initial_state, (list, tuple)) else [
                initial_state]
            if len(given) != self._n_states:
                raise layer_error(self.name, f"{type(self).__name__} expects "
                                             f"{self._n_states} initial state(s), got "
                                             f"{len(given)}")
            states = tuple(tw.cast(tw.convert_to_tensor(s), zeros.dtype) for s in given)
            for s in states:
                if len(s.shape) != 2 or s.shape[-1] not in (None, self.units):
                    raise layer_error(self.name, f"an initial state must have shape (batch, "
                                                 f"{self.units}), got {tuple(s.shape)}")
        history = tw.scan(lambda carry, p: self._step(carry, p), projected,
                          initializer=states)
        last = tuple(h[-1] for h in history)
        output = (tw.transpose(history[0], [1, 0, 2]) if self.return_sequences else last[0])
        if self.return_state:
            return [output, *last]
        return output

    def get_config(self) -> dict[str, Any]:
        return config_of(self, units=self.units, activation=self.activation,
                         recurrent_activation=self.recurrent_activation,
                         use_bias=self.use_bias, kernel_initializer=self.kernel_initializer,
                         recurrent_initializer=self.recurrent_initializer,
                         bias_initializer=self.bias_initializer,
                         kernel_regularizer=self.kernel_regularizer,
                         recurrent_regularizer=self.recurrent_regularizer,
                         bias_regularizer=self.bias_regularizer,
                         return_sequences=self.return_sequences,
                         return_state=self.return_state, go_backwards=self.go_backwards,
                         unroll=self.unroll)


class SimpleRNN(_Recurrent):
    """``h = activation(x @ kernel + h @ recurrent_kernel + bias)``."""

    def __init__(self, units: int, activation: Any = "tanh", **kwargs: Any) -> None:
        if "recurrent_activation" in kwargs:
            raise TypeError("SimpleRNN has no recurrent_activation")
        super().__init__(units, activation=activation, **kwargs)

    def _step(self, states, p):
        (h,) = states
        return (self.activation(p + tw.matmul(h, self.recurrent_kernel)),)

    def get_config(self):
        config = super().get_config()
        config.pop("recurrent_activation")
        return config


class LSTM(_Recurrent):
    """Long short-term memory (Hochreiter & Schmidhuber): gates i, f, c, o from
    ``x @ kernel + h @ recurrent_kernel + bias``; ``c = f * c + i * tanh(c~)``,
    ``h = o * tanh(c)``. `unit_forget_bias` starts the forget gate's bias at 1."""

    _n_gates = 4
    _n_states = 2

    def __init__(self, units: int, unit_forget_bias: bool = True, **kwargs: Any) -> None:
        super().__init__(units, **kwargs)
        self.unit_forget_bias = unit_forget_bias

    def _bias_initializer(self) -> Any:
        if not self.unit_forget_bias:
            return self.bias_initializer
        init, u = self.bias_initializer, self.units

        def with_forget_bias(shape: Any, dtype: Any = None, **kwargs: Any) -> Any:
            parts = [np.asarray(init((u,), dtype)), np.ones((u,), tw.as_dtype(dtype).np),
                     np.asarray(init((2 * u,), dtype))]
            return tw.constant(np.concatenate(parts))
        return with_forget_bias

    def _step(self, states, p):
        h, c = states
        u = self.units
        z = p + tw.matmul(h, self.recurrent_kernel)
        i = self.recurrent_activation(z[:, :u])
        f = self.recurrent_activation(z[:, u:2 * u])
        c_new = f * c + i * self.activation(z[:, 2 * u:3 * u])
        o = self.recurrent_activation(z[:, 3 * u:])
        return o * self.activation(c_new), c_new

    def get_config(self):
        return {**super().get_config(), "unit_forget_bias": self.unit_forget_bias}


class GRU(_Recurrent):
    """Gated recurrent unit (Cho et al.): gates z, r and candidate h~;
    ``h = z * h + (1 - z) * h~``. With `reset_after` (tf_keras' default) the reset gate
    multiplies ``h @ recurrent_kernel + recurrent_bias``, and the bias is ``(2, 3 *
    units)``: input and recurrent biases."""

    _n_gates = 3

    def __init__(self, units: int, reset_after: bool = True, **kwargs: Any) -> None:
        super().__init__(units, **kwargs)
        self.reset_after = reset_after

    def _bias_shape(self) -> list[int]:
        g = 3 * self.units
        return [2, g] if self.reset_after else [g]

    def _input_bias(self) -> Any:
        return self.bias[0] if self.reset_after else self.bias

    def _step(self, states, p):
        (h,) = states
        u = self.units
        if self.reset_after:
            inner = tw.matmul(h, self.recurrent_kernel)
            if self.use_bias:
                inner = inner + self.bias[1]
            z = self.recurrent_activation(p[:, :u] + inner[:, :u])
            r = self.recurrent_activation(p[:, u:2 * u] + inner[:, u:2 * u])
            hh = self.activation(p[:, 2 * u:] + r * inner[:, 2 * u:])
        else:
            rk = self.recurrent_kernel
            z = self.recurrent_activation(p[:, :u] + tw.matmul(h, rk[:, :u]))
            r = self.recurrent_activation(p[:, u:2 * u] + tw.matmul(h, rk[:, u:2 * u]))
            hh = self.activation(p[:, 2 * u:] + tw.matmul(r * h, rk[:, 2 * u:]))
        return (z * h + (1 - z) * hh,)

    def get_config(self):
        return {**super().get_config(), "reset_after": self.reset_after}
