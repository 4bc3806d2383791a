"""TensorFlow 1's ``tf.make_template``: a function whose variables are shared between
its calls.

The first call runs the function in a new variable scope (``name``, made unique:
``name_1`` for a second template of the same name) and creates its variables with
``get_variable``; later calls enter that scope again with ``reuse=True``, so the same
variables are used (a ``get_variable`` of a name the first call did not create is an
error, and so is a trainable ``tf.Variable`` made by a later call). Each call opens a new
name scope for its ops (``name/``, ``name_1/``), as TensorFlow's."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .graph import GLOBAL_VARIABLES, LOCAL_VARIABLES, TRAINABLE_VARIABLES, get_default_graph
from .var_scope import VariableScope, variable_scope


class Template:
    """A function wrapped by `make_template`: call it as the function."""

    def __init__(self, name: str, func: Callable, create_scope_now: bool = False,
                 unique_name: str | None = None, custom_getter: Any = None) -> None:
        if not name:
            raise ValueError("make_template: name_ cannot be empty")
        self._name, self._func = name, func
        self._unique_name, self._custom_getter = unique_name, custom_getter
        self._variable_scope: VariableScope | None = None
        self._variables_created = False
        if create_scope_now:
            # the variable scope only (TensorFlow's _pure_variable_scope): no name scope
            with variable_scope(unique_name, default_name=name, custom_getter=custom_getter,
                                auxiliary_name_scope=False) as vs:
                self._variable_scope = vs

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._variable_scope is not None:
            with variable_scope(self._variable_scope, reuse=self._variables_created):
                return self._call_func(args, kwargs)
        with variable_scope(self._unique_name, default_name=self._name,
                            custom_getter=self._custom_getter) as vs:
            self._variable_scope = vs
            return self._call_func(args, kwargs)

    def _call_func(self, args: tuple, kwargs: dict) -> Any:
        graph = get_default_graph()
        trainable_at_start = len(graph.get_collection(TRAINABLE_VARIABLES))
        result = self._func(*args, **kwargs)
        if not self._variables_created:
            self._variables_created = True
            return result
        trainable = graph.get_collection(TRAINABLE_VARIABLES)
        if len(trainable) != trainable_at_start:
            # (a tf.Variable made again at each call would not be shared)
            raise ValueError(f"Trainable variable created when calling a template after the "
                             f"first time, perhaps you used tf.Variable when you meant "
                             f"tf.get_variable: {trainable[trainable_at_start:]}")
        return result

    @property
    def name(self) -> str:
        """The name given to `make_template`."""
        return self._name

    @property
    def func(self) -> Callable:
        """The wrapped function (with the keyword arguments given to `make_template`)."""
        return self._func

    @property
    def variable_scope(self) -> VariableScope | None:
        """The template's variable scope (None before the first call)."""
        return self._variable_scope

    @property
    def variable_scope_name(self) -> str | None:
        """The variable scope's name with a trailing ``/`` (None before the first call)."""
        if self._variable_scope is None:
            return None
        name = self._variable_scope.name
        return name if not name or name.endswith("/") else f"{name}/"

    def _collection(self, key: str) -> list[Any]:
        scope = self.variable_scope_name
        return [] if scope is None else get_default_graph().get_collection(key, scope)

    @property
    def variables(self) -> list[Any]:
        """The global variables of the template's scope."""
        return self._collection(GLOBAL_VARIABLES)

    global_variables = variables

    @property
    def trainable_variables(self) -> list[Any]:
        """The trainable variables of the template's scope."""
        return self._collection(TRAINABLE_VARIABLES)

    @property
    def non_trainable_variables(self) -> list[Any]:
        """The global variables of the template's scope that are not trainable."""
        trainable = {id(v) for v in self.trainable_variables}
        return [v for v in self.variables if id(v) not in trainable]

    @property
    def local_variables(self) -> list[Any]:
        """The local variables of the template's scope."""
        return self._collection(LOCAL_VARIABLES)


def make_template(name_: str, func_: Callable, create_scope_now_: bool = False,
                  unique_name_: str | None = None, custom_getter_: Any = None,
                  **kwargs: Any) -> Template:
    """`func_` with its variables shared between calls (TensorFlow 1's
    ``tf.make_template``): `kwargs` are bound to it; the variable scope is `unique_name_`
    if given, else `name_` made unique, created at the first call (or now with
    `create_scope_now_`); `custom_getter_` is the scope's custom getter."""
    if kwargs:
        func_ = functools.partial(func_, **kwargs)
    return Template(name_, func_, create_scope_now_, unique_name_, custom_getter_)


__all__ = ["Template", "make_template"]
