"""TFRecord files: tensorweave reads what TensorFlow 2.21 wrote (plain, GZIP, ZLIB:
tests/io/fixtures), writes byte for byte what TensorFlow writes, refuses corrupt and
truncated records with TensorFlow's DataLossError and offsets, and reads files into
tw.data pipelines (TFRecordDataset, TextLineDataset) in TensorFlow's order."""

import gzip
import os
import re
import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.io.crc32c import masked_crc32c
from tests.helpers import line_of
from tests.io.fixture_inputs import TEXT_FILE, records
from tests.io.tf_fixtures import path, results


@pytest.mark.parametrize("name, compression", [("records.tfrecord", None),
                                               ("records.tfrecord.gz", "GZIP"),
                                               ("records.tfrecord.zlib", "ZLIB")])
def test_reads_the_records_tensorflow_wrote(name, compression):
    assert list(tw.io.tf_record_iterator(path(name), compression)) == records()
    ds = tw.data.TFRecordDataset(path(name), compression_type=compression)
    got = list(ds.as_numpy_iterator())
    assert got == records() and all(type(r) is bytes for r in got)


def test_writes_the_bytes_tensorflow_writes(tmp_path):
    out = tmp_path / "w.tfrecord"
    with tw.io.TFRecordWriter(str(out)) as w:
        for r in records():
            w.write(r)
    with open(path("records.tfrecord"), "rb") as f:
        assert out.read_bytes() == f.read()


@pytest.mark.parametrize("compression, decompress", [
    ("GZIP", gzip.decompress), ("ZLIB", zlib.decompress)])
def test_compressed_files_hold_the_same_stream(tmp_path, compression, decompress):
    out = tmp_path / "w.tfrecord"
    with tw.io.TFRecordWriter(str(out), tw.io.TFRecordOptions(compression)) as w:
        for r in records():
            w.write(r)
    with open(path("records.tfrecord"), "rb") as f:
        assert decompress(out.read_bytes()) == f.read()
    assert list(tw.io.tf_record_iterator(str(out), compression)) == records()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=6))
def test_write_then_read_round_trips(tmp_path_factory, recs):
    out = tmp_path_factory.mktemp("rt") / "x.tfrecord"
    with tw.io.TFRecordWriter(str(out)) as w:
        for r in recs:
            w.write(r)
    assert list(tw.io.tf_record_iterator(str(out))) == recs


def _three_records(tmp_path) -> tuple[str, bytes]:
    p = str(tmp_path / "a.tfrecord")
    with tw.io.TFRecordWriter(p) as w:
        for r in (b"hello", b"", b"world!"):
            w.write(r)
    with open(p, "rb") as f:
        return p, f.read()


# (byte flipped, TensorFlow 2.21's message for the same file)
@pytest.mark.parametrize("flip, message", [
    (0, "corrupted record at 0 (Is this even a TFRecord file?)"),
    (8, "corrupted record at 0 (Is this even a TFRecord file?)"),
    (12, "corrupted record at 12"),
    (17, "corrupted record at 12"),
    (29, "corrupted record at 21"),
])
def test_a_corrupt_crc_is_data_loss_at_tensorflows_offset(tmp_path, flip, message):
    p, data = _three_records(tmp_path)
    bad = bytearray(data)
    bad[flip] ^= 1
    with open(p, "wb") as f:
        f.write(bytes(bad))
    with pytest.raises(tw.errors.DataLossError, match=re.escape(message) + "$"):
        list(tw.io.tf_record_iterator(p))
    with pytest.raises(tw.errors.DataLossError, match="corrupted record at"):
        list(tw.data.TFRecordDataset(p))


# TensorFlow 2.21 on the same cuts: inside a header ends quietly, inside data is DataLoss
@pytest.mark.parametrize("keep, expected", [
    (3, []), (10, []), (23, [b"hello"]), (54, "truncated record at 37"),
    (58, "truncated record at 37")])
def test_a_truncated_file_ends_or_fails_as_tensorflows(tmp_path, keep, expected):
    p, data = _three_records(tmp_path)
    with open(p, "wb") as f:
        f.write(data[:keep])
    if isinstance(expected, list):
        assert list(tw.io.tf_record_iterator(p)) == expected
        return
    with pytest.raises(tw.errors.DataLossError, match=expected):
        list(tw.io.tf_record_iterator(p))


def test_the_crc_covers_what_it_should():
    length = struct.pack("<Q", 5)
    assert masked_crc32c(length) == 0x3E04B2EA  # the header of TensorFlow's b"hello" record
    assert masked_crc32c(b"hello") == 0x191C1FBB


