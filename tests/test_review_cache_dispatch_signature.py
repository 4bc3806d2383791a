"""Review: native dispatch answers every argument shape of an `input_signature` trace.

The native dispatcher's entries are keyed by the trace's cache key, and installing one
replaced any entry with the same key. A function with ``input_signature`` (None dims)
has one trace for all its shapes, so each new shape's entry replaced the last: called
with two batch sizes in turn (training and evaluation batches), only the shape installed
last ran natively and the other took the Python path on every call, for good (its key
was marked as tried). Entries are now replaced only by an entry of the same key *and*
argument shapes; the results are the same either way.
"""

from __future__ import annotations

import numpy as np

import tensorweave as tw


def test_alternating_shapes_of_one_relaxed_trace_each_run_natively() -> None:
    @tw.compile(target="cpu", input_signature=[tw.TensorSpec([None, 4], tw.float32)])
    def f(x):
        return x * 2.0 + 1.0

    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    for _ in range(6):
        np.testing.assert_array_equal(f(a), a * 2 + 1)
        np.testing.assert_array_equal(f(b), b * 2 + 1)
    entries = f._dispatcher.entries
    assert len(entries) == 2
    assert all(e.hits >= 1 for e in entries), [e.hits for e in entries]
    assert sum(f._dispatcher.hit_counts().values()) == sum(e.hits for e in entries)


def test_reduce_retracing_shapes_each_run_natively() -> None:
    @tw.compile(target="cpu", reduce_retracing=True)
    def f(x):
        return x - 1.0

    shapes = [(2,), (3,), (4,)]
    for _ in range(5):
        for s in shapes:
            x = np.ones(s, np.float32)
            np.testing.assert_array_equal(f(x), x - 1)
    # (2,) has its own trace; (3,) and (4,) share the relaxed one
    hits = [e.hits for e in f._dispatcher.entries]
    assert len(hits) == 3 and all(h >= 1 for h in hits), hits
