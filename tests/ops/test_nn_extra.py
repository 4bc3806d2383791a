"""The nn ops added for issue 14: depthwise_conv2d, conv1d, conv3d (and their gradient ops
and transposes), 1-D/3-D/N-D pooling, fused_batch_norm and layer_normalization, checked
against NumPy references written here with plain loops over output positions (not the
kernels' vectorized formulation), eagerly and traced on every target."""

import itertools
import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tests.helpers import assert_same, check_against_numpy

FLOATS = (np.float32, np.float64)


def rng(seed):
    return np.random.default_rng(seed)


# ------------------------------------------------------------- independent references

def out_geometry(size, k, stride, dilation, padding):
    """(output size, padding before) from TensorFlow's documented formulas; `padding` is
    "SAME", "VALID" or a [before, after] pair."""
    eff = (k - 1) * dilation + 1
    if padding == "SAME":
        out = math.ceil(size / stride)
        return out, max((out - 1) * stride + eff - size, 0) // 2
    before, after = (0, 0) if padding == "VALID" else padding
    return max(math.ceil((size + before + after - eff + 1) / stride), 0), before


def taps(x_spatial, k, strides, dilations, paddings):
    """Every (output index, input index, window tap) of a correlation whose input position
    is inside the input: the loop structure of every reference below."""
    geo = [out_geometry(n, kk, s, d, p)
           for n, kk, s, d, p in zip(x_spatial, k, strides, dilations, paddings)]
    outs = tuple(o for o, _ in geo)
    for out_idx in np.ndindex(*outs):
        for tap in np.ndindex(*k):
            pos = tuple(o * s - before + t * d for o, s, (_, before), t, d
                        in zip(out_idx, strides, geo, tap, dilations))
            if all(0 <= q < n for q, n in zip(pos, x_spatial)):
                yield out_idx, pos, tap


def out_shape(x_spatial, k, strides, dilations, paddings):
    return tuple(out_geometry(n, kk, s, d, p)[0]
                 for n, kk, s, d, p in zip(x_spatial, k, strides, dilations, paddings))


def conv_ref(x, w, strides, dilations, paddings):
    """Direct convolution, any number of spatial dims: x (N, *S, C), w (*K, C, O)."""
    nd = x.ndim - 2
    k, o = w.shape[:nd], w.shape[-1]
    shape = out_shape(x.shape[1:-1], k, strides, dilations, paddings)
    out = np.zeros((x.shape[0], *shape, o))
    for oi, pos, tap in taps(x.shape[1:-1], k, strides, dilations, paddings):
        out[(slice(None), *oi)] += x[(slice(None), *pos)].astype(np.float64) @ w[tap]
    return out.astype(x.dtype)


def depthwise_ref(x, w, strides, dilations, paddings):
    n, _, _, c = x.shape
    mult = w.shape[3]
    shape = out_shape(x.shape[1:3], w.shape[:2], strides, dilations, paddings)
    out = np.zeros((n, *shape, c, mult))
    for (i, j), (r, q), (a, b) in taps(x.shape[1:3], w.shape[:2], strides, dilations, paddings):
        out[:, i, j] += x[:, r, q, :, None].astype(np.float64) * w[a, b]
    return out.reshape(n, *shape, c * mult).astype(x.dtype)


def depthwise_ref_backprop(x, w, g, strides, dilations, paddings):
    """(d input, d filter) of sum(depthwise(x, w) * g), accumulated tap by tap."""
    c, mult = w.shape[2:]
    g5 = g.reshape(*g.shape[:3], c, mult).astype(np.float64)
    dx, dw = np.zeros(x.shape), np.zeros(w.shape)
    for (i, j), (r, q), (a, b) in taps(x.shape[1:3], w.shape[:2], strides, dilations, paddings):
        dx[:, r, q] += (g5[:, i, j] * w[a, b]).sum(-1)
        dw[a, b] += (x[:, r, q, :, None] * g5[:, i, j]).sum(0)
    return dx.astype(x.dtype), dw.astype(x.dtype)


def conv_ref_backprop(x, w, g, strides, dilations, paddings):
    """(d input, d filter) of sum(conv(x, w) * g), any number of spatial dims."""
    nd = x.ndim - 2
    dx, dw = np.zeros(x.shape), np.zeros(w.shape)
    g = g.astype(np.float64)
    for oi, pos, tap in taps(x.shape[1:-1], w.shape[:nd], strides, dilations, paddings):
        go = g[(slice(None), *oi)]
        dx[(slice(None), *pos)] += go @ w[tap].T
        dw[tap] += x[(slice(None), *pos)].T @ go
    return dx.astype(x.dtype), dw.astype(x.dtype)


def pool_ref(x, k, strides, padding, mode):
    """Pooling over the real elements of each window (padding never counts)."""
    nd = x.ndim - 2
    shape = out_shape(x.shape[1:-1], k, strides, (1,) * nd, (padding,) * nd)
    windows = {}
    for oi, pos, _ in taps(x.shape[1:-1], k, strides, (1,) * nd, (padding,) * nd):
        windows.setdefault(oi, []).append(x[(slice(None), *pos)])
    out = np.zeros((x.shape[0], *shape, x.shape[-1]), x.dtype)
    for oi, vals in windows.items():
        stack = np.stack(vals)
        out[(slice(None), *oi)] = stack.max(0) if mode == "max" else \
            stack.astype(np.float64).mean(0)
    return out


