"""The functions whose GPU kernels the tests check: every kernel generator of the gpu target,
over the op families and dtypes of tests/ops (float32, float64, int32, int8, uint8, bool;
no float16: the gpu target runs those on the host), with broadcasting, leading and
trailing reductions, transposed and batched products.

`CASES` maps a case name to ``(function, arrays)``. tests/gpu/test_ptx.py compiles each
case's kernels to PTX and links them; tests/gpu/sim/test_cases.py runs each case in the
simulator against the reference target. Shapes are tiny: the simulator runs one Python
thread per GPU thread.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

import tensorweave as tw
from tensorweave.frontend.building import apply_op1

F32, F64, I32, I64, I8, U8, BOOL = (np.dtype(t) for t in (np.float32, np.float64, np.int32,
                                                         np.int64, np.int8, np.uint8, np.bool_))


def _values(dtype, shape, seed, lo=-4.0, hi=4.0, nonzero=False):
    rng = np.random.default_rng(seed)
    if dtype == BOOL:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else lo
        a = rng.integers(int(lo), int(hi) + 1, size=shape)
        if nonzero:
            a[a == 0] = 1
        return a.astype(dtype)
    a = rng.uniform(lo, hi, size=shape)
    if nonzero:
        a = np.where(np.abs(a) < 0.25, 0.5, a)
    return a.astype(dtype)


UNARY: dict[str, tuple[Callable, list[np.dtype], tuple[float, float]]] = {
    "negative": (tw.negative, [F32, F64, I32, I8], (-4, 4)),
    "abs": (tw.abs, [F32, F64, I32], (-4, 4)),
    "square": (tw.square, [F32, F64, I32], (-4, 4)),
    "sign": (tw.sign, [F32, F64, I32], (-4, 4)),
    "relu": (tw.relu, [F32, F64, I32, U8], (-4, 4)),
    "exp": (tw.exp, [F32, F64], (-4, 4)),
    "log": (tw.log, [F32, F64], (0.0625, 64)),
    "log1p": (tw.log1p, [F32, F64], (-0.875, 64)),
    "sqrt": (tw.sqrt, [F32, F64], (0, 64)),
    "rsqrt": (tw.rsqrt, [F32, F64], (0.0625, 64)),
    "sin": (tw.sin, [F32, F64], (-4, 4)),
    "cos": (tw.cos, [F32, F64], (-4, 4)),
    "tanh": (tw.tanh, [F32, F64], (-4, 4)),
    "sigmoid": (tw.sigmoid, [F32, F64], (-16, 16)),
    "floor": (tw.floor, [F32, F64], (-4, 4)),
    "ceil": (tw.ceil, [F32, F64], (-4, 4)),
    "reciprocal": (tw.reciprocal, [F32, F64], (0.125, 8)),
    "logical_not": (tw.logical_not, [BOOL], (0, 1)),
}

BINARY: dict[str, tuple[Callable, list[np.dtype], bool]] = {  # (fn, dtypes, nonzero y)
    "add": (tw.add, [F32, F64, I32, I8, U8], False),
    "subtract": (tw.subtract, [F32, F64, I32], False),
    "multiply": (tw.multiply, [F32, F64, I32, I8], False),
    "div": (lambda x, y: apply_op1("Div", [x, y]), [F32, F64, I32], True),
    "floordiv": (tw.floordiv, [F32, F64, I32, I64], True),
    "floormod": (tw.floormod, [F32, F64, I32], True),
    "pow": (tw.pow, [F32, F64, I32], False),
    "maximum": (tw.maximum, [F32, F64, I32], False),
    "minimum": (tw.minimum, [F32, F64, I32], False),
    "squared_difference": (tw.squared_difference, [F32, F64, I32], False),
    "equal": (tw.equal, [F32, I32, BOOL], False),
    "not_equal": (tw.not_equal, [F32, I32], False),
    "less": (tw.less, [F32, I32], False),
    "less_equal": (tw.less_equal, [F64, I32], False),
    "greater": (tw.greater, [F32, U8], False),
    "greater_equal": (tw.greater_equal, [F32, I32], False),
    "logical_and": (tw.logical_and, [BOOL], False),
    "logical_or": (tw.logical_or, [BOOL], False),
}

BITWISE_DTYPES = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8)]


def bitwise_chain(a, b):
    """Every bitwise op in one cluster: the shifts feeding the others and arithmetic."""
    return ((a << b) ^ (a >> b)) + (~a & b) - (a | b)


BITWISE_OPS = {  # (x, y) -> result; invert ignores y
    "and": lambda x, y: x & y,
    "or": lambda x, y: x | y,
    "xor": lambda x, y: x ^ y,
    "invert": lambda x, y: tw.bitwise.invert(x),
    "left_shift": lambda x, y: x << y,
    "right_shift": lambda x, y: x >> y,
}


def bitwise_edge_pairs(dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of edge values and shift amounts: negative ones, 0, bits - 1, bits,
    beyond, and the dtype's extremes."""
    info, bits = np.iinfo(dtype), dtype.itemsize * 8
    xs = [info.min, info.min + 1, -77, -1, 0, 1, 77, info.max]
    ys = [info.min, -3, -1, 0, 1, bits - 1, bits, bits + 1, info.max]
    pairs = itertools.product([v for v in xs if info.min <= v <= info.max],
                              [v for v in ys if info.min <= v <= info.max])
    x, y = zip(*pairs)
    return np.array(x, dtype), np.array(y, dtype)


