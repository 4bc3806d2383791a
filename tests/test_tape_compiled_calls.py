"""A `@tw.compile` function called while an eager GradientTape records is differentiable
(TensorFlow 2's ``loss = model(x)`` under a tape), instead of giving None gradients;
calls it cannot differentiate faithfully are errors, never wrong gradients."""

import numpy as np
import pytest

import tensorweave as tw

RNG = np.random.default_rng(7)


def _model():
    w = tw.Variable(RNG.normal(size=(3, 2)), name="w")
    b = tw.Variable(RNG.normal(size=(2,)), name="b")
    frozen = tw.Variable(RNG.normal(size=(2,)), name="frozen", trainable=False)

    @tw.compile
    def model(x, scale):
        return tw.tanh(x @ w + b) * frozen * scale, tw.reduce_sum(x)

    return model, w, b


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_gradients_through_a_compiled_call_equal_those_of_its_python_function(target,
                                                                             monkeypatch):
    model, w, b = _model()
    model = tw.compile(model.python_function, target=target)
    x = tw.constant(RNG.normal(size=(4, 3)))
    got, want = [], []
    for fn, out in ((model, got), (model.python_function, want)):
        with tw.GradientTape() as tape:
            tape.watch(x)
            y, total = fn(x, 2.0)
            loss = tw.reduce_sum(y * y) + 3.0 * total
        out.extend(tape.gradient(loss, [w, b, x]))
    assert all(g is not None for g in got)
    for g, r in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-12, atol=1e-12)


def test_the_gradient_through_a_compiled_call_matches_finite_differences():
    model, w, b = _model()
    x0 = RNG.normal(size=(4, 3))

    def loss_of(x):
        y, _ = model(x, 1.5)
        return float(np.sum(np.asarray(y) ** 2))

    x = tw.constant(x0)
    with tw.GradientTape() as tape:
        tape.watch(x)
        y, _ = model(x, 1.5)
        loss = tw.reduce_sum(y * y)
    gx = np.asarray(tape.gradient(loss, x))
    eps, fd = 1e-6, np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        d = np.zeros_like(x0)
        d[i] = eps
        fd[i] = (loss_of(x0 + d) - loss_of(x0 - d)) / (2 * eps)
    np.testing.assert_allclose(gx, fd, rtol=1e-6, atol=1e-8)


def test_an_eager_training_loop_around_a_compiled_model_learns():
    rng = np.random.default_rng(0)
    true_w = rng.normal(size=(5, 1))
    xs = rng.normal(size=(64, 5))
    ys = xs @ true_w
    w = tw.Variable(np.zeros((5, 1)), name="w")

    @tw.compile
    def predict(x):
        return x @ w

    opt = tw.optimizers.SGD(0.1)
    losses = []
    for _ in range(50):
        with tw.GradientTape() as tape:
            loss = tw.reduce_mean(tw.square(predict(xs) - ys))
        (grad,) = tape.gradient(loss, [w])
        opt.apply_gradients([(grad, w)])
        losses.append(float(loss))
    assert losses[-1] < 1e-3 * losses[0]
    np.testing.assert_allclose(w.numpy(), true_w, atol=1e-2)


def test_a_compiled_call_with_random_ops_under_a_tape_is_refused_not_differentiated():
    w = tw.Variable(np.ones((3, 3)), name="w")

    @tw.compile
    def noisy(x):
        return tw.nn.dropout(x @ w, rate=0.5)

    x = tw.constant(np.ones((2, 3)))
    with tw.GradientTape(), pytest.raises(tw.errors.UnimplementedError,
                                                  match="stateful op"):
        noisy(x)
    # outside a tape, and with nothing the tape follows, the call is as always
    assert isinstance(noisy(np.ones((2, 3))), np.ndarray)


def test_a_call_that_nothing_recorded_flows_into_is_a_plain_call():
    @tw.compile
    def double(x):
        return 2.0 * x

    watched = tw.constant(1.0)
    with tw.GradientTape() as tape:
        tape.watch(watched)
        out = double(np.arange(3.0))
    assert isinstance(out, np.ndarray)  # not recorded: no tensor of the tape flowed in
    np.testing.assert_array_equal(out, [0.0, 2.0, 4.0])
