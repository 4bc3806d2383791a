"""AdamW, Nadam, Adam's amsgrad and the clipnorm / clipvalue / global_clipnorm arguments,
each against a NumPy transcription of Keras' documented rule, over several compiled steps
on every target; clipping on sparse (IndexedSlices) gradients as TensorFlow does it."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tests.helpers import TARGETS

STEPS = 6
C = np.array([[1.0, 2.0], [3.0, 0.5]])
TARGET = np.array([[1.0, 0.0], [0.0, 1.0]])
W0 = np.array([[0.5, -1.0], [2.0, 0.25]])
B0 = np.array([0.3, -0.7, 1.5])


def grads_of(w, b):
    """The gradients of ``sum(C * (w - TARGET)**2) + sum(b**2 * [1, 4, 9])``."""
    return 2 * C * (w - TARGET), 2 * b * np.array([1.0, 4.0, 9.0])


def run_tw(opt, target, steps=STEPS):
    """`steps` compiled training steps on two float64 variables; returns their values."""
    w = tw.Variable(W0.copy(), name="ox_w")
    b = tw.Variable(B0.copy(), name="ox_b")

    @tw.compile(target=target)
    def step():
        loss = (tw.reduce_sum(tw.square(w - TARGET) * C)
                + tw.reduce_sum(tw.square(b) * np.array([1.0, 4.0, 9.0])))
        opt.minimize(loss, var_list=[w, b])

    for _ in range(steps):
        step()
    assert step.tracing_count == 1
    return w.numpy(), b.numpy()


def np_run(update, clip=None, steps=STEPS):
    """The NumPy rule: ``update(var_index, var, grad, t, state)`` per variable and step,
    gradients clipped first by `clip(grads)`."""
    vs = [W0.copy(), B0.copy()]
    state = [{}, {}]
    for t in range(1, steps + 1):
        gs = list(grads_of(*vs))
        if clip is not None:
            gs = clip(gs)
        vs = [update(i, v, g, t, state[i]) for i, (v, g) in enumerate(zip(vs, gs))]
    return vs


def adam_update(lr, b1=0.9, b2=0.999, eps=1e-7, amsgrad=False, wd=0.0):
    def upd(i, v, g, t, s):
        v = v - lr * wd * v  # AdamW: decoupled decay first, on the variable as it was
        s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
        denom = s["v"]
        if amsgrad:
            s["vhat"] = np.maximum(s.get("vhat", 0.0), s["v"])
            denom = s["vhat"]
        lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        return v - lr_t * s["m"] / (np.sqrt(denom) + eps)
    return upd


def nadam_run(lr, b1=0.9, b2=0.999, eps=1e-7, steps=STEPS):
    """Keras' Nadam: the momentum cache u_t = b1 * (1 - 0.5 * 0.96**t) and its product."""
    vs = [W0.copy(), B0.copy()]
    ms, vv = [0.0, 0.0], [0.0, 0.0]
    u_product = 1.0
    for t in range(1, steps + 1):
        gs = grads_of(*vs)
        u_t = b1 * (1 - 0.5 * 0.96 ** t)
        u_next = b1 * (1 - 0.5 * 0.96 ** (t + 1))
        u_product = u_product * u_t
        for i, g in enumerate(gs):
            ms[i] = b1 * ms[i] + (1 - b1) * g
            vv[i] = b2 * vv[i] + (1 - b2) * g * g
            m_hat = ms[i] * u_next / (1 - u_product * u_next) + g * (1 - u_t) / (1 - u_product)
            v_hat = vv[i] / (1 - b2 ** t)
            vs[i] = vs[i] - lr * m_hat / (np.sqrt(v_hat) + eps)
    return vs, u_product


def close(got, want, rtol=1e-10):
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-13)


@pytest.mark.parametrize("target", TARGETS)
@settings(max_examples=4, deadline=None)
@given(lr=st.floats(1e-3, 0.2), wd=st.floats(0.0, 0.5), amsgrad=st.booleans())
def test_adamw(target, lr, wd, amsgrad):
    got = run_tw(tw.optimizers.AdamW(lr, weight_decay=wd, amsgrad=amsgrad), target)
    close(got, np_run(adam_update(lr, amsgrad=amsgrad, wd=wd)))


def test_adamw_default_decay_and_excluded_variables():
    opt = tw.optimizers.AdamW(0.05)
    assert opt.weight_decay == 0.004
    opt.exclude_from_weight_decay(var_names=["ox_b"])
    got = run_tw(opt, "reference")
    want_w = np_run(adam_update(0.05, wd=0.004))[0]
    want_b = np_run(adam_update(0.05, wd=0.0))[1]
    close(got, [want_w, want_b])


@pytest.mark.parametrize("target", TARGETS)
def test_adam_amsgrad(target):
    opt = tw.optimizers.Adam(0.1, amsgrad=True)
    got = run_tw(opt, target, steps=10)
    close(got, np_run(adam_update(0.1, amsgrad=True), steps=10))
    assert "vhat" in opt.get_slot_names()


@pytest.mark.parametrize("target", TARGETS)
@settings(max_examples=4, deadline=None)
@given(lr=st.floats(1e-3, 0.2), b1=st.floats(0.5, 0.95), b2=st.floats(0.9, 0.9999))
def test_nadam(target, lr, b1, b2):
    opt = tw.optimizers.Nadam(lr, beta_1=b1, beta_2=b2)
    got = run_tw(opt, target)
    want, u_product = nadam_run(lr, b1, b2)
    close(got, want)
    state = {v.shared_name.rsplit("/", 1)[-1]: v.numpy() for v in opt.variables()}
    assert state["iterations"] == STEPS
    np.testing.assert_allclose(state["u_product"], u_product, rtol=1e-12)


