"""The wire format: typed headers and raw chunks, both framings, every dtype."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tensorweave.compiler.dtypes import ALL_DTYPES
from tensorweave.errors import DataLossError, InvalidArgumentError
from tensorweave.runtime.distributed import wire
from tensorweave.runtime.frames import DEAD

DTYPES = [d.np for d in ALL_DTYPES]


@st.composite
def arrays(draw):
    """Any dtype and shape, with arbitrary bit patterns (NaN payloads, bf16 included)."""
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
    n = int(np.prod(shape)) * dtype.itemsize
    raw = draw(st.binary(min_size=n, max_size=n))
    if dtype == np.bool_:
        raw = bytes(b & 1 for b in raw)
    return np.frombuffer(raw, np.uint8).view(dtype).reshape(shape).copy()


def same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()  # bitwise, NaN payloads included


@settings(max_examples=60, deadline=None)
@given(st.lists(arrays(), max_size=4), st.booleans())
def test_bodies_round_trip_bitwise(tensors, packed):
    header = {"step": 7, "key": "a;b"}
    if packed:
        h, out = wire.unpack(wire.pack(header, tensors))
    else:
        h, out = wire.decode(wire.encode(header, tensors))
    assert h["step"] == 7 and h["key"] == "a;b"
    assert len(out) == len(tensors)
    for a, b in zip(tensors, out):
        same(np.asarray(a), b)
        assert b.flags.writeable


def test_big_tensors_are_cut_into_chunks_no_bigger_than_the_cap():
    big = np.arange(2 * wire.CHUNK_BYTES // 4 + 5, dtype=np.float32)  # 3 chunks
    messages = list(wire.encode({}, [big, np.zeros(0, np.int8), np.ones(3, np.int64)]))
    assert all(len(m) <= wire.CHUNK_BYTES for m in messages[1:])
    assert len(messages) == 1 + 3 + 1
    _, (got, empty, ones) = wire.decode(messages)
    same(big, got)
    assert empty.shape == (0,) and ones.tolist() == [1, 1, 1]


def test_dead_values_and_non_contiguous_arrays_travel():
    view = np.arange(12, dtype=np.float64).reshape(3, 4)[:, ::2]
    for enc, dec in ((wire.encode, wire.decode), (wire.pack, wire.unpack)):
        _, (dead, got, scalar) = dec(enc({}, [DEAD, view, np.float16(1.5)]))
        assert dead is DEAD
        same(np.ascontiguousarray(view), got)
        assert got.shape == (3, 2) and scalar.shape == () and scalar == 1.5


@pytest.mark.parametrize("messages, message", [
    ([], "empty message"),
    ([b"\xff\xfe"], "not JSON"),
    ([b"[1, 2]"], "not a JSON object"),
    ([b'{"tensors": [{"dtype": "f32", "shape": [2], "nbytes": 8}]}', b"1234"], "truncated"),
    ([b'{"tensors": [{"dtype": "f32", "shape": [2], "nbytes": 8}]}', b"123456789"],
     "overruns"),
    ([b'{"tensors": [{"dtype": "f32", "shape": [2], "nbytes": 4}]}'], "do not hold"),
    ([b'{"tensors": [{"dtype": "f31", "shape": [2], "nbytes": 8}]}'], "malformed tensor"),
    ([b'{"tensors": [{"dtype": "f32", "shape": [-1], "nbytes": -4}]}'], "do not hold"),
    ([b'{"tensors": 3}'], "not a list"),
])
def test_malformed_bodies_are_data_loss_errors(messages, message):
    with pytest.raises(DataLossError, match=message):
        wire.decode(messages)


@pytest.mark.parametrize("message", [b"", b"\x00\x00", b"\xff\x00\x00\x00{}",
                                     b"\x02\x00\x00\x00{}extra"])
def test_malformed_packed_bodies_are_data_loss_errors(message):
    with pytest.raises(DataLossError):
        wire.unpack(message)


def test_errors_cross_with_their_class_op_node_and_location():
    err = InvalidArgumentError("indices out of range", op="Gather", node="g",
                               location="model.py:3")
    back = wire.error_from_header(wire.error_to_header(err, "/job:ps/replica:0/task:0"))
    assert type(back) is InvalidArgumentError
    assert (back.op, back.node, back.location) == ("Gather", "g", "model.py:3")
    assert "(on /job:ps/replica:0/task:0)" in str(back)
    # Python errors and unknown classes arrive as InternalError, never as arbitrary types.
    back = wire.error_from_header(wire.error_to_header(KeyError("x"), "t"))
    assert type(back).__name__ == "InternalError" and "KeyError" in str(back)
    forged = {"error": {"class": "SystemExit", "message": "x"}}
    assert type(wire.error_from_header(forged)).__name__ == "InternalError"
