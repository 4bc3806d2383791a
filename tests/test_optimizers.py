"""Each optimizer against a NumPy transcription of TensorFlow's update formula, over
several steps, with the gradient of a quadratic loss fed in."""

import numpy as np
import pytest

import tensorweave as tw

STEPS = 5
W0 = np.array([[0.5, -1.0], [2.0, 0.25]])
TARGET = np.array([[1.0, 0.0], [0.0, 1.0]])


def grad_of(w):
    # loss = sum((w - target)**2 * c) with c breaking symmetry between elements
    return 2 * (w - TARGET) * np.array([[1.0, 2.0], [3.0, 0.5]])


def run_tw(opt):
    w = tw.Variable(W0.copy(), name="w")

    @tw.compile
    def step():
        loss = tw.reduce_sum(tw.square(w - TARGET) * np.array([[1.0, 2.0], [3.0, 0.5]]))
        opt.minimize(loss, var_list=[w])
        return loss

    for _ in range(STEPS):
        step()
    assert step.tracing_count == 1
    return w.numpy(), opt, w


def numpy_steps(update, **state):
    w = W0.copy()
    for t in range(1, STEPS + 1):
        w = update(w, grad_of(w), t, state)
    return w, state


def test_sgd():
    got, _, _ = run_tw(tw.optimizers.SGD(0.1))
    want, _ = numpy_steps(lambda w, g, t, s: w - 0.1 * g)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum(nesterov):
    got, opt, w = run_tw(tw.optimizers.Momentum(0.05, momentum=0.9, nesterov=nesterov))

    def upd(w, g, t, s):
        s["acc"] = s["acc"] * 0.9 + g
        return w - (0.05 * g + 0.05 * 0.9 * s["acc"] if nesterov else 0.05 * s["acc"])

    want, st = numpy_steps(upd, acc=np.zeros_like(W0))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(opt.get_slot(w, "momentum").numpy(), st["acc"], rtol=1e-12)


def test_adagrad():
    got, _, _ = run_tw(tw.optimizers.Adagrad(0.1, initial_accumulator_value=0.1, epsilon=1e-7))

    def upd(w, g, t, s):
        s["acc"] = s["acc"] + g * g
        return w - 0.1 * g / (np.sqrt(s["acc"]) + 1e-7)

    want, _ = numpy_steps(upd, acc=np.full_like(W0, 0.1))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_adadelta():
    got, _, _ = run_tw(tw.optimizers.Adadelta(1.0, rho=0.95, epsilon=1e-6))

    def upd(w, g, t, s):
        s["a"] = 0.95 * s["a"] + 0.05 * g * g
        u = np.sqrt(s["u"] + 1e-6) / np.sqrt(s["a"] + 1e-6) * g
        s["u"] = 0.95 * s["u"] + 0.05 * u * u
        return w - 1.0 * u

    want, _ = numpy_steps(upd, a=np.zeros_like(W0), u=np.zeros_like(W0))
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop(centered):
    got, _, _ = run_tw(tw.optimizers.RMSProp(0.01, rho=0.9, momentum=0.5, epsilon=1e-7,
                                             centered=centered))

    def upd(w, g, t, s):
        s["ms"] = 0.9 * s["ms"] + 0.1 * g * g
        denom = s["ms"]
        if centered:
            s["mg"] = 0.9 * s["mg"] + 0.1 * g
            denom = s["ms"] - s["mg"] ** 2
        s["mom"] = 0.5 * s["mom"] + 0.01 * g / np.sqrt(denom + 1e-7)
        return w - s["mom"]

    want, _ = numpy_steps(upd, ms=np.zeros_like(W0), mg=np.zeros_like(W0), mom=np.zeros_like(W0))
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_adam():
    got, opt, w = run_tw(tw.optimizers.Adam(0.1, beta_1=0.9, beta_2=0.999, epsilon=1e-8))

    def upd(w, g, t, s):
        lr_t = 0.1 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        s["m"] = 0.9 * s["m"] + 0.1 * g
        s["v"] = 0.999 * s["v"] + 0.001 * g * g
        return w - lr_t * s["m"] / (np.sqrt(s["v"]) + 1e-8)

    want, st = numpy_steps(upd, m=np.zeros_like(W0), v=np.zeros_like(W0))
    np.testing.assert_allclose(got, want, rtol=1e-10)
    np.testing.assert_allclose(opt.get_slot(w, "v").numpy(), st["v"], rtol=1e-10)
    assert opt.variables()[-1].numpy() == STEPS


@pytest.mark.parametrize("l1,l2", [(0.0, 0.0), (0.05, 0.1)])
def test_ftrl(l1, l2):
    got, _, _ = run_tw(tw.optimizers.Ftrl(0.2, learning_rate_power=-0.5,
                                          initial_accumulator_value=0.1,
                                          l1_regularization_strength=l1,
                                          l2_regularization_strength=l2))

    def upd(w, g, t, s):
        new_acc = s["acc"] + g * g
        sigma = (new_acc ** 0.5 - s["acc"] ** 0.5) / 0.2
        s["lin"] = s["lin"] + g - sigma * w
        quad = new_acc ** 0.5 / 0.2 + 2 * l2
        s["acc"] = new_acc
        return np.where(np.abs(s["lin"]) > l1, (np.sign(s["lin"]) * l1 - s["lin"]) / quad, 0.0)

    want, _ = numpy_steps(upd, acc=np.full_like(W0, 0.1), lin=np.zeros_like(W0))
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_slots_are_created_once_and_loss_decreases():
    opt = tw.optimizers.Adam(0.05)
    w = tw.Variable(np.ones(3), name="wd")

    @tw.compile
    def step(x):
        loss = tw.reduce_sum(tw.square(w * x - 1.0))
        opt.minimize(loss, var_list=[w])
        return loss

    x = np.array([1.0, 2.0, 3.0])
    losses = [float(step(x)) for _ in range(30)]
    assert losses[-1] < losses[0] * 0.2
    assert len(opt.variables()) == 3  # m, v and the step counter


def test_minimize_without_gradients_is_a_clear_error():
    w = tw.Variable(1.0, name="unused_w")

    @tw.compile
    def step(x):
        tw.optimizers.SGD(0.1).minimize(tw.reduce_sum(x * x), var_list=[w])
        return x

    with pytest.raises(tw.errors.CompileError, match="none of the variables"):
        step(np.ones(2))