def dilated_pool_ref(x, k, dilations, padding, mode):
    """TensorFlow's dilated pooling (stride 1): SAME pads with zeros that count, as its
    space-to-batch formulation does; windows read every d-th element."""
    span = [(kk - 1) * d for kk, d in zip(k, dilations)]
    if padding == "SAME":
        x = np.pad(x, [(0, 0), *[(s // 2, s - s // 2) for s in span], (0, 0)])
    shape = [n - s for n, s in zip(x.shape[1:-1], span)]
    out = np.zeros((x.shape[0], *shape, x.shape[-1]))
    for oi in np.ndindex(*shape):
        vals = np.stack([x[(slice(None), *(o + t * d for o, t, d in zip(oi, tap, dilations)))]
                         for tap in np.ndindex(*k)])
        out[(slice(None), *oi)] = vals.max(0) if mode == "MAX" else vals.mean(0)
    return out.astype(x.dtype)


# ---------------------------------------------------------------------- strategies

@st.composite
def window_case(draw, nd, max_side=5, explicit=False, max_k=3):
    """(spatial sizes, window, strides, dilations, padding): a window that fits."""
    sizes = [draw(st.integers(1, max_side)) for _ in range(nd)]
    k = [draw(st.integers(1, max_k)) for _ in range(nd)]
    strides = [draw(st.integers(1, 2)) for _ in range(nd)]
    dilations = [draw(st.integers(1, 2)) for _ in range(nd)]
    kinds = ["SAME", "VALID", "EXPLICIT"] if explicit else ["SAME", "VALID"]
    padding = draw(st.sampled_from(kinds))
    pads = [(draw(st.integers(0, 2)), draw(st.integers(0, 2))) if padding == "EXPLICIT"
            else (0, 0) for _ in range(nd)]
    if padding != "SAME":  # TensorFlow rejects windows larger than the (padded) input
        for n, kk, d, (lo, hi) in zip(sizes, k, dilations, pads):
            assume(n + lo + hi >= (kk - 1) * d + 1)
    ref_pads = [list(p) for p in pads] if padding == "EXPLICIT" else [padding] * nd
    return sizes, k, strides, dilations, padding, pads, ref_pads


def tf_padding(padding, pads):
    if padding != "EXPLICIT":
        return padding
    return [[0, 0], *[list(p) for p in pads], [0, 0]]


# --------------------------------------------------------------------- depthwise conv

@settings(max_examples=15)
@given(case=window_case(2, explicit=True), dtype=st.sampled_from(FLOATS),
       n=st.integers(0, 2), c=st.integers(0, 3), mult=st.integers(1, 2),
       seed=st.integers(0, 2**16))
def test_depthwise_conv2d_matches_loop_reference(case, dtype, n, c, mult, seed):
    sizes, k, strides, dilations, padding, pads, ref_pads = case
    r = rng(seed)
    x = r.uniform(-1, 1, (n, *sizes, c)).astype(dtype)
    w = r.uniform(-1, 1, (*k, c, mult)).astype(dtype)
    check_against_numpy(
        lambda a, b: tw.nn.depthwise_conv2d(a, b, [1, *strides, 1], tf_padding(padding, pads),
                                            dilations=dilations),
        lambda a, b: depthwise_ref(a, b, strides, dilations, ref_pads), x, w, atol=1e-5)


@settings(max_examples=10)
@given(case=window_case(2, explicit=True), c=st.integers(1, 3), mult=st.integers(1, 2),
       seed=st.integers(0, 2**16))
def test_depthwise_conv2d_backprop_ops_match_loop_adjoints(case, c, mult, seed):
    sizes, k, strides, dilations, padding, pads, ref_pads = case
    r = rng(seed)
    x = r.uniform(-1, 1, (2, *sizes, c))
    w = r.uniform(-1, 1, (*k, c, mult))
    g = r.uniform(-1, 1, depthwise_ref(x, w, strides, dilations, ref_pads).shape)
    dx, dw = depthwise_ref_backprop(x, w, g, strides, dilations, ref_pads)
    pad = tf_padding(padding, pads)
    check_against_numpy(
        lambda ww, gg: tw.nn.depthwise_conv2d_backprop_input(x.shape, ww, gg, strides, pad,
                                                             dilations=dilations),
        lambda ww, gg: dx, w, g)
    check_against_numpy(
        lambda xx, gg: tw.nn.depthwise_conv2d_backprop_filter(xx, w.shape, gg, strides, pad,
                                                              dilations=dilations),
        lambda xx, gg: dw, x, g)


def test_depthwise_conv2d_half_precision_and_unknown_dims():
    x = rng(1).uniform(-1, 1, (1, 5, 4, 3)).astype(np.float16)
    w = rng(2).uniform(-1, 1, (3, 3, 3, 2)).astype(np.float16)
    out = tw.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME")
    assert out.dtype is tw.float16 and out.shape == (1, 5, 4, 6)
    expected = depthwise_ref(x.astype(np.float32), w.astype(np.float32), (1, 1), (1, 1),
                             ["SAME"] * 2)
    np.testing.assert_allclose(out.numpy().astype(np.float32), expected, atol=2e-2)

    @tw.compile(input_signature=[tw.TensorSpec([None, None, 4, 3], tw.float32)])
    def f(a):
        return tw.nn.depthwise_conv2d(a, w.astype(np.float32), [1, 2, 2, 1], "VALID")

    assert f.get_concrete_function().graph.results[0].type.shape == (None, None, 1, 6)
    assert f(np.ones((2, 6, 4, 3), np.float32)).shape == (2, 2, 1, 6)


def test_depthwise_conv2d_errors_name_op_line_and_shapes():
    x = np.zeros((1, 5, 5, 3), np.float32)
    with pytest.raises(tw.errors.ShapeError) as err:
        tw.nn.depthwise_conv2d(x, np.zeros((3, 3, 4, 2), np.float32), [1, 1, 1, 1], "SAME")
    msg = str(err.value)
    assert "DepthwiseConv2dNative" in msg and "test_nn_extra.py" in msg
    assert "f32[1,5,5,3]" in msg and "f32[3,3,4,2]" in msg
    with pytest.raises(tw.errors.InvalidArgumentError,
                       match=r"DepthwiseConv2dNative.*test_nn_extra\.py.*padding.*'FULL'"):
        tw.nn.depthwise_conv2d(x, np.zeros((3, 3, 3, 2), np.float32), 1, "FULL")
    with pytest.raises(tw.errors.ShapeError, match=r"DepthwiseConv2dNative.*rank 4"):
        tw.nn.depthwise_conv2d(x[0], np.zeros((3, 3, 3, 2), np.float32), 1, "SAME")


# ------------------------------------------------------------------------- conv1d

@settings(max_examples=15)
@given(case=window_case(1, max_side=7, explicit=True), dtype=st.sampled_from(FLOATS),
       n=st.integers(0, 2), cin=st.integers(1, 3), cout=st.integers(1, 3),
       seed=st.integers(0, 2**16), form=st.integers(0, 2))
def test_conv1d_matches_loop_reference(case, dtype, n, cin, cout, seed, form):
    sizes, k, strides, dilations, padding, pads, ref_pads = case
    r = rng(seed)
    x = r.uniform(-1, 1, (n, *sizes, cin)).astype(dtype)
    w = r.uniform(-1, 1, (*k, cin, cout)).astype(dtype)
    stride = [strides[0], strides[0], [1, strides[0], 1]][form]
    pad = padding if padding != "EXPLICIT" else [[0, 0], list(pads[0]), [0, 0]]
    check_against_numpy(
        lambda a, b: tw.nn.conv1d(a, b, stride, pad, dilations=dilations[0]),
        lambda a, b: conv_ref(a, b, strides, dilations, ref_pads), x, w, atol=1e-5)


def test_conv1d_transpose_is_the_adjoint_of_conv1d():
    x = rng(3).normal(size=(2, 4, 3))
    w = rng(4).normal(size=(3, 2, 3))  # [width, output_channels, in_channels]
    out = tw.nn.conv1d_transpose(x, w, [2, 8, 2], 2, "SAME").numpy()
    assert out.shape == (2, 8, 2)
    dx, _ = conv_ref_backprop(np.zeros((2, 8, 2)), w, x, (2,), (1,), ["SAME"])
    assert_same(out, dx)
    with pytest.raises(tw.errors.ShapeError,
                       match=r"conv1d_transpose.*test_nn_extra\.py.*3 dims.*\[2, 1, 8, 2\]"):
        tw.nn.conv1d_transpose(x, w, [2, 1, 8, 2], 2, "SAME")


def test_conv1d_errors_name_the_function_and_line():
    with pytest.raises(tw.errors.ShapeError, match=r"conv1d.*test_nn_extra\.py.*rank 3.*NWC"):
        tw.nn.conv1d(np.zeros((1, 4, 4, 2), np.float32), np.zeros((2, 2, 3), np.float32), 1,
                     "SAME")
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"conv1d.*stride.*\[1, 2, 2\]"):
        tw.nn.conv1d(np.zeros((1, 4, 2), np.float32), np.zeros((2, 2, 3), np.float32),
                     [1, 2, 2], "SAME")
    with pytest.raises(tw.errors.ShapeError, match=r"Conv2D.*channels differ"):
        tw.nn.conv1d(np.zeros((1, 4, 2), np.float32), np.zeros((2, 3, 3), np.float32), 1,
                     "SAME")


# ------------------------------------------------------------------------- conv3d

@settings(max_examples=15)
@given(case=window_case(3, max_side=4, max_k=2), dtype=st.sampled_from(FLOATS),
       n=st.integers(0, 2), cin=st.integers(0, 2), cout=st.integers(0, 2),
       seed=st.integers(0, 2**16))
def test_conv3d_matches_loop_reference(case, dtype, n, cin, cout, seed):
    sizes, k, strides, dilations, padding, _, ref_pads = case
    r = rng(seed)
    x = r.uniform(-1, 1, (n, *sizes, cin)).astype(dtype)
    w = r.uniform(-1, 1, (*k, cin, cout)).astype(dtype)
    check_against_numpy(lambda a, b: tw.nn.conv3d(a, b, strides, padding, dilations=dilations),
                        lambda a, b: conv_ref(a, b, strides, dilations, ref_pads), x, w,
                        atol=1e-5)


@settings(max_examples=10)
@given(case=window_case(3, max_side=4, max_k=2), cin=st.integers(1, 2),
       cout=st.integers(1, 2), seed=st.integers(0, 2**16))
def test_conv3d_backprop_ops_match_loop_adjoints(case, cin, cout, seed):
    sizes, k, strides, dilations, padding, _, ref_pads = case
    r = rng(seed)
    x = r.uniform(-1, 1, (2, *sizes, cin))
    w = r.uniform(-1, 1, (*k, cin, cout))
    g = r.uniform(-1, 1, conv_ref(x, w, strides, dilations, ref_pads).shape)
    dx, dw = conv_ref_backprop(x, w, g, strides, dilations, ref_pads)
    check_against_numpy(
        lambda ww, gg: tw.nn.conv3d_backprop_input(x.shape, ww, gg, strides, padding,
                                                   dilations=dilations),
        lambda ww, gg: dx, w, g)
    check_against_numpy(
        lambda xx, gg: tw.nn.conv3d_backprop_filter(xx, w.shape, gg, strides, padding,
                                                    dilations=dilations),
        lambda xx, gg: dw, x, g)


def test_conv3d_transpose_and_unknown_batch():
    x = rng(5).normal(size=(1, 2, 2, 2, 3)).astype(np.float32)
    w = rng(6).normal(size=(2, 2, 2, 4, 3)).astype(np.float32)
    out = tw.nn.conv3d_transpose(x, w, [1, 4, 4, 4, 4], 2, "SAME")
    dx, _ = conv_ref_backprop(np.zeros((1, 4, 4, 4, 4), np.float32), w, x, (2, 2, 2),
                              (1, 1, 1), ["SAME"] * 3)
    assert_same(out.numpy(), dx, atol=1e-5)

    @tw.compile(input_signature=[tw.TensorSpec([None, 4, 4, 4, 4], tw.float32)])
    def f(a):
        return tw.nn.conv3d(a, w, [1, 2, 2, 2, 1], "SAME")

    assert f.get_concrete_function().graph.results[0].type.shape == (None, 2, 2, 2, 3)


def test_conv3d_errors_name_op_line_and_shapes():
    x = np.zeros((1, 4, 4, 4, 2), np.float32)
    with pytest.raises(tw.errors.ShapeError) as err:
        tw.nn.conv3d(x, np.zeros((2, 2, 2, 3, 1), np.float32), 1, "SAME")
    msg = str(err.value)
    assert "Conv3D" in msg and "test_nn_extra.py" in msg
    assert "f32[1,4,4,4,2]" in msg and "f32[2,2,2,3,1]" in msg
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"Conv3D.*strides must have 5"):
        tw.nn.conv3d(x, np.zeros((2, 2, 2, 2, 1), np.float32), [1, 1], "SAME")
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"Conv3D.*padding.*'EXPLICIT'"):
        tw.nn.conv3d(x, np.zeros((2, 2, 2, 2, 1), np.float32), 1, "EXPLICIT")
    with pytest.raises(tw.errors.ShapeError, match=r"Conv3D.*rank 5 \(NDHWC\)"):
        tw.nn.conv3d(x[0], np.zeros((2, 2, 2, 2, 1), np.float32), 1, "SAME")
    with pytest.raises(tw.errors.ShapeError, match=r"Conv3D.*larger than the padded input"):
        tw.nn.conv3d(x, np.zeros((6, 1, 1, 2, 1), np.float32), 1, "VALID")


# ------------------------------------------------- separable and N-D convolution

@settings(max_examples=8)
@given(case=window_case(2, explicit=True), c=st.integers(1, 3), mult=st.integers(1, 2),
       cout=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_separable_conv2d_is_depthwise_then_pointwise(case, c, mult, cout, seed):
    sizes, k, strides, dilations, padding, pads, ref_pads = case
    r = rng(seed)
    x = r.uniform(-1, 1, (2, *sizes, c)).astype(np.float32)
    dw = r.uniform(-1, 1, (*k, c, mult)).astype(np.float32)
    pw = r.uniform(-1, 1, (1, 1, c * mult, cout)).astype(np.float32)

    def expected(a, b, p):
        mid = depthwise_ref(a, b, strides, dilations, ref_pads)
        return conv_ref(mid, p, (1, 1), (1, 1), ["VALID"] * 2)

    check_against_numpy(
        lambda a, b, p: tw.nn.separable_conv2d(a, b, p, [1, *strides, 1],
                                               tf_padding(padding, pads), dilations=dilations),
        expected, x, dw, pw, atol=1e-5)


@settings(max_examples=8)
@given(nd=st.integers(1, 3), data=st.data())
def test_convolution_picks_the_dimension_from_the_filters(nd, data):
    sizes, k, strides, dilations, padding, _, ref_pads = data.draw(
        window_case(nd, max_side=4, max_k=2))
    r = rng(data.draw(st.integers(0, 2**16)))
    x = r.uniform(-1, 1, (2, *sizes, 2))
    w = r.uniform(-1, 1, (*k, 2, 3))
    check_against_numpy(
        lambda a, b: tw.nn.convolution(a, b, strides, padding, dilations=dilations),
        lambda a, b: conv_ref(a, b, strides, dilations, ref_pads), x, w)


def test_separable_and_nd_convolution_errors():
    x = np.zeros((1, 4, 4, 2), np.float32)
    with pytest.raises(tw.errors.ShapeError,
                       match=r"separable_conv2d.*test_nn_extra.*\[1, 1, in_channels.*f32\[3,3,2,1\]"):
        tw.nn.separable_conv2d(x, np.zeros((2, 2, 2, 1), np.float32),
                               np.zeros((3, 3, 2, 1), np.float32), 1, "SAME")
    with pytest.raises(tw.errors.ShapeError, match=r"convolution.*test_nn_extra.*rank 3, 4 or 5"):
        tw.nn.convolution(x, np.zeros((2, 2, 2, 2, 2, 2), np.float32))
    with pytest.raises(tw.errors.ShapeError, match=r"convolution.*f32\[1,4,4,2\].*f32\[2,2,3\]"):
        tw.nn.convolution(x, np.zeros((2, 2, 3), np.float32))


# ------------------------------------------------------------------------- pooling

@settings(max_examples=15)
@given(case=window_case(1, max_side=7), dtype=st.sampled_from((*FLOATS, np.int32)),
       n=st.integers(0, 2), c=st.integers(0, 3), seed=st.integers(0, 2**16),
       mode=st.sampled_from(["max", "avg"]))
def test_pool1d_matches_loop_reference(case, dtype, n, c, seed, mode):
    sizes, k, strides, _, padding, _, _ = case
    assume(padding == "SAME" or sizes[0] >= k[0])
    assume(mode == "max" or dtype != np.int32)
    x = (rng(seed).uniform(-1, 1, (n, *sizes, c)) * 100).astype(dtype)
    fn = tw.nn.max_pool1d if mode == "max" else tw.nn.avg_pool1d
    check_against_numpy(lambda a: fn(a, k[0], [1, strides[0], 1], padding),
                        lambda a: pool_ref(a, k, strides, padding, mode), x)


@settings(max_examples=15)
@given(case=window_case(3, max_side=4), dtype=st.sampled_from((*FLOATS, np.int32)),
       n=st.integers(0, 2), c=st.integers(0, 2), seed=st.integers(0, 2**16),
       mode=st.sampled_from(["max", "avg"]))
def test_pool3d_matches_loop_reference(case, dtype, n, c, seed, mode):
    sizes, k, strides, _, padding, _, _ = case
    assume(padding == "SAME" or all(s >= kk for s, kk in zip(sizes, k)))
    assume(mode == "max" or dtype != np.int32)
    x = (rng(seed).uniform(-1, 1, (n, *sizes, c)) * 100).astype(dtype)
    fn = tw.nn.max_pool3d if mode == "max" else tw.nn.avg_pool3d
    check_against_numpy(lambda a: fn(a, k, strides, padding),
                        lambda a: pool_ref(a, k, strides, padding, mode), x)


def distinct(shape, seed):
    """Values 0.1 apart (no ties), so the max of a window is one element."""
    size = math.prod(shape)
    return rng(seed).permutation(np.arange(size, dtype=np.float64)).reshape(shape) * 0.1


def pool_ref_backprop(x, g, k, strides, padding, mode):
    """d(sum(pool(x) * g))/dx with the loops of pool_ref: the max's element, or a share of
    the real elements of the window."""
    nd = x.ndim - 2
    windows = {}
    for oi, pos, _ in taps(x.shape[1:-1], k, strides, (1,) * nd, (padding,) * nd):
        windows.setdefault(oi, []).append(pos)
    dx = np.zeros(x.shape)
    for oi, positions in windows.items():
        go = g[(slice(None), *oi)]
        if mode == "avg":
            for pos in positions:
                dx[(slice(None), *pos)] += go / len(positions)
            continue
        vals = np.stack([x[(slice(None), *pos)] for pos in positions])  # (taps, N, C)
        best = vals.argmax(0)
        for b, ch in np.ndindex(*best.shape):
            pos = positions[best[b, ch]]
            dx[(b, *pos, ch)] += go[b, ch]
    return dx


@settings(max_examples=10)
@given(case=window_case(3, max_side=4), c=st.integers(1, 2), seed=st.integers(0, 2**16))
def test_pool3d_gradient_ops_match_loop_adjoints(case, c, seed):
    sizes, k, strides, _, padding, _, _ = case
    assume(padding == "SAME" or all(s >= kk for s, kk in zip(sizes, k)))
    x = distinct((2, *sizes, c), seed)
    y = pool_ref(x, k, strides, padding, "max")
    g = rng(seed).uniform(-1, 1, y.shape)
    dmax = pool_ref_backprop(x, g, k, strides, padding, "max")
    davg = pool_ref_backprop(x, g, k, strides, padding, "avg")
    check_against_numpy(lambda xx, yy, gg: tw.nn.max_pool3d_grad(xx, yy, gg, k, strides, padding),
                        lambda xx, yy, gg: dmax, x, y, g)
    check_against_numpy(lambda gg: tw.nn.avg_pool3d_grad(x.shape, gg, k, strides, padding),
                        lambda gg: davg, g)


def test_max_pool3d_grad_routes_ties_to_the_first_maximum():
    x = np.array([[3, 3], [1, 3]], np.float32).reshape(1, 1, 2, 2, 1)
    x = np.concatenate([x, x], axis=1)  # depth 2: the first maximum is at depth 0
    y = tw.nn.max_pool3d(x, 2, 2, "VALID")
    dx = tw.nn.max_pool3d_grad(x, y, np.full((1, 1, 1, 1, 1), 5, np.float32), 2, 2, "VALID")
    expected = np.zeros_like(x)
    expected[0, 0, 0, 0, 0] = 5
    assert_same(dx.numpy(), expected)


@settings(max_examples=12)
@given(nd=st.integers(1, 3), data=st.data())
def test_pool_dispatches_by_window_and_matches_references(nd, data):
    sizes, k, strides, dilations, padding, _, _ = data.draw(window_case(nd, max_side=4))
    kind = data.draw(st.sampled_from(["MAX", "AVG"]))
    dilated = data.draw(st.booleans()) and max(dilations) > 1  # dilation 1 is plain pooling
    if dilated:
        strides = [1] * nd
    else:
        dilations = [1] * nd
        assume(padding == "SAME" or all(s >= kk for s, kk in zip(sizes, k)))
    dtype = data.draw(st.sampled_from(FLOATS))
    x = rng(data.draw(st.integers(0, 2**16))).uniform(-1, 1, (2, *sizes, 2)).astype(dtype)
    if dilated:
        def expected(a):
            return dilated_pool_ref(a, k, dilations, padding, kind)
    else:
        def expected(a):
            return pool_ref(a, k, strides, padding, kind.lower())
    check_against_numpy(lambda a: tw.nn.pool(a, k, kind, strides, padding, dilations=dilations),
                        expected, x, atol=1e-6)


def test_dilated_same_pooling_counts_zero_padding_as_tensorflow_does():
    # TensorFlow's space-to-batch form pads with zeros that take part in the window: a
    # window of 2 taps 2 apart pads one zero on each side, [0, -1, -2, -3, -4, -5, 0]
    x = -np.arange(1, 6, dtype=np.float32).reshape(1, 5, 1)
    out = tw.nn.pool(x, [2], "MAX", padding="SAME", dilations=[2]).numpy().ravel()
    np.testing.assert_array_equal(out, [0, -1, -2, -3, 0])
    out = tw.nn.pool(x, [2], "AVG", padding="SAME", dilations=[2]).numpy().ravel()
    np.testing.assert_allclose(out, [-1, -2, -3, -4, -2])


def test_max_pool_and_avg_pool_pick_the_dimension_from_the_rank():
    x1 = rng(7).normal(size=(2, 6, 3)).astype(np.float32)
    x3 = rng(8).normal(size=(1, 4, 4, 4, 2)).astype(np.float32)
    assert_same(tw.nn.max_pool(x1, 2, 2, "VALID").numpy(),
                pool_ref(x1, (2,), (2,), "VALID", "max"))
    assert_same(tw.nn.avg_pool(x3, [1, 2, 2, 2, 1], [1, 1, 2, 1, 1], "SAME").numpy(),
                pool_ref(x3, (2, 2, 2), (1, 2, 1), "SAME", "avg"))
    assert_same(tw.nn.max_pool(x3, 3, 1, "SAME").numpy(),
                pool_ref(x3, (3, 3, 3), (1, 1, 1), "SAME", "max"))


def test_pool_errors_name_the_function_or_op_and_line():
    x = np.zeros((1, 4, 4, 4, 1), np.float32)
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"MaxPool3D.*test_nn_extra.*ksize"):
        tw.nn.max_pool3d(x, [2, 2, 2, 2, 2], 1, "SAME")
    with pytest.raises(tw.errors.DTypeError, match=r"AvgPool3D.*floating"):
        tw.nn.avg_pool3d(x.astype(np.int32), 2, 2, "SAME")
    with pytest.raises(tw.errors.ShapeError, match=r"MaxPool3D.*rank 5"):
        tw.nn.max_pool3d(x[0], 2, 2, "SAME")
    with pytest.raises(tw.errors.ShapeError, match=r"avg_pool1d.*test_nn_extra.*rank 3"):
        tw.nn.avg_pool1d(x[0], 2, 2, "SAME")
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"pool.*test_nn_extra.*'MEAN'"):
        tw.nn.pool(x, [2, 2, 2], "MEAN")
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"pool.*strides > 1.*dilations"):
        tw.nn.pool(x, [2, 2, 2], "MAX", strides=[2, 2, 2], dilations=[2, 2, 2])
    with pytest.raises(tw.errors.ShapeError, match=r"pool.*rank 4 \(NHWC\).*f32\[1,4,4,4,1\]"):
        tw.nn.pool(x, [2, 2], "MAX")


