"""Elements of a `tw.data` pipeline: nested structures of arrays, described by TensorSpecs.

Inside a pipeline an element travels as a flat tuple of NumPy arrays (one per leaf, in
`nest.flatten` order); a `Structure` says how to nest them again (the tree) and what each
leaf is (a `TensorSpec` whose dims may be None when a pipeline does not know them
statically, as TensorFlow's ``element_spec``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..compiler.dtypes import as_dtype, native_byte_order
from ..compiler.types import format_shape
from ..errors import DTypeError, InvalidArgumentError, ShapeError
from ..frontend import nest
from ..frontend.building import python_array
from ..frontend.function import TensorSpec
from ..frontend.tensor import EagerTensor, Tensor

Element = tuple  # one np.ndarray per leaf of the structure


@dataclass(frozen=True)
class Structure:
    """The nesting (`tree`, as `nest.flatten` describes it) and the leaves' specs."""

    tree: Any
    specs: tuple[TensorSpec, ...]

    @property
    def element_spec(self) -> Any:
        """The nested structure of TensorSpecs (TensorFlow's ``element_spec``)."""
        return nest.unflatten(self.tree, list(self.specs))

    def describe(self) -> str:
        """The element spec as text, for error messages."""
        return describe_nested(self.tree, [format_spec(s) for s in self.specs])

    @functools.cached_property
    def _flat_kind(self) -> str:
        """"leaf" (one tensor), "tuple" (a flat tuple of tensors) or "nested"."""
        if self.tree == ("leaf",):
            return "leaf"
        if self.tree[0] == "tuple" and all(c == ("leaf",) for c in self.tree[1]):
            return "tuple"
        return "nested"

    def nest(self, flat: Sequence[Any]) -> Any:
        """The element with leaves `flat`, nested as this structure says."""
        kind = self._flat_kind  # the common shapes without the general walk (per element)
        if kind == "leaf":
            return flat[0]
        if kind == "tuple":
            return tuple(flat)
        return nest.unflatten(self.tree, list(flat))


def format_spec(spec: TensorSpec) -> str:
    """``f32[?,3]``: a leaf's dtype and shape as the rest of the project prints them."""
    return f"{spec.dtype.ir_name}{format_shape(spec.shape)}"


def describe_nested(tree: Any, leaves: Sequence[str]) -> str:
    """A structure with text leaves, printed without quotes around the leaves."""
    class _Raw(str):
        def __repr__(self) -> str:
            return str(self)
    return repr(nest.unflatten(tree, [_Raw(s) for s in leaves]))


def numpy_dtype(spec: TensorSpec) -> np.dtype:
    """The NumPy dtype of a leaf."""
    return np.dtype(spec.dtype.as_numpy_dtype)


def to_array(value: Any, what: str, location: str | None = None) -> np.ndarray:
    """A leaf given by the user as an array: NumPy arrays and eager tensors keep their
    dtype, Python values take TensorFlow's defaults (float32, int32)."""
    if isinstance(value, np.ndarray):
        value = native_byte_order(value)  # ('>f4' from a file: converted by value)
        as_dtype(value.dtype)  # a dtype the project supports, else a clear error
        return value
    if isinstance(value, EagerTensor):
        return np.asarray(value)
    if isinstance(value, np.generic):
        as_dtype(value.dtype)
        return np.asarray(value)
    if isinstance(value, Tensor):
        raise InvalidArgumentError(
            f"got the symbolic tensor {value}; tw.data pipelines hold host values "
            f"(NumPy arrays, eager tensors, Python numbers), not values of a graph being "
            f"built", op=what, location=location)
    if value is None:
        raise InvalidArgumentError("an element leaf is None; every leaf of an "
                                   "element must be a tensor", op=what, location=location)
    # TensorFlow's default dtypes, computed without building a constant: inside a v1
    # `with tf.Graph().as_default()` a built one would be symbolic (no value)
    return python_array(value, None)


def flatten_data(value: Any) -> tuple[list[Any], Any]:
    """`nest.flatten` as tf.data reads a structure: tuples, namedtuples and dicts nest, a
    list is one tensor (``from_tensor_slices([1, 2])`` slices a vector)."""
    leaves: list[Any] = []

    def go(x: Any) -> Any:
        if isinstance(x, tuple) and hasattr(type(x), "_fields"):
            return ("namedtuple", type(x), tuple(go(v) for v in x))
        if isinstance(x, tuple):
            return ("tuple", tuple(go(v) for v in x))
        if isinstance(x, dict):
            keys = tuple(x.keys())
            return ("dict", keys, tuple(go(x[k]) for k in keys))
        leaves.append(x)
        return ("leaf",)

    return leaves, go(value)


def lists_as_tuples(tree: Any) -> Any:
    """A `nest` tree with its lists made tuples: tf.data gives a function's list results
    back as tuples."""
    kind = tree[0]
    if kind == "leaf":
        return tree
    if kind in ("list", "tuple"):
        return ("tuple", tuple(lists_as_tuples(c) for c in tree[1]))
    if kind == "namedtuple":
        return (kind, tree[1], tuple(lists_as_tuples(c) for c in tree[2]))
    return (kind, tree[1], tuple(lists_as_tuples(c) for c in tree[2]))


def flatten_element(value: Any, what: str, location: str | None = None
                    ) -> tuple[Element, Any]:
    """(flat tuple of arrays, tree) of a nested value given by the user (`flatten_data`)."""
    leaves, tree = flatten_data(value)
    return tuple(to_array(v, what, location) for v in leaves), tree


