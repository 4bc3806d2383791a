"""The inputs of the TensorFlow fixtures (tests/io/fixtures/tf_results.json): shared by
make_tf_fixtures.py (run under TensorFlow) and the tests (run under tensorweave)."""

import struct


def records() -> list[bytes]:
    """The records of fixtures/records.tfrecord*: empty, short, every byte value, NULs at
    the end, and longer ones (past crc32c's short loop and its 4096-byte blocks)."""
    return [b"", b"a", bytes(range(256)), b"x\x00\x00", b"\x00" * 70,
            bytes((i * 131 + 7) % 256 for i in range(5000)),
            bytes((i * 17 + i // 256) % 256 for i in range(9000))]


def example_features() -> list[dict]:
    """Examples as {key: (kind, values)}; kind float, int64, bytes or empty."""
    return [
        {"f": ("float", [1.5, -2.0]), "i": ("int64", [7]), "s": ("bytes", [b"ab", b"\x00\xff"])},
        {"f": ("float", [0.0, float("inf")]), "i": ("int64", [-(2 ** 63)]), "s": ("bytes", [b""])},
        {"f": ("float", [3.0, 4.0]), "i": ("int64", [2 ** 63 - 1]), "s": ("bytes", [])},
        {"f": ("float", [5.0]), "i": ("int64", [1, 2])},
        {"i": ("float", [1.0]), "s": ("bytes", [b"z"])},
        {"f": ("empty", None), "i": ("int64", [3]), "s": ("bytes", [b"q"] * 3)},
        {},
        {"m": ("float", [float(x) for x in range(6)]), "f": ("float", [1.0, 2.0]), "i": ("int64", [5])},
    ]


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _example(entries: list[tuple[bytes, bytes]]) -> bytes:
    return _field(1, b"".join(_field(1, _field(1, k) + _field(2, f)) for k, f in entries))


def wire_examples() -> list[bytes]:
    """Encodings protobuf writers do not all produce, on which TensorFlow and protobuf's
    rules agree: unpacked lists, concatenated Examples, a key given twice, an entry whose
    value comes before its key, an empty serialized Example."""
    floats_unpacked = _field(2, b"".join(_varint(1 << 3 | 5) + struct.pack("<f", v)
                                         for v in (1.25, -3.5)))
    ints_unpacked = _field(3, b"".join(_varint(1 << 3 | 0) + _varint(v) for v in (9, -4)))
    ints_packed = _field(3, _field(1, b"".join(_varint(v) for v in range(-40, 40))))
    floats = _field(2, _field(1, struct.pack("<2f", 6.0, 7.0)))
    value_first = _field(1, _field(1, _field(2, floats) + _field(1, b"f")))
    return [
        _example([(b"f", floats_unpacked), (b"i", ints_unpacked)]),
        _example([(b"f", floats)]) + _example([(b"i", ints_unpacked)]),
        _example([(b"f", floats), (b"f", floats_unpacked), (b"i", ints_packed)]),
        value_first,
        b"",
    ]


EXAMPLE_SPECS = {
    "dense": {"f": ("fixed", "float32", [2]), "i": ("fixed", "int64", [], 0),
              "s": ("var", "string")},
    "defaults": {"f": ("fixed", "float32", [2], [9.0, 8.0]), "i": ("var", "int64"),
                 "s": ("fixed", "string", [], b"dflt")},
    "sparse": {"f": ("var", "float32"), "i": ("var", "int64"), "s": ("var", "string")},
    "matrix": {"m": ("fixed", "float32", [2, 3], [0.0] * 6), "i": ("fixed", "int64", [1], [-1])},
}

CSV_CASES = [
    (["1,2.5,a", "3,,b"], [("int32", [0]), ("float32", [9.0]), ("string", [""])], {}),
    (["1,,a"], [("int32", [0]), ("float32", []), ("string", [""])], {}),
    (["1,2"], [("int32", [0]), ("float32", [0.0]), ("string", [""])], {}),
    (["1,2,3,4"], [("int32", [0]), ("float32", [0.0]), ("string", [""])], {}),
    (["x,2,3"], [("int32", [0]), ("float32", [0.0]), ("string", [""])], {}),
    ([" 1 , 2.5 , a b "], [("int32", [0]), ("float32", [0.0]), ("string", [""])], {}),
    (['"a,b",1,"x""y"'], [("string", [""]), ("int32", [0]), ("string", [""])], {}),
    (['"a,b",1,"x""y"'], [("string", [""]), ("int32", [0]), ("string", [""])],
     {"use_quote_delim": False}),
    (['a"b,1,c'], [("string", [""]), ("int32", [0]), ("string", [""])], {}),
    (['"ab,1,c'], [("string", [""]), ("int32", [0]), ("string", [""])], {}),
    (['"ab"x,1,c'], [("string", [""]), ("int32", [0]), ("string", [""])], {}),
    (["NA,1,c"], [("int32", [7]), ("int32", [0]), ("string", [""])], {"na_value": "NA"}),
    (["1,2,3,4"], [("int32", [0]), ("int64", [0])], {"select_cols": [1, 3]}),
    (["1,2"], [("int32", [0]), ("int64", [0])], {"select_cols": [1, 3]}),
    (["1;2"], [("int32", [0]), ("int32", [0])], {"field_delim": ";"}),
    (["9223372036854775807,-9223372036854775808"], [("int64", [0]), ("int64", [0])], {}),
    (["2147483648"], [("int32", [0])], {}),
    (["-2147483648"], [("int32", [0])], {}),
    (["0.1,1e400,nan,inf,-inf,0x10,-0X1.8p1,INFINITY,-NaN,1e-400"], [("float64", [0.0])] * 10, {}),
    (["1e39,1e-50,3,+4,.5,5.,1E5,\t6\t,1.00000005960464477550,3.4028235677973366e38"],
     [("float32", [0.0])] * 10, {}),
    (["+4,-0,007, 5"], [("int32", [0])] * 4, {}),
    (["1.0"], [("int32", [0])], {}),
    (["1e3"], [("int64", [0])], {}),
    (["0x10"], [("int32", [0])], {}),
    (["1_0"], [("float32", [0.0])], {}),
    (["1 2"], [("int32", [0])], {}),
    (["."], [("float32", [0.0])], {}),
    (["e5"], [("float64", [0.0])], {}),
    (["in"], [("float64", [0.0])], {}),
    (['"12"'], [("int32", [0])], {}),
    ([""], [("int32", [5])], {}),
    ([","], [("int32", [5]), ("string", ["d"])], {}),
    (["1,2\r"], [("int32", [0]), ("string", [""])], {}),
    (["a,b,"], [("string", [""])] * 3, {}),
    ([["1,2", "3,4"], ["5,6", "7,8"]], [("int64", [0]), ("float64", [0.0])], {}),
    ("4,5", [("int32", [0]), ("int32", [0])], {}),
    (["\xe9,\u20ac"], [("string", [""]), ("string", [""])], {}),
]

RAW_CASES = [
    ([b"\x01\x00\x02\x00", b"\x03\x00\x04\x00"], "int16", {}),
    ([b"\x01\x00\x02\x00", b"\x03\x00"], "int16", {}),
    ([b"\x01\x00\x02"], "int16", {}),
    ([b"\x01\x00\x02\x00", b"\x03\x00"], "int16", {"fixed_length": 4}),
    ([b"\x01\x00\x02\x00", b"\x03\x00"], "int16", {"fixed_length": 6}),
    ([b"\x01\x00\x02\x00"], "int16", {"little_endian": False}),
    (b"\x00\x00\x80\x3f\x00\x00\x00\xc0", "float32", {}),
    (b"\x3f\x80\x00\x00", "float32", {"little_endian": False}),
    ([b"\x00" * 8, b"\xff" * 8], "float64", {}),
    ([b"\x01\x80\xff"], "uint8", {}),
    ([b"\x01\x80\xff"], "int8", {}),
    ([b"\x00\x01\x02"], "bool", {}),
    ([[b"\x01\x00\x00\x00\x02\x00\x00\x00"], [b"\xff\xff\xff\xff\x00\x00\x00\x80"]], "int32", {}),
    ([b"\x01\x02\x03\x04\x05\x06\x07\x08"], "int64", {"little_endian": False}),
    ([b"\x00\x3c"], "float16", {}),
    (b"", "int16", {}),
    ([b"", b""], "int16", {}),
    ([b"ab"], "int16", {"fixed_length": 3}),
]

TEXT_FILE = b"a\r\nb\n\nc\rd\n\r\n\xc3\xa9 \x00x\nlast"
