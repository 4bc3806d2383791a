"""The nn family: softmax, cross entropies, conv2d, pooling, bias_add and the gradient ops
(checked against loop-based NumPy references and finite differences)."""

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.compiler.registry import get_op
from tensorweave.frontend.building import apply_op
from tests.helpers import assert_same, check_against_numpy

WIDTH = {np.float16: 16, np.float32: 32, np.float64: 64}


def floats(dtype, lo=-10.0, hi=10.0):
    return st.floats(lo, hi, width=WIDTH[dtype], allow_nan=False)


def rng(seed=0):
    return np.random.default_rng(seed)


# ----------------------------------------------------------------------------- softmax

def np_log_softmax(x, axis=-1):
    x64 = x.astype(np.float64)
    if x64.size == 0:
        return x.copy()
    shifted = x64 - x64.max(axis=axis, keepdims=True)
    return (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))).astype(x.dtype)


def np_softmax(x, axis=-1):
    return np.exp(np_log_softmax(x, axis).astype(np.float64)).astype(x.dtype)


@given(data=st.data())
def test_softmax_and_log_softmax_match_numpy(data):
    dtype = data.draw(st.sampled_from([np.float16, np.float32, np.float64]))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = data.draw(hnp.arrays(dtype, shape, elements=floats(dtype, -30, 30)))
    check_against_numpy(lambda a: tw.nn.softmax(a, axis=axis), lambda a: np_softmax(a, axis), x)
    check_against_numpy(lambda a: tw.nn.log_softmax(a, axis=axis),
                        lambda a: np_log_softmax(a, axis), x, atol=1e-5)


def test_softmax_is_stable_for_huge_logits_and_defaults_to_last_axis():
    x = np.array([[1000.0, 0.0, -1000.0], [5.0, 5.0, 5.0]], np.float32)
    out = tw.nn.softmax(x).numpy()
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-6)
    np.testing.assert_allclose(tw.nn.log_softmax(x).numpy()[0], [0, -1000, -2000])


# ------------------------------------------------------------------------ cross entropy

def np_softmax_xent(labels, logits):
    log_p = np_log_softmax(logits).astype(np.float64)
    loss = -(labels.astype(np.float64) * log_p).sum(-1)
    return loss.astype(logits.dtype), (np.exp(log_p) - labels).astype(logits.dtype)


@given(data=st.data())
def test_softmax_cross_entropy_loss_and_backprop(data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    batch = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    classes = data.draw(st.integers(1, 5))
    logits = data.draw(hnp.arrays(dtype, batch + (classes,), elements=floats(dtype)))
    raw = data.draw(hnp.arrays(dtype, batch + (classes,), elements=floats(dtype, 0, 1)))
    labels = (raw / np.maximum(raw.sum(-1, keepdims=True), 1e-3)).astype(dtype)
    check_against_numpy(lambda y, x: tw.nn.softmax_cross_entropy_with_logits(labels=y, logits=x),
                        lambda y, x: np_softmax_xent(y, x)[0], labels, logits, atol=1e-5)
    check_against_numpy(
        lambda y, x: tuple(apply_op("SoftmaxCrossEntropyWithLogits", [x, y])),
        lambda y, x: np_softmax_xent(y, x), labels, logits, atol=1e-5)


def test_softmax_cross_entropy_along_another_axis():
    logits = rng(1).normal(size=(4, 3)).astype(np.float32)
    labels = np_softmax(rng(2).normal(size=(4, 3)).astype(np.float32), axis=0)
    check_against_numpy(
        lambda y, x: tw.nn.softmax_cross_entropy_with_logits(labels=y, logits=x, axis=0),
        lambda y, x: np_softmax_xent(y.T, x.T)[0], labels, logits)


def np_sparse_xent(labels, logits):
    log_p = np_log_softmax(logits).astype(np.float64)
    classes = logits.shape[-1]
    one_hot = np.eye(classes)[labels] if classes else np.zeros(logits.shape)
    loss = -(one_hot * log_p).sum(-1)
    return loss.astype(logits.dtype), (np.exp(log_p) - one_hot).astype(logits.dtype)


@given(data=st.data())
def test_sparse_softmax_cross_entropy_loss_and_backprop(data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    label_dtype = data.draw(st.sampled_from([np.int32, np.int64]))
    batch = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=4))
    classes = data.draw(st.integers(1, 5))
    logits = data.draw(hnp.arrays(dtype, batch + (classes,), elements=floats(dtype)))
    labels = data.draw(hnp.arrays(label_dtype, batch, elements=st.integers(0, classes - 1)))
    check_against_numpy(
        lambda y, x: tw.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x),
        lambda y, x: np_sparse_xent(y, x)[0], labels, logits, atol=1e-5)
    check_against_numpy(
        lambda y, x: tuple(apply_op("SparseSoftmaxCrossEntropyWithLogits", [x, y])),
        lambda y, x: np_sparse_xent(y, x), labels, logits, atol=1e-5)


