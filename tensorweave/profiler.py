"""``tw.profiler``: timelines of compiled steps (the paper's EEG).

    with tw.profiler.trace("logs/run1"):
        for _ in range(10):
            train_step(x, y)
    # logs/run1/trace.json opens in Perfetto or chrome://tracing; summary.txt ranks ops

Every node of every step run inside the block is recorded with its device, thread, start
and end (on every task of a cluster), and Send/Recv pairs are drawn as flows. On the cpu
target a step that runs as one native function is profiled as it runs: its generated code
reads the clock around every node, loop, branch and variable update, and around every
node of every iteration of a native loop (`targets/cpu/profiling.py`; at most
``TW_PROFILE_RECORDS`` records per call, 65536 by default: the rest are counted, and
reported, not kept). Other steps run on the dataflow executor with per-node kernels. Each
event says which (``args.source``: "native" or "dataflow"). Traces and compiles made in
the block (the compile log's records) appear as spans of a "(compiler)" process, one per
phase (trace, pipeline, code generation), and in a line under the summary table.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from typing import Any

from .runtime import atomic_files
from .runtime.profiler import Recorder, Timeline, chrome_trace, summary
from .runtime.profiler import start as _start
from .runtime.profiler import stop as _stop


@contextlib.contextmanager
def trace(logdir: str) -> Iterator[Recorder]:
    """Record every compiled step run in the block; on exit write
    ``logdir/trace.json`` (Chrome trace events) and ``logdir/summary.txt``."""
    recorder = Recorder()
    since = time.time()
    _start(recorder)
    try:
        yield recorder
    finally:
        _stop(recorder)
        compiles = compile_records(since)
        os.makedirs(logdir, exist_ok=True)
        atomic_files.write_bytes(os.path.join(logdir, "trace.json"), json.dumps(
            chrome_trace(recorder.records + compiles)).encode())
        text = summary(recorder.records)
        if compiles:
            total = {label: 0.0 for _, label in _PHASES}
            for r in compiles:
                total[r["op"]] += r["dur"]
            text += ("\ncompiling in the block: " + ", ".join(
                f"{phase} {seconds * 1e3:.1f} ms" for phase, seconds in total.items()))
        if recorder.dropped:
            text += (f"\n({recorder.dropped} node runs not recorded: a native step's profile "
                     f"buffer was full; raise TW_PROFILE_RECORDS)")
        atomic_files.write_bytes(os.path.join(logdir, "summary.txt"), (text + "\n").encode())


_PHASES = (("trace", "trace"), ("pipeline", "pipeline"), ("codegen", "code generation"))


def compile_records(since: float) -> list[dict[str, Any]]:
    """The compile log's traces and compiles made after `since` (``time.time()``) as
    timeline records of a "(compiler)" device: one per phase (a trace's, then a
    compile's pipeline and code generation), back to back, ending when the log recorded
    them (a compile's record is made after its first run, so its spans end up to one
    step late)."""
    from .frontend.compile_log import compile_log
    out: list[dict[str, Any]] = []
    for rec in compile_log():
        if rec.started < since:
            continue
        end = rec.started
        for key, label in reversed(_PHASES):
            seconds = rec.phases.get(key)
            if not seconds or (key == "trace" and rec.event != "trace"):
                continue  # (a compile repeats its trace's time, which has its own record)
            out.append({"node": f"{rec.function}({rec.signature})", "op": label,
                        "device": "(compiler)", "thread": 0, "start": end - seconds,
                        "end": end, "dur": seconds, "transfer": "", "source": "compiler",
                        "depth": 0})
            end -= seconds
    return out


__all__ = ["Recorder", "Timeline", "chrome_trace", "compile_records", "summary", "trace"]
