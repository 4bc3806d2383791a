"""A stable sort of index positions by index value, and the first-occurrence ranks of
the sorted runs, in O(n log n) work: what the scatters and DeduplicateSlices need
(`sparse.py`), for any number of indices.

The sort orders the positions ``0..n-1`` by ``(indices[p], p)``, exactly: the result is
the one permutation that order defines, so the kernels that sum a row's run in that
order add in the reference's order (bitwise its result), however the threads run.

- *chunk sort*: the positions are cut into chunks of `chunk` (256) consecutive ones;
  each thread ranks its position within its chunk by comparing it with the chunk's
  others (``chunk`` comparisons per position) and writes it at that rank;
- *merges*: sorted runs of width w, 2w, 4w ... are merged pairwise until one run is
  left, one launch per width. A position in a left run moves forward by the number of
  elements of the right run with a smaller index (a binary search), one in a right run
  back by the number of the left run's elements with a smaller or equal index: equal
  indices keep their left-run (earlier) positions first, so the sort stays stable.
  The passes alternate between two buffers, arranged so the last one writes `order`.

`first_kernels` then numbers the runs by their first position (the reference's
DeduplicateSlices order: first occurrence): a mark per position (1 where a run starts),
then an exclusive prefix sum of the marks by chunks (a sum per chunk, a scan of the
chunk sums, a scan inside each chunk), so ``first[order[k]]`` is the row of the run that
starts at sorted position ``k``, and ``count[0]`` the number of runs.

With `counted`, only the first ``count[0]`` positions are sorted (DeduplicateSlices'
padded rows feeding a scatter); the passes for the static bound still run, the extra
ones copying.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...compiler.types import TensorType
from .source import Kernel, Writer, launch_1d, module, numba_type

SORT_CHUNK = 256
"""Positions ranked by direct comparison before the merges (read at plan time: the
simulator tests lower it to run the merges on a few indices)."""


@dataclass(frozen=True)
class SortPass:
    """One launch of a sort: `kernel` reads the positions of buffer `src` (None for the
    chunk sort, which starts from the identity) and writes buffer `dst`; buffer 0 is the
    sort's `order` output, buffer 1 its scratch."""

    kernel: Kernel
    src: int | None
    dst: int


def merge_widths(n: int, chunk: int | None = None) -> list[int]:
    """The run widths the merge passes start from for `n` positions."""
    widths, w = [], chunk or SORT_CHUNK
    while w < n:
        widths.append(w)
        w *= 2
    return widths


def sort_passes(indices: TensorType, n: int, name: str, counted: bool = False,
                rows: int | None = None, report_bad: object = None,
                status_width: int = 1, chunk: int | None = None) -> list[SortPass]:
    """The launches sorting positions ``0..n-1`` of `indices` stably by value.

    Params: the chunk sort (indices, [count,] dst[, status]), each merge (indices,
    [count,] src, dst). With `rows`, the chunk sort also reports the first index outside
    ``[0, rows)``: `report_bad(writer, rows)` emits that check (it may fail: a status of
    `status_width` entries is its last param)."""
    chunk = chunk or SORT_CHUNK
    it = numba_type(indices.dtype)
    last = "m" if counted else str(n)
    head = f"def {{}}(indices, {'count, ' if counted else ''}"
    widths = merge_widths(n, chunk)
    dst = len(widths) % 2  # so that the last pass writes buffer 0

    w = Writer()
    w("@cuda.jit")
    w(head.format(f"{name}_sort") + f"dst{'' if rows is None else ', status'}):")
    with w.indent():
        w("m = count[0]" if counted else f"m = {n}")
        w(f"for i in range(cuda.grid(1), {last}, cuda.gridsize(1)):")
        with w.indent():
            w("ix = indices[i]")
            w(f"b0 = (i // {chunk}) * {chunk}")
            w(f"b1 = min(b0 + {chunk}, m)")
            w("r = 0")
            w("for j in range(b0, b1):")
            with w.indent():
                w("jx = indices[j]")
                w("if jx < ix or (jx == ix and j < i):")
                w("    r += 1")
            w("dst[b0 + r] = int32(i)")
            if rows is not None:
                report_bad(w, rows)
    params = [it] + (["int32"] if counted else []) + ["int32"]
    grid, block = launch_1d(n)
    if rows is None:
        first = Kernel(f"{name}_sort", module(w), params, grid, block)
    else:
        first = Kernel(f"{name}_sort", module(w), params + ["int32"], grid, block, True,
                       status_width=status_width)
    passes = [SortPass(first, None, dst)]
    for width in widths:
        passes.append(SortPass(_merge_kernel(f"{name}_merge{width}", it, n, width, counted),
                               dst, 1 - dst))
        dst = 1 - dst
    assert passes[-1].dst == 0
    return passes


