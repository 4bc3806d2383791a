"""`tw.data`: input pipelines with TensorFlow's ``tf.data`` API.

    ds = (tw.data.Dataset.from_tensor_slices((images, labels))
          .shuffle(1000, seed=1).batch(32, drop_remainder=True)
          .prefetch(tw.data.AUTOTUNE))
    for x, y in ds:          # eager tensors; a @tw.compile step traces once
        train_step(x, y)

Pipelines run on the host (NumPy arrays between stages, `map`/`filter` functions traced
once with `tw.compile`); `tw.compat.v1.data.make_one_shot_iterator(ds).get_next()` gives a
TensorFlow 1 graph the same elements, with `tw.errors.OutOfRangeError` at the end.
"""

from . import experimental
from .dataset import (
    AUTOTUNE,
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
    Dataset,
    DatasetIterator,
)
from .file_sources import TextLineDataset, TFRecordDataset

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "Dataset",
           "DatasetIterator", "TFRecordDataset", "TextLineDataset", "experimental"]


def __dir__() -> list[str]:
    return sorted(__all__)
