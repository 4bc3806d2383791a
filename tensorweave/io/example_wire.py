"""Reading serialized ``tf.train.Example`` protos without protobuf.

The Example schema is four small messages, unchanged since TensorFlow 1.0::

    Example  { Features features = 1; }
    Features { map<string, Feature> feature = 1; }      // entry: key = 1, value = 2
    Feature  { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
                            Int64List int64_list = 3; } }
    BytesList { repeated bytes value = 1; }  FloatList { repeated float value = 1; }
    Int64List { repeated int64 value = 1; }

so `parse_example`'s kernel reads the wire format itself: no run-time dependency on
protobuf (``tw.train.Example`` to *build* records is protobuf's class, from the optional
tensorboard package: `tensorweave.io.example_protos`). Protobuf's rules apply: a message
given twice is merged (concatenated serialized Examples), a map key given twice keeps
its last value, a oneof keeps its last kind, repeated numbers may be packed or not,
unknown fields are skipped. Anything else (a length past the end, a varint of more than
ten bytes, a packed float list whose length is not a multiple of 4) is a parse error.

Where this differs from TensorFlow: TensorFlow's fast parser reads only the first list
of a Feature that has several, and only the first packed run of a list written both
packed and unpacked; no protobuf writer produces either, and here they decode as
protobuf defines.
"""

from __future__ import annotations

import numpy as np


class WireError(ValueError):
    """The bytes are not a serialized Example."""


_BYTES, _FLOAT, _INT64 = 1, 2, 3
KIND_NAMES = {_BYTES: "bytes", _FLOAT: "float", _INT64: "int64"}


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end:
            raise WireError("a varint runs past the end of its message")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift >= 70:
            raise WireError("a varint is longer than ten bytes")


def _fields(buf: bytes, pos: int, end: int):
    """(field number, wire type, value) of each field in ``buf[pos:end]``: the value is
    an int for varints, a (start, stop) slice for length-delimited and fixed fields."""
    while pos < end:
        key, pos = _varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError("field number 0")
        if wire == 0:
            value, pos = _varint(buf, pos, end)
            yield number, wire, value
        elif wire == 2:
            size, pos = _varint(buf, pos, end)
            if size > end - pos:
                raise WireError("a length-delimited field runs past the end of its message")
            yield number, wire, (pos, pos + size)
            pos += size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if size > end - pos:
                raise WireError("a fixed-size field runs past the end of its message")
            yield number, wire, (pos, pos + size)
            pos += size
        else:
            raise WireError(f"wire type {wire} (groups are not part of Example)")


def feature_map(serialized: bytes) -> dict[bytes, tuple[int, int]]:
    """The Example's features: key -> (start, stop) of its Feature message in
    `serialized` (the last entry of a key wins, as protobuf's maps)."""
    out: dict[bytes, tuple[int, int]] = {}
    buf = serialized
    for number, wire, value in _fields(buf, 0, len(buf)):
        if number != 1 or wire != 2:
            continue  # an unknown field of Example
        for fnum, fwire, fval in _fields(buf, *value):
            if fnum != 1 or fwire != 2:
                continue
            key, feature = b"", None
            for enum, ewire, evalue in _fields(buf, *fval):
                if enum == 1 and ewire == 2:
                    key = buf[evalue[0]:evalue[1]]
                elif enum == 2 and ewire == 2:
                    feature = evalue if feature is None else _merged(buf, feature, evalue)
            out[key] = feature if feature is not None else (0, 0)
    return out


def _merged(buf: bytes, first: tuple[int, int], second: tuple[int, int]) -> tuple:
    """A map entry whose value field appears twice: protobuf merges the two messages."""
    return ("merged", first, second)


def decode_feature(buf: bytes, span: tuple) -> tuple[int | None, list]:
    """(kind, parts) of the Feature at `span`: kind `_BYTES`, `_FLOAT`, `_INT64` or None
    (no list set); parts are bytes values, or raw float / varint runs to decode."""
    if span and span[0] == "merged":
        spans = _flatten_merged(span)
    else:
        spans = [span]
    kind: int | None = None
    lists: list[tuple[int, int]] = []
    for s in spans:
        for number, wire, value in _fields(buf, *s):
            if number not in (_BYTES, _FLOAT, _INT64) or wire != 2:
                continue  # (an unknown field)
            if number != kind:
                kind, lists = number, []  # a oneof keeps its last kind
            lists.append(value)
    parts: list = []
    for start, stop in lists:
        for number, wire, value in _fields(buf, start, stop):
            if number != 1:
                continue
            if kind == _BYTES:
                if wire == 2:
                    parts.append(buf[value[0]:value[1]])
            elif kind == _FLOAT:
                if wire == 2:
                    if (value[1] - value[0]) % 4:
                        raise WireError("a packed float list's length is not a multiple of 4")
                    parts.append(("f", value))
                elif wire == 5:
                    parts.append(("f", value))
            elif wire == 2:
                parts.append(("v", value))
            elif wire == 0:
                parts.append(("i", value))
    return kind, parts


def _flatten_merged(span: tuple) -> list[tuple[int, int]]:
    if span[0] != "merged":
        return [span]
    return _flatten_merged(span[1]) + _flatten_merged(span[2])


def float_values(buf: bytes, parts: list) -> np.ndarray:
    """The float32 values of a FloatList's parts."""
    chunks = [buf[a:b] for _, (a, b) in parts]
    return np.frombuffer(b"".join(chunks), "<f4").astype(np.float32)


def int64_values(buf: bytes, parts: list) -> np.ndarray:
    """The int64 values of an Int64List's parts (varints, two's complement)."""
    values: list[int] = []
    for tag, value in parts:
        if tag == "i":
            values.append(value)
        else:
            values.extend(_packed_varints(buf, *value))
    out = np.array(values, np.uint64) if values else np.zeros(0, np.uint64)
    return out.view(np.int64)


def _packed_varints(buf: bytes, start: int, stop: int) -> list[int] | np.ndarray:
    if stop - start <= 64:
        out = []
        pos = start
        while pos < stop:
            v, pos = _varint(buf, pos, stop)
            out.append(v)
        return out
    b = np.frombuffer(buf, np.uint8, stop - start, start)
    ends = b < 0x80
    if not ends[-1]:
        raise WireError("a varint runs past the end of its message")
    starts = np.flatnonzero(np.concatenate(([True], ends[:-1])))
    position = np.arange(b.size) - np.repeat(starts, np.diff(np.append(starts, b.size)))
    if position.max() >= 10:
        raise WireError("a varint is longer than ten bytes")
    contrib = (b & 0x7F).astype(np.uint64) << (7 * position).astype(np.uint64)
    return np.bitwise_or.reduceat(contrib, starts)
