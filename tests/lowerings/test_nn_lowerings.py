"""Native lowerings of the nn ops (convolutions and their gradients, pooling and its
gradients, BiasAdd, BiasAddGrad, L2Loss) against their reference kernels.

Inputs are small multiples of 1/4, so convolution sums are exact in float32 whatever
the summation order (the comparison then checks indexing, not rounding) and pooling
windows are full of ties. Each example also picks which code path the convolutions take
(`mode`): the direct loop nest, im2col + GEMM (both GEMM flavours, and tiny blocks so
blocks have tails), chunked over threads, or with no stack to spare."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from tensorweave.compiler.ops.nn import window_output_size
from tensorweave.errors import ShapeError
from tensorweave.targets.cpu import parallel
from tensorweave.targets.cpu.lowering import compile_node, find_lowering
from tensorweave.targets.cpu.lowerings import nn as nn_low
from tests.helpers import tolerance
from tests.lowerings.helpers import check_lowering, reference_outputs, single_node

DTYPES = [np.float32, np.float64]
POOL_MODES = ["direct", "threads"]  # one thread, or chunks of images on 3 threads
CONV_MODES = ["direct", "direct-packed", "direct-blocks", "threads", "im2col", "im2col-blocks",
              "tight"]


def quarters(rng: np.random.Generator, shape, dtype, span: int = 4) -> np.ndarray:
    """Multiples of 1/4 in [-span/4, span/4]."""
    return (rng.integers(-span, span + 1, size=shape) / 4).astype(dtype)


@contextlib.contextmanager
def mode(name: str, patch: int = 1, itemsize: int = 4) -> Iterator[tuple[str, ...]]:
    """Set the lowering knobs for conv path `name`; yields the GEMM modes to check."""
    saved = {k: getattr(nn_low, k) for k in ("DIRECT", "SCRATCH_BYTES", "DIRECT_STACK_BYTES",
                                              "PACK_STRIDE_BYTES", "BLOCK_TERMS")}
    saved_flops, saved_env = parallel.MIN_GEMM_FLOPS, os.environ.get("TW_NUM_THREADS")
    saved_elements = parallel.MIN_FUSED_ELEMENTS
    gemm_modes: tuple[str, ...] = ("blas",)
    try:
        if name == "direct-packed":
            nn_low.PACK_STRIDE_BYTES = 0
        elif name == "direct-blocks":  # sums in blocks of 1 to 3 terms
            nn_low.BLOCK_TERMS = 1 + patch % 3
        elif name == "threads":  # chunks on 3 threads, however small the work
            parallel.MIN_GEMM_FLOPS = parallel.MIN_FUSED_ELEMENTS = 0
            os.environ["TW_NUM_THREADS"] = "3"
        elif name == "im2col":
            nn_low.DIRECT = False
            gemm_modes = ("blas", "generated")
        elif name == "im2col-blocks":  # 1 to 3 patch rows per block
            nn_low.DIRECT = False
            nn_low.SCRATCH_BYTES = patch * itemsize * (1 + patch % 3)
        elif name == "tight":  # direct only where no frame is needed, filters unpacked
            nn_low.DIRECT_STACK_BYTES = 0
        yield gemm_modes
    finally:
        for k, v in saved.items():
            setattr(nn_low, k, v)
        parallel.MIN_GEMM_FLOPS, parallel.MIN_FUSED_ELEMENTS = saved_flops, saved_elements
        if saved_env is None:
            os.environ.pop("TW_NUM_THREADS", None)
        else:
            os.environ["TW_NUM_THREADS"] = saved_env


def with_a_zero(draw, dims: tuple[int, ...]) -> tuple[int, ...]:
    """`dims`, one of them zeroed one time in ten (empty tensors)."""
    if draw(st.integers(0, 9)):
        return dims
    k = draw(st.integers(0, len(dims) - 1))
    return dims[:k] + (0,) + dims[k + 1:]


@st.composite
def conv_cases(draw):
    """(dtype, input shape, filter shape, output shape, attrs) of a valid convolution."""
    dtype = draw(st.sampled_from(DTYPES))
    n, h, w = draw(st.integers(1, 2)), draw(st.integers(1, 7)), draw(st.integers(1, 7))
    c = draw(st.one_of(st.integers(1, 4), st.sampled_from([8, 9])))
    o = draw(st.one_of(st.integers(1, 5), st.sampled_from([8, 12, 17, 20])))
    n, h, w, c, o = with_a_zero(draw, (n, h, w, c, o))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides = (1, draw(st.integers(1, 3)), draw(st.integers(1, 3)), 1)
    dilations = (1, draw(st.sampled_from([1, 1, 2])), draw(st.sampled_from([1, 1, 2])), 1)
    padding = draw(st.sampled_from(["SAME", "VALID", "EXPLICIT"]))
    attrs = dict(strides=strides, padding=padding, dilations=dilations)
    pads = [(0, 0), (0, 0)]
    if padding == "EXPLICIT":
        pads = [(draw(st.integers(0, 3)), draw(st.integers(0, 3))) for _ in range(2)]
        attrs["explicit_paddings"] = (0, 0, *pads[0], *pads[1], 0, 0)
    try:
        oh = window_output_size(h, kh, strides[1], dilations[1], padding, pads[0])[0]
        ow = window_output_size(w, kw, strides[2], dilations[2], padding, pads[1])[0]
    except ShapeError:
        assume(False)
    return dtype, (n, h, w, c), (kh, kw, c, o), (n, oh, ow, o), attrs


def check_conv(op: str, arrays, path: str, patch: int, **attrs) -> None:
    with mode(path, patch, arrays[0].dtype.itemsize) as gemm_modes:
        check_lowering(op, arrays, gemm_modes=gemm_modes, **attrs)


@settings(max_examples=40, deadline=None)
@given(conv_cases(), st.sampled_from(CONV_MODES), st.integers(0, 2**31))
def test_conv2d(case, path, seed):
    dtype, xs, ws, _, attrs = case
    rng = np.random.default_rng(seed)
    check_conv("Conv2D", [quarters(rng, xs, dtype), quarters(rng, ws, dtype)], path,
               ws[0] * ws[1] * ws[2], **attrs)


@settings(max_examples=40, deadline=None)
@given(conv_cases(), st.sampled_from(CONV_MODES), st.booleans(), st.integers(0, 2**31))
def test_conv2d_backprop_input(case, path, like, seed):
    dtype, xs, ws, ys, attrs = case
    rng = np.random.default_rng(seed)
    arrays = [quarters(rng, ws, dtype), quarters(rng, ys, dtype)]
    if like:  # the optional operand with the input's shape (not read)
        arrays.append(np.zeros(xs, dtype))
    check_conv("Conv2DBackpropInput", arrays, path, ws[0] * ws[1] * ws[2], input_shape=xs,
               **attrs)


@settings(max_examples=40, deadline=None)
@given(conv_cases(), st.sampled_from(CONV_MODES), st.integers(0, 2**31))
def test_conv2d_backprop_filter(case, path, seed):
    dtype, xs, ws, ys, attrs = case
    rng = np.random.default_rng(seed)
    check_conv("Conv2DBackpropFilter", [quarters(rng, xs, dtype), quarters(rng, ys, dtype)],
               path, ws[0] * ws[1] * ws[2], filter_shape=ws, **attrs)


@pytest.mark.parametrize("path", ["direct", "threads", "im2col"])
def test_conv_w3_shapes(path):
    """The benchmark's second convolution (5x5x32 -> 64, SAME) on a batch of 2 with
    normal float32 inputs: sums of 800 products round differently in every order, so
    each op is compared with the float64 result, and must be as close to it as the
    float32 reference kernel is (up to a factor 2)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 14, 14, 32))
    w = rng.standard_normal((5, 5, 32, 64)) * 0.1
    g = rng.standard_normal((2, 14, 14, 64))
    same = dict(strides=(1, 1, 1, 1), padding="SAME")
    for op, arrays, attrs in [("Conv2D", [x, w], same),
                              ("Conv2DBackpropInput", [w, g], dict(input_shape=x.shape, **same)),
                              ("Conv2DBackpropFilter", [x, g],
                               dict(filter_shape=w.shape, **same))]:
        f32 = [a.astype(np.float32) for a in arrays]
        truth = reference_outputs(single_node(op, arrays, **attrs), arrays)[0]
        node = single_node(op, f32, **attrs)
        ref = reference_outputs(node, f32)[0]
        with mode(path):
            out = compile_node(node)(f32)[0]
        assert out.dtype == np.float32 and out.shape == truth.shape
        err, ref_err = np.max(np.abs(out - truth)), np.max(np.abs(ref - truth))
        assert err <= 2 * ref_err + 1e-6, (op, err, ref_err)


