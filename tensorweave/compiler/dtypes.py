"""Element types of tensors.

Each `DType` is a singleton with TensorFlow's name (``name``: ``'float32'``), a short IR
name (``ir_name``: ``'f32'``, the spelling of the IR text, kernel names and cache keys),
the matching NumPy dtype and its category. ``bf16`` uses the ``ml_dtypes`` extension
type, the same one JAX uses, so bfloat16 arrays are ordinary NumPy arrays.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from ..errors import DTypeError


class DType:
    """An element type: ``tw.float32`` and friends. Compare with ``is`` or ``==``.

    ``name`` is TensorFlow's (``'float32'``, ``'int64'``, ``'bool'``), so user code such as
    ``if x.dtype.name == 'float32':`` means what it does in TensorFlow; tensorweave's own
    code spells dtypes with ``ir_name`` (``'f32'``), the IR's text. ``str(dtype)`` is
    TensorFlow's ``"<dtype: 'float32'>"`` (the printer, parser and cache keys use
    ``ir_name`` explicitly)."""

    __slots__ = ("ir_name", "np", "kind", "bits", "name")

    def __init__(self, ir_name: str, np_dtype: Any, kind: str, bits: int, name: str) -> None:
        self.ir_name = ir_name
        self.np = np.dtype(np_dtype)
        self.kind = kind  # 'float', 'int', 'uint', 'bool' or 'string'
        self.bits = bits
        self.name = name

    @property
    def tf_name(self) -> str:
        """TensorFlow's name (the same as `name`)."""
        return self.name

    @property
    def is_floating(self) -> bool:
        return self.kind == "float"

    @property
    def is_integer(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def itemsize(self) -> int:
        return self.np.itemsize

    @property
    def as_numpy_dtype(self) -> type:
        """The NumPy scalar type (TensorFlow's spelling)."""
        return self.np.type

    # -- the rest of TensorFlow's DType API that TensorFlow 1 programs use ----------------

    @property
    def base_dtype(self) -> DType:
        """This dtype (TensorFlow 1's reference dtypes do not exist here)."""
        return self

    @property
    def real_dtype(self) -> DType:
        """This dtype (there are no complex dtypes)."""
        return self

    @property
    def size(self) -> int:
        """Bytes per element."""
        return self.np.itemsize

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "uint"

    @property
    def is_string(self) -> bool:
        """Whether this is `string`: byte strings, held on the host only."""
        return self.kind == "string"

    is_complex = False
    is_quantized = False
    is_numpy_compatible = True

    @property
    def min(self) -> Any:
        """The smallest value (a NumPy scalar for floats, an int for integers)."""
        return self._limit("minimum", lambda info: info.min)

    @property
    def max(self) -> Any:
        """The largest value (a NumPy scalar for floats, an int for integers)."""
        return self._limit("maximum", lambda info: info.max)

    def _limit(self, what: str, pick: Any) -> Any:
        if self.is_bool or self.is_string:
            raise TypeError(f"Cannot find {what} value of {self!r}.")
        if self.is_floating:
            return self.np.type(pick(ml_dtypes.finfo(self.np)))
        return int(pick(np.iinfo(self.np)))

    @property
    def as_datatype_enum(self) -> int:
        """TensorFlow's DataType number (DT_FLOAT is 1)."""
        return _DATATYPE_ENUM[self.name]

    def is_compatible_with(self, other: Any) -> bool:
        """Whether `other` (anything `as_dtype` takes) is this dtype."""
        return as_dtype(other) is self

    def __eq__(self, other: object) -> bool:
        # TensorFlow's: a dtype equals a name or NumPy type of it ('float32', np.float32,
        # np.dtype('float32')); by identity alone, `x.dtype == np.float32` was silently False
        if isinstance(other, DType) or other is None:
            return self is other
        if not isinstance(other, (str, type, np.dtype)):
            return NotImplemented
        try:
            return as_dtype(other) is self
        except DTypeError:
            return False

    __hash__ = object.__hash__  # by identity, as before (dicts and sets of dtypes)

    def __repr__(self) -> str:
        return f"tw.{self.tf_name}"

    def __str__(self) -> str:
        return f"<dtype: '{self.name}'>"

    def __reduce__(self) -> tuple:
        return (as_dtype, (self.ir_name,))


float16 = DType("f16", np.float16, "float", 16, "float16")
bfloat16 = DType("bf16", ml_dtypes.bfloat16, "float", 16, "bfloat16")
float32 = DType("f32", np.float32, "float", 32, "float32")
float64 = DType("f64", np.float64, "float", 64, "float64")
int8 = DType("i8", np.int8, "int", 8, "int8")
int16 = DType("i16", np.int16, "int", 16, "int16")
int32 = DType("i32", np.int32, "int", 32, "int32")
int64 = DType("i64", np.int64, "int", 64, "int64")
uint8 = DType("u8", np.uint8, "uint", 8, "uint8")
bool_ = DType("i1", np.bool_, "bool", 1, "bool")
# Byte strings (TensorFlow's tf.string): NumPy object arrays of `bytes`, host values only.
# Not in ALL_DTYPES: no numeric op takes them, no code generator sees them (the cpu step
# planner and the gpu target refuse them); the ops that take or give strings
# (tensorweave/io) have reference kernels only, so they run on the host.
string = DType("string", np.object_, "string", 0, "string")

# TensorFlow's types.proto numbers
_DATATYPE_ENUM = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
                  "int64": 9, "bool": 10, "bfloat16": 14, "float16": 19, "string": 7}

