"""Thread settings shared by the runtime.

Kernels run on the executor's inter-op thread pool, several at once. A BLAS library that
also starts a thread per core for every call oversubscribes the cores: on this project's
2-core machines a 100x784 @ 784x128 matmul went from 0.9 ms to 48 ms, and an LSTM step
from 69 ms to 1.2 s. So, as TensorFlow sizes its own intra-op pool, compiling a graph
sets the BLAS libraries loaded in the process (NumPy's, SciPy's) to ``TW_BLAS_THREADS``
threads (default 1); ``TW_BLAS_THREADS=0`` leaves them alone.
"""

from __future__ import annotations

import os
from typing import Any

_applied: set[str] = set()
_seen: tuple[int, tuple[str, ...]] | None = None  # (setting, loaded libraries) last applied


def _loaded_libraries() -> tuple[str, ...] | None:
    """The paths of the shared objects loaded in the process (None where that cannot be
    listed cheaply): the same list as last time means no new BLAS to limit."""
    import ctypes

    class _Info(ctypes.Structure):
        _fields_ = [("addr", ctypes.c_void_p), ("name", ctypes.c_char_p)]

    callback_type = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Info), ctypes.c_size_t,
                                     ctypes.c_void_p)
    names: list[str] = []

    def note(info: Any, _size: int, _data: int) -> int:
        names.append((info.contents.name or b"").decode(errors="replace"))
        return 0

    try:
        iterate = ctypes.CDLL(None).dl_iterate_phdr
    except (OSError, AttributeError):
        return None
    iterate.argtypes = [callback_type, ctypes.c_void_p]
    iterate(callback_type(note), None)
    return tuple(names)


def limit_blas_threads() -> None:
    """Apply ``TW_BLAS_THREADS`` to every BLAS library loaded so far (cheap to repeat:
    asking threadpoolctl costs ~10 ms, so it is asked only when the setting or the set
    of loaded libraries changed)."""
    global _seen
    wanted = int(os.environ.get("TW_BLAS_THREADS", "1"))
    if wanted <= 0:
        return
    loaded = _loaded_libraries()
    if loaded is not None and _seen == (wanted, loaded):
        return
    from threadpoolctl import threadpool_info, threadpool_limits

    libraries = {info["filepath"] for info in threadpool_info() if info["user_api"] == "blas"}
    if not libraries <= _applied:
        threadpool_limits(limits=wanted, user_api="blas")
        _applied.update(libraries)
    _seen = None if loaded is None else (wanted, loaded)
