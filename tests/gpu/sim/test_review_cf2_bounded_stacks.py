"""A loop gradient on the gpu target under a generous `maximum_iterations` (a safety bound
on a loop whose trip count is smaller, or depends on the data): the history stacks
reserved an entry for every iteration the bound allows, so ``maximum_iterations=10**7``
on a 5-trip RNN reserved 10**7 entries per stack, and 2**31 - 1 could not be allocated,
where the reference and cpu targets run it (the cpu target caps a bounded stack's first
allocation at `cpu.stacks.BOUNDED_FIRST_BYTES` and doubles). The gpu target now does the
same: a stack whose bound needs more than that many bytes starts there and grows, up to
its bound, as the run-time-sized stacks do. Under the simulator, tiny shapes."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.targets.cpu.stacks import BOUNDED_FIRST_BYTES
from tensorweave.targets.gpu import loops
from tensorweave.targets.gpu.allocator import round_size
from tensorweave.targets.gpu.step import HostCall, walk_actions


def rnn_weight_grad(x, w, n, bound):
    """The gradient of an RNN's last state after min(n, bound) steps (n: a tensor, so
    the trip count is known only at run time, or an int)."""
    with tw.GradientTape() as tape:
        tape.watch(w)

        def body(i, h):
            return i + 1, tw.tanh(tw.matmul(h, w) + x)
        _, h = tw.while_loop(lambda i, h: i < n, body, (0, x), maximum_iterations=bound)
        loss = tw.reduce_sum(h * h)
    return h, tape.gradient(loss, w)


def _inputs():
    rs = np.random.RandomState(0)
    return rs.randn(2, 3) * 0.5, rs.randn(3, 3) * 0.5


def _step(fn, *arrays):
    exe = fn.get_concrete_function(*arrays).executable
    assert exe.native_reason is None, exe.native_reason
    step = next(iter(exe._steps.values()))
    assert not [a for a in walk_actions(step.plan.actions) if isinstance(a, HostCall)]
    return step


def _check(gpu, ref, *args):
    for got, want in zip(gpu(*args), ref(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("bound", [10**7, 2**31 - 1])
@pytest.mark.parametrize("run_time_count", [True, False])
def test_a_large_bound_reserves_at_most_the_first_bytes(bound, run_time_count):
    x, w = _inputs()
    if run_time_count:
        f = lambda x, w, n: rnn_weight_grad(x, w, n, bound)  # noqa: E731
        args = (x, w, np.int32(5))
    else:
        f = lambda x, w: rnn_weight_grad(x, w, 3, bound)  # noqa: E731
        args = (x, w)
    gpu, ref = tw.compile(f, target="gpu"), tw.compile(f, target="reference")
    _check(gpu, ref, *args)
    step = _step(gpu, *args)
    assert step.plan.stack_buffers
    for key in step.plan.stack_buffers:
        assert step._tmp[key].nbytes <= round_size(BOUNDED_FIRST_BYTES)
    if run_time_count:
        _check(gpu, ref, x, w, np.int32(0))
        _check(gpu, ref, x, w, np.int32(7))


def test_a_bounded_stack_grows_up_to_its_bound(monkeypatch):
    """With the first allocation capped (at FIRST_ROWS entries, the least a stack starts
    with, here 2: few simulated iterations), a bound of 5 and the trip count fed: the
    stacks start with 2 entries, double to 4, and stop at 5 (the bound); later calls
    keep them."""
    x, w = _inputs()
    f = lambda x, w, n: rnn_weight_grad(x, w, n, 5)  # noqa: E731
    monkeypatch.setattr(loops, "BOUNDED_FIRST_BYTES", 1)
    monkeypatch.setattr(loops, "FIRST_ROWS", 2)
    gpu, ref = tw.compile(f, target="gpu"), tw.compile(f, target="reference")
    for n, rows in ((1, 2), (3, 4), (5, 5), (9, 5), (2, 5)):
        _check(gpu, ref, x, w, np.int32(n))
        step = _step(gpu, x, w, np.int32(n))
        assert set(step.trips.values()) == {min(n, 5)}
        assert step.plan.stack_limits and set(step.plan.stack_limits.values()) == {5}
        assert all(step._rows.get(k, 2) == rows for k in step.plan.stack_limits), \
            {k: step._rows.get(k) for k in step.plan.stack_limits}
