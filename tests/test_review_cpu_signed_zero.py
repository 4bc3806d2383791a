"""Review of the cpu target on signed zeros: relu, relu6 and sign of -0.0 are +0.0, as
the reference (NumPy: ``np.maximum(x, 0)``, ``np.sign``) and TensorFlow (Eigen's
``max(x, 0)`` and ``(x > 0) - (x < 0)``) give them. The cpu target gave -0.0, which
prints as ``-0.`` and turns ``1 / relu(x)`` into -inf instead of +inf."""

import numpy as np
import pytest

import tensorweave as tw

# every lane position of a vector (and its scalar remainder loop) gets a -0.0
X = np.array([-0.0, 0.0, -0.5, 0.5, np.nan, -np.inf, np.inf] + [-0.0] * 12, np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [tw.nn.relu, tw.nn.relu6, tw.sign,
                                lambda x: 1.0 / tw.nn.relu(x * 2.0)],
                         ids=["relu", "relu6", "sign", "reciprocal_of_fused_relu"])
def test_negative_zero_gives_the_references_positive_zero(fn, dtype) -> None:
    x = X.astype(dtype)
    want = np.asarray(tw.compile(fn, target="reference")(x))
    got = np.asarray(tw.compile(fn, target="cpu")(x))
    assert got.dtype == want.dtype and got.shape == want.shape
    # same bits (NaN payloads aside): +0.0 and -0.0 differ, as does 1/x of them
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(got, want)
    assert not np.signbit(want[X == 0]).any()
