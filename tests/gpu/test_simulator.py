"""Runs tests/gpu/sim in a process of its own with numba's CUDA simulator: numba picks
the simulator when it is first imported, so this process (and the rest of the suite)
keeps the real numba.cuda."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _pytest_in_the_simulator(*args: str) -> None:
    pytest.importorskip("numba.cuda")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    # RuntimeWarnings: NumPy scalars in simulated kernels warn where a GPU silently gives
    # inf/NaN (as the reference kernels do under np.errstate)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "-W", "ignore::RuntimeWarning", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    tail = (proc.stdout + proc.stderr)[-6000:]
    assert proc.returncode == 0, tail
    assert " passed" in proc.stdout and "failed" not in proc.stdout, tail


def test_gpu_target_under_the_simulator():
    _pytest_in_the_simulator("tests/gpu/sim")


def test_op_suite_on_the_gpu_target_under_the_simulator():
    _pytest_in_the_simulator("tests/ops", "-p", "tests.gpu.op_suite_plugin")
