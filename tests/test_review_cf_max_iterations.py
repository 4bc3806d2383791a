"""`tw.while_loop(maximum_iterations=...)` with a bound past the int32 range: it must bound
nothing (the loop's own counters are int32, so no loop gets that far), never wrap.

An int64 tensor bound of 2**32 + 2 was cast to int32 (2) and silently stopped a loop
after 2 iterations instead of its 10; a static bound of 2**31 or more made the dataflow
lowering fail with an OverflowError, and the cpu target's loop gradient tried to reserve
history for that many iterations (out of memory)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tests.helpers import assert_same

F32 = np.float32
TARGETS = [("reference", False), ("cpu", False), ("reference", True), ("cpu", True)]
IDS = ["reference", "cpu", "reference-lowered", "cpu-lowered"]


def doubling(x, limit):
    """Doubles x while the counter is below 10, at most `limit` times."""
    return tw.while_loop(lambda i, a: i < 10, lambda i, a: (i + 1, a * 2.0), (0, x),
                         maximum_iterations=limit)


@pytest.mark.parametrize("target,lowered", TARGETS, ids=IDS)
@pytest.mark.parametrize("limit", [2**31 - 1, 2**31, 2**32 + 2, 2**40])
def test_a_huge_tensor_bound_does_not_wrap(target, lowered, limit):
    f = tw.compile(doubling, target=target, lower_control_flow=lowered)
    i, a = f(F32(1), np.int64(limit))
    assert_same(i, np.int32(10))
    assert_same(a, F32(1024))


@pytest.mark.parametrize("target,lowered", TARGETS, ids=IDS)
def test_a_small_int64_tensor_bound_still_bounds(target, lowered):
    f = tw.compile(doubling, target=target, lower_control_flow=lowered)
    i, a = f(F32(1), np.int64(3))
    assert_same(i, np.int32(3))
    assert_same(a, F32(8))


@pytest.mark.parametrize("target,lowered", TARGETS, ids=IDS)
@pytest.mark.parametrize("limit", [2**31, 2**32 + 2, np.int64(2**40)])
def test_a_huge_static_bound_bounds_nothing(target, lowered, limit):
    f = tw.compile(lambda x: doubling(x, limit), target=target, lower_control_flow=lowered)
    i, a = f(F32(1))
    assert_same(i, np.int32(10))
    assert_same(a, F32(1024))


def test_eager_agrees():
    i, a = doubling(tw.constant(F32(1)), tw.constant(np.int64(2**32 + 2)))
    assert_same(i.numpy(), np.int32(10))
    assert_same(a.numpy(), F32(1024))


@pytest.mark.parametrize("target,lowered", TARGETS, ids=IDS)
def test_gradient_of_a_loop_with_a_huge_static_bound(target, lowered):
    # a data-dependent trip count under a generous safety bound (3 iterations run)
    def f(x):
        with tw.GradientTape() as tape:
            tape.watch(x)
            _, y = tw.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * a), (0, x),
                                 maximum_iterations=2**32 + 1)
        return y, tape.gradient(y, x)

    y, g = tw.compile(f, target=target, lower_control_flow=lowered)(np.float64(1.1))
    assert_same(y, np.float64(1.1) ** 8)
    assert_same(g, 8 * np.float64(1.1) ** 7)
