"""Symbolic tensors of the functional API (``x = tw.keras.Input((784,))``) and the graph
of layer calls they record.

A `KerasTensor` is a shape and a dtype; calling a layer on one records a `Node` (the
layer, the call's arguments, the `KerasTensor`s it returned) instead of computing. The
output shapes come from tracing the layer's call on placeholders of the inputs' types
into a throwaway graph (`symbolic_call`), so every layer, built-in or not, gets the
shapes its own code gives, without a second rule to keep in step with it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from ...compiler.ir import Graph
from ...compiler.types import TensorType
from ...frontend import nest
from ...frontend.context import GraphBuilder, building
from ...frontend.tensor import Tensor
from ...frontend.tensor_shape import TensorShape

__all__ = ["KerasTensor", "KerasHistory", "Node", "symbolic_call", "has_keras_tensors"]


class KerasHistory(NamedTuple):
    """Where a `KerasTensor` came from: the layer, its call (index in the layer's
    inbound nodes) and the position among that call's outputs."""

    layer: Any
    node_index: int
    tensor_index: int


class KerasTensor:
    """A symbolic tensor of the functional API: a static shape and a dtype, and the
    layer call that made it. It has no value; build a `tw.keras.Model` from such
    tensors and call the model on data."""

    def __init__(self, shape: Any, dtype: Any, name: str | None = None) -> None:
        from ...compiler.dtypes import as_dtype
        self._shape = TensorShape(tuple(shape))
        self.dtype = as_dtype(dtype)
        self.name = name
        self._keras_history: KerasHistory | None = None

    @property
    def shape(self) -> TensorShape:
        """The static shape (None for dims known only at run time, e.g. the batch)."""
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def node(self) -> Node:
        """The layer call that produced this tensor."""
        layer, node_index, _ = self._keras_history
        return layer._inbound_nodes[node_index]

    def get_shape(self) -> TensorShape:
        return self._shape

    def __repr__(self) -> str:
        made = ""
        if self._keras_history is not None:
            made = f" (created by layer '{self._keras_history.layer.name}')"
        return (f"<KerasTensor: shape={tuple(self._shape)} dtype={self.dtype.name}"
                f"{made}>")

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __bool__(self) -> bool:
        raise TypeError("A KerasTensor has no value: it cannot be used as a Python bool. "
                        "Build a tw.keras.Model from it and call the model on data.")

    def _no_ops(self, op: str) -> Any:
        raise TypeError(f"tw.keras: the {op} operator is not supported on a KerasTensor "
                        f"({self!r}); use a layer (tw.keras.layers.Add, Multiply, ...) or "
                        f"wrap the computation in tw.keras.layers.Lambda")

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"A KerasTensor ({self!r}) has no value: it cannot be converted to "
                        f"a NumPy array. Build a tw.keras.Model from it and call the model "
                        f"on data.")


def _operator(op: str) -> Callable[..., Any]:
    def method(self: KerasTensor, *args: Any) -> Any:
        return self._no_ops(op)
    return method


for _name, _symbol in (("add", "+"), ("radd", "+"), ("sub", "-"), ("rsub", "-"),
                       ("mul", "*"), ("rmul", "*"), ("truediv", "/"), ("rtruediv", "/"),
                       ("matmul", "@"), ("rmatmul", "@"), ("pow", "**"), ("neg", "unary -"),
                       ("getitem", "[]")):
    setattr(KerasTensor, f"__{_name}__", _operator(_symbol))


class Node:
    """One call of a layer in a functional graph: its arguments (with `KerasTensor`s
    where tensors go) and the `KerasTensor`s it returned."""

    def __init__(self, layer: Any, call_args: tuple = (), call_kwargs: dict | None = None,
                 outputs: Any = None) -> None:
        self.layer = layer
        self.call_args = tuple(call_args)
        self.call_kwargs = dict(call_kwargs or {})
        self.is_input = not self.call_args and not self.call_kwargs
        leaves, self._args_tree = nest.flatten((self.call_args, self.call_kwargs))
        self._arg_leaves = leaves
        self.keras_inputs = [x for x in leaves if isinstance(x, KerasTensor)]
        self.outputs = outputs
        self.index = len(layer._inbound_nodes)
        layer._inbound_nodes.append(self)
        for i, kt in enumerate(nest.flatten(outputs)[0]):
            kt._keras_history = KerasHistory(layer, self.index, i)

    @property
    def parent_nodes(self) -> list[Node]:
        """The calls whose outputs this call takes."""
        return [kt.node for kt in self.keras_inputs]

    @property
    def flat_outputs(self) -> list[KerasTensor]:
        return nest.flatten(self.outputs)[0]

    def map_arguments(self, values: dict[int, Any]) -> tuple[tuple, dict]:
        """The call's arguments with each `KerasTensor` replaced by ``values[id(kt)]``."""
        leaves = [values[id(x)] if isinstance(x, KerasTensor) else x
                  for x in self._arg_leaves]
        return nest.unflatten(self._args_tree, leaves)

    def __repr__(self) -> str:
        return f"<Node of layer '{self.layer.name}' #{self.index}>"


def has_keras_tensors(structure: Any) -> bool:
    """Whether a nest of arguments holds a `KerasTensor`."""
    return any(isinstance(x, KerasTensor) for x in nest.flatten(structure)[0])


def symbolic_call(layer: Any, args: tuple, kwargs: dict) -> Any:
    """Call `layer` on arguments holding `KerasTensor`s: trace the call on placeholders
    of their types into a throwaway graph (building the layer on the way), record the
    call as a `Node` and return its outputs as `KerasTensor`s."""
    leaves, tree = nest.flatten((tuple(args), dict(kwargs)))
    graph = Graph(f"{layer.name}_shapes")
    builder = GraphBuilder(graph)
    with building(builder):
        traced = [Tensor(graph.add_arg(TensorType(x.dtype, tuple(x.shape)), x.name or None),
                          builder) if isinstance(x, KerasTensor) else x for x in leaves]
        t_args, t_kwargs = nest.unflatten(tree, traced)
        out = layer(*t_args, **t_kwargs)
        layer._clear_call_losses()  # losses of a trace that never runs
    out_leaves, out_tree = nest.flatten(out)
    kts = []
    for t in out_leaves:
        if not hasattr(t, "shape") or not hasattr(t, "dtype"):
            raise TypeError(f"layer '{layer.name}' returned {t!r} from call(); a layer used "
                            f"in the functional API must return tensors")
        kts.append(KerasTensor(tuple(t.shape), t.dtype))
    outputs = nest.unflatten(out_tree, kts)
    Node(layer, tuple(args), dict(kwargs), outputs)
    return outputs
