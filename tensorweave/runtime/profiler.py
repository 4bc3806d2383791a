"""Step timelines (the paper's EEG): every node's start and end on its device and
thread, Send/Recv pairs as flows, as Chrome trace event JSON (Perfetto and
``chrome://tracing`` open it), and a text summary of where the time went.

Traces come from the dataflow executor (`executor.NodeTrace`), also from the tasks of a
cluster: each task reports its nodes with times on the wall clock (`to_records`), so a
distributed step becomes one timeline with a process per device.
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

from .executor import NodeTrace

# perf_counter() -> seconds since the epoch, for this process
_EPOCH_OFFSET = time.time() - time.perf_counter()


def to_records(traces: Iterable[NodeTrace]) -> list[dict[str, Any]]:
    """Traces as plain records with wall-clock times (what a task sends its master)."""
    return [{"node": t.node, "op": t.op, "device": t.device, "thread": t.thread,
             "start": t.start + _EPOCH_OFFSET, "end": t.end + _EPOCH_OFFSET,
             "transfer": t.transfer} for t in traces]


def as_records(traces: Iterable[NodeTrace | dict[str, Any]]) -> list[dict[str, Any]]:
    """Records of `traces`, which may mix `NodeTrace`s (this process) and records."""
    out = []
    for t in traces:
        out.extend(to_records([t]) if isinstance(t, NodeTrace) else [dict(t)])
    return out


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
    for r in sorted(records, key=lambda r: r["start"]):
        device = r["device"] or "(host)"
        ts = (r["start"] - t0) * 1e6
        dur = max(0.0, (r["end"] - r["start"]) * 1e6)
        event = {"name": r["op"], "cat": "op", "ph": "X", "ts": ts, "dur": dur,
                 "pid": pid[device], "tid": int(r["thread"]) % 2**31,
                 "args": {"node": r["node"]}}
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


def summary(traces: Iterable[NodeTrace | dict[str, Any]], top: int = 15) -> str:
    """A table of the ops that took the most time, per device."""
    records = as_records(traces)
    totals: dict[tuple[str, str], list[float]] = {}
    for r in records:
        entry = totals.setdefault((r["device"] or "(host)", r["op"]), [0.0, 0])
        entry[0] += r["end"] - r["start"]
        entry[1] += 1
    rows = sorted(totals.items(), key=lambda kv: -kv[1][0])[:top]
    width = max([len(d) for (d, _), _ in rows] + [6])
    lines = [f"{'device':<{width}}  {'op':<24} {'calls':>6} {'total ms':>10} {'mean us':>9}"]
    for (device, op), (total, calls) in rows:
        lines.append(f"{device:<{width}}  {op:<24} {calls:>6} {total * 1e3:>10.3f} "
                     f"{total / calls * 1e6:>9.1f}")
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
        self._lock = threading.Lock()

    def add(self, traces: Iterable[NodeTrace | dict[str, Any]]) -> None:
        records = as_records(traces)
        with self._lock:
            self.records.extend(records)
            self.calls += 1


_recorders: list[Recorder] = []


def active() -> Recorder | None:
    """The recorder of the innermost ``tw.profiler.trace`` block, if any."""
    return _recorders[-1] if _recorders else None


def start(recorder: Recorder) -> None:
    _recorders.append(recorder)


def stop(recorder: Recorder) -> None:
    if recorder in _recorders:
        _recorders.remove(recorder)


__all__ = ["Recorder", "Timeline", "active", "as_records", "chrome_trace", "start", "stop",
           "summary", "to_records"]
