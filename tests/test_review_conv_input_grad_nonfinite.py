"""cpu Conv2DBackpropInput with an inf or NaN in the filter. For stride 1 the lowering
correlates the zero-padded dY with the flipped filter; the zero frame times inf gave NaN
where the gradient (the reference target, and TensorFlow 2.21's conv2d_transpose: 7 of 40
random cases differed, e.g. 12 NaNs instead of 2) sums only real dY positions. A
non-finite filter now takes the col2im path; a finite one keeps the direct loop nest."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.targets.cpu.lowerings import nn as cpu_nn


def _transpose(x, w, pad):
    n, h, wd, _ = x.shape
    k, cout = w.shape[0], w.shape[2]
    oh = h - 1 + (k if pad == "VALID" else 1)
    ow = wd - 1 + (k if pad == "VALID" else 1)
    return lambda x, w: tw.nn.conv2d_transpose(x, w, [n, oh, ow, cout], 1, pad)


def _check(x, w, pad):
    f = _transpose(x, w, pad)
    want = np.asarray(tw.compile(f, target="reference")(x, w))
    got = np.asarray(tw.compile(f, target="cpu")(x, w))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    return want


@pytest.mark.parametrize("special", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("pad", ["VALID", "SAME"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_non_finite_filter_gives_the_references_nans(special, pad, dtype):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 5, 3)).astype(dtype)
    x[x > 0.8] = 0.0  # zeros in dY: 0 * inf is NaN only where a real term has it
    w = rng.standard_normal((3, 3, 4, 3)).astype(dtype)
    w[0, 2, 1, 0] = special
    want = _check(x, w, pad)
    assert 0 < np.isnan(want).sum() < want.size  # the case tells the two results apart


def test_the_counterexample_found_by_the_differential_run():
    # the shape of the first case found against TensorFlow (VALID, 2x2 filter, 4x5 dY)
    x = np.array([[[[0.3, 0.0], [-1.2, 0.5], [0.0, 0.1], [0.7, -0.4], [0.2, 0.9]],
                   [[0.0, 0.0], [0.6, -0.8], [0.4, 0.0], [-0.3, 0.2], [0.1, 0.0]],
                   [[1.0, 0.2], [0.0, 0.3], [-0.5, 0.6], [0.0, 0.0], [0.8, -0.1]],
                   [[0.2, -0.7], [0.5, 0.0], [0.0, 0.4], [0.9, 0.3], [-0.6, 0.0]]]],
                 np.float32)
    w = np.full((2, 2, 2, 2), 0.5, np.float32)
    w[1, 1, 0, 1] = np.inf
    want = _check(x, w, "VALID")
    # only dY's real zero (x[0, 1, 0, 1] etc.) times the inf tap is NaN: not the frame
    assert np.isnan(want).sum() == np.sum(x[0, :, :, 1] == 0)


def test_a_finite_filter_keeps_the_direct_path():
    """The shapes above take the direct loop nest when the filter is finite (the path the
    scan guards); its results are the reference's."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 4, 5, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 4, 3)).astype(np.float32)
    f = _transpose(x, w, "SAME")
    graph = tw.compile(f, target="cpu").get_concrete_function(x, w).graph
    node = next(n for n in graph.nodes if n.op == "Conv2DBackpropInput")
    assert cpu_nn._conv_path(node) == "direct"
    _check(x, w, "SAME")
