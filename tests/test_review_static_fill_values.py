"""Adversarial review: the static fill values of `tw.pad` (``constant_values``) and
`tw.one_hot` (``on_value``, ``off_value``) must be values of the result's dtype. A
fraction for an integer result was silently dropped: ``tw.pad(int32, constant_values=0.5)``
padded with 0 and ``tw.one_hot(..., on_value=1.5, dtype=tw.int32)`` wrote 1 (TensorFlow
refuses both: the value converts to the tensor's dtype), while ``int32 + 0.5`` is
already an error here."""

import numpy as np
import pytest

import tensorweave as tw


def test_pad_with_a_fraction_for_an_integer_tensor_is_an_error():
    with pytest.raises(tw.errors.DTypeError, match="constant_values"):
        tw.pad(tw.constant(np.int32([1, 2])), [[1, 1]], constant_values=0.5)


def test_pad_with_a_value_out_of_the_integer_range_is_an_error():
    with pytest.raises(tw.errors.DTypeError, match="constant_values"):
        tw.pad(tw.constant(np.uint8([1])), [[1, 0]], constant_values=-1)


def test_pad_with_fitting_values():
    np.testing.assert_array_equal(
        tw.pad(tw.constant(np.int32([1, 2])), [[1, 1]], constant_values=7), [7, 1, 2, 7])
    np.testing.assert_array_equal(
        tw.pad(tw.constant(np.int32([1])), [[1, 0]], constant_values=np.int64(-3)), [-3, 1])
    got = tw.pad(tw.constant(np.float32([1.0])), [[0, 1]], constant_values=0.5)
    np.testing.assert_array_equal(got, np.float32([1.0, 0.5]))
    got = tw.compile(lambda x: tw.pad(x, [[1, 0]], constant_values=-2))(np.int64([5]))
    np.testing.assert_array_equal(got, [-2, 5])


def test_one_hot_with_a_fraction_for_an_integer_dtype_is_an_error():
    with pytest.raises(tw.errors.DTypeError, match="on_value"):
        tw.one_hot([0, 2], 3, on_value=1.5, off_value=0, dtype=tw.int32)
    with pytest.raises(tw.errors.DTypeError, match="off_value"):
        tw.one_hot([0, 2], 3, on_value=1, off_value=-0.5, dtype=tw.int32)


def test_one_hot_with_fitting_values():
    got = tw.one_hot([0, 2], 3, on_value=5, off_value=-1, dtype=tw.int32)
    np.testing.assert_array_equal(got, [[5, -1, -1], [-1, -1, 5]])
    got = tw.one_hot([1], 2, on_value=2.5, off_value=0.0)
    assert np.asarray(got).dtype == np.float32
    np.testing.assert_array_equal(got, [[0.0, 2.5]])
    got = tw.one_hot([1], 2, on_value=True, off_value=False)
    np.testing.assert_array_equal(got, [[False, True]])


def test_an_int64_fill_value_beyond_float64_precision_is_an_error():
    # stored as a float64 attribute, 2**53 + 1 became 2**53
    with pytest.raises(tw.errors.DTypeError, match="constant_values"):
        tw.pad(tw.constant(np.int64([1])), [[1, 0]], constant_values=2**53 + 1)
    got = tw.pad(tw.constant(np.int64([1])), [[1, 0]], constant_values=2**53)
    np.testing.assert_array_equal(got, [2**53, 1])


def test_fill_and_diag_values():
    # tw.linalg.diag(int32, padding_value=0.5) padded with 0; fill(np.int64(2**53 + 1))
    # filled 2**53
    with pytest.raises(tw.errors.DTypeError, match="padding_value"):
        tw.linalg.diag(tw.constant(np.int32([1, 2])), padding_value=0.5)
    with pytest.raises(tw.errors.DTypeError, match="value"):
        tw.fill([2], np.int64(2**53 + 1))
    got = tw.linalg.diag(tw.constant(np.int32([1, 2])), padding_value=-1)
    np.testing.assert_array_equal(got, [[1, -1], [-1, 2]])
    np.testing.assert_array_equal(tw.fill([2], np.int64(-5)), np.int64([-5, -5]))
    np.testing.assert_array_equal(tw.fill([2], 2.5), np.float32([2.5, 2.5]))
