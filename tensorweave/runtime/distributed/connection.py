"""The cluster this process is connected to (``tw.config.experimental_connect_to_cluster``).

A hook, so that the frontend can compile for a cluster without importing the layer
above it: `tensorweave.distribute.connect` sets the compiler, `@tw.compile` functions
use it when it is set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_cluster_compiler: Callable[[Any, str], Any] | None = None


def set_cluster_compiler(compiler: Callable[[Any, str], Any] | None) -> None:
    """Compile every new `@tw.compile` trace with ``compiler(graph, target)`` (None: the
    local pipeline again)."""
    global _cluster_compiler
    _cluster_compiler = compiler


def cluster_compiler() -> Callable[[Any, str], Any] | None:
    """The compiler of the connected cluster, or None when not connected."""
    return _cluster_compiler


__all__ = ["cluster_compiler", "set_cluster_compiler"]
