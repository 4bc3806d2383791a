"""Review: a variable made from a Fortran-ordered or strided array still runs natively.

`VariableState.assign` stored the first value with ``np.array(value, copy=True)``, which
keeps a Fortran-ordered array Fortran-ordered (``tw.Variable(w.T)``, weights from a
column-major source). The cpu target's native steps (and the native dispatcher) take only
C-contiguous variable buffers, so every call of every step that read such a variable
fell back to the dataflow executor, silently, for the variable's whole life (in-place
updates keep the layout). The buffer is now C-ordered.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw


@pytest.mark.parametrize("layout", ["fortran", "strided", "negative", "transposed"])
def test_a_variable_from_any_layout_runs_natively(layout: str) -> None:
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    initial = {"fortran": np.asfortranarray(base), "strided": base[:, ::2],
               "negative": base[::-1], "transposed": base.T}[layout]
    v = tw.Variable(initial)
    assert v._state.value.flags.c_contiguous
    np.testing.assert_array_equal(v.numpy(), initial)

    @tw.compile(target="cpu")
    def step(x):
        v.assign_add(x)
        return tw.reduce_sum(v, axis=0)

    x = np.ones(initial.shape, np.float32)
    for k in range(1, 4):
        np.testing.assert_array_equal(step(x), (initial + k).sum(axis=0))
    assert step._dispatcher is not None and sum(step._dispatcher.hit_counts().values()) >= 1


def test_a_value_of_another_shape_is_stored_c_ordered_too() -> None:
    from tensorweave.runtime.resources import VariableState
    state = VariableState("w", tw.float32, (None, None))
    state.assign(np.asfortranarray(np.ones((2, 3), np.float32)))
    state.assign(np.asfortranarray(np.arange(6, dtype=np.float32).reshape(3, 2)))
    assert state.value.flags.c_contiguous
    np.testing.assert_array_equal(state.read(), np.arange(6).reshape(3, 2))
