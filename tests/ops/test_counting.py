"""tw.unique / unique_with_counts, tw.math.bincount, tw.histogram_fixed_width and the sorted
segment reductions tw.math.segment_sum/mean/max/min/prod against NumPy (eagerly, on every
target, across devices), their gradients against finite differences in float64, and
their errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tests.helpers import check_against_numpy, check_gradients
from tests.ops.test_array import seeds


def np_unique(x):
    """First-occurrence order, as TensorFlow's Unique (NumPy's np.unique sorts)."""
    y, idx, count, seen = [], [], [], {}
    for v in x.tolist():
        if v not in seen:
            seen[v] = len(y)
            y.append(v)
            count.append(0)
        idx.append(seen[v])
        count[seen[v]] += 1
    return np.array(y, x.dtype), np.array(idx), np.array(count)


@settings(max_examples=15)
@given(seeds, st.integers(0, 9), st.sampled_from([np.int32, np.int64, np.float32]),
       st.sampled_from([tw.int32, tw.int64]))
def test_unique_with_counts_matches_numpy(seed, n, dtype, out_idx):
    x = np.random.default_rng(seed).integers(-3, 4, n).astype(dtype)

    def want(x):
        y, idx, count = np_unique(x)
        return y, idx.astype(out_idx.np), count.astype(out_idx.np)

    check_against_numpy(lambda x: tw.unique_with_counts(x, out_idx=out_idx), want, x)
    check_against_numpy(lambda x: tw.unique(x, out_idx), lambda x: want(x)[:2], x)


def test_unique_defaults_and_errors():
    y, idx = tw.unique(np.array([5, 1, 5, 5, 0]))
    assert idx.dtype == tw.int32
    np.testing.assert_array_equal(y, [5, 1, 0])
    np.testing.assert_array_equal(tw.gather(y, idx), [5, 1, 5, 5, 0])
    with pytest.raises(tw.errors.ShapeError, match="1-D"):
        tw.unique(np.zeros((2, 2)))
    with pytest.raises(tw.errors.ShapeError, match="out_idx"):
        tw.unique(np.zeros(2), out_idx=tw.float32)


def np_bincount(arr, weights=None, minlength=None, maxlength=None):
    size = max(int(arr.max()) + 1 if arr.size else 0, minlength or 0)
    if maxlength is not None:
        size = min(size, maxlength)
    keep = arr < size
    w = None if weights is None else weights[keep]
    out = np.bincount(arr[keep].astype(np.int64), w, minlength=size)
    return out.astype(np.int32 if weights is None else weights.dtype)


@settings(max_examples=15)
@given(seeds, st.integers(0, 8), st.sampled_from([None, 0, 3, 9]),
       st.sampled_from([None, 0, 2, 6]), st.booleans())
def test_bincount_matches_numpy(seed, n, minlength, maxlength, weighted):
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 7, (n, 2)).astype(np.int32)
    if weighted:
        w = rng.normal(size=arr.shape)
        check_against_numpy(
            lambda a, w: tw.math.bincount(a, w, minlength=minlength, maxlength=maxlength),
            lambda a, w: np_bincount(a.ravel(), w.ravel(), minlength, maxlength), arr, w)
    else:
        check_against_numpy(
            lambda a: tw.math.bincount(a, minlength=minlength, maxlength=maxlength),
            lambda a: np_bincount(a.ravel(), None, minlength, maxlength), arr)


def test_bincount_errors():
    with pytest.raises(tw.errors.InvalidArgumentError, match="non-negative"):
        tw.math.bincount(np.array([1, -2, 0]))
    with pytest.raises(tw.errors.ShapeError, match="int32 or int64"):
        tw.math.bincount(np.array([1.0]))
    assert tw.math.bincount(np.array([2]), dtype=tw.float32).dtype == tw.float32


def np_histogram(values, lo, hi, nbins):
    v = values.ravel()
    diff = (np.maximum(v, v.dtype.type(lo)) - v.dtype.type(lo)).astype(np.float64)
    bins = np.minimum(diff / ((hi - lo) / nbins), nbins - 1)
    bins = np.where(np.isnan(bins), 0, bins).astype(np.int64)
    return np.bincount(bins, minlength=nbins).astype(np.int32)


@settings(max_examples=15)
@given(seeds, st.integers(1, 7), st.sampled_from([np.float32, np.float64, np.int32]))
def test_histogram_fixed_width_matches_numpy(seed, nbins, dtype):
    rng = np.random.default_rng(seed)
    values = (rng.normal(size=(3, 4)) * 4).astype(dtype)
    check_against_numpy(lambda v: tw.histogram_fixed_width(v, [-2.0, 5.0], nbins),
                        lambda v: np_histogram(v, -2.0, 5.0, nbins), values)


def test_histogram_fixed_width_tensorflow_example_and_errors():
    # TensorFlow's documented example
    got = tw.histogram_fixed_width(np.array([-1.0, 0.0, 1.5, 2.0, 5.0, 15], np.float32),
                                   [0.0, 5.0], nbins=5)
    np.testing.assert_array_equal(got, [2, 1, 1, 0, 2])
    with pytest.raises(tw.errors.ShapeError, match="lo < hi"):
        tw.histogram_fixed_width(np.zeros(3), [1.0, 1.0])
    with pytest.raises(tw.errors.ShapeError, match="nbins"):
        tw.histogram_fixed_width(np.zeros(3), [0.0, 1.0], nbins=0)


SEGMENT_OPS = {
    "segment_sum": (np.add, 0),
    "segment_mean": (None, 0),
    "segment_max": (np.maximum, 0),
    "segment_min": (np.minimum, 0),
    "segment_prod": (np.multiply, 1),
}


def np_segment(name, data, ids):
    """TensorFlow's sorted segment reductions, one segment at a time."""
    ufunc, empty = SEGMENT_OPS[name]
    n = int(ids[-1]) + 1 if ids.size else 0
    out = np.full((n,) + data.shape[1:], empty, data.dtype)
    for s in range(n):
        rows = data[ids == s]
        if len(rows):
            out[s] = rows.mean(axis=0) if ufunc is None else ufunc.reduce(rows, axis=0)
    return out


