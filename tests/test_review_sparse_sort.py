"""Sorting ops on bfloat16 with NaN: sort, argsort, top_k and searchsorted must order a
bfloat16 tensor as they order the same values in float32 (NaN above every number, ties
in index order). NumPy's sort of ml_dtypes' bfloat16 compares with `<`, so a NaN broke
the order of the numbers around it: tw.sort([1, nan, -1, 0, 3, inf, -2]) gave
[1, nan, -2, -1, 0, 3, inf] and top_k ranked 1 first."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tests.helpers import TARGETS

BF16 = np.dtype(ml_dtypes.bfloat16)

# values exact in bfloat16, with NaN, both zeros and infinities
elements = st.sampled_from([np.nan, -np.inf, np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -3.0, 7.0])
rows = hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=9),
                  elements=elements)


def _stable_descending(x: np.ndarray) -> np.ndarray:
    n = x.shape[-1]
    return n - 1 - np.flip(np.argsort(np.flip(x, -1), axis=-1, kind="stable"), -1)


def test_sort_of_bfloat16_with_nan_example():
    x = np.array([1, np.nan, -1, 0, 3, np.inf, -2], np.float32)
    got = tw.sort(x.astype(BF16)).numpy().astype(np.float32)
    np.testing.assert_array_equal(got, [-2, -1, 0, 1, 3, np.inf, np.nan])
    values, indices = tw.math.top_k(x.astype(BF16), 3)
    np.testing.assert_array_equal(indices.numpy(), [1, 5, 4])


@pytest.mark.parametrize("target", TARGETS)
@given(x=rows)
def test_bfloat16_sorts_as_float32(target, x):
    b = x.astype(BF16)

    def fn(v):
        return (tw.argsort(v), tw.argsort(v, direction="DESCENDING"), tw.sort(v),
                tw.math.top_k(v, v.shape[-1])[1])

    asc, desc, values, top = tw.compile(fn, target=target)(b)
    want_asc = np.argsort(x, axis=-1, kind="stable")
    np.testing.assert_array_equal(asc, want_asc)
    np.testing.assert_array_equal(desc, _stable_descending(x))
    np.testing.assert_array_equal(values.astype(np.float32),
                                  np.take_along_axis(x, want_asc, -1))
    np.testing.assert_array_equal(top, _stable_descending(x))


@pytest.mark.parametrize("target", TARGETS)
def test_searchsorted_of_bfloat16_nan_goes_last(target):
    seq = np.array([[-1.0, 0.0, 2.5, np.inf]], np.float32)
    vals = np.array([[np.nan, 3.0, -np.inf, np.inf]], np.float32)
    fn = tw.compile(lambda s, v: (tw.searchsorted(s, v), tw.searchsorted(s, v, side="right")),
                    target=target)
    left, right = fn(seq.astype(BF16), vals.astype(BF16))
    np.testing.assert_array_equal(left, np.searchsorted(seq[0], vals[0])[None])
    np.testing.assert_array_equal(right, np.searchsorted(seq[0], vals[0], side="right")[None])
