"""Step timelines (the paper's EEG): every node's start and end on its device and
thread, Send/Recv pairs as flows, as Chrome trace event JSON (Perfetto and
``chrome://tracing`` open it), and a text summary of where the time went.

Traces come from native steps of the cpu target (`NativeNodeTrace`: every action's start
and end read inside the generated code, `targets/cpu/profiling.py`), from the dataflow
executor (`executor.NodeTrace`), also from the tasks of a cluster: each task reports its
nodes with times on the wall clock (`to_records`), so a distributed step becomes one
timeline with a process per device. A record's ``source`` says which: "native" or
"dataflow".
"""

from __future__ import annotations

import json
import logging
import threading
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .executor import NodeTrace

_log = logging.getLogger(__name__)

# perf_counter() -> seconds since the epoch, for this process
_EPOCH_OFFSET = time.time() - time.perf_counter()


@dataclass
class NativeNodeTrace(NodeTrace):
    """One action of a native cpu step, timed by the step's own code (CLOCK_MONOTONIC,
    which is ``time.perf_counter``'s clock): a node call, a loop or branch (its regions'
    nodes are recorded inside it, once per iteration), a variable snapshot or update, or
    a result copy. `action` is the step action's kind (`targets.cpu.step.Action`),
    `depth` how many native loops and branches enclose it."""

    action: str = "native"
    depth: int = 0


def to_records(traces: Iterable[NodeTrace]) -> list[dict[str, Any]]:
    """Traces as plain records with wall-clock times (what a task sends its master)."""
    # ("dur" from the process's own clock: exact, where the wall-clock floats near 1.8e9 s
    # resolve only about 0.2 us)
    return [{"node": t.node, "op": t.op, "device": t.device, "thread": t.thread,
             "start": t.start + _EPOCH_OFFSET, "end": t.end + _EPOCH_OFFSET,
             "dur": max(0.0, t.end - t.start), "transfer": t.transfer,
             "source": "native" if isinstance(t, NativeNodeTrace) else "dataflow",
             "depth": getattr(t, "depth", 0)}
            for t in traces]


def as_records(traces: Iterable[NodeTrace | dict[str, Any]]) -> list[dict[str, Any]]:
    """Records of `traces`, which may mix `NodeTrace`s (this process) and records."""
    traces = list(traces)
    if all(isinstance(t, NodeTrace) for t in traces):  # (the usual case: one conversion)
        return to_records(traces)
    return [to_records([t])[0] if isinstance(t, NodeTrace) else dict(t) for t in traces]


def _duration(r: dict[str, Any]) -> float:
    """A record's duration in seconds (its exact "dur" when it has one)."""
    d = r.get("dur")
    return max(0.0, r["end"] - r["start"]) if d is None else d


def chrome_trace(traces: Iterable[NodeTrace | dict[str, Any]]) -> dict[str, Any]:
    """The Chrome trace event format: a complete ("X") event per node, one process per
    device, one thread per executor thread, and a flow arrow from each Send to its Recv
    (matched by rendezvous key)."""
    records = as_records(traces)
    if not records:
        return {"traceEvents": [], "displayTimeUnit": "ms"}
    t0 = min(r["start"] for r in records)
    devices = sorted({r["device"] or "(host)" for r in records})
    pid = {d: i + 1 for i, d in enumerate(devices)}
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": pid[d], "tid": 0, "args": {"name": d}}
        for d in devices]
    sends: dict[str, dict[str, Any]] = {}
    threads: dict[tuple[int, int], int] = {}
    for r in sorted(records, key=lambda r: r["start"]):
        device = r["device"] or "(host)"
        ts = (r["start"] - t0) * 1e6
        dur = _duration(r) * 1e6
        tid = int(r["thread"]) % 2**31
        if (pid[device], tid) not in threads:  # threads named in order of appearance
            threads[pid[device], tid] = len([k for k in threads if k[0] == pid[device]])
            events.append({"name": "thread_name", "ph": "M", "pid": pid[device], "tid": tid,
                           "args": {"name": f"thread {threads[pid[device], tid]}"}})
        event = {"name": r["op"], "cat": "op", "ph": "X", "ts": ts, "dur": dur,
                 "pid": pid[device], "tid": tid,
                 "args": {"node": r["node"], "source": r.get("source", "dataflow")}}
        events.append(event)
        if r.get("transfer") and r["op"] == "Send":
            sends[r["transfer"]] = event
    for r in records:
        if r.get("transfer") and r["op"] == "Recv" and r["transfer"] in sends:
            send = sends[r["transfer"]]
            flow = zlib.crc32(r["transfer"].encode())
            events.append({"name": "transfer", "cat": "transfer", "ph": "s", "id": flow,
                           "ts": send["ts"] + send["dur"], "pid": send["pid"],
                           "tid": send["tid"]})
            events.append({"name": "transfer", "cat": "transfer", "ph": "f", "bp": "e",
                           "id": flow, "ts": (r["end"] - t0) * 1e6,
                           "pid": pid[r["device"] or "(host)"],
                           "tid": int(r["thread"]) % 2**31})
    return {"traceEvents": events, "displayTimeUnit": "ms"}