def sorted_ids(rng, n):
    return np.sort(rng.integers(0, 4, n)).astype(np.int32)


@settings(max_examples=10)
@given(seeds, st.sampled_from(sorted(SEGMENT_OPS)), st.integers(0, 6),
       st.sampled_from([np.float32, np.float64]))
def test_sorted_segment_reductions_match_numpy(seed, name, n, dtype):
    rng = np.random.default_rng(seed)
    data = rng.normal(size=(n, 2)).astype(dtype)
    ids = sorted_ids(rng, n)
    fn = getattr(tw.math, name)
    check_against_numpy(fn, lambda d, i: np_segment(name, d, i), data, ids,
                        rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(SEGMENT_OPS))
def test_sorted_segment_gradients(name):
    rng = np.random.default_rng(1)
    data = rng.normal(size=(6, 2))
    data[4, 1] = 0.0  # prod: one zero in a segment
    ids = np.array([0, 0, 2, 2, 2, 3], np.int32)  # segment 1 empty
    fn = getattr(tw.math, name)
    check_gradients(lambda d: fn(d, ids), data)


def test_sorted_segment_integers_and_errors():
    data = np.array([7, -7, 4, 3], np.int32)
    np.testing.assert_array_equal(tw.math.segment_mean(data, [0, 0, 1, 1]), [0, 3])
    np.testing.assert_array_equal(tw.math.segment_mean(np.array([-7, 0], np.int32), [0, 0]),
                                  [-3])  # towards zero, as TensorFlow's kernel divides
    with pytest.raises(tw.errors.InvalidArgumentError, match="not increasing"):
        tw.math.segment_sum(data, [0, 1, 0, 2])
    with pytest.raises(tw.errors.InvalidArgumentError, match=">= 0"):
        tw.math.segment_sum(data, [-1, 0, 0, 1])
    with pytest.raises(tw.errors.ShapeError, match="one id per row"):
        tw.math.segment_sum(data, [0, 1])
