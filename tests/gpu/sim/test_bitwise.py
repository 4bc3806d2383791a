"""Bitwise ops on the gpu target (`exprs.py`'s emitters): BitwiseAnd/Or/Xor, Invert and
the shifts run in the Fusion kernels, no host call, with the reference's results on
every integer dtype, shift amounts on both sides of [0, bits) included, fused with
arithmetic and broadcast."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tests.gpu.cases import BITWISE_DTYPES, BITWISE_OPS, bitwise_chain, bitwise_edge_pairs


def _check(fn, *arrays):
    want = np.asarray(tw.compile(fn, target="reference")(*arrays))
    f = tw.compile(fn, target="gpu")
    got = np.asarray(f(*arrays))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    return f


@pytest.mark.parametrize("dtype", BITWISE_DTYPES, ids=str)
def test_every_bitwise_op_on_edge_values_runs_on_the_gpu(dtype):
    x, y = bitwise_edge_pairs(dtype)
    for name, fn in BITWISE_OPS.items():
        f = _check(fn, x, y)
        cf = f.get_concrete_function(x, y)
        exe = cf.executable
        assert exe.native_reason is None and exe.fallbacks == {}, (name, exe.fallbacks)


@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_fused_shifts_with_broadcasting(data):
    dtype = data.draw(st.sampled_from(BITWISE_DTYPES))
    bits = dtype.itemsize * 8
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2,
                                                         max_side=3)).input_shapes
    x = data.draw(hnp.arrays(dtype, shapes[0], elements=hnp.from_dtype(dtype)))
    lo = -2 if dtype.kind == "i" else 0
    y = data.draw(hnp.arrays(dtype, shapes[1], elements=st.integers(lo, bits + 2)))
    _check(bitwise_chain, x, y)