def flatten_up_to(tree: Any, value: Any) -> list[Any] | None:
    """The leaves of `value` where `tree` has leaves (a leaf of `tree` takes the whole
    sub-value, a list included, as TensorFlow's ``flatten_up_to``); None when `value` is
    not nested as `tree` says."""
    out: list[Any] = []

    def go(t: Any, v: Any) -> bool:
        kind = t[0]
        if kind == "leaf":
            out.append(v)
            return True
        if kind == "dict":
            if not isinstance(v, dict) or set(v) != set(t[1]):
                return False
            return all(go(c, v[k]) for k, c in zip(t[1], t[2]))
        children = t[2] if kind == "namedtuple" else t[1]
        if not isinstance(v, (tuple, list)) or len(v) != len(children):
            return False
        return all(go(c, x) for c, x in zip(children, v))

    return out if go(tree, value) else None


def spec_of(array: np.ndarray) -> TensorSpec:
    """The spec of one concrete leaf."""
    return TensorSpec(array.shape, as_dtype(array.dtype))


def structure_of(flat: Element, tree: Any) -> Structure:
    """The structure of one concrete element (every dim known)."""
    return Structure(tree, tuple(spec_of(a) for a in flat))


def merge_shapes(a: tuple, b: tuple) -> tuple | None:
    """The most specific shape compatible with both (None dims where they differ), or None
    when their ranks differ."""
    if len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


def merge_structures(a: Structure, b: Structure, what: str,
                     location: str | None = None) -> Structure:
    """The structure both `a` and `b` fit (dims relaxed to None where they differ); a clear
    error when the nesting, a dtype or a rank differs."""
    if a.tree != b.tree:
        raise InvalidArgumentError(f"the elements have different structures: "
                                   f"{a.describe()} vs {b.describe()}", op=what,
                                   location=location)
    specs = []
    for i, (x, y) in enumerate(zip(a.specs, b.specs)):
        if x.dtype is not y.dtype:
            raise DTypeError(f"component {i} has dtype {x.dtype.ir_name} in one and "
                             f"{y.dtype.ir_name} in the other ({a.describe()} vs "
                             f"{b.describe()})", op=what, location=location)
        shape = merge_shapes(x.shape, y.shape)
        if shape is None:
            raise ShapeError(f"component {i} has shape {format_shape(x.shape)} in one "
                             f"and {format_shape(y.shape)} in the other (different ranks)",
                             op=what, location=location)
        specs.append(TensorSpec(shape, x.dtype))
    return Structure(a.tree, tuple(specs))


def shape_fits(spec_shape: tuple, shape: tuple) -> bool:
    """Whether a concrete shape fits a spec's shape (None dims match any size)."""
    return len(spec_shape) == len(shape) and all(d is None or d == s
                                                 for d, s in zip(spec_shape, shape))


def conform(flat: Element, tree: Any, structure: Structure, what: str,
            location: str | None = None) -> Element:
    """Check a produced element against the structure it must have (nesting, dtypes,
    shapes) and return its arrays; Python-number leaves are cast to the spec's dtype."""
    if tree != structure.tree:
        got = describe_nested(tree, [format_spec(spec_of(a)) for a in flat])
        raise InvalidArgumentError(f"expected an element structured as "
                                   f"{structure.describe()}, got {got}", op=what,
                                   location=location)
    out = []
    for i, (a, spec) in enumerate(zip(flat, structure.specs)):
        if a.dtype != numpy_dtype(spec):
            raise DTypeError(f"component {i} should be {format_spec(spec)}, got "
                             f"{as_dtype(a.dtype).ir_name}{format_shape(a.shape)}", op=what,
                             location=location)
        if not shape_fits(spec.shape, a.shape):
            raise InvalidArgumentError(f"component {i} should have shape "
                                       f"{format_shape(spec.shape)}, got "
                                       f"{format_shape(a.shape)}", op=what, location=location)
        out.append(a)
    return tuple(out)


def flatten_shapes(shapes: Any) -> tuple[list, Any]:
    """(shapes, tree) of a nested structure whose leaves are shapes (lists of ints, None or
    -1; arrays): ``output_shapes``, ``padded_shapes``. A shape is a leaf, not a container
    to descend into; None is an unknown shape."""
    def is_shape(x: Any) -> bool:
        if isinstance(x, (np.ndarray, EagerTensor)):
            return True
        return isinstance(x, (list, tuple)) and all(
            d is None or isinstance(d, (int, np.integer)) for d in x)
    out: list = []

    def go(x: Any) -> Any:
        if x is None or is_shape(x):
            dims = None if x is None else np.asarray(x, object).reshape(-1)
            out.append(None if dims is None else
                       tuple(None if d is None or int(d) < 0 else int(d) for d in dims))
            return ("leaf",)
        if isinstance(x, tuple) and hasattr(type(x), "_fields"):
            return ("namedtuple", type(x), tuple(go(v) for v in x))
        if isinstance(x, dict):
            return ("dict", tuple(x), tuple(go(v) for v in x.values()))
        return (type(x).__name__, tuple(go(v) for v in x))
    return out, go(shapes)


def user_element(structure: Structure, flat: Element, numpy: bool) -> Any:
    """An element as the user sees it: eager tensors (or NumPy arrays), nested.

    Arrays in a pipeline are read-only or new ones no stage touches again (generators'
    values are copied on the way in), so an eager tensor can take an array as it is:
    making it read-only saves EagerTensor's copy."""
    if numpy:  # TensorFlow's .numpy(): a scalar is a NumPy scalar, not a 0-d array
        return structure.nest([a[()] if a.ndim == 0 else a for a in flat])
    for a in flat:
        a.flags.writeable = False
    return structure.nest([EagerTensor(a) for a in flat])
