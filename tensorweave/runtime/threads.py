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

_applied: set[str] = set()


def limit_blas_threads() -> None:
    """Apply ``TW_BLAS_THREADS`` to every BLAS library loaded so far (cheap to repeat)."""
    wanted = int(os.environ.get("TW_BLAS_THREADS", "1"))
    if wanted <= 0:
        return
    from threadpoolctl import threadpool_info, threadpool_limits

    libraries = {info["filepath"] for info in threadpool_info() if info["user_api"] == "blas"}
    if libraries <= _applied:
        return
    threadpool_limits(limits=wanted, user_api="blas")
    _applied.update(libraries)