def _merge_kernel(name: str, it: str, n: int, width: int, counted: bool) -> Kernel:
    """Merge the sorted runs of `width` pairwise (see the module docstring)."""
    w = Writer()
    w("@cuda.jit")
    w(f"def {name}(indices, {'count, ' if counted else ''}src, dst):")
    with w.indent():
        w("m = count[0]" if counted else f"m = {n}")
        w(f"for t in range(cuda.grid(1), {'m' if counted else n}, cuda.gridsize(1)):")
        with w.indent():
            w("p = src[t]")
            w("key = indices[p]")
            w(f"base = (t // {2 * width}) * {2 * width}")
            w(f"mid = base + {width}")
            w("if t < mid:")  # left run: the right run's elements with a smaller index
            with w.indent():
                w("lo = mid")
                w("a = mid")
                w(f"b = min(base + {2 * width}, m)")
                w("while a < b:")
                with w.indent():
                    w("c = (a + b) // 2")
                    w("if indices[src[c]] < key:")
                    w("    a = c + 1")
                    w("else:")
                    w("    b = c")
                w("dst[t + (a - lo)] = p")
            w("else:")  # right run: the left run's elements with a smaller or equal index
            with w.indent():
                w("a = base")
                w("b = mid")
                w("while a < b:")
                with w.indent():
                    w("c = (a + b) // 2")
                    w("if indices[src[c]] <= key:")
                    w("    a = c + 1")
                    w("else:")
                    w("    b = c")
                w(f"dst[t - {width} + (a - base)] = p")
    params = [it] + (["int32"] if counted else []) + ["int32", "int32"]
    return Kernel(name, module(w), params, *launch_1d(n))


def first_kernels(indices: TensorType, n: int, name: str,
                  chunk: int | None = None) -> tuple[list[Kernel], int]:
    """The launches numbering the sorted runs by first occurrence, and the number of
    chunk sums they need. Params: mark (indices, order, first), sums (first, sums),
    scan (sums, count), prefix (first, sums); `first` has n int32 entries, `sums` the
    returned number, `count` one."""
    chunk = chunk or SORT_CHUNK
    it = numba_type(indices.dtype)
    chunks = -(-n // chunk)
    head = "(k == 0 or indices[order[k - 1]] != indices[order[k]])"

    mark = Writer()
    mark("@cuda.jit")
    mark(f"def {name}_mark(indices, order, first):")
    with mark.indent():
        mark(f"for k in range(cuda.grid(1), {n}, cuda.gridsize(1)):")
        mark(f"    first[order[k]] = int32(1) if {head} else int32(0)")

    sums = Writer()
    sums("@cuda.jit")
    sums(f"def {name}_sums(first, sums):")
    with sums.indent():
        sums(f"for c in range(cuda.grid(1), {chunks}, cuda.gridsize(1)):")
        with sums.indent():
            sums("s = 0")
            sums(f"for p in range(c * {chunk}, min(c * {chunk} + {chunk}, {n})):")
            sums("    s += first[p]")
            sums("sums[c] = int32(s)")

    scan = Writer()  # one thread: the chunk sums are n / chunk numbers
    scan("@cuda.jit")
    scan(f"def {name}_scan(sums, count):")
    with scan.indent():
        scan("if cuda.grid(1) == 0:")
        with scan.indent():
            scan("s = 0")
            scan(f"for c in range({chunks}):")
            scan("    v = sums[c]")
            scan("    sums[c] = int32(s)")
            scan("    s += v")
            scan("count[0] = int32(s)")

    prefix = Writer()
    prefix("@cuda.jit")
    prefix(f"def {name}_prefix(first, sums):")
    with prefix.indent():
        prefix(f"for c in range(cuda.grid(1), {chunks}, cuda.gridsize(1)):")
        with prefix.indent():
            prefix("s = sums[c]")
            prefix(f"for p in range(c * {chunk}, min(c * {chunk} + {chunk}, {n})):")
            prefix("    v = first[p]")
            prefix("    first[p] = int32(s)")
            prefix("    s += v")

    return [Kernel(f"{name}_mark", module(mark), [it, "int32", "int32"], *launch_1d(n)),
            Kernel(f"{name}_sums", module(sums), ["int32", "int32"], *launch_1d(chunks)),
            Kernel(f"{name}_scan", module(scan), ["int32", "int32"], (1,), (32,)),
            Kernel(f"{name}_prefix", module(prefix), ["int32", "int32"],
                   *launch_1d(chunks))], chunks


__all__ = ["SORT_CHUNK", "SortPass", "first_kernels", "merge_widths", "sort_passes"]
