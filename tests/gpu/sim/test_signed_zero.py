"""The gpu target on signed zeros (as tests/test_review_cpu_signed_zero.py for the cpu
target): relu, relu6 and sign of -0.0 are +0.0, as the reference (NumPy:
``np.maximum(x, 0)``, ``np.sign``) and TensorFlow give them; the kernels gave -0.0, so
``1 / relu(x)`` was -inf where the reference gives +inf."""

import numpy as np
import pytest

import tensorweave as tw

X = np.array([-0.0, 0.0, -0.5, 0.5, np.nan, -np.inf, np.inf, -0.0], np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [tw.nn.relu, tw.nn.relu6, tw.sign,
                                lambda x: 1.0 / tw.nn.relu(x * 2.0)],
                         ids=["relu", "relu6", "sign", "reciprocal_of_fused_relu"])
def test_negative_zero_gives_the_references_positive_zero(fn, dtype) -> None:
    x = X.astype(dtype)
    want = np.asarray(tw.compile(fn, target="reference")(x))
    exe = tw.compile(fn, target="gpu")
    got = np.asarray(exe(x))
    assert not exe.get_concrete_function(x).executable.fallbacks  # ran as GPU kernels
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(got, want)
    assert not np.signbit(want[X == 0]).any()
