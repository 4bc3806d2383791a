"""What a kernel that asked for context (``kernel(..., context=True)``) receives."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from .resources import ResourceManager


@dataclass
class CallCounters:
    """How many times each stateful node of one executable has run; random ops use it as
    the counter of their counter-based generator, so every target draws the same numbers."""

    counts: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self, key: str) -> int:
        with self.lock:
            n = self.counts.get(key, 0)
            self.counts[key] = n + 1
            return n


@dataclass
class KernelContext:
    """The node being run, the runtime's resources, and per-executable counters."""

    node: Any
    resources: ResourceManager
    counters: CallCounters
    step_id: int = 0

    def next_call_index(self) -> int:
        """0 on this node's first run in this executable, then 1, 2, ..."""
        return self.counters.next(self.node.name)
