"""The native lowerings of DepthwiseConv2dNative and its gradient ops
(`targets/cpu/lowerings/depthwise.py`) against their reference kernels, on one thread and
in chunks on 3 threads, for every padding kind, strides, dilations and channel
multipliers. The forward op is bitwise the reference on any values (both add each tap's
rounded product in the same order); the gradients sum in other orders, so they get small
multiples of 1/4, whose sums are exact in float32 whatever the order, and are compared
bitwise too."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.targets.cpu import parallel
from tensorweave.targets.cpu.lowering import compile_node, find_lowering
from tensorweave.targets.cpu.step import describe
from tests.lowerings.helpers import check_lowering, reference_outputs, single_node


@contextlib.contextmanager
def threads(n: int) -> Iterator[None]:
    """`n` threads, and chunks however small the work (n > 1)."""
    saved_flops, saved_env = parallel.MIN_GEMM_FLOPS, os.environ.get("TW_NUM_THREADS")
    try:
        os.environ["TW_NUM_THREADS"] = str(n)
        if n > 1:
            parallel.MIN_GEMM_FLOPS = 0
        yield
    finally:
        parallel.MIN_GEMM_FLOPS = saved_flops
        if saved_env is None:
            os.environ.pop("TW_NUM_THREADS", None)
        else:
            os.environ["TW_NUM_THREADS"] = saved_env


@st.composite
def depthwise_cases(draw, quarters=False):
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    n, c, mult = draw(st.integers(1, 2)), draw(st.integers(1, 9)), draw(st.integers(1, 3))
    h, w = draw(st.integers(1, 7)), draw(st.integers(1, 7))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides = (1, draw(st.integers(1, 3)), draw(st.integers(1, 3)), 1)
    dilations = (1, draw(st.integers(1, 2)), draw(st.integers(1, 2)), 1)
    padding = draw(st.sampled_from(["SAME", "VALID", "EXPLICIT"]))
    pads = tuple(draw(st.integers(0, 2)) for _ in range(4)) if padding == "EXPLICIT" \
        else (0, 0, 0, 0)
    if padding != "SAME":
        assume(h + pads[0] + pads[1] >= (kh - 1) * dilations[1] + 1)
        assume(w + pads[2] + pads[3] >= (kw - 1) * dilations[2] + 1)
    attrs = {"strides": strides, "dilations": dilations, "padding": padding}
    if padding == "EXPLICIT":
        attrs["explicit_paddings"] = (0, 0, *pads, 0, 0)
    r = np.random.default_rng(draw(st.integers(0, 2**16)))
    if quarters:  # exact sums in any order
        x = (r.integers(-4, 5, (n, h, w, c)) / 4).astype(dtype)
        f = (r.integers(-4, 5, (kh, kw, c, mult)) / 4).astype(dtype)
    else:
        x = r.uniform(-1, 1, (n, h, w, c)).astype(dtype)
        f = r.uniform(-1, 1, (kh, kw, c, mult)).astype(dtype)
    return x, f, attrs


@settings(max_examples=20)
@given(case=depthwise_cases(), n_threads=st.sampled_from([1, 3]))
def test_depthwise_lowering_is_bitwise_the_reference(case, n_threads):
    x, f, attrs = case
    with threads(n_threads):
        out = check_lowering("DepthwiseConv2dNative", [x, f], **attrs)[0]
    expected = reference_outputs(single_node("DepthwiseConv2dNative", [x, f], **attrs),
                                 [x, f])[0]
    assert out.tobytes() == np.asarray(expected).tobytes()


def bitwise_lowering(op: str, arrays, **attrs) -> None:
    out = check_lowering(op, arrays, **attrs)[0]
    expected = reference_outputs(single_node(op, arrays, **attrs), arrays)[0]
    assert out.tobytes() == np.asarray(expected).tobytes()


@settings(max_examples=20)
@given(case=depthwise_cases(quarters=True), n_threads=st.sampled_from([1, 3]),
       seed=st.integers(0, 2**16))
def test_depthwise_gradient_lowerings_are_the_reference(case, n_threads, seed):
    x, f, attrs = case
    y = reference_outputs(single_node("DepthwiseConv2dNative", [x, f], **attrs), [x, f])[0]
    dy = (np.random.default_rng(seed).integers(-4, 5, y.shape) / 4).astype(x.dtype)
    with threads(n_threads):
        bitwise_lowering("DepthwiseConv2dNativeBackpropInput", [f, dy], input_shape=x.shape,
                         **attrs)
        bitwise_lowering("DepthwiseConv2dNativeBackpropFilter", [x, dy], filter_shape=f.shape,
                         **attrs)


def test_depthwise_gradient_lowerings_on_random_values_within_tolerance():
    r = np.random.default_rng(3)
    x = r.normal(size=(2, 9, 8, 5)).astype(np.float32)
    f = r.normal(size=(3, 3, 5, 2)).astype(np.float32)
    dy = r.normal(size=(2, 5, 8, 10)).astype(np.float32)
    attrs = {"strides": (1, 2, 1, 1), "padding": "SAME"}
    check_lowering("DepthwiseConv2dNativeBackpropInput", [f, dy], input_shape=x.shape, **attrs)
    check_lowering("DepthwiseConv2dNativeBackpropFilter", [x, dy], filter_shape=f.shape,
                   **attrs)


def test_half_precision_is_declined_and_runs_its_reference_kernel():
    x, f = np.ones((1, 3, 3, 2), np.float16), np.ones((2, 2, 2, 1), np.float16)
    node = single_node("DepthwiseConv2dNative", [x, f], strides=(1, 1, 1, 1), padding="SAME")
    assert find_lowering(node) is None


def test_empty_output_returns_without_touching_memory():
    x, f = np.ones((0, 4, 4, 2), np.float32), np.ones((2, 2, 2, 3), np.float32)
    node = single_node("DepthwiseConv2dNative", [x, f], strides=(1, 1, 1, 1), padding="VALID")
    out = compile_node(node, "blas")([x, f])[0]
    assert out.shape == (0, 3, 3, 6)


def test_a_depthwise_block_and_its_gradients_are_one_native_step_without_callbacks():
    r = np.random.default_rng(0)
    x = r.normal(size=(2, 8, 8, 4)).astype(np.float32)
    w = r.normal(size=(3, 3, 4, 2)).astype(np.float32)
    p = r.normal(size=(1, 1, 8, 5)).astype(np.float32)

    def block(a, b):  # a MobileNet block (depthwise, relu, pointwise) and its gradients
        def loss(a, b):
            y = tw.nn.depthwise_conv2d(a, b, [1, 2, 2, 1], "SAME")
            return tw.reduce_sum(tw.nn.conv2d(tw.nn.relu(y), p, 1, "SAME") ** 2)
        return tw.grad(loss, argnums=(0, 1))(a, b)

    cpu = tw.compile(block, target="cpu")
    for got, want in zip(cpu(x, w), tw.compile(block, target="reference")(x, w)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    step = cpu.get_concrete_function(x, w).executable.native_step([x, w])
    assert step is not None
    assert not step.plan.callback_nodes, describe(step.plan)
