"""A depthwise convolution with SAME (or explicit) padding whose filter holds inf or NaN:
the reference kernel, like TensorFlow's, multiplies the zero padding by the filter, so a
border pixel that a non-finite tap reaches through the padding is NaN; the cpu lowering
skipped padded taps and returned a finite number there (found by the ahead-of-time
differential fuzz: ``depthwise_conv2d(|x|, [[[[1, -0]], [[0.5, -inf]]]], SAME)`` gave
0.0 instead of NaN at the last column, in JIT-compiled steps and libraries alike). With
finite filters padded taps add +-0 to a sum that starts at +0, so results keep their
bits (the existing depthwise tests)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tests.helpers import needs_c_compiler
from tests.test_review_aot_differential import call_library


def _filter(dtype, special: float) -> np.ndarray:
    w = np.random.default_rng(1).standard_normal((3, 2, 2, 2)).astype(dtype)
    w[0, 0, 1, 0] = special  # the first row's tap: read through the padding at the top
    w[2, 1, 0, 1] = -special if special == special else special  # the last one
    return w


def _model(w, strides, padding, dilations):
    def f(x):
        return tw.nn.depthwise_conv2d(x, w, strides=strides, padding=padding,
                                      dilations=dilations)
    return f


CASES = [([1, 1, 1, 1], "SAME", None), ([1, 2, 2, 1], "SAME", None),
         ([1, 1, 1, 1], "SAME", [2, 1]), ([1, 1, 1, 1], [[0, 0], [1, 2], [2, 0], [0, 0]], None)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("special", [np.inf, np.nan])
@pytest.mark.parametrize("strides, padding, dilations", CASES)
def test_padded_taps_multiply_the_filter_as_the_reference_does(dtype, special, strides,
                                                               padding, dilations):
    x = np.random.default_rng(0).standard_normal((1, 4, 5, 2)).astype(dtype)
    fn = _model(_filter(dtype, special), strides, padding, dilations)
    want = tw.compile(fn, target="reference")(x)
    got = tw.compile(fn, target="cpu")(x)
    assert np.isnan(want).any() and np.isfinite(want).any()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # (NaN where NaN, the rest bitwise)


@needs_c_compiler
def test_the_library_gives_the_reference_nans(tmp_path):
    x = np.abs(np.array([np.nan, 1.25, 0.0, -2.0, -1.5], np.float32)).reshape(1, 1, 5, 1)
    w = np.array([[[[1.0, -0.0]], [[0.5, -np.inf]]]], np.float32)
    fn = _model(w, [1, 1, 1, 1], "SAME", None)
    want = tw.compile(fn, target="reference")(x)
    assert np.isnan(want[0, 0, 4, 1])
    f = tw.compile(fn, input_signature=[tw.TensorSpec([1, 1, 5, 1], tw.float32)])
    from tensorweave.targets.cpu.aot import build_library
    status, got = call_library(build_library(f.get_concrete_function(), str(tmp_path),
                                             name="dw"), [x])
    assert status == 0
    np.testing.assert_array_equal(got[0], want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("special", [np.inf, np.nan])
def test_the_filter_gradient_multiplies_the_padding_by_dy(dtype, special):
    """The filter gradient sums ``x * dy`` over output pixels with the padding's x = 0:
    a non-finite dy at a border pixel makes NaN the taps that read the padding there
    (the lowering skipped them: 4 NaNs where the reference has 14)."""
    from tensorweave.frontend.building import apply_op
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 4, 5, 2)).astype(dtype)
    dy = rng.standard_normal((1, 4, 5, 4)).astype(dtype)
    dy[0, 0, 0, 1], dy[0, 3, 4, 2] = special, -special

    def grad(x, dy):
        return apply_op("DepthwiseConv2dNativeBackpropFilter", [x, dy],
                        {"filter_shape": (3, 3, 2, 2), "strides": (1, 1, 1, 1),
                         "padding": "SAME"})

    want = np.asarray(tw.compile(grad, target="reference")(x, dy))
    got = np.asarray(tw.compile(grad, target="cpu")(x, dy))
    assert np.isnan(want).sum() > 4
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)  # (the reference sums with einsum: ulps apart)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5 if dtype == np.float32
                               else 1e-12, atol=1e-6)
