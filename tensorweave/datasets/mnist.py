"""Handwritten digits in the layout of TensorFlow's ``input_data.read_data_sets``.

With a directory holding the MNIST IDX files (``train-images-idx3-ubyte[.gz]`` and
friends), those are read. Otherwise scikit-learn's bundled digits (1,797 real
handwritten 8x8 scans, no download) are upscaled to 28x28 so that programs written for
MNIST's 784 inputs run unchanged.
"""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass

import numpy as np

from ..errors import DataLossError

_FILES = {"train_images": "train-images-idx3-ubyte", "train_labels": "train-labels-idx1-ubyte",
          "test_images": "t10k-images-idx3-ubyte", "test_labels": "t10k-labels-idx1-ubyte"}


class DataSet:
    """Images and labels with TensorFlow's ``next_batch`` (shuffled epochs)."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, seed: int = 0) -> None:
        self.images = images
        self.labels = labels
        self._rng = np.random.default_rng(seed)
        self._order = self._rng.permutation(len(images))
        self._pos = 0
        self._epochs_completed = 0

    @property
    def num_examples(self) -> int:
        return len(self.images)

    @property
    def epochs_completed(self) -> int:
        """Epochs whose every example `next_batch` has returned."""
        return self._epochs_completed

    def next_batch(self, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
        """The next `batch_size` examples. As in TensorFlow, a batch that crosses the
        end of an epoch takes the examples left in it, then the first ones of the next
        epoch (reshuffled): every epoch shows every example exactly once."""
        n = len(self._order)
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size < 0:
            raise ValueError(f"next_batch: batch_size must be a non-negative int, got "
                             f"{batch_size!r}")
        if batch_size and not n:
            raise ValueError("next_batch: the data set has no examples")
        parts = [self._order[:0]]
        need = int(batch_size)
        while need:
            if self._pos == n:  # (only now: a batch that ends an epoch ends it exactly)
                self._order = self._rng.permutation(n)
                self._pos = 0
            part = self._order[self._pos:self._pos + need]
            self._pos += len(part)
            need -= len(part)
            parts.append(part)
            if self._pos == n:
                self._epochs_completed += 1
        idx = np.concatenate(parts)
        return self.images[idx], self.labels[idx]


@dataclass
class Datasets:
    """The train and test splits, and where they came from."""

    train: DataSet
    test: DataSet
    source: str


def _read_idx(path: str) -> np.ndarray:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 8:
        raise DataLossError(f"{path} is not an IDX file of unsigned bytes")
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        raise DataLossError(f"{path} is truncated: expected {dims}, got {body.size} bytes")
    return body.reshape(dims)


def _find(directory: str, stem: str) -> str | None:
    for name in (stem, stem + ".gz"):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            return path
    return None


def _one_hot(labels: np.ndarray, n: int = 10) -> np.ndarray:
    out = np.zeros((len(labels), n), np.float32)
    out[np.arange(len(labels)), labels] = 1.0
    return out


def _upscale_digits(images8: np.ndarray) -> np.ndarray:
    """8x8 scans (values 0..16) to 28x28 in [0, 1] by bilinear interpolation."""
    src = np.linspace(0, 7, 28)
    lo = np.floor(src).astype(int)
    hi = np.minimum(lo + 1, 7)
    frac = (src - lo).astype(np.float32)
    img = images8.reshape(-1, 8, 8).astype(np.float32) / 16.0
    rows = img[:, lo, :] * (1 - frac)[None, :, None] + img[:, hi, :] * frac[None, :, None]
    out = rows[:, :, lo] * (1 - frac)[None, None, :] + rows[:, :, hi] * frac[None, None, :]
    return out.reshape(-1, 784)


def read_data_sets(train_dir: str | None = None, one_hot: bool = True,
                   test_fraction: float = 0.2, seed: int = 0) -> Datasets:
    """Load MNIST from `train_dir` if its IDX files are there, else the bundled digits."""
    if train_dir and all(_find(train_dir, f) for f in _FILES.values()):
        arrays = {k: _read_idx(_find(train_dir, f)) for k, f in _FILES.items()}
        train_x = arrays["train_images"].reshape(-1, 784).astype(np.float32) / 255.0
        test_x = arrays["test_images"].reshape(-1, 784).astype(np.float32) / 255.0
        # int64 class ids, as the bundled digits' (IDX stores them as unsigned bytes)
        train_y = arrays["train_labels"].astype(np.int64)
        test_y = arrays["test_labels"].astype(np.int64)
        source = f"MNIST IDX files in {train_dir}"
    else:
        from sklearn.datasets import load_digits
        digits = load_digits()
        x = _upscale_digits(digits.data)
        y = digits.target.astype(np.int64)
        order = np.random.default_rng(seed).permutation(len(x))
        n_test = int(len(x) * test_fraction)
        test_idx, train_idx = order[:n_test], order[n_test:]
        train_x, train_y, test_x, test_y = x[train_idx], y[train_idx], x[test_idx], y[test_idx]
        source = "scikit-learn's bundled handwritten digits (8x8 upscaled to 28x28)"
    if one_hot:
        train_l, test_l = _one_hot(train_y), _one_hot(test_y)
    else:
        train_l, test_l = train_y, test_y
    return Datasets(DataSet(train_x, train_l, seed), DataSet(test_x, test_l, seed + 1), source)


__all__ = ["DataSet", "Datasets", "read_data_sets"]


def __dir__() -> list[str]:
    return sorted(__all__)