# -------------------------------------------------------------------- normalization

def np_fused_batch_norm(x, scale, offset, mean, var, eps, training, factor, channel_first):
    xf = np.moveaxis(x.astype(np.float64), 1, -1) if channel_first else x.astype(np.float64)
    eps = max(eps, 1.001e-5)
    if training:
        flat = xf.reshape(-1, xf.shape[-1])
        bm, bv = flat.mean(0), flat.var(0)
        n = flat.shape[0]
        y = (xf - bm) / np.sqrt(bv + eps) * scale + offset
        out_mean = (1 - factor) * mean + factor * bm if factor != 1 else bm
        unbiased = bv * n / max(n - 1, 1)
        out_var = (1 - factor) * var + factor * unbiased if factor != 1 else unbiased
    else:
        y = (xf - mean) / np.sqrt(var + eps) * scale + offset
        out_mean, out_var = mean, var
    y = np.moveaxis(y, -1, 1) if channel_first else y
    stat = scale.dtype
    return y.astype(x.dtype), np.asarray(out_mean).astype(stat), np.asarray(out_var).astype(stat)


@settings(max_examples=12)
@given(data=st.data())
def test_fused_batch_norm_matches_numpy(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    fmt = data.draw(st.sampled_from(["NHWC", "NCHW", "NDHWC", "NCDHW"]))
    shape = data.draw(hnp.array_shapes(min_dims=len(fmt), max_dims=len(fmt), min_side=1,
                                       max_side=3))
    channel_first = fmt[1] == "C"
    c = shape[1] if channel_first else shape[-1]
    training = data.draw(st.booleans())
    factor = data.draw(st.sampled_from([1.0, 0.3]))
    eps = data.draw(st.sampled_from([1e-3, 1e-8]))
    r = rng(data.draw(st.integers(0, 2**16)))
    x = r.normal(size=shape).astype(dtype)
    scale, offset = r.uniform(0.5, 2, c).astype(dtype), r.normal(size=c).astype(dtype)
    mean, var = r.normal(size=c).astype(dtype), r.uniform(0.5, 2, c).astype(dtype)
    check_against_numpy(
        lambda *a: tw.nn.fused_batch_norm(*a, epsilon=eps, data_format=fmt, is_training=training,
                                          exponential_avg_factor=factor),
        lambda *a: np_fused_batch_norm(*a, eps, training, factor, channel_first),
        x, scale, offset, mean, var, rtol=1e-4, atol=1e-5)


def test_fused_batch_norm_training_without_statistics_and_half_precision():
    x = rng(9).normal(size=(4, 3, 3, 2)).astype(np.float16)
    scale, offset = np.array([1.0, 2.0], np.float32), np.array([0.5, -0.5], np.float32)
    y, m, v = tw.nn.fused_batch_norm(x, scale, offset)
    assert y.dtype is tw.float16 and m.dtype is tw.float32 and v.dtype is tw.float32
    zeros = np.zeros(2, np.float32)
    ey, em, ev = np_fused_batch_norm(x, scale, offset, zeros, zeros, 1e-3, True, 1.0, False)
    np.testing.assert_allclose(y.numpy().astype(np.float32), ey.astype(np.float32), atol=2e-2)
    np.testing.assert_allclose(m.numpy(), em, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(v.numpy(), ev, rtol=1e-3)
    # the returned variance is Bessel-corrected: 36 elements per channel
    flat = x.astype(np.float64).reshape(-1, 2)
    np.testing.assert_allclose(v.numpy(), flat.var(0, ddof=1), rtol=1e-3)


def test_fused_batch_norm_with_unknown_batch_counts_at_run_time():
    scale, offset = np.ones(2, np.float64), np.zeros(2, np.float64)

    @tw.compile(input_signature=[tw.TensorSpec([None, 2, 2, 2], tw.float64)])
    def f(x):
        return tw.nn.fused_batch_norm(x, scale, offset)[2]

    x = rng(10).normal(size=(3, 2, 2, 2))
    np.testing.assert_allclose(f(x), x.reshape(-1, 2).var(0, ddof=1), rtol=1e-12)


def test_fused_batch_norm_errors():
    x = np.zeros((2, 3, 3, 4), np.float32)
    s = np.ones(4, np.float32)
    with pytest.raises(tw.errors.InvalidArgumentError,
                       match=r"fused_batch_norm.*test_nn_extra.*mean and variance"):
        tw.nn.fused_batch_norm(x, s, s, is_training=False)
    with pytest.raises(tw.errors.ShapeError, match=r"fused_batch_norm.*scale.*4 channels"):
        tw.nn.fused_batch_norm(x, np.ones(3, np.float32), s)
    with pytest.raises(tw.errors.ShapeError, match=r"fused_batch_norm.*rank 4 \(NHWC\)"):
        tw.nn.fused_batch_norm(x[0], s, s)
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"fused_batch_norm.*'NWC'"):
        tw.nn.fused_batch_norm(x, s, s, data_format="NWC")


def np_layer_norm(x, gamma, beta, axes, eps):
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=tuple(axes), keepdims=True)
    var = x64.var(axis=tuple(axes), keepdims=True)
    y = (x64 - mean) / np.sqrt(var + eps)
    shape = [x.shape[i] if i in axes else 1 for i in range(x.ndim)]
    if gamma is not None:
        y = y * gamma.reshape(shape)
    if beta is not None:
        y = y + beta.reshape(shape)
    return y.astype(x.dtype)


