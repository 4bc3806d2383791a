"""Access to numba.cuda: the real driver, or numba's CUDA simulator.

numba reads ``NUMBA_ENABLE_CUDASIM`` when it is first imported, so whether kernels run
on a GPU or in the simulator (one Python thread per GPU thread: tiny shapes only) is
decided by the environment of the process, before anything imports numba.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from ...errors import UnavailableError


def simulator_requested() -> bool:
    """Whether this process asked numba for its CUDA simulator."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "") not in ("", "0")


@lru_cache(maxsize=1)
def cuda() -> Any:
    """The numba.cuda module (imported on first use: it takes about a second)."""
    try:
        from numba import cuda as module
    except ImportError as e:  # numba-cuda not installed
        raise UnavailableError("the gpu target needs numba-cuda: pip install "
                               "'tensorweave[gpu]'") from e
    return module


def available() -> bool:
    """Whether kernels can run here: a CUDA GPU with its driver, or the simulator."""
    try:
        return bool(cuda().is_available())
    except Exception:  # noqa: BLE001 - any driver failure means "no GPU"
        return False


def require() -> Any:
    """numba.cuda, or UnavailableError naming what is missing."""
    module = cuda()
    if not available():
        raise UnavailableError("the gpu target found no CUDA GPU (set NUMBA_ENABLE_CUDASIM=1 "
                               "before starting Python to use numba's simulator)")
    return module


__all__ = ["available", "cuda", "require", "simulator_requested"]