def test_sparse_label_out_of_range_fails_at_run_time_naming_op_and_line():
    @tw.compile
    def loss(labels, logits):
        return tw.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)

    logits = np.zeros((2, 3), np.float32)
    assert loss(np.array([0, 2], np.int32), logits).shape == (2,)
    with pytest.raises(tw.errors.InvalidArgumentError) as err:
        loss(np.array([0, 3], np.int32), logits)
    msg = str(err.value)
    assert "SparseSoftmaxCrossEntropyWithLogits" in msg and "test_nn.py" in msg
    assert "label value of 3" in msg and "[0, 3)" in msg
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"test_nn\.py.*-1"):
        tw.nn.sparse_softmax_cross_entropy_with_logits(labels=np.array([-1, 0]), logits=logits)


def test_cross_entropy_shape_and_dtype_errors_name_the_op():
    with pytest.raises(tw.errors.ShapeError) as err:
        tw.nn.softmax_cross_entropy_with_logits(labels=np.zeros((2, 4), np.float32),
                                                logits=np.zeros((2, 3), np.float32))
    assert "SoftmaxCrossEntropyWithLogits" in str(err.value) and "test_nn.py" in str(err.value)
    assert "f32[2,4]" in str(err.value)
    with pytest.raises(tw.errors.DTypeError, match=r"Sparse.*test_nn\.py.*int32 or int64"):
        tw.nn.sparse_softmax_cross_entropy_with_logits(labels=np.zeros(2, np.float32),
                                                       logits=np.zeros((2, 3), np.float32))


# -------------------------------------------------------------------------- convolution

def out_geometry(size, k, stride, dilation, padding):
    """(output size, padding before) from TensorFlow's documented formulas."""
    eff = (k - 1) * dilation + 1
    if padding == "SAME":
        out = math.ceil(size / stride)
        return out, max((out - 1) * stride + eff - size, 0) // 2
    if isinstance(padding, list):
        before, after = padding
        return max(math.ceil((size + before + after - eff + 1) / stride), 0), before
    return max(math.ceil((size - eff + 1) / stride), 0), 0


def conv_reference(x, w, strides, padding, dilations):
    """Direct loops over output pixels (float64)."""
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    pad_h = padding if not isinstance(padding, list) else padding[1]
    pad_w = padding if not isinstance(padding, list) else padding[2]
    oh, top = out_geometry(h, kh, strides[0], dilations[0], pad_h)
    ow, left = out_geometry(wd, kw, strides[1], dilations[1], pad_w)
    out = np.zeros((n, oh, ow, o))
    for b, i, j in np.ndindex(n, oh, ow):
        for di, dj in np.ndindex(kh, kw):
            r = i * strides[0] - top + di * dilations[0]
            q = j * strides[1] - left + dj * dilations[1]
            if 0 <= r < h and 0 <= q < wd:
                out[b, i, j] += x[b, r, q].astype(np.float64) @ w[di, dj].astype(np.float64)
    return out.astype(x.dtype)


@st.composite
def conv_cases(draw, min_batch=0, max_cin=3):
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    n = draw(st.integers(min_batch, 2))
    h, wd = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    cin, cout = draw(st.integers(0, max_cin)), draw(st.integers(0, 3))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    dilations = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = draw(st.sampled_from(["SAME", "VALID", "EXPLICIT"]))
    if padding == "EXPLICIT":
        padding = [[0, 0], [draw(st.integers(0, 2)), draw(st.integers(0, 2))],
                   [draw(st.integers(0, 2)), draw(st.integers(0, 2))], [0, 0]]
        extra = (sum(padding[1]), sum(padding[2]))
    else:
        extra = (0, 0)
    if padding != "SAME":  # TensorFlow rejects windows larger than the (padded) input
        assume(h + extra[0] >= (kh - 1) * dilations[0] + 1)
        assume(wd + extra[1] >= (kw - 1) * dilations[1] + 1)
    r = rng(draw(st.integers(0, 2**16)))
    x = r.uniform(-1, 1, (n, h, wd, cin)).astype(dtype)
    w = r.uniform(-1, 1, (kh, kw, cin, cout)).astype(dtype)
    return x, w, strides, padding, dilations


