"""Turning generated kernel source into launchable numba.cuda kernels, once per source.

The module text runs with `exec` in a fresh namespace (it imports what it needs), and its
``@cuda.jit`` function is the kernel; numba compiles it for the types of its first launch
(on a GPU) or runs it in Python threads (simulator). Kernels are cached by their source,
so steps of several shapes, or several functions, that generate the same code share one
compiled kernel.
"""

from __future__ import annotations

import threading
from typing import Any

from .source import Kernel

_cache: dict[str, Any] = {}
_lock = threading.Lock()


def load(kernel: Kernel) -> Any:
    """The numba.cuda dispatcher of `kernel` (configure it with ``[grid, block]``)."""
    fn = _cache.get(kernel.source)
    if fn is None:
        namespace: dict[str, Any] = {"__name__": f"tensorweave_gpu_{kernel.name}"}
        exec(compile(kernel.source, f"<gpu kernel {kernel.name}>", "exec"), namespace)
        fn = namespace[kernel.name]
        with _lock:
            fn = _cache.setdefault(kernel.source, fn)
    return fn


def configured(kernel: Kernel) -> Any:
    """`kernel`'s dispatcher configured with its launch grid and block."""
    return load(kernel)[kernel.grid, kernel.block]
