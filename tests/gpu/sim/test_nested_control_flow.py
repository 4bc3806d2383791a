"""Loops nested in device loop bodies and If on the gpu target (`targets/gpu/loops.py`,
`branches.py`): planned as device launches with no host call, matching the reference.
Under the simulator, tiny shapes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.errors import InvalidArgumentError
from tensorweave.targets.gpu.listing import kernel_listing
from tensorweave.targets.gpu.step import Branch, Copy, HostCall, Loop, walk_actions


def _step(fn, *arrays):
    """The bound GPU step of compiled `fn` for `arrays` (after a call)."""
    exe = fn.get_concrete_function(*arrays).executable
    assert exe.native_reason is None, exe.native_reason
    return next(iter(exe._steps.values()))


def _on_device(step) -> list:
    """The plan's actions, after checking that nothing of it runs on the host."""
    plan = step.plan
    assert not plan.fallbacks, plan.fallbacks
    actions = walk_actions(plan.actions)
    assert not [a for a in actions if isinstance(a, HostCall)]
    return actions


def _check(fn, *arrays):
    gpu_out = tw.compile(fn, target="gpu")(*arrays)
    ref_out = tw.compile(fn, target="reference")(*arrays)
    for got, want in zip(gpu_out, ref_out):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def _nested(x, n):
    """An outer loop counted at run time holding a loop of 3 iterations (reading the
    outer loop's double-buffered value, which moves with the outer iterations) and a
    triangular loop (its bound is the outer counter: counted at run time)."""
    def outer_body(i, acc):
        _, inner = tw.while_loop(lambda j, a: j < 3, lambda j, a: [j + 1, a * x + acc],
                                 [tw.constant(0), acc])
        _, tri = tw.while_loop(lambda j, a: j < i, lambda j, a: [j + 1, a + 0.5 * acc],
                               [tw.constant(0), inner])
        return [i + 1, tri * 0.25]
    return tw.while_loop(lambda i, acc: i < n, outer_body, [tw.constant(0), x])


def test_loops_nested_in_a_loop_run_on_the_device():
    x = np.array([0.5, -1.2])
    gpu, ref = tw.compile(_nested, target="gpu"), tw.compile(_nested, target="reference")
    for n in (0, 1, 2, 5):
        for got, want in zip(gpu(x, np.int32(n)), ref(x, np.int32(n))):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    step = _step(gpu, x, np.int32(5))
    actions = _on_device(step)
    (outer,) = [a for a in step.plan.actions if isinstance(a, Loop)]
    inner = [a for a in outer.body if isinstance(a, Loop)]
    assert outer.trips is None and [lp.trips for lp in inner] == [3, None]
    assert step.trips["while_1"] == 4  # the triangular loop's last run: j < i = 4
    # acc is the outer loop's entry t % 2: the inner loops read a copy of it, which
    # their own iterations do not move
    assert any(isinstance(a, Copy) and a.src.row == (0, 1) and a.dst.rows == 1
               for a in outer.body)
    assert len([a for a in actions if isinstance(a, Loop)]) == 3


def test_a_loop_nested_in_a_static_loop_runs_on_the_device():
    def fixed(x):
        return _nested(x, 3)

    x = np.array([0.25, 0.75, -0.5])
    _check(fixed, x)
    gpu = tw.compile(fixed, target="gpu")
    gpu(x)
    (outer,) = [a for a in _step(gpu, x).plan.actions if isinstance(a, Loop)]
    assert outer.trips == 3
    assert [lp.trips for lp in outer.body if isinstance(lp, Loop)] == [3, None]


def _piecewise(x, n):
    """A loop whose body takes one of two branches by a computed predicate."""
    def body(i, v):
        v2 = tw.cond(tw.reduce_sum(v) > 1.0, lambda: v * 0.5 + tw.sin(v),
                     lambda: v * v + 0.25)
        return [i + 1, v2]
    _, v = tw.while_loop(lambda i, v: i < n, body, [tw.constant(0), x])
    return v, tw.gradients(tw.reduce_sum(v * v), [x])[0]


@settings(settings.get_profile("gpu-sim"))
@given(x=st.lists(st.floats(-1.0, 1.0), min_size=2, max_size=2), n=st.integers(0, 6))
def test_an_if_in_a_loop_and_its_gradient_run_on_the_device(x, n):
    """The forward loop pushes each iteration's predicate and operands; the gradient loop
    pops them and its gradient If reads its predicate from the popped entry."""
    x = np.array(x)
    gpu = tw.compile(_piecewise, target="gpu")
    for got, want in zip(gpu(x, np.int32(n)),
                         tw.compile(_piecewise, target="reference")(x, np.int32(n))):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    step = _step(gpu, x, np.int32(n))
    forward, backward = [a for a in step.plan.actions if isinstance(a, Loop)]
    _on_device(step)
    assert [type(a) for a in forward.body].count(Branch) == 1
    assert [type(a) for a in backward.body].count(Branch) == 1
    assert step.trips == {forward.node.name: n, backward.node.name: n}


def test_an_if_in_a_static_loop_with_its_gradient():
    def fixed(x):
        return _piecewise(x, 4)

    x = np.array([0.5, 0.7])
    _check(fixed, x)
    gpu = tw.compile(fixed, target="gpu")
    gpu(x)
    loops = [a for a in _step(gpu, x).plan.actions if isinstance(a, Loop)]
    assert [lp.trips for lp in loops] == [4, 4]


def test_an_if_runs_only_its_taken_branch():
    """A gather out of range in the branch not taken does not fail the step; taken, it
    raises the error. The listing shows both branches."""
    def pick(x, i, p):
        return tw.cond(p > 0.0, lambda: tw.gather(x, i) * 2.0, lambda: x[:1] - 1.0)

    x = np.array([1.0, 2.0, 3.0])
    gpu, ref = tw.compile(pick, target="gpu"), tw.compile(pick, target="reference")
    for i, p in ((np.array([2]), 1.0), (np.array([5]), -1.0), (np.array([0]), -1.0)):
        np.testing.assert_array_equal(gpu(x, i, np.float64(p)), ref(x, i, np.float64(p)))
    with pytest.raises(InvalidArgumentError, match=r"not in \[0, 3\)"):
        gpu(x, np.array([5]), np.float64(1.0))
    np.testing.assert_array_equal(gpu(x, np.array([1]), np.float64(1.0)), [4.0])
    step = _step(gpu, x, np.array([1]), np.float64(1.0))
    (branch,) = [a for a in _on_device(step) if isinstance(a, Branch)]
    assert branch.then and branch.orelse
    listing = kernel_listing(step.plan)
    assert "downloads its predicate and runs one branch on the device" in listing
    assert "# else:" in listing


def test_the_gradient_of_nested_loops_declines_with_the_reason():
    """The outer loop would push the inner loop's history stack on its own (a stack of
    stacks): the graph runs on the dataflow executor, matching the reference."""
    def nested_grad(x):
        def outer_body(i, acc):
            _, inner = tw.while_loop(lambda j, a: j < 2,
                                     lambda j, a: [j + 1, tw.sin(a) * x], [tw.constant(0), acc])
            return [i + 1, inner + 1.0]
        _, v = tw.while_loop(lambda i, acc: i < 3, outer_body, [tw.constant(0), x])
        return v, tw.gradients(tw.reduce_sum(v), [x])[0]

    x = np.array([0.5, 0.7])
    _check(nested_grad, x)
    gpu = tw.compile(nested_grad, target="gpu")
    gpu(x)
    reason = gpu.get_concrete_function(x).executable.native_reason
    assert "cannot run on the device" in reason and "keeps a stack" in reason, reason
