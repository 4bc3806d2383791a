"""The math family against NumPy: elementwise ops with broadcasting, AddN, where, cast,
reductions, arg reductions, matmul, Python operators, unknown dims and the errors users
see (which must name the op and the line of this file that made it)."""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tests.helpers import assert_same, check_against_numpy, line_of

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
I8, I32, I64, U8, BOOL = (np.dtype(t) for t in (np.int8, np.int32, np.int64, np.uint8, np.bool_))
FLOATS = [F32, F64, F16]
NUMERIC = [F32, F64, I32, F16]

SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)


def elements(dtype, lo=-8.0, hi=8.0, *, nonzero=False):
    """Values of `dtype` in [lo, hi] (bounds are dyadic so that f16 represents them); floats
    mix in small integers so that ties and exact quotients happen."""
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return st.booleans()
    if dtype.kind in "iu":
        s = st.integers(int(np.ceil(lo)), int(np.floor(hi)))
    else:
        s = st.one_of(st.integers(int(np.ceil(lo)), int(np.floor(hi))).map(float),
                      st.floats(lo, hi, width=8 * dtype.itemsize, allow_nan=False,
                                allow_infinity=False))
    if nonzero:
        s = s.filter(lambda v: abs(v) >= 0.25)
    return s


def arrays(dtype, shape, lo=-8.0, hi=8.0, *, nonzero=False):
    return hnp.arrays(dtype, shape, elements=elements(dtype, lo, hi, nonzero=nonzero))


# ----------------------------------------------------------------------- unary elementwise

