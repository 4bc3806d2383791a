"""Launch configurations within CUDA's limits: a grid has at most 2**31 - 1 blocks along
x and 65535 along y and z, a block at most 1024 threads. The simulator does not check
them; a GPU refuses the launch. MatMul put its row tiles on the grid's y dimension, so
a product of more than 65535 * 16 rows (a big batch through a small layer) could not
launch; its row tiles are on x now, and more column tiles than y takes is a host call
with the reason. Plans only: no GPU needed."""

from __future__ import annotations

import numpy as np

import tensorweave as tw
from tensorweave.targets.gpu.source import Kernel
from tests.gpu.plans import plan_of

MAX_GRID = (2 ** 31 - 1, 65535, 65535)


def _within_limits(kernel: Kernel) -> bool:
    threads = int(np.prod(kernel.block))
    return threads <= 1024 and all(1 <= g <= lim for g, lim in zip(kernel.grid, MAX_GRID))


def test_a_product_of_many_rows_launches_within_the_grid_limits():
    rows = 65535 * 16 + 1
    x, w = np.zeros((rows, 2), np.float32), np.ones((2, 3), np.float32)
    for fn in (tw.matmul, lambda a, b: tw.nn.relu(tw.matmul(a, b) + 1.0)):  # and epilogue
        plan = plan_of(fn, [x, w])
        assert plan.kernels and not plan.fallbacks
        for k in plan.kernels:
            assert _within_limits(k), (k.name, k.grid, k.block)


def test_a_product_of_too_many_columns_is_a_host_call_with_the_reason():
    cols = 65535 * 16 + 1
    plan = plan_of(tw.matmul, [np.ones((2, 2), np.float32), np.zeros((2, cols), np.float32)])
    assert all(_within_limits(k) for k in plan.kernels)
    assert any("column tiles" in why for why in plan.fallbacks.values()), plan.fallbacks
