"""Cases for the differential comparison of tensorweave with TensorFlow 2.21.

Each case is a function ``fn(m, *args, **params)`` written once against the API both
libraries share (``m`` is ``tensorflow`` or ``tensorweave``), and a maker that draws its
arguments (NumPy arrays) and static parameters (JSON values) for a *variant*: a kind of
values (``normal``, ``ties``: small integers and halves, ``edge``: normal values with
0, -0.0, +-inf, NaN, +-1 and huge/tiny values mixed in) and a dtype.

This module imports neither library (the comparison takes tensorweave as an argument),
so the recorder (``tools/tf_differential.py record``, run with TensorFlow's Python) and
the comparison (``tools/tf_differential.py compare`` and
``tests/test_review_tf_differential.py``, run with tensorweave's) share it.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

F64, F32 = "float64", "float32"
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -2.0, 1e-300, -1e300])


@dataclass(frozen=True)
class Case:
    """One function of both libraries, its argument maker, and which arguments (by
    position) are differentiated in float64 variants."""
    name: str
    fn: Callable[..., Any]
    make: Callable[[np.random.Generator, str, str], tuple[list[np.ndarray], dict]]
    grad: tuple[int, ...] = ()
    variants: tuple[tuple[str, str], ...] = ()
    reps: int = 2
    grad_dtypes: tuple[str, ...] = (F64,)
    eager: bool = True      # False: tw.compat.v1 functions, which build into the default graph


CASES: dict[str, Case] = {}

FLOAT_VARIANTS = (("normal", F64), ("ties", F64), ("edge", F64), ("normal", F32), ("edge", F32))
SMOOTH_VARIANTS = (("normal", F64), ("edge", F64), ("normal", F32))
PLAIN = (("normal", F64), ("normal", F32))
GRAD_ONLY = (("normal", F64),)


def add(name: str, fn: Callable, make: Callable, grad: tuple[int, ...] = (),
        variants: tuple = FLOAT_VARIANTS, reps: int = 2, grad_dtypes: tuple[str, ...] = (F64,)) -> None:
    """Register a case (names are unique). `grad_dtypes`: the variants' dtypes whose
    gradients are compared (float32 only where TensorFlow has no float64 kernel). Cases of
    ``tw.compat.v1`` functions (TF1's graph-building API here, docs/api.md "Namespaces")
    are not run eagerly."""
    assert name not in CASES, name
    eager = name.split(".")[0] != "losses" and "fused_batch_norm" not in name
    CASES[name] = Case(name, fn, make, grad, variants, reps, grad_dtypes, eager)


# ---------------------------------------------------------------- value makers

def shape(rng, rank: int, lo: int = 1, hi: int = 4, empty: float = 0.0) -> list[int]:
    """A random shape; each dim is 0 with probability `empty`."""
    return [0 if rng.random() < empty else int(rng.integers(lo, hi + 1)) for _ in range(rank)]


def floats(rng, shp, dt: str, kind: str, domain: str = "real") -> np.ndarray:
    """Values of `kind` within `domain` ('real', 'pos', 'unit' (-1, 1), 'prob' (0, 1),
    'gt-1' (> -1), 'relu6' around [0, 6])."""
    shp = tuple(shp)
    if kind == "ties":
        x = rng.integers(-4, 5, shp) / 2.0
        if domain == "pos":
            x = np.abs(x) + 0.5
        elif domain in ("unit", "prob"):
            x = rng.choice([-0.5, 0.0, 0.5] if domain == "unit" else [0.25, 0.5, 0.75], shp)
        elif domain == "gt-1":
            x = np.abs(x)
        elif domain == "relu6":
            x = rng.integers(-2, 9, shp).astype(float)
    else:
        if domain == "pos":
            x = rng.uniform(0.2, 3.0, shp)
        elif domain == "unit":
            x = rng.uniform(-0.95, 0.95, shp)
        elif domain == "prob":
            x = rng.uniform(0.02, 0.98, shp)
        elif domain == "gt-1":
            x = rng.uniform(-0.9, 3.0, shp)
        elif domain == "relu6":
            x = rng.uniform(-2.0, 8.0, shp)
        else:
            x = rng.normal(size=shp) * 1.5
        if kind == "edge":
            mask = rng.random(shp) < 0.4
            x = np.where(mask, rng.choice(SPECIAL, shp), x)
    return np.asarray(x, dtype=dt)


def ints(rng, shp, lo: int, hi: int, dt: str = "int32") -> np.ndarray:
    """Integers in [lo, hi)."""
    return np.asarray(rng.integers(lo, hi, tuple(shp)), dtype=dt)


def broadcast_pair(rng, rank: int | None = None, empty: float = 0.0):
    """Two shapes that broadcast together (dims of 1, missing leading dims)."""
    rank = int(rng.integers(0, 4)) if rank is None else rank
    full = shape(rng, rank, 1, 3, empty)
    a, b = list(full), list(full)
    for i in range(rank):
        r = rng.random()
        if r < 0.25:
            a[i] = 1
        elif r < 0.5:
            b[i] = 1
    if rank and rng.random() < 0.3:
        b = b[int(rng.integers(0, rank + 1)):]
    return a, b


# ---------------------------------------------------------------- elementwise

def _unary(domain: str = "real", empty: float = 0.15):
    def make(rng, kind, dt):
        return [floats(rng, shape(rng, int(rng.integers(0, 4)), 1, 4, empty), dt, kind, domain)], {}
    return make


UNARY = {
    "abs": (lambda m, x: m.math.abs(x), "real"),
    "negative": (lambda m, x: m.math.negative(x), "real"),
    "sign": (lambda m, x: m.math.sign(x), "real"),
    "square": (lambda m, x: m.math.square(x), "real"),
    "sqrt": (lambda m, x: m.math.sqrt(x), "pos"),
    "rsqrt": (lambda m, x: m.math.rsqrt(x), "pos"),
    "reciprocal": (lambda m, x: m.math.reciprocal(x), "real"),
    "exp": (lambda m, x: m.math.exp(x), "real"),
    "expm1": (lambda m, x: m.math.expm1(x), "real"),
    "log": (lambda m, x: m.math.log(x), "pos"),
    "log1p": (lambda m, x: m.math.log1p(x), "gt-1"),
    "sin": (lambda m, x: m.math.sin(x), "real"),
    "cos": (lambda m, x: m.math.cos(x), "real"),
    "tan": (lambda m, x: m.math.tan(x), "real"),
    "asin": (lambda m, x: m.math.asin(x), "unit"),
    "acos": (lambda m, x: m.math.acos(x), "unit"),
    "atan": (lambda m, x: m.math.atan(x), "real"),
    "sinh": (lambda m, x: m.math.sinh(x), "real"),
    "cosh": (lambda m, x: m.math.cosh(x), "real"),
    "tanh": (lambda m, x: m.math.tanh(x), "real"),
    "sigmoid": (lambda m, x: m.math.sigmoid(x), "real"),
    "softplus": (lambda m, x: m.math.softplus(x), "real"),
    "softsign": (lambda m, x: m.math.softsign(x), "real"),
    "log_sigmoid": (lambda m, x: m.math.log_sigmoid(x), "real"),
    "relu": (lambda m, x: m.nn.relu(x), "real"),
    "relu6": (lambda m, x: m.nn.relu6(x), "relu6"),
    "elu": (lambda m, x: m.nn.elu(x), "real"),
    "selu": (lambda m, x: m.nn.selu(x), "real"),
    "leaky_relu": (lambda m, x: m.nn.leaky_relu(x, alpha=0.3), "real"),
    "gelu": (lambda m, x: m.nn.gelu(x, approximate=False), "real"),
    "gelu_tanh": (lambda m, x: m.nn.gelu(x, approximate=True), "real"),
    "silu": (lambda m, x: m.nn.silu(x), "real"),
    "erf": (lambda m, x: m.math.erf(x), "real"),
    "erfc": (lambda m, x: m.math.erfc(x), "real"),
    "erfinv": (lambda m, x: m.math.erfinv(x), "unit"),
    "ndtri": (lambda m, x: m.math.ndtri(x), "prob"),
    "lgamma": (lambda m, x: m.math.lgamma(x), "real"),
    "digamma": (lambda m, x: m.math.digamma(x), "real"),
    "bessel_i0e": (lambda m, x: m.math.bessel_i0e(x), "real"),
    "bessel_i1e": (lambda m, x: m.math.bessel_i1e(x), "real"),
    "floor": (lambda m, x: m.math.floor(x), "real"),
    "ceil": (lambda m, x: m.math.ceil(x), "real"),
    "round": (lambda m, x: m.math.round(x), "real"),
    "is_nan": (lambda m, x: m.math.is_nan(x), "real"),
    "is_inf": (lambda m, x: m.math.is_inf(x), "real"),
    "is_finite": (lambda m, x: m.math.is_finite(x), "real"),
}
for _name, (_fn, _domain) in UNARY.items():
    add(f"unary.{_name}", _fn, _unary(_domain), grad=(0,))


def _lbeta_make(rng, kind, dt):
    return [floats(rng, shape(rng, int(rng.integers(1, 3)), 0, 3), dt, kind, "pos")], {}


add("lbeta", lambda m, x: m.math.lbeta(x), _lbeta_make, grad=(0,))


def _binary(dom_a="real", dom_b="real"):
    def make(rng, kind, dt):
        sa, sb = broadcast_pair(rng, empty=0.1)
        return [floats(rng, sa, dt, kind, dom_a), floats(rng, sb, dt, kind, dom_b)], {}
    return make


BINARY = {
    "add": (lambda m, x, y: m.math.add(x, y), "real", "real"),
    "subtract": (lambda m, x, y: m.math.subtract(x, y), "real", "real"),
    "multiply": (lambda m, x, y: m.math.multiply(x, y), "real", "real"),
    "divide": (lambda m, x, y: m.math.divide(x, y), "real", "real"),
    "truediv": (lambda m, x, y: m.math.truediv(x, y), "real", "pos"),
    "maximum": (lambda m, x, y: m.math.maximum(x, y), "real", "real"),
    "minimum": (lambda m, x, y: m.math.minimum(x, y), "real", "real"),
    "pow": (lambda m, x, y: m.math.pow(x, y), "pos", "real"),
    "pow_any": (lambda m, x, y: m.math.pow(x, y), "real", "real"),
    "atan2": (lambda m, x, y: m.math.atan2(x, y), "real", "real"),
    "squared_difference": (lambda m, x, y: m.math.squared_difference(x, y), "real", "real"),
    "floordiv": (lambda m, x, y: m.math.floordiv(x, y), "real", "real"),
    "floormod": (lambda m, x, y: m.math.floormod(x, y), "real", "real"),
    "mod": (lambda m, x, y: m.math.mod(x, y), "real", "real"),
    "xlogy": (lambda m, x, y: m.math.xlogy(x, y), "real", "pos"),
    "xlog1py": (lambda m, x, y: m.math.xlog1py(x, y), "real", "gt-1"),
    "xdivy": (lambda m, x, y: m.math.xdivy(x, y), "real", "real"),
    "equal": (lambda m, x, y: m.math.equal(x, y), "real", "real"),
    "not_equal": (lambda m, x, y: m.math.not_equal(x, y), "real", "real"),
    "less": (lambda m, x, y: m.math.less(x, y), "real", "real"),
    "less_equal": (lambda m, x, y: m.math.less_equal(x, y), "real", "real"),
    "greater": (lambda m, x, y: m.math.greater(x, y), "real", "real"),
    "greater_equal": (lambda m, x, y: m.math.greater_equal(x, y), "real", "real"),
    "polygamma": (lambda m, x, y: m.math.polygamma(m.math.floor(m.math.abs(x)), y), "real", "pos"),
}
for _name, (_fn, _da, _db) in BINARY.items():
    add(f"binary.{_name}", _fn, _binary(_da, _db), grad=(0, 1))


INT_VARIANTS = (("normal", "int32"), ("normal", "int64"), ("edge", "int32"))


def _int_pair(nonzero_b: bool):
    def make(rng, kind, dt):
        sa, sb = broadcast_pair(rng)
        a = ints(rng, sa, -9, 10, dt)
        b = ints(rng, sb, -5, 6, dt)
        if kind == "edge":
            info = np.iinfo(dt)
            a = np.where(rng.random(a.shape) < 0.3, rng.choice([info.min, info.max, -1, 0], a.shape),
                         a).astype(dt)
        if nonzero_b:
            b = np.where(b == 0, 3, b).astype(dt)
            if kind == "edge":   # MIN // -1 overflows: TF's result is implementation-defined
                a = np.where(a == np.iinfo(dt).min, -7, a).astype(dt)
        return [a, b], {}
    return make


INT_BINARY = {
    "floordiv": (lambda m, x, y: m.math.floordiv(x, y), True),
    "floormod": (lambda m, x, y: m.math.floormod(x, y), True),
    "truncatediv_via_divide": (lambda m, x, y: m.math.divide(x, y), True),
    "add": (lambda m, x, y: m.math.add(x, y), False),
    "multiply": (lambda m, x, y: m.math.multiply(x, y), False),
    "maximum": (lambda m, x, y: m.math.maximum(x, y), False),
    "minimum": (lambda m, x, y: m.math.minimum(x, y), False),
    "squared_difference": (lambda m, x, y: m.math.squared_difference(x, y), False),
    "abs_sign_neg": (lambda m, x, y: (m.math.abs(x), m.math.sign(x), m.math.negative(y)), False),
    "pow": (lambda m, x, y: m.math.pow(x, m.math.abs(y)), False),
    "less": (lambda m, x, y: m.math.less(x, y), False),
}
for _name, (_fn, _nz) in INT_BINARY.items():
    add(f"int.{_name}", _fn, _int_pair(_nz), variants=INT_VARIANTS)


def _int_div_by_zero(rng, kind, dt):
    return [ints(rng, [4], -5, 6, dt), np.array([0, 1, -1, 0], dt)], {}


add("int.floordiv_by_zero", lambda m, x, y: m.math.floordiv(x, y), _int_div_by_zero,
    variants=(("normal", "int32"),), reps=1)
add("int.floormod_by_zero", lambda m, x, y: m.math.floormod(x, y), _int_div_by_zero,
    variants=(("normal", "int32"),), reps=1)


# ---------------------------------------------------------------- casts

CAST_TARGETS = ("int32", "int64", "int8", "uint8", "int16", "bool", "float16", "float32")


def _cast_make(rng, kind, dt):
    x = floats(rng, [12], dt, kind) * (5.0 if kind == "normal" else 1.0)
    if kind == "ties":
        x = np.asarray([-2.5, -1.5, -0.5, -0.0, 0.5, 1.5, 2.5, -0.7, 0.7, 255.0, 256.0, -129.0], dt)
    return [x], {"to": str(rng.choice(CAST_TARGETS))}


add("cast.float_to", lambda m, x, to: m.cast(x, to), _cast_make, variants=FLOAT_VARIANTS, reps=6)


def _cast_extreme(rng, kind, dt):
    x = np.asarray([np.nan, np.inf, -np.inf, 3e9, -3e9, 1e20, -1e20, 2.0 ** 31, -(2.0 ** 31),
                    -1.0, -0.5, 300.0, -300.0, 65504.0, 70000.0], dt)
    return [x], {"to": str(rng.choice(CAST_TARGETS))}


add("cast.extreme_to", lambda m, x, to: m.cast(x, to), _cast_extreme,
    variants=(("edge", F64), ("edge", F32)), reps=8)


def _cast_int(rng, kind, dt):
    info = np.iinfo(dt)
    x = np.asarray([info.min, info.max, -1, 0, 1, 255, 256, -129, 2 ** 24 + 1], dtype=np.int64)
    x = np.clip(x, info.min, info.max).astype(dt)
    return [x], {"to": str(rng.choice(("int8", "uint8", "int32", "float32", "float64", "bool", "float16")))}


add("cast.int_to", lambda m, x, to: m.cast(x, to), _cast_int,
    variants=(("normal", "int32"), ("normal", "int64")), reps=5)


# ---------------------------------------------------------------- reductions

def _axes(rng, rank: int):
    r = rng.random()
    if rank == 0 or r < 0.2:
        return None
    if r < 0.55:
        return int(rng.integers(-rank, rank))
    k = int(rng.integers(0, rank + 1))
    ax = sorted(rng.choice(rank, k, replace=False).tolist())
    return [a - rank if rng.random() < 0.5 else a for a in ax]


def _reduce_make(domain="real", empty=0.2):
    def make(rng, kind, dt):
        rank = int(rng.integers(0, 4))
        x = floats(rng, shape(rng, rank, 1, 4, empty), dt, kind, domain) if dt.startswith("float") \
            else ints(rng, shape(rng, rank, 1, 4, empty), -5, 6, dt)
        return [x], {"axis": _axes(rng, rank), "keepdims": bool(rng.random() < 0.5)}
    return make


REDUCE = {
    "reduce_sum": lambda m, x, axis, keepdims: m.math.reduce_sum(x, axis, keepdims),
    "reduce_mean": lambda m, x, axis, keepdims: m.math.reduce_mean(x, axis, keepdims),
    "reduce_max": lambda m, x, axis, keepdims: m.math.reduce_max(x, axis, keepdims),
    "reduce_min": lambda m, x, axis, keepdims: m.math.reduce_min(x, axis, keepdims),
    "reduce_prod": lambda m, x, axis, keepdims: m.math.reduce_prod(x, axis, keepdims),
    "reduce_logsumexp": lambda m, x, axis, keepdims: m.math.reduce_logsumexp(x, axis, keepdims),
    "reduce_variance": lambda m, x, axis, keepdims: m.math.reduce_variance(x, axis, keepdims),
    "reduce_std": lambda m, x, axis, keepdims: m.math.reduce_std(x, axis, keepdims),
    "count_nonzero": lambda m, x, axis, keepdims: m.math.count_nonzero(x, axis, keepdims),
    "reduce_euclid_norm": lambda m, x, axis, keepdims: m.linalg.norm(
        x, axis=axis if not isinstance(axis, list) or len(axis) == 1 else None, keepdims=keepdims),
}
for _name, _fn in REDUCE.items():
    add(f"reduce.{_name}", _fn, _reduce_make(), grad=(0,), reps=4)
for _name in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"):
    add(f"reduce.int_{_name}", REDUCE[_name], _reduce_make(),
        variants=(("normal", "int32"), ("normal", "int64")), reps=3)


def _bool_reduce(rng, kind, dt):
    rank = int(rng.integers(0, 4))
    x = rng.random(shape(rng, rank, 1, 4, 0.2)) < 0.6
    return [x], {"axis": _axes(rng, rank), "keepdims": bool(rng.random() < 0.5)}


add("reduce.all", lambda m, x, axis, keepdims: m.math.reduce_all(x, axis, keepdims), _bool_reduce,
    variants=(("normal", "bool"),), reps=6)
add("reduce.any", lambda m, x, axis, keepdims: m.math.reduce_any(x, axis, keepdims), _bool_reduce,
    variants=(("normal", "bool"),), reps=6)
add("reduce.count_nonzero_bool", lambda m, x, axis, keepdims: m.math.count_nonzero(x, axis, keepdims),
    _bool_reduce, variants=(("normal", "bool"),), reps=3)


def _arg_make(rng, kind, dt):
    rank = int(rng.integers(1, 4))
    x = floats(rng, shape(rng, rank, 1, 4), dt, kind) if dt.startswith("float") \
        else ints(rng, shape(rng, rank, 1, 4), -2, 3, dt)
    return [x], {"axis": int(rng.integers(-rank, rank)),
                 "output_type": str(rng.choice(["int32", "int64"]))}


add("argmax", lambda m, x, axis, output_type: m.math.argmax(x, axis, output_type=output_type),
    _arg_make, variants=FLOAT_VARIANTS + (("normal", "int32"),), reps=3)
add("argmin", lambda m, x, axis, output_type: m.math.argmin(x, axis, output_type=output_type),
    _arg_make, variants=FLOAT_VARIANTS + (("normal", "int32"),), reps=3)


def _cum_make(rng, kind, dt):
    rank = int(rng.integers(1, 4))
    x = floats(rng, shape(rng, rank, 1, 4, 0.1), dt, kind) if dt.startswith("float") \
        else ints(rng, shape(rng, rank, 1, 4, 0.1), -3, 4, dt)
    return [x], {"axis": int(rng.integers(-rank, rank)), "exclusive": bool(rng.random() < 0.5),
                 "reverse": bool(rng.random() < 0.5)}


add("cumsum", lambda m, x, **p: m.math.cumsum(x, **p), _cum_make, grad=(0,),
    variants=FLOAT_VARIANTS + (("normal", "int32"),), reps=4)
add("cumprod", lambda m, x, **p: m.math.cumprod(x, **p), _cum_make, grad=(0,),
    variants=(("normal", F64), ("ties", F64), ("edge", F64), ("normal", F32), ("normal", "int32")),
    reps=4)


def _topk_make(rng, kind, dt):
    shp = shape(rng, int(rng.integers(1, 3)), 1, 5)
    x = floats(rng, shp, dt, kind)
    return [x], {"k": int(rng.integers(0, shp[-1] + 1))}


add("top_k", lambda m, x, k: tuple(m.math.top_k(x, k=k)), _topk_make, grad=(0,), reps=4)


def _in_top_k_make(rng, kind, dt):
    b, n = int(rng.integers(1, 5)), int(rng.integers(1, 6))
    return [ints(rng, [b], 0, n), floats(rng, [b, n], dt, kind)], {"k": int(rng.integers(0, n + 1))}


add("in_top_k", lambda m, t, p, k: m.math.in_top_k(t, p, k), _in_top_k_make,
    variants=(("normal", F32), ("ties", F32), ("edge", F32)), reps=4)


# ---------------------------------------------------------------- softmax and losses

def _logits_make(rng, kind, dt):
    rank = int(rng.integers(1, 4))
    return [floats(rng, shape(rng, rank, 1, 4, 0.1), dt, kind)], {"axis": int(rng.integers(-rank, rank))}


add("nn.softmax", lambda m, x, axis: m.nn.softmax(x, axis=axis), _logits_make, grad=(0,), reps=3)
add("nn.log_softmax", lambda m, x, axis: m.nn.log_softmax(x, axis=axis), _logits_make, grad=(0,),
    reps=3)


def _softmax_ce_make(rng, kind, dt):
    rank = int(rng.integers(1, 4))
    shp = shape(rng, rank, 1, 4)
    labels = rng.dirichlet(np.ones(shp[-1]), size=int(np.prod(shp[:-1]))).reshape(shp)
    logits = floats(rng, shp, dt, kind)
    axis = int(rng.integers(-rank, rank))
    return [np.moveaxis(labels, -1, axis).astype(dt), np.moveaxis(logits, -1, axis)], {"axis": axis}


add("nn.softmax_cross_entropy_with_logits",
    lambda m, lab, log, axis: m.nn.softmax_cross_entropy_with_logits(lab, log, axis=axis),
    _softmax_ce_make, grad=(0, 1), reps=3)


def _sparse_ce_make(rng, kind, dt):
    shp = shape(rng, int(rng.integers(1, 3)), 1, 4) + [int(rng.integers(1, 5))]
    return [ints(rng, shp[:-1], 0, shp[-1], str(rng.choice(["int32", "int64"]))),
            floats(rng, shp, dt, kind)], {}


add("nn.sparse_softmax_cross_entropy_with_logits",
    lambda m, lab, log: m.nn.sparse_softmax_cross_entropy_with_logits(labels=lab, logits=log),
    _sparse_ce_make, grad=(1,), reps=3)


def _sigmoid_ce_make(rng, kind, dt):
    shp = shape(rng, int(rng.integers(0, 3)), 1, 4, 0.1)
    return [rng.uniform(0, 1, shp).astype(dt), floats(rng, shp, dt, kind)], {}


add("nn.sigmoid_cross_entropy_with_logits",
    lambda m, lab, log: m.nn.sigmoid_cross_entropy_with_logits(labels=lab, logits=log),
    _sigmoid_ce_make, grad=(0, 1), reps=3)
add("nn.l2_loss", lambda m, x: m.nn.l2_loss(x), _unary("real"), grad=(0,))


def _v1_loss_make(sparse: bool = False, sigmoid: bool = False):
    def make(rng, kind, dt):
        b, n = int(rng.integers(1, 5)), int(rng.integers(2, 5))
        logits = floats(rng, [b, n], dt, kind)
        if sparse:
            labels = ints(rng, [b], 0, n)
        elif sigmoid:
            labels = (rng.random([b, n]) < 0.5).astype(dt)
        else:
            labels = np.eye(n, dtype=dt)[rng.integers(0, n, b)]
        wshape = [[], [b], [b, 1] if not sparse else [b]][int(rng.integers(0, 3))]
        weights = rng.uniform(0, 2, wshape).astype(dt)
        if wshape and rng.random() < 0.5:
            weights.flat[0] = 0.0
        reduction = str(rng.choice(_RED))
        smoothing = float(rng.choice([0.0, 0.1])) if not sparse else 0.0
        return [labels, logits, weights], {"reduction": reduction, "smoothing": smoothing}
    return make


_RED = ("none", "sum", "mean", "sum_over_batch_size", "sum_by_nonzero_weights",
        "sum_over_nonzero_weights")


def _v1_reduction(m, r):
    return getattr(m.compat.v1.losses.Reduction, r.upper())


add("losses.softmax_cross_entropy",
    lambda m, lab, log, w, reduction, smoothing: m.compat.v1.losses.softmax_cross_entropy(
        lab, log, weights=w, label_smoothing=smoothing, reduction=_v1_reduction(m, reduction)),
    _v1_loss_make(), grad=(1, 2), variants=(("normal", F64), ("ties", F64), ("normal", F32)), reps=4)
add("losses.sparse_softmax_cross_entropy",
    lambda m, lab, log, w, reduction, smoothing: m.compat.v1.losses.sparse_softmax_cross_entropy(
        lab, log, weights=w, reduction=_v1_reduction(m, reduction)),
    _v1_loss_make(sparse=True), grad=(1, 2), variants=(("normal", F64), ("normal", F32)), reps=4)
add("losses.sigmoid_cross_entropy",
    lambda m, lab, log, w, reduction, smoothing: m.compat.v1.losses.sigmoid_cross_entropy(
        lab, log, weights=w, label_smoothing=smoothing, reduction=_v1_reduction(m, reduction)),
    _v1_loss_make(sigmoid=True), grad=(1, 2), variants=(("normal", F64), ("normal", F32)), reps=4)


def _v1_reg_loss_make(rng, kind, dt):
    b, n = int(rng.integers(1, 5)), int(rng.integers(1, 4))
    wshape = [[], [b, 1], [b, n]][int(rng.integers(0, 3))]
    w = rng.uniform(0, 2, wshape).astype(dt)
    reduction = str(rng.choice(_RED))
    return [floats(rng, [b, n], dt, kind), floats(rng, [b, n], dt, kind), w], {"reduction": reduction}


for _name, _call in {
    "mean_squared_error": lambda m, lab, pred, w, r: m.compat.v1.losses.mean_squared_error(
        lab, pred, weights=w, reduction=r),
    "absolute_difference": lambda m, lab, pred, w, r: m.compat.v1.losses.absolute_difference(
        lab, pred, weights=w, reduction=r),
    "huber_loss": lambda m, lab, pred, w, r: m.compat.v1.losses.huber_loss(
        lab, pred, weights=w, delta=0.7, reduction=r),
    "hinge_loss": lambda m, lab, pred, w, r: m.compat.v1.losses.hinge_loss(
        m.cast(lab > 0, lab.dtype), pred, weights=w, reduction=r),
    "log_loss": lambda m, lab, pred, w, r: m.compat.v1.losses.log_loss(
        m.cast(lab > 0, lab.dtype), m.math.sigmoid(pred), weights=w, reduction=r),
    "cosine_distance": lambda m, lab, pred, w, r: m.compat.v1.losses.cosine_distance(
        m.math.l2_normalize(lab, 1), m.math.l2_normalize(pred, 1), axis=1,
        weights=w[..., :1] if len(w.shape) == 2 else w, reduction=r),
}.items():
    add(f"losses.{_name}",
        (lambda call: lambda m, lab, pred, w, reduction: call(m, lab, pred, w, _v1_reduction(m, reduction)))(
            _call),
        _v1_reg_loss_make, grad=(0, 1, 2), variants=(("normal", F64), ("ties", F64), ("normal", F32)),
        reps=3)


# ---------------------------------------------------------------- normalization

def _l2n_make(rng, kind, dt):
    rank = int(rng.integers(1, 4))
    x = floats(rng, shape(rng, rank, 1, 4), dt, kind)
    if rng.random() < 0.3:
        x[...] = 0
    return [x], {"axis": _axes(rng, rank)}


add("nn.l2_normalize", lambda m, x, axis: m.math.l2_normalize(x, axis=axis), _l2n_make, grad=(0,),
    reps=3)


def _moments_make(rng, kind, dt):
    rank = int(rng.integers(1, 4))
    ax = _axes(rng, rank)
    ax = [ax] if isinstance(ax, int) else (list(range(rank)) if ax is None or not ax else ax)
    return [floats(rng, shape(rng, rank, 1, 4), dt, kind)], {"axes": ax, "keepdims": bool(rng.random() < .5)}


add("nn.moments", lambda m, x, axes, keepdims: tuple(m.nn.moments(x, axes, keepdims=keepdims)),
    _moments_make, grad=(0,), reps=3)


def _bn_make(rng, kind, dt):
    shp = shape(rng, 4, 1, 3)
    c = shp[-1]
    return [floats(rng, shp, dt, kind), floats(rng, [c], dt, kind), floats(rng, [c], dt, "normal", "pos"),
            floats(rng, [c], dt, kind), floats(rng, [c], dt, kind)], {"eps": float(rng.choice([1e-3, 1e-5]))}


add("nn.batch_normalization",
    lambda m, x, mean, var, off, sc, eps: m.nn.batch_normalization(x, mean, var, off, sc, eps),
    _bn_make, grad=(0, 1, 2, 3, 4), reps=3)


def _fbn_make(rng, kind, dt):
    n, h, w, c = shape(rng, 4, 1, 3)
    n = max(n, 2)
    train = bool(rng.random() < 0.6)
    fmt = str(rng.choice(["NHWC", "NCHW"]))
    shp = [n, h, w, c] if fmt == "NHWC" else [n, c, h, w]
    return [floats(rng, shp, "float32", kind), floats(rng, [c], "float32", "normal"),
            floats(rng, [c], "float32", "normal"), floats(rng, [c], "float32", "normal"),
            floats(rng, [c], "float32", "normal", "pos")], {
        "train": train, "fmt": fmt, "eaf": 1.0 if train and rng.random() < 0.5 else 0.7,
        "eps": float(rng.choice([1e-3, 1e-6]))}


add("nn.fused_batch_norm",
    lambda m, x, sc, off, mean, var, train, fmt, eaf, eps: tuple(m.compat.v1.nn.fused_batch_norm(
        x, sc, off, mean=None if train and eaf == 1.0 else mean,
        variance=None if train and eaf == 1.0 else var, epsilon=eps, data_format=fmt,
        is_training=train, exponential_avg_factor=eaf)),
    _fbn_make, variants=(("normal", F32), ("ties", F32)), reps=5)


def _bias_add_make(rng, kind, dt):
    shp = shape(rng, int(rng.integers(2, 5)), 1, 3)
    return [floats(rng, shp, dt, kind), floats(rng, shp[-1:], dt, kind)], {}


add("nn.bias_add", lambda m, x, b: m.nn.bias_add(x, b), _bias_add_make, grad=(0, 1), variants=PLAIN)


# ---------------------------------------------------------------- pooling and convolution

def _pool_make(nd: int):
    def make(rng, kind, dt):
        spatial = shape(rng, nd, 1, 5)
        x = floats(rng, [int(rng.integers(1, 3))] + spatial + [int(rng.integers(1, 3))], dt, kind)
        pad = str(rng.choice(["SAME", "VALID"]))
        k = [int(rng.integers(1, 4)) for _ in range(nd)]
        if pad == "VALID":
            k = [min(a, b) for a, b in zip(k, spatial)]
        s = [int(rng.integers(1, 4)) for _ in range(nd)]
        return [x], {"ksize": k, "strides": s, "padding": pad}
    return make


for _nd in (1, 2):
    add(f"nn.max_pool{_nd}d", lambda m, x, **p: m.nn.max_pool(x, **p), _pool_make(_nd), grad=(0,),
        variants=(("normal", F64), ("ties", F64), ("normal", F32), ("edge", F32)), reps=3)
    add(f"nn.avg_pool{_nd}d", lambda m, x, **p: m.nn.avg_pool(x, **p), _pool_make(_nd), grad=(0,),
        variants=(("normal", F64), ("ties", F64), ("normal", F32)), reps=3)
# TensorFlow's 3-D pools have float32 kernels only: their gradients are compared in float32
add("nn.max_pool3d", lambda m, x, **p: m.nn.max_pool3d(x, **p), _pool_make(3), grad=(0,),
    variants=(("normal", F32), ("ties", F32), ("edge", F32)), reps=3, grad_dtypes=(F32,))
add("nn.avg_pool3d", lambda m, x, **p: m.nn.avg_pool3d(x, **p), _pool_make(3), grad=(0,),
    variants=(("normal", F32), ("ties", F32)), reps=3, grad_dtypes=(F32,))


def _dilated_pool_make(rng, kind, dt):
    spatial = shape(rng, 2, 3, 6)
    x = floats(rng, [1] + spatial + [2], dt, kind)
    return [x], {"window_shape": [int(rng.integers(1, 3)), int(rng.integers(1, 3))],
                 "pooling_type": str(rng.choice(["MAX", "AVG"])),
                 "padding": str(rng.choice(["SAME", "VALID"])),
                 "dilations": [int(rng.integers(1, 3)), int(rng.integers(1, 3))]}


add("nn.pool_dilated", lambda m, x, **p: m.nn.pool(x, **p), _dilated_pool_make, grad=(0,),
    variants=(("normal", F64), ("ties", F64), ("normal", F32)), reps=4)


def _conv_make(nd: int, explicit: bool = False, dilate: bool = True):
    def make(rng, kind, dt):
        spatial = shape(rng, nd, 2, 6)
        cin, cout = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        k = [int(rng.integers(1, 4)) for _ in range(nd)]
        strided = rng.random() < 0.5
        s = [int(rng.integers(1, 3)) for _ in range(nd)] if strided else [1] * nd
        d = [1] * nd if strided or not dilate else [int(rng.integers(1, 3)) for _ in range(nd)]
        pad: Any = str(rng.choice(["SAME", "VALID"]))
        if explicit and rng.random() < 0.5:
            pad = [[0, 0], *([int(rng.integers(0, 3)), int(rng.integers(0, 3))] for _ in range(nd)),
                   [0, 0]]
        if pad == "VALID":
            k = [max(1, min(kk, (sp - 1) // dd + 1)) for kk, sp, dd in zip(k, spatial, d)]
        x = floats(rng, [int(rng.integers(1, 3))] + spatial + [cin], dt, kind)
        w = floats(rng, k + [cin, cout], dt, kind)
        return [x, w], {"strides": s, "padding": pad, "dilations": d}
    return make


CONV_VARIANTS = (("normal", F64), ("ties", F64), ("normal", F32))
add("nn.conv1d", lambda m, x, w, strides, padding, dilations: m.nn.conv1d(
    x, w, stride=strides, padding=padding, dilations=dilations), _conv_make(1), grad=(0, 1),
    variants=CONV_VARIANTS, reps=3)
add("nn.conv2d", lambda m, x, w, **p: m.nn.conv2d(x, w, **p), _conv_make(2, True), grad=(0, 1),
    variants=CONV_VARIANTS, reps=4)
add("nn.conv3d", lambda m, x, w, **p: m.nn.conv3d(x, w, **{**p, "strides": [1, *p["strides"], 1],
                                                         "dilations": [1, *p["dilations"], 1]}),
    _conv_make(3, dilate=False), grad=(0, 1), variants=CONV_VARIANTS, reps=3)
add("nn.convolution", lambda m, x, w, **p: m.nn.convolution(x, w, **p), _conv_make(2), grad=(0, 1),
    variants=CONV_VARIANTS, reps=2)


def _conv_t_make(nd: int):
    def make(rng, kind, dt):
        spatial = shape(rng, nd, 1, 4)
        cin, cout = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        k = [int(rng.integers(1, 4)) for _ in range(nd)]
        strided = rng.random() < 0.6
        s = [int(rng.integers(1, 3)) for _ in range(nd)] if strided else [1] * nd
        d = [1] * nd     # TensorFlow's CPU kernels refuse dilated transposed convolutions
        pad = str(rng.choice(["SAME", "VALID"]))
        n = int(rng.integers(1, 3))
        out = []
        for sp, kk, ss, dd in zip(spatial, k, s, d):
            ek = (kk - 1) * dd + 1
            out.append(sp * ss if pad == "SAME" else (sp - 1) * ss + ek)
            out[-1] += int(rng.integers(0, ss)) if rng.random() < 0.3 else 0   # an ambiguous size
        x = floats(rng, [n] + spatial + [cin], dt, kind)
        w = floats(rng, k + [cout, cin], dt, kind)
        return [x, w], {"output_shape": [n] + out + [cout], "strides": s, "padding": pad, "dilations": d}
    return make


add("nn.conv1d_transpose", lambda m, x, w, **p: m.nn.conv1d_transpose(x, w, **p), _conv_t_make(1),
    grad=(0, 1), variants=CONV_VARIANTS, reps=3)
add("nn.conv2d_transpose", lambda m, x, w, **p: m.nn.conv2d_transpose(x, w, **p), _conv_t_make(2),
    grad=(0, 1), variants=CONV_VARIANTS, reps=4)
add("nn.conv3d_transpose", lambda m, x, w, output_shape, strides, padding, dilations:
    m.nn.conv3d_transpose(x, w, output_shape, [1, *strides, 1], padding,
                          dilations=[1, *dilations, 1]),
    _conv_t_make(3), grad=(0, 1), variants=CONV_VARIANTS, reps=3)


def _depthwise_make(separable: bool):
    def make(rng, kind, dt):
        spatial = shape(rng, 2, 2, 6)
        cin, mult = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        k = [int(rng.integers(1, 4)) for _ in range(2)]
        strided = rng.random() < 0.5
        s = int(rng.integers(1, 3)) if strided else 1
        d = [1, 1] if strided else [int(rng.integers(1, 3))] * 2
        pad = str(rng.choice(["SAME", "VALID"]))
        if pad == "VALID":
            k = [max(1, min(kk, (sp - 1) // dd + 1)) for kk, sp, dd in zip(k, spatial, d)]
        args = [floats(rng, [int(rng.integers(1, 3))] + spatial + [cin], dt, kind),
                floats(rng, k + [cin, mult], dt, kind)]
        if separable:
            args.append(floats(rng, [1, 1, cin * mult, int(rng.integers(1, 3))], dt, kind))
        return args, {"strides": [1, s, s, 1], "padding": pad, "dilations": d}
    return make


add("nn.depthwise_conv2d", lambda m, x, w, **p: m.nn.depthwise_conv2d(x, w, **p), _depthwise_make(False),
    grad=(0, 1), variants=CONV_VARIANTS, reps=4)
add("nn.separable_conv2d", lambda m, x, w, pw, **p: m.nn.separable_conv2d(x, w, pw, **p),
    _depthwise_make(True), grad=(0, 1, 2), variants=CONV_VARIANTS, reps=3)


# ---------------------------------------------------------------- matmul, einsum, linalg

def _matmul_make(rng, kind, dt):
    m_, k_, n_ = (int(rng.integers(1, 4)) for _ in range(3))
    ta, tb = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
    adj_a, adj_b = (not ta) and rng.random() < 0.3, (not tb) and rng.random() < 0.3
    if dt.startswith("int"):
        adj_a = adj_b = False
    batch_a, batch_b = broadcast_pair(rng, int(rng.integers(0, 3)))
    a = batch_a + ([k_, m_] if ta or adj_a else [m_, k_])
    b = batch_b + ([n_, k_] if tb or adj_b else [k_, n_])
    if dt.startswith("int"):
        return [ints(rng, a, -3, 4, dt), ints(rng, b, -3, 4, dt)], {
            "transpose_a": ta, "transpose_b": tb, "adjoint_a": False, "adjoint_b": False}
    return [floats(rng, a, dt, kind), floats(rng, b, dt, kind)], {
        "transpose_a": ta, "transpose_b": tb, "adjoint_a": bool(adj_a), "adjoint_b": bool(adj_b)}


add("matmul", lambda m, a, b, **p: m.linalg.matmul(a, b, **p), _matmul_make, grad=(0, 1),
    variants=(("normal", F64), ("edge", F64), ("normal", F32), ("normal", "int32")), reps=5)

EINSUM = ["ij,jk->ik", "bij,bjk->bik", "ii->i", "ii", "ij->", "i,i->", "i,j->ij", "...ij,...jk->...ik",
          "bhqd,bhkd->bhqk", "ijk->kji", "ij,ij->ij", "ij,jk,kl->il", "ij->j", "bi,bj->bij", "ab,cd->",
          "i,i", "ij,kj", "iij->j"]


def _einsum_make(rng, kind, dt):
    eq = str(rng.choice(EINSUM))
    ins = eq.split("->")[0].split(",")
    sizes = {ch: int(rng.integers(1, 4)) for ch in "abcdefghijklmnopqrstuvwxyz"}
    ell = shape(rng, int(rng.integers(0, 3)), 1, 3)
    args = []
    for spec in ins:
        shp = []
        for part in spec.split("..."):
            shp.append([sizes[c] for c in part])
        dims = shp[0] + (ell + shp[1] if len(shp) > 1 else [])
        args.append(floats(rng, dims, dt, kind))
    return args, {"eq": eq}


add("einsum", lambda m, *xs, eq: m.einsum(eq, *xs), _einsum_make, grad=(0, 1, 2),
    variants=(("normal", F64), ("normal", F32)), reps=10)


def _tensordot_make(rng, kind, dt):
    a = shape(rng, 3, 1, 3)
    n = int(rng.integers(0, 3))
    b = a[3 - n:] + shape(rng, int(rng.integers(0, 2)), 1, 3)
    axes: Any = n if rng.random() < 0.5 else [list(range(3 - n, 3)), list(range(n))]
    return [floats(rng, a, dt, kind), floats(rng, b, dt, kind)], {"axes": axes}


add("tensordot", lambda m, a, b, axes: m.tensordot(a, b, axes), _tensordot_make, grad=(0, 1),
    variants=PLAIN, reps=4)


def _square_make(spd: bool = False, tri: bool = False):
    def make(rng, kind, dt):
        n = int(rng.integers(1, 4))
        batch = shape(rng, int(rng.integers(0, 2)), 1, 2)
        a = rng.normal(size=batch + [n, n])
        if spd:
            a = a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
        else:
            a = a + 3 * np.eye(n)
        return [a.astype(dt), rng.normal(size=batch + [n, int(rng.integers(1, 3))]).astype(dt)], {
            "adjoint": bool(rng.random() < 0.5), "lower": bool(rng.random() < 0.5)}
    return make


LINALG = {
    "inv": (lambda m, a, b, adjoint, lower: m.linalg.inv(a, adjoint=adjoint), False, (0,)),
    "solve": (lambda m, a, b, adjoint, lower: m.linalg.solve(a, b, adjoint=adjoint), False, (0, 1)),
    "triangular_solve": (lambda m, a, b, adjoint, lower: m.linalg.triangular_solve(
        a, b, lower=lower, adjoint=adjoint), False, (0, 1)),
    "cholesky": (lambda m, a, b, adjoint, lower: m.linalg.cholesky(
        (a + m.linalg.matrix_transpose(a)) / 2), True, (0,)),
    "det": (lambda m, a, b, adjoint, lower: m.linalg.det(a), False, (0,)),
    "slogdet": (lambda m, a, b, adjoint, lower: tuple(m.linalg.slogdet(a - 3 * m.eye(a.shape[-1],
                                                                                    dtype=a.dtype))),
                False, (0,)),
    "logdet": (lambda m, a, b, adjoint, lower: m.linalg.logdet((a + m.linalg.matrix_transpose(a)) / 2),
               True, (0,)),
    "eigh": (lambda m, a, b, adjoint, lower: (lambda e, v: (e, m.math.abs(v)))(
        *m.linalg.eigh((a + m.linalg.matrix_transpose(a)) / 2)), True, (0,)),
    "eigvalsh": (lambda m, a, b, adjoint, lower: m.linalg.eigvalsh(a), False, (0,)),
    "trace": (lambda m, a, b, adjoint, lower: m.linalg.trace(a), False, (0,)),
    "matrix_transpose": (lambda m, a, b, adjoint, lower: m.linalg.matrix_transpose(b), False, (1,)),
    "adjoint": (lambda m, a, b, adjoint, lower: m.linalg.adjoint(b), False, (1,)),
}
for _name, (_fn, _spd, _g) in LINALG.items():
    add(f"linalg.{_name}", _fn, _square_make(spd=_spd), grad=_g, variants=PLAIN, reps=3)


def _rect_make(rng, kind, dt):
    batch = shape(rng, int(rng.integers(0, 2)), 1, 2)
    r, c = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    return [floats(rng, batch + [r, c], dt, kind)], {"full": bool(rng.random() < 0.5)}


def _qr(m, a, full):
    q, r = m.linalg.qr(a, full_matrices=full)
    k = min(a.shape[-2], a.shape[-1])
    sgn = m.math.sign(m.linalg.diag_part(r[..., :k, :k]))
    sgn = m.where(m.equal(sgn, 0), m.ones_like(sgn), sgn)
    return q[..., :k] * sgn[..., None, :], r[..., :k, :] * sgn[..., :, None]


add("linalg.qr", _qr, _rect_make, grad=(0,), variants=(("normal", F64), ("normal", F32)), reps=5)
add("linalg.svd", lambda m, a, full: (lambda s, u, v: (s, m.math.abs(u[..., :s.shape[-1]]),
                                                       m.math.abs(v[..., :s.shape[-1]])))(
    *m.linalg.svd(a, full_matrices=full)), _rect_make, grad=(0,), variants=PLAIN, reps=4)
add("linalg.svd_values", lambda m, a, full: m.linalg.svd(a, compute_uv=False), _rect_make, grad=(0,),
    variants=(("normal", F64), ("ties", F64), ("normal", F32)), reps=3)


def _norm_make(rng, kind, dt):
    rank = int(rng.integers(1, 4))
    x = floats(rng, shape(rng, rank, 1, 4), dt, kind)
    if rank >= 2 and rng.random() < 0.4:
        ax = sorted(rng.choice(rank, 2, replace=False).tolist())
        ordv = str(rng.choice(["fro", "euclidean", "1", "2", "inf"]))
    else:
        ax = None if rng.random() < 0.3 else int(rng.integers(-rank, rank))
        ordv = str(rng.choice(["euclidean", "1", "2", "inf", "3", "0.5"]))
    return [x], {"ord": ordv, "axis": ax, "keepdims": bool(rng.random() < 0.5)}


def _ord(o: str):
    """The norm order a parameter string stands for."""
    return {"inf": np.inf, "fro": "fro", "euclidean": "euclidean", "1": 1, "2": 2}.get(o) or float(o)


add("linalg.norm", lambda m, x, ord, axis, keepdims: m.linalg.norm(x, ord=_ord(ord), axis=axis,
                                                                    keepdims=keepdims),
    _norm_make, grad=(0,), variants=(("normal", F64), ("ties", F64), ("normal", F32)), reps=8)


def _diag_make(rng, kind, dt):
    r, c = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    k = int(rng.integers(-r + 1, c))
    x = floats(rng, shape(rng, int(rng.integers(0, 2)), 1, 2) + [r, c], dt, kind)
    dlen = min(r + min(k, 0), c - max(k, 0))
    return [x, floats(rng, list(x.shape[:-2]) + [dlen], dt, kind)], {
        "k": k, "lo": int(rng.integers(-1, 3)), "hi": int(rng.integers(-1, 3))}


add("linalg.diag_part", lambda m, x, d, k, lo, hi: m.linalg.diag_part(x, k=k), _diag_make, grad=(0,),
    variants=PLAIN, reps=3)
add("linalg.set_diag", lambda m, x, d, k, lo, hi: m.linalg.set_diag(x, d, k=k), _diag_make,
    grad=(0, 1), variants=PLAIN, reps=3)
add("linalg.diag", lambda m, x, d, k, lo, hi: m.linalg.diag(d, k=k), _diag_make, grad=(1,),
    variants=PLAIN, reps=3)
add("linalg.band_part", lambda m, x, d, k, lo, hi: m.linalg.band_part(x, lo, hi), _diag_make,
    grad=(0,), variants=PLAIN, reps=3)


# ---------------------------------------------------------------- array ops

def _pad_make(rng, kind, dt):
    rank = int(rng.integers(1, 4))
    shp = shape(rng, rank, 1, 4)
    mode = str(rng.choice(["CONSTANT", "REFLECT", "SYMMETRIC"]))
    limit = {"CONSTANT": 3, "REFLECT": 0, "SYMMETRIC": 1}[mode]
    pads = [[int(rng.integers(0, max(1, s + limit) if mode != "CONSTANT" else 3)) for _ in range(2)]
            for s in shp]
    if mode == "REFLECT":
        pads = [[min(p, s - 1) for p in pr] for pr, s in zip(pads, shp)]
    elif mode == "SYMMETRIC":
        pads = [[min(p, s) for p in pr] for pr, s in zip(pads, shp)]
    return [floats(rng, shp, dt, kind)], {"paddings": pads, "mode": mode,
                                          "cv": float(rng.choice([0.0, -1.5]))}


add("pad", lambda m, x, paddings, mode, cv: m.pad(x, paddings, mode=mode, constant_values=cv),
    _pad_make, grad=(0,), variants=(("normal", F64), ("normal", F32)), reps=8)


def _tile_make(rng, kind, dt):
    rank = int(rng.integers(1, 4))
    return [floats(rng, shape(rng, rank, 1, 3, 0.1), dt, kind)], {
        "multiples": [int(rng.integers(0, 3)) for _ in range(rank)]}


add("tile", lambda m, x, multiples: m.tile(x, multiples), _tile_make, grad=(0,), variants=PLAIN, reps=4)


def _axis_list_make(rng, kind, dt):
    rank = int(rng.integers(1, 4))
    k = int(rng.integers(1, rank + 1))
    ax = [int(a) - (rank if rng.random() < 0.5 else 0) for a in rng.choice(rank, k, replace=False)]
    return [floats(rng, shape(rng, rank, 1, 4, 0.1), dt, kind)], {
        "axis": ax, "shift": [int(rng.integers(-5, 6)) for _ in ax]}


add("reverse", lambda m, x, axis, shift: m.reverse(x, axis), _axis_list_make, grad=(0,), variants=PLAIN,
    reps=4)
add("roll", lambda m, x, axis, shift: m.roll(x, shift, axis), _axis_list_make, grad=(0,), variants=PLAIN,
    reps=5)


def _where_make(rng, kind, dt):
    sa, sb = broadcast_pair(rng, 3)
    sc = sb[int(rng.integers(0, len(sb) + 1)):] if rng.random() < 0.5 else sa
    return [rng.random(sc) < 0.5, floats(rng, sa, dt, kind), floats(rng, sb, dt, kind)], {}


add("where3", lambda m, c, x, y: m.where(c, x, y), _where_make, grad=(1, 2),
    variants=(("normal", F64), ("edge", F64), ("normal", F32)), reps=5)


def _where1_make(rng, kind, dt):
    x = floats(rng, shape(rng, int(rng.integers(1, 4)), 0, 3), dt, kind)
    return [x], {}


add("where1", lambda m, x: m.where(x), _where1_make, variants=(("edge", F64), ("ties", F64)), reps=3)


def _gather_make(rng, kind, dt):
    bd = int(rng.integers(0, 3))
    rank = bd + int(rng.integers(1, 3))
    pshape = shape(rng, rank, 1, 4)
    axis = int(rng.integers(bd, rank))
    ishape = pshape[:bd] + shape(rng, int(rng.integers(0, 3)), 0, 3)
    idx = ints(rng, ishape, 0, pshape[axis], str(rng.choice(["int32", "int64"])))
    return [floats(rng, pshape, dt, kind), idx], {"axis": axis - (rank if rng.random() < 0.3 else 0),
                                                  "batch_dims": bd}


add("gather", lambda m, p, i, axis, batch_dims: m.gather(p, i, axis=axis, batch_dims=batch_dims),
    _gather_make, grad=(0,), variants=PLAIN, reps=6)


def _gather_nd_make(rng, kind, dt):
    bd = int(rng.integers(0, 2))
    rank = bd + int(rng.integers(1, 4))
    pshape = shape(rng, rank, 1, 4)
    depth = int(rng.integers(1, rank - bd + 1))
    ishape = pshape[:bd] + shape(rng, int(rng.integers(0, 2)), 1, 3)
    cols = [ints(rng, ishape + [1], 0, pshape[bd + j]) for j in range(depth)]
    return [floats(rng, pshape, dt, kind), np.concatenate(cols, -1)], {"batch_dims": bd}


add("gather_nd", lambda m, p, i, batch_dims: m.gather_nd(p, i, batch_dims=batch_dims), _gather_nd_make,
    grad=(0,), variants=PLAIN, reps=6)


def _scatter_make(rng, kind, dt):
    shp = shape(rng, int(rng.integers(1, 4)), 1, 4)
    depth = int(rng.integers(1, len(shp) + 1))
    n = int(rng.integers(0, 6))
    idx = np.stack([rng.integers(0, shp[j], n) for j in range(depth)], -1).astype(np.int32)
    if n >= 2:
        idx[-1] = idx[0]     # a duplicate
    idx = idx.reshape(n, depth)
    upd = floats(rng, [n] + shp[depth:], dt, kind)
    return [floats(rng, shp, dt, kind), idx, upd], {"shape": shp}


add("scatter_nd", lambda m, t, i, u, shape: m.scatter_nd(i, u, shape), _scatter_make, grad=(2,),
    variants=(("normal", F64), ("ties", F64), ("normal", F32)), reps=5)
for _name in ("update", "add", "sub", "max", "min"):
    add(f"tensor_scatter_nd_{_name}",
        (lambda nm: lambda m, t, i, u, shape: getattr(m, f"tensor_scatter_nd_{nm}")(t, i, u))(_name),
        _scatter_make, grad=(0, 2), variants=(("normal", F64), ("ties", F64), ("normal", F32)), reps=4)


def _segment_make(sorted_ids: bool, extra: bool = True):
    def make(rng, kind, dt):
        n = int(rng.integers(0, 7))
        rows = shape(rng, int(rng.integers(0, 2)), 1, 3)
        ids = np.sort(rng.integers(0, 4, n)) if sorted_ids else rng.integers(-1 if extra else 0, 4, n)
        num = int(max(ids, default=-1) + 1 + (rng.integers(0, 3) if extra else 0))
        data = floats(rng, [n] + rows, dt, kind) if dt.startswith("float") else ints(rng, [n] + rows, -4, 5,
                                                                                        dt)
        return [data, ids.astype(str(rng.choice(["int32", "int64"])))], {"num": max(num, 0)}
    return make


SEG_VARIANTS = (("normal", F64), ("ties", F64), ("normal", F32), ("normal", "int32"))
for _name in ("sum", "mean", "max", "min", "prod"):
    add(f"segment_{_name}", (lambda nm: lambda m, d, i, num: getattr(m.math, f"segment_{nm}")(d, i))(_name),
        _segment_make(True), grad=(0,), variants=SEG_VARIANTS if _name != "mean" else SEG_VARIANTS[:3],
        reps=4)
for _name in ("sum", "mean", "max", "min", "prod", "sqrt_n"):
    add(f"unsorted_segment_{_name}",
        (lambda nm: lambda m, d, i, num: getattr(m.math, f"unsorted_segment_{nm}")(d, i, num))(_name),
        _segment_make(False), grad=(0,),
        variants=SEG_VARIANTS if _name not in ("mean", "sqrt_n") else SEG_VARIANTS[:3], reps=5)


def _unique_make(rng, kind, dt):
    n = int(rng.integers(0, 8))
    x = floats(rng, [n], dt, "ties") if dt.startswith("float") else ints(rng, [n], -3, 4, dt)
    if kind == "edge" and n:
        x[0] = -0.0
        x[-1] = 0.0
    return [x], {"out_idx": str(rng.choice(["int32", "int64"]))}


add("unique", lambda m, x, out_idx: tuple(m.unique(x, out_idx=out_idx)), _unique_make,
    variants=(("normal", F64), ("edge", F64), ("normal", "int32"), ("normal", "int64")), reps=3)
add("unique_with_counts", lambda m, x, out_idx: tuple(m.unique_with_counts(x, out_idx=out_idx)),
    _unique_make, variants=(("normal", F32), ("edge", F32), ("normal", "int32")), reps=3)


def _concat_make(rng, kind, dt):
    rank = int(rng.integers(1, 4))
    base = shape(rng, rank, 1, 3)
    axis = int(rng.integers(-rank, rank))
    parts = []
    for _ in range(3):
        s = list(base)
        s[axis] = int(rng.integers(0, 3))
        parts.append(floats(rng, s, dt, kind))
    return parts, {"axis": axis}


add("concat", lambda m, *xs, axis: m.concat(list(xs), axis), _concat_make, grad=(0, 1, 2),
    variants=PLAIN, reps=3)


def _stack_make(rng, kind, dt):
    shp = shape(rng, int(rng.integers(0, 3)), 0, 3)
    return [floats(rng, shp, dt, kind) for _ in range(3)], {"axis": int(rng.integers(-len(shp) - 1,
                                                                                     len(shp) + 1))}


add("stack", lambda m, *xs, axis: m.stack(list(xs), axis), _stack_make, grad=(0, 1, 2), variants=PLAIN,
    reps=3)
add("unstack", lambda m, *xs, axis: tuple(m.unstack(m.stack(list(xs), axis), axis=axis)), _stack_make,
    grad=(0, 1, 2), variants=PLAIN, reps=2)


def _split_make(rng, kind, dt):
    rank = int(rng.integers(1, 4))
    shp = shape(rng, rank, 1, 5)
    axis = int(rng.integers(-rank, rank))
    n = shp[axis]
    if rng.random() < 0.5:
        cut = sorted(rng.integers(0, n + 1, 2).tolist())
        sizes: Any = [cut[0], cut[1] - cut[0], n - cut[1]]
    else:
        sizes = [d for d in (1, 2, 3, 4, 5) if n % d == 0][-1]
    return [floats(rng, shp, dt, kind)], {"sizes": sizes, "axis": axis}


add("split", lambda m, x, sizes, axis: tuple(m.split(x, sizes, axis)), _split_make, grad=(0,),
    variants=PLAIN, reps=4)


def _transpose_make(rng, kind, dt):
    rank = int(rng.integers(0, 5))
    return [floats(rng, shape(rng, rank, 1, 3), dt, kind)], {"perm": rng.permutation(rank).tolist()}


add("transpose", lambda m, x, perm: m.transpose(x, perm), _transpose_make, grad=(0,), variants=PLAIN,
    reps=3)


def _strided_make(rng, kind, dt):
    rank = int(rng.integers(1, 4))
    shp = shape(rng, rank, 1, 5)
    begin = [int(rng.integers(-s - 1, s + 2)) for s in shp]
    end = [int(rng.integers(-s - 1, s + 2)) for s in shp]
    strides = [int(rng.choice([-2, -1, 1, 2, 3])) for _ in shp]
    masks = {k: int(rng.integers(0, 2 ** rank)) for k in ("begin_mask", "end_mask")}
    shrink = int(rng.integers(0, 2 ** rank)) if rng.random() < 0.3 else 0
    for i in range(rank):
        if shrink >> i & 1:
            begin[i] = int(rng.integers(-shp[i], shp[i]))
            end[i], strides[i] = begin[i] + 1, 1
    return [floats(rng, shp, dt, kind)], {"begin": begin, "end": end, "strides": strides,
                                          "shrink_axis_mask": shrink, **masks}


add("strided_slice", lambda m, x, **p: m.strided_slice(x, **p), _strided_make, grad=(0,),
    variants=(("normal", F64),), reps=12)


def _getitem_make(rng, kind, dt):
    return [floats(rng, [3, 4, 2], dt, kind)], {"k": int(rng.integers(0, 6))}


GETITEMS = [lambda x: x[1:, ::-2], lambda x: x[..., 0], lambda x: x[None, -1, :, None],
            lambda x: x[::2, 1:3, ::-1], lambda x: x[-5:5, -1:-4:-1], lambda x: x[:, 3:1]]
add("getitem", lambda m, x, k: GETITEMS[k](x), _getitem_make, grad=(0,), variants=(("normal", F64),),
    reps=6)


def _boolean_mask_make(rng, kind, dt):
    rank = int(rng.integers(1, 4))
    shp = shape(rng, rank, 1, 4)
    axis = int(rng.integers(0, rank))
    mdims = int(rng.integers(1, rank - axis + 1))
    return [floats(rng, shp, dt, kind), rng.random(shp[axis:axis + mdims]) < 0.5], {"axis": axis}


add("boolean_mask", lambda m, x, mask, axis: m.boolean_mask(x, mask, axis=axis), _boolean_mask_make,
    grad=(0,), variants=PLAIN, reps=4)


def _seq_mask_make(rng, kind, dt):
    return [ints(rng, shape(rng, int(rng.integers(0, 3)), 1, 3), 0, 5)], {
        "maxlen": int(rng.integers(0, 6)) if rng.random() < 0.6 else None}


add("sequence_mask", lambda m, n, maxlen: m.sequence_mask(n, maxlen), _seq_mask_make,
    variants=(("normal", "int32"),), reps=4)


def _one_hot_make(rng, kind, dt):
    rank = int(rng.integers(0, 3))
    depth = int(rng.integers(0, 4))
    return [ints(rng, shape(rng, rank, 1, 3), -2, depth + 2)], {
        "depth": depth, "axis": int(rng.integers(-1, rank + 1)), "on": float(rng.choice([1.0, 2.5])),
        "off": float(rng.choice([0.0, -1.0]))}


add("one_hot", lambda m, i, depth, axis, on, off: m.one_hot(i, depth, on, off, axis=axis,
                                                             dtype="float64"),
    _one_hot_make, variants=(("normal", "int32"),), reps=6)


def _sort_make(rng, kind, dt):
    rank = int(rng.integers(1, 3))
    return [floats(rng, shape(rng, rank, 1, 5), dt, kind)], {
        "axis": int(rng.integers(-rank, rank)), "direction": str(rng.choice(["ASCENDING", "DESCENDING"]))}


add("sort", lambda m, x, axis, direction: m.sort(x, axis, direction), _sort_make, grad=(0,), reps=3)
add("argsort", lambda m, x, axis, direction: m.argsort(x, axis, direction, stable=True), _sort_make,
    reps=3)


def _searchsorted_make(rng, kind, dt):
    batch = shape(rng, int(rng.integers(0, 2)), 1, 3)
    seq = np.sort(floats(rng, batch + [int(rng.integers(1, 6))], dt, "ties"), axis=-1)
    return [seq, floats(rng, batch + [int(rng.integers(0, 5))], dt, "ties")], {
        "side": str(rng.choice(["left", "right"]))}


add("searchsorted", lambda m, s, v, side: m.searchsorted(s, v, side=side), _searchsorted_make,
    variants=PLAIN, reps=4)


def _bincount_make(rng, kind, dt):
    n = int(rng.integers(0, 8))
    return [ints(rng, [n], 0, 6), floats(rng, [n], dt, kind)], {
        "minlength": int(rng.integers(0, 8)) if rng.random() < 0.5 else None,
        "maxlength": int(rng.integers(0, 8)) if rng.random() < 0.3 else None,
        "weighted": bool(rng.random() < 0.5)}


add("bincount", lambda m, a, w, minlength, maxlength, weighted: m.math.bincount(
    a, weights=w if weighted else None, minlength=minlength, maxlength=maxlength,
    dtype=w.dtype if weighted else "int32"), _bincount_make, variants=PLAIN, reps=5)


def _hist_make(rng, kind, dt):
    return [floats(rng, [int(rng.integers(0, 12))], dt, kind) * 2], {
        "lo": float(rng.choice([-3.0, -1.0, 0.0])), "hi": float(rng.choice([1.0, 2.5, 4.0])),
        "nbins": int(rng.integers(1, 7))}


add("histogram_fixed_width", lambda m, v, lo, hi, nbins: m.histogram_fixed_width(
    v, m.constant([lo, hi], v.dtype), nbins=nbins), _hist_make,
    variants=(("normal", F64), ("ties", F64), ("edge", F32), ("normal", F32)), reps=3)


def _dyn_part_make(rng, kind, dt):
    n = int(rng.integers(0, 6))
    return [floats(rng, [n, 2], dt, kind), ints(rng, [n], 0, 3)], {}


add("dynamic_partition", lambda m, x, p: tuple(m.dynamic_partition(x, p, 3)), _dyn_part_make, grad=(0,),
    variants=PLAIN, reps=3)


def _dyn_stitch_make(rng, kind, dt):
    n = int(rng.integers(1, 6))
    perm = rng.permutation(n)
    cut = int(rng.integers(0, n + 1))
    i0, i1 = perm[:cut], perm[cut:]
    if len(i0) and rng.random() < 0.5:
        i1 = np.concatenate([i1, i0[:1]])     # a repeated index: the later one wins
    return [i0.astype(np.int32), i1.astype(np.int32), floats(rng, [len(i0), 2], dt, kind),
            floats(rng, [len(i1), 2], dt, kind)], {}


add("dynamic_stitch", lambda m, i0, i1, d0, d1: m.dynamic_stitch([i0, i1], [d0, d1]), _dyn_stitch_make,
    grad=(2, 3), variants=PLAIN, reps=4)


def _clip_make(rng, kind, dt):
    sx, sb = broadcast_pair(rng, 2)
    x = floats(rng, [max(a, b) for a, b in zip(sx, sb + [1] * (2 - len(sb)))] if len(sb) == 2 else sx, dt,
               kind)
    lo = floats(rng, [1] * len(x.shape) if rng.random() < 0.5 else list(x.shape), dt, "ties") - 1
    return [x, lo, lo + 1.5], {}


add("clip_by_value", lambda m, x, lo, hi: m.clip_by_value(x, lo, hi), _clip_make, grad=(0, 1, 2),
    variants=(("normal", F64), ("ties", F64), ("edge", F64), ("normal", F32)), reps=4)


def _clip_norm_make(rng, kind, dt):
    rank = int(rng.integers(1, 3))
    x = floats(rng, shape(rng, rank, 1, 4), dt, kind)
    if rng.random() < 0.2:
        x[...] = 0
    ax = None if rng.random() < 0.5 else [int(rng.integers(-rank, rank))]
    return [x, np.asarray(float(rng.choice([0.5, 2.0, 100.0])), dt)], {"axes": ax}


add("clip_by_norm", lambda m, x, c, axes: m.clip_by_norm(x, c, axes), _clip_norm_make, grad=(0, 1),
    variants=(("normal", F64), ("ties", F64), ("edge", F64), ("normal", F32)), reps=5)


def _global_norm_make(rng, kind, dt):
    xs = [floats(rng, shape(rng, int(rng.integers(0, 3)), 1, 3), dt, kind) for _ in range(3)]
    return xs + [np.asarray(float(rng.choice([0.5, 3.0, 100.0])), dt)], {}


add("clip_by_global_norm", lambda m, a, b, c, n: (lambda ts, g: (*ts, g))(
    *m.clip_by_global_norm([a, b, c], n)), _global_norm_make, grad=(0, 1, 2, 3),
    variants=(("normal", F64), ("edge", F64), ("normal", F32)), reps=4)


def _range_make(rng, kind, dt):
    fl = dt.startswith("float")
    start = int(rng.integers(-5, 5)) + (0.5 if fl and rng.random() < 0.5 else 0)
    delta = int(rng.choice([-2, -1, 1, 2, 3])) * (0.75 if fl and rng.random() < .5 else 1)
    limit = int(rng.integers(-6, 7))
    if (limit - start) * delta < 0 and rng.random() < 0.7:
        delta = -delta
    return [], {"start": start, "limit": limit, "delta": delta, "dt": dt}


add("range", lambda m, start, limit, delta, dt: m.range(m.constant(start, dt), m.constant(limit, dt),
                                                         m.constant(delta, dt)),
    _range_make, variants=(("normal", F64), ("normal", F32), ("normal", "int32")), reps=4)


def _linspace_make(rng, kind, dt):
    return [floats(rng, [2], dt, kind), floats(rng, [2], dt, kind)], {"num": int(rng.integers(1, 6)),
                                                                      "axis": int(rng.integers(-2, 2))}


add("linspace", lambda m, a, b, num, axis: m.linspace(a, b, num, axis=axis), _linspace_make, grad=(0, 1),
    variants=PLAIN, reps=4)


def _misc_shape_make(rng, kind, dt):
    return [floats(rng, [int(rng.integers(1, 4)), 1, int(rng.integers(1, 4))], dt, kind)], {
        "axis": int(rng.integers(-4, 4))}


add("expand_squeeze", lambda m, x, axis: (m.expand_dims(x, axis), m.squeeze(x), m.squeeze(x, [1]),
                                           m.reshape(x, [-1]), m.broadcast_to(x, [2] + list(x.shape))),
    _misc_shape_make, grad=(0,), variants=PLAIN, reps=2)
add("add_n", lambda m, x, axis: m.math.add_n([x, x * 2.0, m.ones_like(x)]), _misc_shape_make, grad=(0,),
    variants=PLAIN, reps=2)
add("meshgrid", lambda m, x, axis: tuple(m.meshgrid(x[0, 0], x[:, 0, 0], indexing="ij" if axis < 0
                                                    else "xy")),
    _misc_shape_make, grad=(0,), variants=PLAIN, reps=3)


def _embedding_make(rng, kind, dt):
    v, d = int(rng.integers(1, 6)), int(rng.integers(1, 4))
    return [floats(rng, [v, d], dt, kind), ints(rng, shape(rng, int(rng.integers(0, 3)), 0, 3), 0, v)], {
        "max_norm": float(rng.choice([0.5, 2.0])) if rng.random() < 0.4 else None}


add("embedding_lookup", lambda m, p, i, max_norm: m.nn.embedding_lookup(p, i, max_norm=max_norm),
    _embedding_make, grad=(0,), variants=PLAIN, reps=4)


# ---------------------------------------------------------------- float16 and bfloat16

F16_UNARY = ("abs", "negative", "square", "sqrt", "exp", "log", "tanh", "sigmoid", "relu", "softplus",
             "elu", "floor", "round", "reciprocal")
for _name in F16_UNARY:
    add(f"f16.{_name}", UNARY[_name][0], _unary(UNARY[_name][1]),
        variants=(("normal", "float16"), ("edge", "float16")))
for _name in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_logsumexp"):
    add(f"f16.{_name}", REDUCE[_name], _reduce_make(), variants=(("normal", "float16"),), reps=4)
add("f16.softmax", lambda m, x, axis: m.nn.softmax(x, axis=axis), _logits_make,
    variants=(("normal", "float16"),), reps=3)
add("f16.matmul", lambda m, a, b, **p: m.linalg.matmul(a, b, **p), _matmul_make,
    variants=(("normal", "float16"),), reps=3)


def _round_trip_make(rng, kind, dt):
    x = np.concatenate([rng.normal(size=8) * 10.0 ** rng.integers(-6, 6, 8),
                        [65504.0, 65520.0, 65519.9, 70000.0, 6e-8, 3e-8, 1e-40, 3.4e38, -3.4e38,
                         1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -9, 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -12,
                         np.nan, np.inf, -0.0]]).astype(dt)
    return [x], {"via": str(rng.choice(["float16", "bfloat16"]))}


add("cast.half_round_trip", lambda m, x, via: m.cast(m.cast(x, via), x.dtype), _round_trip_make,
    variants=(("normal", F32), ("normal", F64)), reps=4)


# ---------------------------------------------------------------- more edges

def _inf_rows_make(rng, kind, dt):
    x = floats(rng, [4, 3], dt, "normal")
    x[0] = -np.inf
    x[1, 0] = np.inf
    x[2, :2] = -np.inf
    x[3, 1] = np.nan
    return [x], {"axis": int(rng.choice([-1, 0]))}


add("nn.softmax_inf_rows", lambda m, x, axis: m.nn.softmax(x, axis=axis), _inf_rows_make, grad=(0,),
    variants=PLAIN, reps=2)
add("nn.log_softmax_inf_rows", lambda m, x, axis: m.nn.log_softmax(x, axis=axis), _inf_rows_make,
    grad=(0,), variants=PLAIN, reps=2)
add("reduce_logsumexp_inf_rows", lambda m, x, axis: m.math.reduce_logsumexp(x, axis=axis), _inf_rows_make,
    grad=(0,), variants=PLAIN, reps=2)


# ---------------------------------------------------------------- regressions: bugs this comparison
# found, on values chosen to hit them (tests/test_review_tf_differential.py replays them)

def _fixed(*arrays):
    """A maker that gives `arrays` (cast to the variant's float dtype)."""
    def make(rng, kind, dt):
        return [np.asarray(a, dt if np.asarray(a).dtype.kind == "f" else np.asarray(a).dtype)
                for a in arrays], {}
    return make


_DIV_X = [1.0, 1.0, 0.3, 7.0, 0.2, -0.2, -2.0, 2.0, 5.0, -5.0, 0.0, -0.0, 3.0, 1.0, -1.0, 0.5, np.nan,
          np.inf, -3.5, 3.5]
_DIV_Y = [0.1, 0.2, 0.1, 0.7, -np.inf, np.inf, 1.0, -1.0, 0.0, 0.0, 3.0, -3.0, -1.5, 1 / 3, 0.1,
          -0.1, 2.0, 2.0, 0.5, -0.5]
add("regress.floordiv_floormod", lambda m, x, y: (m.math.floordiv(x, y), m.math.floormod(x, y), x // y,
                                                  x % y, m.math.mod(x, y)),
    _fixed(_DIV_X, _DIV_Y), variants=PLAIN, reps=1)
add("regress.in_top_k_non_finite_row", lambda m, t, p: (m.math.in_top_k(t, p, 2), m.math.in_top_k(t, p, 3)),
    _fixed(np.array([0, 0, 0, 0, 2, 1], np.int32),
           [[1.0, np.inf, 0.0], [1.0, np.nan, 0.0], [1.0, -np.inf, 0.0], [1.0, 2.0, 0.0],
            [np.inf, 0.0, 5.0], [0.0, np.inf, 1.0]]),
    variants=(("normal", F32),), reps=1)
add("regress.polygamma_poles", lambda m, n, x: m.math.polygamma(n, x),
    _fixed([1.0, 2.0, 3.0, 1.0, 2.0, 4.0, 0.0, 2.0, 3.0], [-1.0, -1.0, 0.0, 0.0, 0.0, -3.0, -2.0, 0.5, -2.5]),
    variants=PLAIN, reps=1)


# ---------------------------------------------------------------- larger shapes: the cpu target's
# vector loops, their remainders and its threaded kernels

def _big_unary(domain="real"):
    def make(rng, kind, dt):
        return [floats(rng, [int(rng.integers(2, 4)), int(rng.integers(17, 70))], dt, kind, domain)], {}
    return make


for _name in ("exp", "tanh", "sigmoid", "erf", "log1p", "softplus", "gelu", "elu", "log", "sqrt", "round",
              "floor", "sign", "relu6", "log_sigmoid", "expm1", "lgamma", "erfinv"):
    add(f"big.{_name}", UNARY[_name][0], _big_unary(UNARY[_name][1]), grad=(0,), reps=1,
        variants=(("normal", F64), ("edge", F64), ("normal", F32), ("edge", F32)))


def _big_binary(dom_a="real", dom_b="real"):
    def make(rng, kind, dt):
        n = int(rng.integers(17, 70))
        shp = [[3, n], [1, n], [3, 1], [n], []][int(rng.integers(0, 5))]
        return [floats(rng, [3, n], dt, kind, dom_a), floats(rng, shp, dt, kind, dom_b)], {}
    return make


for _name in ("add", "maximum", "minimum", "divide", "floordiv", "floormod", "pow", "atan2",
              "squared_difference", "less", "xlogy"):
    _fn, _da, _db = BINARY[_name]
    add(f"big.{_name}", _fn, _big_binary(_da, _db), grad=(0, 1), reps=1,
        variants=(("normal", F64), ("edge", F64), ("normal", F32), ("edge", F32)))


def _big_reduce_make(rng, kind, dt):
    shp = [int(rng.integers(2, 5)), int(rng.integers(17, 40)), int(rng.integers(1, 4))]
    return [floats(rng, shp, dt, kind)], {"axis": _axes(rng, 3), "keepdims": bool(rng.random() < 0.5)}


for _name in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_logsumexp",
              "reduce_variance"):
    add(f"big.{_name}", REDUCE[_name], _big_reduce_make, grad=(0,), reps=3,
        variants=(("normal", F64), ("edge", F64), ("normal", F32)))


def _big_logits_make(rng, kind, dt):
    return [floats(rng, [int(rng.integers(2, 9)), int(rng.integers(17, 40))], dt, kind)], {
        "axis": int(rng.choice([-1, 0]))}


add("big.softmax", lambda m, x, axis: m.nn.softmax(x, axis=axis), _big_logits_make, grad=(0,), reps=2,
    variants=(("normal", F64), ("normal", F32), ("edge", F32)))
add("big.log_softmax", lambda m, x, axis: m.nn.log_softmax(x, axis=axis), _big_logits_make, grad=(0,),
    reps=2, variants=(("normal", F64), ("normal", F32)))
add("big.argmax", lambda m, x, axis: m.math.argmax(x, axis), _big_logits_make, reps=2,
    variants=(("normal", F64), ("ties", F32)))
add("big.cumsum", lambda m, x, axis: m.math.cumsum(x, axis), _big_logits_make, grad=(0,), reps=2,
    variants=(("normal", F64), ("normal", F32)))
add("big.top_k", lambda m, x, axis: tuple(m.math.top_k(x, 5)), _big_logits_make, grad=(0,), reps=2,
    variants=(("normal", F64), ("ties", F64), ("normal", F32)))
add("big.cast_int", lambda m, x, axis: (m.cast(x * 50, "int32"),
                                        m.cast(m.minimum(m.abs(x) * 50, 255), "uint8"),
                                        m.cast(x, "bool")), _big_logits_make, reps=2,
    variants=(("normal", F64), ("edge", F32)))


def _big_matmul_make(rng, kind, dt):
    m_, k_, n_ = int(rng.integers(9, 40)), int(rng.integers(9, 40)), int(rng.integers(9, 40))
    ta, tb = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
    batch = [int(rng.integers(1, 3))] if rng.random() < 0.5 else []
    a = batch + ([k_, m_] if ta else [m_, k_])
    b = ([k_, n_] if not tb else [n_, k_])
    return [floats(rng, a, dt, kind), floats(rng, b, dt, kind)], {"transpose_a": ta, "transpose_b": tb}


add("big.matmul", lambda m, a, b, **p: m.linalg.matmul(a, b, **p), _big_matmul_make, grad=(0, 1), reps=3,
    variants=(("normal", F64), ("normal", F32)))


def _big_conv_make(rng, kind, dt):
    h, w = int(rng.integers(7, 14)), int(rng.integers(7, 14))
    cin, cout = int(rng.integers(1, 9)), int(rng.integers(1, 9))
    k = int(rng.integers(1, 4))
    s = int(rng.integers(1, 3))
    return [floats(rng, [int(rng.integers(1, 3)), h, w, cin], dt, kind), floats(rng, [k, k, cin, cout], dt,
                                                                                 kind)], {
        "strides": s, "padding": str(rng.choice(["SAME", "VALID"]))}


add("big.conv2d", lambda m, x, w, **p: m.nn.conv2d(x, w, **p), _big_conv_make, grad=(0, 1), reps=3,
    variants=(("normal", F64), ("normal", F32)))
add("big.depthwise_conv2d", lambda m, x, w, strides, padding: m.nn.depthwise_conv2d(
    x, w[..., :1], [1, strides, strides, 1], padding), _big_conv_make, grad=(0, 1), reps=3,
    variants=(("normal", F64), ("normal", F32)))
add("big.max_pool", lambda m, x, w, strides, padding: m.nn.max_pool2d(x, 3, strides, padding),
    _big_conv_make, grad=(0,), reps=2, variants=(("normal", F64), ("ties", F64), ("normal", F32)))
add("big.avg_pool", lambda m, x, w, strides, padding: m.nn.avg_pool2d(x, 3, strides, padding),
    _big_conv_make, grad=(0,), reps=2, variants=(("normal", F64), ("normal", F32)))
add("big.bias_add_relu", lambda m, x, w, strides, padding: m.nn.relu(m.nn.bias_add(x, x[0, 0, 0])),
    _big_conv_make, grad=(0,), reps=2, variants=(("normal", F64), ("normal", F32)))
add("big.fused_batch_norm", lambda m, x, w, strides, padding: tuple(m.compat.v1.nn.fused_batch_norm(
    x, x[0, 0, 0] * 0 + 1.5, x[0, 0, 0] * 0 - 0.5, epsilon=1e-3)[:1]), _big_conv_make, reps=2,
    variants=(("normal", F32),))


# ================================================================ the comparison (both sides)

def flatten(out: Any) -> list[Any]:
    """A case's results as a flat list (tuples, lists and namedtuples opened)."""
    if isinstance(out, (tuple, list)):
        return [leaf for o in out for leaf in flatten(o)]
    return [out]


def differentiated(case: Case, args: list[np.ndarray], dt: str) -> list[int]:
    """The arguments differentiated in this draw: the case's, when they are float64."""
    if dt not in case.grad_dtypes:
        return []
    return [i for i in case.grad if i < len(args) and args[i].dtype == np.dtype(dt)]


def draws(case: Case):
    """(key, kind, dtype, args, params) of every draw of `case`, the same in both Pythons."""
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    for rep in range(case.reps):
        for vi, (kind, dt) in enumerate(case.variants):
            args, params = case.make(rng, kind, dt)
            yield f"{rep}_{vi}", kind, dt, args, params




def read_draws(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The draws stored in `path`, by (case, key): each {meta, args, outs, ws, grads}. A
    recording has one case per file (entries ``KEY/FIELD``, the case is the file's name); a
    packed fixture (`pack_draws`) many."""
    data = np.load(path, allow_pickle=False)
    if "index" in data.files:
        return _unpack(data)
    fields: dict[tuple[str, str], dict[str, np.ndarray]] = {}
    for entry in data.files:
        where, field = entry.rsplit("/", 1)
        fields.setdefault((path.stem, where), {})[field] = data[entry]
    found = {}
    for ident, f in fields.items():
        meta = json.loads(str(f["meta"]))
        n_out = meta.get("n_out", 0)
        found[ident] = {
            "meta": meta,
            "args": [f[f"in{i}"] for i in range(meta["n_args"])],
            "outs": [f[f"out{j}"] for j in range(n_out)],
            "ws": {j: f[f"w{j}"] for j in range(n_out) if f"w{j}" in f},
            "grads": {i: f[f"g{i}"] for i in meta.get("grad", []) if f"g{i}" in f},
        }
    return found


def pack_draws(draws_: dict[tuple[str, str], dict[str, Any]], path: Path) -> None:
    """Write draws (as `read_draws` gives them) into one compressed file: a JSON index
    and one flat array per dtype (an npz entry per array would cost more than the data)."""
    flat: dict[str, list[np.ndarray]] = {}
    sizes: dict[str, int] = {}
    index = []

    def put(a: np.ndarray) -> list:
        a = np.asarray(a)
        dt = a.dtype.str
        flat.setdefault(dt, []).append(a.ravel())
        at = sizes.get(dt, 0)
        sizes[dt] = at + a.size
        return [dt, list(a.shape), at]

    for (case, key), d in draws_.items():
        entry: dict[str, Any] = {"case": case, "key": key, "meta": d["meta"]}
        entry["args"] = [put(a) for a in d["args"]]
        entry["outs"] = [put(a) for a in d["outs"]]
        entry["ws"] = {str(j): put(a) for j, a in d["ws"].items()}
        entry["grads"] = {str(i): put(a) for i, a in d["grads"].items()}
        index.append(entry)
    arrays = {f"dtype{n}": np.concatenate(parts) for n, parts in enumerate(flat.values())}
    dtypes = {dt: f"dtype{n}" for n, dt in enumerate(flat)}
    np.savez_compressed(path, index=np.asarray(json.dumps({"dtypes": dtypes, "draws": index})),
                        **arrays)


def _unpack(data) -> dict[tuple[str, str], dict[str, Any]]:
    index = json.loads(str(data["index"]))
    pools = {dt: data[name] for dt, name in index["dtypes"].items()}

    def get(ref: list) -> np.ndarray:
        dt, shape, at = ref
        n = int(np.prod(shape, dtype=np.int64))
        return pools[dt][at:at + n].reshape(shape).copy()

    found = {}
    for e in index["draws"]:
        found[(e["case"], e["key"])] = {
            "meta": e["meta"],
            "args": [get(r) for r in e["args"]],
            "outs": [get(r) for r in e["outs"]],
            "ws": {int(j): get(r) for j, r in e["ws"].items()},
            "grads": {int(i): get(r) for i, r in e["grads"].items()},
        }
    return found


def run_tw(tw, case: Case, draw: dict, mode: str, with_grads: bool = True):
    """(outs, grads{i: array or None}) of `case` in tensorweave, in `mode` ('eager',
    'reference', 'cpu'); grads are those the recording differentiated."""
    meta = draw["meta"]
    params, ws = meta["params"], draw["ws"]
    gidx = meta.get("grad", []) if with_grads else []
    none_at: list[int] = []

    def step(*xs):
        with tw.GradientTape(persistent=True) as tape:
            for i in gidx:
                tape.watch(xs[i])
            outs = flatten(case.fn(tw, *xs, **params))
            outs = [tw.convert_to_tensor(o) for o in outs]
            loss = tw.constant(0.0, tw.float64)
            for j, o in enumerate(outs):
                if j in ws:
                    loss = loss + tw.reduce_sum(tw.cast(o, tw.float64) * ws[j])
        grads = tape.gradient(loss, [xs[i] for i in gidx]) if gidx else []
        none_at.clear()
        kept = []
        for i, g in zip(gidx, grads):
            if g is None:
                none_at.append(i)
            else:
                kept.append(tw.convert_to_tensor(g))
        return outs, kept

    if mode == "eager":
        outs, kept = step(*[tw.constant(a) for a in draw["args"]])
    else:
        outs, kept = tw.compile(step, target=mode)(*draw["args"])
    outs = [np.asarray(o) for o in outs]
    kept = iter([np.asarray(g) for g in kept])
    grads = {i: (None if i in none_at else next(kept)) for i in gidx}
    return outs, grads


def tolerance(dtype: np.dtype, grad: bool) -> tuple[float, float]:
    """(rtol, atol relative to the expected values' magnitude) for one comparison."""
    if dtype == np.float64:
        return (1e-7, 1e-9) if grad else (1e-8, 1e-10)
    if dtype == np.float32:
        return (1e-4, 1e-5) if grad else (3e-5, 3e-6)
    return (3e-3, 3e-3)


def diff(got: np.ndarray, want: np.ndarray, grad: bool = False) -> str | None:
    """Why `got` is not `want`, or None."""
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != TF {want.dtype}"
    if got.shape != want.shape:
        return f"shape {got.shape} != TF {want.shape}"
    if want.dtype.kind not in "fc":
        bad = got != want
        if bad.any():
            i = tuple(np.argwhere(bad)[0])
            return f"{int(bad.sum())} of {bad.size} differ, e.g. at {i}: {got[i]!r} vs TF {want[i]!r}"
        return None
    g, w = got.astype(np.float64), want.astype(np.float64)
    rtol, atol = tolerance(want.dtype, grad)
    finite = np.isfinite(w)
    scale = max(1.0, float(np.abs(w[finite]).max())) if finite.any() else 1.0
    same_special = (np.isnan(g) & np.isnan(w)) | ((g == w) & ~finite)
    close = np.isclose(g, w, rtol=rtol, atol=atol * scale) | same_special
    if not close.all():
        i = tuple(np.argwhere(~close)[0])
        with np.errstate(invalid="ignore"):
            worst = np.nanmax(np.abs(np.where(close, 0, g - w)), initial=0.0)
        return (f"{int((~close).sum())} of {close.size} differ, e.g. at {i}: {got[i]!r} vs TF {want[i]!r}"
                f" (max |diff| {worst:.3g})")
    zeros = (g == 0) & (w == 0) & (np.signbit(g) != np.signbit(w))
    if zeros.any() and not grad:    # a gradient's zero sign is the accident of W's sign
        i = tuple(np.argwhere(zeros)[0])
        return f"signed zero: {int(zeros.sum())} differ, e.g. at {i}: {got[i]!r} vs TF {want[i]!r}"
    return None


def compare_draw(tw, case: Case, draw: dict, mode: str) -> list[str]:
    """Every difference of one draw in one mode."""
    meta = draw["meta"]
    if mode == "eager" and not case.eager:
        return []
    try:
        # where TensorFlow's gradient raised, only the results are compared
        outs, grads = run_tw(tw, case, draw, mode, with_grads="grad_error" not in meta)
    except Exception as e:  # noqa: BLE001 - an error is a result to compare
        msg = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        if "error" in meta:
            return []
        return [f"tw raises, TF does not: {msg}"]
    if "error" in meta:
        return [f"TF raises, tw does not: TF {meta['error'][:200]}"]
    found = []
    if len(outs) != len(draw["outs"]):
        return [f"{len(outs)} results, TF {len(draw['outs'])}"]
    for j, (g, w) in enumerate(zip(outs, draw["outs"])):
        d = diff(g, w)
        if d:
            found.append(f"out{j}: {d}")
    if "grad_error" in meta:   # TF 2.21 has no gradient here (a bug or a missing kernel)
        return found
    # gradients through a float32 result (TF1's losses compute in float32) are float32-exact
    low = (any(o.dtype.kind == "f" and o.dtype.itemsize < 8 for o in draw["outs"])
           or case.name.startswith("losses."))   # TF1's losses compute in float32
    for i in meta.get("grad", []):
        g, w = grads.get(i), draw["grads"].get(i)
        if (g is None) != (w is None):
            # None and zeros mean the same to a user adding gradients up; note only if
            # the given one is not all zeros
            given = g if g is not None else w
            if np.any(given != 0):
                found.append(f"grad{i}: {'tw None' if g is None else 'TF None'}, other nonzero")
            continue
        if g is not None:
            d = diff(g.astype(np.float32) if low else g, w.astype(np.float32) if low else w, grad=True)
            if d:
                found.append(f"grad{i}: {d}")
    return found


# ---------------------------------------------------------------- documented differences

def _has(pred: Callable[[np.ndarray], np.ndarray], arg: int = 0) -> Callable[[dict], bool]:
    """A draw test: argument `arg` (a float array) has an element where `pred` holds."""
    def test(draw: dict) -> bool:
        a = draw["args"][arg]
        return a.dtype.kind == "f" and bool(np.any(pred(a)))
    return test


def _only(*kinds: str) -> Callable[[list[str]], bool]:
    """A findings test: every finding mentions one of `kinds`."""
    return lambda found: all(any(k in f for k in kinds) for f in found)


_ANY = lambda found: True  # noqa: E731
_NAN, _INF = _has(np.isnan), _has(np.isinf)
_EMPTY = lambda draw: draw["args"][0].size == 0  # noqa: E731
_SIGNED_ZERO = _only("signed zero")
_DILATED_SAME = lambda d: d["meta"]["params"]["padding"] == "SAME" and max(  # noqa: E731
    d["meta"]["params"]["dilations"]) > 1
_BACKWARD_RANGE = lambda d: (lambda p: (p["limit"] - p["start"]) * p["delta"] < 0)(  # noqa: E731
    d["meta"]["params"])
_WIDE_BAND = lambda d: (lambda p, s: p["lo"] > s[-2] or p["hi"] > s[-1])(  # noqa: E731
    d["meta"]["params"], d["args"][0].shape)

# case -> [(draw test, findings test, where docs/api.md says it)]: a difference of these
# draws is TensorFlow's behaviour tensorweave deliberately does not copy
DOCUMENTED: dict[str, list[tuple[Callable[[dict], bool], Callable[[list[str]], bool], str]]] = {
    **{c: [(_NAN, _ANY, "NaN in argmax/argmin/sort/top_k")]
       for c in ("argmax", "argmin", "argsort", "sort", "top_k", "big.argmax", "big.top_k")},
    **{c: [(_NAN, _ANY, "max pools propagate NaN")] for c in ("nn.max_pool1d", "nn.max_pool2d",
                                                               "big.max_pool")},
    "nn.max_pool3d": [(_NAN, _ANY, "max pools propagate NaN"),
                      (lambda d: True, _only("grad0"), "max_pool3d gradient of ties")],
    **{c: [(_EMPTY, _only("tw raises"), "reduce_max/min over no elements")]
       for c in ("reduce.reduce_max", "reduce.reduce_min", "reduce.int_reduce_max",
                 "reduce.int_reduce_min")},
    "range": [(_BACKWARD_RANGE, _only("TF raises"), "a range away from its limit is empty")],
    "linalg.band_part": [(_WIDE_BAND, _only("TF raises"), "band_part beyond the matrix")],
    "nn.pool_dilated": [(_DILATED_SAME, _only("TF raises"), "pool with dilations and SAME")],
    "tensor_scatter_nd_update": [(lambda d: True, _only("grad"), "gradient of overwritten updates")],
    "dynamic_stitch": [(lambda d: True, _only("grad"), "gradient of overwritten data")],
    "cumprod": [(_has(lambda a: a == 0), _only("grad"), "cumprod gradient at 0")],
    **{c: [(lambda d: d["meta"]["dtype"] == F64, _ANY, "TF's float64 gelu/leaky_relu")]
       for c in ("unary.gelu", "unary.gelu_tanh", "big.gelu", "unary.leaky_relu")},
    **{c: [(_INF, _only("out0"), "TF's erf(+-inf) is NaN")] for c in ("unary.erf", "big.erf")},
    "unary.softsign": [(_INF, _only("grad0"), "softsign at +-inf")],
    **{c: [(_NAN, _only("grad0"), "elu gradient at NaN")] for c in ("unary.elu", "big.elu")},
    **{c: [(lambda d: True, _SIGNED_ZERO, "signs of zero")]
       for c in ("nn.softmax_cross_entropy_with_logits", "nn.sparse_softmax_cross_entropy_with_logits",
                 "big.xlogy", "binary.xlogy", "f16.relu", "big.reduce_sum", "reduce.reduce_sum")},
}
DOCUMENTED["nn.softmax_cross_entropy_with_logits"].append(
    (lambda d: d["meta"]["params"]["axis"] < -1, _only("TF raises"), "TF's negative axis bug"))


def documented(case: str, draw: dict, found: list[str]) -> str | None:
    """Which documented difference (docs/api.md, "Against TensorFlow 2.21") explains the
    findings of `draw`, or None."""
    for applies, explains, why in DOCUMENTED.get(case, []):
        if applies(draw) and explains(found):
            return why
    return None