def stride_form(strides, form):
    """The same strides spelled as TensorFlow 2 accepts them."""
    if form == 0 and strides[0] == strides[1]:
        return strides[0]
    return list(strides) if form == 1 else [1, *strides, 1]


@given(case=conv_cases(), form=st.integers(0, 2))
def test_conv2d_matches_loop_reference(case, form):
    x, w, strides, padding, dilations = case
    ref_padding = padding if isinstance(padding, str) else [p for p in padding]
    check_against_numpy(
        lambda a, b: tw.nn.conv2d(a, b, stride_form(strides, form), padding,
                                  dilations=stride_form(dilations, form)),
        lambda a, b: conv_reference(a, b, strides, ref_padding, dilations), x, w, atol=1e-5)


def test_conv2d_half_precision_and_same_output_size():
    x = rng(3).uniform(-1, 1, (1, 7, 5, 2)).astype(np.float16)
    w = rng(4).uniform(-1, 1, (3, 3, 2, 4)).astype(np.float16)
    out = tw.nn.conv2d(x, w, 2, "SAME")
    assert out.dtype is tw.float16 and out.shape == (1, 4, 3, 4)
    expected = conv_reference(x.astype(np.float32), w.astype(np.float32), (2, 2), "SAME", (1, 1))
    np.testing.assert_allclose(out.numpy().astype(np.float32), expected, atol=2e-2)


def test_conv2d_inference_with_unknown_batch_and_spatial_dims():
    w = np.ones((3, 3, 3, 4), np.float32)

    @tw.compile(input_signature=[tw.TensorSpec([None, 5, 5, 3], tw.float32)])
    def same(x):
        return tw.nn.conv2d(x, w, 2, "SAME")

    @tw.compile(input_signature=[tw.TensorSpec([None, None, 6, 3], tw.float32)])
    def valid(x):
        return tw.nn.conv2d(x, w, [1, 1], "VALID", dilations=2)

    assert same.get_concrete_function().graph.results[0].type.shape == (None, 3, 3, 4)
    assert valid.get_concrete_function().graph.results[0].type.shape == (None, None, 2, 4)
    assert same(np.ones((2, 5, 5, 3), np.float32)).shape == (2, 3, 3, 4)
    assert valid(np.ones((1, 7, 6, 3), np.float32)).shape == (1, 3, 2, 4)


def test_conv2d_channel_mismatch_names_both_shapes_the_op_and_line():
    @tw.compile
    def f(x, w):
        return tw.nn.conv2d(x, w, 1, "SAME")

    with pytest.raises(tw.errors.ShapeError) as err:
        f(np.zeros((1, 5, 5, 3), np.float32), np.zeros((3, 3, 4, 8), np.float32))
    msg = str(err.value)
    assert "Conv2D" in msg and "test_nn.py" in msg
    assert "f32[1,5,5,3]" in msg and "f32[3,3,4,8]" in msg


def test_conv2d_bad_attributes_name_the_op_and_line():
    x, w = np.zeros((1, 4, 4, 1), np.float32), np.zeros((2, 2, 1, 1), np.float32)
    with pytest.raises(tw.errors.InvalidArgumentError) as err:
        tw.nn.conv2d(x, w, 1, "FULL")
    assert "Conv2D" in str(err.value) and "test_nn.py" in str(err.value)
    assert "padding" in str(err.value) and "'FULL'" in str(err.value)
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"Conv2D.*test_nn\.py.*batch"):
        tw.nn.conv2d(x, w, [2, 1, 1, 1], "SAME")
    with pytest.raises(tw.errors.InvalidArgumentError, match="strides must have 4"):
        tw.nn.conv2d(x, w, [1, 1, 1], "SAME")
    with pytest.raises(tw.errors.ShapeError, match=r"Conv2D.*larger than the padded input"):
        tw.nn.conv2d(x, np.zeros((6, 1, 1, 1), np.float32), 1, "VALID")
    with pytest.raises(tw.errors.DTypeError, match=r"Conv2D.*same dtype"):
        tw.nn.conv2d(x, w.astype(np.float64), 1, "SAME")
    with pytest.raises(tw.errors.UnimplementedError, match=r"test_nn\.py.*conv2d.*NCHW"):
        tw.nn.conv2d(x, w, 1, "SAME", data_format="NCHW")


