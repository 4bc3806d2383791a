"""Gradients of the nn ops added for issue 14 against central finite differences in
float64: depthwise_conv2d and conv3d (input and filter, and their gradient ops
differentiated again), conv1d, 1-D/3-D and dilated pooling (and the 3-D pooling gradient
ops), fused_batch_norm (every output, training and inference) and layer_normalization.

Sizes stay tiny because every element of every argument costs two forward runs."""

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tests.grads.strategies import check_unknown_dims, seeds, spec, values
from tests.helpers import check_gradients


@st.composite
def windows(draw, nd, max_side=4, max_k=2, explicit=False, max_elements=24):
    """(spatial sizes, window, strides, dilations, padding for tw) with an output and a
    small input."""
    sizes = [draw(st.integers(1, max_side)) for _ in range(nd)]
    assume(int(np.prod(sizes)) <= max_elements)
    k = [draw(st.integers(1, max_k)) for _ in range(nd)]
    strides = [draw(st.integers(1, 2)) for _ in range(nd)]
    dilations = [draw(st.integers(1, 2)) for _ in range(nd)]
    padding = draw(st.sampled_from(["SAME", "VALID", "EXPLICIT"] if explicit else
                                   ["SAME", "VALID"]))
    pads = [[draw(st.integers(0, 1)), draw(st.integers(0, 1))] if padding == "EXPLICIT"
            else [0, 0] for _ in range(nd)]
    if padding != "SAME":
        for n, kk, d, (lo, hi) in zip(sizes, k, dilations, pads):
            assume(n + lo + hi >= (kk - 1) * d + 1)
    if padding == "EXPLICIT":
        padding = [[0, 0], *pads, [0, 0]]
    return sizes, k, strides, dilations, padding


# ------------------------------------------------------------------- depthwise conv

@settings(max_examples=8)
@given(case=windows(2, max_side=3, explicit=True), c=st.integers(1, 2),
       mult=st.integers(1, 2), seed=seeds)
def test_depthwise_conv2d_wrt_input_and_filter(case, c, mult, seed):
    sizes, k, strides, dilations, padding = case
    x = values(seed, (1, *sizes, c))
    w = values(seed + 1, (*k, c, mult))
    check_gradients(lambda a, b: tw.nn.depthwise_conv2d(a, b, [1, *strides, 1], padding,
                                                        dilations=dilations), x, w)


@settings(max_examples=5)
@given(case=windows(2, max_side=3), seed=seeds)
def test_depthwise_conv2d_gradient_ops_differentiated_again(case, seed):
    sizes, k, strides, dilations, padding = case
    x, w = values(seed, (1, *sizes, 2)), values(seed + 1, (*k, 2, 1))
    g = values(seed + 2, np.asarray(tw.nn.depthwise_conv2d(
        x, w, [1, *strides, 1], padding, dilations=dilations)).shape)
    check_gradients(lambda ww, gg: tw.nn.depthwise_conv2d_backprop_input(
        x.shape, ww, gg, strides, padding, dilations=dilations), w, g)
    check_gradients(lambda xx, gg: tw.nn.depthwise_conv2d_backprop_filter(
        xx, w.shape, gg, strides, padding, dilations=dilations), x, g)


def test_depthwise_conv2d_gradient_with_unknown_batch():
    x, w = values(1, (2, 3, 3, 2)), values(2, (2, 2, 2, 2))
    check_unknown_dims(lambda a, b: tw.nn.depthwise_conv2d(a, b, [1, 1, 1, 1], "SAME"),
                       [spec(None, 3, 3, 2), spec(2, 2, 2, 2)], x, w)


# ------------------------------------------------------------------------ conv1d/3d

@settings(max_examples=8)
@given(case=windows(1, max_side=5, max_k=3, explicit=True), cin=st.integers(1, 2),
       cout=st.integers(1, 2), seed=seeds)
def test_conv1d_wrt_input_and_filter(case, cin, cout, seed):
    sizes, k, strides, dilations, padding = case  # explicit padding: 3 NWC pairs
    x, w = values(seed, (2, *sizes, cin)), values(seed + 1, (*k, cin, cout))
    check_gradients(lambda a, b: tw.nn.conv1d(a, b, strides[0], padding,
                                              dilations=dilations[0]), x, w)


@settings(max_examples=8)
@given(case=windows(3, max_side=3, max_elements=12), cin=st.integers(1, 2),
       cout=st.integers(1, 2), seed=seeds)
def test_conv3d_wrt_input_and_filter(case, cin, cout, seed):
    sizes, k, strides, dilations, padding = case
    x, w = values(seed, (1, *sizes, cin)), values(seed + 1, (*k, cin, cout))
    check_gradients(lambda a, b: tw.nn.conv3d(a, b, strides, padding, dilations=dilations),
                    x, w)