# ------------------------------------------------------------------------------ clipping

def np_clip_norm(gs, c):
    return [g * c / max(np.sqrt(np.sum(g * g)), c) for g in gs]


def np_clip_value(gs, c):
    return [np.clip(g, -c, c) for g in gs]


def np_clip_global(gs, c):
    norm = np.sqrt(sum(np.sum(g * g) for g in gs))
    return [g * c * min(1 / norm, 1 / c) for g in gs]


def sgd(lr):
    return lambda i, v, g, t, s: v - lr * g


def momentum(lr, mu):
    def upd(i, v, g, t, s):
        s["acc"] = mu * s.get("acc", 0.0) + g
        return v - lr * s["acc"]
    return upd


CLIPS = {"clipnorm": np_clip_norm, "clipvalue": np_clip_value, "global_clipnorm": np_clip_global}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", sorted(CLIPS))
@settings(max_examples=3, deadline=None)
@given(c=st.floats(0.05, 20.0))
def test_clipping_before_the_update(target, kind, c):
    clip = CLIPS[kind]
    got = run_tw(tw.optimizers.SGD(0.05, **{kind: c}), target)
    close(got, np_run(sgd(0.05), lambda gs: clip(gs, c)))
    got = run_tw(tw.optimizers.Adam(0.05, **{kind: c}), target)
    close(got, np_run(adam_update(0.05), lambda gs: clip(gs, c)))


def test_clipping_changes_the_result_when_it_should():
    # the rule's gradients are large at W0: small thresholds must bite (guards the test above)
    gs = list(grads_of(W0, B0))
    for kind, clip in CLIPS.items():
        clipped = clip(gs, 0.5)
        assert not all(np.allclose(a, b) for a, b in zip(clipped, gs)), kind
        got = run_tw(tw.optimizers.SGD(0.05, **{kind: 0.5}), "reference", steps=1)
        close(got, [v - 0.05 * g for v, g in zip((W0, B0), clipped)])


def test_only_one_clipping_argument_and_positive_values():
    with pytest.raises(ValueError, match="only one of clipnorm, clipvalue and global_clipnorm"):
        tw.optimizers.Adam(clipnorm=1.0, clipvalue=0.5)
    with pytest.raises(ValueError, match="clipvalue must be a positive number"):
        tw.optimizers.SGD(clipvalue=-1.0)


IDS = np.array([[0, 3], [3, 5]], np.int32)   # row 3 twice: its slices are not summed first


def sparse_values(table, ids, weights):
    """The IndexedSlices values of ``sum(gather(v, ids) * weights)``: one row per id."""
    return weights.reshape(-1, table.shape[1]).copy()


@pytest.mark.parametrize("kind", sorted(CLIPS))
@pytest.mark.parametrize("opt_name", ["SGD", "Momentum"])
def test_clipping_sparse_gradients_acts_on_their_values(kind, opt_name):
    rng = np.random.default_rng(3)
    table = rng.standard_normal((6, 3))
    weights = rng.standard_normal((2, 2, 3)) * 3
    dense_b = np.array([0.5, -2.0])
    c = 1.5
    v = tw.Variable(table.copy(), name=f"sp_{kind}_{opt_name}")
    b = tw.Variable(dense_b.copy(), name=f"spb_{kind}_{opt_name}")
    opt = (tw.optimizers.SGD(0.1, **{kind: c}) if opt_name == "SGD"
           else tw.optimizers.Momentum(0.1, 0.9, **{kind: c}))

    @tw.compile
    def step():
        loss = tw.reduce_sum(tw.gather(v, IDS) * weights) + tw.reduce_sum(tw.square(b))
        opt.minimize(loss, [v, b])

    want_v, want_b = table.copy(), dense_b.copy()
    acc_rows, acc_b = np.zeros_like(table), np.zeros_like(dense_b)
    for _ in range(3):
        step()
        values = sparse_values(table, IDS, weights)
        values, gb = CLIPS[kind]([values, 2 * want_b], c) if kind == "global_clipnorm" else (
            CLIPS[kind]([values], c)[0], CLIPS[kind]([2 * want_b], c)[0])
        flat = IDS.reshape(-1)
        if opt_name == "SGD":
            np.subtract.at(want_v, flat, 0.1 * values)
            want_b = want_b - 0.1 * gb
        else:  # TensorFlow's sparse momentum: duplicates summed, touched rows only
            summed = np.zeros_like(table)
            np.add.at(summed, flat, values)
            rows = np.unique(flat)
            acc_rows[rows] = 0.9 * acc_rows[rows] + summed[rows]
            want_v[rows] -= 0.1 * acc_rows[rows]
            acc_b = 0.9 * acc_b + gb
            want_b = want_b - 0.1 * acc_b
    np.testing.assert_allclose(v.numpy(), want_v, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(b.numpy(), want_b, rtol=1e-12, atol=1e-14)
    ops = {n.op for n in step.get_concrete_function().graph.nodes}
    assert "ResourceScatterSub" in ops  # still a sparse update


def test_v1_optimizers_keep_no_step_counter_unless_they_need_one():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.ones(2), name="v1_w")
        loss = tf.reduce_sum(v * v)
        sgd_opt = tf.train.GradientDescentOptimizer(0.1)
        sgd_opt.minimize(loss)
        adam = tf.train.AdamOptimizer(0.1)
        adam.minimize(loss)
    assert sgd_opt.iterations is None and sgd_opt.variables() == []
    assert adam.iterations is not None and adam.iterations.dtype is tw.int64
