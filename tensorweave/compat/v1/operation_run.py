"""``op.run()`` for the ops a v1 program holds (``train_step.run(feed_dict=...)``), as
`session.py` gives tensors ``eval()``. TensorFlow 1's operations are the graph's IR nodes
here, so the method is added to `ir.Node`."""

from __future__ import annotations

from typing import Any

from ...compiler import ir


def _operation_run(self: ir.Node, feed_dict: dict | None = None, session: Any = None) -> None:
    """``op.run(feed_dict=...)``: run the op in the default (or given) session."""
    from .session import get_default_session
    (session or get_default_session()).run(self, feed_dict)


ir.Node.run = _operation_run
