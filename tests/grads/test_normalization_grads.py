"""Gradients of moments, batch_normalization, l2_normalize and top_k against central
finite differences in float64, on the reference and cpu targets."""

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tests.helpers import TARGETS, check_gradients

F64 = np.float64


def values(shape, lo=-2.0, hi=2.0):
    return hnp.arrays(F64, shape, elements=st.floats(lo, hi, allow_subnormal=False))


@st.composite
def array_and_axes(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=3))
    axes = draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape),
                         unique=True))
    return draw(values(shape)), sorted(axes)


@pytest.mark.parametrize("target", TARGETS)
@settings(max_examples=8, deadline=None)
@given(case=array_and_axes(), keepdims=st.booleans())
def test_moments(target, case, keepdims):
    x, axes = case
    check_gradients(lambda x: tw.nn.moments(x, axes, keepdims=keepdims)[0], x, target=target)
    check_gradients(lambda x: tw.nn.moments(x, axes, keepdims=keepdims)[1], x, target=target)


@pytest.mark.parametrize("target", TARGETS)
@settings(max_examples=8, deadline=None)
@given(st.data())
def test_batch_normalization(target, data):
    shape = data.draw(hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=3))
    c = shape[-1]
    x, mean, offset, scale = (data.draw(values(s)) for s in (shape, (c,), (c,), (c,)))
    var = data.draw(values((c,), 0.5, 2.0))
    check_gradients(lambda x, m, v, o, s: tw.nn.batch_normalization(x, m, v, o, s, 1e-3),
                    x, mean, var, offset, scale, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_batch_normalization_with_moments_of_the_batch(target):
    # the training-mode composition: statistics depend on x too
    x = np.random.default_rng(0).normal(size=(4, 3))

    def bn(x):
        mean, var = tw.nn.moments(x, [0])
        return tw.nn.batch_normalization(x, mean, var, None, None, 1e-3)

    check_gradients(bn, x, target=target)


@pytest.mark.parametrize("target", TARGETS)
@settings(max_examples=8, deadline=None)
@given(st.data())
def test_l2_normalize(target, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    x = data.draw(values(shape, 0.5, 2.0)) * data.draw(st.sampled_from([1.0, -1.0]))
    check_gradients(lambda x: tw.nn.l2_normalize(x, axis=axis), x, target=target)


@pytest.mark.parametrize("target", TARGETS)
@settings(max_examples=8, deadline=None)
@given(st.data())
def test_top_k(target, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    k = data.draw(st.integers(1, shape[-1]))
    # distinct values 0.1 apart: a finite-difference step never reorders them
    size = int(np.prod(shape))
    perm = np.array(data.draw(st.permutations(range(size))), dtype=F64)
    x = ((perm - size / 2) * 0.1).reshape(shape)
    check_gradients(lambda x: tw.nn.top_k(x, k)[0], x, target=target)
