"""`Input` and `InputLayer`: the entry points of a functional model. ``Input((784,))``
is a `KerasTensor` of shape ``(None, 784)``; layers called on it record the graph a
`tw.keras.Model(inputs, outputs)` runs."""

from __future__ import annotations

from typing import Any

from ...compiler.dtypes import as_dtype
from .. import backend
from .base_layer import Layer
from .keras_tensor import KerasTensor, Node

__all__ = ["Input", "InputLayer"]


class InputLayer(Layer):
    """The layer behind `Input`: it has no weights and passes its input through; its
    one node's output is the model's input `KerasTensor`."""

    def __init__(self, input_shape: Any = None, batch_size: int | None = None,
                 dtype: Any = None, input_tensor: Any = None, sparse: bool | None = None,
                 name: str | None = None, ragged: bool | None = None, type_spec: Any = None,
                 **kwargs: Any) -> None:
        if sparse or ragged or type_spec is not None:
            raise NotImplementedError("tw.keras.Input: sparse, ragged and type_spec inputs "
                                      "are not supported")
        batch_input_shape = kwargs.pop("batch_input_shape", None)
        if kwargs:
            raise TypeError(f"InputLayer: unexpected keyword argument(s) "
                            f"{', '.join(sorted(kwargs))}")
        if name is None:
            name = backend.unique_object_name("input", zero_based=False)
        if input_tensor is not None:
            raise NotImplementedError("tw.keras.Input: input_tensor is not supported")
        if batch_input_shape is None:
            if input_shape is None:
                raise ValueError("tw.keras.Input: give a shape (e.g. Input(shape=(784,)))")
            if isinstance(input_shape, int):
                input_shape = (input_shape,)
            batch_input_shape = (batch_size,) + tuple(input_shape)
        batch_input_shape = tuple(None if d is None or d == -1 else int(d)
                                  for d in batch_input_shape)
        dtype = as_dtype(dtype).name if dtype is not None else backend.floatx()
        super().__init__(dtype=dtype, name=name)
        self._batch_input_shape = batch_input_shape
        self.built = True
        self.is_placeholder = True
        output = KerasTensor(batch_input_shape, dtype, name=name)
        Node(self, outputs=output)

    def get_config(self) -> dict[str, Any]:
        return {"batch_input_shape": list(self._batch_input_shape), "dtype": self.dtype,
                "sparse": False, "ragged": False, "name": self.name}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> InputLayer:
        config = dict(config)
        config.pop("sparse", None)
        config.pop("ragged", None)
        return cls(**config)


def Input(shape: Any = None, batch_size: int | None = None, name: str | None = None,  # noqa: N802
          dtype: Any = None, sparse: bool | None = None, tensor: Any = None,
          ragged: bool | None = None, type_spec: Any = None, batch_shape: Any = None,
          **kwargs: Any) -> KerasTensor:
    """A symbolic input of a functional model: ``Input(shape=(784,))`` stands for a batch
    of 784-vectors, shape ``(None, 784)`` (`batch_size` fixes the first dim)."""
    if kwargs:
        raise TypeError(f"tw.keras.Input: unexpected keyword argument(s) "
                        f"{', '.join(sorted(kwargs))}")
    if batch_shape is not None:
        layer = InputLayer(batch_input_shape=batch_shape, dtype=dtype, name=name,
                           sparse=sparse, ragged=ragged, type_spec=type_spec,
                           input_tensor=tensor)
    else:
        layer = InputLayer(input_shape=shape, batch_size=batch_size, dtype=dtype, name=name,
                           sparse=sparse, ragged=ragged, type_spec=type_spec,
                           input_tensor=tensor)
    return layer._inbound_nodes[0].outputs