# ------------------------------------------------------------ gradients: finite differences

def numeric_grad(f, x, eps=1e-6):
    """Central differences of the scalar function `f` at float64 `x`."""
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += eps
        minus[idx] -= eps
        g[idx] = (f(plus) - f(minus)) / (2 * eps)
    return g


def conv_kernel(x, w, strides, padding, dilations):
    """The Conv2D reference kernel called directly (fast enough for finite differences)."""
    attrs = {"strides": (1, *strides, 1), "dilations": (1, *dilations, 1), "padding": padding,
             "explicit_paddings": ()}
    if not isinstance(padding, str):
        attrs.update(padding="EXPLICIT", explicit_paddings=tuple(v for p in padding for v in p))
    return get_op("Conv2D").kernels["reference"].fn(x, w, **attrs)


@settings(max_examples=12)
@given(case=conv_cases(min_batch=1, max_cin=2))
def test_conv2d_gradient_ops_match_finite_differences(case):
    x, w, strides, padding, dilations = (case[0].astype(np.float64), case[1].astype(np.float64),
                                         *case[2:])
    y = conv_kernel(x, w, strides, padding, dilations)
    g = rng(5).uniform(-1, 1, y.shape)
    dx_fd = numeric_grad(lambda xx: np.sum(conv_kernel(xx, w, strides, padding, dilations) * g), x)
    dw_fd = numeric_grad(lambda ww: np.sum(conv_kernel(x, ww, strides, padding, dilations) * g), w)
    check_against_numpy(
        lambda ww, gg: tw.nn.conv2d_backprop_input(x.shape, ww, gg, strides, padding,
                                                   dilations=dilations),
        lambda ww, gg: dx_fd, w, g, rtol=1e-6, atol=1e-7)
    check_against_numpy(
        lambda xx, gg: tw.nn.conv2d_backprop_filter(xx, w.shape, gg, strides, padding,
                                                    dilations=dilations),
        lambda xx, gg: dw_fd, x, g, rtol=1e-6, atol=1e-7)


def test_conv2d_backprop_input_with_unknown_dims_at_trace_time():
    w = rng(6).normal(size=(3, 3, 2, 4))
    x = rng(7).normal(size=(2, 5, 6, 2))
    g = rng(8).normal(size=(2, 3, 3, 4))
    expected = tw.nn.conv2d_backprop_input(x.shape, w, g, 2, "SAME").numpy()

    @tw.compile(input_signature=[tw.TensorSpec([None, 3, 3, 4], tw.float64)])
    def batch_unknown(gg):
        return tw.nn.conv2d_backprop_input([None, 5, 6, 2], w, gg, 2, "SAME")

    @tw.compile(input_signature=[tw.TensorSpec([None, None, None, 2], tw.float64),
                                 tw.TensorSpec([None, None, None, 4], tw.float64)])
    def all_unknown(xx, gg):
        return apply_op("Conv2DBackpropInput", [tw.constant(w), gg, xx],
                        {"input_shape": [None] * 4, "strides": [1, 2, 2, 1], "padding": "SAME"})[0]

    assert batch_unknown.get_concrete_function().graph.results[0].type.shape == (None, 5, 6, 2)
    assert_same(batch_unknown(g), expected)
    assert_same(all_unknown(x, g), expected)
    with pytest.raises(tw.errors.InvalidArgumentError, match="incoming gradient"):
        all_unknown(x[:, :2], g)


def test_conv2d_transpose_is_backprop_input():
    x = rng(9).normal(size=(1, 3, 3, 4)).astype(np.float32)
    w = rng(10).normal(size=(3, 3, 2, 4)).astype(np.float32)
    out = tw.nn.conv2d_transpose(x, w, [1, 6, 6, 2], 2, "SAME")
    assert out.shape == (1, 6, 6, 2)
    # <conv(e_i), x> = <e_i, conv_transpose(x)>: the adjoint identity, checked on a random probe
    probe = rng(11).normal(size=(1, 6, 6, 2)).astype(np.float32)
    lhs = np.sum(conv_kernel(probe, w, (2, 2), "SAME", (1, 1)) * x)
    np.testing.assert_allclose(lhs, np.sum(probe * out.numpy()), rtol=1e-4)


# ------------------------------------------------------------------------------ pooling

