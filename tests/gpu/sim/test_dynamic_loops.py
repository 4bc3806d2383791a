"""While loops whose trip count is known only at run time, as device loops on the gpu
target (`targets/gpu/loops.py`, `runner.GpuStep._dynamic_loop`): each iteration runs the
cond's launches, downloads one flag and runs the body while it is true. Newton
iterations, fed bounds, maximum_iterations, zero trips, a failing kernel in the body, and
gradients of such loops (their history on a device stack that grows). Under the
simulator, tiny shapes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.errors import InvalidArgumentError
from tensorweave.frontend.building import apply_op1
from tensorweave.targets.gpu.listing import kernel_listing
from tensorweave.targets.gpu.step import HostCall, Loop, walk_actions


def _step(fn, *arrays):
    """The bound GPU step of compiled `fn` for `arrays` (after a call)."""
    exe = fn.get_concrete_function(*arrays).executable
    assert exe.native_reason is None, exe.native_reason
    return next(iter(exe._steps.values()))


def _device_loops(step) -> list[Loop]:
    """The plan's loops, after checking that nothing of it runs on the host."""
    plan = step.plan
    assert not plan.fallbacks, plan.fallbacks
    assert not [a for a in walk_actions(plan.actions) if isinstance(a, HostCall)]
    return [a for a in walk_actions(plan.actions) if isinstance(a, Loop)]


def _newton(a, tol):
    """sqrt(a) by Newton's method, until every |x*x - a| is at most `tol`."""
    def body(i, x):
        return [i + 1, 0.5 * (x + a / x)]
    return tw.while_loop(lambda i, x: tw.reduce_max(tw.abs(x * x - a)) > tol, body,
                         [tw.constant(0), tw.ones_like(a)])


@settings(settings.get_profile("gpu-sim"))
@given(a=st.lists(st.floats(0.01, 100.0), min_size=1, max_size=3),
       tol=st.sampled_from([1e-3, 1e-9]))
def test_a_newton_iteration_runs_as_a_device_loop_and_matches_the_reference(a, tol):
    """The trip count depends on computed values: float64 with exactly rounded ops
    (+, *, /, abs, max), so the iterates, and the count, are the reference's."""
    a = np.array(a)
    fn = lambda a: _newton(a, tol)  # noqa: E731
    gpu = tw.compile(fn, target="gpu")
    (i, x), (ri, rx) = gpu(a), tw.compile(fn, target="reference")(a)
    assert int(i) == int(ri)  # (0 for a == 1.0)
    np.testing.assert_allclose(x, rx, rtol=1e-12, atol=0)
    assert np.max(np.abs(x * x - a)) <= tol
    step = _step(gpu, a)
    (loop,) = _device_loops(step)
    assert loop.trips is None and loop.cond and loop.predicate is not None
    assert step.trips == {loop.node.name: int(ri)}


def _count(x, n):
    return tw.while_loop(lambda i, a: i < n, lambda i, a: [i + 1, a * 2.0 + 1.0],
                         [tw.constant(0), x])


def test_a_fed_bound_runs_its_body_that_many_times_including_none():
    """Odd and even counts (a double buffer's last value is in either entry) and zero
    (the cond is false at once: the outputs are the inputs), on one bound step."""
    x = np.array([1.0, -2.0, 0.5], np.float32)
    gpu, ref = tw.compile(_count, target="gpu"), tw.compile(_count, target="reference")
    for n in (3, 0, 4, 1, 0):
        (i, a), (ri, ra) = gpu(x, np.int32(n)), ref(x, np.int32(n))
        assert int(i) == int(ri) == n
        np.testing.assert_array_equal(a, ra)
        step = _step(gpu, x, np.int32(n))
        assert step.trips == {"while": n}
    (loop,) = _device_loops(step)
    assert loop.trips is None and len(loop.finals) == 2  # i and a alternate
    assert "runs its body on the device while its cond is true" in kernel_listing(step.plan)


def test_maximum_iterations_stops_a_device_loop_before_its_cond_does():
    def bounded(x, n):
        return tw.while_loop(lambda i, a: i < n, lambda i, a: [i + 1, a * 3.0],
                             [tw.constant(0), x], maximum_iterations=3)

    x = np.array([1.0, 2.0])
    gpu, ref = tw.compile(bounded, target="gpu"), tw.compile(bounded, target="reference")
    for n in (10, 2, 3, 0):
        (i, a), (ri, ra) = gpu(x, np.int32(n)), ref(x, np.int32(n))
        assert int(i) == int(ri) == min(n, 3)
        np.testing.assert_array_equal(a, ra)
    (loop,) = _device_loops(_step(gpu, x, np.int32(0)))
    assert loop.trips is None and loop.limit == 3