@settings(max_examples=15)
@given(data=st.data())
def test_layer_normalization_matches_numpy(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4))
    rank = len(shape)
    axes = sorted(data.draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank,
                                     unique=True)))
    r = rng(data.draw(st.integers(0, 2**16)))
    x = r.normal(size=shape).astype(dtype) * 3
    pshape = tuple(shape[i] for i in axes)
    gamma = r.uniform(0.5, 2, pshape).astype(dtype) if data.draw(st.booleans()) else None
    beta = r.normal(size=pshape).astype(dtype) if data.draw(st.booleans()) else None
    axis = axes[0] - rank if len(axes) == 1 else axes  # negative single axes too
    check_against_numpy(
        lambda a: tw.nn.layer_normalization(a, gamma, beta, axis=axis, epsilon=1e-3),
        lambda a: np_layer_norm(a, gamma, beta, axes, 1e-3), x, rtol=1e-4, atol=1e-4)


def test_layer_normalization_errors():
    x = np.zeros((2, 3, 4), np.float32)
    with pytest.raises(tw.errors.ShapeError, match=r"layer_normalization.*test_nn_extra.*axis 3"):
        tw.nn.layer_normalization(x, axis=3)
    with pytest.raises(tw.errors.ShapeError,
                       match=r"layer_normalization.*gamma must have shape \[3\].*f32\[5\]"):
        tw.nn.layer_normalization(x, np.ones(5, np.float32), axis=1)


