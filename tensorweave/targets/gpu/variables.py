"""Variables resident on the device: one device buffer per variable, shared by every GPU
step of the process, kept in step with the host value.

The host value (`VariableState.value`) stays the variable's value for everyone else
(other targets, checkpoints, ``v.numpy()``). A mirror remembers what it last uploaded or
downloaded (a host snapshot), so a step uploads a variable only when its host value has
changed since (another target or Python assigned it); a step that assigns a variable
downloads it back once, at its end. Reading variables thus costs no transfer between
steps; updating one costs one device-to-host copy per step.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from ...runtime.resources import VariableState
from . import transfer
from .allocator import Block, CachingAllocator


class Mirror:
    """The device copy of one variable. It refers to its variable weakly (the registry
    below is keyed by the variable), and its block goes back to the allocator when the
    variable is collected."""

    def __init__(self, state: VariableState, allocator: CachingAllocator) -> None:
        # a strong reference here would keep the WeakKeyDictionary's key alive through its
        # own value: no mirror, and no device block, would ever be freed
        self._state = weakref.ref(state)
        t = state.type
        self.shape = tuple(int(s) for s in t.shape)
        self.dtype = t.dtype.np
        self.block: Block = allocator.allocate(
            max(1, int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize))
        self.array = self.block.view(self.dtype, self.shape)
        self.flat = self.array.reshape(self.array.size)  # what kernels take
        self.snapshot: np.ndarray | None = None
        self.uploads = 0
        self.downloads = 0
        weakref.finalize(state, allocator.free, self.block)

    @property
    def state(self) -> VariableState:
        """The variable (alive while any step that uses this mirror holds it)."""
        state = self._state()
        if state is None:
            raise ReferenceError("the variable of this device mirror was collected")
        return state

    def to_device(self) -> bool:
        """Upload the host value if it changed since the last sync (call under the
        variable's lock); False when the variable has no value."""
        value = self.state.value
        if value is None:
            return False
        snap = self.snapshot
        if snap is None or snap.shape != value.shape or not np.array_equal(
                snap, value, equal_nan=value.dtype.kind == "f"):
            transfer.to_device(self.array, value)
            self.snapshot = value.copy()
            self.uploads += 1
        return True

    def to_host(self) -> None:
        """Download the device value into the host value (call under the lock)."""
        host = transfer.to_host(self.array)
        if self.state.value is not None and self.state.value.shape == host.shape:
            np.copyto(self.state.value, host)
        else:
            self.state.value = host.copy()
        self.snapshot = host
        self.downloads += 1


_mirrors: weakref.WeakKeyDictionary[VariableState, Mirror] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def mirror(state: VariableState, allocator: CachingAllocator) -> Mirror:
    """The device mirror of `state` (made on first use)."""
    with _lock:
        m = _mirrors.get(state)
        if m is None:
            m = _mirrors[state] = Mirror(state, allocator)
        return m


def mirror_count() -> int:
    """How many variables have a device mirror now."""
    return len(_mirrors)


__all__ = ["Mirror", "mirror", "mirror_count"]
