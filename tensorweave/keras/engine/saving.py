"""Saving Keras models in tensorweave's formats.

`save_weights` / `load_weights`: a `tw.train.Checkpoint` of the model (and of its
optimizer's state, once it has some) at a file prefix: safetensors, no pickle. Values
are keyed by object path (a layer's weights under its place in the model), so they load
into a model built by the same code; a layer not built yet takes its values when it
builds. HDF5 (``.h5``) and ``.keras`` files are not written: there is no h5py here.

`save_model` / `load_model`: a directory with ``model.json`` (the model's config and its
compile arguments, for models with one: `Sequential`, functional models, layers with
`get_config`) and the weights checkpoint ``weights``."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from ...frontend.checkpoint import Checkpoint
from ...runtime import checkpoint_io
from .base_layer import Layer

__all__ = ["save_weights", "load_weights", "save_model", "load_model", "serialize_layer",
           "deserialize_layer", "model_to_json", "model_from_json", "layer_classes"]

_MODEL_FILE = "model.json"
_WEIGHTS = "weights"
_FORMAT = "tensorweave-keras-1"


def _check_format(filepath: str, save_format: str | None, what: str) -> None:
    lowered = os.fspath(filepath).lower()
    if save_format in ("h5", "keras") or lowered.endswith((".h5", ".hdf5", ".keras")):
        raise ValueError(f"{what}: tw.keras writes tensorweave checkpoints (safetensors), "
                         f"not HDF5 or .keras files; give a path without the "
                         f"'{os.path.splitext(lowered)[1] or save_format}' format "
                         f"(got {filepath!r}, save_format={save_format!r})")
    if save_format not in (None, "tf", "tw"):
        raise ValueError(f"{what}: unknown save_format {save_format!r}")


def _checkpoint(model: Any, with_optimizer: bool) -> Checkpoint:
    """The model's weights (and its optimizer, when asked and it has one)."""
    objects: dict[str, Any] = {"model": model}
    opt = getattr(model, "optimizer", None)
    if with_optimizer and opt is not None:
        objects["optimizer"] = opt
    return Checkpoint(**objects)


def _has_state(model: Any) -> bool:
    opt = getattr(model, "optimizer", None)
    return opt is not None and bool(opt.variables())


def save_weights(model: Any, filepath: str, overwrite: bool = True,
                 save_format: str | None = None, options: Any = None) -> None:
    """Write `model`'s weights (and its optimizer's state) to checkpoint `filepath`."""
    filepath = os.fspath(filepath)
    _check_format(filepath, save_format, "save_weights")
    if options is not None:
        raise NotImplementedError("save_weights: options are not supported")
    if not overwrite and os.path.exists(checkpoint_io.data_path(filepath)):
        raise FileExistsError(f"save_weights: {filepath} exists and overwrite=False")
    if not model.weights and not model.built:
        raise ValueError(f"Unable to save the weights of model '{model.name}': it has not "
                         f"been built. Call it on data or build() it first.")
    directory = os.path.dirname(filepath)
    if directory:
        os.makedirs(directory, exist_ok=True)
    _checkpoint(model, with_optimizer=_has_state(model)).write(filepath)


def load_weights(model: Any, filepath: str, by_name: bool = False,
                 skip_mismatch: bool = False, options: Any = None) -> Any:
    """Restore what `save_weights` wrote into `model` (a model of the same structure);
    the optimizer's state too when the checkpoint has it and the model has an
    optimizer. Returns the checkpoint's load status."""
    filepath = os.fspath(filepath)
    _check_format(filepath, None, "load_weights")
    if by_name or skip_mismatch:
        raise NotImplementedError("load_weights: by_name and skip_mismatch apply to HDF5 "
                                  "files, which tw.keras does not read")
    if options is not None:
        raise NotImplementedError("load_weights: options are not supported")
    if not os.path.exists(checkpoint_io.data_path(filepath)) and not os.path.exists(filepath):
        raise FileNotFoundError(f"load_weights: no checkpoint at {filepath}")
    stored = checkpoint_io.read_tensors(filepath)
    has_optimizer = any(k.startswith("optimizer/") for k in stored)
    return _checkpoint(model, with_optimizer=has_optimizer).restore(filepath)


# -- configs ---------------------------------------------------------------------------
def layer_classes() -> dict[str, type]:
    """The built-in layer and model classes by name (what a config's class_name
    names)."""
    from ... import keras
    from .functional import Functional
    from .input_layer import InputLayer
    from .sequential import Sequential
    from .training import Model
    out: dict[str, type] = {}
    for name in keras.layers.__all__:
        obj = getattr(keras.layers, name)
        if isinstance(obj, type) and issubclass(obj, Layer):
            out[name] = obj
    out.update({"InputLayer": InputLayer, "Sequential": Sequential, "Functional": Functional,
                "Model": Functional})
    del Model
    return out


def serialize_layer(layer: Layer) -> dict[str, Any]:
    """``{'class_name': ..., 'config': ...}`` of a layer (or model)."""
    return {"class_name": type(layer).__name__, "config": _jsonable(layer.get_config())}


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot save {type(value).__name__} {value!r} in a model's config: "
                    f"give the layer a get_config that returns JSON-able values")