REDUCE = {"sum": tw.reduce_sum, "mean": tw.reduce_mean, "max": tw.reduce_max,
          "min": tw.reduce_min, "prod": tw.reduce_prod}


def _cases() -> dict[str, tuple[Callable, list[np.ndarray]]]:
    out: dict[str, tuple[Callable, list[np.ndarray]]] = {}
    for name, (fn, dtypes, (lo, hi)) in UNARY.items():
        for dt in dtypes:
            out[f"{name}_{dt.name}"] = (fn, [_values(dt, (2, 3), 1, lo, hi)])
    for name, (fn, dtypes, nonzero) in BINARY.items():
        for dt in dtypes:
            lo, hi = (0, 3) if name == "pow" else (-4, 4)
            y = _values(dt, (3,), 2, lo, hi, nonzero)  # broadcast along the rows
            out[f"{name}_{dt.name}"] = (fn, [_values(dt, (2, 3), 1, -4, 4), y])
    for dt in BITWISE_DTYPES:
        out[f"bitwise_chain_{dt.name}"] = (bitwise_chain, list(bitwise_edge_pairs(dt)))
    out["cast_f32_i32"] = (lambda x: tw.cast(x, tw.int32), [_values(F32, (2, 3), 1)])
    # NaN, out of range and wrapping values: the reference's answers, not PTX's
    # saturating ones (sim/test_review_gpu_float_to_int_cast.py)
    edges = np.array([np.nan, -1.0, 300.7, -3e9, 3e9, 70000.0], F32)
    out["cast_f32_u8"] = (lambda x: tw.cast(x, tw.uint8), [edges])
    out["cast_f64_i64"] = (lambda x: tw.cast(x, tw.int64), [edges.astype(F64) * 4e9])
    out["cast_i32_f64"] = (lambda x: tw.cast(x, tw.float64), [_values(I32, (2, 3), 1)])
    out["cast_f32_bool"] = (lambda x: tw.cast(tw.floor(x), tw.bool), [_values(F32, (2, 3), 1)])
    out["cast_bool_f32"] = (lambda x: tw.cast(x, tw.float32), [_values(BOOL, (2, 3), 1)])
    out["cast_f64_f32"] = (lambda x: tw.cast(x, tw.float32), [_values(F64, (2, 3), 1)])
    out["where_f32"] = (tw.where, [_values(BOOL, (2, 1), 3), _values(F32, (2, 3), 1),
                                   _values(F32, (3,), 2)])
    out["add_n_f32"] = (lambda a, b, c: tw.add_n([a, b, c]),
                        [_values(F32, (2, 3), k) for k in range(3)])
    out["gelu_chain_f32"] = (lambda x: 0.5 * x * (1.0 + tw.tanh(0.79788456 * (x + 0.044715 * x * x * x))),
                             [_values(F32, (4, 5), 1)])
    for name, fn in REDUCE.items():
        for dt in (F32, F64, I32):
            x = _values(dt, (3, 4), 4, -2, 2)
            out[f"reduce_{name}_last_{dt.name}"] = (lambda x, fn=fn: fn(x, axis=-1), [x])
            out[f"reduce_{name}_first_{dt.name}"] = (lambda x, fn=fn: fn(x, axis=0), [x])
    for name in ("sum", "max", "mean"):  # few outputs, long reductions: a block each
        for dt in (F32, I32):
            out[f"reduce_{name}_long_first_{dt.name}"] = (
                lambda x, fn=REDUCE[name]: fn(x, axis=0), [_values(dt, (70, 3), 30, -3, 3)])
    out["bias_add_grad_long_f64"] = (lambda g: apply_op1("BiasAddGrad", [g]),
                                     [_values(F64, (4, 20, 3), 31)])
    out["l2_loss_long_f32"] = (tw.nn.l2_loss, [_values(F32, (9, 10), 32)])
    out["reduce_sum_all_f32"] = (lambda x: tw.reduce_sum(x), [_values(F32, (3, 4), 4)])
    out["reduce_mean_keepdims_f32"] = (lambda x: tw.reduce_mean(x, axis=[1, 2], keepdims=True),
                                       [_values(F32, (2, 3, 4), 4)])
    out["reduce_max_middle_f32"] = (lambda x: tw.reduce_max(x, axis=1),
                                    [_values(F32, (2, 3, 4), 4)])
    out["reduce_all_last_bool"] = (lambda x: tw.reduce_all(x, axis=-1), [_values(BOOL, (3, 4), 5)])
    out["reduce_any_first_bool"] = (lambda x: tw.reduce_any(x, axis=0), [_values(BOOL, (3, 4), 5)])
    for dt in (F32, F64):
        out[f"l2_loss_{dt.name}"] = (tw.nn.l2_loss, [_values(dt, (3, 4), 4)])
    out["bias_add_grad_f32"] = (lambda g: apply_op1("BiasAddGrad", [g]), [_values(F32, (2, 3, 4), 4)])
    out["reduce_to_like_f64"] = (lambda g, like: apply_op1("ReduceToLike", [g, like]),
                                 [_values(F64, (2, 3, 4), 4), _values(F64, (3, 1), 5)])
    out["softmax_pattern_f32"] = (  # a fused reduction feeding fused elementwise ops
        lambda x: tw.exp(x - tw.reduce_max(x, axis=-1, keepdims=True)), [_values(F32, (3, 5), 6)])
    for dt in (F32, I32):
        out[f"argmax_{dt.name}"] = (lambda x: tw.argmax(x, axis=1), [_values(dt, (3, 4), 7)])
        out[f"argmin_{dt.name}"] = (lambda x: tw.argmin(x, axis=0), [_values(dt, (3, 4), 7)])
    for dt in (F32, F64, I32):
        out[f"matmul_{dt.name}"] = (tw.matmul, [_values(dt, (5, 7), 8, -2, 2),
                                                _values(dt, (7, 3), 9, -2, 2)])
    out["matmul_ta_f32"] = (lambda a, b: tw.matmul(a, b, transpose_a=True),
                            [_values(F32, (7, 5), 8), _values(F32, (7, 3), 9)])
    out["matmul_tb_f32"] = (lambda a, b: tw.matmul(a, b, transpose_b=True),
                            [_values(F32, (5, 7), 8), _values(F32, (3, 7), 9)])
    out["matmul_tiles_f32"] = (tw.matmul, [_values(F32, (18, 20), 8), _values(F32, (20, 17), 9)])
    out["matmul_batched_f32"] = (tw.matmul, [_values(F32, (2, 3, 4), 8),
                                             _values(F32, (2, 4, 5), 9)])
    out["matmul_broadcast_batch_f32"] = (tw.matmul, [_values(F32, (2, 1, 3, 4), 8),
                                                     _values(F32, (3, 4, 5), 9)])
    out["matmul_batch_times_matrix_f64"] = (
        lambda a, b: tw.matmul(a, b, transpose_b=True),
        [_values(F64, (2, 3, 4), 8), _values(F64, (5, 4), 9)])
    # products with an epilogue (stage ``epilogue``: FusedMatMul, one kernel): a bias, a
    # scalar, a residual of the product's shape; batched and transposed; float64
    out["matmul_epilogue_f32"] = (
        lambda a, b, c, r: tw.nn.relu(tw.matmul(a, b) + c) * 0.5 + r,
        [_values(F32, (18, 7), 8), _values(F32, (7, 17), 9), _values(F32, (17,), 10),
         _values(F32, (18, 17), 11)])
    out["matmul_epilogue_batched_ta_f64"] = (
        lambda a, b, c: tw.tanh(tw.matmul(a, b, transpose_a=True) + c),
        [_values(F64, (2, 4, 3), 8, -1, 1), _values(F64, (2, 4, 5), 9, -1, 1),
         _values(F64, (5,), 10)])
    for dt in (F32, F64):
        logits = _values(dt, (3, 5), 10)
        out[f"softmax_{dt.name}"] = (tw.nn.softmax, [logits])
        out[f"log_softmax_{dt.name}"] = (tw.nn.log_softmax, [logits])
        probs = np.random.default_rng(11).dirichlet(np.ones(5), size=3).astype(dt)
        out[f"softmax_xent_{dt.name}"] = (
            lambda lo, la: tw.nn.softmax_cross_entropy_with_logits(labels=la, logits=lo),
            [logits, probs])
        out[f"sparse_xent_{dt.name}"] = (
            lambda lo, la: tw.nn.sparse_softmax_cross_entropy_with_logits(labels=la, logits=lo),
            [logits, np.array([0, 4, 2], np.int64)])
    out["softmax_axis1_f32"] = (lambda x: tw.nn.softmax(x, axis=1), [_values(F32, (2, 5, 3), 10)])
    out["log_softmax_axis0_f64"] = (lambda x: tw.nn.log_softmax(x, axis=0),
                                    [_values(F64, (4, 3), 10)])
    out["transpose_2d_f32"] = (tw.transpose, [_values(F32, (3, 4), 12)])
    out["transpose_3d_i32"] = (lambda x: tw.transpose(x, [2, 0, 1]), [_values(I32, (2, 3, 4), 12)])
    out["gather_axis0_f32"] = (lambda p, i: tw.gather(p, i),
                               [_values(F32, (5, 3), 13), np.array([4, 0, 2, 2], np.int32)])
    out["gather_axis1_i32"] = (lambda p, i: tw.gather(p, i, axis=1),
                               [_values(I32, (2, 5, 3), 13), np.array([[1, 4], [0, 0]], np.int64)])
    out["concat_axis1_f32"] = (lambda a, b: tw.concat([a, b], axis=1),
                               [_values(F32, (2, 3), 14), _values(F32, (2, 2), 15)])
    out["concat_axis0_i32"] = (lambda a, b, c: tw.concat([a, b, c], axis=0),
                               [_values(I32, (1, 3), 14), _values(I32, (2, 3), 15),
                                _values(I32, (1, 3), 16)])
    out["stack_axis1_f64"] = (lambda a, b: tw.stack([a, b], axis=1),
                              [_values(F64, (2, 3), 14), _values(F64, (2, 3), 15)])
    out["slice_f32"] = (lambda x: tw.slice(x, [1, 0, 2], [2, 3, 2]), [_values(F32, (3, 3, 4), 17)])
    out["tile_i32"] = (lambda x: tw.tile(x, [2, 1, 3]), [_values(I32, (2, 1, 2), 18)])
    out["broadcast_to_f32"] = (lambda x: tw.broadcast_to(x, [2, 3, 4]), [_values(F32, (3, 1), 19)])
    out["pad_f32"] = (lambda x: tw.pad(x, [[1, 0], [2, 1]], constant_values=1.5),
                      [_values(F32, (2, 3), 20)])
    out["one_hot_f32"] = (lambda i: tw.one_hot(i, 4), [np.array([0, 3, 1, 9], np.int64)])
    out["one_hot_axis0_i32"] = (lambda i: tw.one_hot(i, 3, axis=0, dtype=tw.int32),
                                [np.array([[2, 0], [1, -1]], np.int32)])
    out["split_f32"] = (lambda x: tw.split(x, [1, 3], axis=1), [_values(F32, (2, 4), 22)])
    out["unstack_i32"] = (lambda x: tw.unstack(x, axis=0), [_values(I32, (3, 2), 22)])
    for dt in (F32, I64):
        out[f"segment_sum_{dt.name}"] = (
            lambda d, i: tw.unsorted_segment_sum(d, i, 4),
            [_values(dt, (5, 3), 23), np.array([3, 0, 3, -1, 1], np.int32)])
    out["gather_grad_f32"] = (  # Gather's gradient is an UnsortedSegmentSum
        lambda p, i: tw.gradients(tw.reduce_sum(tw.gather(p, i) * 3.0), [p])[0],
        [_values(F32, (4, 2), 24), np.array([1, 1, 3], np.int32)])
    x, k = _values(F32, (2, 5, 6, 3), 25, -1, 1), _values(F32, (3, 2, 3, 4), 26, -1, 1)
    out["conv2d_same_f32"] = (lambda x, k: tw.nn.conv2d(x, k, 1, "SAME"), [x, k])
    out["conv2d_valid_strided_f64"] = (
        lambda x, k: tw.nn.conv2d(x, k, 2, "VALID"),
        [x.astype(F64), k.astype(F64)])
    out["conv2d_explicit_padding_f32"] = (
        lambda x, k: tw.nn.conv2d(x, k, [1, 2], [[0, 0], [1, 2], [0, 1], [0, 0]]), [x, k])
    out["conv2d_dilated_f32"] = (lambda x, k: tw.nn.conv2d(x, k, 1, "SAME", dilations=2), [x, k])
    out["conv2d_grads_f32"] = (
        lambda x, k: tuple(tw.gradients(tw.reduce_sum(tw.square(tw.nn.conv2d(x, k, 2, "SAME"))),
                                        [x, k])), [x, k])
    out["conv2d_epilogue_f32"] = (  # FusedConv2D with two outputs, one of them bool
        lambda x, k, c: (lambda h: (tw.nn.relu(h), h > 0.0))(
            tw.nn.bias_add(tw.nn.conv2d(x, k, 1, "SAME"), c)),
        [x, k, _values(F32, (4,), 29, -1, 1)])
    out["max_pool_f32"] = (lambda x: tw.nn.max_pool2d(x, 2, 2, "SAME"), [x])
    out["max_pool_i32"] = (lambda x: tw.nn.max_pool2d(x, 3, 1, "VALID"),
                           [_values(I32, (1, 4, 4, 2), 27)])
    out["avg_pool_f64"] = (lambda x: tw.nn.avg_pool2d(x, 3, 2, "SAME"), [x.astype(F64)])
    out["pool_grads_f32"] = (
        lambda x: tw.gradients(tw.reduce_sum(tw.nn.max_pool2d(x, 2, 1, "SAME") * 2.0)
                               + tw.reduce_sum(tw.nn.avg_pool2d(x, 3, 2, "SAME")), [x])[0],
        [x])
    y = _values(F32, (3, 4, 5), 28)
    out["strided_slice_f32"] = (lambda x: x[1:, ::-2, 3], [y])
    out["strided_slice_i32"] = (lambda x: x[..., None, :2], [y.astype(I32)])
    out["strided_slice_grad_f32"] = (
        lambda x: tw.gradients(tw.reduce_sum(tw.square(x[:, 1::2, ::-1])), [x])[0], [y])
    out["pad_reflect_f64"] = (lambda x: tw.pad(x, [[1, 1], [2, 0]], mode="REFLECT"),
                              [_values(F64, (3, 4), 29)])
    out["pad_constant_grad_f32"] = (  # a Slice
        lambda x: tw.gradients(tw.reduce_sum(tw.pad(x, [[1, 0], [0, 2]]) * 3.0), [x])[0],
        [_values(F32, (3, 4), 29)])
    p3 = _values(F32, (2, 3, 4), 31)
    out["gather_nd_batch_dims_f32"] = (
        lambda p, i: tw.gather_nd(p, i, batch_dims=1),
        [p3, np.array([[[2], [0]], [[1], [1]]], np.int32)])
    out["gather_nd_depth2_f64"] = (
        lambda p, i: tw.gather_nd(p, i),
        [p3.astype(F64), np.array([[1, 2], [0, 0], [1, 1]], np.int64)])
    out["pad_reflect_grad_f32"] = (
        lambda x: tw.gradients(tw.reduce_sum(tw.square(tw.pad(x, [[1, 2], [2, 1]],
                                                               mode="REFLECT"))), [x])[0],
        [_values(F32, (3, 4), 32)])
    out["pad_symmetric_grad_f64"] = (
        lambda x: tw.gradients(tw.reduce_sum(tw.square(tw.pad(x, [[2, 0], [1, 3]],
                                                               mode="SYMMETRIC"))), [x])[0],
        [_values(F64, (3, 4), 33)])
    # a scan and its gradient: device loops, stacks, DynamicUpdateRow (copy and in place)
    out["scan_grad_f64"] = (scan_grad, [_values(F64, (3, 2, 4), 34, -1, 1),
                                        _values(F64, (4, 4), 35, -1, 1)])
    # a loop whose trip count is known only at run time: its cond's kernels too
    out["newton_sqrt_f64"] = (newton_sqrt, [_values(F64, (3,), 36, 0.5, 4.0)])
    out.update(_random_cases())
    return out


