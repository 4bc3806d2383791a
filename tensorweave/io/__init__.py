"""`tw.io` (TensorFlow's ``tf.io``): files, TFRecord files and ``tf.train.Example`` records.

Strings are host values (``tw.string``: NumPy object arrays of bytes), so the ops here
that take or give them (`read_file`, `decode_raw`, `decode_csv`, `parse_example`, ...)
have reference kernels only and run on the host; their numeric results flow into
compiled code. `TFRecordWriter`, `tf_record_iterator` and `gfile` are plain Python.
"""

from . import gfile  # noqa: F401
from . import readers as _readers  # noqa: F401  (TensorFlow 1's reader ops, registered)
from .decoding import decode_csv, decode_raw
from .file_ops import matching_files, read_file, write_file
from .parsing import FixedLenFeature, VarLenFeature, parse_example, parse_single_example
from .tfrecord import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)

__all__ = ["FixedLenFeature", "TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter",
           "VarLenFeature", "decode_csv", "decode_raw", "gfile", "matching_files",
           "parse_example", "parse_single_example", "read_file", "tf_record_iterator",
           "write_file"]


def __dir__() -> list[str]:
    return sorted(__all__)
