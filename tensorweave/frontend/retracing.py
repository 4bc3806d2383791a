"""Why a `tw.compile` function traced again, and a bound on how many traces it keeps.

Every trace is logged (logger ``tensorweave``, level INFO) with what differs from the
previous one; after `WARN_AFTER` retraces of one function a `RetracingWarning` names the
argument that changed and the fix, as TensorFlow warns about ``tf.function``
retracing. `TraceCache` keeps the most recently used traces (LRU).
"""

from __future__ import annotations

import logging
import os
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..compiler.types import format_shape
from ..errors import RetracingWarning

log = logging.getLogger("tensorweave")

# A function warns when it has been traced again this many times, then each time that
# count doubles (so a function retracing every call does not flood the output).
WARN_AFTER = 5
# How many traces a function keeps by default (TW_MAX_TRACES overrides it).
DEFAULT_MAX_TRACES = 64


def default_max_traces() -> int:
    """The LRU bound of a function's traces when `tw.compile` names none."""
    value = os.environ.get("TW_MAX_TRACES", "")
    return int(value) if value.strip() else DEFAULT_MAX_TRACES


class TraceCache:
    """The traces of one function by signature key, least recently used first; inserting
    beyond `max_size` evicts the oldest (its compiled code is then released)."""

    def __init__(self, max_size: int) -> None:
        if max_size < 1:
            raise ValueError(f"max_traces must be at least 1, got {max_size}")
        self.max_size = max_size
        self._entries: OrderedDict[Any, Any] = OrderedDict()
        self.evictions = 0

    def get(self, key: Any) -> Any:
        """The trace for `key` (marked as just used), or None."""
        entry = self._entries.get(key)
        if entry is not None:
            self.touch(key)
        return entry

    def touch(self, key: Any) -> None:
        """Mark `key` as just used (a no-op if it was evicted meanwhile)."""
        try:
            self._entries.move_to_end(key)
        except KeyError:
            pass

    def put(self, key: Any, value: Any) -> list[Any]:
        """Store a trace; returns the traces evicted to make room."""
        self._entries[key] = value
        self._entries.move_to_end(key)
        evicted = []
        while len(self._entries) > self.max_size:
            evicted.append(self._entries.popitem(last=False)[1])
            self.evictions += 1
        return evicted

    def values(self) -> list[Any]:
        return list(self._entries.values())

    def items(self) -> Iterator[tuple[Any, Any]]:
        return iter(list(self._entries.items()))

    def pop(self, key: Any) -> Any:
        """Remove and return the trace for `key`, or None."""
        return self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)


# ---------------------------------------------------------------- explaining a retrace

def describe_arguments(names: Sequence[str], leaves: Sequence[Any], tensor_idx: Sequence[int],
                       specs: Sequence[Any]) -> dict[str, tuple[str, str]]:
    """Per argument leaf: (kind, description) where kind is "array" or "python"; what a
    trace depends on, in words."""
    spec_of = dict(zip(tensor_idx, specs))
    out: dict[str, tuple[str, str]] = {}
    for i, (name, leaf) in enumerate(zip(names, leaves)):
        if i in spec_of:
            spec = spec_of[i]
            out[name] = ("array", f"{spec.dtype.ir_name}{format_shape(spec.shape)}")
        else:
            text = repr(leaf)
            text = text if len(text) <= 40 else text[:37] + "..."
            out[name] = ("python", f"the Python {type(leaf).__name__} {text}")
    return out


