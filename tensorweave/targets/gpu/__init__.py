"""The gpu target: whole steps as sequences of generated CUDA kernels (numba-cuda).

Kernels are generated as Python source for ``numba.cuda.jit`` (`source`), so the same
code runs on a GPU and in numba's CUDA simulator: fused elementwise/broadcast/reduction
clusters (`fused`, `exprs`, `reductions`), reductions over any axes and arg-reductions
(`reduce`), tiled shared-memory MatMul (`matmul`), softmax and the cross entropies
(`softmax`), Transpose and Gather (`layout`), variable updates (`assign`); `lowering`
maps ops to generators. `step` plans a graph with static shapes into launches, copies
and host calls with a storage for every value; `runner` binds the plan to device memory
from the caching allocator (`allocator`), with variables resident on the device
(`variables`); `executable.GpuExecutable` is what ``@tw.compile(target="gpu")`` runs.
`ptx` compiles kernels to PTX and links them with nvJitLink without a GPU.
"""

from __future__ import annotations

from typing import Any

from ...compiler.ir import Graph
from . import numba_compat

numba_compat.ensure()  # before numba-cuda's CUDA target context loads (NumPy 2.5)

TARGET = "gpu"


def compile_graph(graph: Graph, resources: Any = None) -> Any:
    """An executable for `graph` (through the pipeline, ``fused`` included) on the gpu
    target: ``exe(*arrays) -> list of results``. Raises UnavailableError with no GPU
    (and no simulator)."""
    from .executable import GpuExecutable
    return GpuExecutable(graph, resources)


__all__ = ["TARGET", "compile_graph"]
