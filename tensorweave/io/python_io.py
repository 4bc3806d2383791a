"""TensorFlow 1's ``tf.python_io``: the TFRecord writer and reader of `tw.io`."""

from .tfrecord import (  # noqa: F401
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)

__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "tf_record_iterator"]


def __dir__() -> list[str]:
    return sorted(__all__)
