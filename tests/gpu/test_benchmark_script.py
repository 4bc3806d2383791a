"""benchmarks/gpu.py runs anywhere: without a GPU it says so in one line and exits 0,
and its --smoke mode runs its tensorweave workloads on tiny shapes under the simulator
(W2's MLP step, W4's gelu, and W5's LSTM LM step against the reference target)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import tensorweave as tw

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "gpu.py")


def _run(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, **env}, cwd=ROOT)


def test_without_a_gpu_it_prints_one_line_and_exits_0():
    if tw.config.list_physical_devices("GPU"):
        pytest.skip("this machine has a GPU: the script would measure it")
    proc = _run()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("no GPU: ") and proc.stdout.count("\n") == 1


def test_smoke_mode_runs_the_workloads_under_the_simulator():
    pytest.importorskip("numba.cuda")
    proc = _run("--smoke", NUMBA_ENABLE_CUDASIM="1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "W4 gelu matches" in proc.stdout and "nothing timed" in proc.stdout
    # the W5 row's model (benchmarks/lstm.py's, at tiny sizes) trains on the gpu target
    # and matches the reference target's losses (the smoke run asserts both)
    assert "W5 LSTM LM losses" in proc.stdout and "match the reference" in proc.stdout
