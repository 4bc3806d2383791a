"""A depthwise convolution the cpu target computed wrong at LLVM's O2 (found by
tests/ops/test_nn_extra.py's hypothesis run in CI): input H=2, W=1, a 2x1 filter, stride
1 or 2 along W and explicit padding (0, 1) or (0, 2) on the right. The node function's
second filter row was dropped (0.1716 for -0.2085); O1 and O3 compute it. The default
pipeline level is O3 again (jit.opt_level); this test runs at the default."""

import numpy as np
import pytest

import tensorweave as tw


@pytest.mark.parametrize("stride, right", [(1, 1), (2, 2), (1, 2)])
@pytest.mark.parametrize("batch", [1, 2])
def test_depthwise_conv_with_right_padding_matches_the_reference(stride, right, batch,
                                                                 monkeypatch):
    monkeypatch.delenv("TW_LLVM_OPT", raising=False)
    r = np.random.default_rng(0)
    x = r.uniform(-1, 1, (batch, 2, 1, 1)).astype(np.float32)
    w = r.uniform(-1, 1, (2, 1, 1, 1)).astype(np.float32)
    pads = [[0, 0], [0, 0], [0, right], [0, 0]]

    def f(a, b):
        return tw.nn.depthwise_conv2d(a, b, [1, 1, stride, 1], pads)

    want = np.asarray(tw.compile(f, target="reference")(x, w))
    got = np.asarray(tw.compile(f, target="cpu")(x, w))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    # the first output column sums both filter rows
    np.testing.assert_allclose(got[:, 0, 0, 0], x[:, 0, 0, 0] * w[0, 0, 0, 0]
                               + x[:, 1, 0, 0] * w[1, 0, 0, 0], rtol=1e-6)