UNARY = {  # name: (tw function, NumPy reference, dtypes, value range)
    "negative": (tw.negative, np.negative, NUMERIC + [I8], (-8, 8)),
    "abs": (tw.abs, np.abs, NUMERIC, (-8, 8)),
    "square": (tw.square, np.square, NUMERIC, (-8, 8)),
    "sign": (tw.sign, np.sign, NUMERIC, (-8, 8)),
    "relu": (tw.relu, lambda a: np.maximum(a, a.dtype.type(0)), NUMERIC + [U8], (-8, 8)),
    "exp": (tw.exp, np.exp, FLOATS, (-8, 8)),
    "log": (tw.log, np.log, FLOATS, (0.0625, 64)),
    "log1p": (tw.log1p, np.log1p, FLOATS, (-0.875, 64)),
    "sqrt": (tw.sqrt, np.sqrt, FLOATS, (0, 64)),
    "rsqrt": (tw.rsqrt, lambda a: 1 / np.sqrt(a), FLOATS, (0.0625, 64)),
    "sin": (tw.sin, np.sin, FLOATS, (-8, 8)),
    "cos": (tw.cos, np.cos, FLOATS, (-8, 8)),
    "tanh": (tw.tanh, np.tanh, FLOATS, (-8, 8)),
    "sigmoid": (tw.sigmoid, lambda a: (1 / (1 + np.exp(-a.astype(F64)))).astype(a.dtype), FLOATS,
                (-16, 16)),
    "floor": (tw.floor, np.floor, FLOATS, (-8, 8)),
    "ceil": (tw.ceil, np.ceil, FLOATS, (-8, 8)),
    "reciprocal": (tw.reciprocal, np.reciprocal, FLOATS, (0.125, 8)),
    "logical_not": (tw.logical_not, np.logical_not, [BOOL], (0, 1)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@given(data=st.data())
def test_unary_matches_numpy(name, data):
    tw_fn, np_fn, dtypes, (lo, hi) = UNARY[name]
    dtype = data.draw(st.sampled_from(dtypes))
    if dtype.kind == "u":
        lo = 0
    x = data.draw(arrays(dtype, SHAPES, lo, hi))
    check_against_numpy(tw_fn, np_fn, x)


def test_unary_bfloat16_computes_in_float32():
    x = np.linspace(-3, 3, 7).astype(ml_dtypes.bfloat16)
    for tw_fn, np_fn in ((tw.exp, np.exp), (tw.tanh, np.tanh), (tw.sigmoid, lambda a: 1 / (1 + np.exp(-a)))):
        expected = np_fn(x.astype(F32)).astype(ml_dtypes.bfloat16)
        check_against_numpy(tw_fn, lambda a, e=expected: e, x)


def test_sigmoid_saturates_without_overflow():
    x = np.array([-1000, -50, 0, 50, 1000], np.float32)
    out = np.asarray(tw.sigmoid(x))
    np.testing.assert_allclose(out, [0, 1.9287e-22, 0.5, 1, 1], rtol=1e-4)


# ---------------------------------------------------------------------- binary elementwise

def _np_floordiv(a, b):
    # TensorFlow's FloorDiv: floats floor the rounded quotient (1.0 // 0.1 is 10, not 9)
    return np.floor_divide(a, b) if a.dtype.kind in "iu" else np.floor(a / b)


def _np_floormod(a, b):
    # TensorFlow's FloorMod: fmod moved to the sign of b; a zero keeps a's sign
    if a.dtype.kind in "iu":
        return np.remainder(a, b)
    r = np.fmod(a, b)
    return np.where((r != 0) & ((r < 0) != (b < 0)), r + b, r).astype(a.dtype)


BINARY = {  # name: (tw function, NumPy reference, dtypes, y must be nonzero)
    "add": (tw.add, np.add, NUMERIC, False),
    "subtract": (tw.subtract, np.subtract, NUMERIC, False),
    "multiply": (tw.multiply, np.multiply, NUMERIC, False),
    "divide": (tw.divide, np.true_divide, FLOATS, True),
    "floordiv": (tw.floordiv, _np_floordiv, [F32, F64, I32, I64], True),
    "floormod": (tw.floormod, _np_floormod, [F32, F64, I32, I64], True),
    "maximum": (tw.maximum, np.maximum, NUMERIC, False),
    "minimum": (tw.minimum, np.minimum, NUMERIC, False),
    "squared_difference": (tw.squared_difference, lambda a, b: np.square(a - b), NUMERIC, False),
    "equal": (tw.equal, np.equal, NUMERIC + [BOOL], False),
    "not_equal": (tw.not_equal, np.not_equal, NUMERIC + [BOOL], False),
    "less": (tw.less, np.less, NUMERIC, False),
    "less_equal": (tw.less_equal, np.less_equal, NUMERIC, False),
    "greater": (tw.greater, np.greater, NUMERIC, False),
    "greater_equal": (tw.greater_equal, np.greater_equal, NUMERIC, False),
    "logical_and": (tw.logical_and, np.logical_and, [BOOL], False),
    "logical_or": (tw.logical_or, np.logical_or, [BOOL], False),
}

BROADCAST2 = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0,
                                               max_side=3)


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data())
def test_binary_broadcasts_like_numpy(name, data):
    tw_fn, np_fn, dtypes, nonzero = BINARY[name]
    dtype = data.draw(st.sampled_from(dtypes))
    (sx, sy), _ = data.draw(BROADCAST2)
    x = data.draw(arrays(dtype, sx))
    y = data.draw(arrays(dtype, sy, nonzero=nonzero))
    check_against_numpy(tw_fn, np_fn, x, y)


@given(data=st.data())
def test_pow_matches_numpy(data):
    (sx, sy), _ = data.draw(BROADCAST2)
    dtype = data.draw(st.sampled_from([F32, F64, I32]))
    if dtype.kind == "f":
        x, y = data.draw(arrays(dtype, sx, 0.125, 4)), data.draw(arrays(dtype, sy, -3, 3))
    else:
        x, y = data.draw(arrays(dtype, sx, -4, 4)), data.draw(arrays(dtype, sy, 0, 5))
    check_against_numpy(tw.pow, np.power, x, y)


@given(data=st.data())
def test_divide_of_integers_is_true_division_in_float(data):
    (sx, sy), _ = data.draw(BROADCAST2)
    dtype, out = data.draw(st.sampled_from([(I32, F64), (I64, F64), (I8, F32), (U8, F32)]))
    lo = 0 if dtype.kind == "u" else -8
    x = data.draw(arrays(dtype, sx, lo, 8))
    y = data.draw(arrays(dtype, sy, 1, 8))
    check_against_numpy(tw.divide, lambda a, b: (a.astype(out) / b.astype(out)), x, y)


