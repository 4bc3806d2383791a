"""Per-action clocks inside native steps, for `tw.profiler` (the paper's EEG).

A JIT-compiled step module (`step.emit_step` with a data offset) holds an internal global
``tw_profile_buffer`` (null: tracing off) and exports ``tw_profile_slot()``, the global's
address, so that Python can point it at a buffer. Around every action of the step and of
its loops' and branches' regions, the generated code loads the global and branches on it
(the whole cost when off: one load, which LLVM may share between actions, and two
predictable branches); when on, it reads CLOCK_MONOTONIC (`clock_gettime`, the clock of
Python's ``time.perf_counter`` on Linux) before and after the action and appends a record

    action id (step-wide, `StepPlan.number`), start ns, end ns, thread (pthread_self)

to the buffer, whose first word is a cursor taken with an atomic add (regions and other
threads may append concurrently). Nodes inside native loops append one record per
iteration. The buffer is bounded (`capacity` records, ``TW_PROFILE_RECORDS``, default
65536 per call): once full, later records are dropped and only counted (the cursor goes
on counting), and the profiler reports how many were lost.

`StepProfile.begin()`/`finish()` set the global for one call (traced calls of one compiled
module take turns: the buffer is the module's, so an untraced call of the same code on
another thread meanwhile is recorded too, under its own thread); `node_traces` turns the
records into `runtime.profiler.NativeNodeTrace`s, which the profiler draws like the
dataflow executor's traces. A node that splits its work over the parallel-for threads
(`parallel`) is one span on the calling thread. Ahead-of-time libraries are not
instrumented.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from collections.abc import Iterator
from typing import Any

import llvmlite.ir as ir
import numpy as np

from .elementwise import I32, I64

I8P = ir.PointerType(ir.IntType(8))
I64P = ir.PointerType(I64)

GLOBAL_NAME = "tw_profile_buffer"
SLOT_NAME = "tw_profile_slot"
_NOW_NAME = "tw_profile_now"
_RECORD_NAME = "tw_profile_record"
CLOCK_MONOTONIC = 1  # <time.h> on Linux
HEADER_WORDS = 4     # cursor, capacity, (reserved x2)
RECORD_WORDS = 4     # action id, start ns, end ns, thread
DEFAULT_CAPACITY = 1 << 16


_registered = False


def register_symbols() -> None:
    """Make libc's clock and thread id known to the JIT's linker (objects from the disk
    cache are linked by name)."""
    global _registered
    if _registered:
        return
    import llvmlite.binding as llvm
    # the process's own symbols first: libc is always among them, and `find_library`
    # runs ldconfig (~10 ms of a first call whose code comes from the disk cache)
    process = ctypes.CDLL(None)
    for name in ("clock_gettime", "pthread_self"):
        if not llvm.address_of_symbol(name):
            fn = getattr(process, name, None)
            if fn is None:
                fn = getattr(ctypes.CDLL(ctypes.util.find_library("c") or None), name)
            llvm.add_symbol(name, ctypes.cast(fn, ctypes.c_void_p).value)
    _registered = True


# --------------------------------------------------------------------------- codegen

def instrument(module: ir.Module) -> None:
    """Give `module` the profile buffer's global, ``tw_profile_slot`` and the record
    helpers; `begin`/`end` then emit probes around actions."""
    register_symbols()
    g = ir.GlobalVariable(module, I8P, GLOBAL_NAME)
    g.linkage = "internal"
    g.initializer = ir.Constant(I8P, None)

    slot = ir.Function(module, ir.FunctionType(ir.PointerType(I8P), []), SLOT_NAME)
    b = ir.IRBuilder(slot.append_basic_block("entry"))
    b.ret(g)

    timespec = ir.ArrayType(I64, 2)  # struct timespec on LP64: tv_sec, tv_nsec
    clock = ir.Function(module, ir.FunctionType(I32, [I32, ir.PointerType(timespec)]),
                        "clock_gettime")
    now = ir.Function(module, ir.FunctionType(I64, []), _NOW_NAME)
    now.linkage = "internal"
    b = ir.IRBuilder(now.append_basic_block("entry"))
    ts = b.alloca(timespec)
    b.call(clock, [I32(CLOCK_MONOTONIC), ts])
    sec = b.load(b.gep(ts, [I32(0), I32(0)]))
    nsec = b.load(b.gep(ts, [I32(0), I32(1)]))
    b.ret(b.add(b.mul(sec, I64(1_000_000_000)), nsec))

    thread = ir.Function(module, ir.FunctionType(I64, []), "pthread_self")
    record = ir.Function(module, ir.FunctionType(ir.VoidType(), [I8P, I64, I64]),
                         _RECORD_NAME)
    record.linkage = "internal"
    # (kept out of line: the step's code stays as compact as without probes)
    record.attributes.add("noinline")
    record.attributes.add("cold")
    buf, ident, start = record.args
    b = ir.IRBuilder(record.append_basic_block("entry"))
    end = b.call(now, [])
    words = b.bitcast(buf, I64P)
    slot = b.atomic_rmw("add", words, I64(1), "monotonic")
    capacity = b.load(b.gep(words, [I64(1)]))
    with b.if_then(b.icmp_unsigned("<", slot, capacity), likely=True):
        rec = b.gep(words, [b.add(I64(HEADER_WORDS), b.mul(slot, I64(RECORD_WORDS)))])
        for k, v in enumerate((ident, start, end, b.call(thread, []))):
            b.store(v, b.gep(rec, [I64(k)]))
    b.ret_void()


class Probe:
    """A started probe: the buffer pointer (loaded once), whether it is set, the start."""

    def __init__(self, buf: ir.Value, on: ir.Value, start: ir.Value) -> None:
        self.buf, self.on, self.start = buf, on, start


def begin(b: ir.IRBuilder, module: ir.Module) -> Probe | None:
    """Before an action: load the buffer pointer, read the clock when it is set. None
    when `module` is not instrumented."""
    g = module.globals.get(GLOBAL_NAME)
    if g is None:
        return None
    buf = b.load(g)
    on = b.icmp_unsigned("!=", buf, ir.Constant(I8P, None))
    pre = b.block
    with b.if_then(on, likely=False):
        t = b.call(module.globals[_NOW_NAME], [])
        timed = b.block
    start = b.phi(I64)
    start.add_incoming(I64(0), pre)
    start.add_incoming(t, timed)
    return Probe(buf, on, start)


def end(b: ir.IRBuilder, module: ir.Module, probe: Probe | None, ident: int) -> None:
    """After the action `ident` (its step-wide id): append its record when tracing."""
    if probe is None:
        return
    with b.if_then(probe.on, likely=False):
        b.call(module.globals[_RECORD_NAME], [probe.buf, I64(ident), probe.start])


# --------------------------------------------------------------------------- buffers

def capacity_from_env() -> int:
    """Records per traced call: ``TW_PROFILE_RECORDS`` or 65536."""
    text = os.environ.get("TW_PROFILE_RECORDS", "")
    try:
        n = int(text) if text else DEFAULT_CAPACITY
    except ValueError:
        raise ValueError(f"TW_PROFILE_RECORDS must be a positive integer, got {text!r}") from None
    if n < 1:
        raise ValueError(f"TW_PROFILE_RECORDS must be a positive integer, got {text!r}")
    return n


class StepProfile:
    """The profile buffer of one compiled step module and the lock that makes its traced
    calls take turns."""

    def __init__(self, slot_function: int) -> None:
        # the global itself, written from Python (a store: no foreign call per switch)
        address = ctypes.CFUNCTYPE(ctypes.c_void_p)(slot_function)()
        self._slot = ctypes.c_void_p.from_address(address)
        self._lock = threading.Lock()
        self.capacity = capacity_from_env()  # (read when the code first records)
        self._words = np.zeros(HEADER_WORDS + RECORD_WORDS * self.capacity, np.int64)
        self._words[1] = self.capacity
        self._address = self._words.ctypes.data

    def begin(self) -> None:
        """Point the module's global at a cleared buffer: this thread's calls of the
        module's step record until `finish` (other threads' traced calls wait)."""
        self._lock.acquire()
        self._words[0] = 0
        self._slot.value = self._address

    def finish(self) -> tuple[np.ndarray, int]:
        """Stop recording; the records since `begin` (int64 [n, RECORD_WORDS]: action
        id, start ns, end ns, thread) and how many a full buffer dropped."""
        try:
            self._slot.value = None
            words = self._words
            taken = int(words[0])
            n = min(taken, self.capacity)
            return (words[HEADER_WORDS:HEADER_WORDS + RECORD_WORDS * n]
                    .reshape(n, RECORD_WORDS).copy(), taken - n)
        finally:
            self._lock.release()


_PROFILE_LOCK = threading.Lock()


def profile_of(compiled: Any) -> StepProfile | None:
    """The `StepProfile` of a compiled step module (made once), or None when its code
    has no probes.

    Made under a lock: two threads' first traced calls each made one, and with two
    locks and two buffers behind the module's one global, a call's records went to the
    other's buffer or were cut off by the other's `finish` (27 records for 10 calls of
    3 actions, tests/test_native_profile.py)."""
    prof = getattr(compiled, "_tw_profile", None)
    if prof is not None:
        return prof
    with _PROFILE_LOCK:
        prof = getattr(compiled, "_tw_profile", None)
        if prof is None:
            address = compiled.addresses.get(SLOT_NAME) or \
                compiled.engine.get_function_address(SLOT_NAME)
            if not address:
                return None
            prof = compiled._tw_profile = StepProfile(address)
    return prof


def _depths(plan: Any, depth: int) -> Iterator[tuple[int, int]]:
    """(action id, how many loops and branches enclose it) for every action of `plan`
    and of its regions' plans."""
    for k, a in enumerate(plan.actions):
        yield plan.base + k, depth
        for r in a.regions:
            yield from _depths(r, depth + 1)


