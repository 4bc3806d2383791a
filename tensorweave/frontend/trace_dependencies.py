"""Python objects whose attributes a `tw.compile` trace baked in as constants, so that
changing one of those attributes later drops the trace instead of leaving it running
with the old value.

An optimizer's hyperparameters (``learning_rate`` as a number, ``beta_1``, ``clipnorm``,
...) are read while its update is traced and become constants of the graph. In
TensorFlow 2 they are variables, so ``opt.learning_rate = 0.01`` between two calls of a
``tf.function`` training step changes the second step; here the owner of such attributes
calls `note` while a trace reads them, the tracing `Function` registers itself with it
(`watch`), and the owner calls `changed` when one is set: the Function forgets the traces
that read it, and the next call traces again with the new value.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_state = threading.local()
_lock = threading.Lock()  # guards the watcher lists


@contextmanager
def collecting() -> Iterator[dict[int, Any]]:
    """Collect (by id) the objects `note`d while the block traces; nested blocks (a
    trace inside a trace) all collect them."""
    stack = _state.__dict__.setdefault("stack", [])
    found: dict[int, Any] = {}
    stack.append(found)
    try:
        yield found
    finally:
        stack.pop()


def note(owner: Any) -> None:
    """Record that the traces being built read constants from `owner`'s attributes."""
    for found in getattr(_state, "stack", ()):
        found[id(owner)] = owner


def watch(owner: Any, function: Any, key: Any) -> None:
    """Have `changed(owner)` call ``function._forget_trace(key)`` (`function` is held
    weakly: a watched optimizer does not keep a dropped function alive)."""
    with _lock:
        watchers = owner.__dict__.get("_trace_watchers")
        if watchers is None:
            watchers = []
            object.__setattr__(owner, "_trace_watchers", watchers)
        watchers.append((weakref.ref(function), key))


def changed(owner: Any) -> None:
    """An attribute of `owner` that traces read changed: those traces are forgotten."""
    watchers = owner.__dict__.get("_trace_watchers")
    if not watchers:
        return
    with _lock:
        taken = list(watchers)
        watchers.clear()
    for ref, key in taken:
        function = ref()
        if function is not None:
            function._forget_trace(key)


__all__ = ["changed", "collecting", "note", "watch"]
