"""How GPU kernels reduce: accumulators (type, initial value, combine, finish) and the
shared-memory tree that combines one block's partial results.

As in the cpu target, float sums and means accumulate in float64 and integer ones in
int64 (the result wraps to the input type, as NumPy's does), Max/Min propagate NaN and
integer Mean truncates toward zero. A block reduces in a fixed tree order, so results do
not depend on timing.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...compiler.dtypes import DType, bool_, float64, int64
from .source import Writer, numba_type

REDUCTIONS = frozenset({"Sum", "Mean", "Max", "Min", "Prod", "All", "Any"})


@dataclass(frozen=True)
class Accumulator:
    """One reduction: `op` over values of `src`, accumulated in `acc`."""

    op: str
    src: DType
    acc: DType

    @property
    def type(self) -> str:
        return numba_type(self.acc)

    def init(self) -> str:
        """The identity of the combination, as source."""
        if self.op in ("All", "Any"):
            return "True" if self.op == "All" else "False"
        if self.op in ("Sum", "Mean"):
            return f"{self.type}(0)"
        if self.op == "Prod":
            return f"{self.type}(1)"
        if self.acc.kind == "float":
            return f"{self.type}(-math.inf)" if self.op == "Max" else f"{self.type}(math.inf)"
        if self.acc.kind == "uint":
            lo, hi = 0, 2 ** self.acc.bits - 1
        else:
            lo, hi = -(2 ** (self.acc.bits - 1)), 2 ** (self.acc.bits - 1) - 1
        return f"{self.type}({lo if self.op == 'Max' else hi})"

    def combine(self, a: str, x: str) -> str:
        """`a` combined with `x` (both of the accumulator's type), as source."""
        if self.op in ("Sum", "Mean"):
            return f"{self.type}({a} + {x})"
        if self.op == "Prod":
            return f"{self.type}({a} * {x})"
        if self.op in ("All", "Any"):
            return f"({a} and {x})" if self.op == "All" else f"({a} or {x})"
        cmp = ">" if self.op == "Max" else "<"
        if self.acc.kind == "float":  # NaN wins, as np.max
            return f"({a} if ({a} {cmp} {x} or {a} != {a}) else {x})"
        return f"({a} if {a} {cmp} {x} else {x})"

    def convert(self, x: str) -> str:
        """An input value as the accumulator's type."""
        return x if self.acc is self.src else f"{self.type}({x})"

    def finish(self, total: str, count: int, out: DType) -> str:
        """The reduction's result from the combined `total` of `count` values."""
        t = numba_type(out)
        if self.op != "Mean":
            return f"{t}({total})"
        if self.acc.kind == "float":
            return f"{t}({total} / {float(count)!r})"
        # C's division (toward zero), as TensorFlow's integer mean
        return f"{t}(({total} // {count}) if {total} >= 0 else -((-{total}) // {count}))"


def accumulator(op: str, src: DType) -> Accumulator:
    """The accumulator of reduction `op` over values of dtype `src`."""
    if op in ("All", "Any"):
        return Accumulator(op, src, bool_)
    if op in ("Sum", "Mean", "Prod"):
        return Accumulator(op, src, float64 if src.kind == "float" else int64)
    return Accumulator(op, src, src)


def block_tree(w: Writer, parts: list[tuple[Accumulator, str, str]], block: int) -> None:
    """Emit the combination of one block's partial results: for each (accumulator, local
    variable, shared array), every thread stores its local, then halving steps combine
    pairs; thread 0's slot ends up with the block's result. Every thread of the block
    must reach this code (it synchronizes)."""
    for _, local, shared in parts:
        w(f"{shared}[tid] = {local}")
    w("cuda.syncthreads()")
    w(f"half = {block // 2}")
    w("while half > 0:")
    with w.indent():
        w("if tid < half:")
        with w.indent():
            for acc, _, shared in parts:
                w(f"{shared}[tid] = {acc.combine(f'{shared}[tid]', f'{shared}[tid + half]')}")
        w("cuda.syncthreads()")
        w("half //= 2")


def shared_decl(name: str, acc: Accumulator, block: int) -> str:
    """The declaration of a block's shared array of partial results."""
    return f"{name} = cuda.shared.array({block}, {acc.type})"


__all__ = ["REDUCTIONS", "Accumulator", "accumulator", "block_tree", "shared_decl"]