def explain(old: dict[str, tuple[str, str]] | None, new: dict[str, tuple[str, str]]) -> str:
    """What differs between two argument descriptions, and how to avoid the retrace."""
    if old is None:
        return "first call"
    changes, fixes = [], []
    for name, (kind, desc) in new.items():
        before = old.get(name)
        if before is None:
            changes.append(f"argument '{name}' is new ({desc})")
            continue
        if before[1] == desc:
            continue
        changes.append(f"argument '{name}' changed from {before[1]} to {desc}")
        fixes.append(_fix(name, before, (kind, desc)))
    for name in old.keys() - new.keys():
        changes.append(f"argument '{name}' is gone")
    if not changes:
        return "the structure of the arguments changed"
    hint = "; ".join(dict.fromkeys(f for f in fixes if f))
    return "; ".join(changes) + (f". To avoid it: {hint}" if hint else "")


def _fix(name: str, old: tuple[str, str], new: tuple[str, str]) -> str:
    if new[0] == "python" or old[0] == "python":
        return (f"a Python value is part of the trace, so every new value of '{name}' traces "
                f"again: pass it as an array (np.float32(value) or tw.constant(value)), or "
                f"give input_signature")
    if _dtype(old[1]) != _dtype(new[1]):
        return f"give '{name}' one dtype in every call (cast it before calling)"
    return (f"give input_signature=[tw.TensorSpec(...)] with None for the dims of '{name}' "
            f"that vary, or tw.compile(..., reduce_retracing=True)")


def _dtype(desc: str) -> str:
    return desc.split("[", 1)[0]


class RetraceTracker:
    """Counts a function's traces, logs each with its reason, and warns after
    `WARN_AFTER` retraces (then at each doubling)."""

    def __init__(self, function_name: str) -> None:
        self.function_name = function_name
        self.traces = 0
        self._last: dict[str, tuple[str, str]] | None = None
        self._next_warning = WARN_AFTER
        self.reasons: list[str] = []

    def record(self, described: dict[str, tuple[str, str]],
               warn: Callable[[str], None] | None = None, reason: str | None = None) -> str:
        """Note one trace with arguments `described`; returns the reason (`reason` when
        given: why it traced when the arguments did not change)."""
        if reason is None:
            reason = explain(self._last, described)
        self._last = described
        self.traces += 1
        self.reasons.append(reason)
        del self.reasons[:-WARN_AFTER * 4]  # keep the recent ones only
        log.info("tracing %s (trace %d): %s", self.function_name, self.traces, reason)
        retraces = self.traces - 1
        if retraces >= self._next_warning:
            self._next_warning *= 2
            message = (f"tw.compile function '{self.function_name}' has been traced "
                       f"{self.traces} times (each trace compiles again); the last retrace: "
                       f"{reason}")
            (warn or _warn)(message)
        return reason


def _warn(message: str) -> None:
    # stacklevel: point at the user's call, not at this module
    from .call_site import user_location
    loc = user_location()
    if loc is None:
        warnings.warn(message, RetracingWarning, stacklevel=2)
        return
    warnings.warn_explicit(message, RetracingWarning, loc.file, loc.line)


def relaxed_specs(old: Sequence[Any], new: Sequence[Any]) -> list[Any] | None:
    """Specs that accept both `old` and `new` (same dtypes and ranks; dims that differ
    become None), or None when they do not line up."""
    from .function import TensorSpec
    if len(old) != len(new):
        return None
    out = []
    for a, b in zip(old, new):
        if a.dtype is not b.dtype or len(a.shape) != len(b.shape):
            return None
        out.append(TensorSpec([x if x == y else None for x, y in zip(a.shape, b.shape)],
                              a.dtype, a.name))
    return out


def accepts(specs: Sequence[Any], arrays: Sequence[np.ndarray]) -> bool:
    """Whether every array fits its spec (dtype, rank, and each known dim)."""
    return len(specs) == len(arrays) and all(
        s.type.accepts(s.dtype, np.shape(a)) and np.asarray(a).dtype == s.dtype.np
        for s, a in zip(specs, arrays))


__all__ = ["DEFAULT_MAX_TRACES", "RetraceTracker", "TraceCache", "WARN_AFTER", "accepts",
           "default_max_traces", "describe_arguments", "explain", "relaxed_specs"]
