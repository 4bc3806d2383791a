"""Gradients through `tw.cond`, `tw.while_loop`, `tw.scan` and `tw.foldl`, against central
finite differences (float64) and against the gradient of the same computation unrolled
in Python (no control-flow ops): conds, loops, nested loops, conds inside loops, loops
inside conds, loops with variables, shape-changing loop variables, maximum_iterations,
long loops; and the structure of what the gradient builds (the history stack)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tests.helpers import check_gradients

F64 = np.float64


def grad_of(fn, *arrays, argnums=0):
    """The gradient of ``sum(fn(...))`` with respect to `argnums`."""
    return tw.grad(lambda *a: tw.reduce_sum(fn(*a)), argnums=argnums)(*arrays)


def assert_grads_match(loop_fn, unrolled_fn, *arrays, argnums=0):
    """The loop's gradient equals the unrolled computation's gradient."""
    got = grad_of(loop_fn, *arrays, argnums=argnums)
    want = grad_of(unrolled_fn, *arrays, argnums=argnums)
    for g, w in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple)
                    else [want]):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def loop_graph_ops(fn, *arrays) -> list[str]:
    g = tw.compile(tw.grad(lambda *a: tw.reduce_sum(fn(*a)))).get_concrete_function(*arrays)
    return [n.op for n in g.graph.walk()]


# ------------------------------------------------------------------------------------ cond

@pytest.mark.parametrize("x", [[1.0, 2.0], [-1.0, -2.0]])
def test_cond_gradient_follows_the_taken_branch(x):
    def f(x, y):
        return tw.cond(tw.reduce_sum(x) > 0, lambda: x * y * y, lambda: tw.sin(x) - y)

    check_gradients(f, np.array(x), np.array([3.0, 4.0]))


def test_cond_gradient_is_zero_for_inputs_a_branch_ignores():
    def f(x, y):
        return tw.cond(x[0] > 0, lambda: x * 2.0, lambda: y * 3.0)

    for x0 in (1.0, -1.0):
        gx, gy = grad_of(f, np.array([x0, 0.5]), np.array([1.0, 2.0]), argnums=(0, 1))
        want = ([2.0, 2.0], [0.0, 0.0]) if x0 > 0 else ([0.0, 0.0], [3.0, 3.0])
        np.testing.assert_allclose(gx, want[0])
        np.testing.assert_allclose(gy, want[1])


def test_cond_gradient_with_structured_outputs_and_integer_outputs():
    def f(x):
        out = tw.cond(x[0] > 0, lambda: (tw.exp(x), tw.constant(1), x * x),
                      lambda: (x, tw.constant(2), tw.tanh(x)))
        return out[0] + out[2] * tw.cast(out[1], tw.float64)

    check_gradients(f, np.array([0.3, 0.7]))
    check_gradients(f, np.array([-0.3, 0.7]))


def test_cond_gradient_saves_branch_values_as_extra_outputs():
    def f(x):
        return tw.cond(x[0] > 0, lambda: tw.sin(x) * tw.cos(x), lambda: tw.exp(x))

    g = tw.compile(tw.grad(lambda x: tw.reduce_sum(f(x)))).get_concrete_function(np.ones(2))
    forward, backward = [n for n in g.graph.nodes if n.op == "If"]
    assert len(forward.outputs) > 1  # the sin/cos/exp values the gradient reads
    assert len(backward.inputs) > 2
    check_gradients(f, np.array([0.4, -0.2]))
    check_gradients(f, np.array([-0.4, -0.2]))


def test_nested_conds():
    def f(x):
        return tw.cond(x[0] > 0,
                       lambda: tw.cond(x[1] > 0, lambda: x * x, lambda: tw.sin(x)),
                       lambda: tw.exp(x) * x)

    for x in ([0.5, 0.5], [0.5, -0.5], [-0.5, 0.5]):
        check_gradients(f, np.array(x))


# ---------------------------------------------------------------------------------- while

def loop_fn(n):
    def f(x, c):
        def body(i, a):
            return i + 1, tw.sin(a) * c + x
        return tw.while_loop(lambda i, a: i < n, body, (0, x))[1]
    return f


def unrolled_fn(n):
    def f(x, c):
        a = x
        for _ in range(n):
            a = tw.sin(a) * c + x
        return a
    return f


@settings(max_examples=8)
@given(n=st.integers(0, 5), seed=st.integers(0, 2**16))
def test_while_gradient_matches_the_unrolled_loop(n, seed):
    rng = np.random.default_rng(seed)
    x, c = rng.normal(size=3), rng.normal(size=3)
    assert_grads_match(loop_fn(n), unrolled_fn(n), x, c, argnums=(0, 1))


def test_while_gradient_matches_finite_differences():
    check_gradients(loop_fn(4), np.array([0.3, -0.6]), np.array([0.9, 1.1]))


def test_while_gradient_uses_a_history_stack_and_a_backward_loop():
    ops = loop_graph_ops(loop_fn(3), np.ones(2), np.ones(2))
    assert ops.count("While") == 2
    assert ops.count("Stack") == 1 and ops.count("StackPush") == 1 and ops.count("StackPop") == 1


def test_loop_invariants_are_not_pushed():
    """The captured weight c reaches the backward loop once, not once per iteration."""
    f = tw.compile(tw.grad(lambda x, c: tw.reduce_sum(loop_fn(3)(x, c)), argnums=(0, 1)))
    graph = f.get_concrete_function(np.ones(2), np.ones(2)).graph
    forward = next(n for n in graph.nodes if n.op == "While" and "history" in
                   n.regions[1].arg_names)
    push = next(n for n in forward.regions[1].nodes if n.op == "StackPush")
    body = forward.regions[1]
    c_arg = next(a for a, name in zip(body.args, body.arg_names) if name.startswith("c"))
    assert c_arg not in push.inputs


def test_while_with_several_float_and_int_loop_variables():
    def f(x, y):
        def body(i, a, b, k):
            return i + 1, a * b, tw.tanh(b + a), k * 2
        return tw.while_loop(lambda i, a, b, k: i < 3, body, (0, x, y, tw.constant(1)))[1:3]

    def loss(x, y):
        a, b = f(x, y)
        return a + 2.0 * b

    check_gradients(loss, np.array([0.5, -0.3]), np.array([0.2, 0.8]))


def test_nested_loops():
    def f(x):
        def outer(i, a):
            def inner(j, b):
                return j + 1, b * x + tw.sin(a)
            _, b = tw.while_loop(lambda j, b: j < i, inner, (0, a))
            return i + 1, b * 0.5
        return tw.while_loop(lambda i, a: i < 4, outer, (1, x))[1]

    def unrolled(x):
        a = x
        for i in range(1, 4):
            b = a
            for _ in range(i):
                b = b * x + tw.sin(a)
            a = b * 0.5
        return a

    x = np.array([0.3, -0.2])
    check_gradients(f, x)
    assert_grads_match(f, unrolled, x)
    assert loop_graph_ops(f, x).count("Stack") == 2


def test_cond_inside_a_loop():
    def f(x):
        def body(i, a):
            return i + 1, tw.cond(tw.reduce_sum(a) > 1.0, lambda: a * 0.5 + x, lambda: a * x + 1.0)
        return tw.while_loop(lambda i, a: i < 6, body, (0, x))[1]

    check_gradients(f, np.array([0.3, 0.9]))
    check_gradients(f, np.array([-0.3, 0.1]))


def test_loop_inside_a_cond():
    def f(x):
        def looped():
            return tw.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * x), (0, x))[1]
        return tw.cond(tw.reduce_sum(x) > 0, looped, lambda: tw.exp(x))

    check_gradients(f, np.array([0.3, 0.9]))
    check_gradients(f, np.array([-0.3, -0.9]))


def test_loop_in_a_cond_in_a_loop():
    def f(x):
        def body(i, a):
            def looped():
                return tw.while_loop(lambda j, b: j < i, lambda j, b: (j + 1, tw.sin(b) + x),
                                     (0, a))[1]
            return i + 1, tw.cond(i % 2 == 0, looped, lambda: a * x)
        return tw.while_loop(lambda i, a: i < 4, body, (0, x))[1]

    check_gradients(f, np.array([0.4, -0.7]))


def test_gradient_with_respect_to_variables_read_in_a_loop():
    w = tw.Variable(np.array([0.5, -1.5]), name="cg_w")

    @tw.compile
    def grads(x):
        a = tw.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * w + x), (0, x))[1]
        return tw.gradients(tw.reduce_sum(a), [w, x])

    x = np.array([1.0, 2.0])
    gw, gx = grads(x)
    wv = w.numpy()
    # a3 = x w^3 + x w^2 + x w + x
    np.testing.assert_allclose(gw, x * (3 * wv**2 + 2 * wv + 1))
    np.testing.assert_allclose(gx, wv**3 + wv**2 + wv + 1)


def test_optimizer_trains_variables_used_in_a_loop():
    w = tw.Variable(np.array([0.5]), name="cg_train_w")
    opt = tw.optimizers.SGD(0.02)

    @tw.compile
    def step(x, y):
        a = tw.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * w + x), (0, tw.zeros_like(x)))[1]
        loss = tw.reduce_mean(tw.square(a - y))
        opt.minimize(loss)
        return loss

    losses = [float(step(np.array([1.0]), np.array([3.0]))) for _ in range(40)]
    assert losses[-1] < 0.01 * losses[0]


def test_loop_variable_that_grows():
    def f(x):
        def body(i, a):
            return i + 1, tw.concat([a, tw.sin(a[-1:]) * x[:1]], 0)
        return tw.while_loop(lambda i, a: i < 3, body, (0, x), shape_invariants=(None, [None]))[1]

    check_gradients(f, np.array([0.5, 0.8]))


def test_maximum_iterations_bounds_the_loop_and_its_history():
    def f(x):
        return tw.while_loop(lambda i, a: i < 100, lambda i, a: (i + 1, tw.sin(a) + x), (0, x),
                             maximum_iterations=3)[1]

    check_gradients(f, np.array([0.2, 0.4]))
    assert_grads_match(f, lambda x: tw.sin(tw.sin(tw.sin(x) + x) + x) + x, np.array([0.2, 0.4]))
    g = tw.compile(tw.grad(lambda x: tw.reduce_sum(f(x)))).get_concrete_function(np.ones(2))
    stack = next(n for n in g.graph.nodes if n.op == "Stack")
    assert stack.attrs["max_size"] == 3


def test_loop_with_zero_iterations_passes_the_gradient_through():
    f = loop_fn(0)
    gx, gc = grad_of(f, np.array([1.0, 2.0]), np.array([3.0, 4.0]), argnums=(0, 1))
    np.testing.assert_allclose(gx, [1.0, 1.0])
    np.testing.assert_allclose(gc, [0.0, 0.0])


def test_ten_thousand_iteration_gradient():
    n = 10_000

    def f(x):
        return tw.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * 0.999 + x),
                             (0, tw.zeros_like(x)))[1]

    g = tw.compile(tw.grad(lambda x: tw.reduce_sum(f(x))))
    x = np.array([0.5, 1.0])
    g(x)
    got = g(x)  # the second call too: nothing of the first one's loop state may leak in
    np.testing.assert_allclose(got, (1 - 0.999**n) / (1 - 0.999) * np.ones(2), rtol=1e-9)


def test_second_order_gradient_through_a_loop_is_a_clear_error():
    def first(x):
        return tw.gradients(tw.reduce_sum(loop_fn(2)(x, x)), x)[0]

    with pytest.raises(tw.errors.CompileError, match="second-order"):
        tw.compile(lambda x: tw.gradients(tw.reduce_sum(first(x)), x))(np.ones(2))


@pytest.fixture
def op_without_gradient():
    """An op with no gradient, registered for one test only (so that checks over
    `all_ops()` elsewhere never see it)."""
    from tensorweave.compiler import registry
    name = "ControlGradTestNoGrad"
    op = registry.def_op(name, ["x"], doc="x * 2, with no gradient (tests).")
    op.infer(lambda x: x)
    op.kernel("reference")(lambda x: x * 2)
    yield name
    registry._REGISTRY.pop(name, None)


def test_a_body_op_without_gradient_is_a_clear_error(op_without_gradient):
    from tensorweave.frontend.building import apply_op1

    def f(x):
        return tw.while_loop(lambda i, a: i < 2,
                             lambda i, a: (i + 1, apply_op1(op_without_gradient, [a])),
                             (0, x))[1]

    np.testing.assert_allclose(tw.compile(f)(np.ones(2)), [4.0, 4.0])
    with pytest.raises(tw.errors.CompileError, match="no gradient is registered for op "
                                                     "ControlGradTestNoGrad"):
        grad_of(f, np.ones(2))


# -------------------------------------------------------------------------- scan, foldl

def test_scan_and_foldl_gradients():
    x = np.random.default_rng(0).uniform(0.2, 0.8, size=(4, 3))
    check_gradients(lambda x: tw.scan(lambda a, e: a * e + tw.sin(a), x), x)
    check_gradients(lambda x: tw.foldl(lambda a, e: a * e + tw.sin(a), x), x)
    check_gradients(lambda x: tw.scan(lambda a, e: a * 0.5 + e, x, initializer=tw.reduce_sum(x, 0)),
                    x)


def test_scan_gradient_saves_no_copies_of_the_output_buffer():
    x = np.ones((5, 3))
    g = tw.compile(tw.grad(lambda x: tw.reduce_sum(tw.scan(lambda a, e: a * e, x))))
    graph = g.get_concrete_function(x).graph
    push = next(n for n in graph.walk() if n.op == "StackPush")
    assert all(v.type.shape != (5, 3) for v in push.inputs[1:])


def test_two_gradients_of_one_loop_in_one_trace():
    def f(x, c):
        a = loop_fn(3)(x, c)
        g1 = tw.gradients(tw.reduce_sum(a), x)[0]
        g2 = tw.gradients(tw.reduce_sum(a * a), c)[0]
        return g1, g2

    x, c = np.array([0.3, -0.6]), np.array([0.9, 1.1])
    g1, g2 = tw.compile(f)(x, c)
    np.testing.assert_allclose(g1, grad_of(unrolled_fn(3), x, c))
    np.testing.assert_allclose(
        g2, tw.grad(lambda x, c: tw.reduce_sum(tw.square(unrolled_fn(3)(x, c))), argnums=1)(x, c))


def test_second_order_gradient_through_a_cond():
    def first(x):
        y = tw.cond(x[0] > 0, lambda: x * x * x, lambda: tw.sin(x))
        return tw.gradients(tw.reduce_sum(y), x)[0]

    second = tw.compile(lambda x: tw.gradients(tw.reduce_sum(first(x)), x)[0])
    np.testing.assert_allclose(second(np.array([0.5, 2.0])), [3.0, 12.0])
    np.testing.assert_allclose(second(np.array([-0.5, 2.0])), -np.sin([-0.5, 2.0]))
