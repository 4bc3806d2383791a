"""`Functional`: the model that ``tw.keras.Model(inputs, outputs)`` makes from a graph of
layer calls on `KerasTensor`s. The graph is ordered as tf_keras orders it (nodes by
depth from the outputs, layers by depth then discovery order), so its `layers`,
`weights` and `get_weights` come in tf_keras' order; calling the model runs each
node's layer on the values of its inputs, depth by depth."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import tensorweave as tw

from ...frontend import nest
from .. import backend
from .base_layer import Layer, _Tracked
from .input_layer import InputLayer
from .input_spec import InputSpec
from .keras_tensor import KerasTensor, Node
from .training import Model

__all__ = ["Functional", "map_graph_network"]


def _build_map(outputs: list[KerasTensor]) -> tuple[list[Node], dict[int, int], dict[int, Layer]]:
    """Nodes reachable from `outputs`, deepest first (tf_keras' ``_build_map``), and the
    order in which their layers were found."""
    finished: set[int] = set()
    in_progress: set[int] = set()
    ordered: list[Node] = []
    layer_indices: dict[int, int] = {}
    layers: dict[int, Layer] = {}

    def visit(tensor: KerasTensor) -> None:
        if tensor._keras_history is None:
            raise ValueError(f"Output tensors of a Functional model must be the output of a "
                             f"tw.keras layer (thus holding past layer metadata). Found: "
                             f"{tensor!r}")
        layer, node_index, _ = tensor._keras_history
        node = layer._inbound_nodes[node_index]
        if id(node) in finished:
            return
        if id(node) in in_progress:
            raise ValueError(f"Tensor {tensor!r} from layer '{layer.name}' is part of a cycle.")
        if id(layer) not in layer_indices:
            layer_indices[id(layer)] = len(layer_indices)
            layers[id(layer)] = layer
        in_progress.add(id(node))
        if not node.is_input:
            for x in node.keras_inputs:
                visit(x)
        finished.add(id(node))
        in_progress.discard(id(node))
        ordered.append(node)

    for out in outputs:
        visit(out)
    return ordered, layer_indices, layers


def map_graph_network(inputs: list[KerasTensor], outputs: list[KerasTensor]
                      ) -> tuple[dict[int, list[Node]], list[Layer], list[int]]:
    """``(nodes_by_depth, layers, depth_keys)`` of the graph from `inputs` to `outputs`
    (tf_keras' ``_map_graph_network``), or an error for a graph the inputs do not
    determine (a "graph disconnected" message naming the tensor and the layer)."""
    ordered, layer_indices, layer_objs = _build_map(outputs)
    node_depths: dict[int, int] = {}
    node_objs: dict[int, Node] = {}
    layer_depths: dict[int, int] = {}
    for node in reversed(ordered):
        depth = node_depths.setdefault(id(node), 0)
        node_objs[id(node)] = node
        depth = max(depth, layer_depths.get(id(node.layer), 0))
        layer_depths[id(node.layer)] = depth
        node_depths[id(node)] = depth
        for parent in node.parent_nodes:
            node_objs[id(parent)] = parent
            node_depths[id(parent)] = max(depth + 1, node_depths.get(id(parent), 0))
    for x in inputs:
        layer = x._keras_history.layer
        if id(layer) not in layer_depths:
            layer_depths[id(layer)] = 0
            layer_indices[id(layer)] = -1
            layer_objs[id(layer)] = layer
            node = layer._inbound_nodes[0]
            node_depths[id(node)] = 0
            node_objs[id(node)] = node
    nodes_by_depth: dict[int, list[Node]] = defaultdict(list)
    for key, depth in node_depths.items():
        nodes_by_depth[depth].append(node_objs[key])
    layers_by_depth: dict[int, list[Layer]] = defaultdict(list)
    for key, depth in layer_depths.items():
        layers_by_depth[depth].append(layer_objs[key])
    depth_keys = sorted(layers_by_depth, reverse=True)
    layers: list[Layer] = []
    for depth in depth_keys:
        layers.extend(sorted(layers_by_depth[depth], key=lambda x: layer_indices[id(x)]))
    computable = {id(x) for x in inputs}
    done: list[str] = []
    for depth in sorted(nodes_by_depth, reverse=True):
        for node in nodes_by_depth[depth]:
            if not node.is_input:
                for x in node.keras_inputs:
                    if id(x) not in computable:
                        raise ValueError(
                            f"Graph disconnected: cannot obtain value for tensor {x!r} at "
                            f"layer '{node.layer.name}'. The following previous layers were "
                            f"accessed without issue: {done}")
            elif not any(node is x.node for x in inputs):
                raise ValueError(
                    f"Graph disconnected: cannot obtain value for tensor "
                    f"{node.outputs!r} at layer '{node.layer.name}': it is not one of the "
                    f"model's inputs. The following previous layers were accessed without "
                    f"issue: {done}")
            computable.update(id(x) for x in node.flat_outputs)
            done.append(node.layer.name)
    names = [layer.name for layer in layers]
    for name in names:
        if names.count(name) != 1:
            raise ValueError(f'The name "{name}" is used {names.count(name)} times in the '
                             f"model. All layer names should be unique.")
    return dict(nodes_by_depth), layers, sorted(nodes_by_depth, reverse=True)


class Functional(Model):
    """A model defined by a graph of layer calls: ``Model(inputs, outputs)``."""

    def __init__(self, inputs: Any = None, outputs: Any = None, name: str | None = None,
                 trainable: bool = True, **kwargs: Any) -> None:
        if inputs is None or outputs is None:
            raise TypeError("Model(inputs, outputs): both inputs and outputs are needed for "
                            "a functional model")
        allowed = {"dtype", "dynamic", "autocast"}
        unknown = sorted(set(kwargs) - allowed)
        if unknown:
            raise TypeError(f"Functional model: unexpected keyword argument(s) "
                            f"{', '.join(unknown)}")
        Layer.__init__(self, name=name or backend.unique_object_name("model"),
                       trainable=trainable, **kwargs)
        self._init_model_state()
        self._init_graph_network(inputs, outputs)

    @classmethod
    def _default_name(cls) -> str:
        return "model"

    def _init_graph_network(self, inputs: Any, outputs: Any) -> None:
        if isinstance(inputs, list) and len(inputs) == 1 and not isinstance(outputs, list):
            pass   # kept as given: Keras calls such a model with a list of one array
        self._nested_inputs = inputs
        self._nested_outputs = outputs
        self.inputs = nest.flatten(inputs, expand_composites=False)[0]
        self.outputs = nest.flatten(outputs, expand_composites=False)[0]
        for x in self.inputs:
            if not isinstance(x, KerasTensor) or x._keras_history is None or \
                    not isinstance(x._keras_history.layer, InputLayer):
                raise ValueError(f"Input tensors to a Functional model must come from "
                                 f"`tw.keras.Input`. Received: {x!r}")
        for x in self.outputs:
            if not isinstance(x, KerasTensor):
                raise ValueError(f"Output tensors of a Functional model must be the output "
                                 f"of a tw.keras layer. Received: {x!r}")
        self._nodes_by_depth, layers, self._depth_keys = map_graph_network(
            self.inputs, self.outputs)
        self._network_nodes = {id(n) for nodes in self._nodes_by_depth.values() for n in nodes}
        # (kept out of the tw.Module walk: see `_graph_layers`)
        self.__dict__["_endpoint_layers"] = _Tracked()
        self._endpoint_layers.items = [[x._keras_history.layer for x in self.inputs],
                                       [x._keras_history.layer for x in self.outputs]]
        # every layer in tf_keras' order (input layers too), out of the tw.Module walk;
        # the walk (checkpoints) finds the layers with weights in the plain list
        # `_layers`, without the input layers, so their paths do not depend on whether
        # the model was given its input shape or built on its first call
        self.__dict__["_graph_layers"] = _Tracked()
        self._graph_layers.items = list(layers)
        self._layers = [layer for layer in layers if not isinstance(layer, InputLayer)]
        self.input_names = [layer.name for layer in self._input_layers]
        names: list[str] = []
        for layer in self._output_layers:
            name, n = layer.name, 1
            while name in names:
                name, n = f"{layer.name}_{n}", n + 1
            names.append(name)
        self.output_names = names
        self._build_input_shape = nest.map_structure(lambda x: tuple(x.shape),
                                                     self._nested_inputs)
        self.built = True

    def _output_names_or_none(self) -> list[str] | None:
        return list(self.output_names)

    @property
    def _input_layers(self) -> list[Layer]:
        return self._endpoint_layers.items[0]

    @property
    def _output_layers(self) -> list[Layer]:
        return self._endpoint_layers.items[1]

    @property
    def layers(self) -> list[Layer]:
        """The layers of the graph, input layers included, in tf_keras' order."""
        return list(self._graph_layers.items)

    @property
    def _self_tracked_trackables(self) -> list[Layer]:
        return list(self._graph_layers.items)

    @property
    def input_spec(self) -> Any:
        """Each input's shape (batch free), from the model's `Input`s."""
        specs = [InputSpec(shape=(None,) + tuple(layer._batch_input_shape[1:]),
                           allow_last_axis_squeeze=True, name=layer.name)
                 for layer in self._input_layers]
        if isinstance(self._nested_inputs, dict):
            return dict(zip(self._nested_inputs, specs))
        return specs if len(specs) > 1 else specs[0]

    @input_spec.setter
    def input_spec(self, value: Any) -> None:
        if value is not None:
            raise AttributeError("the input_spec of a functional model comes from its inputs")

    @property
    def input(self) -> Any:
        return self._nested_inputs

    @property
    def output(self) -> Any:
        return self._nested_outputs

    @property
    def input_shape(self) -> Any:
        return nest.map_structure(lambda x: tuple(x.shape), self._nested_inputs)

    @property
    def output_shape(self) -> Any:
        return nest.map_structure(lambda x: tuple(x.shape), self._nested_outputs)

    def _flatten_inputs(self, inputs: Any) -> list[Any]:
        """The call's inputs in the order of `self.inputs` (a dict by input name)."""
        if isinstance(inputs, dict) and not isinstance(self._nested_inputs, dict):
            missing = [n for n in self.input_names if n not in inputs]
            if missing:
                raise ValueError(f'Missing data for input "{missing[0]}". You passed a data '
                                 f"dictionary with keys {list(inputs)}. Expected the following "
                                 f"keys: {self.input_names}")
            return [inputs[n] for n in self.input_names]
        if isinstance(inputs, dict) and isinstance(self._nested_inputs, dict):
            return [inputs[k] for k in self._nested_inputs]
        flat = nest.flatten(inputs, expand_composites=False)[0]
        if len(flat) != len(self.inputs):
            raise ValueError(f'Layer "{self.name}" expects {len(self.inputs)} input(s), but '
                             f"it received {len(flat)} input tensors.")
        return flat

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if args and isinstance(args[0], dict) and isinstance(self._nested_inputs, dict):
            missing = [k for k in self._nested_inputs if k not in args[0]]
            if missing:
                raise ValueError(f'Missing data for input "{missing[0]}". You passed a data '
                                 f"dictionary with keys {list(args[0])}. Expected the "
                                 f"following keys: {list(self._nested_inputs)}")
            args = ({k: args[0][k] for k in self._nested_inputs},) + args[1:]
        elif args and isinstance(args[0], dict):
            # a dict keyed by input name: in input order before the input checks
            args = (self._flatten_inputs(args[0]),) + args[1:]
            if len(self.inputs) == 1:
                args = (args[0][0],) + args[1:]
        return super().__call__(*args, **kwargs)

    def call(self, inputs: Any, training: bool | None = None, mask: Any = None) -> Any:
        """Run the graph: each node's layer on the values of its input tensors."""
        if mask is not None:
            raise NotImplementedError(f"model '{self.name}': masks are not supported by "
                                      f"tw.keras")
        values: dict[int, Any] = {}
        for x, value in zip(self.inputs, self._flatten_inputs(inputs)):
            values[id(x)] = self._conform(value, x)
        for depth in self._depth_keys:
            for node in self._nodes_by_depth[depth]:
                if node.is_input or any(id(x) not in values for x in node.keras_inputs):
                    continue
                args, kwargs = node.map_arguments(values)
                out = node.layer(*args, **kwargs)
                for kt, value in zip(node.flat_outputs, nest.flatten(out)[0]):
                    values[id(kt)] = value
        flat = [values[id(x)] for x in self.outputs]
        return nest.unflatten(nest.flatten(self._nested_outputs, expand_composites=False)[1],
                              flat)

    @staticmethod
    def _conform(value: Any, ref: KerasTensor) -> Any:
        """An input as its `Input` describes it (tf_keras' ``_conform_to_reference_input``):
        one dim short of an `Input` whose last dim is 1 gets that dim; the `Input`'s dtype."""
        value = tw.convert_to_tensor(value)
        if len(value.shape) == len(ref.shape) - 1 and ref.shape[-1] == 1:
            value = tw.expand_dims(value, -1)
        if value.dtype is not ref.dtype:
            value = tw.cast(value, ref.dtype)
        return value

    # -- configuration ------------------------------------------------------------------------
    def _node_index_in_network(self, node: Node) -> int:
        """The index of `node` among its layer's nodes that belong to this model."""
        mine = [n for n in node.layer._inbound_nodes if id(n) in self._network_nodes]
        return next(i for i, n in enumerate(mine) if n is node)

    def get_config(self) -> dict[str, Any]:
        """The graph as JSON-able data: each layer's class and config, and for each of
        its calls in this model the arguments, tensors named by ``[layer, node, index]``."""
        from .saving import serialize_layer

        def ref(x: Any) -> Any:
            if isinstance(x, KerasTensor):
                layer, node_index, tensor_index = x._keras_history
                node = layer._inbound_nodes[node_index]
                return {"__keras_tensor__": [layer.name, self._node_index_in_network(node),
                                             tensor_index]}
            return x

        def tensor_ref(x: KerasTensor) -> list[Any]:
            return ref(x)["__keras_tensor__"]

        layers = []
        for layer in self._graph_layers.items:
            nodes = [n for n in layer._inbound_nodes if id(n) in self._network_nodes]
            inbound = []
            for node in nodes:
                if node.is_input:
                    continue
                args = nest.map_structure(ref, list(node.call_args), expand_composites=False)
                kwargs = nest.map_structure(ref, node.call_kwargs, expand_composites=False)
                inbound.append({"args": args, "kwargs": kwargs})
            entry = serialize_layer(layer)
            entry["name"] = layer.name
            entry["inbound_nodes"] = inbound
            layers.append(entry)
        return {"name": self.name, "trainable": self.trainable, "layers": layers,
                "input_layers": nest.map_structure(tensor_ref, self._nested_inputs,
                                                   expand_composites=False),
                "output_layers": nest.map_structure(tensor_ref, self._nested_outputs,
                                                    expand_composites=False)}

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None
                    ) -> Functional:
        """The model `get_config` described (new layers, new weights)."""
        from .saving import deserialize_layer
        created: dict[str, Layer] = {}
        outputs_of: dict[str, list[Any]] = defaultdict(list)   # layer -> per node outputs
        pending: list[tuple[str, dict[str, Any]]] = []
        for entry in config["layers"]:
            layer = deserialize_layer(entry, custom_objects)
            created[entry["name"]] = layer
            if isinstance(layer, InputLayer):
                outputs_of[entry["name"]].append(layer._inbound_nodes[0].outputs)
            pending.extend((entry["name"], node) for node in entry["inbound_nodes"])

        def tensor(name: str, node_index: int, tensor_index: int) -> KerasTensor:
            return nest.flatten(outputs_of[name][node_index])[0][tensor_index]

        def resolved(value: Any) -> Any:
            if isinstance(value, dict) and set(value) == {"__keras_tensor__"}:
                name, node_index, tensor_index = value["__keras_tensor__"]
                if name not in outputs_of or len(outputs_of[name]) <= node_index:
                    raise LookupError(name)
                return tensor(name, node_index, tensor_index)
            if isinstance(value, dict):
                return {k: resolved(v) for k, v in value.items()}
            if isinstance(value, list):
                return [resolved(v) for v in value]
            return value

        while pending:
            progressed = False
            for item in list(pending):
                name, node = item
                try:
                    args = resolved(node["args"])
                    kwargs = resolved(node["kwargs"])
                except LookupError:
                    continue
                outputs_of[name].append(created[name](*args, **kwargs))
                pending.remove(item)
                progressed = True
            if not progressed:
                raise ValueError(f"cannot rebuild the model's graph: the inputs of "
                                 f"{sorted({n for n, _ in pending})} are never computed")

        def endpoint(ref: Any) -> Any:
            if isinstance(ref, list) and len(ref) == 3 and isinstance(ref[0], str):
                return tensor(*ref)
            if isinstance(ref, dict):
                return {k: endpoint(v) for k, v in ref.items()}
            return [endpoint(r) for r in ref]

        inputs = endpoint(config["input_layers"])
        outputs = endpoint(config["output_layers"])
        return cls(inputs, outputs, name=config.get("name"),
                   trainable=config.get("trainable", True))