# ------------------------------------------------------------------------ namespaces

NEW_NAMES = ["fused_batch_norm", "layer_normalization", "depthwise_conv2d", "conv1d", "conv3d",
             "conv2d_transpose", "conv1d_transpose", "conv3d_transpose", "avg_pool1d",
             "avg_pool3d", "max_pool1d", "max_pool3d", "pool", "avg_pool2d", "max_pool2d",
             "log_softmax", "embedding_lookup", "top_k", "in_top_k", "separable_conv2d",
             "convolution"]


def test_tf_nn_and_tw_nn_list_the_same_new_names():
    for name in NEW_NAMES:
        assert name in dir(tw.nn) and name in dir(tf.nn), name


def test_v1_nn_builds_into_the_default_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4, 4, 4, 2])
        w = np.ones((2, 2, 2, 2, 3), np.float32)
        y = tf.nn.max_pool3d(tf.nn.conv3d(x, w, [1, 1, 1, 1, 1], "SAME"), 2, 2, "VALID")
        d = tf.nn.depthwise_conv2d(tf.placeholder(tf.float32, [1, 3, 3, 2]),
                                   np.ones((2, 2, 2, 1), np.float32), [1, 1, 1, 1], "VALID")
        with tf.Session() as sess:
            out = sess.run(y, {x: np.ones((1, 4, 4, 4, 2), np.float32)})
            assert out.shape == (1, 2, 2, 2, 3)
            assert np.all(out == 16)  # 8 taps x 2 channels of ones
            assert d.shape == (1, 2, 2, 2)


