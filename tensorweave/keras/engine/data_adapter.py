"""Batches for `fit`, `evaluate` and `predict`: from NumPy arrays (or lists and dicts of
them, and eager tensors), from a `tw.data.Dataset` of ``(x, y[, sample_weight])``
batches, or from a Python iterator of them; shuffling per epoch, `validation_split`,
`class_weight` and `steps_per_epoch` as tf_keras 2.x."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from ...data import Dataset
from ...frontend import nest
from ...frontend.tensor import EagerTensor
from .. import backend

__all__ = ["unpack_x_y_sample_weight", "pack_x_y_sample_weight", "train_validation_split",
           "DataHandler", "is_array_data"]


def unpack_x_y_sample_weight(data: Any) -> tuple[Any, Any, Any]:
    """``(x, y, sample_weight)`` of a batch given as ``x``, ``(x,)``, ``(x, y)`` or
    ``(x, y, sample_weight)``."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data[0], data[1], data[2]
    raise ValueError(f"Data is expected to be in format `x`, `(x,)`, `(x, y)`, or `(x, y, "
                     f"sample_weight)`, found a tuple of {len(data)} elements")


def pack_x_y_sample_weight(x: Any, y: Any = None, sample_weight: Any = None) -> Any:
    """The inverse of `unpack_x_y_sample_weight`."""
    if y is None:
        return (x,) if not isinstance(x, (list, tuple)) else (x,)
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


def _is_array(x: Any) -> bool:
    return isinstance(x, (np.ndarray, EagerTensor, list, np.generic)) or (
        hasattr(x, "__array__") and not isinstance(x, (Dataset, dict, tuple, str)))