ALL_DTYPES: tuple[DType, ...] = (float16, bfloat16, float32, float64, int8, int16, int32,
                                 int64, uint8, bool_)
FLOAT_DTYPES = tuple(d for d in ALL_DTYPES if d.is_floating)
INT_DTYPES = tuple(d for d in ALL_DTYPES if d.is_integer)
NUMERIC_DTYPES = FLOAT_DTYPES + INT_DTYPES

_BY_NAME: dict[str, DType] = {}
for _d in (*ALL_DTYPES, string):
    _BY_NAME[_d.ir_name] = _d
    _BY_NAME[_d.name] = _d
_BY_NAME.update({"float": float32, "double": float64, "half": float16, "int": int32,
                 "bool": bool_, "i1": bool_})
_BY_NUMPY: dict[np.dtype, DType] = {d.np: d for d in (*ALL_DTYPES, string)}


def string_array(arr: np.ndarray) -> np.ndarray:
    """`arr`, an array of text, as tensorweave holds strings: an object array of `bytes`
    (NumPy ``'S'``/``'U'`` arrays converted, `str` elements UTF-8 encoded, as TensorFlow
    encodes them). An object array holding anything else is a `DTypeError`."""
    if arr.dtype.kind in "SU":
        out = arr.astype(object)
    else:
        out = arr
    flat = out.reshape(-1)
    if all(type(x) is bytes for x in flat):
        return out
    if out is arr:
        out = arr.copy()
        flat = out.reshape(-1)
    for i, x in enumerate(flat):
        if isinstance(x, str):
            flat[i] = x.encode("utf-8")
        elif isinstance(x, (bytes, np.bytes_)):
            flat[i] = bytes(x)
        else:
            where = [int(k) for k in np.unravel_index(i, arr.shape)] if arr.ndim else []
            raise DTypeError(f"an object array is a string tensor only when every element is "
                             f"bytes or str; element {where} is the "
                             f"{type(x).__name__} {x!r}")
    return out


def native_byte_order(arr: np.ndarray) -> np.ndarray:
    """`arr` in this machine's byte order: a big-endian array (NumPy's ``'>f4'``, as read
    from a file written elsewhere) converted by value (a copy), any other returned as
    is. Every entry point of user arrays (constants, feeds, assignments, compiled
    functions' arguments) calls it: kernels and native code read raw native-order
    bytes, and `as_dtype` refuses a swapped dtype, so a missed entry fails loudly.
    Arrays of text (object, ``'S'``, ``'U'``) come back as `string_array` makes them."""
    if arr.dtype.kind in "OSU":
        return string_array(arr)
    return arr if arr.dtype.isnative else arr.astype(arr.dtype.newbyteorder("="))


def as_dtype(value: Any) -> DType:
    """Convert a DType, IR name (``"f32"``), TensorFlow name (``"float32"``, ``"float"``),
    NumPy dtype or Python type into a `DType`."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        try:
            return _BY_NAME[value]
        except KeyError:
            raise DTypeError(f"unknown dtype {value!r}; expected one of "
                             f"{', '.join(d.ir_name for d in ALL_DTYPES)}") from None
    if value is float:
        return float32
    if value is int:
        return int32
    if value is bool:
        return bool_
    try:
        npd = np.dtype(value)
    except TypeError:
        raise DTypeError(f"cannot interpret {value!r} as a dtype") from None
    if npd.kind in "SU":  # (TensorFlow's: NumPy bytes and str arrays are string tensors)
        return string
    try:
        return _BY_NUMPY[npd]
    except KeyError:
        raise DTypeError(f"NumPy dtype {npd} has no tensorweave equivalent") from None
