"""Loop variables that live in their stack's entries (`loops._stack_resident`): a loop
of known trip count that pushes a loop argument as it is (the history its gradient pops)
reads it from the entry its push would copy it to, and the kernel computing its next
value writes the next entry, so the push copies nothing. Checked against the reference
in float64 (1e-12): the gradient (which pops those entries), the loop's final values
(the spare row past the stack's bound), and a loop whose stack has room left (then the
variable stays double-buffered: a later push could overwrite the final value)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.targets.gpu.step import Copy, Loop, walk_actions
from tests.gpu.plans import plan_of

F64 = {"rtol": 1e-12, "atol": 1e-12}


def _recurrence(bound: int):
    def f(x, w):
        i, h = tw.while_loop(lambda i, h: i < 3,
                             lambda i, h: [i + 1, tw.tanh(tw.matmul(h, w)) + 0.5 * h],
                             [tw.constant(0), x], maximum_iterations=bound)
        loss = tw.reduce_sum(h * h)
        gx, gw = tw.gradients(loss, [x, w])
        return h, i, gx, gw
    return f


def _pushes_copied(fn, arrays) -> int:
    """Device copies in the body of the first (forward) loop of `fn`'s plan."""
    loops = [a for a in walk_actions(plan_of(fn, arrays).actions) if isinstance(a, Loop)]
    assert len(loops) == 2 and loops[0].trips == 3, [lp.trips for lp in loops]
    return sum(isinstance(a, Copy) for a in loops[0].body)


@pytest.mark.parametrize("bound, copies", [(3, 0), (5, 1)])
def test_stacked_loop_variables_match_the_reference(bound, copies):
    rng = np.random.default_rng(bound)
    arrays = [rng.normal(size=(2, 3)), rng.normal(size=(3, 3)) * 0.5]
    fn = _recurrence(bound)
    expected = tw.compile(fn, target="reference")(*arrays)
    gpu = tw.compile(fn, target="gpu")
    actual = gpu(*arrays)
    exe = gpu.get_concrete_function(*arrays).executable
    assert exe.native_reason is None and not exe.fallbacks
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), **F64)
    # bound 3: h (the pushed argument) lives in the stack, no copy; bound 5: room is left
    # in the stack past the loop, so h is double-buffered and its push copied
    assert _pushes_copied(fn, arrays) == copies
    again = gpu(*arrays)  # a second call reuses the bound step
    for a, e in zip(again, expected, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), **F64)
