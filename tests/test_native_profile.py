"""Per-node clocks inside native cpu steps (`targets/cpu/profiling.py`): what
`tw.profiler.trace` records for a step that runs as one native function: every action,
every iteration of a native loop, on the calling thread, within the call; a bounded
buffer that counts what it drops; nothing when tracing is off."""

from __future__ import annotations

import json
import logging
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.errors import InvalidArgumentError
from tensorweave.runtime.profiler import _EPOCH_OFFSET
from tensorweave.targets.cpu import profiling
from tensorweave.targets.cpu.step import emit_step

from .test_cnn_example import validate_chrome_trace


def _native(fn, *args):
    """The NativeStep of `fn` (a cpu-target Function) for `args` (asserted native)."""
    step = fn.get_concrete_function(*args).executable.native_step(list(args))
    assert step is not None
    return step


def _wall() -> float:
    return time.perf_counter() + _EPOCH_OFFSET  # the records' clock


@tw.compile(target="cpu")
def _dense(x, w):
    h = tw.nn.relu(tw.matmul(x, w) + 0.5)
    return tw.reduce_sum(h, axis=1), tw.reduce_max(h)


def test_a_native_step_records_each_action_once_in_order_within_the_call(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w = rng.standard_normal((16, 4)).astype(np.float32)
    expected = _dense(x, w)
    plan = _native(_dense, x, w).plan
    with tw.profiler.trace(str(tmp_path)) as rec:
        before = _wall()
        got = _dense(x, w)
        after = _wall()
    for e, g in zip(expected, got):  # tracing changes nothing in the results
        np.testing.assert_array_equal(e, g)
    records = rec.records
    assert rec.calls == 1 and len(records) == len(plan.actions)
    assert {r["source"] for r in records} == {"native"}
    assert {r["thread"] for r in records} == {threading.get_ident()}
    nodes = [a.node.name if a.node is not None else "result" for a in plan.actions]
    assert [r["node"] for r in records] == nodes  # the plan's order
    assert "MatMul" in {r["op"] for r in records}
    assert all(before - 1e-6 <= r["start"] <= r["end"] <= after + 1e-6 for r in records)
    for a, b in zip(records, records[1:]):  # one after another
        assert b["start"] >= a["end"] - 1e-6
    events = validate_chrome_trace(json.loads((tmp_path / "trace.json").read_text()))
    assert {e["args"]["source"] for e in events if e["ph"] == "X"} == {"native"}
    assert "MatMul" in (tmp_path / "summary.txt").read_text()


@tw.compile(target="cpu")
def _loop(x, n):
    def body(i, y):
        return i + 1, tw.tanh(y) * 1.5

    return tw.while_loop(lambda i, y: i < n, body, (tw.constant(0), x))[1]


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 7))
def test_every_iteration_of_a_native_loop_is_recorded_inside_the_loop(n):
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    count = np.int32(n)
    expected = _loop(x, count)
    step = _native(_loop, x, count)
    assert step.has_loops
    with tw.profiler.trace(_tmpdir()) as rec:
        np.testing.assert_array_equal(_loop(x, count), expected)
    loops = [r for r in rec.records if r["op"] == "While"]
    inner = [r for r in rec.records if r["depth"] == 1]
    assert len(loops) == 1 and all(r["depth"] == 0 for r in loops)
    body = [r for r in inner if "Tanh" in r["op"]]
    assert len(body) == n  # the body's tanh, once per iteration
    # the condition runs once more than the body; every action of both, every time
    assert len(inner) == (n + 1) * _actions(step, 0) + n * _actions(step, 1)
    while_ = loops[0]
    assert all(while_["start"] - 1e-6 <= r["start"] <= r["end"] <= while_["end"] + 1e-6
               for r in inner)


def _actions(step, region: int) -> int:
    """Actions of the While's region `region` (0: cond, 1: body)."""
    (a,) = [a for a in step.plan.actions if a.kind == "region"]
    return len(a.regions[region].actions)


def _tmpdir() -> str:
    import tempfile
    return tempfile.mkdtemp(prefix="tw-native-profile-")


def test_a_full_buffer_keeps_the_first_records_and_counts_the_rest(monkeypatch, tmp_path,
                                                                   caplog):
    monkeypatch.setenv("TW_PROFILE_RECORDS", "5")

    @tw.compile(target="cpu")
    def f(x):  # (its own code: the buffer's size is read when a module first records)
        return tw.while_loop(lambda i, y: i < 20, lambda i, y: (i + 1, y * 0.75 + 1234.5),
                             (tw.constant(0), x))[1]

    x = np.ones(3, np.float32)
    f(x)
    with caplog.at_level(logging.WARNING, "tensorweave.runtime.profiler"), \
            tw.profiler.trace(str(tmp_path)) as rec:
        f(x)
    step = _native(f, x)
    actions = len(step.plan.actions) + 21 * _actions(step, 0) + 20 * _actions(step, 1)
    assert len(rec.records) == 5
    assert rec.dropped == actions - 5
    assert "not recorded" in (tmp_path / "summary.txt").read_text()
    assert any("TW_PROFILE_RECORDS" in r.getMessage() for r in caplog.records)


