"""`tw.Module`: TensorFlow 2's ``tf.Module``, a container of variables and submodules.

Nothing is registered when an attribute is set: the variables and submodules of a module
are found when asked for, by walking its attributes in sorted order, into lists, tuples
and dicts (dicts by sorted key), and into submodules after the module's own attributes,
as ``tf.Module._flatten`` does. The same walk gives `tw.train.Checkpoint` the object path
of every variable (``model/layers/0/kernel``), so a checkpoint restores into a freshly
built module of the same structure.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .context import name_scope as _name_scope
from .variables import Variable

__all__ = ["Module"]

_VALID_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CAMEL_TO_SNAKE = re.compile(r"((?<=[a-z0-9])[A-Z]|(?!^)[A-Z](?=[a-z]))")
# attributes of the module machinery itself, never walked (the last: values a checkpoint
# restore holds for variables the module has not made yet, `checkpoint.restore_on_attach`)
_IGNORED = frozenset({"_module_name", "_module_scope", "_tw_pending_restore"})


def camel_to_snake(value: str) -> str:
    """``MyDenseLayer`` -> ``my_dense_layer`` (TensorFlow's rule for default names)."""
    return _CAMEL_TO_SNAKE.sub(r"_\1", value).lower()


class _ModuleScope:
    """``module.name_scope``: a reusable, re-entrant context manager (TensorFlow's is a
    ``tf.name_scope`` object, entered with ``with module.name_scope:``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._stack: list[contextlib.AbstractContextManager] = []

    def __enter__(self) -> str:
        cm = _name_scope(self.name)
        self._stack.append(cm)
        return cm.__enter__()

    def __exit__(self, *exc: Any) -> bool | None:
        return self._stack.pop().__exit__(*exc)


class Module:
    """A named container of variables and other modules (``tf.Module``).

    Subclass it, create variables in ``__init__`` (or on first use) and assign them and
    submodules to attributes, directly or in lists, tuples and dicts; `variables`,
    `trainable_variables` and `submodules` find them. Ops built in methods decorated
    with `Module.with_name_scope` (or inside ``with self.name_scope:``) get the module's
    name as a prefix. A module is checkpointable: ``tw.train.Checkpoint(model=module)``.
    """

    def __init__(self, name: str | None = None) -> None:
        if name is None:
            name = camel_to_snake(type(self).__name__)
        elif not isinstance(name, str) or not _VALID_NAME.match(name):
            raise ValueError(f"tw.Module: {name!r} is not a valid module name: module names "
                             f"must be valid Python identifiers (e.g. 'dense_1')")
        object.__setattr__(self, "_module_name", name)
        object.__setattr__(self, "_module_scope", _ModuleScope(name))

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        # a variable made on first use after a checkpoint restore takes its saved value
        if self.__dict__.get("_tw_pending_restore"):
            from .checkpoint import restore_on_attach
            restore_on_attach(self, name, value)

    def _check_init(self) -> None:
        if "_module_name" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}: call super().__init__() in __init__ "
                               f"before using the tw.Module API")

    @property
    def name(self) -> str:
        """The module's name (given, or the snake-case class name)."""
        self._check_init()
        return self._module_name

    @property
    def name_scope(self) -> _ModuleScope:
        """A context manager prefixing the names of ops built inside with the module's
        name (``with self.name_scope: ...``)."""
        self._check_init()
        return self._module_scope

    @property
    def variables(self) -> tuple[Variable, ...]:
        """Every variable of this module and its submodules, each once (attributes in
        sorted order, the module's own before its submodules')."""
        return tuple(self._flatten(predicate=lambda x: isinstance(x, Variable)))

    @property
    def trainable_variables(self) -> tuple[Variable, ...]:
        """The trainable ones of `variables`."""
        return tuple(self._flatten(predicate=lambda x: isinstance(x, Variable) and x.trainable))

    @property
    def non_trainable_variables(self) -> tuple[Variable, ...]:
        """The non-trainable ones of `variables`."""
        return tuple(self._flatten(
            predicate=lambda x: isinstance(x, Variable) and not x.trainable))

    @property
    def submodules(self) -> tuple[Module, ...]:
        """Every module reachable from this one's attributes (not itself), each once."""
        return tuple(self._flatten(predicate=lambda x: isinstance(x, Module)))

    def _flatten(self, recursive: bool = True, predicate: Callable[[Any], bool] | None = None,
                 with_path: bool = False) -> Iterator[Any]:
        """The leaves of the attribute tree that satisfy `predicate` (default: all),
        each once; with `with_path`, ``(path, leaf)`` pairs whose path is a tuple of
        attribute names, list indices and dict keys from this module."""
        self._check_init()
        predicate = predicate or (lambda _: True)
        seen: set[int] = {id(self)}  # a cycle back to this module does not list it
        for path, leaf in _walk(self, (), recursive, {id(self)}):
            if id(leaf) in seen or not predicate(leaf):
                continue
            seen.add(id(leaf))
            yield (path, leaf) if with_path else leaf

    @classmethod
    def with_name_scope(cls, method: Callable) -> Callable:
        """Decorator: the method runs inside ``self.name_scope``, so the ops it builds
        are named ``<module name>/...``."""
        @functools.wraps(method)
        def method_with_name_scope(self: Module, *args: Any, **kwargs: Any) -> Any:
            with self.name_scope:
                return method(self, *args, **kwargs)
        return method_with_name_scope

    def __repr__(self) -> str:
        name = self.__dict__.get("_module_name", "?")
        return f"<{type(self).__module__}.{type(self).__name__} name={name!r}>"


def _leaves(value: Any, path: tuple) -> Iterator[tuple[tuple, Any]]:
    """The leaves of a nest of lists, tuples and dicts (dict keys sorted, as tf.nest)."""
    if isinstance(value, Mapping):
        for k in sorted(value, key=_sort_key):
            yield from _leaves(value[k], (*path, k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, i))
    else:
        yield path, value


def _sort_key(k: Any) -> tuple[str, Any]:
    # keys of mixed types sort by type name first instead of raising
    return (type(k).__name__, k)


def module_attributes(module: Module) -> list[tuple[str, Any]]:
    """The attributes of `module` that the walk visits, in sorted order."""
    return sorted(((k, v) for k, v in vars(module).items() if k not in _IGNORED),
                  key=lambda kv: kv[0])


def _walk(module: Module, prefix: tuple, recursive: bool,
          visiting: set[int]) -> Iterator[tuple[tuple, Any]]:
    """``(path, leaf)`` for the module's attributes, then its submodules' (depth first,
    after all of its own leaves, as tf.Module); cycles are cut."""
    submodules = []
    for key, value in module_attributes(module):
        for path, leaf in _leaves(value, (*prefix, key)):
            yield path, leaf
            if recursive and isinstance(leaf, Module) and id(leaf) not in visiting:
                submodules.append((path, leaf))
    for path, sub in submodules:
        if id(sub) in visiting:
            continue
        visiting.add(id(sub))
        yield from _walk(sub, path, recursive, visiting)