def test_floordiv_and_floormod_follow_python_signs():
    x = np.array([7, -7, 7, -7], np.int32)
    y = np.array([2, 2, -2, -2], np.int32)
    assert np.asarray(tw.floordiv(x, y)).tolist() == [3, -4, -4, 3]
    assert np.asarray(tw.floormod(x, y)).tolist() == [1, 1, -1, -1]
    xf = x.astype(np.float32) + 0.5
    np.testing.assert_array_equal(tw.mod(xf, y.astype(np.float32)), np.remainder(xf, y))
    assert tw.truediv(x, y).dtype is tw.float64


def test_raw_div_of_integers_truncates_toward_zero_like_c():
    from tensorweave.frontend.building import apply_op1
    x = np.array([7, -7, 7, -7, 6], np.int32)
    y = np.array([2, 2, -2, -2, 3], np.int32)
    assert np.asarray(apply_op1("Div", [x, y])).tolist() == [3, -3, -3, 3, 2]


def test_half_precision_arithmetic_rounds_once():
    x = np.array([1000, 0.1, -3], np.float16)
    y = np.array([0.3, 0.7, 1024], np.float16)
    expected = (x.astype(F32) * y.astype(F32)).astype(F16)
    assert_same(np.asarray(tw.multiply(x, y)), expected, rtol=0, atol=0)
    b = x.astype(ml_dtypes.bfloat16)
    assert tw.add(b, b).dtype is tw.bfloat16


# ------------------------------------------------------------------- AddN, where and cast

@given(data=st.data())
def test_add_n_sums_same_shaped_tensors(data):
    dtype = data.draw(st.sampled_from(NUMERIC))
    shape = data.draw(SHAPES)
    xs = [data.draw(arrays(dtype, shape)) for _ in range(data.draw(st.integers(1, 4)))]

    def reference(*arrays):
        total = functools.reduce(np.add, [a.astype(F64) for a in arrays])
        return total.astype(dtype)

    check_against_numpy(lambda *ts: tw.add_n(list(ts)), reference, *xs)


@given(data=st.data())
def test_where_broadcasts_condition_and_both_branches(data):
    shapes, _ = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3,
                                                            min_side=0, max_side=3))
    dtype = data.draw(st.sampled_from(NUMERIC + [BOOL]))
    cond = data.draw(arrays(BOOL, shapes[0]))
    x, y = (data.draw(arrays(dtype, s)) for s in shapes[1:])
    check_against_numpy(tw.where, np.where, cond, x, y)


CAST_DTYPES = [F16, F32, F64, I8, I32, I64, U8, BOOL]


@pytest.mark.parametrize("src", CAST_DTYPES, ids=str)
@given(data=st.data())
def test_cast_between_all_dtypes(src, data):
    dst = data.draw(st.sampled_from(CAST_DTYPES))
    lo = 0 if (dst.kind == "u" or src.kind == "u") else -100
    x = data.draw(arrays(src, SHAPES, lo, 100))

    def reference(a):
        if dst == BOOL:
            return a != 0
        if a.dtype.kind == "f" and dst.kind in "iu":
            return np.trunc(a).astype(dst)
        return a.astype(dst)

    check_against_numpy(lambda t: tw.cast(t, dst), reference, x)


def test_cast_truncates_toward_zero_and_nonzero_is_true():
    x = np.array([-1.7, -0.5, 0.0, 0.5, 1.7], np.float32)
    assert np.asarray(tw.cast(x, tw.int32)).tolist() == [-1, 0, 0, 0, 1]
    assert np.asarray(tw.cast(x, tw.bool)).tolist() == [True, True, False, True, True]
    assert np.asarray(tw.cast(np.array([True, False]), tw.float32)).tolist() == [1.0, 0.0]
    b = tw.cast(x, tw.bfloat16)
    assert b.dtype is tw.bfloat16
    np.testing.assert_array_equal(np.asarray(b), x.astype(ml_dtypes.bfloat16))
    assert tw.cast(1.9, "int32").numpy() == 1
    t = tw.constant([1, 2])
    assert tw.cast(t, tw.int32) is t


