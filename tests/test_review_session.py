"""Adversarial checks of the session's riskiest cpu-target changes (each test names the
commit it exercises): epilogue fusion (92eabef), step records (ccdcea4) and the aligned
result pool with non-temporal stores (ec24905, on the pool of e713ae1). Each test is a
case that would give a silent wrong answer if the change were wrong."""

from __future__ import annotations

import gc

import numpy as np

import tensorweave as tw
from tensorweave.targets.cpu import allocator

BIG = allocator.MIN_BYTES // 4 + 1000  # float32 elements: results from the block pool


# ------------------------------------------------------------------ result pool (ec24905)

def test_a_view_of_a_pooled_result_survives_the_next_calls():
    """ec24905 / e713ae1: a result of 1 MiB or more is a view of a pool block. NumPy
    collapses a view's ``base`` to the memory's owner, so a view the caller keeps of a
    result (``y = f(x)[:10]``, ``f(x).reshape(...)``) did not count as a reference to the
    result: the next call reused the result's buffer (the step's spare results, the
    native dispatcher's refcount-1 check) and overwrote what the view shows."""
    f = tw.compile(lambda x, s: x * s, target="cpu")
    x = np.ones(BIG, np.float32)
    head = f(x, np.float32(2.0))[:10]
    square = f(x, np.float32(3.0))[:1024 * 256].reshape(512, 512)
    strided = f(x, np.float32(4.0))[::3]
    for s in (5.0, 6.0, 7.0, 8.0):
        assert f(x, np.float32(s))[0] == s  # (results dropped at once: reusable)
    gc.collect()
    np.testing.assert_array_equal(head, np.full(10, 2.0, np.float32))
    np.testing.assert_array_equal(square, np.full((512, 512), 3.0, np.float32))
    np.testing.assert_array_equal(strided, np.full(strided.shape, 4.0, np.float32))
    # once nothing shows a result any more, its buffer is reused (the fix keeps that)
    del head, square, strided
    y = f(x, np.float32(1.0))
    address = y.ctypes.data
    view = y[1:]
    del y
    z = f(x, np.float32(9.0))
    assert z.ctypes.data != address and view[0] == 1.0  # (held through its view)
    del view, z
    gc.collect()
    y = f(x, np.float32(1.0))
    address = y.ctypes.data
    del y
    assert f(x, np.float32(2.0)).ctypes.data == address