def test_a_fed_maximum_iterations_tensor_bounds_a_device_loop():
    """A tensor maximum_iterations becomes a counter the cond compares (the frontend's
    `_bounded`): the loop runs min(its cond, the fed limit) times."""
    def bounded(x, limit):
        return tw.while_loop(lambda a: tw.reduce_sum(a) < 100.0, lambda a: [a * 2.0],
                             [x], maximum_iterations=limit)[0]

    x = np.array([1.0, 2.0])  # the cond alone stops after 6 doublings (sum 192)
    gpu, ref = tw.compile(bounded, target="gpu"), tw.compile(bounded, target="reference")
    for limit in (2, 0, 9):
        got, want = gpu(x, np.int32(limit)), ref(x, np.int32(limit))
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, x * 2.0 ** min(limit, 6))
    assert len(_device_loops(_step(gpu, x, np.int32(0)))) == 1


def test_a_loop_variable_updated_in_place_and_a_swap_in_a_device_loop():
    """A bool loop variable as the cond's result (a predicate in a double buffer), a
    row written in place per iteration, and two loop variables swapping places."""
    def fill(buf, n):
        def body(go, i, b, p, q):
            row = tw.cast(i, tw.float64) * tw.ones([2], tw.float64)
            b = apply_op1("DynamicUpdateRow", [b, i, row])
            return [i + 1 < n, i + 1, b, q, p + q]
        go = tw.constant(0) < n
        return tw.while_loop(lambda go, i, b, p, q: go, body,
                             [go, tw.constant(0), buf, tw.constant(0.0, tw.float64),
                              tw.constant(1.0, tw.float64)])[1:]

    buf = np.full((4, 2), -1.0)
    gpu, ref = tw.compile(fill, target="gpu"), tw.compile(fill, target="reference")
    for n in (3, 4, 1, 0):
        for got, want in zip(gpu(buf, np.int32(n)), ref(buf, np.int32(n))):
            np.testing.assert_array_equal(got, want)
    (loop,) = _device_loops(_step(gpu, buf, np.int32(0)))
    assert any(a.node.op == "DynamicUpdateRow" and len(a.args) == 3 for a in loop.body)
    assert loop.predicate.row == (0, 1) and loop.predicate.rows == 2  # go's entry t % 2


def test_a_failing_kernel_in_a_device_loop_raises_the_references_error():
    """Gather past the end in iteration 3 of a loop fed 1000 iterations: the step reads
    its status after iterations 1, 2, 4 ..., so it stops early and raises the error."""
    def walk(x, n):
        return tw.while_loop(lambda i, s: i < n,
                             lambda i, s: [i + 1, s + tw.gather(x, i)],
                             [tw.constant(0), tw.constant(0.0)])[1]

    x = np.array([1.0, 2.0, 3.0], np.float32)
    gpu = tw.compile(walk, target="gpu")
    assert float(gpu(x, np.int32(3))) == 6.0
    with pytest.raises(InvalidArgumentError, match=r"Gather 'gather' .*not in \[0, 3\)"):
        gpu(x, np.int32(1000))
    with pytest.raises(InvalidArgumentError, match=r"not in \[0, 3\)"):
        tw.compile(walk, target="reference")(x, np.int32(1000))
    # it failed in iteration 3 (t = 3) and stopped at the check after 4 iterations
    assert _step(gpu, x, np.int32(3)).trips["while"] == 4
    assert float(gpu(x, np.int32(2))) == 3.0  # the step runs on after the error


@settings(settings.get_profile("gpu-sim"))
@given(a=st.lists(st.floats(0.05, 50.0), min_size=1, max_size=3))
def test_the_gradient_of_a_newton_iteration_runs_as_two_device_loops(a):
    """The forward loop pushes its history on a device stack whose size is known only at
    run time; the gradient loop pops it, counting down from the forward loop's count:
    values and gradient as the reference's (float64, exactly rounded ops)."""
    def with_gradient(a):
        i, x = _newton(a, 1e-9)
        return i, x, tw.gradients(tw.reduce_sum(x), [a])[0]

    a = np.array(a)
    gpu = tw.compile(with_gradient, target="gpu")
    got, want = gpu(a), tw.compile(with_gradient, target="reference")(a)
    assert int(got[0]) == int(want[0])
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=0)
    np.testing.assert_allclose(got[2], 0.5 / np.sqrt(a), rtol=1e-4)  # d sqrt(a) / da
    step = _step(gpu, a)
    forward, backward = _device_loops(step)
    assert forward.trips is None and backward.trips is None
    assert step.trips == {forward.node.name: int(want[0]), backward.node.name: int(want[0])}
    assert all(growable for _, growable in step.plan.stack_buffers.values())


