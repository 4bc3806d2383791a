"""What an ahead-of-time library says when an op fails: the messages of the JIT's errors,
fixed when the library is built.

A failing step returns a positive status and stores the id of the failing action
(`StepPlan.number`); the JIT turns the pair into an `InvalidArgumentError` naming the op
and the user's line (`lowering.status_error`). A library cannot call Python, so every
(action, status) pair a lowering can report is spelled now, as a read-only string, and
`emit_error_lookup` emits the code that finds the one for a failed call. The messages
name the op, its node and its source line but not the offending values (the JIT asks
the reference kernel for those, on the real inputs).
"""

from __future__ import annotations

import llvmlite.ir as ir

from ...errors import InvalidArgumentError
from .lowering import I8, I8P, I32, LOWERINGS, status_error
from .step import StepPlan

_STATUS_TRIES = 8
"""Statuses tried on lowerings that describe failures with a function (beyond the ones
their ``messages`` list); a fused cluster's statuses are four per op of the cluster."""

OOM_MESSAGE = "cannot allocate the library's scratch memory"
OVERLAP_STATUS = -2
"""A call's status when a result buffer overlaps another buffer (nothing is computed)."""
UNKNOWN_MESSAGE = "an op failed; no message was recorded for its status"


def failure_messages(plan: StepPlan) -> dict[int, dict[int, str]]:
    """Action id -> status -> the error message the JIT would raise (the op's message
    with the op, its name and the source line in front), for every action of `plan` and
    of its regions' plans that can fail."""
    table: dict[int, dict[int, str]] = {}

    def visit(p: StepPlan) -> None:
        for k, a in enumerate(p.actions):
            if a.node is not None:
                spelled = {s: _message(a.node, s) for s in _statuses(a.node)}
                spelled = {s: m for s, m in spelled.items() if m is not None}
                if spelled:
                    table[p.base + k] = spelled
            for r in a.regions:
                visit(r)

    visit(plan)
    return table


def _statuses(node) -> list[int]:
    low = LOWERINGS.get(node.op)
    tries = set(range(1, _STATUS_TRIES + 1))
    if node.op == "Fusion" and node.regions:
        tries |= set(range(1, 4 * len(node.regions[0].nodes) + 4))
    if low is not None:
        tries |= set(low.messages)
    return sorted(tries)


def _message(node, status: int) -> str | None:
    """The JIT's message for `status` of `node`, or None when the lowering names none
    (a status it never returns)."""
    try:
        message, blamed = status_error(node, status)
    except (IndexError, KeyError, ValueError):
        return None
    if message.startswith(("native kernel failed with status", "kernel status")):
        return None
    return str(InvalidArgumentError(message, **blamed.error_context()))


def _cstring(module: ir.Module, text: str, name: str) -> ir.Value:
    data = bytearray(text.encode("utf-8")) + b"\0"
    gv = ir.GlobalVariable(module, ir.ArrayType(I8, len(data)), name)
    gv.global_constant = True
    gv.linkage = "internal"
    gv.initializer = ir.Constant(ir.ArrayType(I8, len(data)), data)
    return gv.bitcast(I8P)


def emit_error_lookup(module: ir.Module, plan: StepPlan, name: str) -> ir.Function:
    """Define ``const char *<name>(i32 status, i32 failed_action)``: NULL for status 0,
    the scratch-memory message for -1, else the message of that action and status
    (`failure_messages`), or a generic one with no message recorded."""
    fn = ir.Function(module, ir.FunctionType(I8P, [I32, I32]), name)
    fn.linkage = "internal"
    status, action = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    unknown = b.append_basic_block("unknown")
    by_status = b.append_basic_block("failed")
    top = b.switch(status, by_status)
    for value, text in ((0, None), (-1, OOM_MESSAGE)):
        block = b.append_basic_block(f"status{value}")
        top.add_case(I32(value), block)
        with b.goto_block(block):
            b.ret(ir.Constant(I8P, None) if text is None
                  else _cstring(module, text, f"{name}.oom"))
    b.position_at_end(by_status)
    overlap = b.append_basic_block("overlap")
    top.add_case(I32(OVERLAP_STATUS), overlap)
    with b.goto_block(overlap):
        _return_overlap_message(b, module, plan, action, name)
    per_action = b.switch(action, unknown)
    for ident, messages in failure_messages(plan).items():
        block = b.append_basic_block(f"action{ident}")
        per_action.add_case(I32(ident), block)
        with b.goto_block(block):
            sw = b.switch(status, unknown)
            for s, text in messages.items():
                case = b.append_basic_block(f"action{ident}.{s}")
                sw.add_case(I32(s), case)
                with b.goto_block(case):
                    b.ret(_cstring(module, text, f"{name}.{ident}.{s}"))
    b.position_at_end(unknown)
    b.ret(_cstring(module, UNKNOWN_MESSAGE, f"{name}.unknown"))
    return fn


def _return_overlap_message(b: ir.IRBuilder, module: ir.Module, plan: StepPlan,
                            result: ir.Value, name: str) -> None:
    """Return the message for `OVERLAP_STATUS`, naming result number `result`."""
    g = plan.graph
    fallback = b.append_basic_block("overlap.result")
    sw = b.switch(result, fallback)
    for j in range(len(g.results)):
        label = g.result_names[j] if j < len(g.result_names) else f"output{j}"
        case = b.append_basic_block(f"overlap.{j}")
        sw.add_case(I32(j), case)
        with b.goto_block(case):
            b.ret(_cstring(module, f"the buffer of result {j} ('{label}') overlaps an "
                                   f"argument's or an earlier result's: results must be "
                                   f"separate buffers (nothing was computed)",
                           f"{name}.overlap.{j}"))
    b.position_at_end(fallback)
    b.ret(_cstring(module, "a result buffer overlaps another buffer", f"{name}.overlap"))
