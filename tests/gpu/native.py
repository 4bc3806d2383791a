"""Run a plan's elementwise kernels with numba's native lowering on the CPU, one thread.

The simulator computes a kernel's scalar code with NumPy scalars, so it hides where
numba's lowering (shared by its CPU and CUDA targets: `numba.cuda.cpython.numbers`)
differs from NumPy: the int64 minimum floor-divided by -1 is 0 there (numba guards the
trap that way) and INT64_MIN in NumPy; a shift by at least the bit width is LLVM poison.
Those are wrong answers only a GPU would show. This runs the generated source of
grid-stride kernels (elementwise Fusion clusters: no shared memory, no barriers) under
``numba.njit``, one call per thread of the launch, so such differences show on any
machine. One call per thread, not one loop over the grid: a loop over elements is
vectorized on the CPU, and x86's vector shifts give 0 for out-of-range amounts where
its scalar ones (and PTX's 32-bit ones) do not. Only plans of such kernels on argument
and temporary buffers are accepted.
"""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np

from tensorweave.targets.gpu.actions import Launch, Slot
from tensorweave.targets.gpu.source import Kernel
from tests.gpu.plans import plan_of

# numba's CUDA target has math.fmod and a float-valued math.floor/ceil (libdevice); its
# CPU target has neither, NumPy's ufuncs compute the same there
_CPU_NAMES = {"cuda.grid(1)": "thread", "math.fmod(": "np.fmod(",
              "math.floor(": "np.floor(", "math.ceil(": "np.ceil("}


def _cpu_function(kernel: Kernel) -> Callable:
    """`kernel`'s function compiled by ``numba.njit``, with the thread's index in the
    grid as a first parameter."""
    if "cuda.shared" in kernel.source or "syncthreads" in kernel.source \
            or "cuda.atomic" in kernel.source:
        raise ValueError(f"{kernel.name} is not a grid-stride elementwise kernel")
    src = kernel.source.replace("@cuda.jit", '@numba.njit(error_model="numpy")')
    threads = kernel.grid[0] * kernel.block[0]
    names = _CPU_NAMES | {"cuda.gridsize(1)": str(threads),
                          f"def {kernel.name}(": f"def {kernel.name}(thread, "}
    for cuda_name, cpu_name in names.items():
        src = src.replace(cuda_name, cpu_name)
    if "cuda." in src.split("@numba.njit", 1)[1]:
        raise ValueError(f"{kernel.name} uses CUDA intrinsics this runner cannot emulate")
    scope: dict = {"numba": numba, "np": np}
    exec(compile(src, f"<{kernel.name}>", "exec"), scope)  # noqa: S102 - generated kernel
    return scope[kernel.name]


def run_natively(fn: Callable, arrays: list[np.ndarray]) -> tuple[list[np.ndarray], int]:
    """`fn`'s gpu-target results for `arrays`, each kernel run by `_cpu_function`, and the
    first nonzero status code (0: none failed)."""
    plan = plan_of(fn, arrays)
    buffers: dict[object, np.ndarray] = {}

    def buffer(slot: Slot) -> np.ndarray:
        if slot.row is not None:
            raise ValueError("row buffers (loops) are not emulated")
        kind, key = slot.storage.kind, slot.storage.key
        if kind == "arg":
            return np.ascontiguousarray(arrays[key]).reshape(-1)
        if kind == "const":
            return np.ascontiguousarray(plan.consts[key]).reshape(-1)
        if kind != "tmp":
            raise ValueError(f"storage {kind} is not emulated")
        if key not in buffers:
            buffers[key] = np.zeros(slot.size, slot.dtype.np)
        return buffers[key]

    status = 0
    for action in plan.actions:
        if not isinstance(action, Launch):
            raise ValueError(f"{type(action).__name__} is not emulated")
        if action.call_index:
            raise ValueError(f"{action.kernel.name} takes a call index (not emulated)")
        args = [buffer(s) for s in action.args]
        if action.kernel.can_fail:
            args.append(np.zeros(action.kernel.status_width, np.int32))
        kernel = action.kernel
        if len(kernel.grid) != 1 or len(kernel.block) != 1:
            raise ValueError(f"{kernel.name} has a grid of several dimensions")
        thread_function = _cpu_function(kernel)
        for thread in range(kernel.grid[0] * kernel.block[0]):
            thread_function(thread, *args)
        if action.kernel.can_fail and status == 0:
            status = int(args[-1][0])
    results = [buffer(s).reshape(s.shape).copy() for s in plan.results]
    return results, status
