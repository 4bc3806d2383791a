"""Sparse reads and updates of variables on their device buffer: ResourceGather (an
embedding lookup) and ResourceScatterAdd/Sub/Update (the sparse optimizer updates).

ResourceGather is one thread per output element, copying ``var[indices[i], e]`` into a
new buffer (a snapshot: later updates in the step do not change it).

The scatters run in two kernels, with no atomics, so that their result does not depend
on the order threads run in:
1. *order*: one thread per index position ``i`` counts the positions that sort before it
   by (row, position) and writes ``order[rank] = i``: a stable sort of the positions by
   row, O(n^2) comparisons for n indices (n threads, each reading every index once);
2. *apply*: one thread per (sorted position, column); the thread at the first position
   of a row's run sums that run's updates in position order starting from zero, then
   writes ``var[row] = var[row] +/- sum`` (Update: the run's last update).
That is the reference kernel's arithmetic step by step (`compiler/ops/scatter.py`: the
updates of a row are summed with ``np.add.at`` in position order, then added to the row
once), so the result is bitwise the reference's for every dtype, floats included.

An index outside ``[0, rows)`` is an error. The first bad position (each bad thread
checks that none before it is bad) writes its position and value into the status, so the
message is the reference's word for word; the apply kernel skips bad rows, and the step
raises before any variable is written back.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...compiler.types import TensorType, format_shape
from .source import Kernel, Unsupported, Writer, has_gpu_type, launch_1d, module, numba_type

STATUS_BAD_ROW = 1
STATUS_WIDTH = 4  # code, position, value (low and high int32 halves)
SCATTER_OPS = frozenset({"ResourceScatterAdd", "ResourceScatterSub", "ResourceScatterUpdate"})


def _size(shape: Sequence[int]) -> int:
    return int(np.prod([int(s) for s in shape], dtype=np.int64))


def _check(op: str, var: TensorType, n: int) -> tuple[int, int]:
    """(rows, inner) of a variable the kernels can handle; `Unsupported` otherwise."""
    # gathers and updates copy elements; only the sums need arithmetic
    arithmetic = op in ("ResourceScatterAdd", "ResourceScatterSub")
    if not has_gpu_type(var.dtype) or (arithmetic and var.dtype.kind == "bool"):
        raise Unsupported(f"{op} of {var.dtype.name}")
    rows, inner = int(var.shape[0]), _size(var.shape[1:])
    if n == 0 or rows == 0 or inner == 0:
        raise Unsupported(f"{op} with no indices or an empty variable")
    if n >= 2**31 - 1:
        raise Unsupported(f"{op} with more indices than an int32 status can name")
    return rows, inner


def _report_first_bad(w: Writer, rows: int) -> None:
    """Emit: if `ix` (at position `i`) is out of range and no position before it is,
    write the status (only one thread can be that one: no race)."""
    w(f"if ix < 0 or ix >= {rows}:")
    with w.indent():
        w("first = True")
        w("for j in range(i):")
        with w.indent():
            w("jx = indices[j]")
            w(f"if jx < 0 or jx >= {rows}:")
            w("    first = False")
            w("    break")
        w("if first:")
        with w.indent():
            w("v = int64(ix)")
            w(f"status[0] = {STATUS_BAD_ROW}")
            w("status[1] = int32(i)")
            w("status[2] = int32(v & 4294967295)")
            w("status[3] = int32(v >> 32)")


def gather_kernel(var: TensorType, indices: TensorType, name: str) -> Kernel:
    """ResourceGather's kernel: params (var, indices, out, status)."""
    n = _size(indices.shape)
    rows, inner = _check("ResourceGather", var, n)
    total = n * inner
    t = numba_type(var.dtype)
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(var, indices, out, status):")
    with w.indent():
        w(f"for o in range(cuda.grid(1), {total}, cuda.gridsize(1)):")
        with w.indent():
            w(f"i = o // {inner}")
            w(f"e = o % {inner}")
            w("ix = indices[i]")
            w(f"if ix >= 0 and ix < {rows}:")
            w(f"    out[o] = var[ix * {inner} + e]")
            w("elif e == 0:")
            with w.indent():
                _report_first_bad(w, rows)
    grid, block = launch_1d(total)
    return Kernel(name, module(w), [t, numba_type(indices.dtype), t, "int32"], grid, block,
                  True, status_width=STATUS_WIDTH)


def order_kernel(var: TensorType, indices: TensorType, name: str) -> Kernel:
    """The scatters' first kernel: params (indices, order (int32), status)."""
    n = _size(indices.shape)
    rows, _ = _check("ResourceScatterUpdate", var, n)  # any dtype: it only reads indices
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(indices, order, status):")
    with w.indent():
        w(f"for i in range(cuda.grid(1), {n}, cuda.gridsize(1)):")
        with w.indent():
            w("ix = indices[i]")
            w("r = 0")
            w(f"for j in range({n}):")
            with w.indent():
                w("jx = indices[j]")
                w("if jx < ix or (jx == ix and j < i):")
                w("    r += 1")
            w("order[r] = int32(i)")
            _report_first_bad(w, rows)
    grid, block = launch_1d(n)
    return Kernel(name, module(w), [numba_type(indices.dtype), "int32", "int32"], grid, block,
                  True, status_width=STATUS_WIDTH)


def apply_kernel(op: str, var: TensorType, indices: TensorType, name: str) -> Kernel:
    """The scatters' second kernel: params (var, indices, updates, order)."""
    n = _size(indices.shape)
    rows, inner = _check(op, var, n)
    t = numba_type(var.dtype)
    total = n * inner
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(var, indices, updates, order):")
    with w.indent():
        w(f"for o in range(cuda.grid(1), {total}, cuda.gridsize(1)):")
        with w.indent():
            w(f"k = o // {inner}")
            w(f"e = o % {inner}")
            w("row = indices[order[k]]")
            # only the first thread of a row's run (of a valid row) writes it
            w(f"if row >= 0 and row < {rows} and (k == 0 or indices[order[k - 1]] != row):")
            with w.indent():
                w("m = k")
                if op == "ResourceScatterUpdate":  # the run's last update wins
                    w(f"while m + 1 < {n} and indices[order[m + 1]] == row:")
                    w("    m += 1")
                    w(f"var[row * {inner} + e] = updates[order[m] * {inner} + e]")
                else:
                    w(f"acc = {t}(0)")
                    w(f"while m < {n} and indices[order[m]] == row:")
                    w(f"    acc = {t}(acc + updates[order[m] * {inner} + e])")
                    w("    m += 1")
                    sign = "+" if op == "ResourceScatterAdd" else "-"
                    w(f"var[row * {inner} + e] = {t}(var[row * {inner} + e] {sign} acc)")
    grid, block = launch_1d(total)
    return Kernel(name, module(w), [t, numba_type(indices.dtype), t, "int32"], grid, block)


def bad_row_message(var_name: str, var: TensorType, details: Sequence[int]) -> str:
    """The reference's message (`compiler/ops/scatter._checked_rows`) from the status
    details: the first bad position and its value as (low, high) int32 halves."""
    k, lo, hi = details
    value = (lo & 0xFFFFFFFF) | (hi << 32)
    return (f"indices[{k}] = {value} is not in [0, {var.shape[0]}) (rows of variable "
            f"'{var_name}', shape {format_shape(var.shape)})")


__all__ = ["SCATTER_OPS", "STATUS_BAD_ROW", "STATUS_WIDTH", "apply_kernel", "bad_row_message",
           "gather_kernel", "order_kernel"]
