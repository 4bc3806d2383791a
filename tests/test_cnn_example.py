"""examples/mnist_cnn.py trains, and ``tensorweave profile`` on its training step prints
the table and writes a Chrome trace (checked against the trace event format here) whose
per-node times come from the native step's own clocks."""

from __future__ import annotations

import json
import numbers
import os
import re
import subprocess
import sys

from .test_examples import ROOT, printed_accuracy, printed_losses, run_example

# The trace event format (the JSON Object Format of Google's "Trace Event Format"
# document, which Perfetto and chrome://tracing read): fields every event of a phase needs.
_COMMON = {"name", "ph", "pid", "tid"}
REQUIRED = {
    "X": _COMMON | {"ts", "dur"},          # complete event
    "B": _COMMON | {"ts"}, "E": _COMMON | {"ts"},
    "i": _COMMON | {"ts"}, "I": _COMMON | {"ts"},
    "s": _COMMON | {"ts", "id"}, "t": _COMMON | {"ts", "id"}, "f": _COMMON | {"ts", "id"},
    "M": {"name", "ph", "pid", "args"},   # metadata
}
METADATA_NAMES = {"process_name", "process_labels", "process_sort_index", "thread_name",
                  "thread_sort_index"}


def validate_chrome_trace(trace: object) -> list[dict]:
    """Check `trace` (parsed JSON) against the trace event format; returns its events.

    The object form: ``traceEvents`` a list, ``displayTimeUnit`` "ms" or "ns" if given.
    Each event: a known phase with its required fields; ``pid``/``tid`` integers; ``ts``
    and ``dur`` non-negative numbers (microseconds); ``args`` an object; metadata events
    one of the known names with ``args.name`` (or ``sort_index``/``labels``); flow events
    paired by ``id`` (every ``s`` has an ``f`` and the other way round, the ``f`` not
    before its ``s``), with ``bp`` "e" where given."""
    assert isinstance(trace, dict) and isinstance(trace.get("traceEvents"), list), trace
    assert trace.get("displayTimeUnit", "ms") in ("ms", "ns")
    events = trace["traceEvents"]
    flow_start: dict[object, float] = {}
    flow_end: dict[object, float] = {}
    for e in events:
        assert isinstance(e, dict), e
        ph = e.get("ph")
        assert ph in REQUIRED, f"unknown phase: {e}"
        missing = REQUIRED[ph] - set(e)
        assert not missing, f"{ph} event without {sorted(missing)}: {e}"
        assert isinstance(e["name"], str) and e["name"], e
        for key in ("pid", "tid"):
            if key in e:
                assert isinstance(e[key], int) and not isinstance(e[key], bool), e
        for key in ("ts", "dur"):
            if key in e:
                assert isinstance(e[key], numbers.Real) and e[key] >= 0, e
        if "args" in e:
            assert isinstance(e["args"], dict), e
        if ph == "M":
            assert e["name"] in METADATA_NAMES, e
            if e["name"] in ("process_name", "thread_name"):
                assert isinstance(e["args"].get("name"), str), e
            if e["name"].startswith("thread"):
                assert "tid" in e, e
        if ph in "sf":
            assert isinstance(e["id"], (int, str)), e
            (flow_start if ph == "s" else flow_end)[e["id"]] = e["ts"]
            if "bp" in e:
                assert e["bp"] == "e", e
    assert set(flow_start) == set(flow_end), "flow events without their other end"
    for k, ts in flow_start.items():
        assert flow_end[k] >= ts, f"flow {k} ends before it starts"
    json.dumps(trace, allow_nan=False)  # plain JSON: no NaN or infinity
    return events