def _fed_with_gradient(x, n):
    _, a = tw.while_loop(lambda i, a: i < n, lambda i, a: [i + 1, a * x + 0.1],
                         [tw.constant(0), x])
    return a, tw.gradients(tw.reduce_sum(a * a), [x])[0]


def test_a_history_stack_grows_past_its_first_size_and_keeps_its_entries():
    """No maximum_iterations: the stack starts with FIRST_ROWS entries and the runner
    doubles it (a new block, the old entries copied) when a push goes past its end; the
    next calls keep the larger one."""
    from tensorweave.targets.gpu.loops import FIRST_ROWS
    x = np.array([0.5, -0.9])
    gpu = tw.compile(_fed_with_gradient, target="gpu")
    ref = tw.compile(_fed_with_gradient, target="reference")
    for n, rows in ((3, FIRST_ROWS), (0, FIRST_ROWS), (FIRST_ROWS + 1, 2 * FIRST_ROWS),
                    (2 * FIRST_ROWS + 8, 4 * FIRST_ROWS), (5, 4 * FIRST_ROWS)):
        for got, want in zip(gpu(x, np.int32(n)), ref(x, np.int32(n))):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
        step = _step(gpu, x, np.int32(n))
        assert set(step.trips.values()) == {n}
        buffers = step.plan.stack_buffers
        assert buffers and all(step._rows.get(k, FIRST_ROWS) == rows for k in buffers)
    assert len(_device_loops(step)) == 2


def test_a_bounded_loops_history_has_its_maximum_iterations_entries():
    """With maximum_iterations the stack's size is known at plan time: it does not grow,
    and the loops' counts are the smaller of the cond's and the bound."""
    def bounded(x, n):
        _, a = tw.while_loop(lambda i, a: i < n, lambda i, a: [i + 1, a * x + 0.1],
                             [tw.constant(0), x], maximum_iterations=5)
        return a, tw.gradients(tw.reduce_sum(a * a), [x])[0]

    x = np.array([0.5, -0.9])
    gpu, ref = tw.compile(bounded, target="gpu"), tw.compile(bounded, target="reference")
    for n in (3, 9, 0, 5):
        for got, want in zip(gpu(x, np.int32(n)), ref(x, np.int32(n))):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
        step = _step(gpu, x, np.int32(n))
        assert set(step.trips.values()) == {min(n, 5)}
    assert step.plan.stack_buffers and not any(
        growable for _, growable in step.plan.stack_buffers.values())
    assert not step._rows


def test_a_loop_of_the_same_name_in_another_region_does_not_move_a_history():
    """The gradient loop pops from the forward loop's run-time count. A loop nested in a
    later loop's body has the same node name ('while': names repeat across regions) and
    runs between the two with other counts; keyed by name, the pops read the wrong
    entries (a gradient 42.8 off for n=2, m=6, 'pop from the empty stack' for others)."""
    def f(x, n, m):
        _, a = tw.while_loop(lambda i, a: i < n, lambda i, a: [i + 1, a * x + 0.1],
                             [tw.constant(0), x])

        def counting(k, c):
            _, d = tw.while_loop(lambda i, d: i < k, lambda i, d: [i + 1, d + 2],
                                 [tw.constant(0), c])
            return [k + 1, d]
        _, cnt = tw.while_loop(lambda k, c: k < m, counting, [tw.constant(0), tw.constant(0)])
        return a, tw.gradients(tw.reduce_sum(a * tw.cast(cnt, tw.float64)), [x])[0]

    x = np.array([0.5, -0.7])
    gpu, ref = tw.compile(f, target="gpu"), tw.compile(f, target="reference")
    for n, m in ((3, 2), (2, 6), (6, 2)):
        args = (x, np.int32(n), np.int32(m))
        for got, want in zip(gpu(*args), ref(*args)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    names = [a.node.name for a in walk_actions(_step(gpu, *args).plan.actions)
             if isinstance(a, Loop)]
    assert names.count("while") == 2  # the forward loop and the nested one
