"""The kernel of AssignAddVariable/AssignSubVariable: ``var[i] = var[i] +/- value[i]`` in
place on the variable's device buffer (AssignVariable is a device-to-device copy)."""

from __future__ import annotations

from ...compiler.dtypes import DType
from .fused import Unsupported
from .source import Kernel, Writer, has_gpu_type, launch_1d, module, numba_type


def update_kernel(op: str, dtype: DType, size: int, name: str) -> Kernel:
    """The in-place update kernel of `op` for a variable of `size` elements."""
    if not has_gpu_type(dtype) or dtype.kind == "bool":
        raise Unsupported(f"{op} of {dtype.ir_name}")
    if size == 0:
        raise Unsupported("empty variable")
    t = numba_type(dtype)
    sign = "+" if op == "AssignAddVariable" else "-"
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(var, value):")
    with w.indent():
        w(f"for i in range(cuda.grid(1), {size}, cuda.gridsize(1)):")
        w(f"    var[i] = {t}(var[i] {sign} value[i])")
    grid, block = launch_1d(size)
    return Kernel(name, module(w), [t, t], grid, block)


__all__ = ["update_kernel"]
