"""``tw.profiler``: timelines of compiled steps (the paper's EEG).

    with tw.profiler.trace("logs/run1"):
        for _ in range(10):
            train_step(x, y)
    # logs/run1/trace.json opens in Perfetto or chrome://tracing; summary.txt ranks ops

Every node of every step run inside the block is recorded with its device, thread, start
and end (on every task of a cluster), and Send/Recv pairs are drawn as flows. Steps run
on the dataflow executor while traced (the native one-function steps have no per-node
clock), so timings are those of per-node kernels.
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
        atomic_files.write_bytes(os.path.join(logdir, "summary.txt"),
                                 (summary(recorder.records) + "\n").encode())


__all__ = ["Recorder", "Timeline", "chrome_trace", "summary", "trace"]
