"""tw.bitwise and the operators ``& | ^ ~ << >>`` against NumPy, on the reference and cpu
targets (the cpu target's native loop nests: shifts out of range must not be LLVM poison),
for every integer dtype, with broadcasting; logical operators on bools; no gradients;
errors naming the op."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tests.helpers import assert_same, check_against_numpy

INTS = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8)]
SHAPES = hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3)


def _ints(dtype):
    return hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3),
                      elements=hnp.from_dtype(dtype))


@st.composite
def _broadcast_pair(draw, dtype, shift=False):
    """Two arrays of `dtype` whose shapes broadcast; for shifts the amounts straddle the
    defined range [0, bits) (negative and too large ones included)."""
    x_shape, y_shape = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2,
                                                              max_side=3)).input_shapes
    x = draw(hnp.arrays(dtype, x_shape, elements=hnp.from_dtype(dtype)))
    if shift:
        bits = dtype.itemsize * 8
        lo = -3 if dtype.kind == "i" else 0
        hi = min(bits + 3, np.iinfo(dtype).max)
        y = draw(hnp.arrays(dtype, y_shape, elements=st.integers(lo, hi)))
    else:
        y = draw(hnp.arrays(dtype, y_shape, elements=hnp.from_dtype(dtype)))
    return x, y


def _numpy_shift(np_fn):
    # NumPy defines every shift amount (0 or the sign fill out of range); widen a
    # scalar result back to an array of the dtype
    return lambda x, y: np.asarray(np_fn(x, y)).astype(x.dtype)


BINARY = {
    "bitwise_and": (tw.bitwise.bitwise_and, np.bitwise_and, False),
    "bitwise_or": (tw.bitwise.bitwise_or, np.bitwise_or, False),
    "bitwise_xor": (tw.bitwise.bitwise_xor, np.bitwise_xor, False),
    "left_shift": (tw.bitwise.left_shift, _numpy_shift(np.left_shift), True),
    "right_shift": (tw.bitwise.right_shift, _numpy_shift(np.right_shift), True),
    "operator &": (lambda x, y: x & y, np.bitwise_and, False),
    "operator |": (lambda x, y: x | y, np.bitwise_or, False),
    "operator ^": (lambda x, y: x ^ y, np.bitwise_xor, False),
    "operator <<": (lambda x, y: x << y, _numpy_shift(np.left_shift), True),
    "operator >>": (lambda x, y: x >> y, _numpy_shift(np.right_shift), True),
}


# the functions on every integer dtype; the operators (the same ops) on a signed and an
# unsigned one
_CASES = [(name, dt) for name in BINARY for dt in INTS
          if not name.startswith("operator") or dt in (np.dtype(np.int16), np.dtype(np.uint8))]


@pytest.mark.parametrize(("name", "dtype"), _CASES, ids=[f"{n}-{d}" for n, d in _CASES])
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_binary_matches_numpy(name, dtype, data):
    tw_fn, np_fn, shift = BINARY[name]
    x, y = data.draw(_broadcast_pair(dtype, shift))
    check_against_numpy(tw_fn, lambda a, b: np.asarray(np_fn(a, b)).astype(dtype), x, y)


@pytest.mark.parametrize("dtype", INTS, ids=str)
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_invert_matches_numpy(dtype, data):
    x = data.draw(_ints(dtype))
    expected = lambda a: np.asarray(np.invert(a)).astype(dtype)  # noqa: E731
    check_against_numpy(tw.bitwise.invert, expected, x)
    check_against_numpy(lambda a: ~a, expected, x)


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_every_out_of_range_shift_amount(dtype):
    # each amount in [-bits-1, bits+1] against each extreme value, fused with another op
    # so the cpu target's vector loop sees the clamped shifts too
    info = np.iinfo(dtype)
    bits = dtype.itemsize * 8
    values = np.array(sorted({info.min, info.min + 1, -1 if info.min else 0, 0, 1, 5,
                              info.max}), dtype)
    amounts = np.arange(max(-bits - 1, info.min), min(bits + 1, info.max) + 1).astype(dtype)
    x, y = values[:, None], amounts[None, :]

    def both(a, b):
        return tw.bitwise.left_shift(a, b) ^ a, tw.bitwise.right_shift(a, b) | a

    def expected(a, b):
        return (np.bitwise_xor(np.left_shift(a, b), a), np.bitwise_or(np.right_shift(a, b), a))

    # broadcast, and flat (every pair in one long vector: the cpu loop's full vectors)
    pairs = [(x, y), tuple(np.ascontiguousarray(a.ravel()) for a in np.broadcast_arrays(x, y))]
    for a, b in pairs:
        want = expected(a, b)
        for target in ("reference", "cpu"):
            fn = tw.compile(both, target=target)
            for g, w in zip(fn(a, b), want):
                assert_same(g, w)
    # the cpu target ran its own code for the shifts, not the reference kernels
    step = fn.get_concrete_function(a, b).executable.native_step([a, b])
    assert step is not None and not step.plan.callback_nodes


def test_python_scalars_take_the_tensor_dtype():
    x = np.array([1, 2, -8], np.int16)
    assert_same(tw.constant(x) << 2, x << np.int16(2))
    assert_same(3 << tw.constant(np.array([0, 1, 2], np.int16)), np.array([3, 6, 12], np.int16))
    assert_same(7 & tw.constant(x), np.bitwise_and(np.int16(7), x))
    assert_same(tw.constant(x) >> 1, x >> np.int16(1))
    assert_same(-64 >> tw.constant(np.array([1, 2], np.int16)), np.array([-32, -16], np.int16))


@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_bool_operators_are_logical(data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    x = data.draw(hnp.arrays(np.bool_, shapes.input_shapes[0]))
    y = data.draw(hnp.arrays(np.bool_, shapes.input_shapes[1]))
    check_against_numpy(lambda a, b: a & b, np.logical_and, x, y)
    check_against_numpy(lambda a, b: a | b, np.logical_or, x, y)
    check_against_numpy(lambda a, b: a ^ b, np.logical_xor, x, y)
    check_against_numpy(tw.math.logical_xor, np.logical_xor, x, y)
    check_against_numpy(lambda a: ~a, np.logical_not, x)
    assert_same(tw.constant(x) & True, x)
    assert_same(False | tw.constant(x), x)


def test_not_differentiable():
    # a float path that goes through integers and a shift gets no gradient from it
    x = tw.constant(np.array([3, 5], np.int32))
    y = tw.constant(np.array([1.0, 2.0]))
    with tw.GradientTape() as tape:
        tape.watch(y)
        z = tw.cast(tw.bitwise.left_shift(x, 1) & x, tw.float64) * y
    assert_same(tape.gradient(z, y), np.array([2.0, 0.0]))
    from tensorweave.compiler.registry import get_op  # the gradients are loaded by now
    for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor", "Invert", "LeftShift", "RightShift"):
        assert get_op(op).not_differentiable, op


@pytest.mark.parametrize("fn", [tw.bitwise.bitwise_and, tw.bitwise.left_shift,
                                lambda a, b: a ^ b, lambda a, b: a >> b])
def test_floats_are_an_error_naming_the_op(fn):
    x = tw.constant(np.array([1.0, 2.0], np.float32))
    with pytest.raises(tw.errors.DTypeError, match="Bitwise|Shift") as e:
        fn(x, x)
    assert "expects an integer dtype" in str(e.value) and "test_bitwise.py" in str(e.value)
    with pytest.raises(tw.errors.DTypeError, match="integer dtype"):
        tw.bitwise.invert(x)


def test_mixed_dtypes_are_an_error():
    a = tw.constant(np.array([1], np.int32))
    b = tw.constant(np.array([1], np.int64))
    with pytest.raises(tw.errors.DTypeError):
        tw.bitwise.bitwise_or(a, b)
    with pytest.raises(tw.errors.DTypeError):
        a & tw.constant([True])
