"""`Layer`: the base of every Keras layer and model (tf_keras 2.x semantics) on
`tw.Module` and `tw.Variable`.

A layer is configured by its constructor, makes its weights in `build` on its first
call (from the shapes of what it is called on) and computes in `call`. Calling it on
eager tensors or NumPy arrays computes at once, inside ``tw.compile`` it adds ops to
the trace, and on `KerasTensor`s (``tw.keras.Input``) it records a call of the
functional API (`keras_tensor.symbolic_call`). Weights are made outside any trace
(`backend.eval_scope`, TensorFlow's ``init_scope``), so a layer first called while a
compiled step is traced makes them once, as live variables.

The weights a layer made are kept, by name, in the attribute ``_layer_weights`` (a
dict reassigned at each new weight), so the `tw.Module` walk that `tw.train.Checkpoint`
uses finds them under a stable path, and a checkpoint restored before the layer is built
lands when it builds."""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import tensorweave as tw

from ...compiler.dtypes import as_dtype
from ...frontend import nest
from ...frontend.module import Module, _ModuleScope
from ...frontend.tensor import EagerTensor, Tensor
from ...frontend.tensor_shape import TensorShape
from ...frontend.variables import Variable
from .. import backend, initializers, regularizers
from .input_spec import InputSpec, assert_input_compatibility
from .keras_tensor import KerasTensor, has_keras_tensors, symbolic_call

__all__ = ["Layer", "InputSpec"]

# keyword arguments every layer takes (tf_keras' `allowed_kwargs`)
_LAYER_KWARGS = frozenset({"input_dim", "input_shape", "batch_input_shape", "batch_size",
                           "weights", "activity_regularizer", "autocast", "input_length"})


