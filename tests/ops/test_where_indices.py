"""``tw.where(condition)`` with one argument (op Where): the int64 coordinates of the true
(nonzero) elements, row-major, against ``np.argwhere`` (eager, traced on every target and
across devices) on random shapes with empty dims and scalars, bool and numeric
conditions (NaN counts as true); its data-dependent first dim in inference and on the
cpu target; errors; and gradients that flow around it (gather_nd at its coordinates)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tests.helpers import TARGETS, assert_same, check_against_numpy, check_gradients
from tests.ops.test_array import rand, seeds, spec, traced_types

# every example compiles on the cpu target too: few examples, small shapes (and fewer
# still where the loaded profile asks for fewer, as the gpu simulator's op suite does)
few = settings(max_examples=min(15, settings.default.max_examples))
shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)
CONDITION_DTYPES = st.sampled_from([np.bool_, np.int32, np.int64, np.uint8, np.float32,
                                    np.float64])


def sparse_condition(seed, shape, dtype):
    """A condition with about half its elements zero (false); floats also get a NaN,
    which is nonzero and so true, as in TensorFlow and NumPy."""
    rng = np.random.default_rng(seed)
    keep = rng.random(shape) > 0.5
    if np.dtype(dtype) == np.bool_:
        return keep
    values = rand(seed + 1, shape, dtype)
    values = np.where(values == 0, np.ones_like(values), values)  # zeros only where dropped
    out = np.where(keep, values, np.zeros_like(values)).astype(dtype)
    if np.dtype(dtype).kind == "f" and out.size and rng.random() < 0.5:
        out.reshape(-1)[rng.integers(out.size)] = np.nan
    return out


@few
@given(shapes, CONDITION_DTYPES, seeds)
def test_where_one_argument_matches_argwhere(shape, dtype, seed):
    cond = sparse_condition(seed, shape, dtype)
    check_against_numpy(lambda c: tw.where(c), lambda c: np.argwhere(c).astype(np.int64),
                        cond)


@few
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), seeds)
def test_where_coordinates_gather_the_true_elements(shape, seed):
    # the coordinates index the elements themselves: gather_nd at them is x[x > 0]
    x = rand(seed, shape, np.float32)
    for target in TARGETS:
        got = tw.compile(lambda t: tw.gather_nd(t, tw.where(t > 0)), target=target)(x)
        assert_same(got, x[x > 0])


def test_where_data_dependent_shape():
    # the count is known only at run time; an empty condition has none
    assert traced_types(lambda c: tw.where(c), spec([2, None, 3], tw.bool_)) == \
        [(tw.int64, (None, 3))]
    assert traced_types(lambda c: tw.where(c), spec([4, 0], tw.float32)) == \
        [(tw.int64, (0, 2))]
    assert traced_types(lambda c: tw.where(c), spec([], tw.bool_)) == [(tw.int64, (None, 0))]
    # unknown input dims, and a result that feeds more ops, on every target
    cond = np.array([[0, 3, 0], [5, 0, 7]], np.int32)
    for target in TARGETS:
        f = tw.compile(lambda c: tw.where(c) * 2, target=target,
                       input_signature=[spec([None, None], tw.int32)])
        assert_same(f(cond), np.int64([[0, 2], [2, 0], [2, 4]]))
        assert_same(f(np.zeros((3, 2), np.int32)), np.zeros((0, 2), np.int64))
    # a scalar condition: one empty coordinate when true, none when false
    assert_same(tw.where(True).numpy(), np.zeros((1, 0), np.int64))
    assert_same(tw.where(0.0).numpy(), np.zeros((0, 0), np.int64))


def test_where_errors_and_three_argument_form():
    with pytest.raises(tw.errors.DTypeError) as err:
        tw.where(None)
    msg = str(err.value)
    assert "tw.where" in msg and "None" in msg and "test_where_indices.py" in msg, msg
    with pytest.raises(ValueError, match="both x and y, or neither"):
        tw.where([True], x=[1.0])
    # the three-argument form is unchanged
    assert tw.where([True, False], [1, 2], [3, 4]).numpy().tolist() == [1, 4]


def test_gradient_flows_around_where():
    # Where itself is not differentiable; the values it selects are
    x = np.array([[0.7, -1.2, 0.4], [-0.3, 1.5, -2.0]], np.float64)
    check_gradients(lambda t: tw.gather_nd(t, tw.where(t > 0)) ** 2, x)
