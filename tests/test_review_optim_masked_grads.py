"""Adversarial review (differential against TensorFlow 2.21): the gradients of Sqrt,
Rsqrt and Reciprocal are 0 where the incoming gradient is 0, as TensorFlow's
SqrtGrad / RsqrtGrad / ReciprocalGrad kernels make them (``if dy == 0 return 0``).

That is what makes the common masking idiom ``tw.where(d > 0, tw.sqrt(d), 0)`` train:
the branch that `where` does not select gets a zero gradient, and at ``d = 0`` (or a
negative ``d``, where the branch is NaN) TensorFlow gives 0 there. Before, tensorweave
multiplied the zero by ``0.5 / sqrt(0) = inf`` (or by NaN) and returned NaN, which an
optimizer then wrote into the variables.

Expected values were computed with TensorFlow 2.21 (``tf.GradientTape``, float32 and
float64 give the same numbers)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw

X = [0.0, 4.0, -1.0]

# f, TensorFlow's gradient of sum(where(x > 0, f(x), 0)) at X
CASES = {
    "sqrt": (lambda x: tw.sqrt(x), [0.0, 0.25, 0.0]),
    "rsqrt": (lambda x: tw.math.rsqrt(x), [0.0, -0.0625, 0.0]),
    "reciprocal": (lambda x: tw.math.reciprocal(x), [0.0, -0.0625, 0.0]),
    "sqrt_of_square": (lambda x: tw.sqrt(x * x), [0.0, 1.0, 0.0]),
    "rsqrt_of_square": (lambda x: tw.math.rsqrt(tw.square(x)), [0.0, -0.0625, 0.0]),
}


def _masked(f, x):
    return tw.reduce_sum(tw.where(x > 0, f(x), tw.zeros_like(x)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CASES))
def test_masked_branch_gets_a_zero_gradient_eagerly(name, dtype):
    f, want = CASES[name]
    x = tw.constant(np.asarray(X, dtype))
    with tw.GradientTape() as tape:
        tape.watch(x)
        y = _masked(f, x)
    got = np.asarray(tape.gradient(y, x))
    assert not np.isnan(got).any(), f"{name}: NaN gradient {got}"
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_masked_branch_gets_a_zero_gradient_compiled(name):
    f, want = CASES[name]

    @tw.compile
    def grad(x):
        return tw.gradients(_masked(f, x), [x])[0]

    got = np.asarray(grad(np.float32(X)))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_sgd_step_through_masked_sqrt_keeps_the_variable_finite():
    """The training consequence: one SGD step of a loss with a masked norm."""
    w = tw.Variable(np.float32([[0.0, 0.0], [3.0, 4.0]]), name="review_masked_sqrt_w")
    opt = tw.optimizers.SGD(0.1)
    with tw.GradientTape() as tape:
        d = tw.reduce_sum(tw.square(w), axis=1)
        loss = tw.reduce_sum(tw.where(d > 0, tw.sqrt(d), tw.zeros_like(d)))
    opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
    # TensorFlow 2.21: [[0, 0], [2.94, 3.92]]
    np.testing.assert_allclose(w.numpy(), [[0.0, 0.0], [2.94, 3.92]], rtol=1e-6)


@pytest.mark.parametrize("f, want", [
    (lambda x: tw.sqrt(x), [np.inf, 0.25]),
    (lambda x: tw.math.rsqrt(x), [-np.inf, -0.0625]),
    (lambda x: tw.math.reciprocal(x), [-np.inf, -0.0625]),
])
def test_a_nonzero_incoming_gradient_still_sees_the_pole(f, want):
    """Only an incoming 0 is special: the gradient at the pole itself stays infinite,
    as TensorFlow's (1 is the incoming gradient here)."""
    x = tw.constant(np.float32([0.0, 4.0]))
    with tw.GradientTape() as tape:
        tape.watch(x)
        y = tw.reduce_sum(f(x))
    np.testing.assert_array_equal(np.asarray(tape.gradient(y, x)), np.float32(want))
