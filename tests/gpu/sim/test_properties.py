"""Property tests under the simulator: random shapes (broadcasting, size-1 dims, reductions
over random trailing or leading axes) and values, gpu target against the reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tests.gpu.cases import BINARY, UNARY, tolerance
from tests.gpu.sim.test_cases import assert_close

SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)
DTYPES = [np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32)]


def _elements(dtype, lo=-8, hi=8):
    if dtype.kind == "f":
        return st.floats(lo, hi, width=8 * dtype.itemsize, allow_nan=False)
    return st.integers(lo, hi)


def _same(fn, *arrays):
    expected = tw.compile(fn, target="reference")(*arrays)
    actual = tw.compile(fn, target="gpu")(*arrays)
    assert_close(actual, expected)


@settings(settings.get_profile("gpu-sim"))
@given(data=st.data())
def test_binary_ops_broadcast_like_the_reference(data):
    name = data.draw(st.sampled_from(sorted(n for n, (_, d, nz) in BINARY.items()
                                            if not nz and "int32" in [x.name for x in d])))
    fn = BINARY[name][0]
    dtype = data.draw(st.sampled_from([np.dtype(np.float32), np.dtype(np.int32)]))
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4))
    x = data.draw(hnp.arrays(dtype, shapes.input_shapes[0], elements=_elements(dtype, 0, 3)
                             if name == "pow" else _elements(dtype)))
    y = data.draw(hnp.arrays(dtype, shapes.input_shapes[1], elements=_elements(dtype, 0, 3)
                             if name == "pow" else _elements(dtype)))
    _same(fn, x, y)


@settings(settings.get_profile("gpu-sim"))
@given(data=st.data())
def test_unary_chains_fuse_and_match(data):
    names = data.draw(st.lists(st.sampled_from(["exp", "tanh", "sigmoid", "sin", "square",
                                                "negative", "relu", "abs"]),
                               min_size=1, max_size=4))
    x = data.draw(hnp.arrays(np.float32, data.draw(SHAPES), elements=_elements(
        np.dtype(np.float32), -2, 2)))

    def chain(t):
        for n in names:
            t = UNARY[n][0](t)
        return t
    _same(chain, x)


@settings(settings.get_profile("gpu-sim"))
@given(data=st.data())
def test_reductions_over_random_axes(data):
    dtype = data.draw(st.sampled_from(DTYPES))
    shape = data.draw(SHAPES)
    x = data.draw(hnp.arrays(dtype, shape, elements=_elements(dtype, -4, 4)))
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True))
    keep = data.draw(st.booleans())
    op = data.draw(st.sampled_from([tw.reduce_sum, tw.reduce_mean, tw.reduce_max,
                                    tw.reduce_min]))
    expected = tw.compile(lambda t: op(t, axis=axes, keepdims=keep), target="reference")(x)
    actual = tw.compile(lambda t: op(t, axis=axes, keepdims=keep), target="gpu")(x)
    if dtype.kind == "f":  # float sums accumulate in float64 on both, in other orders
        np.testing.assert_allclose(actual, expected, **tolerance(dtype))
        assert actual.dtype == expected.dtype and actual.shape == expected.shape
    else:
        assert_close(actual, expected)


@settings(settings.get_profile("gpu-sim"))
@given(data=st.data())
def test_matmul_shapes_and_transposes(data):
    m, k, n = (data.draw(st.integers(1, 9)) for _ in range(3))
    ta, tb = data.draw(st.booleans()), data.draw(st.booleans())
    a = data.draw(hnp.arrays(np.float32, (k, m) if ta else (m, k), elements=_elements(
        np.dtype(np.float32), -2, 2)))
    b = data.draw(hnp.arrays(np.float32, (n, k) if tb else (k, n), elements=_elements(
        np.dtype(np.float32), -2, 2)))
    expected = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    actual = tw.compile(lambda x, y: tw.matmul(x, y, transpose_a=ta, transpose_b=tb),
                        target="gpu")(a, b)
    np.testing.assert_allclose(actual, expected.astype(np.float32), rtol=1e-5, atol=1e-5)