def _op_label(node: Any) -> str:
    """A node's op; a Fusion's names what it fused (``Fusion(Add+Relu)``), and a product
    with an epilogue what follows the product (``FusedConv2D(BiasAdd+Relu)``), so that
    the summary tells fused loops apart."""
    if node.op not in ("Fusion", "FusedConv2D", "FusedMatMul") or not node.regions:
        return node.op
    nodes = node.regions[0].nodes[0 if node.op == "Fusion" else 1:]
    ops = list(dict.fromkeys(n.op for n in nodes if n.op != "Const"))
    return f"{node.op}({'+'.join(ops[:4])}{'+...' if len(ops) > 4 else ''})"


def node_traces(plan: Any, records: np.ndarray, device: str | None = None) -> list[Any]:
    """`NativeNodeTrace`s of `records` (from `StepProfile.finish`) for the actions of
    `plan` (a `step.StepPlan`), in perf_counter seconds, on each node's device (else
    `device`, else the default CPU, as the dataflow executor names it)."""
    from ...runtime.profiler import NativeNodeTrace
    # (what each action id stands for, and the default device's name, worked out on the
    # plan's first traced call: traced calls repeat)
    cache = getattr(plan, "_tw_profile_labels", None)
    if cache is None or (device is not None and cache[0] != device):
        if device is None:
            from ...runtime.devices import default_device_manager
            device = default_device_manager().default_device.name
        cache = plan._tw_profile_labels = (device, {})
    device, labels = cache
    if not labels:
        labels.update({ident: depth for ident, depth in _depths(plan, 0)})
    out = []
    for ident, start, stop, thread in records.tolist():
        label = labels[ident]
        if type(label) is int:  # (only its depth known so far)
            a = plan.action_by_id(ident)
            node = a.node
            if node is None:  # a result copied into its buffer at the end of the step
                label = ("result", "ResultCopy", device, a.kind, label)
            else:
                op = "ReadVariable(snapshot)" if a.kind == "snapshot" else _op_label(node)
                label = (node.name, op, node.assigned_device or device, a.kind, label)
            labels[ident] = label
        name, op, where, kind, depth = label
        out.append(NativeNodeTrace(name, op, where, thread & 0xFFFFFFFFFFFFFFFF,
                                   start * 1e-9, stop * 1e-9, action=kind, depth=depth))
    return out


__all__ = ["CLOCK_MONOTONIC", "DEFAULT_CAPACITY", "GLOBAL_NAME", "HEADER_WORDS", "Probe",
           "RECORD_WORDS", "SLOT_NAME", "StepProfile", "begin", "capacity_from_env", "end",
           "instrument", "node_traces", "profile_of", "register_symbols"]
