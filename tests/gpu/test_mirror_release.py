"""A variable's device mirror, and its device block, go when the variable goes: each
Mirror used to hold its variable strongly while the registry (a WeakKeyDictionary keyed
by that variable) held the Mirror, so the key could never die and every variable a GPU
step had touched kept its device memory for the life of the process."""

from __future__ import annotations

import gc

import numpy as np

from tensorweave.compiler.dtypes import as_dtype
from tensorweave.runtime.resources import VariableState
from tensorweave.targets.gpu import variables
from tensorweave.targets.gpu.allocator import CachingAllocator


class _HostCuda:
    """Stands in for numba.cuda: `device_array` gives host memory (no GPU needed)."""

    @staticmethod
    def device_array(n: int, dtype: object) -> np.ndarray:
        return np.empty(n, dtype)


def test_a_collected_variable_frees_its_mirror_and_block():
    alloc = CachingAllocator(_HostCuda())
    before = variables.mirror_count()
    state = VariableState("v", as_dtype("float32"), (4, 8))
    m = variables.mirror(state, alloc)
    assert variables.mirror(state, alloc) is m
    assert m.state is state
    assert variables.mirror_count() == before + 1
    in_use = alloc.stats()["in_use"]
    assert in_use >= 4 * 8 * 4
    del m, state
    gc.collect()
    assert variables.mirror_count() == before
    stats = alloc.stats()
    assert stats["in_use"] == 0 and stats["cached"] == in_use


def test_a_live_variable_keeps_its_mirror():
    alloc = CachingAllocator(_HostCuda())
    state = VariableState("w", as_dtype("float32"), (3,))
    m = variables.mirror(state, alloc)
    del m
    gc.collect()
    assert variables.mirror(state, alloc).state is state
    assert alloc.stats()["in_use"] > 0
