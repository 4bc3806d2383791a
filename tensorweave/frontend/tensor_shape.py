"""Static shapes as users see them: TensorFlow's `TensorShape` and `Dimension`.

A `TensorShape` is a tuple of ints and None (unknown dims), so every place in tensorweave
that treats a shape as a tuple keeps working: iterating, unpacking, ``len``, ``+ (1,)``,
hashing and equality with tuples, NumPy's ``np.zeros(shape)``. On top it has
TensorFlow's API: ``as_list()``, ``ndims``/``rank``, ``dims``, ``is_fully_defined()``,
``is_compatible_with``, ``merge_with``, ``concatenate``, ``with_rank``, ``num_elements()``,
slices that are shapes, and ``==`` with lists.

Indexing with an int gives the dim as TensorFlow 2 does (an int, or None when unknown),
but a known dim is a `Dimension`, an int subclass with TensorFlow 1's ``.value``, so
``x.shape[1].value`` works. An unknown dim stays None (code that checks
``shape[0] is None`` must keep working); ``tf.dimension_value(shape[0])`` or
``shape.as_list()[0]`` read either kind.

Two deliberate differences from TensorFlow, both so that tuple semantics stay intact:
``bool(shape)`` is False for a scalar's shape (a tuple's truth; TensorFlow says whether
the rank is known), and ``repr(shape[0])`` prints ``3``, not ``Dimension(3)`` (a dim
that reaches an op's attributes must print as the int it is, the IR text and its cache
key unchanged).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from ..errors import ShapeError

__all__ = ["Dimension", "TensorShape", "UnknownRankError", "as_dimension", "as_shape",
           "dimension_at_index", "dimension_value", "unknown_shape"]


class UnknownRankError(ShapeError):
    """The rank of a shape was needed and is unknown (a ValueError, as TensorFlow's for
    ``len``, iteration and ``as_list()`` of ``TensorShape(None)``). A v1 op function that
    needs its input's rank while the graph is built lets it through as a ShapeError
    naming the function and the user's line (`compat.v1.graph.in_default_graph`)."""


def _size(value: Any) -> int:
    """A known dim's size from an int-like `value`; TensorFlow's errors otherwise."""
    try:
        size = operator.index(value)
    except TypeError:
        raise TypeError(f"a dimension must be an int or None, got {value!r} "
                        f"({type(value).__name__})") from None
    if size < 0:
        raise ValueError(f"Dimension {size} must be >= 0")
    return size


