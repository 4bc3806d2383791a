"""erfinv(-0.0) on the gpu target is +0.0, as on the reference target and in TensorFlow
2.21 (the kernel gave -0.0); the cpu target: tests/test_review_new2_special_signed_zero.py."""

from __future__ import annotations

import numpy as np

import tensorweave as tw


def test_erfinv_of_minus_zero_is_plus_zero_alone_and_fused():
    x = np.array([-0.0, 0.0, -0.5, 0.5, -0.9], np.float32)
    want = np.asarray(tw.compile(tw.math.erfinv, target="reference")(x))
    assert not np.signbit(want[:2]).any()
    for fn in (tw.math.erfinv, lambda v: tw.math.erfinv(v) * 2.0 + tw.abs(v) * 0.0):
        got = np.asarray(tw.compile(fn, target="gpu")(x))
        np.testing.assert_array_equal(np.signbit(got), np.signbit(np.asarray(
            tw.compile(fn, target="reference")(x))))
