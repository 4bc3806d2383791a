"""Generated kernel source: the `Kernel` record every generator returns, and helpers to
write Python for ``numba.cuda.jit``.

A kernel is one Python module (text) holding one ``@cuda.jit`` function, `name`, whose
parameters are contiguous one-dimensional arrays (every buffer is flattened: shapes are
static, so the generators bake sizes and strides into the code as constants) and, for
kernels that can fail, a one-element int32 *status* array. Keeping every parameter a
``T[::1]`` gives one signature per kernel, which is what `ptx.compile_ptx` needs to
compile it ahead of time for a given compute capability.

Values are typed explicitly (``float32(1.0)``, ``int8(x + y)``): numba would otherwise
promote float32 arithmetic with a Python float to float64, and small integers to int64,
which on a GPU costs double-precision throughput and loses NumPy's wrap-around.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...compiler.dtypes import DType

# NumPy dtype name -> numba type name (imported by every kernel module's prelude)
NUMBA_TYPES = {"float32": "float32", "float64": "float64", "int8": "int8", "int16": "int16",
               "int32": "int32", "int64": "int64", "uint8": "uint8", "bool": "boolean"}

PRELUDE = ("import math\n\n"
           "from numba import cuda\n"
           "from numba import boolean, float32, float64, int8, int16, int32, int64, uint8\n")


class Unsupported(Exception):
    """A node has no GPU kernel (the message says why): it runs on the host."""


def numba_type(dtype: DType) -> str:
    """The numba type name of `dtype`; `Unsupported` for dtypes with no GPU code
    (float16, bfloat16), so a generator that meets one declines the node."""
    name = NUMBA_TYPES.get(dtype.np.name)
    if name is None:
        raise Unsupported(f"no GPU code for {dtype.ir_name}")
    return name


def has_gpu_type(dtype: DType) -> bool:
    """Whether kernels can read and write `dtype` (no float16/bfloat16 yet)."""
    return dtype.np.name in NUMBA_TYPES


@dataclass
class Kernel:
    """One generated kernel and how to launch it.

    `params` are the numba types of the one-dimensional array parameters, in order
    (the status array, when `can_fail`, is the last one); `grid` and `block` are the
    launch configuration (tuples of up to three ints)."""

    name: str
    source: str
    params: list[str]
    grid: tuple[int, ...]
    block: tuple[int, ...]
    can_fail: bool = False
    # shared memory per block in bytes (static arrays), for the launch checks
    shared_bytes: int = 0
    # entries of the step's status array the kernel writes: the code, then details for
    # the message (GatherNd: the failing index's coordinates)
    status_width: int = 1

    @property
    def signature(self) -> str:
        """The numba signature string, e.g. ``void(float32[::1], int32[::1])``."""
        return "void(" + ", ".join(f"{t}[::1]" for t in self.params) + ")"


class Writer:
    """Indented lines of Python."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0
        self._tmp = 0

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def indent(self) -> _Indent:
        return _Indent(self)

    def tmp(self, prefix: str = "t") -> str:
        """A fresh local variable name."""
        self._tmp += 1
        return f"{prefix}{self._tmp}"

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


class _Indent:
    def __init__(self, w: Writer) -> None:
        self.w = w

    def __enter__(self) -> Writer:
        self.w.depth += 1
        return self.w

    def __exit__(self, *exc: object) -> None:
        self.w.depth -= 1


def module(kernel_lines: Writer) -> str:
    """The full module text: the prelude, then the kernel (no device functions: a kernel
    is compiled to PTX on its own, ahead of time)."""
    return PRELUDE + "\n\n" + kernel_lines.text()


def decompose(w: Writer, linear: str, sizes: list[int], prefix: str) -> list[str]:
    """Emit code splitting index `linear` over row-major `sizes`; returns the names of
    the coordinates (constants for size-1 dims)."""
    coords = [""] * len(sizes)
    rest = linear
    for d in range(len(sizes) - 1, -1, -1):
        name = f"{prefix}{d}"
        if d == 0:
            w(f"{name} = {rest}")
        else:
            w(f"{name} = {rest} % {sizes[d]}")
            nxt = f"{prefix}r{d}"
            w(f"{nxt} = {rest} // {sizes[d]}")
            rest = nxt
        coords[d] = name
    return coords


def offset_expr(coords: list[str], strides: list[int]) -> str:
    """``c0 * s0 + c1 * s1 ...`` skipping zero strides; "0" when nothing is left."""
    terms = [c if s == 1 else f"{c} * {s}" for c, s in zip(coords, strides) if s]
    return " + ".join(terms) if terms else "0"


def row_major_strides(shape: list[int] | tuple[int, ...]) -> list[int]:
    """Element strides of a C-contiguous array of `shape`."""
    strides, acc = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = acc
        acc *= int(shape[d])
    return strides


def launch_1d(total: int, block: int = 256, max_blocks: int = 1024) -> tuple[tuple[int], tuple[int]]:
    """A launch covering `total` threads with grid-stride loops: blocks of `block`
    threads (fewer, in whole warps, for small totals), at most `max_blocks` blocks."""
    threads = max(32, min(block, -(-total // 32) * 32))
    blocks = max(1, min(max_blocks, -(-total // threads)))
    return (blocks,), (threads,)


def pow2_block(count: int, low: int = 32, high: int = 256) -> int:
    """A power-of-two block size for a tree reduction over `count` elements."""
    b = low
    while b < high and b < count:
        b *= 2
    return b


__all__ = ["NUMBA_TYPES", "PRELUDE", "Kernel", "Unsupported", "Writer", "decompose",
           "has_gpu_type", "launch_1d", "module", "numba_type", "offset_expr", "pow2_block",
           "row_major_strides"]
