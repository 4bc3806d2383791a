"""`Sequential`: a stack of single-input, single-output layers. Given its input shape (an
`Input`, or ``input_shape=`` on the first layer) it is a functional model from the
start; otherwise it builds on its first call, from the shape and dtype of that input
(tf_keras' deferred build)."""

from __future__ import annotations

from typing import Any

from ...compiler.dtypes import as_dtype
from ...frontend import nest
from ...frontend.tensor_shape import TensorShape
from .. import backend
from .base_layer import Layer, _Tracked
from .functional import Functional
from .input_layer import Input, InputLayer
from .keras_tensor import KerasTensor

__all__ = ["Sequential"]


class Sequential(Functional):
    """``Sequential([Dense(64, activation='relu', input_shape=(784,)), Dense(10)])``:
    each layer is called on the previous one's output."""

    def __init__(self, layers: list[Layer] | None = None, name: str | None = None,
                 trainable: bool = True) -> None:
        Layer.__init__(self, name=name or backend.unique_object_name("sequential"),
                       trainable=trainable)
        self._init_model_state()
        # the layers added, without the InputLayer (its own attribute): the checkpoint
        # path of a layer's weights is the same whether the model was given its input
        # shape or built on its first call
        self._layers: list[Layer] = []
        self.__dict__["_graph_layers"] = _Tracked()
        self.__dict__["_endpoint_layers"] = _Tracked()
        self._input_layer: InputLayer | None = None
        self._graph_ready = False
        self.inputs: list[Any] = []
        self.outputs: list[Any] = []
        self.output_names: list[str] = []
        self.input_names: list[str] = []
        for layer in layers or []:
            self.add(layer)

    @classmethod
    def _default_name(cls) -> str:
        return "sequential"

    @property
    def layers(self) -> list[Layer]:
        """The layers added (without the `InputLayer` at the bottom)."""
        return list(self._layers)

    @property
    def _self_tracked_trackables(self) -> list[Layer]:
        return list(self._layers)

    @property
    def input_spec(self) -> Any:
        return super().input_spec if self._graph_ready else None

    @input_spec.setter
    def input_spec(self, value: Any) -> None:
        pass   # (Layer.__init__ sets None)

    def add(self, layer: Any) -> None:
        """Put `layer` on top of the stack (an `Input` tensor starts it)."""
        if isinstance(layer, KerasTensor):
            if layer._keras_history is None or not isinstance(layer._keras_history.layer,
                                                              InputLayer):
                raise TypeError("Sequential.add: a KerasTensor added must come from "
                                "tw.keras.Input")
            layer = layer._keras_history.layer
        if not isinstance(layer, Layer):
            raise TypeError(f"The added layer must be an instance of class Layer. Received: "
                            f"layer={layer} of type {type(layer)}.")
        if isinstance(layer, InputLayer):
            if self._layers or self._input_layer is not None:
                raise ValueError("Sequential.add: an Input can only be the first layer")
            self._input_layer = layer
            self._start_graph(layer._inbound_nodes[0].outputs)
            return
        for existing in self._layers:
            if existing.name == layer.name:
                raise ValueError(f"All layers added to a Sequential model should have unique "
                                 f"names. Name '{layer.name}' is already the name of a layer "
                                 f"in this model. Update the `name` argument to pass a unique "
                                 f"name.")
        self._layers = self._layers + [layer]   # reassigned: see Layer._layer_weights
        if self._graph_ready:
            self._extend_graph(layer)
        elif len(self._layers) == 1 and layer._batch_input_shape is not None:
            x = Input(batch_shape=layer._batch_input_shape, dtype=layer.dtype,
                      name=f"{layer.name}_input")
            self._input_layer = x._keras_history.layer
            self._start_graph(x)
        else:
            self.built = False

    def _start_graph(self, x: KerasTensor) -> None:
        """Call every layer added so far on `x` and become that functional model."""
        out = x
        for layer in self._layers:
            out = self._call_single(layer, out)
        self._set_graph(x, out)

    def _set_graph(self, x: KerasTensor, out: KerasTensor) -> None:
        layers = self._layers
        self._init_graph_network(x, out)
        self._layers = layers
        self._graph_ready = True

    def _extend_graph(self, layer: Layer) -> None:
        self._set_graph(self.inputs[0], self._call_single(layer, self.outputs[0]))

    @staticmethod
    def _call_single(layer: Layer, x: KerasTensor) -> KerasTensor:
        out = layer(x)
        if len(nest.flatten(out)[0]) != 1:
            raise ValueError(f"All layers in a Sequential model should have a single output "
                             f"tensor. For multi-output layers, use the functional API. "
                             f"Layer '{layer.name}' returned {len(nest.flatten(out)[0])}.")
        return nest.flatten(out)[0][0]

    def pop(self) -> None:
        """Remove the top layer."""
        if not self._layers:
            raise TypeError("There are no layers in the model.")
        removed = self._layers[-1]
        self._layers = self._layers[:-1]
        self._keras_layers.items = [x for x in self._keras_layers.items if x is not removed]
        if self._graph_ready:
            if self._layers:
                self._start_graph(self.inputs[0])
            else:
                self._graph_ready = False
                self.built = False

    def build(self, input_shape: Any = None, input_dtype: Any = None) -> None:
        """Build for inputs of `input_shape` (the batch dim may be None)."""
        if self._graph_ready:
            self.built = True
            return
        if not self._layers:
            raise ValueError("Sequential.build: the model has no layers")
        if input_shape is None:
            input_shape = self._layers[0]._batch_input_shape
            if input_shape is None:
                raise ValueError("You must provide an `input_shape` argument.")
        shape = tuple(TensorShape(tuple(input_shape)))
        x = Input(batch_shape=(None,) + shape[1:],
                  dtype=as_dtype(input_dtype).name if input_dtype is not None else None,
                  name=f"{self._layers[0].name}_input")
        self._input_layer = x._keras_history.layer
        self._start_graph(x)
        self.built = True

    def _maybe_build(self, inputs: Any) -> None:
        if self.built:
            return
        leaves = nest.flatten(inputs)[0]
        if len(leaves) != 1:
            raise ValueError(f"Sequential model '{self.name}' takes one input, got "
                             f"{len(leaves)}")
        self.build(tuple(leaves[0].shape), leaves[0].dtype)

    def call(self, inputs: Any, training: bool | None = None, mask: Any = None) -> Any:
        """Each layer on the previous one's output."""
        if self._graph_ready:
            return super().call(inputs, training=training, mask=mask)
        out = inputs
        for layer in self._layers:
            out = layer(out)
        return out

    def _output_names_or_none(self) -> list[str] | None:
        return list(self.output_names) if self._graph_ready else None

    def get_config(self) -> dict[str, Any]:
        from .saving import serialize_layer
        layers = [serialize_layer(layer) for layer in
                  ([self._input_layer] if self._input_layer is not None else []) + self._layers]
        return {"name": self.name, "trainable": self.trainable, "layers": layers}

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None
                    ) -> Sequential:
        from .saving import deserialize_layer
        model = cls(name=config.get("name"), trainable=config.get("trainable", True))
        for entry in config["layers"]:
            layer = deserialize_layer(entry, custom_objects)
            model.add(layer)
        return model
