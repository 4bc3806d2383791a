"""A caching allocator for the large result buffers of native steps.

A step's results are fresh NumPy arrays unless the last call's results are no longer
held (`executable.NativeStep._results`). A caller that keeps the previous result while
calling again (``y = f(x)`` in a loop) therefore got a new buffer every call, and a new
64 MB buffer is ~16,000 page faults, each zero-filling a 4 KiB page: on the AVX-512 host
of issue 13, writing 16M float32 into a fresh buffer took 33 ms and into a reused one
7 ms. As TensorFlow's BFC and PyTorch's caching allocators do, `empty` hands out blocks
that earlier results left behind.

A block is a `_Block` (a ``uint8`` array of a subclass of its own) that owns its memory;
a result is a plain ndarray whose ``base`` is the block. A view the caller makes of a
result has the *result* as its ``base``, not the block: NumPy collapses a view's base
chain only through arrays of the view's own type, and the block's type differs. So a
result's reference count counts its views too, and the step's reuse of the last call's
results when nobody holds them (`executable.NativeStep._results`, the native
dispatcher's refcount-1 check) never overwrites memory a view still shows. The pool
keeps one reference to each block it tracks, and a block is free exactly when that is
its only reference (`sys.getrefcount`): while any result or view of one lives, the
block is not handed out again, so a live result never aliases a new one. Nothing runs
when a result dies; the next `empty` of that size finds the block free.

Blocks are reused by size: a request takes a free block of exactly its rounded size
(`_round`: to 64 KiB). A result starts at a multiple of `ALIGN` bytes in its block (NumPy's
own large arrays start 16 bytes into a page): a full-width 512-bit vector store then
never straddles two cache lines, and the fused loops can use non-temporal stores
(`codegen.NONTEMPORAL_MIN_BYTES`), which need aligned addresses. Requests below
`MIN_BYTES` go to NumPy (malloc reuses small blocks itself). The pool tracks at most
`cap_bytes()` bytes in all (``TW_RESULT_CACHE_MB``, default 1024; 0 turns the cache
off): when a new block would exceed it, free blocks are released to the OS, least
recently used first, and blocks still in use stop being tracked (they are freed
normally when their results die).

`donation_pairs` decides, for ``tw.compile(..., donate_argnums=...)``, which results of a
native step may be written into a donated argument's buffer instead of a new one.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from ...errors import InvalidArgumentError
from .step_abi import ALIGN  # (a cache line and an AVX-512 vector, as workspace offsets)

MIN_BYTES = 1 << 20
_GRANULE = 1 << 16
_DEFAULT_CAP_MB = 1024


def cap_bytes() -> int:
    """Bytes the pool may track: ``TW_RESULT_CACHE_MB`` (MiB; 0: no caching), default
    1024 MiB."""
    raw = os.environ.get("TW_RESULT_CACHE_MB", "").strip()
    if not raw:
        return _DEFAULT_CAP_MB << 20
    try:
        mb = int(raw)
    except ValueError:
        raise InvalidArgumentError(f"TW_RESULT_CACHE_MB must be an integer, got {raw!r}") \
            from None
    if mb < 0:
        raise InvalidArgumentError(f"TW_RESULT_CACHE_MB must be >= 0, got {mb}")
    return mb << 20


def _round(nbytes: int) -> int:
    return -(-nbytes // _GRANULE) * _GRANULE


class _Block(np.ndarray):
    """The type of the pool's blocks: not ndarray itself, so that NumPy stops collapsing
    a view's ``base`` at the result the view was made from (see the module docstring)."""


def _size(block: np.ndarray) -> int:
    """The rounded request size a block serves (it holds `ALIGN` bytes more, for the
    result's alignment)."""
    return block.size - ALIGN


