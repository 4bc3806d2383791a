"""The parts of a GPU step plan (`step.StepPlan`): where a value lives (`Storage`,
`Slot`) and the actions a step runs in order: kernel launches, device-to-device copies,
host calls for nodes with no GPU kernel, loops whose body actions run on the device a
number of times fixed at plan time or decided by a device predicate each iteration, and
conditionals running one of two action lists by a device predicate."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...compiler.dtypes import DType
from ...compiler.ir import Node
from .lowering import ErrorFn
from .source import Kernel


class Ineligible(Exception):
    """The graph cannot run as one GPU step (the message says why)."""


@dataclass(frozen=True)
class Storage:
    """Where a value's elements live: ("arg", i), ("const", i), ("var", name) or
    ("tmp", i)."""

    kind: str
    key: object


ROW_ALIGN = 256  # bytes between the starts of a row buffer's entries (a multiple of this)


@dataclass(frozen=True)
class Offset:
    """``const + sum(coef * T(loop))``: a stack cursor that depends on the trip counts T
    of loops whose count is known only at run time (the runner has them when it needs
    the entry: those loops have run). Arithmetic with ints; `offset` makes an int of one
    with no terms."""

    const: int
    terms: tuple[tuple[str, int], ...] = ()  # (`Loop.key`, coefficient), sorted

    @staticmethod
    def trips(loop: str) -> Offset:
        """T(loop) itself."""
        return Offset(0, ((loop, 1),))

    def __add__(self, other: int | Offset) -> int | Offset:
        o = other if isinstance(other, Offset) else Offset(int(other))
        terms = dict(self.terms)
        for k, c in o.terms:
            terms[k] = terms.get(k, 0) + c
        return offset(self.const + o.const, tuple(sorted((k, c) for k, c in terms.items()
                                                          if c)))

    __radd__ = __add__

    def __sub__(self, other: int | Offset) -> int | Offset:
        return self + (-1) * other

    def __rsub__(self, other: int) -> int | Offset:
        return (-1) * self + other

    def __mul__(self, k: int) -> int | Offset:
        return offset(self.const * k, tuple((n, c * k) for n, c in self.terms if c * k))

    __rmul__ = __mul__

    def value(self, trips: dict[str, int]) -> int:
        """The offset for the trip counts `trips` of the loops it names."""
        return self.const + sum(c * trips[n] for n, c in self.terms)

    def __str__(self) -> str:
        return " + ".join([str(self.const), *(f"{c}*T({n})" for n, c in self.terms)])


def offset(const: int, terms: tuple[tuple[str, int], ...] = ()) -> int | Offset:
    """An int when there are no terms, else an `Offset`."""
    return Offset(const, terms) if terms else const


@dataclass
class Slot:
    """A value's storage, dtype and shape. With `row` = (base, step), the value is entry
    ``(base + step * t) % rows`` of a buffer of `rows` entries (t: the iteration of the
    loop whose body reads it; 0 outside loops): a loop variable's double buffer, a
    stack's entries (`loops.py`)."""

    storage: Storage
    dtype: DType
    shape: tuple[int, ...]
    row: tuple[int | Offset, int] | None = None
    rows: int = 1

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def row_stride(self) -> int:
        """Bytes between two entries of the slot's row buffer."""
        return row_stride(self.size * self.dtype.np.itemsize)


def row_stride(nbytes: int) -> int:
    """Bytes per entry of a row buffer whose entries hold `nbytes` (aligned starts)."""
    return -(-max(1, nbytes) // ROW_ALIGN) * ROW_ALIGN


@dataclass
class Launch:
    """Run `kernel` on the buffers of `args` (inputs then outputs, flattened)."""

    node: Node
    kernel: Kernel
    args: list[Slot]
    errors: ErrorFn | None = None
    status_index: int | None = None  # which entry of the step's status array it writes
    call_index: bool = False  # the kernel first takes the node's call index (random ops)


@dataclass
class Copy:
    """Device-to-device copy (ReadVariable of an assigned variable, AssignVariable)."""

    node: Node
    src: Slot
    dst: Slot


@dataclass
class HostCall:
    """Run `node`'s reference kernel on the host: download inputs, upload outputs."""

    node: Node
    reason: str
    inputs: list[Slot]
    outputs: list[Slot]


@dataclass
class Loop:
    """While `node` on the device: `body`, planned once, runs `trips` times (its slots
    with a `row` step through their buffers with the iteration). See `loops.py`.

    With `trips` None the trip count is known only at run time: each iteration runs the
    `cond` actions, downloads the one-element `predicate` and runs the body while it is
    true, at most `limit` times (-1: no limit). A double-buffered loop variable's result
    is then entry 0 of its buffer: after an odd number of iterations the runner copies
    each `finals` pair (entry 1, entry 0)."""

    node: Node
    trips: int | None
    body: list[Action]
    cond: list[Action] = field(default_factory=list)
    predicate: Slot | None = None
    limit: int = -1
    finals: list[tuple[Slot, Slot]] = field(default_factory=list)
    key: str = ""  # the loop's name in `Offset` terms (node names repeat across regions)


@dataclass
class Branch:
    """If `node` on the device: download the one-element `predicate`, then run `then`
    when it is true, else `orelse`; both end by writing the If's output buffers. See
    `branches.py`."""

    node: Node
    predicate: Slot
    then: list[Action]
    orelse: list[Action]


Action = Launch | Copy | HostCall | Loop | Branch


def walk_actions(actions: list[Action]) -> list[Action]:
    """`actions` and the actions of their loops' conds and bodies and of their branches,
    in order."""
    out: list[Action] = []
    for a in actions:
        out.append(a)
        if isinstance(a, Loop):
            out.extend(walk_actions(a.cond))
            out.extend(walk_actions(a.body))
        elif isinstance(a, Branch):
            out.extend(walk_actions(a.then))
            out.extend(walk_actions(a.orelse))
    return out


__all__ = ["ROW_ALIGN", "Action", "Branch", "Copy", "HostCall", "Ineligible", "Launch", "Loop", "Offset",
           "Slot", "offset",
           "Storage", "row_stride", "walk_actions"]