def test_the_buffer_size_must_be_a_positive_integer(monkeypatch):
    monkeypatch.setenv("TW_PROFILE_RECORDS", "lots")
    with pytest.raises(ValueError, match="TW_PROFILE_RECORDS"):
        profiling.capacity_from_env()
    monkeypatch.setenv("TW_PROFILE_RECORDS", "0")
    with pytest.raises(ValueError, match="positive"):
        profiling.capacity_from_env()


def test_nothing_is_recorded_outside_a_trace_and_an_error_turns_tracing_off():
    @tw.compile(target="cpu")
    def f(x):
        tw.debugging.assert_positive(x, message="x must be positive")
        return x * 2.0

    x = np.ones(4, np.float32)
    f(x)
    step = _native(f, x)
    prof = profiling.profile_of(step._compiled)
    assert prof is not None and prof._slot.value is None  # off: a null pointer
    with tw.profiler.trace(_tmpdir()) as rec:
        with pytest.raises(InvalidArgumentError, match="x must be positive"):
            f(-x)
        assert prof._slot.value is None  # off again after the failing call
        failed = len(rec.records)
        np.testing.assert_array_equal(f(x), 2 * x)  # the next traced call works
    assert len(rec.records) - failed == len(step.plan.actions)
    taken = int(prof._words[0])
    np.testing.assert_array_equal(f(x), 2 * x)
    step([x])
    assert int(prof._words[0]) == taken  # untraced calls write nothing


def test_concurrent_traced_calls_record_their_own_threads():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones((3, 2), np.float32)
    _dense(a, b)
    n_actions = len(_native(_dense, a, b).plan.actions)
    idents = []
    together = threading.Barrier(2)  # both alive at once: two distinct thread ids

    def work():
        idents.append(threading.get_ident())
        together.wait()
        for _ in range(5):
            _dense(a, b)
        together.wait()

    with tw.profiler.trace(_tmpdir()) as rec:
        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert rec.calls == 10 and len(rec.records) == 10 * n_actions
    assert len(set(idents)) == 2
    for i in idents:
        assert len([r for r in rec.records if r["thread"] == i]) == 5 * n_actions


def test_first_traced_calls_on_two_threads_share_one_profile(monkeypatch):
    """Two threads' first traced calls of one module get the same `StepProfile` (one
    buffer and lock behind the module's one global), however their look-ups interleave."""

    class Compiled:  # (a compiled module's two attributes profile_of reads)
        addresses = {profiling.SLOT_NAME: 1}

    made = []
    both_inside = threading.Barrier(2, timeout=2.0)

    class SlowProfile:
        def __init__(self, address):
            made.append(self)
            try:
                both_inside.wait()  # a second thread making its own would meet us here
            except threading.BrokenBarrierError:
                pass

    monkeypatch.setattr(profiling, "StepProfile", SlowProfile)
    compiled = Compiled()
    got = []
    threads = [threading.Thread(target=lambda: got.append(profiling.profile_of(compiled)))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and got[0] is got[1] is made[0]


def test_ahead_of_time_code_has_no_probes():
    x = np.ones((2, 3), np.float32)
    w = np.ones((3, 2), np.float32)
    plan = _native(_dense, x, w).plan
    assert profiling.SLOT_NAME not in str(emit_step(plan))
    assert profiling.SLOT_NAME in str(emit_step(plan, data_offset=16))


def test_traces_and_compiles_in_the_block_are_spans_of_the_compiler(tmp_path):
    with tw.profiler.trace(str(tmp_path)):
        @tw.compile(target="cpu")
        def fresh(x):
            return tw.reduce_sum(tw.exp(x) * 0.125)

        fresh(np.ones(5, np.float32))  # traced and compiled inside the block
        fresh(np.ones(5, np.float32))
    events = validate_chrome_trace(json.loads((tmp_path / "trace.json").read_text()))
    (compiler,) = [e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"
                   and e["args"]["name"] == "(compiler)"]
    spans = [e for e in events if e["ph"] == "X" and e["pid"] == compiler]
    assert [e["name"] for e in spans] == ["trace", "pipeline", "code generation"]
    assert all(e["args"]["node"].startswith("fresh(") for e in spans)
    assert all(e["args"]["source"] == "compiler" for e in spans)
    assert spans[1]["ts"] + spans[1]["dur"] <= spans[2]["ts"] + 1.0  # back to back
    text = (tmp_path / "summary.txt").read_text()
    assert "compiling in the block: trace" in text and "(compiler)" not in text
