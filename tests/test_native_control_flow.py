"""Functional control flow compiled natively by the cpu target (issue 6, item 5): an If
becomes a branch and a While a loop inside the step's native function, with the
regions' own native functions; values and gradients match the reference target and the
lowered (Switch/Merge/Enter/Exit/NextIteration) path."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.errors import InvalidArgumentError


def _plan(fn, *args):
    step = fn.get_concrete_function(*args).executable.native_step(list(args))
    assert step is not None
    return step.plan


def _kinds(plan):
    return {a.node.op: a.kind for a in plan.actions if a.node is not None}


def _compare(cpu_out, ref_out, rtol=1e-5):
    cpu_out = cpu_out if isinstance(cpu_out, (tuple, list)) else [cpu_out]
    ref_out = ref_out if isinstance(ref_out, (tuple, list)) else [ref_out]
    for a, b in zip(cpu_out, ref_out):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-6)


def _run_all(fn, *args, rtol=1e-5):
    cpu = tw.compile(fn, target="cpu")
    out = cpu(*args)
    _compare(out, tw.compile(fn, target="reference")(*args), rtol)
    _compare(tw.compile(fn, target="cpu", lower_control_flow=True)(*args),
             tw.compile(fn, target="reference")(*args), rtol)
    return cpu, out


def test_while_and_cond_are_native_loops_and_branches():
    def f(x, n):
        i, acc = tw.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, tw.tanh(a * 1.5 + x)),
                               (tw.constant(0), x))
        return i, tw.cond(tw.reduce_sum(acc) > 0, lambda: acc * 2.0, lambda: acc - 1.0)

    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    for n in (0, 1, 7):
        cpu, (i, _) = _run_all(f, x, np.array(n, np.int32))
        assert i == n
    kinds = _kinds(_plan(cpu, x, np.array(7, np.int32)))
    assert kinds["While"] == "region" and kinds["If"] == "region"


def test_nested_loops_with_a_cond_inside():
    def f(x):
        def outer_body(i, acc):
            def inner_body(j, a):
                return j + 1, tw.cond(j % 2 == 0, lambda: a + x, lambda: a * 0.5)
            _, acc = tw.while_loop(lambda j, a: j < i, inner_body, (tw.constant(0), acc))
            return i + 1, acc
        return tw.while_loop(lambda i, a: i < 5, outer_body, (tw.constant(0), x))[1]

    x = np.random.default_rng(1).standard_normal(6)
    cpu, _ = _run_all(f, x, rtol=1e-12)
    assert _kinds(_plan(cpu, x))["While"] == "region"


def test_maximum_iterations_bounds_the_native_loop():
    f = lambda x: tw.while_loop(lambda i, a: True, lambda i, a: (i + 1, a * 2.0),  # noqa: E731
                                (tw.constant(0), x), maximum_iterations=6)
    x = np.ones(3, np.float32)
    _, (i, a) = _run_all(f, x)
    assert i == 6
    np.testing.assert_array_equal(a, np.full(3, 64.0))


def test_scan_and_its_gradient_match_the_reference():
    def f(xs, h0):
        hs = tw.scan(lambda h, x: tw.tanh(h * 0.9 + x), xs, initializer=h0)
        return tw.reduce_sum(hs * hs)

    def g(xs, h0):
        return tw.gradients(f(xs, h0), [xs, h0])

    rng = np.random.default_rng(2)
    xs, h0 = rng.standard_normal((12, 5)), rng.standard_normal(5)
    _run_all(f, xs, h0, rtol=1e-10)
    _run_all(g, xs, h0, rtol=1e-10)


def test_ten_thousand_iterations_run_natively():
    f = tw.compile(lambda x: tw.while_loop(lambda i, a: i < 10_000,
                                           lambda i, a: (i + 1, a + 1.0), (tw.constant(0), x))[1],
                   target="cpu")
    np.testing.assert_array_equal(f(np.zeros(2)), [10_000.0, 10_000.0])


def test_an_error_inside_a_native_loop_names_the_op():
    def f(x, idx):
        def body(i, a):
            return i + 1, a + tw.gather(x, idx + i)
        return tw.while_loop(lambda i, a: i < 4, body, (tw.constant(0), tw.zeros([1, 2])))[1]

    cpu = tw.compile(f, target="cpu")
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    np.testing.assert_allclose(cpu(x, np.array([0], np.int32)), x.sum(0, keepdims=True))
    with pytest.raises(InvalidArgumentError, match=r"(?i)gather"):
        cpu(x, np.array([2], np.int32))


def test_errors_in_loops_name_the_op_when_the_step_comes_from_a_cache():
    def f(x, idx):
        def body(i, a):
            return i + 1, a + tw.gather(x, idx + i)
        return tw.while_loop(lambda i, a: i < 4, body, (tw.constant(0), tw.zeros([1, 2])))[1]

    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    for _ in range(2):  # the second function's step is a cache hit (same graph)
        with pytest.raises(InvalidArgumentError, match=r"(?i)gather"):
            tw.compile(f, target="cpu")(x, np.array([2], np.int32))


def test_a_native_loop_with_a_deadline_runs_where_the_deadline_is_enforced():
    f = tw.compile(lambda x: tw.while_loop(lambda i: i >= 0.0, lambda i: (i + 1.0,), (x,)),
                   target="cpu", timeout=0.5)
    with pytest.raises(tw.errors.DeadlineExceededError):
        f(np.float32(0.0))


def test_numpy_scalars_reach_native_steps_safely():
    f = tw.compile(lambda x: x * 2.0 + 1.0, target="cpu")
    exe = f.get_concrete_function(np.float32(1)).executable
    for _ in range(3):
        assert exe(np.float32(3.0))[0] == 7.0
