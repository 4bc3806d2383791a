"""Adversarial review of ``tf.summary`` + ``FileWriter`` event files: the records are
read back with a TFRecord parser written here (length, masked CRC32C of the length and
of the data), independent of the writer, and each value, tag and step is what the
session computed. Also read with TensorBoard's own EventAccumulator."""

from __future__ import annotations

import glob
import struct
import zlib

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import (  # noqa: E402
    EventAccumulator,
)
from tensorboard.compat.proto import event_pb2  # noqa: E402


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def _crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def _masked(data: bytes) -> int:
    c = _crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def test_crc32c_of_the_standard_check_string():
    assert _crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value


def _records(path: str) -> list[bytes]:
    """Every record of a TFRecord file, each CRC checked; the file must end on a record."""
    data = open(path, "rb").read()
    out, pos = [], 0
    while pos < len(data):
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        assert length_crc == _masked(header), f"bad length CRC at {pos}"
        body = data[pos + 12:pos + 12 + length]
        (body_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        assert len(body) == length and body_crc == _masked(body), f"bad data CRC at {pos}"
        out.append(body)
        pos += 16 + length
    assert pos == len(data)
    return out


def _png_pixels(png: bytes) -> np.ndarray:
    """Pixels of an 8-bit PNG (any filter byte 0 rows; the writer does not filter)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", None
    while pos < len(png):
        (n,) = struct.unpack(">I", png[pos:pos + 4])
        kind, chunk = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + n]
        assert struct.unpack(">I", png[pos + 8 + n:pos + 12 + n])[0] == \
            zlib.crc32(kind + chunk) & 0xFFFFFFFF
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8
            channels = {0: 1, 4: 2, 2: 3, 6: 4}[color]
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, 1 + width * channels)
    assert (raw[:, 0] == 0).all()
    return raw[:, 1:].reshape(height, width, channels)


def test_scalars_histograms_and_images_read_back_as_logged(tmp_path):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None])
        img = tf.placeholder(tf.uint8, [2, 3, 4, 3])
        with tf.name_scope("train"):
            tf.summary.scalar("batch_mean", tf.reduce_mean(x))
            tf.summary.histogram("values", x)
        tf.summary.image("pics", img, max_outputs=2)
        merged = tf.summary.merge_all()
    rng = np.random.default_rng(0)
    batches = [rng.normal(size=n).astype(np.float32) for n in (5, 17, 1)]
    pics = rng.integers(0, 256, size=(2, 3, 4, 3)).astype(np.uint8)
    steps = [0, 7, 1000000000000]
    with tf.Session(graph=g) as sess, tf.summary.FileWriter(str(tmp_path)) as writer:
        for step, b in zip(steps, batches):
            writer.add_summary(sess.run(merged, {x: b, img: pics}), step)
    [path] = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    events = [event_pb2.Event.FromString(r) for r in _records(path)]
    assert events[0].file_version == "brain.Event:2"
    logged = [e for e in events if e.HasField("summary")]
    assert [e.step for e in logged] == steps
    for e, b in zip(logged, batches):
        values = {v.tag: v for v in e.summary.value}
        assert set(values) == {"train/batch_mean", "train/values", "pics/image/0", "pics/image/1"}
        assert values["train/batch_mean"].simple_value == pytest.approx(float(b.mean()), rel=1e-6)
        h = values["train/values"].histo
        assert (h.num, h.min, h.max) == (b.size, float(b.min()), float(b.max()))
        assert h.sum == pytest.approx(float(b.astype(np.float64).sum()), rel=1e-6)
        assert sum(h.bucket) == b.size
        if b.size > 1:
            counts, edges = np.histogram(b.astype(np.float64), bins=30,
                                         range=(float(b.min()), float(b.max())))
            np.testing.assert_array_equal(h.bucket, counts)
            np.testing.assert_allclose(h.bucket_limit, edges[1:])
        for i in range(2):
            im = values[f"pics/image/{i}"].image
            assert (im.height, im.width, im.colorspace) == (3, 4, 3)
            np.testing.assert_array_equal(_png_pixels(im.encoded_image_string), pics[i])
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    scalars = acc.Scalars("train/batch_mean")
    assert [s.step for s in scalars] == steps
    np.testing.assert_allclose([s.value for s in scalars], [b.mean() for b in batches],
                               rtol=1e-6)