def pool_reference(x, ksize, strides, padding, mode):
    n, h, wd, c = x.shape
    oh, top = out_geometry(h, ksize[0], strides[0], 1, padding)
    ow, left = out_geometry(wd, ksize[1], strides[1], 1, padding)
    out = np.zeros((n, oh, ow, c), x.dtype)
    for i, j in np.ndindex(oh, ow):
        r0, q0 = i * strides[0] - top, j * strides[1] - left
        window = x[:, max(r0, 0):r0 + ksize[0], max(q0, 0):q0 + ksize[1]]
        if mode == "max":
            out[:, i, j] = window.max(axis=(1, 2))
        else:
            out[:, i, j] = window.astype(np.float64).mean(axis=(1, 2))
    return out


@st.composite
def pool_cases(draw, dtypes=(np.float32, np.float64)):
    dtype = draw(st.sampled_from(dtypes))
    n, c = draw(st.integers(0, 2)), draw(st.integers(0, 3))
    h, wd = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    ksize = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    if padding == "VALID":
        assume(h >= ksize[0] and wd >= ksize[1])
    r = rng(draw(st.integers(0, 2**16)))
    if np.dtype(dtype).kind == "i":
        x = r.integers(-100, 100, (n, h, wd, c)).astype(dtype)
    else:
        x = r.uniform(-1, 1, (n, h, wd, c)).astype(dtype)
    return x, ksize, strides, padding


@given(case=pool_cases(dtypes=(np.float32, np.float64, np.int32)))
def test_max_pool2d_matches_loop_reference(case):
    x, ksize, strides, padding = case
    check_against_numpy(lambda a: tw.nn.max_pool2d(a, list(ksize), list(strides), padding),
                        lambda a: pool_reference(a, ksize, strides, padding, "max"), x)


@given(case=pool_cases())
def test_avg_pool2d_matches_loop_reference(case):
    x, ksize, strides, padding = case
    check_against_numpy(lambda a: tw.nn.avg_pool2d(a, list(ksize), list(strides), padding),
                        lambda a: pool_reference(a, ksize, strides, padding, "avg"), x)


def test_v1_pool_spellings_take_four_element_windows():
    x = rng(12).normal(size=(2, 5, 5, 3)).astype(np.float32)
    assert_same(tw.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME").numpy(),
                pool_reference(x, (2, 2), (2, 2), "SAME", "max"))
    assert_same(tw.nn.avg_pool(x, [1, 3, 3, 1], [1, 1, 1, 1], "VALID").numpy(),
                pool_reference(x, (3, 3), (1, 1), "VALID", "avg"))
    assert tw.nn.max_pool2d(x, 2, 2, "VALID").shape == (2, 2, 2, 3)


def test_pool_errors_name_the_op_and_line():
    x = np.zeros((1, 4, 4, 1), np.float32)
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"MaxPool.*test_nn\.py.*padding"):
        tw.nn.max_pool2d(x, 2, 2, "EXPLICIT")
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"AvgPool.*test_nn\.py.*ksize"):
        tw.nn.avg_pool(x, [2, 2, 2, 2], [1, 1, 1, 1], "SAME")
    with pytest.raises(tw.errors.ShapeError, match=r"AvgPool.*rank 4"):
        tw.nn.avg_pool2d(np.zeros((4, 4, 1), np.float32), 2, 2, "SAME")
    with pytest.raises(tw.errors.DTypeError, match=r"AvgPool.*floating"):
        tw.nn.avg_pool2d(x.astype(np.int32), 2, 2, "SAME")


def distinct_values(shape, seed):
    """Values far apart (no ties), so max pooling is differentiable at them."""
    return rng(seed).permutation(np.arange(math.prod(shape), dtype=np.float64)).reshape(shape) * 0.1


def pool_kernel(op, x, ksize, strides, padding):
    attrs = {"ksize": (1, *ksize, 1), "strides": (1, *strides, 1), "padding": padding}
    return get_op(op).kernels["reference"].fn(x, **attrs)


