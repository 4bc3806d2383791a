"""Learning-rate schedules (tw.optimizers.schedules) against NumPy transcriptions of
TensorFlow's documented formulas, eagerly and traced on every target, and evaluated at the
optimizer's step inside one compiled training step (no retracing as the step grows)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tests.helpers import TARGETS

S = tw.optimizers.schedules
STEPS = np.array([0, 1, 2, 5, 9, 10, 11, 17, 30, 99, 1000], np.int64)


def np_exponential(step, lr, decay_steps, rate, staircase):
    p = step / decay_steps
    return lr * rate ** (np.floor(p) if staircase else p)


def np_piecewise(step, boundaries, values):
    # values[0] while step <= b[0], values[i] while b[i-1] < step <= b[i], then values[-1]
    for b, v in zip(boundaries, values):
        if step <= b:
            return v
    return values[-1]


def np_cosine(step, lr, decay_steps, alpha, warmup_target=None, warmup_steps=0):
    def decay(s, start):
        return start * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * s / decay_steps)) + alpha)
    if warmup_target is None:
        return decay(min(step, decay_steps), lr)
    s = min(step, decay_steps + warmup_steps)
    if s < warmup_steps:
        return (warmup_target - lr) * s / warmup_steps + lr
    return decay(s - warmup_steps, warmup_target)


def np_polynomial(step, lr, decay_steps, end, power, cycle):
    if cycle:
        decay_steps = decay_steps * (1.0 if step == 0 else math.ceil(step / decay_steps))
    else:
        step = min(step, decay_steps)
    return (lr - end) * (1 - step / decay_steps) ** power + end


def np_inverse_time(step, lr, decay_steps, rate, staircase):
    p = step / decay_steps
    return lr / (1 + rate * (math.floor(p) if staircase else p))


def check_schedule(schedule, expected_fn, steps=STEPS, rtol=2e-5, atol=1e-9):
    """`schedule` at each step, eagerly and compiled on every target (one trace for all
    steps), equals `expected_fn(step)` within float32 rounding (a power like
    ``rate ** (step / decay_steps)`` at step 1000 loses ~1e-6 relative in float32)."""
    want = np.array([expected_fn(int(s)) for s in steps], np.float64)
    eager = np.array([float(schedule(int(s))) for s in steps])
    np.testing.assert_allclose(eager, want, rtol=rtol, atol=atol)
    for target in TARGETS:
        fn = tw.compile(lambda step: schedule(step), target=target)
        got = np.array([fn(np.int64(s)) for s in steps], np.float64)
        assert fn.tracing_count == 1, target
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=target)


@settings(max_examples=8, deadline=None)
@given(lr=st.floats(1e-4, 1.0), decay_steps=st.integers(1, 50), rate=st.floats(0.1, 0.99),
       staircase=st.booleans())
def test_exponential_decay(lr, decay_steps, rate, staircase):
    check_schedule(S.ExponentialDecay(lr, decay_steps, rate, staircase),
                   lambda s: np_exponential(s, lr, decay_steps, rate, staircase))


@settings(max_examples=8, deadline=None)
@given(bounds=st.lists(st.integers(0, 100), min_size=1, max_size=4, unique=True),
       data=st.data())
def test_piecewise_constant_decay(bounds, data):
    bounds = sorted(bounds)
    values = data.draw(st.lists(st.floats(1e-3, 1.0), min_size=len(bounds) + 1,
                                max_size=len(bounds) + 1))
    steps = np.array(sorted({0, *bounds, *[b + 1 for b in bounds], 1000}), np.int64)
    check_schedule(S.PiecewiseConstantDecay(bounds, values),
                   lambda s: np.float32(np_piecewise(s, bounds, values)), steps)


@settings(max_examples=8, deadline=None)
@given(lr=st.floats(1e-3, 1.0), decay_steps=st.integers(1, 40), alpha=st.floats(0.0, 0.5),
       warmup=st.one_of(st.none(), st.tuples(st.floats(1e-3, 1.0), st.integers(0, 20))))
def test_cosine_decay(lr, decay_steps, alpha, warmup):
    if warmup is None:
        schedule = S.CosineDecay(lr, decay_steps, alpha)
        check_schedule(schedule, lambda s: np_cosine(s, lr, decay_steps, alpha), rtol=1e-5)
    else:
        target, wsteps = warmup
        schedule = S.CosineDecay(lr, decay_steps, alpha, warmup_target=target,
                                 warmup_steps=wsteps)
        check_schedule(schedule, lambda s: np_cosine(s, lr, decay_steps, alpha, target, wsteps),
                       rtol=1e-5)


@settings(max_examples=8, deadline=None)
@given(lr=st.floats(0.01, 1.0), decay_steps=st.integers(1, 40), end=st.floats(0.0, 0.009),
       power=st.floats(0.5, 3.0), cycle=st.booleans())
def test_polynomial_decay(lr, decay_steps, end, power, cycle):
    check_schedule(S.PolynomialDecay(lr, decay_steps, end, power, cycle),
                   lambda s: np_polynomial(s, lr, decay_steps, end, power, cycle), rtol=1e-5,
                   # 1 - step / (decay_steps * cycles) cancels: float32 rounding of the
                   # quotient (~6e-8) is absolute in units of the learning rate
                   atol=1e-6 * max(lr, end))


@settings(max_examples=8, deadline=None)
@given(lr=st.floats(1e-4, 1.0), decay_steps=st.integers(1, 50), rate=st.floats(0.01, 2.0),
       staircase=st.booleans())
def test_inverse_time_decay(lr, decay_steps, rate, staircase):
    check_schedule(S.InverseTimeDecay(lr, decay_steps, rate, staircase),
                   lambda s: np_inverse_time(s, lr, decay_steps, rate, staircase))


def test_float64_learning_rate_computes_in_float64():
    x = S.ExponentialDecay(np.float64(0.1), 3, 0.5)(7)
    assert x.dtype is tw.float64
    assert float(x) == pytest.approx(0.1 * 0.5 ** (7 / 3), rel=1e-14)


def test_config_round_trip_and_bad_arguments():
    for sched in (S.ExponentialDecay(0.1, 10, 0.9, True), S.PiecewiseConstantDecay([5], [1., .1]),
                  S.CosineDecay(0.1, 100, 0.1, warmup_target=0.2, warmup_steps=5),
                  S.PolynomialDecay(0.1, 10, 0.01, 2.0, True), S.InverseTimeDecay(0.1, 10, 0.5)):
        again = S.deserialize(S.serialize(sched))
        assert type(again) is type(sched) and again.get_config() == sched.get_config()
        for step in (0, 3, 12, 200):
            assert float(again(step)) == float(sched(step))
    with pytest.raises(ValueError, match="1 less than the length of values"):
        S.PiecewiseConstantDecay([1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="increasing"):
        S.PiecewiseConstantDecay([5, 2], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="decay_steps must be > 0"):
        S.ExponentialDecay(0.1, 0, 0.5)
    with pytest.raises(ValueError, match="unknown learning-rate schedule"):
        S.deserialize({"class_name": "Nope", "config": {}})


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("opt_name", ["SGD", "Momentum", "Adam"])
def test_optimizer_evaluates_the_schedule_at_its_step_without_retracing(target, opt_name):
    schedule = S.PiecewiseConstantDecay([2, 4], [0.1, 0.01, 0.001])
    opt = {"SGD": lambda: tw.optimizers.SGD(schedule),
           "Momentum": lambda: tw.optimizers.Momentum(schedule, momentum=0.5),
           "Adam": lambda: tw.optimizers.Adam(schedule, epsilon=1e-8)}[opt_name]()
    w = tw.Variable(np.array([1.0, -2.0, 3.0]), name="sched_w")

    @tw.compile(target=target)
    def step():
        opt.minimize(tw.reduce_sum(tw.square(w) * np.array([1.0, 2.0, 0.5])), var_list=[w])

    want = np.array([1.0, -2.0, 3.0])
    acc, m, v = np.zeros(3), np.zeros(3), np.zeros(3)
    for t in range(7):
        step()
        g = 2 * want * np.array([1.0, 2.0, 0.5])
        lr = np.float64(np.float32(np_piecewise(t, [2, 4], [0.1, 0.01, 0.001])))
        if opt_name == "SGD":
            want = want - lr * g
        elif opt_name == "Momentum":
            acc = 0.5 * acc + g
            want = want - lr * acc
        else:
            m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
            lr_t = lr * np.sqrt(1 - 0.999 ** (t + 1)) / (1 - 0.9 ** (t + 1))
            want = want - lr_t * m / (np.sqrt(v) + 1e-8)
    np.testing.assert_allclose(w.numpy(), want, rtol=1e-12)
    assert step.tracing_count == 1
    assert opt.iterations.numpy() == 7 and opt.iterations.dtype is tw.int64


def test_tf1_decay_functions_are_tensors_of_the_global_step():
    import tensorweave.compat.v1 as tf

    g = tf.Graph()
    with g.as_default():
        step = tf.train.get_or_create_global_step()
        w = tf.Variable(np.array([1.0, -2.0]), name="v1_sched_w")
        rates = {
            "exp": tf.train.exponential_decay(0.1, step, 3, 0.5, staircase=True),
            "piece": tf.train.piecewise_constant(step, [2, 4], [0.1, 0.05, 0.01]),
            "cos": tf.train.cosine_decay(0.1, step, 5, alpha=0.2),
            "poly": tf.train.polynomial_decay(0.1, step, 4, 0.01, power=2.0),
            "inv": tf.train.inverse_time_decay(0.1, step, 2, 0.5),
        }
        train = tf.train.GradientDescentOptimizer(rates["exp"]).minimize(
            tf.reduce_sum(w * w), global_step=step)
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        want_w = np.array([1.0, -2.0])
        for t in range(7):
            got = sess.run(rates)
            np.testing.assert_allclose(got["exp"], np_exponential(t, 0.1, 3, 0.5, True), rtol=1e-6)
            np.testing.assert_allclose(got["piece"], np_piecewise(t, [2, 4], [0.1, 0.05, 0.01]),
                                       rtol=1e-6)
            np.testing.assert_allclose(got["cos"], np_cosine(t, 0.1, 5, 0.2), rtol=1e-5)
            np.testing.assert_allclose(got["poly"], np_polynomial(t, 0.1, 4, 0.01, 2.0, False),
                                       rtol=1e-5)
            np.testing.assert_allclose(got["inv"], np_inverse_time(t, 0.1, 2, 0.5, False),
                                       rtol=1e-6)
            sess.run(train)
            want_w = want_w - np.float32(np_exponential(t, 0.1, 3, 0.5, True)) * 2 * want_w
        np.testing.assert_allclose(sess.run(w), want_w, rtol=1e-12)
        assert sess.run(step) == 7
    with pytest.raises(ValueError, match="global_step is required for exponential_decay"):
        tf.train.exponential_decay(0.1, None, 3, 0.5)
