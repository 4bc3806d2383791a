"""Loop-gradient stacks in native code: ``Stack``, ``StackPush`` and ``StackPop`` inside a
step (see `frontend/grads/control.py` for how a While's gradient uses them).

A stack handle is a 32-byte value like any other (a loop variable, an element of another
stack's entry for nested loops), four i64 fields:

    data      pointer to the entries (null until the first push)
    count     entries pushed and not popped
    capacity  bytes at `data`
    max_size  the Stack op's bound on entries (-1: none)

The ops are functional on handles, as in the IR: a push reads the handle, copies the
entry's elements to ``data + count * entry_bytes`` and writes the handle with count + 1
(a pop, count - 1, then copies the entry out), so a handle copied between a loop's two
buffer sets needs nothing more. Entry layouts come from the elements' static types (each
element 64-byte aligned); the push and the pop of one stack have the same types.

Memory comes from the call's *arena* (48 bytes in the workspace header, at
`ARENA_OFFSET`): a bump allocator over a malloc'd chunk. A stack whose bound is known
(``maximum_iterations``: every ``tw.scan``) takes `max_size` entries on its first push,
up to `BOUNDED_FIRST_BYTES` (a bound is only a bound: a ``tw.while_loop`` with
``maximum_iterations=10**9`` as a safety net may stop after 3 iterations); an unbounded
one starts with 16 entries; both double when full (moving their entries). When a chunk is
full a bigger one is allocated and the full one retired (still in use: entries of a
nested loop's stacks live until the backward pass pops them). At the start of each call
the arena is reset: when the last call retired chunks, they are freed and one chunk of
the whole last call's size replaces them, so steady-state calls never allocate or
touch fresh pages. `ARENA_RELEASE_NAME` frees everything (when the step's workspace
goes away).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Sequence
from functools import lru_cache

import llvmlite.ir as ir
import numpy as np

from ...compiler.types import ResourceType, TensorType, Type
from .elementwise import I1, I8, I32, I64

I8P = ir.PointerType(I8)
I8PP = ir.PointerType(I8P)
I64P = ir.PointerType(I64)

HANDLE_BYTES = 32
ARENA_OFFSET = 8          # bytes into the workspace header (the failing position is first)
ARENA_BYTES = 48          # chunk, used, capacity, retired chunks, bytes taken, magic
ARENA_MAGIC = 0x414E4552415754  # "TWARENA": set once the header holds an arena
ALIGN = 64
MIN_CHUNK = 1 << 20
UNBOUNDED_FIRST = 16      # entries of an unbounded stack's first allocation
BOUNDED_FIRST_BYTES = 64 << 20  # at most this much for a bounded stack's first allocation
ARENA_RELEASE_NAME = "tw_arena_release"

STATUS_FULL = 1
STATUS_EMPTY = 2
STATUS_NO_MEMORY = 3
STATUS_LAYOUT = 4
MESSAGES = {
    STATUS_FULL: "the stack is full: the loop ran more iterations than its "
                 "maximum_iterations",
    STATUS_EMPTY: "pop from an empty stack: the stack was popped more often than pushed",
    STATUS_NO_MEMORY: "out of memory for the stack's entries",
}

# (a stack handle: the type of Stack's output; variables are ResourceType(value_type))
STACK_OPS = frozenset({"Stack", "StackPush", "StackPop"})


def is_stack_type(t: Type) -> bool:
    """Whether `t` is the type of a stack handle (a resource without a value type)."""
    return isinstance(t, ResourceType) and t.value_type is None


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def element_bytes(t: Type) -> int:
    """Bytes of one element of an entry (a tensor, or a nested stack's handle)."""
    if is_stack_type(t):
        return HANDLE_BYTES
    assert isinstance(t, TensorType)
    return int(t.num_elements) * np.dtype(t.dtype.np).itemsize


def entry_layout(types: Sequence[Type]) -> tuple[list[int], list[int], int]:
    """Offsets and sizes of an entry's elements, and the entry's size (each element
    starts on a 64-byte boundary so copies are aligned)."""
    offsets, sizes, off = [], [], 0
    for t in types:
        n = element_bytes(t)
        offsets.append(off)
        sizes.append(n)
        off += _aligned(max(n, 1))
    return offsets, sizes, max(off, ALIGN)


@lru_cache(maxsize=1)
def register_symbols() -> None:
    """Make libc's allocator known to the JIT's linker (objects from the disk cache are
    linked by name)."""
    import llvmlite.binding as llvm
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
    for name in ("aligned_alloc", "free"):
        if not llvm.address_of_symbol(name):
            llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)


