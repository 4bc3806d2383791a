"""Review: `tw.datasets.mnist.DataSet.next_batch` loses no examples at an epoch's end.

When the examples left in an epoch were fewer than a batch, `next_batch` reshuffled and
started the next epoch, dropping them: with the bundled digits' 1,437 training examples
and batches of 100, 37 examples (different ones each epoch) were never trained on, and
an epoch of batches was not an epoch of data. TensorFlow's ``next_batch`` returns the
rest of the epoch followed by the start of the next (reshuffled) one, so that every
epoch shows every example exactly once; and a batch is always `batch_size` examples
(it was silently shorter when larger than the data set).
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

from tensorweave.datasets import mnist


def _numbered(n: int, seed: int = 0) -> mnist.DataSet:
    ids = np.arange(n)
    return mnist.DataSet(ids.astype(np.float32)[:, None], ids, seed=seed)


@pytest.mark.parametrize("n, batch", [(10, 3), (10, 5), (7, 4), (1437, 100), (5, 1)])
def test_every_epoch_shows_every_example_exactly_once(n: int, batch: int) -> None:
    data = _numbered(n)
    epochs = 3
    seen: list[int] = []
    while len(seen) < epochs * n + batch:
        images, labels = data.next_batch(batch)
        assert images.shape == (batch, 1) and labels.shape == (batch,)
        np.testing.assert_array_equal(images[:, 0], labels)  # (rows stay paired)
        seen.extend(labels.tolist())
    for e in range(epochs):
        assert sorted(seen[e * n:(e + 1) * n]) == list(range(n)), f"epoch {e}"
    assert data.epochs_completed == len(seen) // n


def test_a_batch_larger_than_the_data_set_spans_epochs() -> None:
    data = _numbered(4)
    _, labels = data.next_batch(10)
    assert labels.shape == (10,)
    counts = collections.Counter(labels[:8].tolist())
    assert counts == {0: 2, 1: 2, 2: 2, 3: 2}  # two whole epochs, then the third's start


def test_batches_are_shuffled_and_reproducible_by_seed() -> None:
    a = [_numbered(50, seed=3).next_batch(20)[1].tolist() for _ in range(2)]
    assert a[0] == a[1]
    assert a[0] != list(range(20))
    assert _numbered(50, seed=4).next_batch(20)[1].tolist() != a[0]


def test_bad_batch_sizes_are_errors() -> None:
    data = _numbered(5)
    with pytest.raises(ValueError, match="batch_size"):
        data.next_batch(-1)
    assert data.next_batch(0)[1].shape == (0,)
    with pytest.raises(ValueError, match="no examples"):
        mnist.DataSet(np.zeros((0, 1), np.float32), np.zeros(0, np.int64)).next_batch(1)
