"""Integer bitwise ops (TensorFlow's ``tf.bitwise``): BitwiseAnd, BitwiseOr, BitwiseXor,
Invert, LeftShift, RightShift.

Integer dtypes only (i8, i16, i32, i64, u8); both operands of a binary op have the same
dtype and broadcast like NumPy (the conventions of `math.py`, whose declarers these reuse).

Shifts by an amount outside ``[0, bits)`` (negative, or at least the bit width) are
implementation-defined in TensorFlow and poison in LLVM; here they are defined as in
NumPy: ``x << y`` is 0, and ``x >> y`` fills with the sign (-1 for negative signed x, 0
otherwise). RightShift is arithmetic for signed dtypes and logical for unsigned ones.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import INT_DTYPES
from .math import _declare_binary, _declare_unary

_INT = (INT_DTYPES, "an integer dtype (i8, i16, i32, i64, u8)")


def _shift_in_range(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Where ``0 <= y < bits`` (the shifts C and LLVM define)."""
    return (y >= 0) & (y < x.dtype.itemsize * 8)


def _left_shift(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    ok = _shift_in_range(x, y)
    # shift by 0 where out of range so NumPy never sees an undefined shift, then zero it
    shifted = np.left_shift(x, np.where(ok, y, np.zeros((), y.dtype)))
    return np.where(ok, shifted, np.zeros((), x.dtype))


def _right_shift(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    ok = _shift_in_range(x, y)
    # out of range: a shift by bits - 1 fills with the sign bit (-1 or 0); unsigned
    # values shifted that far keep their top bit, so they are zeroed instead
    top = np.asarray(x.dtype.itemsize * 8 - 1).astype(y.dtype)
    shifted = np.right_shift(x, np.where(ok, y, top))
    if x.dtype.kind == "u":
        return np.where(ok, shifted, np.zeros((), x.dtype))
    return shifted


BitwiseAnd = _declare_binary("BitwiseAnd", np.bitwise_and, _INT,
                             "Elementwise bitwise x & y of integers.", commutative=True)
BitwiseOr = _declare_binary("BitwiseOr", np.bitwise_or, _INT,
                            "Elementwise bitwise x | y of integers.", commutative=True)
BitwiseXor = _declare_binary("BitwiseXor", np.bitwise_xor, _INT,
                             "Elementwise bitwise x ^ y of integers.", commutative=True)
Invert = _declare_unary("Invert", np.invert, _INT,
                        "Elementwise bitwise complement ~x of integers.")
LeftShift = _declare_binary("LeftShift", _left_shift, _INT,
                            "Elementwise x << y of integers; 0 where y < 0 or y >= the bit "
                            "width (NumPy's rule).")
RightShift = _declare_binary("RightShift", _right_shift, _INT,
                             "Elementwise x >> y of integers (arithmetic for signed, logical "
                             "for unsigned); where y < 0 or y >= the bit width, the sign "
                             "fill: -1 for negative x, else 0 (NumPy's rule).")