def scan_grad(x, w):
    """``a_t = tanh(a_{t-1} @ w + x_t)`` over x's rows (the first row is a_0), and the
    gradients of the sum of squares of every a_t with respect to x and w."""
    ys = tw.scan(lambda a, xt: tw.tanh(tw.matmul(a, w) + xt), x)
    gx, gw = tw.gradients(tw.reduce_sum(ys * ys), [x, w])
    return ys, gx, gw


def newton_sqrt(a):
    """sqrt(a) by Newton's method until every |x*x - a| <= 1e-12, and the iterations."""
    return tw.while_loop(lambda i, x: tw.reduce_max(tw.abs(x * x - a)) > 1e-12,
                         lambda i, x: [i + 1, 0.5 * (x + a / x)],
                         [tw.constant(0), tw.ones_like(a)])


def stateful_draws(fdt, idt, lo: int, hi: int, seed2: int = 9) -> Callable[[], tuple]:
    """A function drawing from each stateful random op with fixed seeds: uniform, normal
    and truncated normal floats of `fdt`, integers of `idt` in [lo, hi)."""
    def f():
        return (apply_op1("RandomUniform", [], {"shape": (3, 5), "dtype": fdt, "seed": 11,
                                                "seed2": -4}),
                apply_op1("RandomNormal", [], {"shape": (7,), "dtype": fdt, "seed": 2**40,
                                               "seed2": 3}),
                apply_op1("TruncatedNormal", [], {"shape": (2, 3), "dtype": fdt, "seed": 5,
                                                  "seed2": seed2}),
                apply_op1("RandomUniformInt", [], {"shape": (5,), "dtype": idt,
                                                   "minval": lo, "maxval": hi, "seed": 1,
                                                   "seed2": 2}))
    return f


