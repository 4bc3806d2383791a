"""A checkpoint's checksums cover each tensor's dtype and shape as well as its bytes.

Format 1 checksummed only the bytes, so a header whose dtype (F32 -> I32) or shape
([2, 3] -> [3, 2]) was corrupted passed verification and restored intact bytes
reinterpreted: silently wrong values. Files of format 1 still load."""

import json
import struct
import zlib

import numpy as np
import pytest
import safetensors.numpy

from tensorweave.errors import DataLossError
from tensorweave.runtime import checkpoint_io


def _rewrite_header(path, edit):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    edit(header)
    text = json.dumps(header, separators=(",", ":")).encode()
    assert len(text) <= n  # keep the data offsets where they are
    text += b" " * (n - len(text))
    open(path, "wb").write(data[:8] + text + data[8 + n:])


@pytest.mark.parametrize("edit", [
    lambda h: h["w"].update(dtype="I32"),
    lambda h: h["w"].update(shape=[3, 2]),
    lambda h: h["w"].update(shape=[6]),
], ids=["dtype", "shape", "rank"])
def test_a_corrupted_header_fails_its_checksum(tmp_path, edit):
    prefix = str(tmp_path / "c")
    checkpoint_io.write_tensors(prefix, {"w": np.arange(6, dtype=np.float32).reshape(2, 3)})
    _rewrite_header(checkpoint_io.data_path(prefix), edit)
    with pytest.raises(DataLossError, match="'w' fails its checksum"):
        checkpoint_io.read_tensors(prefix)


def test_an_intact_file_of_every_kind_still_loads(tmp_path):
    arrays = {"f": np.linspace(-1, 1, 6).reshape(2, 3), "b": np.array([True, False]),
              "s": np.array(3, np.int64), "e": np.zeros((0, 4), np.float16)}
    prefix = str(tmp_path / "c")
    checkpoint_io.write_tensors(prefix, arrays)
    got = checkpoint_io.read_tensors(prefix)
    for k, v in arrays.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape
        np.testing.assert_array_equal(got[k], v)


def test_a_format_1_file_still_verifies_by_its_bytes(tmp_path):
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    crc = format(zlib.crc32(w.tobytes()) & 0xFFFFFFFF, "08x")
    prefix = str(tmp_path / "old")
    with open(checkpoint_io.data_path(prefix), "wb") as f:
        f.write(safetensors.numpy.save({"w": w}, metadata={
            "format": "tensorweave-checkpoint-1", "crc32": json.dumps({"w": crc})}))
    np.testing.assert_array_equal(checkpoint_io.read_tensors(prefix)["w"], w)
    # and a flipped bit in such a file is still caught
    data = bytearray(open(checkpoint_io.data_path(prefix), "rb").read())
    data[-1] ^= 0x01
    open(checkpoint_io.data_path(prefix), "wb").write(bytes(data))
    with pytest.raises(DataLossError, match="checksum"):
        checkpoint_io.read_tensors(prefix)
