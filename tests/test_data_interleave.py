"""tw.data interleave and flat_map: TensorFlow's deterministic interleaving order (the
orders below were printed by TensorFlow 2.21), the element spec from one trace, and a
clear error when a dataset returned later does not fit it."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.data import UNKNOWN_CARDINALITY, Dataset


def ints(ds):
    return [int(v) for v in ds.as_numpy_iterator()]


def test_interleave_order_of_tensorflows_documentation_example():
    ds = Dataset.range(1, 6).interleave(lambda x: Dataset.from_tensors(x).repeat(6),
                                        cycle_length=2, block_length=4)
    assert ds.element_spec == tw.TensorSpec([], tw.int64)
    assert ints(ds) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4,
                        5, 5, 5, 5, 5, 5]
    assert int(ds.cardinality()) == UNKNOWN_CARDINALITY


def test_interleave_with_datasets_of_different_lengths():
    ds = Dataset.range(7).interleave(
        lambda x: Dataset.range(x % 3 + 1).map(lambda y: y * 10 + x), cycle_length=3,
        block_length=2)
    assert ints(ds) == [0, 1, 11, 2, 12, 3, 22, 4, 14, 5, 15, 6, 25]
    assert ints(Dataset.range(3).interleave(lambda x: Dataset.range(x), cycle_length=3)) \
        == [0, 0, 1]


def test_flat_map_concatenates_and_keeps_the_traced_spec():
    rows = np.arange(12).reshape(3, 4)
    ds = Dataset.from_tensor_slices(rows).flat_map(
        lambda r: Dataset.from_tensor_slices(tw.reshape(r, [2, 2])))
    assert ds.element_spec == tw.TensorSpec([2], tw.int64)
    assert [v.tolist() for v in ds.as_numpy_iterator()] == rows.reshape(6, 2).tolist()
    pairs = Dataset.zip(Dataset.range(2), Dataset.range(2)).flat_map(
        lambda a, b: Dataset.from_tensors({"a": a, "b": b * 2}))
    assert [(int(e["a"]), int(e["b"])) for e in pairs.as_numpy_iterator()] == [(0, 0), (1, 2)]


def test_a_dataset_that_does_not_fit_the_trace_is_an_error_naming_the_op():
    calls = []

    def fn(x):
        calls.append(1)
        if len(calls) == 1:  # the trace
            return Dataset.from_tensors(x)
        return Dataset.from_tensors(tw.cast(x, tw.float32))
    ds = Dataset.range(3).flat_map(fn)
    with pytest.raises(tw.errors.InvalidArgumentError,
                       match=r"Dataset.flat_map .*f32\[\].*does not fit.*i64\[\]"):
        ints(ds)
    with pytest.raises(tw.errors.InvalidArgumentError, match="must return a Dataset"):
        Dataset.range(3).flat_map(lambda x: x)


def test_datasets_made_while_tracing_cannot_be_iterated():
    seen = []

    def fn(x):
        inner = Dataset.from_tensors(x)
        if not seen:
            seen.append(inner)
        return inner
    Dataset.range(2).flat_map(fn)
    with pytest.raises(tw.errors.TracingError, match="symbolic tensors"):
        list(seen[0].as_numpy_iterator())
