"""Checkpoint checksums are of the stored (little-endian) bytes: safetensors writes a
big-endian array byte-swapped, and the checksum of the array's own bytes made a good
file fail to load as corrupt (on a big-endian host, every checkpoint would)."""

import numpy as np
import pytest

from tensorweave.runtime import checkpoint_io


@pytest.mark.parametrize("dtype", [">f4", ">i8", ">f2", "<f8", "|b1", "u1"])
def test_arrays_of_either_byte_order_round_trip(tmp_path, dtype):
    values = np.array([[1.5, -2.0, 0.0], [3.0, 1.0, 7.0]]).astype(dtype)
    prefix = str(tmp_path / "c")
    checkpoint_io.write_tensors(prefix, {"a": values})
    got = checkpoint_io.read_tensors(prefix)["a"]
    assert got.dtype == values.dtype.newbyteorder("=")
    np.testing.assert_array_equal(got, values)


def test_a_flipped_bit_is_still_caught(tmp_path):
    prefix = str(tmp_path / "c")
    checkpoint_io.write_tensors(prefix, {"a": np.arange(4, dtype=">f4")})
    path = checkpoint_io.data_path(prefix)
    data = bytearray(open(path, "rb").read())
    data[-2] ^= 0x01
    open(path, "wb").write(bytes(data))
    with pytest.raises(Exception, match="checksum"):
        checkpoint_io.read_tensors(prefix)
