"""tools/gpu_device_check.sh, the prepared run for a lent GPU, checked without one: its
plan (the steps of the device run and of the simulator dry run) fits the device tool's
time limit, names files that exist, flags the scripts accept, and covers the whole op
suite. The dry run itself (`--simulate`) takes minutes under the simulator, so only the
planning runs here."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPT = ROOT / "tools" / "gpu_device_check.sh"
DEVICE_CALL_LIMIT_S = 600  # the device tool's limit for one command


def _module():
    spec = importlib.util.spec_from_file_location("gpu_device_check",
                                                  ROOT / "tools" / "gpu_device_check.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def _plan(*flags: str) -> dict:
    proc = subprocess.run(["bash", str(SCRIPT), "--plan", *flags], capture_output=True,
                          text=True, timeout=60, cwd="/")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_wrapper_is_executable_and_plans_from_any_directory():
    assert os.access(SCRIPT, os.X_OK)
    plan = _plan()
    names = [s["name"] for s in plan["steps"]]
    # the order the run promises: tests, interop, benchmarks, examples
    order = ["environment", "gpu-tests", "op-suite-0", "torch-interop", "benchmark",
             "mnist-mlp", "mnist-cnn", "benchmark-torch-compile"]
    assert [n for n in names if n in order] == order
    # only the last step is optional: it gets the time the others leave
    assert [s["optional"] for s in plan["steps"]] == [False] * (len(names) - 1) + [True]


def test_the_device_plan_fits_one_device_call():
    plan = _plan()
    assert plan["worst_case_s"] <= plan["budget_s"] < DEVICE_CALL_LIMIT_S - 60
    assert all(s["timeout"] > 0 for s in plan["steps"])
    sim = _plan("--simulate")
    assert sim["worst_case_s"] <= sim["budget_s"]


@pytest.mark.parametrize("flags", [(), ("--simulate",)], ids=["device", "simulate"])
def test_every_step_names_files_that_exist_and_flags_its_script_accepts(flags):
    for step in _plan(*flags)["steps"]:
        argv = step["argv"]
        scripts = [a for a in argv if a.endswith(".py") and not a.startswith("-")]
        for a in scripts:
            path = Path(a) if os.path.isabs(a) else ROOT / a
            assert path.is_file(), (step["name"], a)
        for a in argv:
            if a.startswith("--ignore="):
                assert (ROOT / a.split("=", 1)[1]).is_file(), (step["name"], a)
            if a.startswith("tests/"):
                assert (ROOT / a).exists(), (step["name"], a)
        for i, a in enumerate(argv):  # pytest plugins
            if a == "-p" and not argv[i + 1].startswith("no:"):
                assert importlib.util.find_spec(argv[i + 1]) is not None, argv[i + 1]
        if "pytest" not in argv and scripts:  # a script of ours: its flags must exist
            source = (ROOT / scripts[-1]).read_text()  # ROOT / an absolute path: that path
            for flag in (a for a in argv[argv.index(scripts[-1]) + 1:] if a.startswith("--")):
                assert re.search(rf'add_argument\(\s*"{flag}"', source), (step["name"], flag)


def test_the_device_run_covers_every_op_test_file_once():
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "ops").glob("test_*.py"))
    shards = [s for s in _plan()["steps"] if s["name"].startswith("op-suite-")]
    covered = sorted(a for s in shards for a in s["argv"] if a.startswith("tests/ops/"))
    assert covered == files
    assert all("tests.gpu.op_suite_plugin" in s["argv"] for s in shards)
    # the shards run at once, beside the gpu tests: one group
    assert {s["group"] for s in shards} == {"tests"}


def test_device_steps_leave_the_simulator_off_and_the_dry_run_turns_it_on():
    for step in _plan()["steps"]:
        assert "NUMBA_ENABLE_CUDASIM" not in step["env"], step["name"]
    for step in _plan("--simulate")["steps"]:
        assert step["env"].get("NUMBA_ENABLE_CUDASIM") == "1", step["name"]
    examples = [s for s in _plan()["steps"] if s["name"].startswith("mnist-")]
    assert examples and all(s["env"]["TW_DEFAULT_TARGET"] == "gpu" for s in examples)


def test_a_step_past_its_timeout_is_recorded_and_the_run_goes_on(tmp_path):
    mod = _module()
    steps = [mod.Step("slow", [sys.executable, "-c", "import time; time.sleep(30)"], 1),
             mod.Step("fails", [sys.executable, "-c", "raise SystemExit(3)"], 10),
             mod.Step("ok", [sys.executable, "-c", "print('fine')"], 10)]
    run = mod.Run(tmp_path, budget=60)
    run.run(steps)
    assert [(r.name, r.status, r.rc) for r in run.results] == [
        ("slow", "timeout", -9), ("fails", "failed", 3), ("ok", "passed", 0)]
    data = json.loads((tmp_path / "results.json").read_text())
    assert [d["status"] for d in data] == ["timeout", "failed", "passed"]
    assert "fine" in (tmp_path / "logs" / "ok.log").read_text()
    assert "| ok | passed |" in (tmp_path / "results.md").read_text()


def test_steps_past_the_budget_are_skipped_with_the_reason(tmp_path):
    mod = _module()
    run = mod.Run(tmp_path, budget=0)
    run.run([mod.Step("late", [sys.executable, "-c", "pass"], 10)])
    assert [(r.name, r.status) for r in run.results] == [("late", "skipped")]
    assert "budget" in run.results[0].tail
    # an optional step needs a minute left; an ordinary one runs on what there is
    run = mod.Run(tmp_path, budget=mod.OPTIONAL_MIN_S - 10)
    run.run([mod.Step("extra", [sys.executable, "-c", "pass"], 100, optional=True),
             mod.Step("needed", [sys.executable, "-c", "pass"], 100)])
    assert [(r.name, r.status) for r in run.results] == [("extra", "skipped"),
                                                          ("needed", "passed")]


def test_the_dry_runs_tiny_data_set_reads_as_mnist(tmp_path):
    from tensorweave.datasets import mnist
    _module().write_tiny_mnist(tmp_path, train=5, test=3)
    data = mnist.read_data_sets(str(tmp_path), one_hot=False)
    assert data.source.startswith("MNIST IDX files")
    assert data.train.images.shape == (5, 784) and data.test.images.shape == (3, 784)
    assert data.train.labels.shape == (5,) and set(data.test.labels) <= set(range(10))
    # class ids as int64, as the bundled digits give them (the examples' signatures say so)
    assert data.train.labels.dtype == data.test.labels.dtype == np.int64
    sim_examples = [s for s in _plan("--simulate")["steps"] if s["name"].startswith("mnist-")]
    assert all("--data" in s["argv"] for s in sim_examples)


def test_missing_modules_without_a_wheelhouse_are_reported_not_fatal(tmp_path, monkeypatch):
    mod = _module()
    (tmp_path / "logs").mkdir()
    monkeypatch.setattr(mod, "OPTIONAL_WHEELS", {"json": "nothing", "no_such_module_tw": "x"})
    monkeypatch.setattr(mod, "WHEELHOUSE", "no/such/wheelhouse")
    assert mod.install_missing(tmp_path) == ""
    log = (tmp_path / "logs" / "wheels.log").read_text()
    assert "missing ['x']" in log and "--prepare" in log
    monkeypatch.setattr(mod, "OPTIONAL_WHEELS", {"json": "nothing"})
    assert mod.install_missing(tmp_path) == ""
    assert "nothing installed" in (tmp_path / "logs" / "wheels.log").read_text()


def test_logs_come_back_as_one_archive_when_the_work_directory_is_elsewhere(tmp_path):
    """The device tool returns at most 8 files from $OUT: the steps' logs and junit
    files stay in a work directory and travel as `logs.tar.gz`, rewritten per step."""
    import tarfile
    mod = _module()
    out, work = tmp_path / "out", tmp_path / "work"
    run = mod.Run(out, budget=60, work=work)
    run.run([mod.Step("ok", [sys.executable, "-c", "print('fine')"], 10),
             mod.Step("fails", [sys.executable, "-c", "raise SystemExit(2)"], 10)])
    assert sorted(p.name for p in out.iterdir()) == ["logs.tar.gz", "results.json",
                                                     "results.md"]
    with tarfile.open(out / "logs.tar.gz") as tar:
        names = tar.getnames()
        assert "logs/ok.log" in names and "logs/fails.log" in names
        assert "fine" in tar.extractfile("logs/ok.log").read().decode()


def test_the_fallback_stack_is_unpacked_only_when_the_images_smoke_test_fails(
        tmp_path, monkeypatch):
    import tarfile
    mod = _module()
    (tmp_path / "logs").mkdir()
    tried = []

    def smoke(extra_path):
        tried.append(extra_path)
        return (extra_path != "", f"smoke with {extra_path or 'the image'}")
    monkeypatch.setattr(mod, "_smoke", smoke)
    monkeypatch.setattr(mod.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    monkeypatch.setattr(mod, "FALLBACK_STACK", str(tmp_path / "none.tar.xz"))
    assert mod.choose_stack(tmp_path) == ("", False)
    assert "no " in (tmp_path / "logs" / "stack.log").read_text()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("VERSION = 1\n")
    with tarfile.open(tmp_path / "stack.tar.xz", "w:xz") as tar:
        tar.add(tmp_path / "pkg", arcname="pkg")
    monkeypatch.setattr(mod, "FALLBACK_STACK", str(tmp_path / "stack.tar.xz"))
    tried.clear()
    chosen, ok = mod.choose_stack(tmp_path)
    assert ok and tried == ["", chosen]
    assert (Path(chosen) / "pkg" / "__init__.py").read_text() == "VERSION = 1\n"
    log = (tmp_path / "logs" / "stack.log").read_text()
    assert "the image's packages: FAILED" in log and "fallback" in log and "passed" in log
    monkeypatch.setattr(mod, "_smoke", lambda extra_path: (True, "fine"))
    assert mod.choose_stack(tmp_path) == ("", True)  # the image's own, nothing unpacked


def test_steps_and_timeouts_can_be_chosen_for_a_shorter_run():
    plan = _plan("--steps", "environment,op-suite,benchmark", "--timeout", "op-suite=90",
                 "--timeout", "benchmark=60")
    names = [s["name"] for s in plan["steps"]]
    assert names[0] == "environment" and names[-1] == "benchmark"
    assert [n for n in names[1:-1]] == [f"op-suite-{i}" for i in range(len(names) - 2)]
    assert {s["timeout"] for s in plan["steps"] if s["name"].startswith("op-suite")} == {90}
    proc = subprocess.run(["bash", str(SCRIPT), "--plan", "--steps", "environment,typo"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "no step 'typo'" in proc.stderr