def is_array_data(x: Any) -> bool:
    """Whether `x` is arrays (or a list/tuple/dict of them) rather than a dataset or an
    iterator of batches."""
    if x is None:
        return True
    if isinstance(x, dict):
        return all(_is_array(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return all(_is_array(v) or isinstance(v, (list, tuple, dict)) for v in x)
    return _is_array(x)


def _as_array(x: Any) -> np.ndarray:
    """An array leaf as NumPy; floating values in `floatx` (Keras' data adapter)."""
    arr = np.asarray(x)
    if arr.dtype.kind == "f" and arr.dtype != np.dtype(backend.floatx()):
        arr = arr.astype(backend.floatx())
    elif arr.dtype.kind in "OUS":
        raise TypeError(f"tw.keras: cannot train on an array of dtype {arr.dtype}; "
                        f"convert it to numbers first")
    return arr


def _arrays(structure: Any) -> Any:
    """A nest of array-likes as a nest of NumPy arrays (a list of arrays stays a list of
    inputs; a list of numbers is one array)."""
    if structure is None:
        return None
    if _is_nested_numbers(structure):   # [[0], [1]]: one array, not one per number
        return _as_array(structure)
    if isinstance(structure, list):
        structure = tuple(structure) if len(structure) > 1 else structure
    return nest.map_structure(_as_array, structure, expand_composites=False)


def _is_nested_numbers(x: Any) -> bool:
    if isinstance(x, (list, tuple)):
        return len(x) > 0 and all(_is_nested_numbers(v) for v in x)
    return isinstance(x, (bool, int, float, np.number))


def _num_samples(data: Any) -> int:
    leaves = [x for x in nest.flatten(data)[0] if x is not None]
    sizes = {int(x.shape[0]) for x in leaves if x.ndim > 0}
    if any(x.ndim == 0 for x in leaves):
        raise ValueError("tw.keras: every input array must have a batch dimension; got a "
                         "scalar")
    if len(sizes) > 1:
        x, y, sw = unpack_x_y_sample_weight(data)
        parts = []
        for label, part in (("x", x), ("y", y), ("sample_weight", sw)):
            if part is not None:
                s = ", ".join(str(int(a.shape[0])) for a in nest.flatten(part)[0])
                parts.append(f"{label} sizes: {s}")
        raise ValueError("Data cardinality is ambiguous:\n  " + "\n  ".join(parts) +
                         "\nMake sure all arrays contain the same number of samples.")
    if not sizes:
        raise ValueError("tw.keras: no input data")
    return sizes.pop()


def _take(data: Any, index: Any) -> Any:
    return nest.map_structure(lambda a: None if a is None else a[index], data,
                              expand_composites=False)


def train_validation_split(arrays: tuple, validation_split: float) -> tuple[tuple, tuple]:
    """The first ``1 - validation_split`` of the samples for training, the rest for
    validation (before any shuffling, as Keras)."""
    n = _num_samples(arrays)
    split_at = int(math.floor(n * (1.0 - validation_split)))
    if split_at == 0 or split_at == n:
        raise ValueError(f"Training data contains {n} samples, which is not sufficient to "
                         f"split it into a validation and training set as specified by "
                         f"`validation_split={validation_split}`. Either provide more data, "
                         f"or a different value for the `validation_split` argument.")
    return _take(arrays, slice(0, split_at)), _take(arrays, slice(split_at, None))


def _class_weights(y: Any, class_weight: dict[int, float]) -> np.ndarray:
    leaves = nest.flatten(y)[0]
    if len(leaves) != 1:
        raise ValueError("`class_weight` is only supported for models with a single output")
    y = np.asarray(leaves[0])
    if y.ndim == 2 and y.shape[1] > 1:
        ids = np.argmax(y, axis=1)
    elif y.ndim == 2 and y.shape[1] == 1:
        ids = y[:, 0]
    else:
        ids = y
    ids = np.round(ids).astype(np.int64)
    top = max(class_weight) if class_weight else -1
    table = np.zeros(max(top, int(ids.max(initial=0))) + 1, dtype=backend.floatx())
    for k, v in class_weight.items():
        table[int(k)] = v
    missing = sorted(set(np.unique(ids).tolist()) - {int(k) for k in class_weight})
    if missing:
        raise ValueError(f"`class_weight` must contain all classes in the data. The "
                         f"classes {missing} exist in the data but not in `class_weight`.")
    return table[ids]


class DataHandler:
    """The batches of each epoch for a training or evaluation loop.

    Arrays are cut into batches of `batch_size` (32 by default; the last one may be
    smaller), reordered each epoch when `shuffle`; a dataset or iterator gives its own
    batches. With `steps_per_epoch`, each epoch takes that many batches from one
    continuing stream (arrays cycle through their epochs), and the data running out
    ends training, as in Keras."""

    def __init__(self, x: Any, y: Any = None, sample_weight: Any = None,
                 batch_size: int | None = None, steps_per_epoch: int | None = None,
                 initial_epoch: int = 0, epochs: int = 1, shuffle: bool | str = False,
                 class_weight: dict[int, float] | None = None) -> None:
        self.initial_epoch, self.epochs = initial_epoch, epochs
        self.steps_per_epoch = steps_per_epoch
        self.shuffle = shuffle
        self.class_weight = class_weight
        self._stream: Iterator[Any] | None = None
        self.exhausted = False
        if isinstance(x, Dataset) or not is_array_data(x):
            if y is not None or sample_weight is not None:
                raise ValueError("`y` and `sample_weight` arguments must not be specified "
                                 "for a dataset or iterator input: it gives (x, y[, "
                                 "sample_weight]) batches itself")
            if batch_size is not None:
                raise ValueError("The `batch_size` argument must not be specified for the "
                                 "given input type: a dataset or iterator gives batches")
            self._kind = "dataset" if isinstance(x, Dataset) else "iterator"
            self._source = x
            self.steps = steps_per_epoch
            if self._kind == "iterator":
                self._stream = iter(x)
            return
        if not isinstance(batch_size, (int, np.integer)) and batch_size is not None:
            raise TypeError(f"batch_size must be an int, got {batch_size!r}")
        self._kind = "arrays"
        self._data = pack_x_y_sample_weight(_arrays(x), _arrays(y), _arrays(sample_weight))
        if class_weight is not None and y is not None:
            x_, y_, sw_ = unpack_x_y_sample_weight(self._data)
            cw = _class_weights(y_, class_weight)
            sw_ = cw if sw_ is None else sw_ * cw.reshape(cw.shape + (1,) * (sw_.ndim - 1))
            self._data = (x_, y_, sw_)
        self.num_samples = _num_samples(self._data)
        self.batch_size = int(batch_size or 32)
        if self.batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {self.batch_size}")
        self._batches_per_pass = max(1, math.ceil(self.num_samples / self.batch_size))
        self.steps = steps_per_epoch or self._batches_per_pass

    # -- arrays --------------------------------------------------------------------------------
    def _array_pass(self) -> Iterator[Any]:
        n, bs = self.num_samples, self.batch_size
        order = np.random.permutation(n) if self.shuffle else None
        if self.shuffle == "batch":   # shuffle batch-sized chunks, keep each in order
            chunks = np.random.permutation(self._batches_per_pass)
            order = np.concatenate([np.arange(c * bs, min((c + 1) * bs, n)) for c in chunks])
        for start in range(0, n, bs):
            idx = slice(start, start + bs) if order is None else order[start:start + bs]
            yield _take(self._data, idx)

    def _array_stream(self) -> Iterator[Any]:
        while True:
            yield from self._array_pass()

    # -- epochs --------------------------------------------------------------------------------
    def _batches(self) -> Iterator[Any]:
        if self._kind == "arrays":
            if self.steps_per_epoch is None:
                yield from self._array_pass()
                return
            if self._stream is None:
                self._stream = self._array_stream()
            for _ in range(self.steps_per_epoch):
                yield next(self._stream)
            return
        if self.steps_per_epoch is None:
            if self._kind == "dataset":
                for batch in self._source:
                    yield self._batch(batch)
                return
            for batch in self._stream:   # one epoch: the whole iterator
                yield self._batch(batch)
            self.exhausted = True
            return
        if self._stream is None:
            self._stream = iter(self._source)
        for _ in range(self.steps_per_epoch):
            try:
                batch = next(self._stream)
            except StopIteration:
                self.exhausted = True
                return
            yield self._batch(batch)

    def _batch(self, batch: Any) -> Any:
        """A batch of a dataset or iterator as NumPy, with class weights applied."""
        batch = nest.map_structure(lambda t: None if t is None else _as_array(t), batch,
                                   expand_composites=False)
        if self.class_weight is not None:
            x, y, sw = unpack_x_y_sample_weight(batch)
            if y is not None:
                cw = _class_weights(y, self.class_weight)
                sw = cw if sw is None else sw * cw
                batch = (x, y, sw)
        return batch

    def enumerate_epochs(self) -> Iterator[tuple[int, Iterator[Any]]]:
        """``(epoch, batches)`` for each epoch from `initial_epoch` to `epochs`."""
        for epoch in range(self.initial_epoch, self.epochs):
            if self.exhausted:
                return
            yield epoch, self._batches()
