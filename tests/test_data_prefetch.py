"""tw.data prefetch: the background producer keeps the order, hands its errors to the
consumer, and stops when the consumer's iterator is closed or dropped."""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.data import AUTOTUNE, Dataset


def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "tw.data.prefetch"]


def _wait_for_no_prefetch_threads(seconds=5.0):
    deadline = time.monotonic() + seconds
    while _prefetch_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    return _prefetch_threads()


@pytest.mark.parametrize("buffer", [1, 3, AUTOTUNE])
def test_prefetch_keeps_elements_and_order(buffer):
    ds = Dataset.range(50).map(lambda x: x * 3).prefetch(buffer).batch(7).prefetch(buffer)
    out = np.concatenate(list(ds.as_numpy_iterator()))
    np.testing.assert_array_equal(out, np.arange(50) * 3)
    assert not _wait_for_no_prefetch_threads()


def test_an_error_in_the_producer_is_raised_in_the_consumer_after_the_good_elements():
    def gen():
        yield 1
        yield 2
        raise RuntimeError("generator failed at its third element")
    ds = Dataset.from_generator(gen, output_signature=tw.TensorSpec([], tw.int32)).prefetch(4)
    it = ds.as_numpy_iterator()
    assert [int(next(it)), int(next(it))] == [1, 2]
    with pytest.raises(RuntimeError, match="third element"):
        next(it)
    assert not _wait_for_no_prefetch_threads()


def test_pipeline_errors_pass_through_prefetch():
    ds = Dataset.from_generator(lambda: iter([[1], [1, 2]]),
                                output_signature=tw.TensorSpec([None], tw.int32))
    with pytest.raises(tw.errors.InvalidArgumentError, match="Dataset.batch"):
        list(ds.batch(2).prefetch(2))


def test_closing_or_dropping_the_iterator_stops_the_producer():
    produced = []

    def endless():
        i = 0
        while True:
            produced.append(i)
            yield i
            i += 1
    ds = Dataset.from_generator(endless, output_signature=tw.TensorSpec([], tw.int64)).prefetch(2)
    it = iter(ds)
    assert int(next(it)) == 0
    it.close()
    assert not _wait_for_no_prefetch_threads()
    stopped_at = len(produced)
    time.sleep(0.1)
    assert len(produced) == stopped_at  # nothing runs after the close

    for i, _ in enumerate(ds):  # a `for` that breaks early drops its iterator
        if i == 3:
            break
    gc.collect()
    assert not _wait_for_no_prefetch_threads()


def test_the_producer_does_not_run_further_than_the_buffer():
    produced = []

    def gen():
        for i in range(100):
            produced.append(i)
            yield i
    it = iter(Dataset.from_generator(gen, output_signature=tw.TensorSpec([], tw.int64))
              .prefetch(3))
    next(it)
    time.sleep(0.2)
    # one handed out, three in the buffer, at most one more waiting to be put
    assert len(produced) <= 5
    it.close()
