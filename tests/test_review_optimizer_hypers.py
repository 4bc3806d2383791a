"""Adversarial review: an optimizer hyperparameter changed after a `tw.compile` step
traced its update must change that step's update, as it does an eager step's (and as a
Keras optimizer's hyperparameters, variables, do in a ``tf.function``). Before, the
trace kept the old number: ``opt.learning_rate = 0.5`` between two compiled steps went on
updating with 0.1."""

import numpy as np
import pytest

import tensorweave as tw

pytestmark = pytest.mark.filterwarnings("ignore::tensorweave.errors.RetracingWarning")


def _sgd_step(w, opt):
    @tw.compile
    def step(g):
        opt.apply_gradients([(g, w)])
        return w.read_value()
    return step


def test_learning_rate_set_between_compiled_steps_takes_effect():
    w = tw.Variable(np.float32([1.0, 1.0]), name="review_hyper_w")
    opt = tw.optimizers.SGD(0.1)
    step = _sgd_step(w, opt)
    g = np.float32([1.0, 2.0])
    want = np.float32([1.0, 1.0])
    # several calls per rate: later calls of one signature take the fast (and native)
    # paths, which must not keep answering with the old trace either
    for lr in [0.1, 0.5, 0.25]:
        opt.learning_rate = lr
        for _ in range(3):
            got = step(g)
            want = want - np.float32(lr) * g
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"lr={lr}")
    assert step.experimental_get_tracing_count() == 3


def test_setting_an_equal_value_keeps_the_trace():
    w = tw.Variable(np.float32([1.0]), name="review_hyper_same")
    opt = tw.optimizers.SGD(0.1)
    step = _sgd_step(w, opt)
    g = np.float32([1.0])
    step(g)
    opt.learning_rate = 0.1
    step(g)
    assert step.experimental_get_tracing_count() == 1
    np.testing.assert_allclose(w.numpy(), [0.8], rtol=1e-6)


def test_compiled_and_eager_adam_agree_when_hyperparameters_change():
    g = np.float32([0.5, -1.0, 2.0])
    w_eager = tw.Variable(np.float32([1.0, 2.0, 3.0]), name="review_hyper_eager")
    w_comp = tw.Variable(np.float32([1.0, 2.0, 3.0]), name="review_hyper_comp")
    opt_eager = tw.optimizers.Adam(0.1)
    opt_comp = tw.optimizers.Adam(0.1)
    step = _sgd_step(w_comp, opt_comp)
    for k, (lr, beta_1) in enumerate([(0.1, 0.9), (0.01, 0.9), (0.01, 0.5), (0.3, 0.5)]):
        for opt in (opt_eager, opt_comp):
            opt.learning_rate, opt.beta_1 = lr, beta_1
        for _ in range(2):
            opt_eager.apply_gradients([(g * (k + 1), w_eager)])
            step(g * (k + 1))
        np.testing.assert_allclose(w_comp.numpy(), w_eager.numpy(), rtol=1e-6,
                                   err_msg=f"lr={lr}, beta_1={beta_1}")


def test_adamw_exclusion_after_trace_takes_effect():
    w = tw.Variable(np.float32([1.0]), name="review_hyper_decayed")
    opt = tw.optimizers.AdamW(0.1, weight_decay=0.5)
    step = _sgd_step(w, opt)
    g = np.float32([0.0])  # no Adam step: only the decay moves w
    np.testing.assert_allclose(step(g), [0.95], rtol=1e-6)
    opt.exclude_from_weight_decay(var_list=[w])
    np.testing.assert_allclose(step(g), [0.95], rtol=1e-6)


def test_a_trace_per_function_each_notified():
    w = tw.Variable(np.float32([0.0]), name="review_hyper_two")
    opt = tw.optimizers.SGD(1.0)
    step_a, step_b = _sgd_step(w, opt), _sgd_step(w, opt)
    g = np.float32([1.0])
    step_a(g)
    step_b(g)
    opt.learning_rate = 2.0
    np.testing.assert_allclose(step_a(g), [-4.0])
    np.testing.assert_allclose(step_b(g), [-6.0])


def test_the_retrace_says_why():
    w = tw.Variable(np.float32([0.0]), name="review_hyper_reason")
    opt = tw.optimizers.SGD(1.0)
    step = _sgd_step(w, opt)
    step(np.float32([1.0]))
    opt.learning_rate = 3.0
    step(np.float32([1.0]))
    assert "optimizer's hyperparameter" in step.retrace_reasons[-1]


def test_a_concrete_function_held_by_the_caller_refuses_to_run_stale():
    w = tw.Variable(np.float32([0.0]), name="review_hyper_concrete")
    opt = tw.optimizers.SGD(1.0)
    step = _sgd_step(w, opt)
    cf = step.get_concrete_function(np.float32([1.0]))
    np.testing.assert_allclose(cf(np.float32([1.0])), [-1.0])
    opt.learning_rate = 2.0
    with pytest.raises(tw.errors.TracingError, match="out of date"):
        cf(np.float32([1.0]))
    np.testing.assert_allclose(step.get_concrete_function(np.float32([1.0]))(
        np.float32([1.0])), [-3.0])
