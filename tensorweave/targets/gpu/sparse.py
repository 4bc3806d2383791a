"""Sparse reads and updates of variables on their device buffer: ResourceGather (an
embedding lookup) and ResourceScatterAdd/Sub/Update (the sparse optimizer updates).

ResourceGather is one thread per output element, copying ``var[indices[i], e]`` into a
new buffer (a snapshot: later updates in the step do not change it).

The scatters run in two steps, with no atomics, so that their result does not depend
on the order threads run in:
1. *order*: a stable sort of the index positions by (row, position) into ``order``
   (`sort.py`: chunks ranked by comparison, then merges; O(n log n) work for n indices),
   whose first launch also checks the indices;
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
from .sort import SortPass, first_kernels, sort_passes
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
        raise Unsupported(f"{op} of {var.dtype.ir_name}")
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


def gather_kernel(var: TensorType, indices: TensorType, name: str,
                  counted: bool = False) -> Kernel:
    """ResourceGather's kernel: params (var, indices, [count,] out, status). With
    `counted`, only the first ``count[0]`` indices are rows (DeduplicateSlices' padded
    output): the rows after them are zeros."""
    n = _size(indices.shape)
    rows, inner = _check("ResourceGather", var, n)
    total = n * inner
    t = numba_type(var.dtype)
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(var, indices, {'count, ' if counted else ''}out, status):")
    with w.indent():
        if counted:
            w("cnt = count[0]")
        w(f"for o in range(cuda.grid(1), {total}, cuda.gridsize(1)):")
        with w.indent():
            w(f"i = o // {inner}")
            w(f"e = o % {inner}")
            if counted:
                w("if i >= cnt:")
                w(f"    out[o] = {t}(0)")
                w("    continue")
            w("ix = indices[i]")
            w(f"if ix >= 0 and ix < {rows}:")
            w(f"    out[o] = var[ix * {inner} + e]")
            w("elif e == 0:")
            with w.indent():
                _report_first_bad(w, rows)
    grid, block = launch_1d(total)
    params = [t, numba_type(indices.dtype)] + (["int32"] if counted else []) + [t, "int32"]
    return Kernel(name, module(w), params, grid, block, True, status_width=STATUS_WIDTH)


def order_passes(var: TensorType | None, indices: TensorType, name: str,
                 counted: bool = False, chunk: int | None = None) -> list[SortPass]:
    """The scatters' stable sort of index positions by row (`sort.sort_passes`): its first
    launch's params are (indices, [count,] order-or-scratch, status) and it reports the
    first index out of the variable's rows; with `var` None (DeduplicateSlices) no row is
    out of range and there is no status. With `counted`, only the first ``count[0]``
    positions are sorted."""
    n = _size(indices.shape)
    if var is None:
        if n == 0 or n >= 2**31 - 1:
            raise Unsupported("DeduplicateSlices with no indices or too many")
        return sort_passes(indices, n, name, counted, chunk=chunk)
    rows, _ = _check("ResourceScatterUpdate", var, n)  # any dtype: it only reads indices
    return sort_passes(indices, n, name, counted, rows, _report_first_bad, STATUS_WIDTH,
                       chunk)


def apply_kernel(op: str, var: TensorType, indices: TensorType, name: str,
                 counted: bool = False) -> Kernel:
    """The scatters' second kernel: params (var, indices, updates, order, [count])."""
    n = _size(indices.shape)
    rows, inner = _check(op, var, n)
    t = numba_type(var.dtype)
    total = n * inner
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(var, indices, updates, order{', count' if counted else ''}):")
    with w.indent():
        if counted:
            w("cnt = count[0]")
        w(f"for o in range(cuda.grid(1), {total}, cuda.gridsize(1)):")
        with w.indent():
            w(f"k = o // {inner}")
            w(f"e = o % {inner}")
            if counted:
                w("if k >= cnt:")
                w("    continue")
            w("row = indices[order[k]]")
            # only the first thread of a row's run (of a valid row) writes it
            w(f"if row >= 0 and row < {rows} and (k == 0 or indices[order[k - 1]] != row):")
            with w.indent():
                w("m = k")
                if op == "ResourceScatterUpdate":  # the run's last update wins
                    w(f"while m + 1 < {'cnt' if counted else n} and "
                      "indices[order[m + 1]] == row:")
                    w("    m += 1")
                    w(f"var[row * {inner} + e] = updates[order[m] * {inner} + e]")
                else:
                    w(f"acc = {t}(0)")
                    w(f"while m < {'cnt' if counted else n} and indices[order[m]] == row:")
                    w(f"    acc = {t}(acc + updates[order[m] * {inner} + e])")
                    w("    m += 1")
                    sign = "+" if op == "ResourceScatterAdd" else "-"
                    w(f"var[row * {inner} + e] = {t}(var[row * {inner} + e] {sign} acc)")
    grid, block = launch_1d(total)
    params = [t, numba_type(indices.dtype), t, "int32"] + (["int32"] if counted else [])
    return Kernel(name, module(w), params, grid, block)