def _random_cases() -> dict[str, tuple[Callable, list[np.ndarray]]]:
    """Every random kernel kind: stateful ops (their call index array) and stateless ones
    (an int32 or int64 seed tensor), in 32- and 64-bit types, odd sizes (a partial last
    Philox block), integer ranges up to int64's full one."""
    def stateless(fdt, idt):
        def f(seed):
            draws = [apply_op1(op, [seed], {"shape": (5,), "dtype": fdt}) for op in
                     ("StatelessRandomUniform", "StatelessRandomNormal",
                      "StatelessTruncatedNormal")]
            return (*draws,
                    apply_op1("StatelessRandomUniformInt", [seed],
                              {"shape": (3,), "dtype": idt, "minval": -7, "maxval": 90}),
                    apply_op1("StatelessRandomUniformFullInt", [seed],
                              {"shape": (3,), "dtype": idt}))
        return f

    like = _values(F32, (2, 3), 30)
    return {
        "random_stateful_f32": (stateful_draws(tw.float32, tw.int8, -128, 128), []),
        "random_stateful_f64": (stateful_draws(tw.float64, tw.int64, -2**63, 2**63 - 1), []),
        "random_uniform_like_f32": (
            lambda x: apply_op1("RandomUniformLike", [x], {"seed": 3, "seed2": 4}), [like]),
        "random_stateless_f32": (stateless(tw.float32, tw.int32),
                                 [np.array([-3, 17], np.int32)]),
        "random_stateless_f64": (stateless(tw.float64, tw.int64),
                                 [np.array([2**40 + 1, -2**62], np.int64)]),
    }