@st.composite
def pool_cases(draw):
    """(dtype, input shape, output shape, attrs) of a valid pooling."""
    dtype = draw(st.sampled_from(DTYPES))
    n, h, w = draw(st.integers(1, 2)), draw(st.integers(1, 7)), draw(st.integers(1, 7))
    c = draw(st.one_of(st.integers(1, 9), st.sampled_from([16, 33, 41])))
    n, h, w, c = with_a_zero(draw, (n, h, w, c))
    k = (1, draw(st.integers(1, 4)), draw(st.integers(1, 4)), 1)
    strides = (1, draw(st.integers(1, 3)), draw(st.integers(1, 3)), 1)
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    try:
        oh = window_output_size(h, k[1], strides[1], 1, padding)[0]
        ow = window_output_size(w, k[2], strides[2], 1, padding)[0]
    except ShapeError:
        assume(False)
    return dtype, (n, h, w, c), (n, oh, ow, c), dict(ksize=k, strides=strides, padding=padding)


def pool_input(rng: np.random.Generator, shape, dtype, specials: bool) -> np.ndarray:
    """Few distinct values (ties everywhere); with `specials`, some -inf and NaN."""
    x = quarters(rng, shape, dtype, span=2)
    if specials and x.size:
        x[rng.random(shape) < 0.3] = -np.inf
        x[rng.random(shape) < 0.05] = np.nan
    return x


