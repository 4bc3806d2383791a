"""Helpers shared by type-inference functions: broadcasting, dtype checks, axes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ...errors import DTypeError, ShapeError
from ..dtypes import DType
from ..types import ResourceType, TensorType, Type, format_shape

Dim = int | None


def expect_tensor(t: Type, role: str) -> TensorType:
    """`t` as a TensorType, or a clear error naming the operand `role`."""
    if not isinstance(t, TensorType):
        raise DTypeError(f"{role} must be a tensor, got {t}")
    return t


def expect_resource(t: Type, role: str = "resource") -> ResourceType:
    if not isinstance(t, ResourceType):
        raise DTypeError(f"{role} must be a resource handle, got {t}")
    return t


def check_dtype(t: TensorType, allowed: Iterable[DType] | Callable[[DType], bool], role: str,
                what: str = "") -> None:
    """Raise DTypeError unless ``t.dtype`` is allowed."""
    if callable(allowed):
        ok = allowed(t.dtype)
        names = what
    else:
        allowed = tuple(allowed)
        ok = t.dtype in allowed
        names = what or ", ".join(d.ir_name for d in allowed)
    if not ok:
        raise DTypeError(f"{role} has dtype {t.dtype.ir_name}, expected {names}")


def same_dtype(types: Sequence[TensorType], roles: Sequence[str]) -> DType:
    """The common dtype of `types`; a clear error when they differ (no implicit promotion)."""
    first = types[0].dtype
    for t in types[1:]:
        if t.dtype is not first:
            desc = ", ".join(f"{role} is {tt}" for tt, role in zip(types, roles))
            raise DTypeError(f"operands must have the same dtype: {desc}; "
                             f"use tw.cast to convert one")
    return first


def broadcast_dim(a: Dim, b: Dim) -> Dim:
    if a == 1:
        return b
    if b == 1:
        return a
    if a is None:
        return b
    if b is None:
        return a
    if a != b:
        raise ValueError
    return a


def broadcast_shapes(*shapes: Sequence[Dim]) -> tuple[Dim, ...]:
    """NumPy broadcasting of shapes whose dims may be unknown."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[Dim] = [1] * rank
    for s in shapes:
        padded = (1,) * (rank - len(s)) + tuple(s)
        for i, d in enumerate(padded):
            try:
                out[i] = broadcast_dim(out[i], d)
            except ValueError:
                raise ShapeError("shapes cannot be broadcast together: " +
                                 " vs ".join(format_shape(x) for x in shapes)) from None
    return tuple(out)


def normalize_axis(axis: int, rank: int, role: str = "axis") -> int:
    """Map a possibly negative axis into ``range(rank)``."""
    if not -rank <= axis < max(rank, 1) or (rank == 0 and axis not in (0, -1)):
        raise ShapeError(f"{role} {axis} is out of range for a tensor of rank {rank}")
    return axis % rank if rank else 0


def normalize_axes(axes: Sequence[int] | None, rank: int) -> tuple[int, ...]:
    """Normalise a list of axes (None: all axes); rejects duplicates."""
    if axes is None:
        return tuple(range(rank))
    out = tuple(sorted(normalize_axis(a, rank) for a in axes))
    if len(set(out)) != len(out):
        raise ShapeError(f"duplicate axes in {list(axes)}")
    return out