# --------------------------------------------------------------------------- the arena

def _libc(module: ir.Module) -> tuple[ir.Function, ir.Function]:
    alloc = module.globals.get("aligned_alloc") or ir.Function(
        module, ir.FunctionType(I8P, [I64, I64]), "aligned_alloc")
    free = module.globals.get("free") or ir.Function(
        module, ir.FunctionType(ir.VoidType(), [I8P]), "free")
    return alloc, free


def _field(b: ir.IRBuilder, base: ir.Value, k: int) -> ir.Value:
    return b.gep(b.bitcast(base, I64P), [I64(k)])


def _free_retired(b: ir.IRBuilder, free: ir.Function, arena: ir.Value) -> None:
    """Free the chain of retired chunks (each chunk's first 8 bytes link the next)."""
    head = b.inttoptr(b.load(_field(b, arena, 3)), I8P)
    pre = b.block
    loop = b.append_basic_block("retired.loop")
    body = b.append_basic_block("retired.body")
    done = b.append_basic_block("retired.done")
    b.branch(loop)
    b.position_at_end(loop)
    cur = b.phi(I8P)
    cur.add_incoming(head, pre)
    b.cbranch(b.icmp_unsigned("==", cur, ir.Constant(I8P, None)), done, body)
    b.position_at_end(body)
    nxt = b.inttoptr(b.load(_field(b, cur, 0)), I8P)
    b.call(free, [cur])
    cur.add_incoming(nxt, body)
    b.branch(loop)
    b.position_at_end(done)
    b.store(I64(0), _field(b, arena, 3))


def arena_alloc(module: ir.Module) -> ir.Function:
    """``i8* tw.arena.alloc(i8* arena, i64 nbytes)`` (null when out of memory)."""
    fn = module.globals.get("tw.arena.alloc")
    if fn is not None:
        return fn
    alloc, _ = _libc(module)
    fn = ir.Function(module, ir.FunctionType(I8P, [I8P, I64]), "tw.arena.alloc")
    fn.linkage = "internal"
    arena, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    n = b.and_(b.add(n, I64(ALIGN - 1)), I64(-ALIGN))
    chunk = b.inttoptr(b.load(_field(b, arena, 0)), I8P)
    used, cap = b.load(_field(b, arena, 1)), b.load(_field(b, arena, 2))
    total = _field(b, arena, 4)
    b.store(b.add(b.load(total), n), total)
    end = b.add(used, n)
    fits = b.and_(b.icmp_unsigned("<=", end, cap),
                  b.icmp_unsigned("!=", chunk, ir.Constant(I8P, None)))
    with b.if_then(fits, likely=True):
        b.store(end, _field(b, arena, 1))
        b.ret(b.gep(chunk, [b.add(used, I64(ALIGN))]))
    # a new chunk: at least twice the last one (the full one is retired, not freed)
    size = b.shl(cap, I64(1))
    size = b.select(b.icmp_unsigned(">", n, size), n, size)
    size = b.select(b.icmp_unsigned(">", I64(MIN_CHUNK), size), I64(MIN_CHUNK), size)
    new = b.call(alloc, [I64(ALIGN), b.add(size, I64(ALIGN))])
    with b.if_then(b.icmp_unsigned("==", new, ir.Constant(I8P, None)), likely=False):
        b.ret(ir.Constant(I8P, None))
    with b.if_then(b.icmp_unsigned("!=", chunk, ir.Constant(I8P, None))):
        b.store(b.load(_field(b, arena, 3)), _field(b, chunk, 0))
        b.store(b.ptrtoint(chunk, I64), _field(b, arena, 3))
    b.store(b.ptrtoint(new, I64), _field(b, arena, 0))
    b.store(n, _field(b, arena, 1))
    b.store(size, _field(b, arena, 2))
    b.ret(b.gep(new, [I64(ALIGN)]))
    return fn


