"""Native lowerings of the reductions, ArgMax/ArgMin, ReduceToLike and the softmax family
against their reference kernels (random shapes with 0 and 1 sized dims, random attrs)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorweave.errors import InvalidArgumentError
from tensorweave.targets.cpu.lowering import compile_node, find_lowering
from tests.lowerings.helpers import check_lowering, reference_outputs, single_node

NUMERIC = [np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8]
FLOATS = [np.float32, np.float64]
SIZES = [0, 1, 1, 2, 3, 4, 5, 8, 9, 17]


def _shapes(min_rank: int = 0, max_rank: int = 4):
    return st.lists(st.sampled_from(SIZES), min_size=min_rank, max_size=max_rank).map(tuple)


def _values(rng, shape, dtype, special: bool = False, ties: bool = False) -> np.ndarray:
    """Random values of `dtype`: floats (with NaN/inf sprinkled in when `special`), ints
    over their whole range (so sums and products wrap), bools; `ties`: few distinct."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.asarray(rng.random(shape) < rng.choice([0.1, 0.5, 0.9]))
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = (0, 3) if ties else (int(info.min), int(info.max) + 1)
        return np.asarray(rng.integers(lo, hi, shape, dtype=dtype))
    x = rng.integers(-2, 3, shape) if ties else rng.standard_normal(shape) * 3
    x = np.asarray(x).astype(dtype)
    if special and x.size:
        picks = rng.random(shape) < 0.15
        x[picks] = rng.choice(np.array([np.nan, np.inf, -np.inf], dtype), int(picks.sum()))
    return x


def _check(op: str, arrays, **attrs) -> None:
    """`check_lowering`, or where the reference kernel raises InvalidArgumentError, the
    native kernel raising it too (a status code and its message)."""
    node = single_node(op, arrays, **attrs)
    try:
        reference_outputs(node, arrays)
    except InvalidArgumentError:
        assert find_lowering(node) is not None
        with pytest.raises(InvalidArgumentError):
            compile_node(node)(list(arrays))
        return
    check_lowering(op, arrays, **attrs)


def _draw_axes(data, rank: int):
    if data.draw(st.booleans()) and rank:
        return None
    axes = data.draw(st.lists(st.integers(0, max(rank - 1, 0)), unique=True, max_size=rank))
    return [a - rank if data.draw(st.booleans()) else a for a in axes] if rank else []


# ---------------------------------------------------------------------- reductions

@settings(max_examples=100, deadline=None)
@given(st.data())
def test_numeric_reductions_match_reference(data):
    op = data.draw(st.sampled_from(["Sum", "Mean", "Max", "Min", "Prod"]))
    dtype = data.draw(st.sampled_from(NUMERIC))
    shape = data.draw(_shapes())
    axes = _draw_axes(data, len(shape))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    x = _values(rng, shape, dtype, special=data.draw(st.booleans()))
    if op == "Prod" and np.dtype(dtype).kind == "f":
        x = (1 + x / 10).astype(dtype)  # keep float products finite and non-trivial
    _check(op, [x], axes=axes, keepdims=data.draw(st.booleans()))


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_logical_reductions_match_reference(data):
    op = data.draw(st.sampled_from(["All", "Any"]))
    shape = data.draw(_shapes())
    axes = _draw_axes(data, len(shape))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    _check(op, [_values(rng, shape, np.bool_)], axes=axes, keepdims=data.draw(st.booleans()))


@pytest.mark.parametrize("shape,axes", [((3, 2500), [0]), ((2500, 3), [0]), ((3, 2500), [1]),
                                        ((5, 7, 300), [0, 2]), ((4100,), None),
                                        ((2, 1030, 3), [1])])
@pytest.mark.parametrize("op,dtype", [("Sum", np.float32), ("Mean", np.float32),
                                      ("Max", np.float64), ("Sum", np.int8),
                                      ("Mean", np.int32), ("Any", np.bool_)])
def test_long_reductions_use_every_loop(shape, axes, op, dtype):
    """Long rows and columns: full vector strips, several chunks of columns, remainders."""
    rng = np.random.default_rng(0)
    check_lowering(op, [_values(rng, shape, dtype)], axes=axes, keepdims=False)


def test_float32_sums_do_not_drift():
    x = np.full((1 << 20,), 0.1, np.float32)
    out = check_lowering("Sum", [x], axes=None)[0]
    assert abs(float(out) - float(np.sum(x.astype(np.float64)))) < 1e-2


@pytest.mark.parametrize("op,dtype,message", [("Max", np.float32, "no elements"),
                                              ("Min", np.int32, "no elements"),
                                              ("Mean", np.int64, "no elements")])
def test_undefined_empty_reductions_are_status_codes(op, dtype, message):
    node = single_node(op, [np.zeros((3, 0), dtype)], axes=[1], keepdims=False)
    with pytest.raises(InvalidArgumentError, match=message):
        compile_node(node)([np.zeros((3, 0), dtype)])


