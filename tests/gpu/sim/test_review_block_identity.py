"""A growing stack's old block is found by identity, not by value.

`allocator.Block` was a dataclass with value equality, and the simulator's device arrays
compare element-wise with a truthy result (their ``__len__``), so any two blocks of one
size were "equal": `GpuStep._grow`'s ``self._blocks.index(old)`` could find another block,
drop that one from the step's list and keep the freed one in it. The freed block then went
back to the pool a second time when the step died, and two later owners shared it: steps
run after a stack had grown computed with each other's data (seen as failures of
different sim tests from run to run: a gather index 2**33, a wrong Adam step)."""

from __future__ import annotations

import numpy as np
from numba import cuda

import tensorweave as tw
from tensorweave.targets.gpu import loops
from tensorweave.targets.gpu.allocator import CachingAllocator
from tests.gpu.sim.test_review_cf2_bounded_stacks import _inputs, _step, rnn_weight_grad


def test_blocks_of_one_size_are_distinct():
    alloc = CachingAllocator(cuda)
    a, b = alloc.allocate(1024), alloc.allocate(1024)
    assert a != b and [a, b].index(b) == 1


def test_a_grown_step_owns_each_block_once_and_none_from_the_pool(monkeypatch):
    monkeypatch.setattr(loops, "BOUNDED_FIRST_BYTES", 1)
    monkeypatch.setattr(loops, "FIRST_ROWS", 2)
    x, w = _inputs()
    gpu = tw.compile(lambda x, w, n: rnn_weight_grad(x, w, n, 5), target="gpu")
    gpu(x, w, np.int32(5))  # 2 -> 4 -> 5 entries: every history stack grows twice
    step = _step(gpu, x, w, np.int32(5))
    owned = [id(b) for b in step._blocks]
    assert len(owned) == len(set(owned))
    pooled = {id(b) for blocks in step.allocator._pool.values() for b in blocks}
    assert not pooled & set(owned)
    assert {id(step._tmp[k]) for k in step.plan.stack_limits} <= set(owned)
