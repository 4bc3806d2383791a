"""Nested structures (tuples, lists, dicts, namedtuples) flattened to leaves and back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _is_composite(x: Any) -> bool:
    # a composite tensor (tw.sparse.SparseTensor, its spec): `_tw_components()` gives
    # the class that rebuilds it from its components, and the components
    return hasattr(x, "_tw_components") and not isinstance(x, type)


def flatten(structure: Any, expand_composites: bool = True) -> tuple[list[Any], Any]:
    """Leaves in a fixed order, plus a hashable description of the structure. A
    composite tensor (a SparseTensor) is described as a namedtuple of its components
    (rebuilt by its class), unless `expand_composites` is False: then it is a leaf."""
    leaves: list[Any] = []

    def go(x: Any) -> Any:
        if expand_composites and _is_composite(x):
            cls, components = x._tw_components()
            return ("namedtuple", cls, tuple(go(v) for v in components))
        if _is_namedtuple(x):
            return ("namedtuple", type(x), tuple(go(v) for v in x))
        if isinstance(x, (tuple, list)):
            # (a tuple subclass such as a TensorShape is a tuple here: rebuilt as one)
            return ("list" if isinstance(x, list) else "tuple", tuple(go(v) for v in x))
        if isinstance(x, dict):
            keys = tuple(x.keys())
            return ("dict", keys, tuple(go(x[k]) for k in keys))
        leaves.append(x)
        return ("leaf",)

    return leaves, go(structure)


def unflatten(treedef: Any, leaves: Sequence[Any]) -> Any:
    """Rebuild the structure described by `treedef` with `leaves` in flatten order."""
    it = iter(leaves)

    def go(t: Any) -> Any:
        kind = t[0]
        if kind == "leaf":
            return next(it)
        if kind == "namedtuple":
            return t[1](*[go(c) for c in t[2]])
        if kind == "tuple":
            return tuple(go(c) for c in t[1])
        if kind == "list":
            return [go(c) for c in t[1]]
        if kind == "dict":
            return {k: go(c) for k, c in zip(t[1], t[2])}
        raise ValueError(f"bad tree description {t!r}")

    return go(treedef)


def map_structure(fn: Callable[[Any], Any], structure: Any,
                  expand_composites: bool = True) -> Any:
    """Apply `fn` to every leaf, keeping the structure."""
    leaves, treedef = flatten(structure, expand_composites)
    return unflatten(treedef, [fn(x) for x in leaves])
