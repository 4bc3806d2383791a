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

from tests.lowerings.helpers import check_lowering, reference_outputs, single_node
from tests.lowerings.test_nn_extra_lowerings import threads
from tests.test_review_llvm_depthwise_o2_cases import WRONG_AT_O2, check_case


@pytest.mark.parametrize("case", WRONG_AT_O2)
def test_the_o2_cases_are_right_at_o2(case, monkeypatch):
    check_case(case, monkeypatch, "2")


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
