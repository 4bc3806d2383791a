"""Compiled steps kept per argument-shape tuple (shared by the cpu and gpu targets)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

_UNSET: Any = object()


class StepCache:
    """Steps built once per key under a lock (concurrent first calls build one step),
    at most `limit` of them (past that the cache starts over). `steps` is the plain
    dict, for lock-free lookups on a call's hot path."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.steps: dict[Hashable, Any] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, build: Callable[[], Any]) -> Any:
        """The step for `key`, made by ``build()`` on first use."""
        step = self.steps.get(key, _UNSET)
        if step is _UNSET:
            with self._lock:
                step = self.steps.get(key, _UNSET)
                if step is _UNSET:
                    if len(self.steps) >= self.limit:
                        self.steps.clear()
                    step = self.steps[key] = build()
        return step


__all__ = ["StepCache"]
