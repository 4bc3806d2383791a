"""tw.nn.moments, batch_normalization, l2_normalize, top_k and in_top_k against NumPy
(hypothesis; eagerly, traced on the reference and cpu targets, across devices)."""

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tests.helpers import check_against_numpy

WIDTH = {np.float16: 16, np.float32: 32, np.float64: 64}


def arrays(dtype, shape, lo=-10.0, hi=10.0):
    return hnp.arrays(dtype, shape, elements=st.floats(lo, hi, width=WIDTH[dtype],
                                                       allow_nan=False))


@st.composite
def array_and_axes(draw, dtypes=(np.float32, np.float64)):
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    axes = draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape),
                         unique=True))
    return draw(arrays(dtype, shape)), sorted(axes)


def np_moments(x, axes, keepdims):
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=tuple(axes), keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=tuple(axes), keepdims=keepdims)
    mean = mean if keepdims else np.squeeze(mean, tuple(axes))
    return mean.astype(x.dtype), var.astype(x.dtype)


@settings(max_examples=30, deadline=None)
@given(array_and_axes(), st.booleans())
def test_moments(case, keepdims):
    x, axes = case
    check_against_numpy(lambda a: tw.nn.moments(a, axes, keepdims=keepdims),
                        lambda a: np_moments(a, axes, keepdims), x, atol=1e-4)


def test_moments_of_half_precision_are_computed_in_float32():
    x = np.full((4096,), 1000.0, np.float16)
    x[::2] = 1001.0
    mean, var = tw.nn.moments(tw.constant(x), [0])
    assert mean.dtype == tw.float16 and var.dtype == tw.float16
    assert float(mean.numpy()) == 1000.5 and float(var.numpy()) == 0.25


@st.composite
def batch_norm_case(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    shape = draw(hnp.array_shapes(min_dims=2, max_dims=4, min_side=1, max_side=4))
    c = shape[-1]
    x = draw(arrays(dtype, shape))
    mean = draw(arrays(dtype, (c,)))
    var = draw(arrays(dtype, (c,), 0.0, 5.0))
    offset = draw(st.none() | arrays(dtype, (c,)))
    scale = draw(st.none() | arrays(dtype, (c,)))
    return x, mean, var, offset, scale


@settings(max_examples=30, deadline=None)
@given(batch_norm_case())
def test_batch_normalization(case):
    x, mean, var, offset, scale = case
    eps = 1e-3

    def np_bn(x, mean, var):
        y = (x.astype(np.float64) - mean) / np.sqrt(var.astype(np.float64) + eps)
        y = y * (1 if scale is None else scale) + (0 if offset is None else offset)
        return y.astype(x.dtype)

    check_against_numpy(lambda x, m, v: tw.nn.batch_normalization(x, m, v, offset, scale, eps),
                        np_bn, x, mean, var, rtol=1e-4, atol=1e-4)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_l2_normalize(data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    x = data.draw(arrays(dtype, shape))

    def np_l2(x):
        x64 = x.astype(np.float64)
        s = (x64 ** 2).sum(axis=axis, keepdims=True)
        return (x64 / np.sqrt(np.maximum(s, 1e-12))).astype(x.dtype)

    check_against_numpy(lambda a: tw.nn.l2_normalize(a, axis=axis), np_l2, x, atol=1e-5)


def test_l2_normalize_of_zeros_is_zero_and_v1_spells_axis_dim():
    np.testing.assert_array_equal(tw.nn.l2_normalize(np.zeros((2, 3), np.float32), 1).numpy(),
                                  np.zeros((2, 3)))
    x = np.array([[3.0, 4.0]], np.float32)
    np.testing.assert_allclose(tw.nn.l2_normalize(x, dim=1).numpy(), [[0.6, 0.8]])


def np_top_k(x, k):
    idx = np.argsort(-x.astype(np.float64), axis=-1, kind="stable")[..., :k].astype(np.int32)
    return np.take_along_axis(x, idx.astype(np.intp), -1), idx


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_top_k(data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64, np.int32, np.int64]))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6))
    k = data.draw(st.integers(0, shape[-1]))
    # few distinct values, so ties (index order) are exercised
    x = data.draw(hnp.arrays(dtype, shape, elements=st.integers(-3, 3)))
    check_against_numpy(lambda a: tw.nn.top_k(a, k), lambda a: np_top_k(a, k), x)


def test_top_k_errors_and_unknown_batch():
    with pytest.raises(tw.errors.ShapeError, match="exceeds"):
        tw.nn.top_k(np.zeros((2, 3), np.float32), 4)
    f = tw.compile(lambda x: tw.nn.top_k(x, 2), target="cpu",
                   input_signature=[tw.TensorSpec([None, 5])])
    values, indices = f(np.arange(15, dtype=np.float32).reshape(3, 5))
    np.testing.assert_array_equal(indices, [[4, 3]] * 3)


def np_in_top_k(targets, predictions, k):
    out = []
    for t, row in zip(targets, predictions.astype(np.float64)):
        if not 0 <= t < row.size or not np.isfinite(row).all():  # TF: any inf/nan in the row
            out.append(False)
        else:
            out.append(int(np.sum(row > row[t])) < k)
    return np.array(out, dtype=bool)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_in_top_k(data):
    batch, classes = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 6))
    k = data.draw(st.integers(0, classes))
    pred = data.draw(hnp.arrays(np.float32, (batch, classes), elements=st.sampled_from(
        [0.0, 1.0, 2.0, -1.0, np.inf, np.nan])))
    targets = data.draw(hnp.arrays(np.int32, (batch,), elements=st.integers(-1, classes)))
    check_against_numpy(lambda t, p: tw.nn.in_top_k(t, p, k),
                        lambda t, p: np_in_top_k(t, p, k), targets, pred)


def test_v1_in_top_k_takes_predictions_first():
    tf.reset_default_graph()
    pred = tf.placeholder(tf.float32, [None, 3])
    hit = tf.nn.in_top_k(pred, tf.constant([2, 0]), 1)
    with tf.Session() as sess:
        np.testing.assert_array_equal(
            sess.run(hit, {pred: np.array([[0, 1, 5], [0, 1, 5]], np.float32)}), [True, False])
