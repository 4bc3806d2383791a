"""DynamicUpdateRow (a `tw.scan` accumulator's step): ``out = tensor; out[index] = row``.

Three kernels: the copy (``update_row_kernel``: one thread per element of the result,
each taking the row's or the tensor's element), the in-place update a loop plans
when the body overwrites its own loop variable and reads it nowhere after
(``update_row_in_place_kernel``: one thread per element of the row; see `loops.py`),
and the in-place row addition of a scan gradient's "row_add" loop variable
(``add_row_in_place_kernel``).
An index outside ``[0, rows)`` writes the code and the index into the kernel's status
entries (nothing is written), so the step fails with the reference's message.
"""

from __future__ import annotations

import numpy as np

from ...compiler.ir import Node
from .scatter import STATUS_BAD_SEGMENT
from .source import Kernel, Unsupported, Writer, launch_1d, module, numba_type

STATUS_BAD_ROW = 1


def _sizes(node: Node) -> tuple[int, int]:
    """(rows of the tensor, elements per row); `Unsupported` for empty tensors."""
    shape = [int(s) for s in node.inputs[0].type.shape]
    rows, inner = shape[0], int(np.prod(shape[1:], dtype=np.int64))
    if rows * inner == 0:
        raise Unsupported("empty tensor")
    return rows, inner


def _read_row_index(w: Writer, rows: int) -> None:
    """Kernel lines reading the row index into ``ix``; one outside ``[0, rows)`` is
    reported through the status (code and index) and the kernel writes nothing."""
    w("ix = index[0]")
    w(f"if ix < 0 or ix >= {rows}:")
    w("    if cuda.grid(1) == 0:")
    w(f"        status[0] = {STATUS_BAD_ROW}")
    w("        status[1] = ix")
    w("    return")


def update_row_kernel(node: Node, name: str) -> Kernel:
    """``out[o] = row[o % inner] if o // inner == index else tensor[o]``."""
    rows, inner = _sizes(node)
    t = numba_type(node.inputs[0].type.dtype)
    total = rows * inner
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(tensor, index, row, out, status):")
    with w.indent():
        _read_row_index(w, rows)
        w(f"for o in range(cuda.grid(1), {total}, cuda.gridsize(1)):")
        w(f"    out[o] = row[o % {inner}] if o // {inner} == ix else tensor[o]")
    grid, block = launch_1d(total)
    return Kernel(name, module(w), [t, numba_type(node.inputs[1].type.dtype), t, t, "int32"],
                  grid, block, True, status_width=2)


def update_row_in_place_kernel(node: Node, name: str) -> Kernel:
    """``buf[index * inner + e] = row[e]`` on the tensor's own buffer."""
    rows, inner = _sizes(node)
    t = numba_type(node.inputs[0].type.dtype)
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(index, row, buf, status):")
    with w.indent():
        _read_row_index(w, rows)
        w(f"for e in range(cuda.grid(1), {inner}, cuda.gridsize(1)):")
        w(f"    buf[ix * {inner} + e] = row[e]")
    grid, block = launch_1d(inner)
    return Kernel(name, module(w), [numba_type(node.inputs[1].type.dtype), t, t, "int32"],
                  grid, block, True, status_width=2)


def add_row_in_place_kernel(node: Node, name: str) -> Kernel:
    """``buf[id * inner + e] += row[e]`` for UnsortedSegmentSum `node` with one scalar
    segment id (``node`` = (row, id)), on the buffer its sum is added to: a scan's
    gradient of a sequence it reads row by row. A negative id adds nothing (TensorFlow's
    rule); one >= num_segments is reported through the status."""
    row_t, ids_t = node.inputs[0].type, node.inputs[1].type
    inner = int(np.prod([int(s) for s in row_t.shape], dtype=np.int64))
    segments = int(node.attrs["num_segments"])
    if inner == 0 or segments == 0 or ids_t.rank != 0:
        raise Unsupported("empty row or buffer, or several segment ids")
    t = numba_type(row_t.dtype)
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(ids, row, buf, status):")
    with w.indent():
        w("s = ids[0]")
        w(f"if s >= {segments}:")
        w("    if cuda.grid(1) == 0:")
        w(f"        status[0] = {STATUS_BAD_SEGMENT}")
        w("    return")
        w("if s < 0:")
        w("    return")
        w(f"for e in range(cuda.grid(1), {inner}, cuda.gridsize(1)):")
        w(f"    buf[s * {inner} + e] = {t}(buf[s * {inner} + e] + row[e])")
    grid, block = launch_1d(inner)
    return Kernel(name, module(w), [numba_type(ids_t.dtype), t, t, "int32"], grid, block,
                  True)


def bad_row_message(node: Node, index: int) -> str:
    """The reference kernel's message for an index outside the tensor's rows."""
    rows = node.inputs[0].type.shape[0]
    return f"index {index} is not in [0, {rows}) (rows of the tensor)"


__all__ = ["STATUS_BAD_ROW", "add_row_in_place_kernel", "bad_row_message",
           "update_row_in_place_kernel", "update_row_kernel"]
