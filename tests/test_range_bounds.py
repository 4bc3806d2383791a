"""tw.range with integer bounds beyond int32 or beyond float64's exact integers: the op
keeps its bounds as float64 attributes, so such bounds were silently wrapped (int32) or
rounded (past 2**53); now they pick int64 (as TensorFlow converts a big Python int) or
are refused."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw


@pytest.mark.parametrize("start", [3_000_000_000, 2**40, -(2**31) - 5])
def test_python_int_bounds_beyond_int32_give_an_int64_range(start):
    want = np.arange(start, start + 3, dtype=np.int64)
    got = tw.range(start, start + 3)
    assert got.dtype == tw.int64
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(tw.compile(lambda: tw.range(start, start + 3))(), want)


def test_int32_bounds_keep_int32():
    assert tw.range(2**31 - 3, 2**31 - 1).dtype == tw.int32
    np.testing.assert_array_equal(tw.range(2**31 - 3, 2**31 - 1).numpy(),
                                  [2**31 - 3, 2**31 - 2])


@pytest.mark.parametrize("call, arg", [
    (lambda: tw.range(2**53 + 1, 2**53 + 3, dtype=tw.int64), "start"),
    (lambda: tw.range(3_000_000_000, 3_000_000_002, dtype=tw.int32), "start"),
    (lambda: tw.range(0, 300, dtype=tw.int8), "limit"),
    (lambda: tw.range(0, 10, 2**33, dtype=tw.int32), "delta"),
])
def test_bounds_the_dtype_or_float64_cannot_hold_are_errors(call, arg):
    with pytest.raises(tw.errors.DTypeError, match=f"`{arg}`") as err:
        call()
    assert "tw.range" in str(err.value) and "test_range_bounds.py" in str(err.value)
