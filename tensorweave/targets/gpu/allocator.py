"""A caching device allocator: freed blocks are kept and reused by size.

cudaMalloc/cudaFree synchronize the device and cost tens of microseconds, so, as
PyTorch's caching allocator and TensorFlow's BFC allocator do, blocks go back to a pool
keyed by their (rounded) size instead of to the driver, and the next request of that
size takes one from the pool. Sizes are rounded up to `GRANULE` bytes so that nearby
sizes share blocks. `stats()` reports the bytes in use, the peak, the bytes held in the
pool and the hit rate.

Each block pins its allocation (`_pin`). numba-cuda counts the references to an
allocation in a plain Python integer (``refct``) that every view adds to and every
collected view subtracts from, without a lock, and frees the memory when it reaches 0.
Views of one block are made and collected on several threads (the dataflow executor runs
GPU nodes in parallel; the garbage collector runs finalizers on whichever thread it
interrupts), so an update can be lost: on an H200 (numba-cuda 0.30.4) blocks the
allocator still held had their memory freed under them, seen as "ReferenceError:
weakly-referenced object no longer exists" when the next view was made (a view made
before would have used freed memory). The pin adds `PIN` to the count while the block
lives, so lost updates cannot bring it to 0; the block's finalizer takes it off again
and frees the memory if nothing else holds it.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

GRANULE = 512
PIN = 1 << 30  # added to numba-cuda's reference count of a block's allocation (see above)


def _counted(data: Any) -> Any:
    """The reference-counted allocation behind numba-cuda device array `data` (a weak
    proxy), or None where there is none (the simulator's arrays)."""
    mem = getattr(getattr(data, "gpu_data", None), "_mem", None)
    return mem if mem is not None and isinstance(getattr(mem, "refct", None), int) else None


def _pin(block: Block) -> None:
    """Keep `block`'s allocation counted while the block lives (see the module docstring)."""
    mem = _counted(block.data)
    if mem is None:
        return
    mem.refct += PIN  # a new block: no other thread knows it yet
    weakref.finalize(block, _unpin, mem)


def _unpin(mem: Any) -> None:
    """Take the pin off; free the allocation if nothing else counts it (what numba-cuda
    does when a view's count reaches 0)."""
    try:
        mem.refct -= PIN
        if mem.refct <= 0:
            mem.free()
    except ReferenceError:  # numba-cuda already released it (its context was reset)
        pass


@dataclass(eq=False)  # a block is itself: the simulator's arrays compare element-wise
class Block:
    """A device allocation of `nbytes` (rounded) bytes: `data` is a uint8 device array.
    Blocks compare (and hash) by identity: two blocks are never the same allocation."""

    nbytes: int
    data: Any

    def view(self, dtype: np.dtype, shape: tuple[int, ...]) -> Any:
        """The first bytes of the block as a C-contiguous device array."""
        return self.view_at(dtype, shape, 0)

    def view_at(self, dtype: np.dtype, shape: tuple[int, ...], offset: int) -> Any:
        """The bytes from `offset` (a multiple of the dtype's size) as a C-contiguous
        device array (an entry of a row buffer: `step.Slot.row`)."""
        n = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return self.data[offset:offset + n].view(np.dtype(dtype)).reshape(shape)


def round_size(nbytes: int) -> int:
    return max(GRANULE, -(-int(nbytes) // GRANULE) * GRANULE)


class CachingAllocator:
    """Device memory with a free pool per block size (see the module docstring)."""

    def __init__(self, cuda: Any) -> None:
        self._cuda = cuda
        self._pool: dict[int, list[Block]] = {}
        # reentrant: a step's finalizer frees its blocks, and the cyclic garbage collector
        # can run it on this thread while it holds the lock (an allocation inside free)
        self._lock = threading.RLock()
        self.in_use = 0
        self.peak = 0
        self.cached = 0
        self.hits = 0
        self.misses = 0

    def allocate(self, nbytes: int) -> Block:
        """A block of at least `nbytes` bytes, from the pool when one of its size is free."""
        size = round_size(nbytes)
        with self._lock:
            free = self._pool.get(size)
            if free:
                block = free.pop()
                self.cached -= size
                self.hits += 1
            else:
                block = None
                self.misses += 1
            self.in_use += size
            self.peak = max(self.peak, self.in_use)
        if block is None:
            block = Block(size, self._cuda.device_array(size, np.uint8))
            _pin(block)
        return block

    def free(self, block: Block) -> None:
        """Give `block` back to the pool (the device memory stays allocated)."""
        with self._lock:
            self._pool.setdefault(block.nbytes, []).append(block)
            self.in_use -= block.nbytes
            self.cached += block.nbytes

    def empty_cache(self) -> None:
        """Release the pooled blocks to the driver."""
        with self._lock:
            self._pool.clear()
            self.cached = 0

    def stats(self) -> dict[str, int]:
        """Bytes in use, peak bytes in use, bytes pooled, pool hits and misses."""
        with self._lock:
            return {"in_use": self.in_use, "peak": self.peak, "cached": self.cached,
                    "hits": self.hits, "misses": self.misses}


_default: CachingAllocator | None = None
_default_lock = threading.Lock()


def default_allocator() -> CachingAllocator:
    """The process's allocator for the current device."""
    global _default
    with _default_lock:
        if _default is None:
            from .device import require
            _default = CachingAllocator(require())
        return _default


__all__ = ["GRANULE", "Block", "CachingAllocator", "default_allocator", "round_size"]

