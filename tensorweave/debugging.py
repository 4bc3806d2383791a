"""`tw.debugging`: tools to see what the compiler decided.

    print(tw.debugging.placement_report(step, x, y))

lists every op of the traced function after placement: its requested device, the
device it got and why (requested, colocated with another op, soft-placement fallback or
the cost model).

    print(tw.debugging.compile_log())

lists every trace and compile of the process with its reason (first call, new shape of
an argument, new value of a static argument, new shapes for the cpu target's native
step) and how long tracing, the pipeline and code generation took.

The run-time checks ``assert_equal``, ``assert_less``, ``assert_greater``,
``assert_non_negative``, ``assert_positive``, ``assert_near``, ``assert_shapes``,
``assert_all_finite`` and ``check_numerics`` are graph ops (``Assert``): a failure is an
InvalidArgumentError naming the message, the op and the line that made it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .compiler.ir import Graph
from .frontend.compile_log import clear_compile_log, compile_log
from .frontend.ops.debugging import (
    assert_all_finite,
    assert_equal,
    assert_greater,
    assert_less,
    assert_near,
    assert_non_negative,
    assert_positive,
    assert_shapes,
    check_numerics,
)
from .passes.placement import placement_reasons

_HEADER = ("node", "op", "requested", "assigned", "reason")


def placed_graph(fn: Any, *args_or_specs: Any, **kwargs: Any) -> Graph:
    """The graph of `fn` (a ``@tw.compile`` function or a plain one) traced for these
    arguments (arrays or `tw.TensorSpec`s) and run through the pipeline to ``placed``."""
    from .compiler.pipeline import run_pipeline
    from .frontend.function import ConcreteFunction, Function, compile

    if isinstance(fn, ConcreteFunction):
        cf = fn
    else:
        if not isinstance(fn, Function):
            fn = compile(fn)
        cf = fn.get_concrete_function(*args_or_specs, **kwargs)
    return run_pipeline(cf.graph, "placed")


def placement_report(fn: Any, *args_or_specs: Any, **kwargs: Any) -> str:
    """A table of where each op of `fn` runs and why: node, op, requested device,
    assigned device, reason (ops inside loop or branch bodies included)."""
    graph = placed_graph(fn, *args_or_specs, **kwargs)
    rows = [(n.name, n.op, n.device or "-", n.assigned_device or "-", reason or "-")
            for n, reason in placement_reasons(graph)]
    return format_table([_HEADER, *rows])


def format_table(rows: Sequence[Sequence[str]]) -> str:
    """Rows as left-aligned columns separated by two spaces, a rule under the first."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


__all__ = ["clear_compile_log", "compile_log", "format_table", "placed_graph",
           "placement_report",
           "assert_all_finite", "assert_equal", "assert_greater", "assert_less", "assert_near",
           "assert_non_negative", "assert_positive", "assert_shapes", "check_numerics"]


def __dir__() -> list[str]:
    return sorted(__all__)
