"""Turning generated kernel source into launchable numba.cuda kernels, once per source.

The module text runs with `exec` in a fresh namespace (it imports what it needs), and its
``@cuda.jit`` function is the kernel; numba compiles it for the types of its first launch
(on a GPU) or runs it in Python threads (simulator). Kernels are cached by their source,
with the kernel's own name left out, so steps of several shapes, or several functions,
that generate the same code share one compiled kernel.
"""

from __future__ import annotations

import math
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
        from .device import simulator_requested
        if simulator_requested():  # the simulated kernel looks `math` up when it runs
            namespace["math"] = SIMULATED_MATH
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


class _SimulatedMath:
    """`math` for kernels in numba's simulator, which runs them as Python: Python's math
    functions, except where Python raises (a domain or range error: log(0), sqrt(-1),
    exp(1000), sin(inf), fmod(inf, 2) ...) or returns an int (floor, ceil): there the
    IEEE result libdevice gives on a GPU, as NumPy computes it (inf, NaN, a float of
    the argument's type and sign). Other values keep Python's own, so results the
    simulator matched bitwise (random normals through log, cos and sin) are unchanged."""

    _NUMPY = {"log": np.log, "log1p": np.log1p, "log2": np.log2, "log10": np.log10,
              "sqrt": np.sqrt, "exp": np.exp, "expm1": np.expm1, "sin": np.sin,
              "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
              "sinh": np.sinh, "cosh": np.cosh, "atanh": np.arctanh, "acosh": np.arccosh,
              "pow": np.power, "fmod": np.fmod}

    def __init__(self) -> None:
        for name, ufunc in self._NUMPY.items():
            setattr(self, name, self._falling_back(getattr(math, name), ufunc))
        self.floor, self.ceil = np.floor, np.ceil  # floats, signed zeros kept

    @staticmethod
    def _falling_back(python: Any, ufunc: Any) -> Any:
        def fn(*args: Any) -> Any:
            try:
                return python(*args)
            except (ValueError, OverflowError):
                with np.errstate(all="ignore"):
                    return ufunc(*args)
        return fn

    def __getattr__(self, name: str) -> Any:  # the rest (isnan, copysign, pi ...)
        return getattr(math, name)


SIMULATED_MATH = _SimulatedMath()

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