class BlockPool:
    """Blocks of memory reused by size for result arrays (see the module docstring)."""

    def __init__(self, cap: int | None = None) -> None:
        self._cap = cap
        self._lock = threading.Lock()
        # block id -> block, in order of last use (the least recently used first)
        self._blocks: OrderedDict[int, np.ndarray] = OrderedDict()
        self._by_size: dict[int, list[np.ndarray]] = {}
        self.tracked_bytes = 0
        self.hits = 0
        self.misses = 0

    @property
    def cap(self) -> int:
        """The most bytes this pool tracks."""
        return cap_bytes() if self._cap is None else self._cap

    # references to a free block while the pool looks at it: `_blocks`, its size list,
    # the local variable and getrefcount's argument
    _OWN_REFS = 4

    def empty(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """An uninitialized C-contiguous array of `shape` and `dtype`, in a reused block
        when one of its size is free."""
        dt = np.dtype(dtype)
        count = 1
        for d in shape:
            count *= int(d)
        nbytes = count * dt.itemsize
        cap = self.cap
        if nbytes < MIN_BYTES or _round(nbytes) > cap or dt.hasobject:
            return np.empty(shape, dt)  # (object arrays cannot view raw bytes)
        size = _round(nbytes)
        with self._lock:
            block = None
            for candidate in self._by_size.get(size, ()):
                if sys.getrefcount(candidate) <= self._OWN_REFS:
                    block = candidate
                    break
            if block is not None:
                self.hits += 1
                self._blocks.move_to_end(id(block))
            else:
                self.misses += 1
                self._make_room(size, cap)
                block = _Block((size + ALIGN,), np.uint8)  # (uninitialized, as np.empty)
                self._blocks[id(block)] = block
                self._by_size.setdefault(size, []).append(block)
                self.tracked_bytes += size
            # the view is made under the lock: from here on the block counts as used
            start = -block.ctypes.data % ALIGN
            # (a plain ndarray whose base is the block, not a view of the block: views of
            # it then keep it referenced, see the module docstring)
            out = np.ndarray(shape, dt, buffer=block, offset=start)
        return out

    def _make_room(self, size: int, cap: int) -> None:
        """Stop tracking blocks, least recently used first, until `size` more bytes fit
        under `cap` (free blocks go back to the OS when dropped)."""
        while self._blocks and self.tracked_bytes + size > cap:
            _, block = self._blocks.popitem(last=False)
            self._forget(block)

    def _forget(self, block: np.ndarray) -> None:
        size = _size(block)
        same = self._by_size[size]
        same[:] = [b for b in same if b is not block]
        if not same:
            del self._by_size[size]
        self.tracked_bytes -= size

    def release_free(self) -> int:
        """Release every free block to the OS; returns the bytes released."""
        released = 0
        with self._lock:
            for key in list(self._blocks):
                block = self._blocks[key]
                if sys.getrefcount(block) <= self._OWN_REFS:
                    del self._blocks[key]
                    self._forget(block)
                    released += _size(block)
        return released

    def free_bytes(self) -> int:
        """Bytes in tracked blocks that no result uses now."""
        total = 0
        with self._lock:
            for key in list(self._blocks):
                block = self._blocks[key]
                if sys.getrefcount(block) <= self._OWN_REFS:
                    total += _size(block)
        return total


POOL = BlockPool()


def donation_pairs(plan: Any, donated: frozenset[int]) -> dict[int, int]:
    """For a native step's `plan` (`step.StepPlan`) and the graph arguments `donated`:
    result index -> donated argument whose buffer that result may be computed into.

    A result takes argument i's buffer when they have the same dtype and shape, the one
    action that writes the result is the last one to read argument i (nothing after it
    reads the overwritten bytes), and that action either does not read argument i at
    all or is an elementwise fused loop (a Fusion node without reductions and with one
    output) reading it at the output's own index: an input of as many elements as the
    output cannot be broadcast, so element k of the result depends on element k of the
    argument only, loaded before it is stored. Each argument goes to one result."""
    from .codegen import REDUCTIONS
    actions = plan.actions
    graph = plan.graph

    def reads(action: Any, i: int) -> bool:
        return any(s.kind == "arg" and s.index == i for s in action.ins)

    pairs: dict[int, int] = {}
    taken: set[int] = set()
    for r, v in enumerate(graph.results):
        writers = [k for k, a in enumerate(actions)
                   if any(s.kind == "out" and s.index == r for s in a.outs)]
        if len(writers) != 1:
            continue
        k = writers[0]
        action = actions[k]
        t = v.type
        for i in sorted(donated - taken):
            at = graph.args[i].type
            if at.dtype is not t.dtype or tuple(at.shape) != tuple(t.shape):
                continue
            if any(reads(later, i) for later in actions[k + 1:]):
                continue
            if reads(action, i) and not _elementwise_reader(action, i, REDUCTIONS):
                continue
            pairs[r] = i
            taken.add(i)
            break
    return pairs


def _elementwise_reader(action: Any, i: int, reductions: frozenset[str]) -> bool:
    """Whether `action` reads argument i only at the index of the element it writes."""
    node = action.node
    if action.kind != "native" or node is None or node.op != "Fusion" \
            or len(node.outputs) != 1 or len(action.outs) != 1:
        return False
    if any(n.op in reductions for n in node.regions[0].nodes):
        return False
    size = node.outputs[0].type.num_elements
    return all(v.type.num_elements == size for v, s in zip(node.inputs, action.ins)
               if s.kind == "arg" and s.index == i)


def empty(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """`BlockPool.empty` of the process's pool."""
    return POOL.empty(shape, dtype)


__all__ = ["MIN_BYTES", "POOL", "BlockPool", "cap_bytes", "donation_pairs", "empty"]
