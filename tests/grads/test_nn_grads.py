"""The nn family's gradients (tensorweave/frontend/grads/nn.py) against central finite
differences in float64: softmax and cross entropies, Conv2D and its two gradient ops,
pooling and its gradient ops, bias addition and the L2 loss, plus second-order paths
(a gradient differentiated again) and a graph traced with an unknown batch dim.

Sizes stay tiny (batch <= 2, spatial <= 5, channels <= 3) because every element of every
argument costs two forward runs."""

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import tensorweave as tw
from tests.helpers import check_gradients

F64 = np.float64


def values(shape, bound: float = 2.0):
    """float64 arrays of `shape` with moderate values (finite differences stay accurate)."""
    return hnp.arrays(F64, shape, elements=st.floats(-bound, bound, allow_subnormal=False))


@st.composite
def distinct_values(draw, shape):
    """Values at least 0.05 apart (a scaled permutation), so that a max-pool window has
    one maximum and a finite-difference step never changes which element it is."""
    size = int(np.prod(shape))
    perm = np.array(draw(st.permutations(range(size))), dtype=F64)
    return ((perm - size / 2) * 0.05).reshape(shape)


def softmax_probabilities(z: np.ndarray) -> np.ndarray:
    """A probability distribution along the last axis (valid cross-entropy labels)."""
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# ----------------------------------------------------------------- softmax family

small_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3)


@st.composite
def array_and_axis(draw):
    shape = draw(small_shapes)
    return draw(values(shape)), draw(st.integers(-len(shape), len(shape) - 1))


@given(array_and_axis())
def test_softmax(case):
    x, axis = case
    check_gradients(lambda x: tw.nn.softmax(x, axis=axis), x)


@given(array_and_axis())
def test_log_softmax(case):
    x, axis = case
    check_gradients(lambda x: tw.nn.log_softmax(x, axis=axis), x)