CASES = _cases()


def _variable_cases() -> dict[str, tuple[Callable, list[np.ndarray]]]:
    """Sparse reads and updates of variables (ResourceGather, ResourceScatter*), on
    variables of their own: the PTX check plans them; running them changes the variables,
    so tests/gpu/sim/test_sparse_variables.py checks their numerics instead."""
    from tensorweave.frontend.ops.scatter import (
        deduplicate,
        gather_rows,
        scatter_add,
        scatter_sub,
        scatter_update,
    )
    out: dict[str, tuple[Callable, list[np.ndarray]]] = {}
    kinds = {"add": scatter_add, "sub": scatter_sub, "update": scatter_update}
    # representative dtypes: float32/64, a wrapping integer, a copy of bools
    for kind, dtypes in (("add", [F32, F64, I8]), ("sub", [F32, I64]),
                         ("update", [F32, BOOL])):
        for dt in dtypes:
            # int64 indices once per op (each kernel takes its index dtype)
            for idt in ((I32, I64) if dt == F32 else (I32,)):
                v = tw.Variable(_values(dt, (5, 2, 3), 40))

                def f(i, u, v=v, op=kinds[kind]):
                    op(v, i, u)
                    return gather_rows(v, i)
                out[f"scatter_{kind}_{dt.name}_{idt.name}"] = (
                    f, [np.array([[4, 0], [4, 2]], idt), _values(dt, (2, 2, 2, 3), 41)])
    # DeduplicateSlices padded to its number of indices, and the counted gather/scatters
    for dt, idt in ((F32, I32), (F64, I64)):
        v, w = tw.Variable(_values(dt, (5, 3), 42)), tw.Variable(_values(dt, (5, 3), 43))

        def f(i, u, v=v, w=w):
            summed, rows = deduplicate(u, i)
            scatter_update(v, rows, summed + gather_rows(w, rows))
            scatter_sub(w, rows, summed)
            return v.read_value()
        out[f"deduplicate_{dt.name}_{idt.name}"] = (
            f, [np.array([4, 0, 4, 2], idt), _values(dt, (4, 3), 44)])
    # more indices than one chunk of the sort (targets/gpu/sort.py): its merge kernel,
    # counted after DeduplicateSlices, and the first-occurrence prefix sums (one case:
    # 14 kernels, each checked for two architectures)
    v, w = tw.Variable(_values(F32, (5, 3), 45)), tw.Variable(_values(F32, (5, 3), 46))

    def many(i, u, v=v, w=w):
        scatter_add(v, i, u)
        summed, rows = deduplicate(u, i)
        scatter_sub(w, rows, summed)
        return w.read_value()
    out["sort_many_int64"] = (many, [np.arange(300, dtype=np.int64) * 7 % 5,
                                     _values(F32, (300, 3), 47)])
    return out


VARIABLE_CASES = _variable_cases()


def tolerance(dtype: np.dtype) -> dict:
    """How close a GPU result must be to the reference: float32 kernels use the device's
    libm (CUDA's expf, tanhf ...: within 2 ulp) and float32 accumulation in MatMul."""
    if dtype == F32:
        return {"rtol": 2e-5, "atol": 2e-6}
    if dtype == F64:
        return {"rtol": 1e-12, "atol": 1e-12}
    return {"rtol": 0, "atol": 0}
