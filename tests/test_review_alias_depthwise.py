"""Review: the DepthwiseConv2dNative lowering sums each output channel in a register.

It zeroed each output pixel's channels and then read, added and wrote them once per filter
tap: the pattern LLVM's InstCombine store merging (`mergeStoreIntoSuccessor`) miscompiles
(docs/llvm_o2_miscompile.md). At O2 (loop unroller off, as the cpu target runs it) 20 tiny
cases dropped a filter row (tests/test_review_llvm_depthwise_o2_cases.py checks them at
the default O3 only). Now a block of channels (a vector of them when the multiplier is 1)
is summed in a stack slot that mem2reg turns into a register and stored once:
`test_the_o2_cases_are_right_at_o2` failed on all 20 before. The sums keep the
reference's order (taps row-major from 0), so the results stay bitwise the reference's,
also with channel counts that fill several vectors and leave a remainder.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tests.lowerings.helpers import check_lowering, reference_outputs, single_node
from tests.lowerings.test_nn_extra_lowerings import threads
from tests.ops.test_nn_extra import depthwise_ref
from tests.test_review_llvm_depthwise_o2_cases import WRONG_AT_O2


@pytest.mark.parametrize("h, w, kh, kw, sh, sw, ph, pw", WRONG_AT_O2)
def test_the_o2_cases_are_right_at_o2(h, w, kh, kw, sh, sw, ph, pw, monkeypatch):
    monkeypatch.setenv("TW_LLVM_OPT", "2")  # (the JIT's cache keys name the level)
    r = np.random.default_rng(h * 100 + w * 10 + sh)
    x = r.uniform(-1, 1, (2, h, w, 1)).astype(np.float32)
    f = r.uniform(-1, 1, (kh, kw, 1, 1)).astype(np.float32)
    pads = [[0, ph], [0, pw]]

    def conv(a, b):
        return tw.nn.depthwise_conv2d(a, b, [1, sh, sw, 1], [[0, 0], *pads, [0, 0]])

    got = np.asarray(tw.compile(conv, target="cpu")(x, f))
    np.testing.assert_allclose(got, depthwise_ref(x, f, (sh, sw), (1, 1), pads),
                               rtol=1e-6, atol=1e-7)


@settings(max_examples=15, deadline=None)
@given(dtype=st.sampled_from([np.float32, np.float64]), c=st.integers(1, 40),
       mult=st.sampled_from([1, 1, 2]), hw=st.tuples(st.integers(1, 5), st.integers(1, 5)),
       k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       padding=st.sampled_from(["SAME", "VALID"]), n_threads=st.sampled_from([1, 3]),
       seed=st.integers(0, 2**16))
def test_wide_channel_blocks_are_bitwise_the_reference(dtype, c, mult, hw, k, padding,
                                                      n_threads, seed):
    # (up to 40 channels: several vectors and a remainder at 4, 8 or 16 lanes)
    h, w = hw
    if padding == "VALID":
        k = (min(k[0], h), min(k[1], w))
    r = np.random.default_rng(seed)
    x = r.uniform(-1, 1, (2, h, w, c)).astype(dtype)
    f = r.uniform(-1, 1, (*k, c, mult)).astype(dtype)
    attrs = {"strides": (1, 1, 2, 1), "dilations": (1, 1, 1, 1), "padding": padding}
    with threads(n_threads):
        out = check_lowering("DepthwiseConv2dNative", [x, f], **attrs)[0]
    expected = reference_outputs(single_node("DepthwiseConv2dNative", [x, f], **attrs),
                                 [x, f])[0]
    assert out.tobytes() == np.asarray(expected).tobytes()
