"""The activations of ``tw.nn`` (and Erf, Expm1 under them) against NumPy: values on
random inputs, eagerly and traced on every target; gradients against finite differences
in float64 on every target; TensorFlow's gradients at the kinks; stability at extremes;
and one fused loop each on the cpu target."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import erf as np_erf

import tensorweave as tw
from tensorweave.compiler.pipeline import run_pipeline
from tests.grads.strategies import seeds, small_shapes, values
from tests.helpers import TARGETS, check_against_numpy, check_gradients
from tests.ops.test_math import F16, F32, F64, SHAPES, arrays

ALPHA = 1.6732632423543772848170429916717
SCALE = 1.0507009873554804934193349852946


def _in_f64(fn):
    """A NumPy reference computed in float64 and rounded once to the input's dtype."""
    return lambda a, *rest: np.asarray(fn(a.astype(F64), *[r.astype(F64) for r in rest])
                                       ).astype(a.dtype)


def _gelu_tanh(a):
    return 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))


ACTIVATIONS = {  # name: (tw function, NumPy reference in float64)
    "relu6": (tw.nn.relu6, lambda a: np.minimum(np.maximum(a, 0), 6)),
    "elu": (tw.nn.elu, lambda a: np.where(a >= 0, a, np.expm1(np.minimum(a, 0)))),
    "selu": (tw.nn.selu, lambda a: SCALE * np.where(a >= 0, a, ALPHA * np.expm1(np.minimum(a, 0)))),
    "softplus": (tw.nn.softplus, lambda a: np.logaddexp(0, a)),
    "softsign": (tw.nn.softsign, lambda a: a / (1 + np.abs(a))),
    "leaky_relu": (tw.nn.leaky_relu, lambda a: np.where(a > 0, a, 0.2 * a)),
    "gelu": (tw.nn.gelu, lambda a: 0.5 * a * (1 + np_erf(a / math.sqrt(2)))),
    "gelu_tanh": (lambda x: tw.nn.gelu(x, approximate=True), _gelu_tanh),
    "silu": (tw.nn.silu, lambda a: a / (1 + np.exp(-a))),
    "swish": (tw.nn.swish, lambda a: a / (1 + np.exp(-a))),
    "silu_beta": (lambda x: tw.nn.silu(x, beta=1.5), lambda a: a / (1 + np.exp(-1.5 * a))),
    "erf": (tw.erf, np_erf),
    "expm1": (tw.expm1, np.expm1),
    "math.softplus": (tw.math.softplus, lambda a: np.logaddexp(0, a)),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@given(data=st.data())
def test_activation_matches_numpy(name, data):
    tw_fn, np_fn = ACTIVATIONS[name]
    dtype = data.draw(st.sampled_from([F32, F64, F16]))
    x = data.draw(arrays(dtype, SHAPES, -8, 8))
    check_against_numpy(tw_fn, _in_f64(np_fn), x)


@given(data=st.data())
def test_sigmoid_cross_entropy_matches_numpy(data):
    dtype = data.draw(st.sampled_from([F32, F64]))
    shape = data.draw(SHAPES)
    x = data.draw(arrays(dtype, shape, -8, 8))
    z = data.draw(arrays(dtype, shape, 0, 1))

    def reference(a, b):
        p = 1 / (1 + np.exp(-a))
        return -b * np.log(p) - (1 - b) * np.log1p(-p)

    check_against_numpy(lambda a, b: tw.nn.sigmoid_cross_entropy_with_logits(labels=b, logits=a),
                        _in_f64(reference), x, z)


# ------------------------------------------------------------------------------ gradients

DIFFERENTIABLE = {  # name: (function, domain away from its kinks)
    "relu6": (tw.nn.relu6, "relu6"),
    "elu": (tw.nn.elu, "nonzero"),
    "selu": (tw.nn.selu, "nonzero"),
    "softplus": (tw.nn.softplus, "any"),
    "softsign": (tw.nn.softsign, "nonzero"),
    "leaky_relu": (tw.nn.leaky_relu, "nonzero"),
    "gelu": (tw.nn.gelu, "any"),
    "gelu_tanh": (lambda x: tw.nn.gelu(x, approximate=True), "any"),
    "silu": (tw.nn.silu, "any"),
    "erf": (tw.erf, "any"),
    "expm1": (tw.expm1, "any"),
}


def _domain(seed, shape, domain):
    if domain == "relu6":  # scaled so that some values exceed 6, none near 0 or 6
        x = values(seed, shape, "nonzero") * 4.0
        return np.where(np.abs(x - 6) < 0.3, x + 0.6, x)
    return values(seed, shape, domain)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
@given(shape=small_shapes(), seed=seeds)
def test_activation_gradient_matches_finite_differences(name, target, shape, seed):
    fn, domain = DIFFERENTIABLE[name]
    check_gradients(fn, _domain(seed, shape, domain), target=target)


@pytest.mark.parametrize("target", TARGETS)
@given(shape=small_shapes(), seed=seeds, seed2=seeds)
def test_sigmoid_cross_entropy_gradient_matches_finite_differences(target, shape, seed, seed2):
    x = values(seed, shape)
    z = np.random.default_rng(seed2).uniform(0, 1, shape)
    check_gradients(lambda a, b: tw.nn.sigmoid_cross_entropy_with_logits(labels=b, logits=a),
                    x, z, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_gradients_at_the_kinks_are_tensorflows(target):
    x = np.array([-1.0, 0.0, 3.0, 6.0, 7.0])

    def grad(fn):
        return tw.compile(tw.grad(lambda t: tw.reduce_sum(fn(t))), target=target)(x)

    np.testing.assert_allclose(grad(tw.nn.relu6), [0, 0, 1, 0, 0])
    np.testing.assert_allclose(grad(tw.nn.elu)[1], 1.0)
    np.testing.assert_allclose(grad(tw.nn.selu)[1], SCALE)
    np.testing.assert_allclose(grad(tw.nn.softplus), 1 / (1 + np.exp(-x)), rtol=1e-12)
    np.testing.assert_allclose(grad(tw.nn.leaky_relu)[:2], [0.2, 0.2])
    np.testing.assert_allclose(grad(tw.nn.softsign)[1], 1.0)
    g = tw.compile(tw.grad(lambda t: tw.reduce_sum(tw.nn.sigmoid_cross_entropy_with_logits(
        labels=np.full(5, 0.25), logits=t))), target=target)(x)
    np.testing.assert_allclose(g, 1 / (1 + np.exp(-x)) - 0.25, rtol=1e-12)


# ---------------------------------------------------------------------- stability, fusion

@pytest.mark.parametrize("target", TARGETS)
def test_extreme_inputs_stay_finite_and_gradients_are_not_nan(target):
    x = np.array([-1e4, -100.0, -30.0, 30.0, 100.0, 1e4], np.float32)
    sp = tw.compile(tw.nn.softplus, target=target)(x)
    np.testing.assert_allclose(sp, np.logaddexp(0, x.astype(F64)).astype(F32), rtol=1e-6)
    for fn in (tw.nn.softplus, tw.nn.elu, tw.nn.selu, tw.nn.silu, tw.nn.gelu,
               lambda t: tw.nn.sigmoid_cross_entropy_with_logits(labels=np.ones(6, F32),
                                                                 logits=t)):
        out, g = tw.compile(tw.value_and_grad(lambda t, f=fn: tw.reduce_sum(f(t))),
                            target=target)(x)
        assert np.all(np.isfinite(g)), g
    assert np.isnan(tw.compile(tw.nn.softplus, target=target)(np.float32(np.nan)))
    assert np.isnan(tw.compile(tw.nn.relu6, target=target)(np.float32(np.nan)))


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_each_activation_is_one_fused_loop_on_the_cpu_target(name):
    fn = ACTIVATIONS[name][0]
    cf = tw.compile(fn, target="cpu").get_concrete_function(np.ones((4, 3), F32))
    ops = [n.op for n in run_pipeline(cf.graph, "fused").nodes if n.op != "Const"]
    assert ops == ["Fusion"], ops


def test_integer_inputs_follow_tensorflow():
    assert tw.nn.relu6(np.array([-3, 4, 9], np.int32)).numpy().tolist() == [0, 4, 6]
    out = tw.nn.leaky_relu(np.array([-5, 5], np.int32))
    assert out.dtype is tw.float32 and out.numpy().tolist() == [-1.0, 5.0]
    with pytest.raises(tw.errors.DTypeError):
        tw.nn.gelu(np.array([1, 2], np.int32))


def test_sigmoid_cross_entropy_checks_shapes():
    with pytest.raises(tw.errors.ShapeError, match="same shape"):
        tw.nn.sigmoid_cross_entropy_with_logits(labels=np.ones(3, F32), logits=np.ones(4, F32))
    with pytest.raises(ValueError, match="labels= and logits="):
        tw.nn.sigmoid_cross_entropy_with_logits(np.ones(3, F32))


def test_v1_nn_has_the_activations_in_graph_mode():
    from tensorweave.compat import v1
    g = v1.Graph()
    with g.as_default():
        x = v1.placeholder(v1.float32, [None])
        y = v1.nn.gelu(x) + v1.nn.softplus(x) + v1.nn.relu6(x)
    with v1.Session(graph=g) as sess:
        a = np.array([-1.0, 0.5, 7.0], F32)
        expected = (0.5 * a * (1 + np_erf(a / math.sqrt(2))) + np.logaddexp(0, a)
                    + np.clip(a, 0, 6))
        np.testing.assert_allclose(sess.run(y, {x: a}), expected, rtol=1e-5)