@st.composite
def logits_and_labels(draw):
    """(logits, dense labels that sum to 1 along `axis`, axis)."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    logits = draw(values(shape))
    labels = np.moveaxis(softmax_probabilities(np.moveaxis(draw(values(shape)), axis, -1)),
                         -1, axis)
    return logits, labels, axis


@given(logits_and_labels())
def test_softmax_cross_entropy_wrt_logits_and_labels(case):
    logits, labels, axis = case
    check_gradients(lambda z, y: tw.nn.softmax_cross_entropy_with_logits(
        labels=y, logits=z, axis=axis), logits, labels)


@st.composite
def logits_and_class_ids(draw):
    batch = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    classes = draw(st.integers(1, 4))
    logits = draw(values((*batch, classes)))
    dtype = draw(st.sampled_from([np.int32, np.int64]))
    ids = draw(hnp.arrays(dtype, batch, elements=st.integers(0, classes - 1)))
    return logits, ids


@given(logits_and_class_ids())
def test_sparse_softmax_cross_entropy(case):
    logits, ids = case
    check_gradients(lambda z, y: tw.nn.sparse_softmax_cross_entropy_with_logits(
        labels=y, logits=z), logits, ids)


@given(logits_and_labels())
def test_softmax_cross_entropy_second_order(case):
    # Differentiating the gradient goes through the op's backprop output (the Hessian).
    logits, labels, _ = case
    weights = np.linspace(0.5, 1.5, labels[..., 0].size).reshape(labels.shape[:-1])

    def grad_wrt_logits(z, y):
        def loss(z):
            return tw.reduce_sum(tw.nn.softmax_cross_entropy_with_logits(labels=y, logits=z)
                                 * weights)
        return tw.grad(loss)(z)

    check_gradients(grad_wrt_logits, logits, labels)


@given(logits_and_class_ids())
def test_sparse_softmax_cross_entropy_second_order(case):
    logits, ids = case

    def grad_wrt_logits(z):
        return tw.grad(lambda z: tw.reduce_sum(tw.square(
            tw.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=z))))(z)

    check_gradients(grad_wrt_logits, logits)


# -------------------------------------------------------------------- convolution

@st.composite
def conv_cases(draw):
    """(input shape, filter shape, conv2d keyword arguments) with a non-empty output."""
    n, cin, cout = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 3))
    h, w = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    assume(n * h * w * cin <= 40)
    padding = draw(st.sampled_from(["SAME", "VALID", "EXPLICIT"]))
    pads = [draw(st.integers(0, 2)) for _ in range(4)] if padding == "EXPLICIT" else [0] * 4
    strides = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    dilations = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    kernel = []
    for size, lo, hi, d in ((h, pads[0], pads[1], dilations[0]), (w, pads[2], pads[3], dilations[1])):
        # VALID and EXPLICIT need the dilated window to fit the padded input; SAME pads.
        limit = 3 if padding == "SAME" else min(3, (size + lo + hi - 1) // d + 1)
        kernel.append(draw(st.integers(1, limit)))
    pad_arg = ([[0, 0], pads[:2], pads[2:], [0, 0]] if padding == "EXPLICIT" else padding)
    kwargs = {"strides": strides, "padding": pad_arg, "dilations": dilations}
    return (n, h, w, cin), (*kernel, cin, cout), kwargs


def conv_output_shape(x_shape, w_shape, kwargs) -> tuple[int, ...]:
    return tuple(tw.nn.conv2d(np.zeros(x_shape), np.zeros(w_shape), **kwargs).shape)


@given(conv_cases(), st.data())
def test_conv2d(case, data):
    x_shape, w_shape, kwargs = case
    x, w = data.draw(values(x_shape)), data.draw(values(w_shape))
    check_gradients(lambda x, w: tw.nn.conv2d(x, w, **kwargs), x, w)


@given(conv_cases(), st.data())
def test_conv2d_backprop_input(case, data):
    # The gradient op differentiated again: w.r.t. the filter and the incoming gradient.
    x_shape, w_shape, kwargs = case
    w = data.draw(values(w_shape))
    dy = data.draw(values(conv_output_shape(x_shape, w_shape, kwargs)))
    check_gradients(lambda w, dy: tw.nn.conv2d_backprop_input(x_shape, w, dy, **kwargs), w, dy)


@given(conv_cases(), st.data())
def test_conv2d_backprop_filter(case, data):
    x_shape, w_shape, kwargs = case
    x = data.draw(values(x_shape))
    dy = data.draw(values(conv_output_shape(x_shape, w_shape, kwargs)))
    check_gradients(lambda x, dy: tw.nn.conv2d_backprop_filter(x, w_shape, dy, **kwargs), x, dy)


@given(conv_cases(), st.data())
def test_conv2d_double_backprop(case, data):
    # Conv2D's own gradient graph (Conv2DBackpropInput with the input_like operand, and
    # Conv2DBackpropFilter) differentiated w.r.t. both the input and the filter.
    x_shape, w_shape, kwargs = case
    x, w = data.draw(values(x_shape)), data.draw(values(w_shape))

    def loss(x, w):
        return tw.reduce_sum(tw.sin(tw.nn.conv2d(x, w, **kwargs)))

    check_gradients(lambda x, w: tw.grad(loss, argnums=0)(x, w), x, w)
    check_gradients(lambda x, w: tw.grad(loss, argnums=1)(x, w), x, w)


# ------------------------------------------------------------------------ pooling

@st.composite
def pool_cases(draw):
    """(input shape, pooling keyword arguments) with a non-empty output."""
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    h, w = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    assume(n * h * w * c <= 40)
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    limit = (3, 3) if padding == "SAME" else (min(3, h), min(3, w))  # VALID: window fits
    ksize = (draw(st.integers(1, limit[0])), draw(st.integers(1, limit[1])))
    strides = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    return (n, h, w, c), {"ksize": ksize, "strides": strides, "padding": padding}


def pool_output_shape(x_shape, kwargs) -> tuple[int, ...]:
    return tuple(tw.nn.avg_pool2d(np.zeros(x_shape), **kwargs).shape)


@given(pool_cases(), st.data())
def test_max_pool(case, data):
    x_shape, kwargs = case
    x = data.draw(distinct_values(x_shape))
    check_gradients(lambda x: tw.nn.max_pool2d(x, **kwargs), x)


@given(pool_cases(), st.data())
def test_max_pool_grad_wrt_incoming_gradient(case, data):
    x_shape, kwargs = case
    x = data.draw(distinct_values(x_shape))
    y = np.asarray(tw.nn.max_pool2d(x, **kwargs))
    g = data.draw(values(y.shape))
    check_gradients(lambda g: tw.nn.max_pool_grad(x, y, g, **kwargs), g)


@given(pool_cases(), st.data())
def test_max_pool_double_backprop(case, data):
    # The second derivative flows through MaxPoolGrad's incoming gradient (the cube's
    # derivative depends on the pooled values).
    x_shape, kwargs = case
    x = data.draw(distinct_values(x_shape))

    def loss(x):
        return tw.reduce_sum(tw.nn.max_pool2d(x, **kwargs) ** 3)

    check_gradients(lambda x: tw.grad(loss)(x), x)


@given(pool_cases(), st.data())
def test_avg_pool(case, data):
    x_shape, kwargs = case
    x = data.draw(values(x_shape))
    check_gradients(lambda x: tw.nn.avg_pool2d(x, **kwargs), x)


@given(pool_cases(), st.data())
def test_avg_pool_grad(case, data):
    x_shape, kwargs = case
    g = data.draw(values(pool_output_shape(x_shape, kwargs)))
    check_gradients(lambda g: tw.nn.avg_pool_grad(x_shape, g, **kwargs), g)


# ----------------------------------------------------------------- bias and losses

@st.composite
def value_and_bias(draw):
    shape = draw(hnp.array_shapes(min_dims=2, max_dims=4, min_side=1, max_side=3))
    return draw(values(shape)), draw(values(shape[-1:]))


@given(value_and_bias())
def test_bias_add(case):
    value, bias = case
    check_gradients(tw.nn.bias_add, value, bias)


@given(value_and_bias())
def test_bias_add_grad(case):
    value, _ = case
    check_gradients(tw.nn.bias_add_grad, value)


@given(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3).flatmap(values))
def test_l2_loss(t):
    check_gradients(tw.nn.l2_loss, t)


# ------------------------------------------------------------- size-0 dimensions

EMPTY = np.zeros((2, 0, 3, 1))
FILTER = np.arange(4.0).reshape(2, 2, 1, 1)


def max_pool_cubed_grad(x):
    return tw.grad(lambda x: tw.reduce_sum(tw.nn.max_pool2d(x, 2, 2, "SAME") ** 3))(x)


@pytest.mark.parametrize("fn, args", [
    (lambda x: tw.nn.max_pool2d(x, 2, 2, "SAME"), [EMPTY]),
    (max_pool_cubed_grad, [EMPTY]),
    (lambda x: tw.nn.avg_pool2d(x, 2, 1, "SAME"), [EMPTY]),
    (lambda x, w: tw.nn.conv2d(x, w, strides=2, padding="SAME"), [EMPTY, FILTER]),
    (lambda x: tw.nn.bias_add(x, np.ones(1)), [EMPTY]),
    (lambda x: tw.nn.softmax(x, axis=1), [EMPTY]),
], ids=["max_pool", "max_pool_second_order", "avg_pool", "conv2d", "bias_add", "softmax"])
def test_size_zero_dims(fn, args):
    check_gradients(fn, *args)


# -------------------------------------------------------- unknown batch dimension

def small_convnet_loss(x, w, b, labels):
    """conv -> bias -> tanh -> max pool -> avg pool -> spatial mean -> cross entropy."""
    h = tw.tanh(tw.nn.bias_add(tw.nn.conv2d(x, w, strides=1, padding="SAME"), b))
    h = tw.nn.max_pool2d(h, ksize=2, strides=1, padding="VALID")
    h = tw.nn.avg_pool2d(h, ksize=2, strides=2, padding="SAME")
    logits = tw.reduce_mean(h, axis=[1, 2])
    return tw.reduce_mean(tw.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))


def gradient_penalty(x, w, b, labels):
    """The squared norm of the loss gradient w.r.t. the images: differentiating it goes
    through the gradient ops of every layer (second order)."""
    gx = tw.grad(small_convnet_loss)(x, w, b, labels)
    return tw.reduce_sum(gx * gx)


UNKNOWN_BATCH = [tw.TensorSpec([None, 4, 4, 1], tw.float64),
                 tw.TensorSpec([2, 2, 1, 3], tw.float64), tw.TensorSpec([3], tw.float64),
                 tw.TensorSpec([None], tw.int64)]


def check_unknown_batch(loss) -> None:
    """Gradients of `loss` traced once with an unknown batch dim match those traced for
    each static batch size, and finite differences."""
    rng = np.random.default_rng(7)
    w, b = rng.normal(size=(2, 2, 1, 3)), rng.normal(size=(3,))
    dynamic = tw.compile(tw.grad(loss, argnums=(0, 1, 2)), input_signature=UNKNOWN_BATCH)
    static = tw.grad(loss, argnums=(0, 1, 2))
    for batch in (1, 2):
        x = rng.normal(size=(batch, 4, 4, 1))
        labels = rng.integers(0, 3, size=batch)
        for got, want in zip(dynamic(x, w, b, labels), static(x, w, b, labels)):
            assert np.asarray(got).shape == np.asarray(want).shape
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
        check_gradients(lambda x, w, b: loss(x, w, b, labels), x, w, b)
    assert dynamic.tracing_count == 1


def test_gradients_traced_with_unknown_batch_dim():
    check_unknown_batch(small_convnet_loss)


def test_second_order_gradients_traced_with_unknown_batch_dim():
    check_unknown_batch(gradient_penalty)
