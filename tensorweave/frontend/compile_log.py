"""A record of every trace and compile of the process, and why each happened.

    print(tw.debugging.compile_log())

lists, for each `tw.compile` function, every trace (``first call``, ``new shape of x``,
``new value of the static argument lr``, ...), every compile of a trace (on its first
call: the pipeline and the target's code generation) and every native step the cpu
target builds for new argument shapes (an input signature's unknown dims are specialized
per shape), with the time of each phase and whether the machine code came from the
compile caches. ``fn.experimental_get_compile_stats()`` gives the records of one function.

A compile whose trace, pipeline and code generation together take over
`LONG_COMPILE_SECONDS` (1 s; the environment variable ``TW_LONG_COMPILE_SECONDS``
changes it) logs one INFO line on logger ``tensorweave`` saying what was compiled, for
which target, and how long each phase took; so does every native step built for new
shapes after the first, and every compile of a function made with
``tw.compile(..., jit_compile_stats=True)``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("tensorweave")

# How long a compile may take before it is logged (seconds).
LONG_COMPILE_SECONDS = 1.0
# Records kept (the oldest go first): a process that retraces forever stays bounded.
MAX_RECORDS = 10_000

PHASES = ("trace", "pipeline", "codegen")


def long_compile_seconds() -> float:
    """The threshold above which a compile logs its INFO line."""
    value = os.environ.get("TW_LONG_COMPILE_SECONDS", "").strip()
    return float(value) if value else LONG_COMPILE_SECONDS


@dataclass(frozen=True)
class CompileRecord:
    """One trace or compile: `event` is ``"trace"``, ``"compile"`` (a trace's first call:
    pipeline and code generation) or ``"native step"`` (the cpu target's code for new
    argument shapes of a trace compiled before). `phases` maps ``trace``, ``pipeline``
    and ``codegen`` to seconds; `cache` says where the machine code came from."""

    event: str
    function: str
    signature: str
    target: str
    reason: str
    phases: dict[str, float]
    cache: str = ""
    started: float = 0.0  # time.time() when the record was made
    owner: int = field(default=0, repr=False, compare=False)  # id() of the tw.compile function

    @property
    def seconds(self) -> float:
        """The total time of the phases."""
        return sum(self.phases.values())

    def describe(self) -> str:
        """One line: what was compiled, for which target, each phase's time, and why."""
        phases = ", ".join(f"{_PHASE_WORDS[p]} {self.phases[p]:.2f} s" for p in PHASES
                           if p in self.phases)
        what = {"trace": "traced", "compile": "compiled",
                "native step": "compiled a native step of"}[self.event]
        extra = "; ".join(x for x in (self.reason, self.cache) if x)
        return (f"{what} {self.function}({self.signature}) for the {self.target} target in "
                f"{self.seconds:.2f} s ({phases})" + (f": {extra}" if extra else ""))


_PHASE_WORDS = {"trace": "trace", "pipeline": "pipeline", "codegen": "code generation"}


class CompileLog(list):
    """A list of `CompileRecord`s that prints as a table (``print(log)``)."""

    def table(self) -> str:
        """The records as columns: event, function, signature, target, reason, cache and
        the seconds of each phase."""
        from ..debugging import format_table
        header = ("#", "event", "function", "signature", "target", "reason", "cache",
                  "trace s", "pipeline s", "codegen s", "total s")
        rows = [header]
        for i, r in enumerate(self):
            times = [f"{r.phases[p]:.3f}" if p in r.phases else "-" for p in PHASES]
            rows.append((str(i), r.event, r.function, _clip(r.signature, 48), r.target,
                         _clip(r.reason, 60), r.cache or "-", *times, f"{r.seconds:.3f}"))
        if len(rows) == 1:
            return "no traces or compiles yet"
        return format_table(rows)

    def __str__(self) -> str:
        return self.table()


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n - 3] + "..."


_records: deque[CompileRecord] = deque(maxlen=MAX_RECORDS)
_records_lock = threading.Lock()


def add(record: CompileRecord, *, announce: bool = False) -> CompileRecord:
    """Keep `record`; log it at INFO when `announce` or when it took longer than
    `long_compile_seconds()`."""
    with _records_lock:
        _records.append(record)
    if announce or (record.event != "trace" and record.seconds > long_compile_seconds()):
        log.info("%s", record.describe())
    return record


def compile_log(function: Any = None) -> CompileLog:
    """Every trace and compile of this process so far (oldest first), or those of one
    ``tw.compile`` function; ``print()`` it for a table."""
    with _records_lock:
        records = list(_records)
    if function is not None:
        records = [r for r in records if r.owner == id(function)]
    return CompileLog(records)


def clear_compile_log() -> None:
    """Forget the records so far (e.g. before measuring one part of a program)."""
    with _records_lock:
        _records.clear()


# ------------------------------------------------------------------ describing signatures

