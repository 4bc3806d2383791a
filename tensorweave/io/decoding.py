"""``tw.io.decode_raw`` and ``tw.io.decode_csv``: string tensors to numbers, on the host.

Both ops take a string tensor and give numeric (or string) tensors; they have reference
kernels only, so they run on the host and what follows them runs compiled (the package
docstring of `tensorweave.io`).

CSV fields are read as TensorFlow's ``DecodeCSV`` reads them: a field in double quotes
may hold the delimiter and ``""`` for a quote (with `use_quote_delim`); an unquoted field
may not hold a quote, CR or LF; an empty field or `na_value` takes the column's default,
and a column without one is required. Numbers may have spaces around them; integers
are decimal and must fit their dtype; floats take a sign, decimals with an exponent,
``inf``/``infinity``/``nan`` in any case and C99 hex floats, rounded once, to nearest,
to float32 or float64.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

import numpy as np

from ..compiler.dtypes import (
    DType,
    as_dtype,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    string,
    uint8,
)
from ..compiler.registry import attr, def_op, not_differentiable
from ..compiler.types import TensorType
from ..errors import DTypeError, InvalidArgumentError, ShapeError
from ..frontend.building import apply_op, apply_op1, convert_to_tensor, python_array
from ..frontend.call_site import user_location
from ..frontend.tensor import EagerTensor

# ------------------------------------------------------------------------ DecodeRaw

RAW_TYPES = (float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8, bool_)

DecodeRaw = def_op(
    "DecodeRaw", ["bytes"], {"out_type": attr("dtype"), "little_endian": attr("bool", True),
                             "fixed_length": attr("int", 0)},
    doc="Reinterpret each string's bytes as a vector of `out_type` (little- or big-endian). "
        "Without `fixed_length` every string must have the same length; with it each is "
        "cut or zero-padded to `fixed_length` bytes.")
not_differentiable("DecodeRaw")


def _string_operand(t: Any, role: str) -> TensorType:
    if not isinstance(t, TensorType) or not t.dtype.is_string:
        raise DTypeError(f"{role} must be a string tensor, got {t}")
    return t


@DecodeRaw.infer
def _decode_raw_infer(b: TensorType, *, out_type: DType, little_endian: bool,
                      fixed_length: int) -> TensorType:
    _string_operand(b, "bytes")
    if out_type not in RAW_TYPES:
        raise DTypeError(f"out_type {out_type.name} is not one decode_raw makes "
                         f"({', '.join(d.name for d in RAW_TYPES)})")
    size = out_type.np.itemsize
    if fixed_length and fixed_length % size:
        raise InvalidArgumentError(f"fixed_length ({fixed_length}) must be a multiple of the "
                                   f"size of out_type ({size})")
    return TensorType(out_type, b.shape + ((fixed_length // size) if fixed_length else None,))


@DecodeRaw.kernel("reference")
def _decode_raw_kernel(b: np.ndarray, *, out_type: DType, little_endian: bool,
                       fixed_length: int) -> np.ndarray:
    flat = list(b.reshape(-1))
    size = out_type.np.itemsize
    if fixed_length:
        data = b"".join(s[:fixed_length].ljust(fixed_length, b"\0") for s in flat)
        width = fixed_length
    else:
        width = len(flat[0]) if flat else 0
        for i, s in enumerate(flat):
            if len(s) != width:
                raise InvalidArgumentError(f"DecodeRaw requires input strings to all be the "
                                           f"same size, but element {i} has size {len(s)} != "
                                           f"{width} (element 0's)")
        if width % size:
            raise InvalidArgumentError(f"Input to DecodeRaw has length {width} that is not a "
                                       f"multiple of {size}, the size of {out_type.name}")
        data = b"".join(flat)
    if out_type is bool_:
        values = np.frombuffer(data, np.uint8) != 0  # (any nonzero byte is true)
    else:
        stored = out_type.np.newbyteorder("<" if little_endian else ">")
        values = np.frombuffer(data, stored).astype(out_type.np)
    return values.reshape(b.shape + (width // size,))


def _where() -> str | None:
    loc = user_location()
    return None if loc is None else str(loc)


def decode_raw(input_bytes: Any, out_type: Any, little_endian: bool = True,
               fixed_length: int | None = None, name: str | None = None) -> Any:
    """Reinterpret the bytes of each string of `input_bytes` as a vector of `out_type`:
    the result has shape ``input_bytes.shape + [n]``. Every string must have the same
    length (a multiple of the dtype's size), unless `fixed_length` gives one length to
    which each is cut or zero-padded."""
    dtype = as_dtype(out_type)
    t = convert_to_tensor(input_bytes, dtype_hint=string)
    if not t.dtype.is_string:
        raise DTypeError(f"input_bytes must be a string tensor, got {t.dtype.name}",
                         op="tw.io.decode_raw", location=_where())
    return apply_op1("DecodeRaw", [t], {"out_type": dtype, "little_endian": bool(little_endian),
                                        "fixed_length": int(fixed_length or 0)},
                     name=name, default_name="DecodeRaw")


# ------------------------------------------------------------------------ DecodeCSV

CSV_TYPES = (float32, float64, int32, int64, string)

DecodeCSV = def_op(
    "DecodeCSV", ["records", "*record_defaults"],
    {"field_delim": attr("str", ","), "use_quote_delim": attr("bool", True),
     "na_value": attr("str", ""), "select_cols": attr("ints", ())},
    doc="Split each CSV record into fields and convert field i to record_defaults[i]'s "
        "dtype; an empty field (or na_value) takes that default (a required column has an "
        "empty default). Output i has the records' shape.")
not_differentiable("DecodeCSV")


@DecodeCSV.infer
def _decode_csv_infer(records: TensorType, *defaults: TensorType, field_delim: str,
                      use_quote_delim: bool, na_value: str, select_cols: tuple) -> list:
    _string_operand(records, "records")
    out = []
    for i, d in enumerate(defaults):
        if d.dtype not in CSV_TYPES:
            raise DTypeError(f"record_defaults[{i}] has dtype {d.dtype.name}; a CSV column is "
                             f"{', '.join(x.name for x in CSV_TYPES)}")
        if d.rank > 1 or (d.num_elements is not None and d.num_elements > 1):
            raise ShapeError(f"There should only be 1 default per field but field {i} has "
                             f"{d.num_elements}")
        out.append(TensorType(d.dtype, records.shape))
    return out


_SPACE = " \t\n\v\f\r"  # C's isspace, what TensorFlow's number parsers skip
_INT = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_HEX = re.compile(r"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)([pP][+-]?[0-9]+)?")
_WORDS = re.compile(r"[+-]?(inf|infinity|nan)", re.IGNORECASE)


def _parse_int(text: str, dtype: DType) -> int | None:
    s = text.strip(_SPACE)
    if not _INT.fullmatch(s):
        return None
    v = int(s)
    info = np.iinfo(dtype.np)
    return v if info.min <= v <= info.max else None


def _parse_float(text: str, dtype: DType) -> Any:
    s = text.strip(_SPACE)
    if _DECIMAL.fullmatch(s):
        double = float(s)
        if dtype is float64:
            return double
        return _to_float32(s, double)
    if _HEX.fullmatch(s):
        sign = -1.0 if s.startswith("-") else 1.0
        body = s.lstrip("+-")
        body = body if "p" in body.lower() else body + "p0"
        try:
            double = sign * float.fromhex(body)
        except OverflowError:
            double = sign * math.inf
        return double if dtype is float64 else np.float32(double)
    if _WORDS.fullmatch(s):
        return float(s)
    return None


def _to_float32(text: str, double: float) -> np.float32:
    """The float32 nearest the decimal `text`, rounded once: rounding `double` (the double
    nearest it) again can be off by one ulp when `double` falls exactly halfway between
    two float32s while the decimal does not; then the exact decimal decides. (Infinity
    counts as 2**128 here, the float32 after the largest finite one.)"""
    with np.errstate(over="ignore"):
        single = np.float32(double)
    if not math.isfinite(double) or float(single) == double:
        return single
    toward = np.float32(math.inf if double > float(single) else -math.inf)
    other = np.nextafter(single, toward) if np.isfinite(single) else \
        np.float32(math.copysign(np.finfo(np.float32).max, double))

    def exact(f: np.float32) -> Fraction:
        return Fraction(math.copysign(2.0 ** 128, f)) if np.isinf(f) else Fraction(float(f))

    midpoint = (exact(single) + exact(other)) / 2  # (Fractions: exact, unlike Decimal's)
    if Fraction(double) != midpoint:
        return single
    value = Fraction(text)
    if value == midpoint:
        return single  # (a true tie: NumPy rounded it to even already)
    nearer_other = (value > midpoint) == (exact(other) > exact(single))
    return other if nearer_other else single


def split_record(record: bytes, delim: bytes, use_quote_delim: bool) -> list[bytes]:
    """The fields of one CSV record (TensorFlow's ``DecodeCSV`` rules, module docstring)."""
    fields: list[bytes] = []
    n = len(record)
    if n == 0:
        return fields
    i = 0
    while True:
        if use_quote_delim and record[i:i + 1] == b'"':
            out = bytearray()
            i += 1
            while True:
                q = record.find(b'"', i)
                if q < 0:
                    raise InvalidArgumentError("Quoted field has to end with quote followed by "
                                               "delim or end")
                out += record[i:q]
                if record[q + 1:q + 2] == b'"':
                    out += b'"'
                    i = q + 2
                    continue
                i = q + 1
                break
            fields.append(bytes(out))
            if i == n:
                return fields
            if record[i:i + 1] != delim:
                raise InvalidArgumentError("Quote inside a string has to be escaped by "
                                           "another quote")
            i += 1
            if i == n:
                fields.append(b"")
                return fields
            continue
        d = record.find(delim, i)
        end = n if d < 0 else d
        field = record[i:end]
        if (use_quote_delim and b'"' in field) or b"\r" in field or b"\n" in field:
            raise InvalidArgumentError("Unquoted fields cannot have quotes/CRLFs inside")
        fields.append(field)
        if d < 0:
            return fields
        i = d + 1
        if i == n:
            fields.append(b"")
            return fields


@DecodeCSV.kernel("reference")
def _decode_csv_kernel(records: np.ndarray, *defaults: np.ndarray, field_delim: str,
                       use_quote_delim: bool, na_value: str, select_cols: tuple) -> list:
    dtypes = [as_dtype(d.dtype) for d in defaults]
    outs = [np.empty(records.shape, d.np) for d in dtypes]
    flat_outs = [o.reshape(-1) for o in outs]
    delim = field_delim.encode("utf-8")
    na = na_value.encode("utf-8")
    ncols = len(defaults)
    for r, record in enumerate(records.reshape(-1)):
        fields = split_record(record, delim, use_quote_delim)
        if select_cols:
            if len(fields) <= select_cols[-1]:
                found = sum(c < len(fields) for c in select_cols)  # (TensorFlow's count)
                raise InvalidArgumentError(f"Expect {ncols} fields but have {found} in "
                                           f"record {r}")
            fields = [fields[c] for c in select_cols]
        elif len(fields) != ncols:
            raise InvalidArgumentError(f"Expect {ncols} fields but have {len(fields)} in "
                                       f"record {r}")
        for f, (text, dtype, default) in enumerate(zip(fields, dtypes, defaults)):
            if text == b"" or text == na:
                if default.size == 0:
                    raise InvalidArgumentError(f"Field {f} is required but missing in record "
                                               f"{r}!")
                flat_outs[f][r] = default.reshape(-1)[0]
                continue
            if dtype is string:
                flat_outs[f][r] = text
                continue
            decoded = text.decode("utf-8", "replace")
            value = _parse_int(decoded, dtype) if dtype.is_integer else \
                _parse_float(decoded, dtype)
            if value is None:
                kind = {float32: "float", float64: "double"}.get(dtype, dtype.name)
                raise InvalidArgumentError(f"Field {f} in record {r} is not a valid {kind}: "
                                           f"{decoded}")
            flat_outs[f][r] = value
    return outs


def _csv_default(value: Any, i: int) -> Any:
    """A record default as the op takes it: a tensor (kept), or a Python/NumPy value of
    at most one element (TensorFlow's defaults: int32, float32, string)."""
    if isinstance(value, EagerTensor) or hasattr(value, "_as_tensor") or \
            type(value).__name__ == "Tensor":
        return convert_to_tensor(value)
    if isinstance(value, (np.ndarray, np.generic)):
        return convert_to_tensor(np.asarray(value).reshape(-1))
    arr = python_array(value, None).reshape(-1)
    return convert_to_tensor(arr)


def decode_csv(records: Any, record_defaults: Any, field_delim: str = ",",
               use_quote_delim: bool = True, name: str | None = None, na_value: str = "",
               select_cols: Any = None) -> list[Any]:
    """Convert CSV `records` (a string tensor of any shape) to one tensor per column, each
    of the records' shape. ``record_defaults[i]`` sets column i's dtype (float32,
    float64, int32, int64 or string) and its default for empty fields: ``[0.0]``, or an
    empty list / tensor for a required column. `select_cols` picks columns (sorted
    indices) of longer records."""
    where = {"op": "tw.io.decode_csv", "location": _where()}
    t = convert_to_tensor(records, dtype_hint=string)
    if not t.dtype.is_string:
        raise DTypeError(f"records must be a string tensor, got {t.dtype.name}", **where)
    if len(field_delim.encode("utf-8")) != 1:
        raise InvalidArgumentError(f"field_delim must be one byte, got {field_delim!r}", **where)
    defaults = []
    for i, d in enumerate(record_defaults):
        if isinstance(d, (list, tuple)) and len(d) == 0:
            raise InvalidArgumentError(
                f"record_defaults[{i}] is an empty list, which gives no dtype: give an empty "
                f"tensor of the column's dtype (tw.constant([], tw.float32)) for a required "
                f"column", **where)
        try:
            defaults.append(_csv_default(d, i))
        except DTypeError as e:
            raise DTypeError(f"record_defaults[{i}]: {e.message}", **where) from None
    cols = tuple(int(c) for c in select_cols) if select_cols is not None else ()
    if cols:
        if list(cols) != sorted(set(cols)) or cols[0] < 0:
            raise InvalidArgumentError(f"select_cols must be sorted, distinct and >= 0, got "
                                       f"{list(cols)}", **where)
        if len(cols) != len(defaults):
            raise InvalidArgumentError(f"select_cols has {len(cols)} columns but "
                                       f"record_defaults {len(defaults)}", **where)
    outs = apply_op("DecodeCSV", [t, *defaults],
                    {"field_delim": field_delim, "use_quote_delim": bool(use_quote_delim),
                     "na_value": na_value, "select_cols": cols},
                    name=name, default_name="DecodeCSV")
    return list(outs)


__all__ = ["decode_csv", "decode_raw"]