# ------------------------------------------------------------------------------ reductions

def _float_ref(np_fn):
    """Reference that accumulates floats in float64 and rounds once, like the oracle."""
    def ref(a, axis, keepdims):
        wide = a.astype(F64) if a.dtype.kind == "f" else a
        return np.asarray(np_fn(wide, axis=axis, keepdims=keepdims)).astype(a.dtype)
    return ref


def _int_mean(a, axis, keepdims):
    if a.dtype.kind == "f":
        return _float_ref(np.mean)(a, axis, keepdims)
    total = np.sum(a.astype(np.int64), axis=axis, keepdims=keepdims)
    count = a.size // max(total.size, 1) if a.size else 1
    return (np.trunc(total / count)).astype(a.dtype)


REDUCTIONS = {  # name: (tw function, reference(a, axis, keepdims), dtypes, min side)
    "reduce_sum": (tw.reduce_sum, _float_ref(np.sum), NUMERIC, 0),
    "reduce_prod": (tw.reduce_prod, _float_ref(np.prod), NUMERIC, 0),
    "reduce_mean": (tw.reduce_mean, _int_mean, NUMERIC, 1),
    "reduce_max": (tw.reduce_max, np.max, NUMERIC, 1),
    "reduce_min": (tw.reduce_min, np.min, NUMERIC, 1),
    "reduce_all": (tw.reduce_all, np.all, [BOOL], 0),
    "reduce_any": (tw.reduce_any, np.any, [BOOL], 0),
}


@st.composite
def reduction_axes(draw, rank):
    """None, one (possibly negative) axis, or a list of distinct axes."""
    if rank == 0:
        return draw(st.sampled_from([None, []]))
    one = st.integers(-rank, rank - 1)
    many = st.lists(st.integers(0, rank - 1), unique=True, max_size=rank).flatmap(
        lambda axes: st.tuples(*[st.sampled_from([a, a - rank]) for a in axes]).map(list))
    return draw(st.one_of(st.none(), one, many))


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@given(data=st.data())
def test_reductions_match_numpy(name, data):
    tw_fn, np_fn, dtypes, min_side = REDUCTIONS[name]
    dtype = data.draw(st.sampled_from(dtypes))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=min_side, max_side=3))
    lo, hi = (-2, 2) if name == "reduce_prod" else (-8, 8)
    x = data.draw(arrays(dtype, shape, lo, hi))
    axis = data.draw(reduction_axes(len(shape)))
    keepdims = data.draw(st.booleans())
    np_axis = None if axis is None else (tuple(axis) if isinstance(axis, list) else axis)
    check_against_numpy(lambda t: tw_fn(t, axis=axis, keepdims=keepdims),
                        lambda a: np_fn(a, axis=np_axis, keepdims=keepdims), x)


def test_reduce_sum_of_float32_is_accurate():
    x = np.full(100_001, 0.1, np.float32)
    x[0] = 1e8
    expected = np.float32(np.sum(x.astype(np.float64)))
    assert np.asarray(tw.reduce_sum(x)) == expected


def test_integer_mean_truncates_and_empty_float_mean_is_nan():
    x = np.array([[1, 2], [-1, -2], [3, 4]], np.int32)
    assert np.asarray(tw.reduce_mean(x, axis=1)).tolist() == [1, -1, 3]
    out = np.asarray(tw.reduce_mean(np.zeros((0, 2), np.float32), axis=0))
    assert out.shape == (2,) and np.isnan(out).all()
    assert np.asarray(tw.reduce_sum(np.zeros((0, 2), np.float32), axis=0)).tolist() == [0, 0]
    assert np.asarray(tw.reduce_max(np.zeros((2, 0), np.float32), axis=0)).shape == (0,)


def test_axis_may_be_an_eager_tensor_or_empty_list():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(tw.reduce_sum(x, axis=tw.constant(1)), [3, 12])
    np.testing.assert_array_equal(tw.reduce_sum(x, axis=[]), x)


