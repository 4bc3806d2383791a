"""Counted loops in LLVM IR (phi form), for every emitter of the cpu target."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import llvmlite.ir as ir

from .elementwise import I64


@contextlib.contextmanager
def counted_loop(b: ir.IRBuilder, start: ir.Value | int, stop: ir.Value | int,
                 step: int = 1, name: str = "i") -> Iterator[ir.Value]:
    """``for (i = start; i < stop; i += step)`` at builder `b`: the body is emitted inside
    the ``with`` block, which receives the i64 index; `b` ends after the loop."""
    start = I64(start) if isinstance(start, int) else start
    stop = I64(stop) if isinstance(stop, int) else stop
    pre = b.block
    head = b.append_basic_block(f"{name}.head")
    body = b.append_basic_block(f"{name}.body")
    done = b.append_basic_block(f"{name}.done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64, name=name)
    i.add_incoming(start, pre)
    b.cbranch(b.icmp_signed("<", i, stop), body, done)
    b.position_at_end(body)
    yield i
    i.add_incoming(b.add(i, I64(step), name=f"{name}.next"), b.block)
    b.branch(head)
    b.position_at_end(done)
