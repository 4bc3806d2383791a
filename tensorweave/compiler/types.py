"""Types of IR values: tensors with a dtype and a shape, and resources.

A dimension is an ``int >= 0`` or ``None`` (unknown until run time). A shape of ``None``
is an unknown rank (``tensor<*xf32>``, TensorFlow's ``TensorShape(None)``): only a v1
graph under construction holds such types (a ``tf.placeholder`` made without a shape and
what is computed from it, see `unknown_rank.py`); a Session specializes the pruned graph
to the shapes of the values fed before compiling it, so passes and targets see known ranks
only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import ShapeError
from .dtypes import DType, as_dtype

Shape = tuple  # tuple[int | None, ...]


def as_shape(dims: Any) -> Shape:
    """Normalise a shape given as a tuple/list of ints and ``None`` (``-1`` also means unknown)."""
    if dims is None:
        raise ShapeError("tensors need a known rank; give the shape as a list, with None "
                         "for dimensions unknown until run time")
    if isinstance(dims, int):
        dims = (dims,)
    out = []
    for d in dims:
        if d is None or (isinstance(d, int) and d == -1):
            out.append(None)
        elif isinstance(d, int) or hasattr(d, "__index__"):
            d = int(d)
            if d < 0:
                raise ShapeError(f"dimension sizes must be >= 0 or None, got {d}")
            out.append(d)
        else:
            raise ShapeError(f"a dimension must be an int or None, got {d!r}")
    return tuple(out)


def format_shape(shape: Sequence[int | None] | None) -> str:
    """``[?,784]``; an unknown rank (None, or a `TensorShape` of unknown rank) is
    TensorFlow's ``<unknown>``."""
    if shape is None or getattr(shape, "rank", 0) is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


class Type:
    """Base class of IR value types."""

    __slots__ = ()


class TensorType(Type):
    """A tensor type: element dtype plus shape (dims may be None; the shape None is an
    unknown rank)."""

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype: DType | str, shape: Iterable[int | None] | None = ()) -> None:
        self.dtype = as_dtype(dtype)
        # (a TensorShape of unknown rank iterates as an error: its rank says so)
        unknown = shape is None or getattr(shape, "rank", 0) is None
        self.shape = None if unknown else as_shape(tuple(shape))

    @property
    def rank(self) -> int | None:
        """The number of dims; None when unknown."""
        return None if self.shape is None else len(self.shape)

    @property
    def is_fully_defined(self) -> bool:
        return self.shape is not None and all(d is not None for d in self.shape)

    @property
    def num_elements(self) -> int | None:
        if self.shape is None:
            return None
        n = 1
        for d in self.shape:
            if d is None:
                return None
            n *= d
        return n

    def with_shape(self, shape: Iterable[int | None] | None) -> TensorType:
        return TensorType(self.dtype, shape)

    def with_dtype(self, dtype: DType | str) -> TensorType:
        return TensorType(dtype, self.shape)

    def is_compatible_with(self, other: TensorType) -> bool:
        """True when some concrete tensor could have both types."""
        if not isinstance(other, TensorType) or self.dtype is not other.dtype:
            return False
        if self.shape is None or other.shape is None:
            return True
        if self.rank != other.rank:
            return False
        return all(a is None or b is None or a == b for a, b in zip(self.shape, other.shape))

    def accepts(self, dtype: DType, shape: Sequence[int]) -> bool:
        """True when a concrete array of this dtype and shape is a value of this type."""
        if self.shape is None:
            return dtype is self.dtype
        return (dtype is self.dtype and len(shape) == self.rank
                and all(d is None or d == s for d, s in zip(self.shape, shape)))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TensorType) and self.dtype is other.dtype
                and self.shape == other.shape)

    def __hash__(self) -> int:
        return hash((self.dtype.ir_name, self.shape))

    def mlir(self) -> str:
        """The MLIR spelling, e.g. ``tensor<?x784xf32>`` (``u8`` is spelled ``ui8``: MLIR's
        ``i8`` is signless and it has no ``u8``); an unknown rank is ``tensor<*xf32>``."""
        dims = "*x" if self.shape is None else "".join(
            ("?" if d is None else str(d)) + "x" for d in self.shape)
        element = "ui8" if self.dtype.ir_name == "u8" else self.dtype.ir_name
        return f"tensor<{dims}{element}>"

    def __str__(self) -> str:
        return f"{self.dtype.ir_name}{format_shape(self.shape)}"

    def __repr__(self) -> str:
        return f"TensorType({self.dtype.ir_name}, {self.shape})"


class ResourceType(Type):
    """The type of a handle to runtime state. Variables carry the type of the tensor they
    hold (``!tw.resource<tensor<784x10xf32>>``); queues and other state carry none."""

    __slots__ = ("value_type",)

    def __init__(self, value_type: TensorType | None = None) -> None:
        self.value_type = value_type

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ResourceType) and self.value_type == other.value_type

    def __hash__(self) -> int:
        return hash(("resource", self.value_type))

    def mlir(self) -> str:
        if self.value_type is None:
            return "!tw.resource"
        return f"!tw.resource<{self.value_type.mlir()}>"

    def __str__(self) -> str:
        return "resource" if self.value_type is None else f"resource<{self.value_type}>"

    __repr__ = __str__


RESOURCE = ResourceType()
