"""`tw.experimental.dlpack`: TensorFlow's DLPack functions.

    capsule = tw.experimental.dlpack.to_dlpack(t)      # a "dltensor" PyCapsule
    t = tw.experimental.dlpack.from_dlpack(capsule)    # or any object with __dlpack__

Most code needs neither: an `EagerTensor` implements ``__dlpack__`` itself (so
``torch.from_dlpack(t)`` and ``np.from_dlpack(t)`` read it without a copy), and
``tw.compile`` functions take PyTorch, JAX or any DLPack producer as arguments without a
copy. A tensor made by `from_dlpack` owns a copy, because tensors are immutable and the
producer could otherwise change it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DTypeError
from ..frontend.building import user_location
from ..frontend.tensor import EagerTensor


class _Capsule:
    """A bare DLPack capsule dressed as a producer, so ``np.from_dlpack`` takes it."""

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __dlpack__(self, **_: Any) -> Any:
        capsule, self._capsule = self._capsule, None
        if capsule is None:
            raise BufferError("a DLPack capsule can be consumed only once")
        return capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # the CPU; a capsule of another device fails when NumPy reads it


def to_dlpack(tensor: Any) -> Any:
    """A DLPack capsule (``"dltensor"``, the pre-1.0 protocol TensorFlow uses) of `tensor`
    (an eager tensor or an array). Its consumer may write to it, so an eager tensor, which
    is immutable, is exported as a copy; a writeable NumPy array is shared."""
    if isinstance(tensor, EagerTensor):
        return tensor.__dlpack__()
    return np.asarray(tensor).__dlpack__()


def from_dlpack(dlcapsule: Any) -> EagerTensor:
    """An eager tensor holding the values of a DLPack capsule or of any object with
    ``__dlpack__`` (a PyTorch or JAX CPU tensor, a NumPy array). Only CPU data can be
    read: another device is a BufferError naming it."""
    if hasattr(dlcapsule, "__dlpack__"):
        source = dlcapsule
    elif type(dlcapsule).__name__ == "PyCapsule":
        if '"used_' in repr(dlcapsule):  # DLPack renames a capsule once it is consumed
            raise BufferError("from_dlpack: this DLPack capsule was consumed already (a "
                              "capsule can be read once)")
        source = _Capsule(dlcapsule)
    else:
        loc = user_location()
        raise DTypeError(f"expected a DLPack capsule or an object with __dlpack__, got "
                         f"{type(dlcapsule).__name__}", op="from_dlpack",
                         location=str(loc) if loc else None)
    try:
        array = np.from_dlpack(source)
    except (BufferError, RuntimeError, TypeError, ValueError) as e:
        raise BufferError(f"from_dlpack: cannot read {type(dlcapsule).__name__} on the host "
                          f"({e}); only CPU tensors are supported") from None
    # np.from_dlpack gives a view of the producer's memory, read-only for a capsule or a
    # read-only export, and EagerTensor keeps read-only arrays as they are: copy here, or
    # the producer's owner writing to it later would change this (immutable) tensor
    owned = np.array(array, copy=True)
    owned.flags.writeable = False
    return EagerTensor(owned)


__all__ = ["from_dlpack", "to_dlpack"]