class _Tracked:
    """A list the `tw.Module` walk does not enter: layers a layer tracks for Keras'
    weight order, kept apart from the attributes that name them for checkpoints."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[Any] = []

    def add(self, item: Any) -> None:
        if not any(x is item for x in self.items):
            self.items.append(item)


@functools.cache
def _call_signature(cls: type) -> tuple[bool, bool, bool]:
    """Whether ``cls.call`` takes `training`, `mask`, and any keyword (``**kwargs``)."""
    params = inspect.signature(cls.call).parameters
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return "training" in params, "mask" in params, var_kw


def dedup_weights(weights: Sequence[Variable]) -> list[Variable]:
    """`weights` without repeats (by identity: a variable shared by two layers once), in
    first-seen order."""
    seen: set[int] = set()
    out = []
    for w in weights:
        if id(w) not in seen:
            seen.add(id(w))
            out.append(w)
    return out


def _is_nested_numbers(x: Any) -> bool:
    """Whether `x` is a (nested) list or tuple of Python numbers only."""
    if isinstance(x, (list, tuple)):
        return len(x) > 0 and all(_is_nested_numbers(v) for v in x)
    return isinstance(x, (bool, int, float)) and not isinstance(x, np.ndarray)


def _is_tensor(x: Any) -> bool:
    return isinstance(x, (Tensor, EagerTensor, Variable))


class KerasVariable(Variable):
    """A layer's weight: a `tw.Variable` whose `name` is Keras' (``dense/kernel:0``,
    the same for a second model's first Dense after ``clear_session``, as in tf_keras);
    its runtime name, `shared_name`, stays unique in the process."""

    _keras_name = ""

    @property
    def name(self) -> str:
        return f"{self._keras_name}:0"


class Layer(Module):
    """The base class of layers (``tf.keras.layers.Layer``).

    Subclass it and override `build(input_shape)` (make weights with `add_weight`) and
    `call(inputs, training=None)`; ``layer(x)`` builds on the first call, checks `x`
    against `input_spec` (an error names the layer, what it expected and what came),
    then calls. `trainable_weights`, `non_trainable_weights`, `weights`, `get_weights`
    and `set_weights` are Keras'; `losses` holds the weight regularization penalties
    and what `add_loss` added during the last call."""

    def __init__(self, trainable: bool = True, name: str | None = None, dtype: Any = None,
                 dynamic: bool = False, **kwargs: Any) -> None:
        unknown = sorted(set(kwargs) - _LAYER_KWARGS)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) "
                            f"{', '.join(unknown)}")
        if name is None:
            name = backend.unique_object_name(self._default_name())
        elif not isinstance(name, str) or not name:
            raise ValueError(f"{type(self).__name__}: name must be a non-empty string, got "
                             f"{name!r}")
        # tw.Module's name, without its identifier rule (Keras names may hold any text)
        object.__setattr__(self, "_module_name", name)
        object.__setattr__(self, "_module_scope", _ModuleScope(name))
        d = self.__dict__
        d["_keras_layers"] = _Tracked()       # sublayers, in the order they were set
        d["_own_weights"] = _Tracked()        # weights made here, in order
        d["_trainable"] = bool(trainable)
        d["_layer_weights"] = {}
        self._dtype_name = (as_dtype(dtype).name if dtype is not None and
                            not isinstance(dtype, dict) else backend.floatx())
        self.built = False
        self.dynamic = dynamic
        self.supports_masking = False
        self.input_spec: Any = None
        self._autocast = kwargs.get("autocast", True)
        self._inbound_nodes: list[Any] = []
        self._weight_losses: list[Callable[[], Any]] = []
        self._call_losses: list[Any] = []
        self._activity_regularizer = regularizers.get(kwargs.get("activity_regularizer"))
        self._initial_weights = kwargs.get("weights")
        self._build_input_shape: Any = None
        self._last_output_shape: Any = None
        batch_input_shape = kwargs.get("batch_input_shape")
        if batch_input_shape is None and ("input_shape" in kwargs or "input_dim" in kwargs):
            shape = kwargs.get("input_shape")
            if shape is None:
                shape = (kwargs["input_dim"],)
                if kwargs.get("input_length") is not None:
                    shape = (kwargs["input_length"],) + shape
            batch_input_shape = (kwargs.get("batch_size"),) + tuple(shape)
        self._batch_input_shape = (tuple(batch_input_shape) if batch_input_shape is not None
                                   else None)

    @classmethod
    def _default_name(cls) -> str:
        return backend.to_snake_case(cls.__name__)

    # -- attribute tracking ---------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("__") and "_keras_layers" in self.__dict__:
            for leaf in nest.flatten(value, expand_composites=False)[0]:
                if isinstance(leaf, Layer) and leaf is not self:
                    self._keras_layers.add(leaf)
                elif isinstance(leaf, Variable) and name != "_layer_weights":
                    self._own_weights.add(leaf)   # a tw.Variable set as an attribute
        super().__setattr__(name, value)

    def _sublayers(self) -> list[Layer]:
        """The layers this one tracks, in the order they were set. Layers (and
        variables) put into a list or dict attribute after it was set
        (``self.blocks.append(Dense(8))``) are found here too, as Keras' tracked lists
        find them."""
        for key, value in vars(self).items():
            if key in ("_layer_weights", "_inbound_nodes") or not isinstance(
                    value, (list, tuple, dict)):
                continue
            for leaf in nest.flatten(value, expand_composites=False)[0]:
                if isinstance(leaf, Layer) and leaf is not self:
                    self._keras_layers.add(leaf)
                elif isinstance(leaf, Variable):
                    self._own_weights.add(leaf)
        return self._keras_layers.items

    def _weights_made_here(self) -> list[Variable]:
        self._sublayers()
        return self._own_weights.items

    # -- properties ---------------------------------------------------------------------------
    @property
    def dtype(self) -> str:
        """The dtype of the layer's weights and computations (``'float32'``)."""
        return self._dtype_name

    @property
    def compute_dtype(self) -> str:
        return self._dtype_name

    @property
    def variable_dtype(self) -> str:
        return self._dtype_name

    @property
    def trainable(self) -> bool:
        """Whether training updates this layer's weights (and its sublayers')."""
        return self.__dict__["_trainable"]

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self.__dict__["_trainable"] = bool(value)
        for layer in self._sublayers():
            layer.trainable = value

    @property
    def activity_regularizer(self) -> Any:
        return self._activity_regularizer

    @activity_regularizer.setter
    def activity_regularizer(self, value: Any) -> None:
        self._activity_regularizer = regularizers.get(value)

    def _flatten_layers(self, include_self: bool = True, recursive: bool = True) -> list[Layer]:
        """This layer and the layers it tracks (depth first, each once)."""
        out: list[Layer] = []
        seen: set[int] = set()

        def visit(layer: Layer, top: bool) -> None:
            if id(layer) in seen:
                return
            seen.add(id(layer))
            if include_self or not top:
                out.append(layer)
            if top or recursive:
                for sub in layer._sublayers():
                    visit(sub, False)

        visit(self, True)
        return out

    @property
    def _self_tracked_trackables(self) -> list[Layer]:
        return list(self._sublayers())

    @property
    def trainable_weights(self) -> list[Variable]:
        """The weights training updates: this layer's trainable ones, then its
        sublayers' (none when `trainable` is False)."""
        if not self.trainable:
            return []
        own = [w for w in self._weights_made_here() if w.trainable]
        children = [w for layer in self._sublayers() for w in layer.trainable_weights]
        return dedup_weights(own + children)

    @property
    def non_trainable_weights(self) -> list[Variable]:
        """The other weights (moving statistics; every weight when `trainable` is
        False)."""
        if self.trainable:
            own = [w for w in self._weights_made_here() if not w.trainable]
            children = [w for layer in self._sublayers() for w in layer.non_trainable_weights]
            return dedup_weights(own + children)
        made = self._weights_made_here()
        own = [w for w in made if w.trainable] + [w for w in made if not w.trainable]
        children = [w for layer in self._sublayers() for w in layer.weights]
        return dedup_weights(own + children)

    @property
    def weights(self) -> list[Variable]:
        """`trainable_weights` then `non_trainable_weights`."""
        return self.trainable_weights + self.non_trainable_weights

    @property
    def variables(self) -> list[Variable]:  # type: ignore[override]
        """The same as `weights` (Keras' meaning, not tw.Module's walk)."""
        return self.weights

    @property
    def trainable_variables(self) -> list[Variable]:  # type: ignore[override]
        return self.trainable_weights

    @property
    def non_trainable_variables(self) -> list[Variable]:  # type: ignore[override]
        return self.non_trainable_weights

    # -- weights ------------------------------------------------------------------------------
    def add_weight(self, name: str | None = None, shape: Sequence[int] | None = None,
                   dtype: Any = None, initializer: Any = None, regularizer: Any = None,
                   trainable: bool | None = None, constraint: Any = None,
                   **kwargs: Any) -> Variable:
        """Make a weight of this layer: a `tw.Variable` named ``<layer>/<name>`` with
        `initializer`'s values (default glorot_uniform for floats, zeros otherwise),
        counted in the layer's weights; `regularizer`'s penalty joins `losses`."""
        if constraint is not None:
            raise NotImplementedError(f"layer '{self.name}': weight constraints are not "
                                      f"supported by tw.keras")
        shape = tuple(int(d) for d in (shape or ()))
        dtype = as_dtype(dtype or self._dtype_name)
        if initializer is None:
            initializer = "glorot_uniform" if dtype.is_floating else "zeros"
        init = initializers.get(initializer)
        if trainable is None:
            trainable = True
        # (kwargs: Keras' distribution settings, synchronization and aggregation: one
        # device here, nothing to do)
        name = name or "Variable"
        with backend.eval_scope():
            value = np.asarray(init(shape, dtype=dtype))
            if value.shape != shape or value.dtype != dtype.np:
                value = np.asarray(value, dtype=dtype.np).reshape(shape)
            var = KerasVariable(value, trainable=bool(trainable), name=f"{self.name}/{name}")
            var._keras_name = f"{self.name}/{name}"
        self._own_weights.add(var)
        key, n = name, 1
        while key in self._layer_weights:
            key, n = f"{name}_{n}", n + 1
        # a new dict (not an update in place): the assignment is what lets a checkpoint
        # restored before the build assign the weight now (tw.Module's restore_on_attach)
        self._layer_weights = {**self._layer_weights, key: var}
        reg = regularizers.get(regularizer)
        if reg is not None:
            self._weight_losses.append(lambda reg=reg, var=var: reg(var))
        return var

    def get_weights(self) -> list[np.ndarray]:
        """The values of `weights`, as NumPy arrays."""
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights: Sequence[Any]) -> None:
        """Assign NumPy arrays to `weights`, in their order; their number and shapes
        must match."""
        params = self.weights
        weights = list(weights)
        if len(params) != len(weights):
            raise ValueError(f'You called `set_weights(weights)` on layer "{self.name}" with '
                             f"a weight list of length {len(weights)}, but the layer was "
                             f"expecting {len(params)} weights.")
        for p, w in zip(params, weights):
            w = np.asarray(w)
            if tuple(p.shape) != w.shape:
                raise ValueError(f'Layer "{self.name}" weight shape {tuple(p.shape)} is not '
                                 f"compatible with provided weight shape {w.shape}.")
        for p, w in zip(params, weights):
            p.assign(np.asarray(w, dtype=p.dtype.np), read_value=False)

    def count_params(self) -> int:
        """The number of scalars in `weights`."""
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on layer {self.name}, but "
                             f"the layer isn't built. You can build it manually via: "
                             f"`{self.name}.build(batch_input_shape)`.")
        return int(sum(math.prod(int(d) for d in w.shape) for w in self.weights))

    # -- losses -------------------------------------------------------------------------------
    def add_loss(self, losses: Any, **kwargs: Any) -> None:
        """Add a loss to `losses`: a tensor computed in `call` (kept until the next
        call), or a callable of no arguments (evaluated whenever `losses` is read, e.g.
        a penalty on a weight)."""
        for loss in nest.flatten(losses)[0]:
            if loss is None:
                continue
            if isinstance(loss, KerasTensor):
                raise NotImplementedError(f"layer '{self.name}': add_loss of a KerasTensor "
                                          f"(a symbolic loss of the functional API) is not "
                                          f"supported; add it in a layer's call()")
            if callable(loss):
                self._weight_losses.append(loss)
            else:
                self._call_losses.append(tw.convert_to_tensor(loss))

    @property
    def losses(self) -> list[Any]:
        """The losses of the last call (`add_loss`, activity regularizers) and the weight
        penalties (evaluated now), this layer's then its sublayers'."""
        out: list[Any] = []
        for layer in self._flatten_layers():
            out.extend(layer._call_losses)
            for fn in layer._weight_losses:
                loss = fn()
                if loss is not None:
                    out.append(tw.convert_to_tensor(loss))
        return out

    def _clear_call_losses(self) -> None:
        for layer in self._flatten_layers():
            layer._call_losses = []

    # -- building -----------------------------------------------------------------------------
    def build(self, input_shape: Any) -> None:
        """Make the layer's weights for inputs of `input_shape` (override it)."""
        self._build_input_shape = input_shape
        self.built = True

    def _maybe_build(self, inputs: Any) -> None:
        if self.built:
            return
        shapes = nest.map_structure(lambda x: TensorShape(tuple(x.shape)), inputs)
        if not getattr(type(self).build, "_is_default", False):   # (Model.build traces)
            with backend.eval_scope():
                self.build(shapes)
        self.built = True
        if self._build_input_shape is None:
            self._build_input_shape = shapes
        if self._initial_weights is not None:
            weights, self._initial_weights = self._initial_weights, None
            self.set_weights(weights)

    # -- calling ------------------------------------------------------------------------------
    def call(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """The layer's computation (override it); the base returns `inputs`."""
        return inputs

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not args and "inputs" not in kwargs:
            raise TypeError(f"layer '{self.name}' must be called with its inputs")
        if has_keras_tensors((args, kwargs)):
            return symbolic_call(self, args, kwargs)
        if args:
            inputs, args = args[0], args[1:]
        else:
            inputs = kwargs.pop("inputs")
        inputs = self._convert_inputs(inputs)
        takes_training, takes_mask, var_kw = _call_signature(type(self))
        training = kwargs.pop("training", None)
        if training is None:
            training = backend.current_training()
        if training is not None and not isinstance(training, bool):
            training = bool(training)
        if "mask" in kwargs and not (takes_mask or var_kw):
            if kwargs["mask"] is not None:
                raise NotImplementedError(f"layer '{self.name}': masks are not supported by "
                                          f"tw.keras")
            kwargs.pop("mask")
        if training is not None and (takes_training or var_kw):
            kwargs["training"] = training
        top = not backend.in_call()
        if top:
            self._clear_call_losses()
        assert_input_compatibility(self.input_spec, inputs, self.name)
        if not self.built:
            self._maybe_build(inputs)
            assert_input_compatibility(self.input_spec, inputs, self.name)
        with backend.call_context(training), tw.name_scope(self._scope_name()):
            outputs = self.call(inputs, *args, **kwargs)
            if self._activity_regularizer is not None:
                self._add_activity_losses(outputs)
        self._last_output_shape = nest.map_structure(
            lambda t: tuple(t.shape) if hasattr(t, "shape") else None, outputs)
        return outputs

    def _scope_name(self) -> str:
        # a name scope takes names without '/' or spaces
        return "".join(c if c.isalnum() or c in "_.-" else "_" for c in self.name)

    def _convert_inputs(self, inputs: Any) -> Any:
        """NumPy arrays and Python numbers as tensors; floating inputs in the layer's
        dtype (Keras' autocast)."""
        want = as_dtype(self._dtype_name)

        def convert(x: Any) -> Any:
            if x is None or isinstance(x, (str, bytes)):
                return x
            if not _is_tensor(x):
                if isinstance(x, (bool, int, float, list, tuple, np.ndarray, np.generic)):
                    arr = np.asarray(x)
                    if arr.dtype.kind == "f" and self._autocast:
                        arr = arr.astype(want.np)
                    x = tw.convert_to_tensor(arr)
                else:
                    return x
            if self._autocast and x.dtype.is_floating and x.dtype is not want:
                x = tw.cast(x, want)
            return x

        if _is_nested_numbers(inputs):   # [[1., 2.]]: one tensor, as Keras reads it
            return convert(np.asarray(inputs))
        return nest.map_structure(convert, inputs, expand_composites=False)

    def _add_activity_losses(self, outputs: Any) -> None:
        for out in nest.flatten(outputs)[0]:
            loss = self._activity_regularizer(out)
            batch = tw.cast(tw.shape(out)[0], loss.dtype)
            self._call_losses.append(loss / batch)

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The output shape for inputs of `input_shape` (from a trace of `call`)."""
        def spec(shape: Any) -> KerasTensor:
            return KerasTensor(tuple(shape), self._dtype_name)
        is_shape = (isinstance(input_shape, (tuple, list)) and
                    all(d is None or isinstance(d, (int, np.integer)) for d in input_shape))
        inputs = spec(input_shape) if is_shape else nest.map_structure(
            spec, input_shape, expand_composites=False)
        outputs = symbolic_call(self, (inputs,), {})
        self._inbound_nodes.pop()   # a probe, not a call of the model
        return nest.map_structure(lambda kt: TensorShape(tuple(kt.shape)), outputs)

    # -- the functional API ------------------------------------------------------------
    def _node_tensors(self, what: str, index: int = 0) -> Any:
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self.name} is not connected, no {what} to return.")
        node = self._inbound_nodes[index]
        if what == "input":
            args = node.call_args[0] if node.call_args else next(iter(node.call_kwargs.values()))
            return node.outputs if node.is_input else args
        return node.outputs

    @property
    def input(self) -> Any:
        """The input `KerasTensor`(s) of the layer's first functional call."""
        return self._node_tensors("input")

    @property
    def output(self) -> Any:
        """The output `KerasTensor`(s) of the layer's first functional call."""
        return self._node_tensors("output")

    @property
    def input_shape(self) -> Any:
        """The shape(s) of `input`."""
        return nest.map_structure(lambda t: tuple(t.shape), self.input)

    @property
    def output_shape(self) -> Any:
        """The shape(s) of `output` (or of the last call's output)."""
        if self._inbound_nodes:
            return nest.map_structure(lambda t: tuple(t.shape), self.output)
        if self._last_output_shape is not None:
            return self._last_output_shape
        raise AttributeError(f"The layer {self.name} has never been called and thus has no "
                             f"defined output shape.")

    # -- configuration ------------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        """The constructor arguments that rebuild this layer (Keras' ``get_config``)."""
        config: dict[str, Any] = {"name": self.name, "trainable": self.trainable,
                                  "dtype": self._dtype_name}
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = list(self._batch_input_shape)
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Layer:
        """The layer `get_config` described."""
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__name__} name={self.name!r}>"
