"""Review of tw.data against TensorFlow 2.21: ``from_generator`` converts yielded numbers
to a float signature by rounding, as TensorFlow does (``np.asarray(value, dtype)``).

The expected values are what TensorFlow 2.21 gave for the same programs
(``tf.data.Dataset.from_generator(g, output_types=tf.float32, output_shapes=[])``):
``0.1`` -> ``np.float32(0.1)``, ``1e-50`` -> ``0.0``, ``1e300`` -> ``inf``,
``2**24 + 1`` -> ``16777216.0``. tensorweave refused each of them ("the generator yielded
float64 values that are not f32"), so a generator of Python floats into float32, the
common case, failed on its first inexact value."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.data import Dataset


def _floats(values, dtype, shape=()):
    ds = Dataset.from_generator(lambda: iter(values), output_types=dtype, output_shapes=shape)
    return list(ds.as_numpy_iterator())


def test_python_floats_round_to_float32():
    out = _floats([0.1, 1e-50, 1e300, -2.5], tw.float32)
    assert [o.dtype for o in out] == [np.float32] * 4
    np.testing.assert_array_equal(out, np.array([0.1, 0.0, np.inf, -2.5], np.float32))


def test_float64_arrays_and_large_ints_round_to_float32_and_float16():
    rows = [np.array([1 / 3, 2 / 3]), np.array([2.0 ** 24 + 1, 0.2])]
    out = _floats(rows, tw.float32, [2])
    np.testing.assert_array_equal(out, np.array(rows, np.float32))
    assert _floats([2 ** 24 + 1], tw.float32)[0] == np.float32(16777216.0)
    np.testing.assert_array_equal(_floats([0.1, 70000.0], tw.float16),
                                  np.array([0.1, np.inf], np.float16))


def test_a_lossy_conversion_to_an_integer_is_still_an_error():
    # (TensorFlow truncates 1.5 to 1; tensorweave refuses: documented difference)
    with pytest.raises(tw.errors.InvalidArgumentError, match="not i32"):
        _floats([1.5], tw.int32)
    with pytest.raises(tw.errors.InvalidArgumentError, match="not u8"):
        _floats([300], tw.uint8)
    assert [int(v) for v in _floats([2.0, 3], tw.int32)] == [2, 3]
