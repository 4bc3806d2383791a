"""``tensorweave profile FILE.py:FN``: run a compiled function a few times under
``tw.profiler.trace`` and print where the time went.

    tensorweave profile examples/softmax_regression.py:train_step --steps 20
    tensorweave profile model.py:predict --signature 'x:f32[?,784]' --batch 64 --logdir prof/

Arguments are random arrays of the function's input signature (unknown dimensions take
`--batch`); the first call (tracing and compiling) is timed apart. On the cpu target a
step that compiles to one native function is profiled as it runs: the generated code
reads the clock around every node (and every iteration of a native loop); other steps
run on the dataflow executor with per-node kernels. The output says which. The Chrome
trace goes to ``LOGDIR/trace.json`` (open it in Perfetto or chrome://tracing), the table
to ``LOGDIR/summary.txt``.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np


def add_command(sub: Any) -> None:
    """Add ``profile`` to the CLI's subparsers."""
    p = sub.add_parser("profile", help="time every op of a compiled function's steps",
                       description=__doc__.splitlines()[0])
    p.add_argument("target", help="FILE.py:FUNCTION")
    p.add_argument("--signature", nargs="+", metavar="NAME:DTYPE[DIMS]",
                   help="argument types for a function without input_signature")
    p.add_argument("--steps", type=int, default=10, help="traced calls (default 10)")
    p.add_argument("--batch", type=int, default=32, help="size of unknown dimensions")
    p.add_argument("--logdir", default="tw-profile", help="where trace.json goes")
    p.add_argument("--top", type=int, default=20, help="rows of the table")
    p.set_defaults(run=_profile)


def random_arguments(specs: list[Any], batch: int, seed: int = 0) -> list[np.ndarray]:
    """Arrays of the given TensorSpecs: floats in [-1, 1), small integers, random bools."""
    rng = np.random.default_rng(seed)
    out = []
    for spec in specs:
        shape = tuple(batch if d is None else d for d in spec.shape)
        dtype = spec.dtype
        if dtype.is_floating:
            out.append(rng.uniform(-1, 1, size=shape).astype(dtype.np))
        elif dtype.is_bool:
            out.append(rng.integers(0, 2, size=shape).astype(bool))
        else:
            out.append(rng.integers(0, 10, size=shape).astype(dtype.np))
    return out


def _profile(args: argparse.Namespace) -> str:
    from . import profiler
    from .cli import CliError, concrete_function, load_function, parse_signature
    if args.steps < 1:
        raise CliError("--steps must be at least 1")
    since = time.time()  # (compiles from here on: the trace below, the first call)
    cf = concrete_function(load_function(args.target), parse_signature(args.signature or []))
    arrays = random_arguments(cf.input_specs, args.batch)
    from .runtime import profiler as recording
    warmup = recording.Recorder()  # trace and compile (per-node kernels too), apart
    recording.start(warmup)
    start = time.perf_counter()
    try:
        cf(*arrays)
    finally:
        recording.stop(warmup)
    first = time.perf_counter() - start
    phases = {"trace": 0.0, "pipeline": 0.0, "code generation": 0.0}
    for r in profiler.compile_records(since):
        phases[r["op"]] += r["dur"]
    with profiler.trace(args.logdir) as recorder:
        for _ in range(args.steps):
            cf(*arrays)
    traced = f"trace {phases.pop('trace') * 1e3:.1f} ms; " if phases["trace"] else ""
    detail = ", ".join(f"{phase} {seconds * 1e3:.1f} ms" for phase, seconds in phases.items()
                       if seconds)
    lines = [f"{args.steps} steps of {args.target}, {len(recorder.records)} node runs "
             f"({traced}first call {first * 1e3:.1f} ms{': ' + detail if detail else ''})",
             f"per-node times: {_timed_by(recorder.records, cf)}",
             profiler.summary(recorder.records, top=args.top)]
    if recorder.dropped:
        lines.append(f"({recorder.dropped} node runs not recorded: the native step's profile "
                     f"buffer was full; raise TW_PROFILE_RECORDS)")
    lines.append(f"timeline: {os.path.join(args.logdir, 'trace.json')} "
                 f"(Perfetto, chrome://tracing)")
    return "\n".join(lines)


def _timed_by(records: list[dict[str, Any]], cf: Any) -> str:
    """Which clocks timed the nodes: the native step's own, or the dataflow executor's
    (and why the step is not native, when the target says)."""
    sources = {r.get("source", "dataflow") for r in records}
    if sources == {"native"}:
        return "native step (clocks read inside the generated code)"
    reason = getattr(cf.executable, "native_reason", None)
    where = "dataflow executor" + (f" ({reason})" if reason else "")
    return where if sources == {"dataflow"} else f"native step and {where}"


__all__ = ["add_command", "random_arguments"]