def format_signature(names: Sequence[str], leaves: Sequence[Any], tensor_idx: Sequence[int],
                     specs: Sequence[Any]) -> str:
    """``x: f32[?,784], lr=0.1``: array arguments with their traced types, static
    arguments with their values."""
    from ..compiler.types import format_shape
    spec_of = dict(zip(tensor_idx, specs))
    parts = []
    for i, (name, leaf) in enumerate(zip(names, leaves)):
        if i in spec_of:
            s = spec_of[i]
            parts.append(f"{name}: {s.dtype.ir_name}{format_shape(s.shape)}")
        else:
            parts.append(f"{name}={_clip(repr(leaf), 24)}")
    return ", ".join(parts)


def trace_reason(old: dict[str, tuple[str, str]] | None,
                 new: dict[str, tuple[str, str]]) -> str:
    """Why a function traces, in a few words, from two `retracing.describe_arguments`
    results: ``first call``, ``new shape of x (f32[4,3], was f32[2,3])``, ``new value of
    the static argument lr (0.2, was 0.1)``."""
    if old is None:
        return "first call"
    reasons = []
    for name, (kind, desc) in new.items():
        before = old.get(name)
        if before is None:
            reasons.append(f"new argument {name}")
        elif before[1] != desc:
            if kind == "python" or before[0] == "python":
                reasons.append(f"new value of the static argument {name} "
                               f"({_python_value(desc)}, was {_python_value(before[1])})")
            elif desc.split("[", 1)[0] != before[1].split("[", 1)[0]:
                reasons.append(f"new dtype of {name} ({desc}, was {before[1]})")
            else:
                reasons.append(f"new shape of {name} ({desc}, was {before[1]})")
    reasons += [f"argument {name} is gone" for name in old.keys() - new.keys()]
    return "; ".join(reasons) or "new structure of the arguments"


def _python_value(desc: str) -> str:
    # "the Python float 0.2" -> "0.2"
    parts = desc.split(" ", 3)
    return parts[3] if desc.startswith("the Python ") and len(parts) == 4 else desc


# ------------------------------------------------------------------ code generation phases

class _Collecting(threading.local):
    phases: dict[str, Any] | None = None


_collecting = _Collecting()


@contextmanager
def collecting() -> Iterator[dict[str, Any]]:
    """While a trace's first call runs on this thread: what the target reports about
    its code generation (`codegen_done`) goes into the yielded dict instead of a record
    of its own."""
    outer, _collecting.phases = _collecting.phases, {}
    try:
        yield _collecting.phases
    finally:
        _collecting.phases = outer


def kernel_counts() -> tuple[int, int, int]:
    """(LLVM compiles, disk cache hits, memory cache hits) of the cpu JIT so far."""
    from ..targets.cpu import jit
    s = jit.STATS
    return s.llvm_compiles, s.disk_hits, s.hits


def cache_words(before: tuple[int, int, int], after: tuple[int, int, int]) -> str:
    """Where the kernels built between two `kernel_counts` came from."""
    compiled, disk, memory = (b - a for a, b in zip(before, after))
    if not (compiled or disk or memory):
        return ""
    parts = [f"{n} {what}" for n, what in ((compiled, "compiled by LLVM"),
                                           (disk, "from the disk cache"),
                                           (memory, "from the memory cache")) if n]
    return "kernels: " + ", ".join(parts)


def codegen_done(owner: Any, graph_name: str, shapes: str, seconds: float, cache: str,
                 existing: Sequence[str], note: str = "") -> None:
    """The cpu target built a native step of graph `graph_name` for argument shapes
    `shapes` in `seconds`. Inside a first call (`collecting`) it is that compile's code
    generation phase; otherwise a record of its own, logged at INFO when it rebuilt a
    compiled trace for new shapes (worth knowing about) or took long. `owner` is what
    `ConcreteFunction` put on the executable (function, signature, target, id; None for
    graphs compiled otherwise, e.g. by a v1 Session), `existing` the shapes built
    before."""
    phases = _collecting.phases
    if phases is not None:
        phases["codegen"] = phases.get("codegen", 0.0) + seconds
        phases["cache"] = "; ".join(x for x in (phases.get("cache", ""), cache, note) if x)
        return
    name, signature, target, owner_id = owner or (graph_name, "", "cpu", 0)
    if owner is None and not existing:
        add(CompileRecord("native step", name, shapes, target, "first run", {"codegen": seconds},
                          "; ".join(x for x in (cache, note) if x), time.time(), owner_id))
        return
    reason = f"new argument shapes ({shapes})"
    if existing:
        reason += f"; steps exist for {', '.join('(' + e + ')' for e in existing[:3])}"
        if len(existing) > 3:
            reason += f" and {len(existing) - 3} more"
    if "?" in signature:
        reason += f"; the trace ({signature}) is specialized to each new shape"
    add(CompileRecord("native step", name, shapes, target, reason, {"codegen": seconds},
                      "; ".join(x for x in (cache, note) if x), time.time(), owner_id),
        announce=True)


__all__ = ["LONG_COMPILE_SECONDS", "MAX_RECORDS", "CompileLog", "CompileRecord", "add",
           "cache_words", "clear_compile_log", "codegen_done", "collecting", "compile_log",
           "format_signature", "kernel_counts", "long_compile_seconds", "trace_reason"]
