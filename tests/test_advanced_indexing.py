"""``tensor[key]`` with one index array (an integer or bool tensor, list or array) among
ints, slices, None and ``...``: NumPy's results (hypothesis over shapes and keys) eagerly
and on every target, with index tensors known only at run time, gradients against finite
differences in float64, and clear errors for what is not supported."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tests.helpers import TARGETS, assert_same, check_gradients


@st.composite
def _keys(draw):
    """(x, key): an array and a key with one index array, the other entries basic."""
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) - 5
    p = draw(st.integers(0, len(shape) - 1))  # the first axis the index array covers
    if draw(st.booleans()):
        width = draw(st.integers(1, len(shape) - p))
        index = draw(st.lists(st.booleans(), min_size=int(np.prod(shape[p:p + width])),
                              max_size=int(np.prod(shape[p:p + width]))))
        index = np.array(index, dtype=bool).reshape(shape[p:p + width])
    else:
        width = 1
        n = shape[p]
        index = np.array(draw(st.lists(st.integers(-n, n - 1), max_size=4)), dtype=np.int64)
        if draw(st.booleans()) and index.size:
            index = index.reshape(1, -1)
    key = []
    for axis in range(len(shape)):
        if axis == p:
            key.append(index)
        elif p < axis < p + width:
            continue
        else:
            key.append(draw(st.one_of(
                st.just(slice(None)),
                st.integers(-shape[axis], shape[axis] - 1),
                st.builds(slice, st.integers(-4, 4) | st.none(), st.integers(-4, 4) | st.none(),
                          st.sampled_from([None, 1, 2, -1])))))
    if draw(st.booleans()):
        key.insert(draw(st.integers(0, len(key))), None)
    if draw(st.booleans()):  # leave out trailing full slices, or stand an ellipsis in
        ellipsis_at = draw(st.integers(0, len(key)))
        while ellipsis_at < len(key) and isinstance(key[ellipsis_at], slice) \
                and key[ellipsis_at] == slice(None):
            del key[ellipsis_at]
        key.insert(ellipsis_at, Ellipsis)
    return x, tuple(key)


@settings(max_examples=40, deadline=None)
@given(case=_keys())
def test_matches_numpy_eagerly(case):
    x, key = case
    assert_same(tw.constant(x)[key], x[key])


@settings(max_examples=6, deadline=None)
@given(case=_keys())
def test_matches_numpy_on_every_target(case):
    x, key = case
    for target in TARGETS:
        assert_same(tw.compile(lambda t: t[key], target=target)(x), x[key])


@pytest.mark.parametrize("target", TARGETS)
def test_index_tensors_known_only_at_run_time(target):
    @tw.compile(target=target, input_signature=[tw.TensorSpec([None, 3], tw.float32),
                                                tw.TensorSpec([None], tw.int32),
                                                tw.TensorSpec([None, 3], tw.bool)])
    def f(x, idx, mask):
        return x[idx], x[:, idx[:1]], x[mask], x[-1, :, None][idx[1:]]

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([-1, 0, 2, -3], np.int32)
    mask = x % 3 == 1
    got = f(x, idx, mask)
    for g, w in zip(got, (x[idx], x[:, idx[:1]], x[mask], x[-1, :, None][idx[1:]])):
        assert_same(g, w)
    with pytest.raises(tw.errors.InvalidArgumentError, match="Gather"):
        f(x, np.array([4], np.int32), mask)
    with pytest.raises(tw.errors.InvalidArgumentError, match="Gather"):
        f(x, np.array([-5], np.int32), mask)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int64])
def test_every_integer_index_dtype(dtype):
    x = np.arange(10.0)
    idx = np.array([3, 0, 9], dtype)
    assert_same(tw.constant(x)[tw.constant(idx)], x[idx])
    assert_same(tw.constant(x)[idx], x[idx])


@pytest.mark.parametrize("target", TARGETS)
def test_gradients_match_finite_differences(target):
    x = np.random.default_rng(1).normal(size=(3, 4))
    mask = np.array([[True, False, True, True], [False] * 4, [True, False, False, True]])
    check_gradients(lambda t: t[[2, 0, -1, 0]] * 1.5, x, target=target)
    check_gradients(lambda t: tw.sin(t[mask]), x, target=target)
    check_gradients(lambda t: t[1:, None, [3, -1]] ** 2, x, target=target)


def test_errors():
    t = tw.constant(np.zeros((3, 4)))
    with pytest.raises(TypeError, match="2 index arrays.*gather_nd"):
        t[[0, 1], [1, 2]]
    with pytest.raises(TypeError, match="integers or bools"):
        t[[0.5, 1.0]]
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        t[[0, 3]]
    with pytest.raises(IndexError, match="index -5 is out of bounds for axis 1 with size 4"):
        t[:, np.array([-5])]
    with pytest.raises(tw.errors.ShapeError, match="too many indices") as err:
        t[0, 1, [0]]
    assert "test_advanced_indexing.py" in str(err.value)
    with pytest.raises(TypeError, match="f32 index tensor"):
        t[tw.constant([0.0, 1.0])]
    with pytest.raises((tw.errors.ShapeError, tw.errors.InvalidArgumentError)):
        t[np.array([True, False])]