@given(data=st.data())
def test_argmax_argmin_pick_the_first_extreme(data):
    dtype = data.draw(st.sampled_from(NUMERIC))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = data.draw(arrays(dtype, shape, -3, 3))
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    out = data.draw(st.sampled_from([tw.int32, tw.int64]))
    for tw_fn, np_fn in ((tw.argmax, np.argmax), (tw.argmin, np.argmin)):
        check_against_numpy(lambda t, f=tw_fn: f(t, axis=axis, output_type=out),
                            lambda a, f=np_fn: f(a, axis=0 if axis is None else axis).astype(out.np),
                            x)


def test_argmax_defaults_to_int64_and_axis_0():
    x = np.array([[1, 5], [3, 2]], np.float32)
    r = tw.argmax(x)
    assert r.dtype is tw.int64 and np.asarray(r).tolist() == [1, 0]


# ---------------------------------------------------------------------------------- matmul

@given(data=st.data())
def test_matmul_batched_broadcast_and_transposes(data):
    dtype = data.draw(st.sampled_from(NUMERIC))
    (ba, bb), _ = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2,
                                                              min_side=0, max_side=3))
    m, k, n = (data.draw(st.integers(0, 3)) for _ in range(3))
    ta, tb = data.draw(st.booleans()), data.draw(st.booleans())
    a = data.draw(arrays(dtype, ba + ((k, m) if ta else (m, k)), -3, 3))
    b = data.draw(arrays(dtype, bb + ((n, k) if tb else (k, n)), -3, 3))

    def reference(a, b):
        a = np.swapaxes(a, -1, -2) if ta else a
        b = np.swapaxes(b, -1, -2) if tb else b
        wide = F64 if dtype.kind == "f" else dtype
        return np.matmul(a.astype(wide), b.astype(wide)).astype(dtype)

    check_against_numpy(lambda a, b: tw.matmul(a, b, transpose_a=ta, transpose_b=tb),
                        reference, a, b)


def test_matmul_adjoint_is_transpose_for_real_types():
    a = np.arange(6, dtype=np.float64).reshape(3, 2)
    b = np.arange(6, dtype=np.float64).reshape(2, 3)
    np.testing.assert_array_equal(tw.matmul(a, b, adjoint_a=True, adjoint_b=True), a.T @ b.T)
    with pytest.raises(ValueError, match="only one"):
        tw.matmul(a, b, transpose_a=True, adjoint_a=True)


# ------------------------------------------------------------------------ Python operators

def _operator_exprs(x, w, i, b, c):
    return (x + 1, 1 + x, 2 * x, x * x, x - 1, 2 - x, x / 2, 1 / x, -x, +x, abs(x), x ** 2, 2 ** x,
            x // 2, x % 3, x @ w, x < 2, x <= 2, x > 2, x >= 2, i / 2, i // 3, i % 3, -i, i ** 2,
            b & c, b | c, ~b, b & True)


def test_operators_eager_and_traced_match_numpy():
    x = np.array([[1.5, -2.0], [3.0, 4.25]], np.float32)
    w = np.array([[0.5], [-1.0]], np.float32)
    i = np.array([7, -7, 0], np.int32)
    b = np.array([True, False, True])
    c = np.array([True, True, False])
    expected = list(_operator_exprs(x, w, i, b, c))
    expected[20] = i.astype(F64) / 2  # tw's int / int is float64, like TF's truediv
    eager = _operator_exprs(*(tw.constant(a) for a in (x, w, i, b, c)))
    traced = tw.compile(_operator_exprs)(x, w, i, b, c)
    for got_eager, got_traced, want in zip(eager, traced, expected):
        assert_same(np.asarray(got_eager), np.asarray(want))
        assert_same(got_traced, np.asarray(want))


def test_python_scalars_take_the_tensor_dtype():
    x = tw.constant(np.ones(2, np.float64))
    assert (x + 1).dtype is tw.float64 and (3 - x).dtype is tw.float64
    assert (x ** 2).dtype is tw.float64
    assert (tw.constant([1, 2], dtype=tw.int64) * 2).dtype is tw.int64
    with pytest.raises(tw.errors.DTypeError, match="fractional"):
        tw.constant([1, 2]) + 0.5


