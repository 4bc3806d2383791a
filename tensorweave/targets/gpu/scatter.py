"""UnsortedSegmentSum (the gradient of Gather): ``out[ids[i], ...] += data[i, ...]``.

Two kernels: one zeroes the output, then one thread per data element adds it into its
segment with an atomic add, so the work is proportional to the data, not to data times
segments. The order of the additions is not fixed: float sums may differ from the
reference in the last bits (integer sums are exact). Negative ids are dropped
(TensorFlow's rule); an id >= num_segments is reported through the kernel's status.
"""

from __future__ import annotations

import numpy as np

from ...compiler.ir import Node
from .source import Kernel, Unsupported, Writer, launch_1d, module, numba_type

STATUS_BAD_SEGMENT = 1
# dtypes numba's cuda.atomic.add handles
_ATOMIC = frozenset({"float32", "float64", "int32", "int64"})


def zero_kernel(node: Node, name: str) -> Kernel:
    """Zero `node`'s single output."""
    out = node.outputs[0].type
    total = int(np.prod([int(s) for s in out.shape], dtype=np.int64))
    t = numba_type(out.dtype)
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(out):")
    w(f"    for o in range(cuda.grid(1), {total}, cuda.gridsize(1)):")
    w(f"        out[o] = {t}(0)")
    grid, block = launch_1d(total)
    return Kernel(name, module(w), [t], grid, block)


def segment_sum_kernel(node: Node, name: str) -> Kernel:
    """The scatter-add kernel of UnsortedSegmentSum `node` (its output zeroed first)."""
    data, ids, out = node.inputs[0].type, node.inputs[1].type, node.outputs[0].type
    if data.dtype.np.name not in _ATOMIC:
        raise Unsupported(f"no atomic add for {data.dtype.ir_name}")
    rows = int(np.prod([int(s) for s in ids.shape], dtype=np.int64))
    total = int(np.prod([int(s) for s in data.shape], dtype=np.int64))
    n_out = int(np.prod([int(s) for s in out.shape], dtype=np.int64))
    if total == 0 or n_out == 0:
        raise Unsupported("empty input or result")
    inner = total // rows
    segments = int(node.attrs["num_segments"])
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(data, ids, out, status):")
    with w.indent():
        w(f"for o in range(cuda.grid(1), {total}, cuda.gridsize(1)):")
        with w.indent():
            w(f"s = ids[o // {inner}]")
            w(f"if s >= {segments}:")
            w(f"    status[0] = {STATUS_BAD_SEGMENT}")
            w("elif s >= 0:")
            w(f"    cuda.atomic.add(out, s * {inner} + o % {inner}, data[o])")
    grid, block = launch_1d(total)
    return Kernel(name, module(w), [numba_type(data.dtype), numba_type(ids.dtype),
                                    numba_type(out.dtype), "int32"], grid, block, True)


def bad_segment_message(node: Node) -> str:
    return f"a segment id is not < num_segments = {node.attrs['num_segments']}"


__all__ = ["STATUS_BAD_SEGMENT", "bad_segment_message", "segment_sum_kernel", "zero_kernel"]