@settings(max_examples=25, deadline=None)
@given(pool_cases(), st.booleans(), st.sampled_from(POOL_MODES), st.integers(0, 2**31))
def test_max_pool(case, specials, path, seed):
    dtype, xs, _, attrs = case
    with mode(path):
        check_lowering("MaxPool", [pool_input(np.random.default_rng(seed), xs, dtype, specials)],
                       **attrs)


@settings(max_examples=25, deadline=None)
@given(pool_cases(), st.booleans(), st.sampled_from(POOL_MODES), st.integers(0, 2**31))
def test_max_pool_grad(case, specials, path, seed):
    dtype, xs, ys, attrs = case
    rng = np.random.default_rng(seed)
    x = pool_input(rng, xs, dtype, specials)
    # orig_output is not read (the reference recomputes the max), so any values will do
    with mode(path):
        check_lowering("MaxPoolGrad", [x, np.zeros(ys, dtype), quarters(rng, ys, dtype)],
                       **attrs)


@settings(max_examples=25, deadline=None)
@given(pool_cases(), st.sampled_from(POOL_MODES), st.integers(0, 2**31))
def test_avg_pool(case, path, seed):
    dtype, xs, _, attrs = case
    with mode(path):
        check_lowering("AvgPool", [quarters(np.random.default_rng(seed), xs, dtype)], **attrs)


