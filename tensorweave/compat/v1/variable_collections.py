"""TensorFlow 1's ``tf.get_local_variable`` and ``tf.model_variables``: variables of the
``LOCAL_VARIABLES`` and ``MODEL_VARIABLES`` collections."""

from __future__ import annotations

from typing import Any

from .graph import GraphKeys, get_collection, in_default_graph
from .var_scope import get_variable


@in_default_graph
def get_local_variable(name: str, shape: Any = None, dtype: Any = None,
                       initializer: Any = None, regularizer: Any = None,
                       trainable: bool = False, collections: Any = None, **kwargs: Any) -> Any:
    """`get_variable`, made a local variable: in ``LOCAL_VARIABLES`` (and `collections`),
    not global, never trainable (TensorFlow 1 ignores `trainable` here too), so
    ``local_variables_initializer()`` initializes it and Savers skip it."""
    collections = list(collections or []) + [GraphKeys.LOCAL_VARIABLES]
    return get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                        regularizer=regularizer, trainable=False, collections=collections,
                        **kwargs)


def model_variables(scope: str | None = None) -> list[Any]:
    """The default graph's ``MODEL_VARIABLES`` collection (those whose name `scope`
    matches from the start, when given)."""
    return get_collection(GraphKeys.MODEL_VARIABLES, scope)


__all__ = ["get_local_variable", "model_variables"]
