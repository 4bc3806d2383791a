"""Review of tw.data against TensorFlow 2.21: any negative count of ``take``, ``skip``
and ``repeat`` means what -1 means, as in TensorFlow (its kernels test ``count < 0``).

TensorFlow 2.21 gave, for the same programs: ``range(6).take(-3)`` -> 0..5,
``range(6).skip(-3)`` -> nothing (cardinality 0), ``range(3).repeat(-3).take(7)`` ->
0 1 2 0 1 2 0, ``range(6).repeat().skip(-3)`` cardinality -1 (infinite). tensorweave
refused each count below -1 ("count must be an integer >= -1"). (TensorFlow reports
``range(6).take(-3).cardinality()`` as -3, which is neither a count nor one of its
constants; tensorweave gives the count, 6.)"""

from __future__ import annotations

import pytest

import tensorweave as tw
from tensorweave.data import Dataset


def items(ds):
    return [int(x) for x in ds.as_numpy_iterator()]


@pytest.mark.parametrize("count", [-1, -3, -(2 ** 40)])
def test_negative_counts_mean_minus_one(count):
    r = Dataset.range(6)
    assert items(r.take(count)) == list(range(6))
    assert int(r.take(count).cardinality()) == 6
    assert items(r.skip(count)) == []
    assert int(r.skip(count).cardinality()) == 0
    assert int(r.repeat().skip(count).cardinality()) == tw.data.INFINITE_CARDINALITY
    assert items(Dataset.range(3).repeat(count).take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert int(Dataset.range(3).repeat(count).cardinality()) == tw.data.INFINITE_CARDINALITY


def test_a_count_that_is_not_an_integer_is_still_an_error():
    with pytest.raises(tw.errors.InvalidArgumentError, match="Dataset.take: count"):
        Dataset.range(3).take(1.5)