def emit_arena_reset(b: ir.IRBuilder, module: ir.Module, arena: ir.Value) -> None:
    """At the start of a call: everything the last call took is free again; if it
    needed several chunks, one chunk of its whole size replaces them. A header without
    the magic (a workspace nobody initialized) becomes an empty arena first."""
    alloc, free = _libc(module)
    with b.if_then(b.icmp_unsigned("!=", b.load(_field(b, arena, 5)), I64(ARENA_MAGIC)),
                   likely=False):
        for k in range(5):
            b.store(I64(0), _field(b, arena, k))
        b.store(I64(ARENA_MAGIC), _field(b, arena, 5))
    retired = b.load(_field(b, arena, 3))
    with b.if_then(b.icmp_unsigned("!=", retired, I64(0)), likely=False):
        _free_retired(b, free, arena)
        b.call(free, [b.inttoptr(b.load(_field(b, arena, 0)), I8P)])
        size = b.and_(b.add(b.load(_field(b, arena, 4)), I64(ALIGN - 1)), I64(-ALIGN))
        new = b.call(alloc, [I64(ALIGN), b.add(size, I64(ALIGN))])
        ok = b.icmp_unsigned("!=", new, ir.Constant(I8P, None))
        b.store(b.ptrtoint(new, I64), _field(b, arena, 0))
        b.store(b.select(ok, size, I64(0)), _field(b, arena, 2))
    b.store(I64(0), _field(b, arena, 1))
    b.store(I64(0), _field(b, arena, 4))


def emit_arena_release(module: ir.Module) -> None:
    """``void tw_arena_release(i8* arena)``: free every chunk; the arena is empty."""
    _, free = _libc(module)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I8P]), ARENA_RELEASE_NAME)
    arena = fn.args[0]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    with b.if_then(b.icmp_unsigned("!=", b.load(_field(b, arena, 5)), I64(ARENA_MAGIC))):
        b.ret_void()  # (never held an arena)
    _free_retired(b, free, arena)
    b.call(free, [b.inttoptr(b.load(_field(b, arena, 0)), I8P)])
    for k in range(5):
        b.store(I64(0), _field(b, arena, k))
    b.ret_void()


# ----------------------------------------------------------------------------- the ops

STACK_FUNCTION_TYPE = ir.FunctionType(I32, [I8P, I8PP, I8PP])  # (arena, ins, outs)


def _memcpy(b: ir.IRBuilder, module: ir.Module, dst: ir.Value, src: ir.Value, n: int | ir.Value
            ) -> None:
    fn = module.globals.get("llvm.memcpy.p0i8.p0i8.i64") or ir.Function(
        module, ir.FunctionType(ir.VoidType(), [I8P, I8P, I64, I1]), "llvm.memcpy.p0i8.p0i8.i64")
    b.call(fn, [dst, src, I64(n) if isinstance(n, int) else n, I1(0)])


