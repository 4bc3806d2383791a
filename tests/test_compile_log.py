"""Compiles that explain themselves (issues 14 and 15): `tw.debugging.compile_log()` keeps
every trace and compile with its reason and phase times; long compiles, and native steps
built again for new shapes, log one INFO line on logger ``tensorweave``."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.frontend import compile_log as cl


@pytest.fixture(autouse=True)
def _fresh_log(monkeypatch):
    tw.debugging.clear_compile_log()
    monkeypatch.delenv("TW_LONG_COMPILE_SECONDS", raising=False)
    yield
    tw.debugging.clear_compile_log()


def _events(records):
    return [(r.event, r.reason) for r in records]


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_each_trace_and_compile_is_recorded_with_its_reason(target):
    f = tw.compile(lambda x, k: x * k, target=target, name="scale")
    f(np.ones(3), 2.0)
    f(np.ones(3), 2.0)  # a cache hit: nothing new
    f(np.ones(3), 3.0)
    f(np.ones(4), 3.0)
    f(np.ones(4, np.float32), 3.0)
    records = f.experimental_get_compile_stats()
    assert _events(records) == [
        ("trace", "first call"), ("compile", "first call"),
        ("trace", "new value of the static argument k (3.0, was 2.0)"),
        ("compile", "new value of the static argument k (3.0, was 2.0)"),
        ("trace", "new shape of x (f64[4], was f64[3])"),
        ("compile", "new shape of x (f64[4], was f64[3])"),
        ("trace", "new dtype of x (f32[4], was f64[4])"),
        ("compile", "new dtype of x (f32[4], was f64[4])"),
    ]
    assert [r.signature for r in records[::2]] == ["x: f64[3], k=2.0", "x: f64[3], k=3.0",
                                                   "x: f64[4], k=3.0", "x: f32[4], k=3.0"]
    assert {r.function for r in records} == {"scale"} and {r.target for r in records} == {target}
    for r in records:
        assert all(s >= 0 for s in r.phases.values())
        assert r.seconds == pytest.approx(sum(r.phases.values()))
    compiles = [r for r in records if r.event == "compile"]
    assert all(set(r.phases) >= {"trace", "pipeline"} and r.phases["pipeline"] > 0
               for r in compiles)
    # the cpu target generates code on the first call; the reference target does not
    assert all(("codegen" in r.phases) == (target == "cpu") for r in compiles)
    if target == "cpu":
        assert all("compiled by LLVM" in r.cache or "cache" in r.cache for r in compiles)
    # the process-wide log holds them too, with other functions' records
    g = tw.compile(lambda x: x + 1, target=target)
    g(np.ones(2))
    everything = tw.debugging.compile_log()
    assert len(everything) == len(records) + 2
    assert [r.function for r in everything[-2:]] == ["<lambda>", "<lambda>"]


def test_the_log_prints_as_a_table():
    f = tw.compile(lambda x, lr: x * lr, name="step")
    f(np.ones((2, 3), np.float32), 0.1)
    f(np.ones((2, 3), np.float32), 0.2)
    text = str(tw.debugging.compile_log())
    lines = text.splitlines()
    assert lines[0].split() == ["#", "event", "function", "signature", "target", "reason",
                                "cache", "trace", "s", "pipeline", "s", "codegen", "s",
                                "total", "s"]
    assert set(lines[1]) == {"-", " "}
    assert len(lines) == 2 + 4
    assert "step" in lines[2] and "x: f32[2,3], lr=0.1" in lines[2] and "first call" in lines[2]
    assert "new value of the static argument lr (0.2, was 0.1)" in lines[4]
    tw.debugging.clear_compile_log()
    assert str(tw.debugging.compile_log()) == "no traces or compiles yet"


def test_a_new_batch_size_on_the_cpu_target_is_logged_with_its_reason(caplog):
    w = np.ones((8, 4), np.float32)

    @tw.compile(input_signature=[tw.TensorSpec([None, 8], tw.float32)], target="cpu")
    def predict(x):
        return tw.nn.relu(x @ w)

    with caplog.at_level(logging.INFO, logger="tensorweave"):
        predict(np.ones((2, 8), np.float32))
        predict(np.ones((2, 8), np.float32))
        predict(np.ones((5, 8), np.float32))
    records = predict.experimental_get_compile_stats()
    assert [r.event for r in records] == ["trace", "compile", "native step"]
    step = records[-1]
    assert step.signature == "x: f32[5,8]" and step.phases.keys() == {"codegen"}
    assert step.reason.startswith("new argument shapes (x: f32[5,8]); steps exist for "
                                  "(x: f32[2,8])")
    assert "the trace (x: f32[?,8]) is specialized to each new shape" in step.reason
    lines = [r.getMessage() for r in caplog.records if r.name == "tensorweave"
             and "native step" in r.getMessage()]
    assert len(lines) == 1  # the first shape is part of the first compile, not a rebuild
    assert lines[0].startswith("compiled a native step of predict(x: f32[5,8]) for the cpu "
                               "target in ")
    assert "code generation" in lines[0] and "steps exist for (x: f32[2,8])" in lines[0]


def test_long_compiles_log_one_line_with_each_phase(caplog, monkeypatch):
    f = tw.compile(lambda x: tw.exp(x) + 1.0, target="cpu", name="slowish")
    monkeypatch.setenv("TW_LONG_COMPILE_SECONDS", "1000")  # nothing is that slow
    with caplog.at_level(logging.INFO, logger="tensorweave"):
        f(np.ones(3))
    assert not [r for r in caplog.records if r.getMessage().startswith("compiled")]
    caplog.clear()
    monkeypatch.setenv("TW_LONG_COMPILE_SECONDS", "0")  # every compile is "long"
    with caplog.at_level(logging.INFO, logger="tensorweave"):
        f(np.ones(4))
        f(np.ones(4))
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("compiled")]
    assert len(lines) == 1, lines
    assert lines[0].startswith("compiled slowish(x: f64[4]) for the cpu target in ")
    for phase in ("trace", "pipeline", "code generation"):
        assert f"{phase} 0." in lines[0] or f"{phase} 1" in lines[0], lines[0]
    assert "new shape of x (f64[4], was f64[3])" in lines[0]


def test_jit_compile_stats_announces_every_trace_and_compile(caplog):
    f = tw.compile(lambda x: x * 2, jit_compile_stats=True, name="chatty")
    with caplog.at_level(logging.INFO, logger="tensorweave"):
        f(np.ones(2))
    lines = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("traced chatty(x: f64[2]) for the reference target") for m in lines)
    assert any(m.startswith("compiled chatty(x: f64[2]) for the reference target") for m in lines)


def test_reduce_retracing_says_it_traced_with_unknown_dims():
    f = tw.compile(lambda x: x + 1, reduce_retracing=True)
    f(np.ones(2))
    f(np.ones(3))
    traces = [r for r in f.experimental_get_compile_stats() if r.event == "trace"]
    assert traces[-1].signature == "x: f64[?]"
    assert traces[-1].reason == ("new shape of x (f64[3], was f64[2]); traced with unknown "
                                 "dims for what varied (reduce_retracing)")


def test_the_log_is_bounded():
    assert cl._records.maxlen == cl.MAX_RECORDS


def test_kernels_from_the_disk_cache_are_reported(tmp_path):
    program = textwrap.dedent("""
        import numpy as np
        import tensorweave as tw
        f = tw.compile(lambda x: tw.tanh(x) * 3.0, target="cpu", name="cached")
        f(np.ones(5, np.float32))
        print(tw.debugging.compile_log()[-1].cache)
    """)
    env = {**os.environ, "TW_CACHE_DIR": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                           env=env, check=True).stdout.strip() for _ in range(2)]
    assert "compiled by LLVM" in runs[0] and "disk cache" not in runs[0]
    assert "from the disk cache" in runs[1] and "compiled by LLVM" not in runs[1]


def test_steps_a_v1_session_compiles_are_recorded_quietly(caplog):
    tf = tw.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        y = x * 2.0
    with caplog.at_level(logging.INFO, logger="tensorweave"):
        with tf.Session(graph=graph, compile_target="cpu") as sess:
            np.testing.assert_array_equal(sess.run(y, {x: np.ones((2, 3), np.float32)}),
                                          np.full((2, 3), 2, np.float32))
            sess.run(y, {x: np.ones((4, 3), np.float32)})
    steps = [r for r in tw.debugging.compile_log() if r.event == "native step"]
    assert [(r.reason.split(";")[0], r.signature.split(": ")[1]) for r in steps] == [
        ("first run", "f32[2,3]"), ("new argument shapes (" + steps[1].signature + ")",
                                    "f32[4,3]")]
    # the first run is part of running the session; the rebuild for a new shape is logged
    logged = [r.getMessage() for r in caplog.records if "native step" in r.getMessage()]
    assert len(logged) == 1 and "f32[4,3]" in logged[0] and "steps exist for" in logged[0]