# ------------------------------------------------------------- unknown dims while tracing

def test_inference_with_unknown_batch_dimension():
    w = np.arange(6, dtype=np.float32).reshape(3, 2) - 2

    @tw.compile(input_signature=[tw.TensorSpec([None, 3], tw.float32)])
    def f(x):
        h = tw.relu(x @ w + 1.0)
        return (h, tw.reduce_sum(h, axis=1), tw.reduce_mean(x, axis=0, keepdims=True),
                tw.argmax(h, axis=-1), x * np.array([1, 2, 3], np.float32), tw.add_n([x, x]))

    types = {n.op: n.outputs[0].type for n in f.get_concrete_function().graph.nodes}
    assert types["MatMul"].shape == (None, 2) and types["Relu"].shape == (None, 2)
    assert types["Sum"].shape == (None,) and types["Mean"].shape == (1, 3)
    assert types["ArgMax"].shape == (None,) and types["AddN"].shape == (None, 3)
    for n in (0, 1, 4):
        x = np.linspace(-2, 2, 3 * n, dtype=np.float32).reshape(n, 3)
        h = np.maximum(x @ w + 1, 0)
        with np.errstate(invalid="ignore"):
            mean = x.sum(axis=0, keepdims=True) / n
        want = (h, h.sum(axis=1), mean, np.argmax(h, axis=-1) if n else np.zeros(0, np.int64),
                x * [1, 2, 3], x + x)
        for got, exp in zip(f(x), want):
            assert_same(got, np.asarray(exp).astype(got.dtype))
    assert f.tracing_count == 1


def test_unknown_dims_that_do_not_broadcast_fail_at_run_time():
    @tw.compile(input_signature=[tw.TensorSpec([None], tw.float32)] * 2)
    def f(x, y):
        return x + y

    np.testing.assert_array_equal(f(np.ones(3, np.float32), np.ones(1, np.float32)), [2, 2, 2])
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"broadcast.*\[2\] vs \[3\]") as err:
        f(np.ones(2, np.float32), np.ones(3, np.float32))
    assert "Add" in str(err.value) and line_of(f.python_function, "x + y") in str(err.value)


# ---------------------------------------------------------------------------------- errors

def test_add_of_mismatched_shapes_names_op_and_line():
    @tw.compile
    def f(x, y):
        return x + y

    with pytest.raises(tw.errors.ShapeError) as err:
        f(np.zeros((2, 3), np.float32), np.zeros(4, np.float32))
    msg = str(err.value)
    assert "Add" in msg and "f32[2,3]" in msg and "f32[4]" in msg
    assert line_of(f.python_function, "x + y") in msg


def test_eager_error_names_op_and_line():
    with pytest.raises(tw.errors.ShapeError) as err:
        tw.constant([1.0, 2.0]) * tw.constant([1.0, 2.0, 3.0])
    assert "Mul" in str(err.value)
    assert line_of(test_eager_error_names_op_and_line, "2.0, 3.0") in str(err.value)


def test_matmul_inner_dimension_mismatch():
    @tw.compile(input_signature=[tw.TensorSpec([None, 784], tw.float32)])
    def f(x):
        return tw.matmul(x, np.zeros((10, 10), np.float32))

    with pytest.raises(tw.errors.ShapeError, match=r"inner dimensions differ: a is f32\[\?,784\], "
                                                   r"b is f32\[10,10\]") as err:
        f.get_concrete_function()
    assert "MatMul" in str(err.value) and line_of(f.python_function, "tw.matmul") in str(err.value)


@pytest.mark.parametrize("bad", ["f32+f64", "log-int", "and-float", "where-cond", "matmul-rank",
                                 "sqrt-bool", "add_n-shape"])