@pytest.mark.parametrize("op,dtype", [("Sum", np.float32), ("Prod", np.int16),
                                      ("Mean", np.float64), ("All", np.bool_),
                                      ("Any", np.bool_)])
def test_empty_reductions_give_identities(op, dtype):
    check_lowering(op, [np.zeros((2, 0, 3), dtype)], axes=[1], keepdims=True)


# ------------------------------------------------------------------- ReduceToLike

@settings(max_examples=30, deadline=None)
@given(st.data())
def test_reduce_to_like_matches_reference(data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64, np.int32, np.bool_]))
    grad_shape = data.draw(_shapes(0, 4))
    like = list(grad_shape[data.draw(st.integers(0, len(grad_shape))):])
    like = tuple(1 if data.draw(st.booleans()) else d for d in like)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    # integer-valued floats: the reference sums in the input dtype, these sum exactly
    grad = _values(rng, grad_shape, dtype, ties=np.dtype(dtype).kind == "f")
    check_lowering("ReduceToLike", [grad, np.zeros(like, np.float32)])


# ----------------------------------------------------------------- ArgMax / ArgMin

@settings(max_examples=60, deadline=None)
@given(st.data())
def test_arg_reductions_match_reference(data):
    op = data.draw(st.sampled_from(["ArgMax", "ArgMin"]))
    dtype = data.draw(st.sampled_from(NUMERIC))
    shape = data.draw(_shapes(1, 4))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    ties = data.draw(st.booleans())
    x = _values(rng, shape, dtype, special=data.draw(st.booleans()), ties=ties)
    _check(op, [x], axis=axis, output_type=data.draw(st.sampled_from(["i32", "i64"])))


@pytest.mark.parametrize("shape,axis", [((3, 1500), 0), ((1500, 3), 0), ((2, 700), 1)])
def test_long_arg_reductions(shape, axis):
    x = _values(np.random.default_rng(1), shape, np.float32, special=True)
    check_lowering("ArgMax", [x], axis=axis)
    check_lowering("ArgMin", [x], axis=axis)


# ------------------------------------------------------------------ softmax family

@settings(max_examples=60, deadline=None)
@given(st.data())
def test_softmax_and_log_softmax_match_reference(data):
    op = data.draw(st.sampled_from(["Softmax", "LogSoftmax"]))
    dtype = data.draw(st.sampled_from(FLOATS))
    shape = data.draw(_shapes(1, 4))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    x = _values(rng, shape, dtype, special=data.draw(st.booleans()))
    check_lowering(op, [x], axis=axis)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("shape,axis", [((4, 1100), 1), ((300, 1100), 0), ((3, 50, 7), 1)])
def test_long_softmax(op, shape, axis):
    x = (np.random.default_rng(2).standard_normal(shape) * 10).astype(np.float32)
    check_lowering(op, [x], axis=axis)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_softmax_cross_entropy_matches_reference(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    shape = data.draw(_shapes(1, 3))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    logits = _values(rng, shape, dtype)
    labels = rng.dirichlet(np.ones(shape[-1]), shape[:-1]).astype(dtype) if shape[-1] \
        else np.zeros(shape, dtype)
    check_lowering("SoftmaxCrossEntropyWithLogits", [logits, labels])


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_sparse_softmax_cross_entropy_matches_reference(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    shape = data.draw(_shapes(1, 3))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    logits = _values(rng, shape, dtype)
    classes = shape[-1]
    labels = rng.integers(0, max(classes, 1), shape[:-1])
    if labels.size and data.draw(st.booleans()):  # an out-of-range label somewhere
        labels.flat[rng.integers(labels.size)] = data.draw(st.sampled_from([-1, classes, 99]))
    labels = labels.astype(data.draw(st.sampled_from([np.int32, np.int64])))
    _check("SparseSoftmaxCrossEntropyWithLogits", [logits, labels])


def test_sparse_label_out_of_range_message():
    logits = np.zeros((2, 3), np.float32)
    labels = np.array([0, 3], np.int64)
    node = single_node("SparseSoftmaxCrossEntropyWithLogits", [logits, labels])
    with pytest.raises(InvalidArgumentError, match=r"outside the valid range of \[0, classes\)"):
        compile_node(node)([logits, labels])


@pytest.mark.parametrize("sparse", [False, True])
def test_long_cross_entropy(sparse):
    rng = np.random.default_rng(3)
    logits = (rng.standard_normal((64, 1000)) * 5).astype(np.float32)
    labels = rng.integers(0, 1000, 64) if sparse else \
        rng.dirichlet(np.ones(1000), 64).astype(np.float32)
    op = "SparseSoftmaxCrossEntropyWithLogits" if sparse else "SoftmaxCrossEntropyWithLogits"
    check_lowering(op, [logits, labels])
