"""``tw.bitwise``: integer bitwise operations with TensorFlow's names (``tf.bitwise``):
`bitwise_and`, `bitwise_or`, `bitwise_xor`, `invert`, `left_shift`, `right_shift`. The
Tensor operators ``& | ^ ~ << >>`` call these on integer tensors (``& | ^ ~`` are logical
on bool tensors). Shifts by a negative amount or by at least the bit width follow NumPy:
see docs/api.md ("tw.bitwise")."""

from .frontend.ops.bitwise import *  # noqa: F403
from .frontend.ops.bitwise import __all__ as _bitwise_all

__all__ = list(_bitwise_all)


def __dir__() -> list[str]:
    return sorted(__all__)