def test_a_corrupt_gzip_stream_is_data_loss(tmp_path):
    with open(path("records.tfrecord.gz"), "rb") as f:
        data = f.read()
    p = tmp_path / "cut.gz"
    p.write_bytes(data[:len(data) // 2])
    with pytest.raises(tw.errors.DataLossError, match="GZIP stream"):
        list(tw.io.tf_record_iterator(str(p), "GZIP"))


def test_a_missing_file_is_not_found_when_read(tmp_path):
    ds = tw.data.TFRecordDataset(str(tmp_path / "nope.tfrecord"))
    with pytest.raises(tw.errors.NotFoundError, match="nope.tfrecord; No such file"):
        next(iter(ds))


def test_bad_options_name_the_function_and_line():
    with pytest.raises(tw.errors.InvalidArgumentError, match="compression_type"):
        tw.data.TFRecordDataset("x", compression_type="LZ4")
    with pytest.raises(tw.errors.InvalidArgumentError) as err:
        tw.data.TFRecordDataset(["x"], num_parallel_reads=0)
    assert line_of(test_bad_options_name_the_function_and_line, "num_parallel_reads=0") \
        in str(err.value)
    with pytest.raises(tw.errors.DTypeError, match="a file name must be str or bytes"):
        tw.data.TFRecordDataset([1])


def test_text_lines_are_tensorflows():
    expected = [base for base in results()["text"]]
    import base64
    expected = [base64.b64decode(x) for x in expected]
    with open(path("lines.txt"), "rb") as f:
        assert f.read() == TEXT_FILE
    assert list(tw.data.TextLineDataset(path("lines.txt")).as_numpy_iterator()) == expected


def test_text_lines_of_compressed_files(tmp_path):
    lines = [b"first", b"", b"x" * 70000, b"last"]
    for compression, compress in (("GZIP", gzip.compress), ("ZLIB", zlib.compress)):
        p = tmp_path / f"t.{compression}"
        p.write_bytes(compress(b"\n".join(lines) + b"\n"))
        got = list(tw.data.TextLineDataset(str(p), compression_type=compression)
                   .as_numpy_iterator())
        assert got == lines


@pytest.mark.parametrize("reads", [1, 2, 3])
def test_parallel_reads_interleave_in_tensorflows_order(reads):
    paths = [path(f"part{k}.tfrecord") for k in range(5)]
    got = [x.decode() for x in tw.data.TFRecordDataset(paths, num_parallel_reads=reads)
           .as_numpy_iterator()]
    assert got == results()["interleave"][str(reads)]


def test_files_interleaved_by_a_function_of_the_file_name():
    paths = [path(f"part{k}.tfrecord") for k in range(5)]
    files = tw.data.Dataset.from_tensor_slices(paths)
    ds = files.interleave(lambda f: tw.data.TFRecordDataset(f), cycle_length=2)
    assert [x.decode() for x in ds.as_numpy_iterator()] == results()["interleave"]["2"]
    assert ds.element_spec == tw.TensorSpec([], tw.string)
    flat = [x.decode() for x in tw.data.TFRecordDataset(files).as_numpy_iterator()]
    assert flat == results()["interleave"]["1"]


def test_records_batch_and_flow_into_compiled_code(tmp_path):
    p = str(tmp_path / "n.tfrecord")
    values = np.arange(10, dtype=np.float32) * 1.5
    with tw.io.TFRecordWriter(p) as w:
        for v in values:
            w.write(v.tobytes())

    def decode(batch):
        return tw.io.decode_raw(batch, tw.float32)[:, 0] * 2.0

    ds = tw.data.TFRecordDataset(p).batch(4).map(decode)
    got = np.concatenate(list(ds.as_numpy_iterator()))
    np.testing.assert_array_equal(got, values * 2.0)
    (first,) = list(tw.data.TFRecordDataset(p).take(1))
    assert first.dtype is tw.string and first.shape == () and first.numpy() == values[0].tobytes()


def test_padded_batch_pads_strings_with_empty_bytes():
    ds = tw.data.Dataset.from_tensor_slices(np.array([b"a", b"bc", b"d"], object))
    ds = ds.map(lambda s: tw.reshape(s, [1])).padded_batch(2, padded_shapes=[2])
    got = list(ds.as_numpy_iterator())
    assert got[0].tolist() == [[b"a", b""], [b"bc", b""]] and got[1].tolist() == [[b"d", b""]]
    with pytest.raises(tw.errors.InvalidArgumentError, match="strings pad strings"):
        tw.data.Dataset.from_tensors(np.array([b"a"], object)).padded_batch(1, padding_values=0)


def test_writer_refuses_a_write_after_close_and_takes_str(tmp_path):
    p = str(tmp_path / "s.tfrecord")
    w = tw.io.TFRecordWriter(p)
    w.write("héllo")
    w.close()
    with pytest.raises(tw.errors.InvalidArgumentError, match="after close"):
        w.write(b"x")
    assert list(tw.io.tf_record_iterator(p)) == ["héllo".encode()]
    assert os.path.getsize(p) == 16 + len("héllo".encode())
