"""Correctness of the cpu target's speed paths of issue 13: the caching allocator of
result buffers (`targets/cpu/allocator.py`), ..."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.errors import InvalidArgumentError
from tensorweave.targets.cpu import allocator

# ---------------------------------------------------------------------- allocator

BIG = (allocator.MIN_BYTES // 4) + 1000  # float32 elements: over the pooled minimum


def test_pool_reuses_a_block_only_once_nothing_uses_it():
    pool = allocator.BlockPool(cap=1 << 30)
    a = pool.empty((BIG,), np.float32)
    b = pool.empty((BIG,), np.float32)
    assert a.base is not b.base and pool.misses == 2
    view = a[5:].reshape(-1)[::2]  # a view keeps the block in use, not just the array
    del a
    c = pool.empty((BIG,), np.float32)
    assert c.base is not view.base and c.base is not b.base and pool.misses == 3
    base = id(view.base)  # (a reference to the block would keep it in use)
    del view
    d = pool.empty((BIG,), np.float32)
    assert id(d.base) == base and pool.hits == 1
    # a different dtype and shape of the same byte count share the block
    del d
    e = pool.empty((BIG // 2, 2), np.int32)
    assert id(e.base) == base and e.shape == (BIG // 2, 2) and e.dtype == np.int32
    assert e.flags.c_contiguous and e.flags.writeable


def test_pool_small_requests_and_the_cap():
    pool = allocator.BlockPool(cap=3 * allocator.MIN_BYTES)
    small = pool.empty((10,), np.float64)
    assert small.base is None and pool.misses == 0  # NumPy's own memory
    a = pool.empty((BIG,), np.float32)
    nbytes = a.base.size
    b = pool.empty((BIG,), np.float32)
    assert pool.tracked_bytes == 2 * nbytes
    del a
    # the third block does not fit: the free one is released, the used one forgotten
    c = pool.empty((BIG,), np.float32)
    assert pool.tracked_bytes <= pool.cap and c.base is not b.base
    c[:] = 1.0
    b[:] = 2.0  # b still owns its memory after the pool forgot it
    assert np.all(c == 1.0) and np.all(b == 2.0)
    del c
    assert pool.free_bytes() == nbytes and pool.release_free() == nbytes
    # over the cap: plain NumPy memory
    huge = allocator.BlockPool(cap=1 << 20).empty((1 << 20,), np.float32)
    assert huge.base is None


def test_result_cache_size_from_the_environment(monkeypatch):
    monkeypatch.setenv("TW_RESULT_CACHE_MB", "3")
    assert allocator.cap_bytes() == 3 << 20
    monkeypatch.setenv("TW_RESULT_CACHE_MB", "lots")
    with pytest.raises(InvalidArgumentError, match="TW_RESULT_CACHE_MB"):
        allocator.cap_bytes()
    monkeypatch.setenv("TW_RESULT_CACHE_MB", "0")
    assert allocator.BlockPool().empty((BIG,), np.float32).base is None


def test_held_results_never_alias_and_dropped_ones_are_reused():
    n = BIG
    f = tw.compile(lambda x, s: x * s + 1.0, target="cpu")
    x = np.arange(n, dtype=np.float32)
    held = []
    for s in range(6):
        y = f(x, np.float32(s))
        held.append(y)
        # every result still held keeps its own values
        for t, old in enumerate(held):
            np.testing.assert_array_equal(old, x * np.float32(t) + 1.0)
    bases = {id(y.base) for y in held}
    assert len(bases) == len(held)
    # the caller keeps only the last result: the block of the one before comes back
    held = held[-1:]
    gc.collect()
    hits = allocator.POOL.hits
    for s in range(4):
        held = [f(x, np.float32(s))]
        np.testing.assert_array_equal(held[0], x * np.float32(s) + 1.0)
    assert allocator.POOL.hits > hits
