"""Adversarial review of `tw.GradientTape`: `gradient` called on a persistent tape
inside its own ``with`` block is recorded by that tape (TensorFlow: "it causes the
gradient ops to be recorded on the tape"), so a later `gradient` of a value computed
from it differentiates through it. Eagerly it was not: the gradient was a constant to
the tape, d(2x * x)/dx came out 2x instead of 4x and a second derivative through a
variable None, while the same code in ``@tw.compile`` gave TensorFlow's answers."""

import numpy as np
import pytest

import tensorweave as tw

X = np.array([1.5, -2.0])


def _through_tensor(x):
    with tw.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
        g1 = t.gradient(y, x)
        z = g1 * x
    return t.gradient(z, x)


def _through_variable(v):
    with tw.GradientTape(persistent=True) as t:
        y = tw.reduce_sum(v ** 3)
        g1 = t.gradient(y, v)
        z = tw.reduce_sum(g1 * tw.sin(v))
    return t.gradient(z, v)


def _want_through_variable(x):
    # z = sum(3 x^2 sin x): dz/dx = 6 x sin x + 3 x^2 cos x
    return 6 * x * np.sin(x) + 3 * x ** 2 * np.cos(x)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_gradient_inside_a_persistent_tape_is_recorded(compiled):
    fn = tw.compile(_through_tensor) if compiled else _through_tensor
    got = fn(X if compiled else tw.constant(X))
    np.testing.assert_allclose(np.asarray(got), 4 * X, rtol=1e-12)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_second_derivative_of_a_variable_inside_one_tape(compiled):
    v = tw.Variable(X, name="review_tape_inside_v")
    got = tw.compile(lambda: _through_variable(v))() if compiled else _through_variable(v)
    assert got is not None
    np.testing.assert_allclose(np.asarray(got), _want_through_variable(X), rtol=1e-12)


def test_against_finite_differences():
    def z_of(x):
        return np.sum(3 * x ** 2 * np.sin(x))
    eps = 1e-6
    numeric = [(z_of(X + eps * e) - z_of(X - eps * e)) / (2 * eps) for e in np.eye(2)]
    v = tw.Variable(X, name="review_tape_inside_fd")
    np.testing.assert_allclose(np.asarray(_through_variable(v)), numeric, rtol=1e-6)


def test_gradient_outside_the_block_is_not_recorded():
    # after the block nothing records: the first gradient is an ordinary result
    x = tw.constant(X)
    with tw.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
    g1 = t.gradient(y, x)
    assert t.gradient(g1 * x, x) is None


def test_non_persistent_tape_inside_its_block_gives_one_gradient():
    x = tw.constant(X)
    with tw.GradientTape() as t:
        t.watch(x)
        y = x * x
        g1 = t.gradient(y, x)
    np.testing.assert_allclose(np.asarray(g1), 2 * X)
    with pytest.raises(RuntimeError):
        t.gradient(y, x)


def test_a_refused_compiled_call_under_a_tape_does_not_run():
    # the call was run (assigning v) before the refusal was raised
    v = tw.Variable(np.array([0.5, 3.0]), name="review_tape_refused")

    @tw.compile
    def doubling(a):
        v.assign(v * 2.0)
        return tw.reduce_sum(v * a)

    x = tw.constant(X)
    with tw.GradientTape() as t:
        t.watch(x)
        with pytest.raises(tw.errors.UnimplementedError, match="AssignVariable"):
            doubling(x)
    np.testing.assert_array_equal(v.numpy(), [0.5, 3.0])
