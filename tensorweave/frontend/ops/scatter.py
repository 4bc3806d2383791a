"""Sparse reads and in-place updates of a variable's rows (TensorFlow 1's
``tf.scatter_add``, ``tf.scatter_sub``, ``tf.scatter_update``), through the
ResourceScatter*/ResourceGather ops; and the summing of repeated slices that sparse
optimizer updates start with."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..building import apply_op, apply_op1, convert_to_tensor
from ..context import control_dependencies, current_builder


def _scatter(op: str, ref: Any, indices: Any, updates: Any, name: str | None) -> Any:
    if not hasattr(ref, "_resource_arg"):
        raise TypeError(f"{op} updates a variable in place, got {ref!r}")
    apply_op(op, [ref._resource_arg(), convert_to_tensor(indices),
                  ref._converted(updates)], name=name)
    b = current_builder()
    # the update op in a graph (to run or group), as TensorFlow 1 returns it
    return None if b is None else b.graph.nodes[-1]


def scatter_add(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Any:
    """``ref[indices[i...], ...] += updates[i..., ...]`` in place (repeated indices add
    up); only those rows of the variable `ref` change. Returns the update op in a graph."""
    return _scatter("ResourceScatterAdd", ref, indices, updates, name)


def scatter_sub(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Any:
    """``ref[indices[i...], ...] -= updates[i..., ...]`` in place (repeated indices add
    up). Returns the update op in a graph."""
    return _scatter("ResourceScatterSub", ref, indices, updates, name)


def scatter_update(ref: Any, indices: Any, updates: Any, use_locking: bool = True,
                   name: str | None = None) -> Any:
    """``ref[indices[i...], ...] = updates[i..., ...]`` in place (where an index repeats,
    the last update wins). Returns the update op in a graph."""
    return _scatter("ResourceScatterUpdate", ref, indices, updates, name)


def scatter_mul(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Any:
    """``ref[indices[i...], ...] *= updates[i..., ...]`` in place (repeated indices
    multiply). Returns the update op in a graph."""
    return _scatter("ResourceScatterMul", ref, indices, updates, name)


def scatter_div(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Any:
    """``ref[indices[i...], ...] /= updates[i..., ...]`` in place (repeated indices divide
    by each update; integers truncate towards zero). Returns the update op in a graph."""
    return _scatter("ResourceScatterDiv", ref, indices, updates, name)


def scatter_min(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Any:
    """``ref[indices[i...], ...] = min(ref[...], updates[i..., ...])`` in place. Returns
    the update op in a graph."""
    return _scatter("ResourceScatterMin", ref, indices, updates, name)


def scatter_max(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Any:
    """``ref[indices[i...], ...] = max(ref[...], updates[i..., ...])`` in place. Returns
    the update op in a graph."""
    return _scatter("ResourceScatterMax", ref, indices, updates, name)


def returning_value(scatter: Callable[..., Any]) -> Callable[..., Any]:
    """TensorFlow 1's flavor of a scatter function: it returns the variable's value read
    after the update (a tensor to fetch or compute with), not the update op."""
    @functools.wraps(scatter)
    def wrapper(ref: Any, indices: Any, updates: Any, *args: Any, **kwargs: Any) -> Any:
        update = scatter(ref, indices, updates, *args, **kwargs)
        if update is None:  # eagerly: the update has run
            return ref.read_value()
        with control_dependencies([update]):
            return ref.read_value()

    wrapper.__doc__ = (f"{scatter.__doc__.split(' Returns')[0]} Returns the variable's "
                       f"value after the update (TensorFlow 1's ``tf.{scatter.__name__}``).")
    return wrapper


def gather_rows(ref: Any, indices: Any, name: str | None = None) -> Any:
    """Rows `indices` of the variable `ref`, read without copying the whole variable
    (no gradient flows through it: for optimizer state)."""
    return apply_op1("ResourceGather", [ref._resource_arg(), convert_to_tensor(indices)],
                     name=name)


def deduplicate(values: Any, indices: Any) -> tuple[Any, Any]:
    """`values` with the slices of repeated `indices` summed, and the unique indices (in
    order of first occurrence)."""
    summed, unique = apply_op("DeduplicateSlices", [convert_to_tensor(values),
                                                    convert_to_tensor(indices)])
    return summed, unique


__all__ = ["scatter_add", "scatter_sub", "scatter_update", "scatter_mul", "scatter_div",
           "scatter_min", "scatter_max", "gather_rows", "deduplicate", "returning_value"]