@settings(max_examples=25, deadline=None)
@given(pool_cases(), st.booleans(), st.sampled_from(POOL_MODES), st.integers(0, 2**31))
def test_avg_pool_grad(case, like, path, seed):
    dtype, xs, ys, attrs = case
    arrays = [quarters(np.random.default_rng(seed), ys, dtype)]
    if like:
        arrays.append(np.zeros(xs, dtype))
    with mode(path):
        check_lowering("AvgPoolGrad", arrays, orig_input_shape=xs, **attrs)


@pytest.mark.parametrize("fill", [-np.inf, np.nan, 1.0])
@pytest.mark.parametrize("window", [(3, 1), (2, 2), (3, 2)])
def test_max_pool_grad_routing(fill, window):
    """Constant windows: the gradient goes to each window's first tap, which for an
    all -inf window starting in SAME padding is the padding (the gradient is dropped),
    and NaN goes to the first NaN."""
    k, s = window
    x = np.full((1, 5, 4, 3), fill, np.float32)
    x[0, 2, 1, 1] = 7.0  # one window family with a real maximum
    attrs = dict(ksize=(1, k, k, 1), strides=(1, s, s, 1), padding="SAME")
    y = np.zeros((1, -(-5 // s), -(-4 // s), 3), np.float32)
    g = np.arange(1, 1 + y.size, dtype=np.float32).reshape(y.shape)
    check_lowering("MaxPoolGrad", [x, y, g], **attrs)
    check_lowering("MaxPool", [x], **attrs)


@pytest.mark.parametrize("dtype", DTYPES)
def test_pool_partition_paths(dtype):
    """Windows that partition the input (stride == ksize, no padding) store gradients
    instead of adding them: the W3 pooling (2x2, stride 2) on even and odd sizes."""
    rng = np.random.default_rng(0)
    for h in (4, 5):
        x = pool_input(rng, (2, h, 6, 10), dtype, specials=False)
        attrs = dict(ksize=(1, 2, 2, 1), strides=(1, 2, 2, 1), padding="SAME")
        y = check_lowering("MaxPool", [x], **attrs)[0]
        g = quarters(rng, y.shape, dtype)
        check_lowering("MaxPoolGrad", [x, y, g], **attrs)
        check_lowering("AvgPoolGrad", [g], orig_input_shape=x.shape, **attrs)


@st.composite
def bias_shapes(draw):
    lead = draw(st.lists(st.integers(0, 5), min_size=1, max_size=3))
    return (*lead, draw(st.one_of(st.integers(0, 9), st.sampled_from([16, 33, 70]))))


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(DTYPES), bias_shapes(), st.sampled_from(POOL_MODES), st.integers(0, 2**31))
def test_bias_add(dtype, shape, path, seed):
    rng = np.random.default_rng(seed)
    with mode(path):
        check_lowering("BiasAdd", [rng.standard_normal(shape).astype(dtype),
                                   rng.standard_normal(shape[-1:]).astype(dtype)])


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(DTYPES), bias_shapes(), st.booleans(), st.integers(0, 2**31))
@example(np.float32, (4, 4, 4, 70), False, 0)  # (a channel's sum cancels to 0.0020)
def test_bias_add_grad(dtype, shape, small_blocks, seed):
    g = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    saved = nn_low.CHANNEL_BLOCK
    nn_low.CHANNEL_BLOCK = 4 if small_blocks else saved  # blocks of channels, with a tail
    # A sum over every axis but the last, in another order than NumPy's: its rounding
    # error is bounded by (terms) * eps * sum|g| per channel, which for a sum that
    # cancels to near 0 is above the default absolute tolerance (seen: 64 float32
    # terms summing to 0.0020, 1.9e-6 apart).
    terms = int(np.prod(shape[:-1]))
    bound = terms * float(np.finfo(dtype).eps) * float(
        np.abs(g.astype(np.float64)).reshape(terms, shape[-1]).sum(axis=0).max(initial=0.0))
    atol = max(tolerance(dtype)["atol"], bound)
    try:
        check_lowering("BiasAddGrad", [g], tol={"atol": atol})
    finally:
        nn_low.CHANNEL_BLOCK = saved


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(DTYPES), st.lists(st.integers(0, 6), max_size=3), st.integers(0, 2**31))
def test_l2_loss(dtype, shape, seed):
    check_lowering("L2Loss", [np.random.default_rng(seed).standard_normal(shape).astype(dtype)])


