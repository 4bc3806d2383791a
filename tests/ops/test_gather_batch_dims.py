"""tw.gather with batch_dims > 0 against TensorFlow's definition (a gather per batch
element, by loops in NumPy), eagerly and on every target, its gradient against finite
differences in float64, and its errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tests.helpers import check_against_numpy, check_gradients
from tests.ops.test_array import seeds


def np_batch_gather(params, indices, axis, batch_dims):
    if batch_dims == 0:
        return np.take(params, indices, axis=axis)
    return np.stack([np_batch_gather(params[k], indices[k], axis - 1, batch_dims - 1)
                     for k in range(params.shape[0])])


CASES = [  # params shape, indices shape, axis, batch_dims
    ((2, 3, 4), (2, 5), 1, 1),
    ((2, 3, 4), (2, 5), 2, 1),
    ((2, 3, 4), (2, 5), -1, 1),
    ((2, 3, 4, 2), (2, 3, 2), 2, 2),
    ((2, 3, 4), (2,), 1, 1),
    ((2, 3, 4), (2,), 2, 1),
    ((2, 3, 4, 5), (2, 2, 3), 2, 1),
    ((2, 3, 4), (2, 5), None, -1),
]


@settings(max_examples=10)
@given(seeds, st.sampled_from(CASES), st.sampled_from([np.int32, np.int64]))
def test_batch_gather_matches_tensorflows_definition(seed, case, id_dtype):
    pshape, ishape, axis, batch_dims = case
    rng = np.random.default_rng(seed)
    params = rng.normal(size=pshape).astype(np.float32)
    b = batch_dims % len(ishape) if batch_dims < 0 else batch_dims
    ax = b if axis is None else axis % len(pshape)
    indices = rng.integers(0, pshape[ax], ishape).astype(id_dtype)
    check_against_numpy(lambda p, i: tw.gather(p, i, axis=axis, batch_dims=batch_dims),
                        lambda p, i: np_batch_gather(p, i, ax, b), params, indices)


@pytest.mark.parametrize("case", CASES[:2] + CASES[3:5])
def test_batch_gather_gradient(case):
    pshape, ishape, axis, batch_dims = case
    rng = np.random.default_rng(0)
    params = rng.normal(size=pshape)
    ax = axis % len(pshape)
    indices = rng.integers(0, pshape[ax], ishape).astype(np.int32)  # repeats add up
    check_gradients(lambda p: tw.gather(p, indices, axis=axis, batch_dims=batch_dims), params)


def test_batch_gather_errors():
    params = np.zeros((2, 3, 4), np.float32)
    with pytest.raises(tw.errors.ShapeError, match="batch dim 0"):
        tw.gather(params, np.zeros((3, 2), np.int32), axis=1, batch_dims=1)
    with pytest.raises(tw.errors.ShapeError, match="axis must be >= batch_dims"):
        tw.gather(params, np.zeros((2, 3), np.int32), axis=0, batch_dims=1)
    with pytest.raises(tw.errors.ShapeError, match="batch_dims must be"):
        tw.gather(params, np.zeros((2,), np.int32), batch_dims=2)
    with pytest.raises(tw.errors.InvalidArgumentError):
        tw.gather(params, np.full((2, 1), 3, np.int32), axis=1, batch_dims=1)
