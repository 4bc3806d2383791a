"""NumPy 2.5 removed ``np.row_stack``, which numba-cuda's CUDA target registers an
overload for: on a GPU machine with NumPy 2.5.2 every kernel failed. The gpu target puts
the alias back before numba-cuda loads (tensorweave/targets/gpu/numba_compat.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("numba.cuda")

PROGRAM = """
import numpy as np
if hasattr(np, "row_stack"):
    del np.row_stack  # NumPy 2.5, on a NumPy that still has it
{setup}
from numba.cuda.np import arrayobj  # what numba-cuda's target context imports
print("loaded", np.row_stack is np.vstack)
"""


def _run(setup: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROGRAM.format(setup=setup)],
                          capture_output=True, text=True, timeout=120)


def test_numba_cuda_loads_on_a_numpy_without_row_stack_once_the_gpu_target_is_imported():
    proc = _run("import tensorweave.targets.gpu")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "loaded True" in proc.stdout


def test_without_the_alias_numba_cuda_fails_as_seen_on_the_gpu_machine():
    """The failure the alias prevents (if numba-cuda stops needing it, this test says so
    and the shim can go)."""
    proc = _run("")
    if proc.returncode == 0:
        pytest.skip("this numba-cuda no longer needs np.row_stack: numba_compat can go")
    assert "row_stack" in proc.stderr