def test_long_sums_accumulate_in_f64():
    """200,000 equal float32 terms: exact in f64, off by ~2e-3 relative summed in f32
    one row after another (as NumPy's reference does along a non-contiguous axis, so the
    comparison is with the exact sums, not with the reference kernel)."""
    v = np.float32(0.1)
    g = np.full((200_000, 2), v, np.float32)
    out = compile_node(single_node("BiasAddGrad", [g]))([g])[0]
    assert out.dtype == np.float32 and out.tolist() == [np.float32(200_000 * np.float64(v))] * 2
    t = np.full(200_000, v, np.float32)
    out = compile_node(single_node("L2Loss", [t]))([t])[0]
    assert out.dtype == np.float32 and out == np.float32(200_000 * np.float64(v) ** 2 / 2)


@pytest.mark.parametrize("op, arrays, attrs", [
    ("BiasAdd", [np.ones((2, 3), np.int32), np.ones(3, np.int32)], {}),
    ("BiasAddGrad", [np.ones((2, 3), np.int64)], {}),
    ("MaxPool", [np.ones((1, 2, 2, 1), np.int32)],
     dict(ksize=(1, 2, 2, 1), strides=(1, 1, 1, 1), padding="VALID")),
    ("Conv2D", [np.ones((1, 3, 3, 1), np.float16), np.ones((2, 2, 1, 1), np.float16)],
     dict(strides=(1, 1, 1, 1), padding="VALID")),
])
def test_declines_other_dtypes(op, arrays, attrs):
    assert find_lowering(single_node(op, arrays, **attrs)) is None


@pytest.mark.parametrize("path", ["direct", "threads"])
def test_cnn_train_step_on_cpu_target(path):
    """A small CNN training step (the W3 layers, scaled down) compiled whole for the cpu
    target, where these lowerings run inside one native step function (chunks on
    threads too), against the reference target."""
    import tensorweave as tw

    rng = np.random.default_rng(1)
    shapes = [(3, 3, 2, 8), (8,), (3, 3, 8, 12), (12,), (2 * 2 * 12, 5)]
    params = [(rng.standard_normal(s) * 0.3).astype(np.float32) for s in shapes]
    x = rng.random((4, 8, 8, 2), dtype=np.float32)
    y = np.eye(5, dtype=np.float32)[[0, 3, 1, 4]]

    def run(target: str) -> list[np.ndarray]:
        variables = [tw.Variable(p) for p in params]
        opt = tw.optimizers.SGD(0.1)

        @tw.compile(target=target)
        def step(x, y):
            w1, b1, w2, b2, w3 = variables
            pool = dict(ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
            h = tw.nn.relu(tw.nn.bias_add(tw.nn.conv2d(x, w1, strides=1, padding="SAME"), b1))
            h = tw.nn.max_pool(h, **pool)
            h = tw.nn.relu(tw.nn.bias_add(tw.nn.conv2d(h, w2, strides=1, padding="SAME"), b2))
            h = tw.nn.avg_pool(h, **pool)
            logits = tw.matmul(tw.reshape(h, [-1, 2 * 2 * 12]), w3)
            loss = tw.reduce_mean(tw.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
            opt.minimize(loss + 1e-3 * tw.nn.l2_loss(w3), var_list=variables)
            return loss

        losses = [np.asarray(step(x, y)) for _ in range(2)]
        return losses + [np.asarray(v.numpy()) for v in variables]

    expected = run("reference")
    with mode(path):
        got = run("cpu")
    for a, e in zip(got, expected):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-5)
