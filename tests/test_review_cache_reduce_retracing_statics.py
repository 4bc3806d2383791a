"""Review: ``reduce_retracing`` must match static arguments as the trace cache does.

The trace cache is a dict: a static argument's key is found by its hash, then ``==``.
`Function._generalized` (reduce_retracing's search for a trace with unknown dims) compared
the static keys with ``==`` alone. For a hashable object whose ``==`` reaches tensors (a
frozen dataclass holding a `tw.Variable`, hashed by the variable's identity but compared
elementwise), two *different* models compared equal whenever their variables held equal
values: the second model's call ran the first model's trace, so a training step updated
the wrong model's variables; with vector variables the comparison raised numpy's
"truth value of an array is ambiguous" from inside the call.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tensorweave as tw

pytestmark = pytest.mark.filterwarnings("ignore::tensorweave.errors.RetracingWarning")


@dataclasses.dataclass(frozen=True)
class Model:  # hashable (frozen): hash((w,)) is the variable's identity, == is elementwise
    w: tw.Variable


@pytest.mark.parametrize("reduce_retracing", [False, True])
def test_a_training_step_updates_the_model_it_is_given(reduce_retracing: bool) -> None:
    @tw.compile(reduce_retracing=reduce_retracing)
    def train_step(m, x):
        m.w.assign_add(tw.reduce_sum(x))
        return m.w.read_value()

    a = Model(tw.Variable(np.float32(0.0)))
    b = Model(tw.Variable(np.float32(0.0)))
    x = np.ones(3, np.float32)
    assert float(train_step(a, x)) == 3.0
    a.w.assign(np.float32(0.0))  # equal values again: the two models compare equal
    assert float(train_step(b, x)) == 3.0
    assert float(a.w.numpy()) == 0.0  # (was 3.0: b's step ran a's trace)
    assert float(b.w.numpy()) == 3.0


@pytest.mark.parametrize("reduce_retracing", [False, True])
def test_vector_variables_in_a_static_argument_do_not_break_the_lookup(
        reduce_retracing: bool) -> None:
    @tw.compile(reduce_retracing=reduce_retracing)
    def scale(m, x):
        return x * m.w

    a = Model(tw.Variable(np.array([1, 2, 3], np.float32)))
    b = Model(tw.Variable(np.array([4, 5, 6], np.float32)))
    x = np.ones(3, np.float32)
    np.testing.assert_array_equal(scale(a, x), [1, 2, 3])
    np.testing.assert_array_equal(scale(b, x), [4, 5, 6])  # (raised ValueError)
    np.testing.assert_array_equal(scale(a, x * 2), [2, 4, 6])


def test_reduce_retracing_still_shares_a_trace_between_equal_statics() -> None:
    # equal hashable statics (the same config twice, new objects) still find the
    # relaxed trace: one trace for the first shape, one relaxed, no more
    @dataclasses.dataclass(frozen=True)
    class Config:
        scale: float

    @tw.compile(reduce_retracing=True)
    def f(x, cfg):
        return x * cfg.scale

    for n in (2, 3, 4, 5):
        np.testing.assert_array_equal(f(np.ones(n, np.float32), Config(2.0)), np.full(n, 2.0))
    assert f.experimental_get_tracing_count() == 2
