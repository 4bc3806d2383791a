"""The caching allocator pins each block's allocation in numba-cuda's reference count,
whose unlocked updates from several threads can be lost (on an H200 blocks the
allocator held had their memory freed under them). Checked here on a stand-in with
numba-cuda's counting rules: a view adds 1 and its collection subtracts 1, and the
memory is freed when the count reaches 0."""

from __future__ import annotations

import gc
import weakref

import numpy as np

from tensorweave.targets.gpu import allocator as alloc_mod
from tensorweave.targets.gpu.allocator import PIN, CachingAllocator


class _Memory:  # numba-cuda's AutoFreePointer: held by its context's allocations
    def __init__(self) -> None:
        self.refct = 0
        self.freed = 0

    def free(self) -> None:
        self.freed += 1


class _Owned:  # numba-cuda's OwnedPointer: counts itself in, out when collected
    def __init__(self, mem: _Memory) -> None:
        self._mem = weakref.proxy(mem)
        mem.refct += 1

        def deref(m=self._mem):
            try:
                m.refct -= 1
                if m.refct == 0:
                    m.free()
            except ReferenceError:  # as numba-cuda's: its context already let it go
                pass
        weakref.finalize(self, deref)


class _Array:
    def __init__(self, mem: _Memory) -> None:
        self.gpu_data = _Owned(mem)


class _Cuda:
    def __init__(self) -> None:
        self.allocations: list[_Memory] = []

    def device_array(self, size: int, dtype: np.dtype) -> _Array:
        mem = _Memory()
        self.allocations.append(mem)
        return _Array(mem)


def test_a_lost_update_cannot_free_a_block_the_allocator_holds():
    cuda = _Cuda()
    a = CachingAllocator(cuda)
    block = a.allocate(100)
    mem = cuda.allocations[0]
    assert mem.refct == 1 + PIN
    mem.refct -= 1  # a view's decrement whose increment another thread's write lost
    view = _Owned(mem)  # the next view of the block, made and collected
    del view
    gc.collect()
    assert mem.freed == 0  # unpinned, the count reached 0 here and freed the memory
    a.free(block)
    del block
    gc.collect()
    assert mem.freed == 0 and mem.refct == PIN
    again = a.allocate(100)  # the pooled block, still backed by its memory
    assert again.data.gpu_data._mem.refct == PIN


def test_a_dropped_block_frees_its_memory_once_in_either_finalizer_order():
    for unpin_first in (True, False):
        cuda = _Cuda()
        a = CachingAllocator(cuda)
        block = a.allocate(100)
        mem = cuda.allocations[0]
        if unpin_first:
            alloc_mod._unpin(block.data.gpu_data._mem)
            assert mem.refct == 1 and mem.freed == 0
            block.data = None  # the view goes: count 0, freed by its own finalizer
        else:
            block.data = None  # the view goes first: the pin keeps the count up
            gc.collect()
            assert mem.refct == PIN and mem.freed == 0
            alloc_mod._unpin(weakref.proxy(mem))
        gc.collect()
        assert mem.refct == 0 and mem.freed == 1, unpin_first


def test_empty_cache_gives_the_memory_back():
    cuda = _Cuda()
    a = CachingAllocator(cuda)
    blocks = [a.allocate(n) for n in (100, 600, 5000)]
    for b in blocks:
        a.free(b)
    del blocks, b
    a.empty_cache()
    gc.collect()
    assert [m.freed for m in cuda.allocations] == [1, 1, 1]
    assert all(m.refct == 0 for m in cuda.allocations)


def test_the_simulators_arrays_are_not_pinned():
    class _Plain:
        def device_array(self, size, dtype):
            return np.zeros(size, dtype)
    block = CachingAllocator(_Plain()).allocate(10)
    assert alloc_mod._counted(block.data) is None