@settings(max_examples=5)
@given(case=windows(3, max_side=3, max_elements=8), seed=seeds)
def test_conv3d_gradient_ops_differentiated_again(case, seed):
    sizes, k, strides, dilations, padding = case
    x, w = values(seed, (1, *sizes, 1)), values(seed + 1, (*k, 1, 2))
    g = values(seed + 2, np.asarray(tw.nn.conv3d(x, w, strides, padding,
                                                 dilations=dilations)).shape)
    check_gradients(lambda ww, gg: tw.nn.conv3d_backprop_input(
        x.shape, ww, gg, strides, padding, dilations=dilations), w, g)
    check_gradients(lambda xx, gg: tw.nn.conv3d_backprop_filter(
        xx, w.shape, gg, strides, padding, dilations=dilations), x, g)


def test_conv3d_gradient_with_unknown_batch():
    x, w = values(3, (2, 2, 3, 2, 1)), values(4, (2, 2, 1, 1, 2))
    check_unknown_dims(lambda a, b: tw.nn.conv3d(a, b, 1, "SAME"),
                       [spec(None, 2, 3, 2, 1), spec(2, 2, 1, 1, 2)], x, w)


# -------------------------------------------------------------------------- pooling

@settings(max_examples=8)
@given(case=windows(3, max_side=3, max_elements=18), c=st.integers(1, 2), seed=seeds,
       kind=st.sampled_from(["max", "avg"]))
def test_pool3d(case, c, seed, kind):
    sizes, k, strides, _, padding = case
    assume(padding == "SAME" or all(s >= kk for s, kk in zip(sizes, k)))
    x = values(seed, (1, *sizes, c), "distinct")  # one maximum per window
    fn = tw.nn.max_pool3d if kind == "max" else tw.nn.avg_pool3d
    check_gradients(lambda a: fn(a, k, strides, padding), x)


@settings(max_examples=6)
@given(case=windows(3, max_side=3, max_elements=12), seed=seeds)
def test_pool3d_gradient_ops_differentiated_again(case, seed):
    sizes, k, strides, _, padding = case
    assume(padding == "SAME" or all(s >= kk for s, kk in zip(sizes, k)))
    x = values(seed, (1, *sizes, 2), "distinct")
    y = np.asarray(tw.nn.max_pool3d(x, k, strides, padding))
    g = values(seed + 1, y.shape)
    # linear in the incoming gradient; piecewise constant in the input (zero almost
    # everywhere), which finite differences see too at distinct values
    check_gradients(lambda xx, gg: tw.nn.max_pool3d_grad(xx, y, gg, k, strides, padding),
                    x, g)
    check_gradients(lambda gg: tw.nn.avg_pool3d_grad(x.shape, gg, k, strides, padding), g)


@settings(max_examples=8)
@given(nd=st.integers(1, 2), data=st.data(), seed=seeds)
def test_pool_1d_and_dilated(nd, data, seed):
    sizes, k, strides, dilations, padding = data.draw(windows(nd, max_side=5, max_k=3))
    kind = data.draw(st.sampled_from(["MAX", "AVG"]))
    if data.draw(st.booleans()):
        strides = [1] * nd  # dilated (TensorFlow allows no strides with dilations)
    else:
        dilations = [1] * nd
        assume(padding == "SAME" or all(s >= kk for s, kk in zip(sizes, k)))
    x = values(seed, (2, *sizes, 2), "distinct")
    if kind == "MAX" and padding == "SAME":
        x = x + 10  # positive: a dilated SAME window's zero padding never ties a value
    check_gradients(lambda a: tw.nn.pool(a, k, kind, strides, padding, dilations=dilations), x)


# -------------------------------------------------------------------- normalization

@settings(max_examples=10)
@given(fmt=st.sampled_from(["NHWC", "NCHW", "NDHWC"]), training=st.booleans(),
       factor=st.sampled_from([1.0, 0.25]), seed=seeds)
def test_fused_batch_norm_every_output(fmt, training, factor, seed):
    shape = {"NHWC": (2, 2, 3, 2), "NCHW": (2, 2, 2, 3), "NDHWC": (2, 1, 2, 2, 2)}[fmt]
    c = 2
    x = values(seed, shape)
    scale, offset = values(seed + 1, (c,), "positive"), values(seed + 2, (c,))
    mean, var = values(seed + 3, (c,)), values(seed + 4, (c,), "positive")

    def fn(*args):
        y, m, v = tw.nn.fused_batch_norm(*args, epsilon=1e-3, data_format=fmt,
                                         is_training=training, exponential_avg_factor=factor)
        # one output: the three results weighted by their own random W in check_gradients
        return tw.concat([tw.reshape(y, [-1]), m, v], axis=0)

    check_gradients(fn, x, scale, offset, mean, var, rtol=1e-5, atol=1e-6)


@settings(max_examples=10)
@given(data=st.data(), seed=seeds)
def test_layer_normalization(data, seed):
    shape = data.draw(st.sampled_from([(3, 4), (2, 3, 2), (2, 2, 3)]))
    rank = len(shape)
    axes = sorted(data.draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=2,
                                     unique=True)))
    pshape = tuple(shape[i] for i in axes)
    x = values(seed, shape)
    gamma, beta = values(seed + 1, pshape, "positive"), values(seed + 2, pshape)
    check_gradients(lambda a, g, b: tw.nn.layer_normalization(a, g, b, axis=axes), x, gamma,
                    beta, rtol=1e-5, atol=1e-6)
