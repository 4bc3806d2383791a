"""No kernel may read what a temporary held before its step wrote it: on a GPU a block of
the caching allocator, or a temporary sharing another's block, holds old values (the
previous call's, another value's), where the simulator's fresh arrays often hold zeros.
A kernel that accumulates into its output (a segment sum's atomic adds, a loop's
in-place row or product sums) must start from a zeroed or initialized buffer.

Here every temporary of a bound step is filled with 0xFF bytes (NaN floats, -1 integers)
before each call, and the cases whose kernels accumulate run twice against the
reference. (A segment sum whose zeroing kernel is dropped then gives NaN.)"""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.targets.gpu import runner
from tests.gpu.cases import CASES
from tests.gpu.sim.test_cases import assert_close

ACCUMULATING = ["segment_sum_float32", "segment_sum_int64", "gather_grad_f32",
                "conv2d_grads_f32", "pool_grads_f32", "pad_reflect_grad_f32",
                "scan_grad_f64", "newton_sqrt_f64", "reduce_sum_long_first_float32",
                "softmax_xent_float32", "l2_loss_long_f32", "bias_add_grad_long_f64"]


@pytest.fixture
def poisoned_temporaries(monkeypatch):
    run = runner.GpuStep._run

    def poisoned(self, arrays, keep_on_device=False):
        for block in {id(b): b for b in self._tmp if b is not None}.values():
            block.data.copy_to_device(np.full(block.nbytes, 0xFF, np.uint8))
        return run(self, arrays, keep_on_device)
    monkeypatch.setattr(runner.GpuStep, "_run", poisoned)


@pytest.mark.parametrize("case", ACCUMULATING)
def test_results_do_not_depend_on_old_buffer_contents(poisoned_temporaries, case):
    fn, arrays = CASES[case]
    expected = tw.compile(fn, target="reference")(*arrays)
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    gpu = tw.compile(fn, target="gpu")
    for _ in range(2):  # the second call on the blocks the first one used
        actual = gpu(*arrays)
        actual = list(actual) if isinstance(actual, (tuple, list)) else [actual]
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_close(a, e)