def test_the_validator_rejects_what_viewers_reject():
    good = {"traceEvents": [
        {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "CPU:0"}},
        {"name": "MatMul", "ph": "X", "ts": 0.0, "dur": 2.5, "pid": 1, "tid": 7, "args": {}},
        {"name": "t", "ph": "s", "id": 3, "ts": 2.5, "pid": 1, "tid": 7},
        {"name": "t", "ph": "f", "id": 3, "ts": 4.0, "pid": 1, "tid": 8, "bp": "e"}]}
    assert len(validate_chrome_trace(good)) == 4
    bad_cases = [
        {"ph": "X", "name": "A", "ts": 0, "pid": 1, "tid": 1},               # no dur
        {"ph": "X", "name": "A", "ts": -1, "dur": 1, "pid": 1, "tid": 1},    # negative ts
        {"ph": "X", "name": "A", "ts": 0, "dur": 1, "pid": "1", "tid": 1},   # pid not int
        {"ph": "Q", "name": "A", "ts": 0, "pid": 1, "tid": 1},               # no such phase
        {"ph": "M", "name": "process_name", "pid": 1},                       # no args
        {"ph": "s", "name": "t", "id": 9, "ts": 0, "pid": 1, "tid": 1},      # unpaired flow
    ]
    for bad in bad_cases:
        try:
            validate_chrome_trace({"traceEvents": good["traceEvents"] + [bad]})
        except AssertionError:
            continue
        raise AssertionError(f"accepted {bad}")


def test_mnist_cnn_trains():
    out = run_example("mnist_cnn", "--steps", "100", "--batch", "32", "--filters", "8", "16",
                      "--hidden", "64")
    losses = printed_losses(out)
    assert len(losses) == 2 and losses[-1] < losses[0], out  # steps 0 and 99
    assert printed_accuracy(out) >= 0.85, out


def test_profile_of_the_cnn_step_is_timed_by_the_native_step(tmp_path):
    """``tensorweave profile examples/mnist_cnn.py:train_step`` as a user runs it (the cpu
    target by default): the table, and a valid trace of native per-node times."""
    env = {k: v for k, v in os.environ.items() if k != "TW_DEFAULT_TARGET"}
    logdir = tmp_path / "prof"
    proc = subprocess.run(
        [sys.executable, "-m", "tensorweave.cli", "profile", "examples/mnist_cnn.py:train_step",
         "--steps", "3", "--batch", "16", "--logdir", str(logdir)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert re.search(r"^3 steps of examples/mnist_cnn.py:train_step, \d+ node runs \(trace "
                     r"[\d.]+ ms; first call [\d.]+ ms: pipeline [\d.]+ ms, code generation",
                     out, re.MULTILINE), out
    assert "per-node times: native step" in out, out
    header = re.search(r"^device\s+op\s+calls\s+total ms\s+mean us\s+share$", out, re.MULTILINE)
    assert header, out
    rows = re.findall(r"^CPU:0\s+(\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%$", out,
                      re.MULTILINE)
    ops = {op for op, *_ in rows}
    # (the convolutions' bias + relu run in their epilogue: tests/test_epilogue_fusion.py)
    conv = "FusedConv2D(BiasAdd+Relu+Greater)"
    assert {conv, "Conv2DBackpropFilter", "MatMul"} <= ops, out
    assert all(int(calls) % 3 == 0 for _, calls, *_ in rows), out  # every step, 3 steps
    assert (logdir / "summary.txt").read_text().startswith("device")

    events = validate_chrome_trace(json.loads((logdir / "trace.json").read_text()))
    spans = [e for e in events if e["ph"] == "X"]
    assert spans and all(e["args"]["source"] == "native" for e in spans)
    assert {conv, "MaxPool", "MaxPoolGrad", "AssignSubVariable"} <= {e["name"] for e in spans}
    processes = [e for e in events if e["ph"] == "M" and e["name"] == "process_name"]
    assert [p["args"]["name"] for p in processes] == \
        ["/job:localhost/replica:0/task:0/device:CPU:0"]
    named = {e["tid"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {e["tid"] for e in spans} <= named
    # one step's actions run one after another on the calling thread: no two overlap
    spans.sort(key=lambda e: e["ts"])
    for a, b in zip(spans, spans[1:]):
        assert b["ts"] >= a["ts"] + a["dur"] - 1.0, (a, b)  # (1 us of float rounding)
