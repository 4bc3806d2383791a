"""Merge layers, called on a list of tensors: `Add`, `Subtract`, `Multiply`, `Average`,
`Maximum`, `Minimum` (elementwise; an input of lower rank gets unit dims after its
batch dim, as tf_keras) and `Concatenate` (along `axis`); and their functions
(``tw.keras.layers.add([a, b])``)."""

from __future__ import annotations

import functools
from typing import Any

import tensorweave as tw

from ..engine.base_layer import Layer
from ..engine.input_spec import layer_error
from .core import config_of

__all__ = ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate",
           "add", "subtract", "multiply", "average", "maximum", "minimum", "concatenate"]


def _shapes(layer: Layer, input_shape: Any, at_least: int) -> list[tuple]:
    if not isinstance(input_shape, (list, tuple)) or not input_shape or not all(
            isinstance(s, (list, tuple)) for s in input_shape):
        raise layer_error(layer.name, f"A merge layer should be called on a list of inputs. "
                                      f"Received: input_shape={input_shape} (not a list of "
                                      f"shapes)")
    if len(input_shape) < at_least:
        raise layer_error(layer.name, f"A merge layer should be called on a list of at least "
                                      f"{at_least} inputs. Got {len(input_shape)} inputs.")
    return [tuple(s) for s in input_shape]


class _Merge(Layer):
    """Elementwise merge of a list of inputs."""

    _min_inputs = 1

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True

    def _check(self, shapes: list[tuple]) -> None:
        """tf_keras' ``_compute_elemwise_op_output_shape``: dims aligned from the end must
        be equal, 1 or unknown."""
        def merged(a: tuple, b: tuple) -> tuple:
            if len(a) < len(b):
                a, b = b, a
            out = list(a[:len(a) - len(b)])
            for i, j in zip(a[len(a) - len(b):], b):
                if i is None or j is None:
                    out.append(None)
                elif i == 1:
                    out.append(j)
                elif j == 1 or i == j:
                    out.append(i)
                else:
                    raise layer_error(self.name, f"Inputs have incompatible shapes. Received "
                                                 f"shapes {a} and {b}")
            return tuple(out)
        functools.reduce(merged, [s[1:] for s in shapes])

    def build(self, input_shape: Any) -> None:
        self._check(_shapes(self, input_shape, self._min_inputs))
        self.built = True

    def call(self, inputs: Any) -> Any:
        if not isinstance(inputs, (list, tuple)):
            raise layer_error(self.name, f"A merge layer should be called on a list of "
                                         f"inputs. Received: inputs={inputs} (not a list of "
                                         f"tensors)")
        self._check(_shapes(self, [tuple(x.shape) for x in inputs], self._min_inputs))
        ranks = [len(x.shape) for x in inputs]
        top = max(ranks)
        expanded = []
        for x, r in zip(inputs, ranks):
            for _ in range(top - r):
                x = tw.expand_dims(x, 1)
            expanded.append(x)
        return self._merge(expanded)

    def _merge(self, inputs: list[Any]) -> Any:
        raise NotImplementedError


class Add(_Merge):
    """The sum of the inputs."""

    def _merge(self, inputs):
        return functools.reduce(lambda a, b: a + b, inputs)


class Subtract(_Merge):
    """``inputs[0] - inputs[1]`` (exactly two inputs)."""

    _min_inputs = 2

    def build(self, input_shape):
        super().build(input_shape)
        if len(input_shape) != 2:
            raise layer_error(self.name, f"A `Subtract` layer should be called on exactly 2 "
                                         f"inputs. Received: input_shape={input_shape}")

    def _merge(self, inputs):
        if len(inputs) != 2:
            raise layer_error(self.name, f"A `Subtract` layer should be called on exactly 2 "
                                         f"inputs. Received: {len(inputs)} inputs")
        return inputs[0] - inputs[1]


class Multiply(_Merge):
    """The elementwise product of the inputs."""

    def _merge(self, inputs):
        return functools.reduce(lambda a, b: a * b, inputs)


class Average(_Merge):
    """The elementwise mean of the inputs."""

    def _merge(self, inputs):
        return functools.reduce(lambda a, b: a + b, inputs) / len(inputs)


class Maximum(_Merge):
    """The elementwise maximum of the inputs."""

    def _merge(self, inputs):
        return functools.reduce(tw.maximum, inputs)


class Minimum(_Merge):
    """The elementwise minimum of the inputs."""

    def _merge(self, inputs):
        return functools.reduce(tw.minimum, inputs)


class Concatenate(Layer):
    """The inputs joined along `axis` (default the last); every other dim must match."""

    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = int(axis)
        self.supports_masking = True

    def _check(self, shapes: list[tuple]) -> None:
        ranks = {len(s) for s in shapes}
        msg = (f"A `Concatenate` layer requires inputs with matching shapes except for the "
               f"concatenation axis. Received: input_shape={[list(s) for s in shapes]}")
        if len(ranks) != 1:
            raise layer_error(self.name, msg)
        rank = ranks.pop()
        if not -rank <= self.axis < rank:
            raise layer_error(self.name, f"Concatenate: axis {self.axis} is out of range for "
                                         f"inputs of rank {rank}")
        axis = self.axis % rank
        for i in range(rank):
            if i == axis:
                continue
            known = {s[i] for s in shapes if s[i] is not None}
            if len(known) > 1:
                raise layer_error(self.name, msg)

    def build(self, input_shape: Any) -> None:
        self._check(_shapes(self, input_shape, 1))
        self.built = True

    def call(self, inputs: Any) -> Any:
        if not isinstance(inputs, (list, tuple)):
            raise layer_error(self.name, f"A `Concatenate` layer should be called on a list "
                                         f"of inputs. Received: inputs={inputs}")
        self._check([tuple(x.shape) for x in inputs])
        return tw.concat(list(inputs), axis=self.axis)

    def get_config(self) -> dict[str, Any]:
        return config_of(self, axis=self.axis)


def _functional(cls: type, doc: str) -> Any:
    def merge(inputs: list[Any], **kwargs: Any) -> Any:
        return cls(**kwargs)(inputs)
    merge.__doc__ = doc
    merge.__name__ = cls.__name__.lower()
    return merge


add = _functional(Add, "``Add()(inputs)``.")
subtract = _functional(Subtract, "``Subtract()(inputs)``.")
multiply = _functional(Multiply, "``Multiply()(inputs)``.")
average = _functional(Average, "``Average()(inputs)``.")
maximum = _functional(Maximum, "``Maximum()(inputs)``.")
minimum = _functional(Minimum, "``Minimum()(inputs)``.")


def concatenate(inputs: list[Any], axis: int = -1, **kwargs: Any) -> Any:
    """``Concatenate(axis)(inputs)``."""
    return Concatenate(axis=axis, **kwargs)(inputs)
