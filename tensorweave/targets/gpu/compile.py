"""Turning generated kernel source into launchable numba.cuda kernels, once per source.

The module text runs with `exec` in a fresh namespace (it imports what it needs), and its
``@cuda.jit`` function is the kernel; numba compiles it for the types of its first launch
(on a GPU) or runs it in Python threads (simulator). Kernels are cached by their source,
with the kernel's own name left out, so steps of several shapes, or several functions,
that generate the same code share one compiled kernel.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

from .source import Kernel

_cache: dict[str, Any] = {}
_lock = threading.Lock()


def load(kernel: Kernel) -> Any:
    """The numba.cuda dispatcher of `kernel` (configure it with ``[grid, block]``)."""
    key = kernel.source.replace(f"def {kernel.name}(", "def (", 1)
    fn = _cache.get(key)
    if fn is None:
        namespace: dict[str, Any] = {"__name__": f"tensorweave_gpu_{kernel.name}"}
        exec(compile(kernel.source, f"<gpu kernel {kernel.name}>", "exec"), namespace)
        fn = namespace[kernel.name]
        with _lock:
            fn = _cache.setdefault(key, fn)
    return fn


def python_function(kernel: Kernel) -> Any:
    """`kernel`'s plain Python function, freshly made (its own name, for PTX)."""
    namespace: dict[str, Any] = {"__name__": f"tensorweave_gpu_{kernel.name}"}
    exec(compile(kernel.source, f"<gpu kernel {kernel.name}>", "exec"), namespace)
    return namespace[kernel.name].py_func


def configured(kernel: Kernel) -> Any:
    """`kernel`'s dispatcher configured with its launch grid and block. In numba's
    simulator, launches hold a process-wide lock: a simulated launch swaps the kernel
    function's ``cuda`` global for the launch's fake module, so two threads launching
    kernels of one source at once (GPU nodes of the dataflow executor's partitions run
    in parallel) would read each other's thread indices."""
    launch = load(kernel)[kernel.grid, kernel.block]
    from .device import simulator_requested
    if not simulator_requested():
        return launch
    _make_simulated_shared_arrays_atomic()

    def serialized(*args: Any) -> Any:
        with _sim_launch_lock:
            return launch(*args)
    return serialized


_sim_launch_lock = threading.RLock()
_sim_shared_lock = threading.Lock()


def _make_simulated_shared_arrays_atomic() -> None:
    """Make numba's simulated ``cuda.shared.array`` one allocation per call site and
    launch, as on a GPU. The simulator runs each GPU thread as a Python thread and
    finds a site's array with an unlocked look-up-then-store: two threads of one block
    that both miss each make an array, and the one whose array is replaced computes on
    a private copy (a reduction's tree then silently drops its share: 9.7 for a sum
    of 15.06 under a busy GIL). The look-up and store run under a lock instead."""
    from numba.cuda.simulator import kernelapi
    shared = kernelapi.FakeCUDAShared
    if getattr(shared, "_tw_atomic", False):
        return
    unlocked = shared.array

    def array(self: Any, shape: Any, dtype: Any, alignment: Any = None) -> Any:
        if shape == 0 or alignment is not None:  # dynamic shared memory, or an error
            return unlocked(self, shape, dtype, alignment)
        if isinstance(dtype, kernelapi.types.Type):  # the simulator's own imports
            dtype = kernelapi.numpy_support.as_dtype(dtype)
        caller = sys._getframe(1)  # one array per kernel source line, as the simulator
        site = (caller.f_code.co_filename, caller.f_lineno)
        with _sim_shared_lock:
            found = self._allocations.get(site)
            if found is None:
                found = self._allocations[site] = np.empty(shape, dtype)
        return found

    shared.array = array
    shared._tw_atomic = True


__all__ = ["configured", "load", "python_function"]