def emit_stack_function(module: ir.Module, op: str, name: str, attrs: dict,
                        elem_types: Sequence[Type]) -> ir.Function:
    """``i32 @name(i8* arena, i8** ins, i8** outs)`` running one Stack, StackPush or
    StackPop node (ins/outs as a node function's; a status from `MESSAGES` or 0)."""
    fn = ir.Function(module, STACK_FUNCTION_TYPE, name)
    fn.linkage = "internal"
    arena, ins, outs = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    def ptr(tab: ir.Value, k: int) -> ir.Value:
        return b.load(b.gep(tab, [I64(k)]))

    if op == "Stack":
        h = ptr(outs, 0)
        for k, v in enumerate((0, 0, 0, int(attrs.get("max_size", -1)))):
            b.store(I64(v), _field(b, h, k))
        b.ret(I32(0))
        return fn
    src = ptr(ins, 0)
    data = b.inttoptr(b.load(_field(b, src, 0)), I8P)
    count, cap, limit = (b.load(_field(b, src, k)) for k in (1, 2, 3))
    offsets, sizes, entry = entry_layout(elem_types)
    if op == "StackPush":
        bounded = b.icmp_signed(">=", limit, I64(0))
        with b.if_then(b.and_(bounded, b.icmp_signed(">=", count, limit)), likely=False):
            b.ret(I32(STATUS_FULL))
        need = b.mul(b.add(count, I64(1)), I64(entry))
        pre = b.block
        grow = b.append_basic_block("grow")
        store = b.append_basic_block("store")
        b.cbranch(b.icmp_unsigned(">", need, cap), grow, store)
        b.position_at_end(grow)
        # a bounded stack takes all its entries at once (up to BOUNDED_FIRST_BYTES: the
        # bound need not be the trip count); an unbounded one starts small; both double
        most = max(UNBOUNDED_FIRST, BOUNDED_FIRST_BYTES // entry)
        few = b.select(b.icmp_signed("<", limit, I64(most)), limit, I64(most))
        first = b.select(bounded, b.mul(few, I64(entry)), I64(UNBOUNDED_FIRST * entry))
        size = b.select(b.icmp_unsigned("==", cap, I64(0)), first, b.shl(cap, I64(1)))
        size = b.select(b.icmp_unsigned(">", need, size), need, size)
        new = b.call(arena_alloc(module), [arena, size])
        with b.if_then(b.icmp_unsigned("==", new, ir.Constant(I8P, None)), likely=False):
            b.ret(I32(STATUS_NO_MEMORY))
        with b.if_then(b.icmp_unsigned("!=", count, I64(0))):
            _memcpy(b, module, new, data, b.mul(count, I64(entry)))
        grown = b.block
        b.branch(store)
        b.position_at_end(store)
        d = b.phi(I8P)
        d.add_incoming(data, pre)
        d.add_incoming(new, grown)
        c = b.phi(I64)
        c.add_incoming(cap, pre)
        c.add_incoming(size, grown)
        at = b.gep(d, [b.mul(count, I64(entry))])
        for j, (off, n) in enumerate(zip(offsets, sizes)):
            if n:
                _memcpy(b, module, b.gep(at, [I64(off)]), ptr(ins, 1 + j), n)
        dst = ptr(outs, 0)
        b.store(b.ptrtoint(d, I64), _field(b, dst, 0))
        b.store(b.add(count, I64(1)), _field(b, dst, 1))
        b.store(c, _field(b, dst, 2))
        b.store(limit, _field(b, dst, 3))
        b.ret(I32(0))
        return fn
    assert op == "StackPop", op
    with b.if_then(b.icmp_signed("<=", count, I64(0)), likely=False):
        b.ret(I32(STATUS_EMPTY))
    left = b.sub(count, I64(1))
    at = b.gep(data, [b.mul(left, I64(entry))])
    for j, (off, n) in enumerate(zip(offsets, sizes)):
        if n:
            _memcpy(b, module, ptr(outs, 1 + j), b.gep(at, [I64(off)]), n)
    dst = ptr(outs, 0)
    for k, v in enumerate((b.ptrtoint(data, I64), left, cap, limit)):
        b.store(v, _field(b, dst, k))
    b.ret(I32(0))
    return fn


__all__ = ["ARENA_OFFSET", "ARENA_RELEASE_NAME", "BOUNDED_FIRST_BYTES", "HANDLE_BYTES",
           "MESSAGES", "STACK_OPS", "arena_alloc", "element_bytes", "emit_arena_release", "emit_arena_reset",
           "emit_stack_function", "entry_layout", "is_stack_type", "register_symbols"]