def dedupe_kernels(values: TensorType, indices: TensorType, name: str,
                   chunk: int | None = None) -> tuple[Kernel, list[Kernel], int, Kernel]:
    """DeduplicateSlices after `order_passes` (var None), on outputs padded to the number
    of indices n: (zero, ranks, chunks, sum).
    - zero: params (summed, unique): zeroes both (the padding rows stay zero);
    - ranks: `sort.first_kernels` (mark, sums, scan, prefix; `chunks` chunk sums): each
      run's row in first-occurrence order (the reference's), ``first[order[k]]`` for the
      run starting at sorted position k, and the number of runs in ``count[0]``;
    - sum: params (values, indices, order, first, summed, unique): one thread per sorted
      position and column; the first of a run sums the run's values in position order
      from zero (the reference's ``np.add.at``) into row ``first[order[k]]``."""
    n = _size(indices.shape)
    inner = _size(values.shape[1:])
    if not has_gpu_type(values.dtype) or values.dtype.kind == "bool":
        raise Unsupported(f"DeduplicateSlices of {values.dtype.ir_name}")
    if n == 0 or inner == 0 or n >= 2**31 - 1:
        raise Unsupported("DeduplicateSlices of empty values or too many indices")
    t, it = numba_type(values.dtype), numba_type(indices.dtype)
    head = "(k == 0 or indices[order[k - 1]] != indices[order[k]])"

    z = Writer()
    z("@cuda.jit")
    z(f"def {name}_zero(summed, unique):")
    with z.indent():
        z(f"for o in range(cuda.grid(1), {n * inner}, cuda.gridsize(1)):")
        z(f"    summed[o] = {t}(0)")
        z(f"    if o < {n}:")
        z(f"        unique[o] = {it}(0)")
    zero = Kernel(f"{name}_zero", module(z), [t, it], *launch_1d(n * inner))

    ranks, chunks = first_kernels(indices, n, name, chunk)

    m = Writer()
    m("@cuda.jit")
    m(f"def {name}(values, indices, order, first, summed, unique):")
    with m.indent():
        m(f"for o in range(cuda.grid(1), {n * inner}, cuda.gridsize(1)):")
        with m.indent():
            m(f"k = o // {inner}")
            m(f"e = o % {inner}")
            m(f"if {head}:")
            with m.indent():
                m("row = indices[order[k]]")
                m(f"acc = {t}(0)")
                m("q = k")
                m(f"while q < {n} and indices[order[q]] == row:")
                m(f"    acc = {t}(acc + values[order[q] * {inner} + e])")
                m("    q += 1")
                m("d = first[order[k]]")
                m(f"summed[d * {inner} + e] = acc")
                m("if e == 0:")
                m("    unique[d] = row")
    total = Kernel(name, module(m), [t, it, "int32", "int32", t, it], *launch_1d(n * inner))
    return zero, ranks, chunks, total


def bad_row_message(var_name: str, var: TensorType, details: Sequence[int]) -> str:
    """The reference's message (`compiler/ops/scatter._checked_rows`) from the status
    details: the first bad position and its value as (low, high) int32 halves."""
    k, lo, hi = details
    value = (lo & 0xFFFFFFFF) | (hi << 32)
    return (f"indices[{k}] = {value} is not in [0, {var.shape[0]}) (rows of variable "
            f"'{var_name}', shape {format_shape(var.shape)})")


__all__ = ["SCATTER_OPS", "STATUS_BAD_ROW", "STATUS_WIDTH", "apply_kernel", "bad_row_message",
           "dedupe_kernels", "gather_kernel", "order_passes"]