@settings(max_examples=12)
@given(case=pool_cases(dtypes=(np.float64,)))
def test_pool_gradient_ops_match_finite_differences(case):
    x, ksize, strides, padding = case
    x = distinct_values(x.shape, x.size)
    y = pool_kernel("MaxPool", x, ksize, strides, padding)
    g = rng(13).uniform(-1, 1, y.shape)
    dmax = numeric_grad(lambda xx: np.sum(pool_kernel("MaxPool", xx, ksize, strides, padding) * g),
                        x, eps=1e-4)
    davg = numeric_grad(lambda xx: np.sum(pool_kernel("AvgPool", xx, ksize, strides, padding) * g),
                        x, eps=1e-4)
    check_against_numpy(lambda xx, yy, gg: tw.nn.max_pool_grad(xx, yy, gg, ksize, strides, padding),
                        lambda xx, yy, gg: dmax, x, y, g, rtol=1e-8, atol=1e-9)
    check_against_numpy(lambda gg: tw.nn.avg_pool_grad(x.shape, gg, ksize, strides, padding),
                        lambda gg: davg, g, rtol=1e-8, atol=1e-9)


def test_max_pool_grad_routes_ties_to_the_first_maximum():
    x = np.array([[1, 3, 3], [3, 0, 3], [2, 3, 1]], np.float32).reshape(1, 3, 3, 1)
    y = tw.nn.max_pool2d(x, 2, 1, "VALID")
    g = np.array([1, 10, 100, 1000], np.float32).reshape(1, 2, 2, 1)
    dx = tw.nn.max_pool_grad(x, y, g, 2, 1, "VALID").numpy().reshape(3, 3)
    # windows' first maxima (row-major): (0,1), (0,1), (1,0), (1,2)
    np.testing.assert_array_equal(dx, [[0, 11, 0], [100, 0, 1000], [0, 0, 0]])


def test_avg_pool_grad_with_unknown_batch_and_channels():
    g = rng(14).normal(size=(2, 2, 2, 3))
    expected = tw.nn.avg_pool_grad([2, 4, 3, 3], g, 2, 2, "SAME").numpy()

    @tw.compile(input_signature=[tw.TensorSpec([None, 2, 2, None], tw.float64)])
    def f(gg):
        return tw.nn.avg_pool_grad([None, 4, 3, None], gg, 2, 2, "SAME")

    assert f.get_concrete_function().graph.results[0].type.shape == (None, 4, 3, None)
    assert_same(f(g), expected)


# ------------------------------------------------------------------- bias and l2 loss

@given(data=st.data())
def test_bias_add_and_its_gradient(data):
    dtype = data.draw(st.sampled_from([np.float16, np.float32, np.float64, np.int32]))
    shape = data.draw(hnp.array_shapes(min_dims=2, max_dims=4, min_side=0, max_side=4))
    elements = st.integers(-100, 100) if dtype == np.int32 else floats(dtype)
    value = data.draw(hnp.arrays(dtype, shape, elements=elements))
    bias = data.draw(hnp.arrays(dtype, shape[-1:], elements=elements))
    check_against_numpy(tw.nn.bias_add, lambda v, b: v + b, value, bias)
    wide = np.float64 if value.dtype.kind == "f" else np.int64
    check_against_numpy(
        tw.nn.bias_add_grad,
        lambda v: v.astype(wide).sum(axis=tuple(range(v.ndim - 1))).astype(v.dtype), value)


def test_bias_add_shape_errors_name_the_op_and_line():
    with pytest.raises(tw.errors.ShapeError) as err:
        tw.nn.bias_add(np.zeros((2, 3), np.float32), np.zeros(4, np.float32))
    assert "BiasAdd" in str(err.value) and "test_nn.py" in str(err.value)
    assert "f32[2,3]" in str(err.value) and "f32[4]" in str(err.value)
    with pytest.raises(tw.errors.ShapeError, match=r"BiasAdd.*rank >= 2"):
        tw.nn.bias_add(np.zeros(3, np.float32), np.zeros(3, np.float32))


@given(data=st.data())
def test_l2_loss(data):
    dtype = data.draw(st.sampled_from([np.float16, np.float32, np.float64]))
    x = data.draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0),
                             elements=floats(dtype, -3, 3)))
    check_against_numpy(tw.nn.l2_loss,
                        lambda a: np.asarray((a.astype(np.float64) ** 2).sum() / 2, a.dtype), x)


def test_activations_are_re_exported_from_math():
    pytest.importorskip("tensorweave.frontend.ops.math")
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    np.testing.assert_allclose(tw.nn.relu(x).numpy(), [0, 0, 2])
    np.testing.assert_allclose(tw.nn.sigmoid(x).numpy(), 1 / (1 + np.exp(-x)), rtol=1e-6)
    np.testing.assert_allclose(tw.nn.tanh(x).numpy(), np.tanh(x), rtol=1e-6)
    with pytest.raises(AttributeError):
        tw.nn.no_such_function  # noqa: B018
