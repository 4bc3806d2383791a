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
event says which (``args.source``: "native" or "dataflow").
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator

from .runtime import atomic_files
from .runtime.profiler import Recorder, Timeline, chrome_trace, summary
from .runtime.profiler import start as _start
from .runtime.profiler import stop as _stop


@contextlib.contextmanager
def trace(logdir: str) -> Iterator[Recorder]:
    """Record every compiled step run in the block; on exit write
    ``logdir/trace.json`` (Chrome trace events) and ``logdir/summary.txt``."""
    recorder = Recorder()
    _start(recorder)
    try:
        yield recorder
    finally:
        _stop(recorder)
        os.makedirs(logdir, exist_ok=True)
        atomic_files.write_bytes(os.path.join(logdir, "trace.json"),
                                 json.dumps(chrome_trace(recorder.records)).encode())
        text = summary(recorder.records)
        if recorder.dropped:
            text += (f"\n({recorder.dropped} node runs not recorded: a native step's profile "
                     f"buffer was full; raise TW_PROFILE_RECORDS)")
        atomic_files.write_bytes(os.path.join(logdir, "summary.txt"), (text + "\n").encode())


__all__ = ["Recorder", "Timeline", "chrome_trace", "summary", "trace"]