def test_dtype_and_shape_errors_name_op_and_line(bad):
    f32, f64 = np.ones(3, np.float32), np.ones(3, np.float64)
    cases = {
        "f32+f64": (tw.errors.DTypeError, "Add", lambda: tw.add(f32, f64)),
        "log-int": (tw.errors.DTypeError, "Log", lambda: tw.log(np.array([1, 2], np.int32))),
        "and-float": (tw.errors.DTypeError, "LogicalAnd", lambda: tw.logical_and(f32, f32)),
        "where-cond": (tw.errors.DTypeError, "Select", lambda: tw.where(f32, f32, f32)),
        "matmul-rank": (tw.errors.ShapeError, "MatMul", lambda: tw.matmul(f32, f32)),
        "sqrt-bool": (tw.errors.DTypeError, "Sqrt", lambda: tw.sqrt(np.array([True]))),
        "add_n-shape": (tw.errors.ShapeError, "AddN", lambda: tw.add_n([f32, np.ones(2, np.float32)])),
    }
    error, op, thunk = cases[bad]
    for run in (thunk, tw.compile(thunk)):  # eagerly and while tracing
        with pytest.raises(error) as err:
            run()
        assert op in str(err.value)
        assert line_of(test_dtype_and_shape_errors_name_op_and_line, f'"{bad}": ') in str(err.value)


def test_traced_dtype_mismatch_reports_both_operands():
    @tw.compile
    def f(x, y):
        return x * y

    with pytest.raises(tw.errors.DTypeError, match=r"x is f32\[3\], y is f64\[3\]") as err:
        f(np.ones(3, np.float32), np.ones(3, np.float64))
    assert "Mul" in str(err.value) and line_of(f.python_function, "x * y") in str(err.value)


def test_integer_division_by_zero_is_an_error_not_a_crash():
    @tw.compile
    def f(x, y):
        return x // y, x % y, tw.divide(x, y)

    x, y = np.array([1, 2], np.int32), np.array([1, 0], np.int32)
    with pytest.raises(tw.errors.InvalidArgumentError, match="integer division by zero") as err:
        f(x, y)
    assert "FloorDiv" in str(err.value) and line_of(f.python_function, "x // y") in str(err.value)
    with pytest.raises(tw.errors.InvalidArgumentError, match="integer division by zero"):
        tw.floormod(x, y)
    assert np.isinf(np.asarray(tw.divide(x, y))[1])  # true division of ints is in float


def test_reductions_and_arg_reductions_over_empty_axes_fail_clearly():
    empty = np.zeros((2, 0), np.float32)
    for fn, op in ((tw.reduce_max, "Max"), (tw.reduce_min, "Min")):
        with pytest.raises(tw.errors.InvalidArgumentError, match="no elements") as err:
            fn(empty, axis=1)
        assert op in str(err.value)
    with pytest.raises(tw.errors.InvalidArgumentError, match="ArgMax.*no elements"):
        tw.argmax(empty, axis=1)
    with pytest.raises(tw.errors.InvalidArgumentError, match="Mean.*no elements"):
        tw.reduce_mean(np.zeros((2, 0), np.int32), axis=1)


def test_bad_axes_are_shape_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(tw.errors.ShapeError, match="out of range"):
        tw.reduce_sum(x, axis=2)
    with pytest.raises(tw.errors.ShapeError, match="duplicate"):
        tw.reduce_sum(x, axis=[1, -1])
    with pytest.raises(tw.errors.ShapeError, match="scalar"):
        tw.reduce_sum(np.float32(1), axis=0)
    with pytest.raises(tw.errors.ShapeError, match="rank >= 1"):
        tw.argmax(np.float32(1))
    with pytest.raises(tw.errors.DTypeError, match="output_type"):
        tw.argmax(x, output_type=tw.float32)
    with pytest.raises(TypeError, match="single int"):
        tw.argmax(x, axis=[0, 1])


def test_runtime_value_errors():
    with pytest.raises(tw.errors.InvalidArgumentError, match="negative integer powers"):
        tw.pow(np.array([2], np.int32), np.array([-1], np.int32))
    with pytest.raises(ValueError, match="both x and y, or neither"):
        tw.where(np.array([True]), np.array([1.0]))
    with pytest.raises(ValueError, match="non-empty list"):
        tw.add_n([])


def test_cast_of_python_float_keeps_float64_precision():
    assert tw.cast(0.999, tw.float64).numpy().item() == 0.999
    assert int(tw.cast(2.7, tw.int32)) == 2
