"""Review of tw.image.convert_image_dtype's float -> integer edges against TensorFlow 2.21.

bfloat16 cannot hold uint8's scale 255.5 (it rounds to 256), nor float16/bfloat16 int16's
32767.5 (32768), so a white pixel (1.0) scaled to 256 or 32768 overflowed the cast and
became 0 (uint8) or -32768 (int16) without saturate: black instead of white. TensorFlow's
vectorized cast saturates there, so an image of 16 or more pixels gives 255 and 32767
(measured with TF 2.21: tf.image.convert_image_dtype(tf.ones([16], tf.bfloat16), tf.uint8)
is 255 everywhere, and the float16 -> int16 one 32767; TF's scalar loop, for fewer than 8
pixels, wraps as tensorweave did). Pixels in [0, 1) are unchanged."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tests.helpers import TARGETS

CASES = [(ml_dtypes.bfloat16, np.uint8), (np.float16, np.int16), (ml_dtypes.bfloat16, np.int16)]


def _want(x: np.ndarray, dst) -> np.ndarray:
    """TensorFlow's values on [0, 1]: x times the scale rounded to x's dtype (the product
    rounded to x's dtype too), truncated, at most dst's maximum."""
    src = np.dtype(x.dtype)
    scaled = (x * src.type(np.iinfo(dst).max + 0.5)).astype(np.float64)
    return np.minimum(np.trunc(scaled), np.iinfo(dst).max).astype(dst)


@pytest.mark.parametrize("src,dst", CASES, ids=["bf16-u8", "f16-i16", "bf16-i16"])
def test_white_pixels_of_half_precision_images_stay_white(src, dst):
    x = np.ones([2, 4, 2, 1], src)  # 16 pixels: TensorFlow gives the maximum at each
    for target in TARGETS:
        got = np.asarray(tw.compile(lambda a: tw.image.convert_image_dtype(a, dst),
                                    target=target)(x))
        np.testing.assert_array_equal(got, np.full(x.shape, np.iinfo(dst).max, dst),
                                      err_msg=target)
    eager = np.asarray(tw.image.convert_image_dtype(tw.constant(x[0, 0, 0]), dst))
    np.testing.assert_array_equal(eager, np.full([1], np.iinfo(dst).max, dst))


@pytest.mark.parametrize("src,dst", CASES, ids=["bf16-u8", "f16-i16", "bf16-i16"])
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_pixels_in_the_unit_interval_match_tensorflows_values(src, dst, data):
    n = data.draw(st.integers(1, 17))
    vals = data.draw(st.lists(st.floats(0.0, 1.0, width=32), min_size=n, max_size=n))
    x = np.array(vals + [1.0], np.float32).astype(src)
    for target in TARGETS:
        got = np.asarray(tw.compile(lambda a: tw.image.convert_image_dtype(a, dst),
                                    target=target)(x))
        np.testing.assert_array_equal(got, _want(x, dst), err_msg=target)