class Dimension(int):
    """One known dim of a static shape (TensorFlow 1's ``tf.Dimension``): an int with
    ``.value``. ``Dimension(None)`` gives an `UnknownDimension`."""

    __slots__ = ()

    def __new__(cls, value: Any) -> Any:
        if value is None or isinstance(value, (Dimension, UnknownDimension)):
            return UNKNOWN if value is None else value
        return int.__new__(cls, _size(value))

    @property
    def value(self) -> int:
        """The size, as a plain int."""
        return int(self)

    def is_compatible_with(self, other: Any) -> bool:
        """Whether `other` (a size, None or a dimension) could be the same size."""
        other = as_dimension(other)
        return other.value is None or other.value == int(self)

    def assert_is_compatible_with(self, other: Any) -> None:
        """ValueError unless `other` is compatible with this dim."""
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self} and {as_dimension(other)} are not compatible")

    def merge_with(self, other: Any) -> Dimension:
        """The dim known from either (ValueError when they differ)."""
        self.assert_is_compatible_with(other)
        return self

    # Arithmetic as TensorFlow 1's: an unknown operand makes the result unknown; with ints
    # the result is a Dimension while it is a size (so ``(a * b).value`` works) and a
    # plain int when negative (internal code may subtract past zero).
    def _arith(self, other: Any, fn: Any) -> Any:
        if other is None or isinstance(other, UnknownDimension):
            return UNKNOWN
        if not isinstance(other, (int, np.integer)):
            return NotImplemented  # a float, a tensor ...: theirs to handle (int's result)
        result = fn(int(self), int(other))
        return int.__new__(Dimension, result) if result >= 0 else result

    def __add__(self, o: Any) -> Any: return self._arith(o, operator.add)
    def __radd__(self, o: Any) -> Any: return self._arith(o, lambda a, b: b + a)
    def __sub__(self, o: Any) -> Any: return self._arith(o, operator.sub)
    def __rsub__(self, o: Any) -> Any: return self._arith(o, lambda a, b: b - a)
    def __mul__(self, o: Any) -> Any: return self._arith(o, operator.mul)
    def __rmul__(self, o: Any) -> Any: return self._arith(o, lambda a, b: b * a)
    def __floordiv__(self, o: Any) -> Any: return self._arith(o, operator.floordiv)
    def __rfloordiv__(self, o: Any) -> Any: return self._arith(o, lambda a, b: b // a)
    def __mod__(self, o: Any) -> Any: return self._arith(o, operator.mod)
    def __rmod__(self, o: Any) -> Any: return self._arith(o, lambda a, b: b % a)

    # the int's own spelling: a dim that ends up in an op's attributes prints unchanged
    __repr__ = int.__repr__
    __str__ = int.__repr__

    def __reduce__(self) -> tuple:
        return (int, (int(self),))  # unpickles as the plain int it stands for

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        # NumPy 2 promotes a plain Python int weakly (float32 * 3 stays float32) but an int
        # subclass as int64 (float32 * dim was float64): in NumPy's arithmetic a dim is the
        # plain int it stands for, as TensorFlow 2's int dims are
        def plain(x: Any) -> Any:
            return int(x) if isinstance(x, Dimension) else x
        if "out" in kwargs:
            kwargs["out"] = tuple(plain(x) for x in kwargs["out"])
        return getattr(ufunc, method)(*(plain(x) for x in inputs), **kwargs)


class UnknownDimension:
    """A dim whose size is unknown until run time (TensorFlow 1's ``Dimension(None)``).
    Shapes hold None for it; this object is what ``tf.Dimension(None)``,
    ``TensorShape.dims`` and ``tf.dimension_at_index`` give."""

    __slots__ = ()
    value = None

    def is_compatible_with(self, other: Any) -> bool:
        """Always True: an unknown size is compatible with any."""
        as_dimension(other)
        return True

    def assert_is_compatible_with(self, other: Any) -> None:
        """Never raises for a valid dimension."""
        as_dimension(other)

    def merge_with(self, other: Any) -> Any:
        """`other` as a dimension (whatever it knows)."""
        return as_dimension(other)

    def _unknown(self, other: Any) -> Any:
        if other is None or isinstance(other, (int, UnknownDimension)):
            return UNKNOWN
        return NotImplemented

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _unknown
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _unknown

    def __eq__(self, other: Any) -> Any:
        # TensorFlow's: whether an unknown size equals anything is unknown (None)
        return None if other is None or isinstance(other, (int, UnknownDimension)) \
            else NotImplemented

    def __ne__(self, other: Any) -> Any:
        return self.__eq__(other)

    def __hash__(self) -> int:
        return hash(None)

    def __repr__(self) -> str:
        return "Dimension(None)"

    def __str__(self) -> str:
        return "?"

    def __reduce__(self) -> tuple:
        return (Dimension, (None,))


UNKNOWN = object.__new__(UnknownDimension)


def as_dimension(value: Any) -> Any:
    """`value` (an int, None or a dimension) as a `Dimension` or `UnknownDimension`."""
    return Dimension(value)


def dimension_value(dimension: Any) -> int | None:
    """The size of `dimension` (a `Dimension`, an int or None) as an int or None
    (TensorFlow's ``tf.compat.v1.dimension_value``)."""
    if isinstance(dimension, (Dimension, UnknownDimension)):
        return dimension.value
    return dimension


def dimension_at_index(shape: Any, index: int) -> Any:
    """Dim `index` of `shape` as a dimension object, unknown when the dim or the rank is
    (TensorFlow's ``tf.compat.v1.dimension_at_index``)."""
    shape = as_shape(shape)
    if shape.rank is None:
        return UNKNOWN
    return Dimension(tuple.__getitem__(shape, index))


def _dim_or_none(d: Any) -> int | None:
    if d is None or isinstance(d, UnknownDimension):
        return None
    return _size(d)


def _is_dim(d: Any) -> bool:
    """Whether `d` can be a dim of a shape (None, a size, a dimension object), judged
    without converting it (a tensor's __index__ would raise)."""
    if d is None or isinstance(d, (Dimension, UnknownDimension)):
        return True
    return isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0


def _plain_tuple(other: Any) -> bool:
    """A tuple (not a shape) with something that is no dim in it: ``+`` keeps it a tuple."""
    return isinstance(other, tuple) and not isinstance(other, TensorShape) and \
        not all(_is_dim(d) for d in other)


class TensorShape(tuple):
    """A static shape: a tuple of ints and None, with TensorFlow's ``TensorShape`` API.
    ``TensorShape(None)`` is a shape of unknown rank (it has no length and cannot be
    iterated, as in TensorFlow)."""

    __slots__ = ()

    def __new__(cls, dims: Any = ()) -> TensorShape:
        if dims is None or isinstance(dims, _UnknownRankShape):
            return _UNKNOWN_RANK
        if isinstance(dims, TensorShape) and type(dims) is cls:
            return dims
        if isinstance(dims, (Dimension, UnknownDimension)) or not isinstance(dims, Iterable):
            dims = (dims,)  # TensorShape(3) is the shape (3,), as in TensorFlow
        return tuple.__new__(cls, (_dim_or_none(d) for d in dims))

    @classmethod
    def _from_tuple(cls, dims: tuple) -> TensorShape:
        """A shape of already-normalised dims (an IR type's), without checking them."""
        return tuple.__new__(cls, dims)

    # -- queries ------------------------------------------------------------------------------

    @property
    def rank(self) -> int | None:
        """The number of dims (None when unknown)."""
        return tuple.__len__(self)

    @property
    def ndims(self) -> int | None:
        """The number of dims (None when unknown); TensorFlow 1's name for `rank`."""
        return self.rank

    @property
    def dims(self) -> list[Any] | None:
        """The dims as dimension objects (``.value`` is the size or None); None when the
        rank is unknown."""
        return [Dimension(d) for d in tuple.__iter__(self)]

    def as_list(self) -> list[int | None]:
        """The dims as a list of ints and None."""
        return list(tuple.__iter__(self))

    def is_fully_defined(self) -> bool:
        """Whether the rank and every dim are known."""
        return all(d is not None for d in tuple.__iter__(self))

    def num_elements(self) -> int | None:
        """The number of elements, None unless the shape is fully defined."""
        if not self.is_fully_defined():
            return None
        n = 1
        for d in tuple.__iter__(self):
            n *= d
        return n

    def is_compatible_with(self, other: Any) -> bool:
        """Whether a tensor could have both this shape and `other`."""
        other = as_shape(other)
        if self.rank is None or other.rank is None:
            return True
        return self.rank == other.rank and all(
            a is None or b is None or a == b
            for a, b in zip(tuple.__iter__(self), tuple.__iter__(other)))

    def assert_is_compatible_with(self, other: Any) -> None:
        """ValueError unless `other` is compatible with this shape."""
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are incompatible")

    def merge_with(self, other: Any) -> TensorShape:
        """The shape known from both (each dim from whichever knows it); ValueError when
        they are not compatible."""
        other = as_shape(other)
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        if self.rank is None:
            return other
        if other.rank is None:
            return self
        return TensorShape([a if a is not None else b
                            for a, b in zip(tuple.__iter__(self), tuple.__iter__(other))])

    def most_specific_compatible_shape(self, other: Any) -> TensorShape:
        """The most specific shape compatible with both: dims where they agree, None
        elsewhere (unknown rank when the ranks differ)."""
        other = as_shape(other)
        if self.rank is None or other.rank is None or self.rank != other.rank:
            return _UNKNOWN_RANK
        return TensorShape([a if a == b else None
                            for a, b in zip(tuple.__iter__(self), tuple.__iter__(other))])

    def concatenate(self, other: Any) -> TensorShape:
        """This shape's dims followed by `other`'s (unknown rank if either is)."""
        other = as_shape(other)
        if self.rank is None or other.rank is None:
            return _UNKNOWN_RANK
        return TensorShape._from_tuple(tuple(tuple.__iter__(self)) +
                                       tuple(tuple.__iter__(other)))

    def assert_has_rank(self, rank: int) -> None:
        """ValueError unless the rank is `rank` (or unknown)."""
        if self.rank not in (None, rank):
            raise ValueError(f"Shape {self} must have rank {rank}")

    def assert_same_rank(self, other: Any) -> None:
        """ValueError unless `other` has this shape's rank (or either is unknown)."""
        other = as_shape(other)
        if self.rank is not None and other.rank is not None and self.rank != other.rank:
            raise ValueError(f"Shapes {self} and {other} must have the same rank")

    def assert_is_fully_defined(self) -> None:
        """ValueError unless every dim is known."""
        if not self.is_fully_defined():
            raise ValueError(f"Shape {self} is not fully defined")

    def with_rank(self, rank: int) -> TensorShape:
        """This shape, known to have `rank` dims (ValueError when it cannot)."""
        try:
            return self.merge_with(unknown_shape(rank=rank))
        except ValueError:
            raise ValueError(f"Shape {self} must have rank {rank}") from None

    def with_rank_at_least(self, rank: int) -> TensorShape:
        """This shape (ValueError when its rank is known and below `rank`)."""
        if self.rank is not None and self.rank < rank:
            raise ValueError(f"Shape {self} must have rank at least {rank}")
        return self

    def with_rank_at_most(self, rank: int) -> TensorShape:
        """This shape (ValueError when its rank is known and above `rank`)."""
        if self.rank is not None and self.rank > rank:
            raise ValueError(f"Shape {self} must have rank at most {rank}")
        return self

    # -- the tuple's operators, TensorFlow's way ----------------------------------------------

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            return TensorShape._from_tuple(tuple.__getitem__(self, key))
        d = tuple.__getitem__(self, key)
        return None if d is None else int.__new__(Dimension, d)

    def __eq__(self, other: Any) -> bool:
        # TensorFlow's: equal to anything that converts to the same dims (lists included);
        # a tuple of other things compares as tuples do
        if not isinstance(other, TensorShape):
            if not isinstance(other, (tuple, list)):
                return NotImplemented
            if not all(_is_dim(d) for d in other):
                return isinstance(other, tuple) and tuple.__eq__(self, other)
            other = TensorShape(other)
        if (self.rank is None) != (other.rank is None):
            return False
        return tuple.__eq__(self, other)

    def __ne__(self, other: Any) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = tuple.__hash__  # equal to the tuple of its dims, so it hashes as that tuple

    # ``+`` concatenates, as TensorFlow's; with a plain tuple holding what is no dim (a
    # reshape target's -1, a tensor) it stays the tuple concatenation it always was.
    def __add__(self, other: Any) -> Any:
        if _plain_tuple(other) and self.rank is not None:
            return tuple(tuple.__iter__(self)) + other
        return self.concatenate(other)

    def __radd__(self, other: Any) -> Any:
        if _plain_tuple(other) and self.rank is not None:
            return other + tuple(tuple.__iter__(self))
        return as_shape(other).concatenate(self)

    def __repr__(self) -> str:
        return f"TensorShape({list(tuple.__iter__(self))})"

    def __str__(self) -> str:
        return tuple.__repr__(self)  # TensorFlow's: (None, 3), (5,), ()

    def __reduce__(self) -> tuple:
        return (TensorShape, (list(tuple.__iter__(self)),))


class _UnknownRankShape(TensorShape):
    """`TensorShape(None)`: no length, no dims, no iteration (each a ValueError, as in
    TensorFlow); stored as an empty tuple, so it must never pass for a scalar's shape."""

    __slots__ = ()

    @property
    def rank(self) -> None:
        return None

    @property
    def dims(self) -> None:
        return None

    def as_list(self) -> list[int | None]:
        raise UnknownRankError("as_list() is not defined on an unknown TensorShape.")

    def is_fully_defined(self) -> bool:
        return False

    def __len__(self) -> int:
        raise UnknownRankError("Cannot take the length of shape with unknown rank.")

    def __iter__(self) -> Iterator[Any]:
        raise UnknownRankError("Cannot iterate over a shape with unknown rank.")

    def __getitem__(self, key: Any) -> Any:
        return self if isinstance(key, slice) else None

    def __bool__(self) -> bool:
        return False

    def __eq__(self, other: Any) -> bool:
        if other is None:
            return False
        return TensorShape.__eq__(self, other)

    def __hash__(self) -> int:
        return hash(("TensorShape", None))

    def __repr__(self) -> str:
        return "TensorShape(None)"

    def __str__(self) -> str:
        return "<unknown>"

    def __reduce__(self) -> tuple:
        return (TensorShape, (None,))


_UNKNOWN_RANK = tuple.__new__(_UnknownRankShape, ())


def as_shape(shape: Any) -> TensorShape:
    """`shape` (a TensorShape, list, tuple, int or None) as a `TensorShape`."""
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def unknown_shape(rank: int | None = None, **kwargs: Any) -> TensorShape:
    """A shape of `rank` unknown dims, or of unknown rank (TensorFlow's
    ``tf.TensorShape(None)``/``unknown_shape``)."""
    if "ndims" in kwargs:  # TensorFlow 1's spelling of `rank`
        rank = kwargs.pop("ndims")
    if kwargs:
        raise TypeError(f"unknown_shape() got unexpected arguments {sorted(kwargs)}")
    return _UNKNOWN_RANK if rank is None else TensorShape._from_tuple((None,) * rank)


def from_static(dims: tuple | None) -> TensorShape:
    """An IR type's shape (a tuple of ints and None; None: an unknown rank) as the
    `TensorShape` users see."""
    return _UNKNOWN_RANK if dims is None else TensorShape._from_tuple(dims)
