"""Types of IR values: tensors with a dtype and a shape of known rank, and resources.

A dimension is an ``int >= 0`` or ``None`` (unknown until run time). Ranks are always
known in the IR; the frontends resolve unknown ranks from the values fed.
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


def format_shape(shape: Sequence[int | None]) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


class Type:
    """Base class of IR value types."""

    __slots__ = ()


class TensorType(Type):
    """A tensor type: element dtype plus shape (dims may be None)."""

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype: DType | str, shape: Iterable[int | None] = ()) -> None:
        self.dtype = as_dtype(dtype)
        self.shape = as_shape(tuple(shape))

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_fully_defined(self) -> bool:
        return all(d is not None for d in self.shape)

    @property
    def num_elements(self) -> int | None:
        n = 1
        for d in self.shape:
            if d is None:
                return None
            n *= d
        return n

    def with_shape(self, shape: Iterable[int | None]) -> TensorType:
        return TensorType(self.dtype, shape)

    def with_dtype(self, dtype: DType | str) -> TensorType:
        return TensorType(dtype, self.shape)

    def is_compatible_with(self, other: TensorType) -> bool:
        """True when some concrete tensor could have both types."""
        if not isinstance(other, TensorType) or self.dtype is not other.dtype:
            return False
        if self.rank != other.rank:
            return False
        return all(a is None or b is None or a == b for a, b in zip(self.shape, other.shape))

    def accepts(self, dtype: DType, shape: Sequence[int]) -> bool:
        """True when a concrete array of this dtype and shape is a value of this type."""
        return (dtype is self.dtype and len(shape) == self.rank
                and all(d is None or d == s for d, s in zip(self.shape, shape)))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TensorType) and self.dtype is other.dtype
                and self.shape == other.shape)

    def __hash__(self) -> int:
        return hash((self.dtype.ir_name, self.shape))

    def mlir(self) -> str:
        """The MLIR spelling, e.g. ``tensor<?x784xf32>`` (``u8`` is spelled ``ui8``: MLIR's
        ``i8`` is signless and it has no ``u8``)."""
        dims = "".join(("?" if d is None else str(d)) + "x" for d in self.shape)
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
