"""``tw.keras.models``: `Model`, `Sequential`, and saving / loading whole models."""

from .engine.functional import Functional
from .engine.saving import load_model, model_from_json
from .engine.sequential import Sequential
from .engine.training import Model

__all__ = ["Model", "Sequential", "Functional", "load_model", "save_model",
           "model_from_json", "clone_model"]


def save_model(model: Model, filepath: str, overwrite: bool = True, **kwargs) -> None:
    """``model.save(filepath)``."""
    model.save(filepath, overwrite=overwrite, **kwargs)


def clone_model(model: Model, custom_objects: dict | None = None) -> Model:
    """A new model of the same configuration (new layers, new weights)."""
    from .engine.saving import deserialize_layer, serialize_layer
    return deserialize_layer(serialize_layer(model), custom_objects)


def __dir__() -> list[str]:
    return sorted(__all__)
