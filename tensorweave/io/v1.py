"""TensorFlow 1's ``tf.compat.v1.io`` (and the top-level ``tf.parse_example``,
``tf.decode_raw``, ``tf.read_file``, ... of `tensorweave.compat.v1`): `tw.io`'s functions
building into the default graph outside a graph (graph mode), with TensorFlow 1's
parameters (``decode_raw``'s ``bytes``)."""

from __future__ import annotations

from typing import Any

from ..compat.v1.graph import in_default_graph
from . import decoding as _decoding
from . import file_ops as _file_ops
from . import gfile  # noqa: F401
from . import parsing as _parsing
from .parsing import FixedLenFeature, VarLenFeature
from .tfrecord import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)

parse_example = in_default_graph(_parsing.parse_example)
parse_single_example = in_default_graph(_parsing.parse_single_example)
decode_csv = in_default_graph(_decoding.decode_csv)
read_file = in_default_graph(_file_ops.read_file)
write_file = in_default_graph(_file_ops.write_file)
matching_files = in_default_graph(_file_ops.matching_files)


@in_default_graph
def decode_raw(input_bytes: Any = None, out_type: Any = None, little_endian: bool = True,
               name: str | None = None, bytes: Any = None) -> Any:  # noqa: A002
    """TensorFlow 1's ``tf.decode_raw``: `tw.io.decode_raw` (``bytes`` is TensorFlow 1's
    old name of `input_bytes`)."""
    if (input_bytes is None) == (bytes is None):
        raise TypeError("tf.decode_raw: give input_bytes (or its old name bytes), once")
    if out_type is None:
        raise TypeError("tf.decode_raw: out_type is required")
    return _decoding.decode_raw(input_bytes if bytes is None else bytes, out_type,
                                little_endian=little_endian, name=name)


__all__ = ["FixedLenFeature", "TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter",
           "VarLenFeature", "decode_csv", "decode_raw", "gfile", "matching_files",
           "parse_example", "parse_single_example", "read_file", "tf_record_iterator",
           "write_file"]


def __dir__() -> list[str]:
    return sorted(__all__)