def deserialize_layer(config: dict[str, Any], custom_objects: dict[str, Any] | None = None
                      ) -> Layer:
    """The layer `serialize_layer` described; `custom_objects` maps the names of your
    own classes (and functions) to them."""
    name = config["class_name"]
    classes = layer_classes()
    cls = (custom_objects or {}).get(name) or classes.get(name)
    if cls is None:
        raise ValueError(f"Unknown layer: '{name}'. Please ensure you are using a "
                         f"`tw.keras.layers` class or pass your class in custom_objects")
    inner = dict(config.get("config", {}))
    from .functional import Functional
    if isinstance(cls, type) and issubclass(cls, Functional):
        return cls.from_config(inner, custom_objects=custom_objects)
    with _custom_objects(custom_objects):
        return cls.from_config(inner)


class _custom_objects:  # noqa: N801  (a context manager, used like a function)
    """Make `custom_objects` visible to the activation / initializer lookups made while
    layers are rebuilt from their configs."""

    current: dict[str, Any] = {}

    def __init__(self, objects: dict[str, Any] | None) -> None:
        self.objects = objects or {}

    def __enter__(self) -> None:
        self.saved = dict(_custom_objects.current)
        _custom_objects.current.update(self.objects)

    def __exit__(self, *exc: Any) -> None:
        _custom_objects.current.clear()
        _custom_objects.current.update(self.saved)


def model_to_json(model: Any, **kwargs: Any) -> str:
    """The model's config as JSON."""
    return json.dumps({"class_name": type(model).__name__ if type(model).__name__ != "Model"
                       else "Functional", "config": _jsonable(model.get_config())}, **kwargs)


def model_from_json(json_string: str, custom_objects: dict[str, Any] | None = None) -> Any:
    """The model `model_to_json` described (new weights)."""
    return deserialize_layer(json.loads(json_string), custom_objects)


def _compile_config(model: Any) -> dict[str, Any] | None:
    state = model._compile_state
    if state is None:
        return None
    from .. import losses, metrics, optimizers
    cfg = state.config

    def ser(value: Any, module: Any) -> Any:
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, (list, tuple)):
            return [ser(v, module) for v in value]
        if isinstance(value, dict):
            return {k: ser(v, module) for k, v in value.items()}
        return module.serialize(value)

    try:
        return {"optimizer": optimizers.serialize(model.optimizer),
                "loss": ser(cfg["loss"], losses), "metrics": ser(cfg["metrics"], metrics),
                "loss_weights": cfg["loss_weights"],
                "weighted_metrics": ser(cfg["weighted_metrics"], metrics),
                "run_eagerly": bool(state.run_eagerly)}
    except (ValueError, TypeError):
        return None   # something without a config: the model is saved uncompiled


def save_model(model: Any, filepath: str, overwrite: bool = True,
               save_format: str | None = None, include_optimizer: bool = True,
               **kwargs: Any) -> None:
    """Write `model` to the directory `filepath`: ``model.json`` (config, compile
    arguments) and the weights checkpoint."""
    if kwargs:
        raise TypeError(f"save: unexpected keyword argument(s) {', '.join(sorted(kwargs))}")
    filepath = os.fspath(filepath)
    _check_format(filepath, save_format, "save")
    if os.path.exists(filepath) and not os.path.isdir(filepath):
        raise FileExistsError(f"save: {filepath} is a file; a model is saved as a directory")
    if os.path.isdir(filepath) and os.listdir(filepath) and not overwrite:
        raise FileExistsError(f"save: {filepath} exists and overwrite=False")
    config = json.loads(model_to_json(model))
    os.makedirs(filepath, exist_ok=True)
    record = {"format": _FORMAT, "model": config,
              "compile": _compile_config(model) if include_optimizer else None}
    path = os.path.join(filepath, _MODEL_FILE)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(record, f, indent=1)
    os.replace(tmp, path)
    directory_prefix = os.path.join(filepath, _WEIGHTS)
    _checkpoint(model, with_optimizer=include_optimizer and _has_state(model)).write(
        directory_prefix)


def load_model(filepath: str, custom_objects: dict[str, Any] | None = None,
               compile: bool = True, safe_mode: bool = True) -> Any:  # noqa: A002
    """The model `save_model` wrote: rebuilt from its config, compiled as it was (when
    its compile arguments had configs), weights and optimizer state restored."""
    filepath = os.fspath(filepath)
    path = os.path.join(filepath, _MODEL_FILE)
    if not os.path.exists(path):
        raise FileNotFoundError(f"load_model: no tw.keras model at {filepath} (no "
                                f"{_MODEL_FILE}); weights alone load with load_weights")
    with open(path) as f:
        record = json.load(f)
    if record.get("format") != _FORMAT:
        raise ValueError(f"load_model: {path} is not a {_FORMAT} file")
    model = deserialize_layer(record["model"], custom_objects)
    cfg = record.get("compile")
    if compile and cfg is not None:
        from .. import losses, metrics, optimizers

        def de(value: Any, module: Any) -> Any:
            if value is None or isinstance(value, str):
                return value
            if isinstance(value, list):
                return [de(v, module) for v in value]
            if isinstance(value, dict) and "class_name" not in value:
                return {k: de(v, module) for k, v in value.items()}
            return module.deserialize(value, custom_objects)

        model.compile(optimizer=optimizers.deserialize(cfg["optimizer"], custom_objects),
                      loss=de(cfg["loss"], losses), metrics=de(cfg["metrics"], metrics),
                      loss_weights=cfg["loss_weights"],
                      weighted_metrics=de(cfg["weighted_metrics"], metrics),
                      run_eagerly=cfg["run_eagerly"])
    weights = os.path.join(filepath, _WEIGHTS)
    stored = checkpoint_io.read_tensors(weights)
    has_optimizer = compile and any(k.startswith("optimizer/") for k in stored)
    # (optimizer slots made by the first training step take their values then)
    _checkpoint(model, with_optimizer=has_optimizer).restore(weights)
    return model