_LOCAL_DEVICE = "/job:localhost/replica:0/task:0/device:"


def _short_device(device: str) -> str:
    """``CPU:0`` for this process's devices; others (tasks of a cluster) in full."""
    return device[len(_LOCAL_DEVICE):] if device.startswith(_LOCAL_DEVICE) else device


def summary(traces: Iterable[NodeTrace | dict[str, Any]], top: int = 15) -> str:
    """A table of the ops that took the most time, per device: calls, total and mean
    time, and the op's share of its device's busy time. Nodes inside a loop or branch
    count in their op's row and in the loop's (which encloses them)."""
    records = as_records(traces)
    totals: dict[tuple[str, str], list[float]] = {}
    busy: dict[str, float] = {}
    for r in records:
        device = _short_device(r["device"] or "(host)")
        entry = totals.setdefault((device, r["op"]), [0.0, 0])
        entry[0] += _duration(r)
        entry[1] += 1
        if r.get("depth", 0) == 0:
            busy[device] = busy.get(device, 0.0) + _duration(r)
    rows = sorted(totals.items(), key=lambda kv: -kv[1][0])[:top]
    width = max([len(d) for (d, _), _ in rows] + [6])
    opw = max([len(op) for (_, op), _ in rows] + [24])
    lines = [f"{'device':<{width}}  {'op':<{opw}} {'calls':>6} {'total ms':>10} {'mean us':>9} "
             f"{'share':>6}"]
    for (device, op), (total, calls) in rows:
        share = total / busy[device] * 100 if busy.get(device) else 0.0
        lines.append(f"{device:<{width}}  {op:<{opw}} {calls:>6} {total * 1e3:>10.3f} "
                     f"{total / calls * 1e6:>9.1f} {share:>5.1f}%")
    return "\n".join(lines)


class Timeline:
    """TensorFlow 1's ``timeline.Timeline(run_metadata.step_stats)``."""

    def __init__(self, step_stats: Sequence[NodeTrace | dict[str, Any]]) -> None:
        self.step_stats = list(step_stats)

    def generate_chrome_trace_format(self, show_dataflow: bool = True,
                                     show_memory: bool = False) -> str:
        trace = chrome_trace(self.step_stats)
        if not show_dataflow:
            trace["traceEvents"] = [e for e in trace["traceEvents"]
                                    if e.get("cat") != "transfer"]
        return json.dumps(trace)


class Recorder:
    """Collects the traces of every compiled call made while it is active."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.calls = 0
        self.dropped = 0  # native records lost to a full buffer (TW_PROFILE_RECORDS)
        self._lock = threading.Lock()

    def add(self, traces: Iterable[NodeTrace | dict[str, Any]], dropped: int = 0) -> None:
        """Add one call's traces (and the count of its records a full buffer dropped)."""
        records = as_records(traces)
        with self._lock:
            self.records.extend(records)
            self.calls += 1
            self.dropped += dropped


_recorders: list[Recorder] = []


def active() -> Recorder | None:
    """The recorder of the innermost ``tw.profiler.trace`` block, if any."""
    return _recorders[-1] if _recorders else None


def start(recorder: Recorder) -> None:
    """Make `recorder` the active one (``tw.profiler.trace`` entering its block)."""
    _recorders.append(recorder)


def stop(recorder: Recorder) -> None:
    """Stop recording into `recorder`."""
    if recorder in _recorders:
        _recorders.remove(recorder)


def note_dropped(count: int) -> None:
    """`count` records of a native step were lost to its full profile buffer: counted by
    the active recorders (their summaries say so) and logged, once per trace block."""
    if count <= 0:
        return
    first = not _recorders  # (one warning per trace block, not one per step)
    for recorder in list(_recorders):
        with recorder._lock:
            first = first or recorder.dropped == 0
            recorder.dropped += count
    if first:
        _log.warning("profiler: %d node runs of a native step were not recorded: its "
                     "profile buffer was full (raise TW_PROFILE_RECORDS; the summary counts "
                     "every run dropped)", count)


__all__ = ["NativeNodeTrace", "Recorder", "Timeline", "active", "as_records", "chrome_trace",
           "note_dropped", "start", "stop", "summary", "to_records"]
