"""The caching allocator's lock is reentrant: a GpuStep's finalizer gives its blocks back
(`GpuStep.__del__` -> `CachingAllocator.free`), and the cyclic garbage collector can run
that finalizer on a thread that is inside the allocator already (an allocation under its
lock starts a collection); with a plain lock that thread waits for itself forever."""

from __future__ import annotations

import threading

import numpy as np

from tensorweave.targets.gpu.allocator import CachingAllocator


class _HostCuda:
    """Stands in for numba.cuda: `device_array` gives host memory (no GPU needed)."""

    @staticmethod
    def device_array(n: int, dtype: object) -> np.ndarray:
        return np.empty(n, dtype)


def test_free_from_a_finalizer_inside_the_allocator_does_not_hang():
    alloc = CachingAllocator(_HostCuda())
    first, second = alloc.allocate(100), alloc.allocate(100)

    def nested() -> None:
        with alloc._lock:      # as if a collection started inside allocate/free
            alloc.free(first)  # ... and ran a step's finalizer here
        alloc.free(second)

    t = threading.Thread(target=nested, daemon=True)
    t.start()
    t.join(timeout=10)
    assert not t.is_alive(), "free() waited for the lock its own thread holds"
    stats = alloc.stats()
    assert stats["in_use"] == 0 and stats["cached"] == 2 * first.nbytes