def test_v1_spellings_of_depthwise_conv1d_and_pool():
    x = rng(11).normal(size=(1, 5, 5, 2))
    w = rng(12).normal(size=(2, 2, 2, 2))
    x1 = rng(13).normal(size=(2, 6, 2))
    w1 = rng(14).normal(size=(3, 2, 1))
    g = tf.Graph()
    with g.as_default():
        d = tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", rate=[2, 2])
        native = tf.nn.depthwise_conv2d_native(x, w, [1, 1, 1, 1], "VALID")
        c = tf.nn.conv1d(value=x1, filters=w1, stride=2, padding="VALID", use_cudnn_on_gpu=True)
        p = tf.nn.pool(x, [2, 2], "AVG", "SAME", dilation_rate=[1, 2])
        conv = tf.nn.convolution(x1, w1, "SAME", dilation_rate=[2])
        sep = tf.nn.separable_conv2d(x, w, np.ones((1, 1, 4, 1)), [1, 1, 1, 1], "SAME",
                                     rate=[2, 1])
        with tf.Session() as sess:
            d, native, c, p, conv, sep = sess.run([d, native, c, p, conv, sep])
    assert_same(conv, conv_ref(x1, w1, (1,), (2,), ["SAME"]))
    assert_same(sep, depthwise_ref(x, w, (1, 1), (2, 1), ["SAME"] * 2).sum(-1, keepdims=True))
    assert_same(d, depthwise_ref(x, w, (1, 1), (2, 2), ["SAME"] * 2))
    assert_same(native, depthwise_ref(x, w, (1, 1), (1, 1), ["VALID"] * 2))
    assert_same(c, conv_ref(x1, w1, (2,), (1,), ["VALID"]))
    assert_same(p, dilated_pool_ref(x, (2, 2), (1, 2), "SAME", "AVG"))


def test_taps_helper_covers_each_window_once():
    # the references' loop structure: a SAME 3x3 window on 3x3 touches 4..9 real elements
    seen = {}
    for oi, pos, _ in taps((3, 3), (3, 3), (1, 1), (1, 1), ("SAME", "SAME")):
        seen.setdefault(oi, set()).add(pos)
    assert len(seen) == 9 and len(seen[(1, 1)]) == 9 and len(seen[(0, 0)]) == 4
    assert all(len(v) == len(set(v)) for v in seen.values())
    assert list(itertools.islice(seen, 1)) == [(0, 0)]
