"""Gamma and Poisson samples (``tw.random.gamma``, ``poisson`` and their stateless
versions), as compositions of the counter-based stateless ops, so every target draws
the same numbers.

Both samplers are rejection methods, so an element needs an unbounded number of draws.
Each is a `while_loop` over *rounds*: round ``k`` draws one normal and/or uniform per
element from its own stateless stream (seed ``[key, b + k']``, distinct counters of one
Philox key, so rounds are independent), and elements accepted in earlier rounds keep
their value. The loop ends when every element has been accepted, so the result is
exact, not truncated after a fixed number of tries; elements whose parameter is NaN,
negative or infinite are settled before the loop (never an endless loop, unlike
TensorFlow's Poisson kernel, which spins forever on a negative or NaN rate).

- Gamma(alpha, 1) (as TensorFlow's CPU kernel): Marsaglia and Tsang's method, "A Simple
  Method for Generating Gamma Variables" (2000), in float64, on ``alpha + 1`` when
  ``alpha < 1`` with the boost ``x * u**(1/alpha)``; the result is divided by beta and
  floored at the dtype's smallest normal number (``np.finfo(dtype).tiny``), as
  TensorFlow does. Its gradient with respect to alpha is the implicit reparameterization
  gradient (op ``RandomGammaGrad``), with respect to beta that of the division.
- Poisson(lam) (the methods of TensorFlow's kernel): Knuth's product of uniforms for
  ``lam < 10``, Hormann's transformed rejection with squeeze (PTRS, 1993) otherwise.

The stateful versions draw a fresh ``[key, b]`` pair per run from a stateful
RandomUniformInt node (so `tw.random.set_seed` and op seeds work as for every random op)
and run the stateless composition on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...compiler.dtypes import DType, as_dtype, bool_, float32, float64, int32, int64
from ...errors import DTypeError, ShapeError
from ..building import apply_op1, constant, convert_to_tensor, user_location
from ..context import control_dependencies, name_scope
from . import array as _a
from . import math as _m
from .random import _random_op, _seed_tensor, _shape_attr
from .special import lgamma

TensorLike = Any

_GAMMA_DTYPES = ("float16", "bfloat16", "float32", "float64")
_POISSON_RATE_DTYPES = ("float16", "float32", "float64", "int32", "int64")
_POISSON_OUT_DTYPES = ("float16", "float32", "float64", "int32", "int64")


# ----------------------------------------------------------------------------- helpers

def _error(fn: str, cls: type, message: str) -> Exception:
    loc = user_location()
    return cls(message, op=fn, location=str(loc) if loc else None)


def _check_dtype(fn: str, what: str, dtype: DType, allowed: Sequence[str]) -> None:
    if dtype.name not in allowed:
        raise _error(fn, DTypeError, f"{what} must be one of {', '.join(allowed)}, got "
                                     f"{dtype.name}")


def _static_shape(fn: str, t: Any, what: str) -> tuple[int, ...]:
    dims = tuple(t.shape)
    if None in dims:
        raise _error(fn, ShapeError, f"the shape of {what} must be known when the graph is "
                                     f"built, got {list(dims)}")
    return dims


def _stream_base(seed: Any) -> Any:
    """The int64 ``[key, b]`` every round's seed is made from: the user's seed mixed
    through Philox once, so nearby user seeds give unrelated keys."""
    return apply_op1("StatelessRandomUniformFullInt", [_seed_tensor(seed)],
                     {"shape": (2,), "dtype": int64})


def _round_seed(base: Any, stream: Any) -> Any:
    """The seed of stream number `stream` (an int64 scalar): ``[key, b + stream]``."""
    return base + _a.stack([constant(np.int64(0)), stream])


def _uniform(base: Any, stream: Any, n: int, dtype: DType = float64) -> Any:
    """`n` uniforms in [0, 1) (float64 unless `dtype`) from stream `stream`."""
    return apply_op1("StatelessRandomUniform", [_round_seed(base, stream)],
                     {"shape": (n,), "dtype": dtype})


def _normal(base: Any, stream: Any, n: int) -> Any:
    return apply_op1("StatelessRandomNormal", [_round_seed(base, stream)],
                     {"shape": (n,), "dtype": float64})


def _stateful_seed(seed: int | None, seed2: int | None = None) -> Any:
    """A fresh ``[key, b]`` each run, drawn by a stateful op under the seed rules of
    every random op (`tw.random.set_seed`, op seeds); with `seed2` too, the op's two
    seeds are exactly (seed, seed2), as TensorFlow 1's ops that take both."""
    if seed2 is None:
        return _random_op("RandomUniformInt", [2], int64, seed, None, minval=0, maxval=2**62)
    return apply_op1("RandomUniformInt", [], {"shape": (2,), "dtype": int64, "seed": int(seed),
                                              "seed2": int(seed2), "minval": 0,
                                              "maxval": 2**62})


def _rounds(cond: Any, body: Any, state: tuple) -> tuple:
    from ..control_flow import while_loop
    return while_loop(cond, body, state, back_prop=False)


# ------------------------------------------------------------------------------- gamma

def _gamma_unit(alpha: Any, base: Any) -> Any:
    """Gamma(alpha, 1) samples in float64, one per element of the float64 vector `alpha`
    (module docstring); alpha = 0 gives 0, alpha < 0 or NaN gives NaN, inf gives inf."""
    n = alpha.shape[0]
    valid = _m.logical_and(_m.greater(alpha, 0.0), _m.is_finite(alpha))
    boosted = _m.logical_and(valid, _m.less(alpha, 1.0))
    a = _m.where(valid, _m.where(boosted, alpha + 1.0, alpha), _a.ones_like(alpha))
    d = a - 1.0 / 3.0
    c = 1.0 / _m.sqrt(9.0 * d)

    def cond(k, done, x):
        return _m.reduce_any(_m.logical_not(done))

    def body(k, done, x):
        z = _normal(base, 2 * k + 2, n)
        u = _uniform(base, 2 * k + 3, n)
        t = 1.0 + c * z
        v = t * t * t
        positive = _m.greater(v, 0.0)
        log_v = _m.log(_m.where(positive, v, _a.ones_like(v)))
        accept = _m.logical_and(positive, _m.less(_m.log(u), 0.5 * z * z + d - d * v + d * log_v))
        x = _m.where(_m.logical_and(_m.logical_not(done), accept), d * v, x)
        return k + 1, _m.logical_or(done, accept), x

    _, _, x = _rounds(cond, body, (constant(np.int64(0)), _m.logical_not(valid),
                                   _a.zeros_like(alpha)))
    # alpha < 1: Gamma(alpha + 1) * U**(1/alpha) (stream 1, drawn once)
    u = _uniform(base, constant(np.int64(1)), n)
    safe_alpha = _m.where(boosted, alpha, _a.ones_like(alpha))
    x = _m.where(boosted, x * _m.exp(_m.log(u) / safe_alpha), x)
    invalid = _m.logical_not(_m.greater_equal(alpha, 0.0))  # negative or NaN
    x = _m.where(_m.equal(alpha, 0.0), _a.zeros_like(x), x)
    x = _m.where(_m.equal(alpha, np.inf), _a.zeros_like(x) + np.inf, x)
    return _m.where(invalid, _a.zeros_like(x) + np.nan, x)


def _gamma_sample(fn: str, out_shape: tuple[int, ...], alpha: Any, beta: Any, dtype: DType,
                  base: Any) -> Any:
    """``max(tiny, Gamma(alpha, 1) / beta)`` of shape `out_shape` (alpha and beta already
    broadcast against its trailing dims), differentiable in alpha and beta."""
    from ..custom_gradient import with_gradient
    from ..grads.common import unbroadcast
    size = int(np.prod(out_shape, dtype=np.int64))
    alpha_full = _a.broadcast_to(alpha, list(out_shape)) if tuple(alpha.shape) != out_shape \
        else alpha
    alpha64 = _a.reshape(_m.cast(alpha_full, float64), [size])
    raw = _m.cast(_a.reshape(_gamma_unit(alpha64, base), list(out_shape)), dtype)

    def grad_fn(dy: Any) -> Any:
        partial = apply_op1("RandomGammaGrad", [alpha_full, raw])
        return unbroadcast(dy * partial, alpha)

    (raw,) = with_gradient([alpha], [], [raw], grad_fn, fn)
    tiny = float(np.finfo(dtype.np).tiny)
    return _m.maximum(tiny, raw / beta)


def _gamma_params(fn: str, alpha: Any, beta: Any, dtype: Any) -> tuple[Any, Any, DType]:
    dtype = as_dtype(dtype)
    _check_dtype(fn, "dtype", dtype, _GAMMA_DTYPES)
    alpha = convert_to_tensor(alpha, dtype=dtype)
    beta = convert_to_tensor(1.0 if beta is None else beta, dtype=dtype)
    for what, t in (("alpha", alpha), ("beta", beta)):
        if t.dtype is not dtype:
            raise _error(fn, DTypeError, f"{what} must have dtype {dtype.name} (the dtype "
                                         f"argument), got {t.dtype.name}")
        _static_shape(fn, t, what)
    return alpha, beta, dtype


def _broadcast_params(fn: str, *params: tuple[str, Any]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*[tuple(t.shape) for _, t in params]))
    except ValueError:
        desc = " and ".join(f"{what} {list(t.shape)}" for what, t in params)
        raise _error(fn, ShapeError, f"{desc} cannot be broadcast together") from None


def _fits_trailing(fn: str, shape: tuple[int, ...], params: tuple[int, ...],
                   what: str) -> None:
    """The stateless rule: `params` must broadcast to the trailing dims of `shape`."""
    ok = len(params) <= len(shape)
    if ok:
        try:
            ok = np.broadcast_shapes(params, shape) == shape
        except ValueError:
            ok = False
    if not ok:
        raise _error(fn, ShapeError, f"{what} (shape {list(params)}) must broadcast to the "
                                     f"trailing dimensions of shape {list(shape)}")


def gamma(shape: Sequence[int] | Any, alpha: TensorLike, beta: TensorLike = None,
          dtype: DType | str = float32, seed: int | None = None,
          name: str | None = None) -> Any:
    """Samples of Gamma(alpha, beta) (concentration `alpha`, rate `beta`, default 1) of
    shape ``shape + broadcast(alpha, beta).shape`` (``tf.random.gamma``): each run draws
    new samples. Differentiable with respect to alpha (implicit reparameterization, as
    TensorFlow) and beta. `dtype` is a float type; values are at least
    ``np.finfo(dtype).tiny``, as TensorFlow's."""
    fn = "tw.random.gamma"
    with name_scope(name or "random_gamma"):
        alpha, beta, dtype = _gamma_params(fn, alpha, beta, dtype)
        params = _broadcast_params(fn, ("alpha", alpha), ("beta", beta))
        out_shape = _shape_attr(shape) + params
        return _gamma_sample(fn, out_shape, alpha, beta, dtype,
                             _stream_base(_stateful_seed(seed)))


def stateless_gamma(shape: Sequence[int] | Any, seed: Any, alpha: TensorLike,
                    beta: TensorLike = None, dtype: DType | str = float32,
                    name: str | None = None) -> Any:
    """Gamma(alpha, beta) samples of shape `shape`, a pure function of `seed` (``[a, b]``)
    (``tf.random.stateless_gamma``): alpha and beta broadcast to the trailing dims of
    `shape`. Differentiable as `gamma`."""
    fn = "tw.random.stateless_gamma"
    with name_scope(name or "stateless_random_gamma"):
        alpha, beta, dtype = _gamma_params(fn, alpha, beta, dtype)
        out_shape = _shape_attr(shape)
        _fits_trailing(fn, out_shape, _broadcast_params(fn, ("alpha", alpha), ("beta", beta)),
                       "broadcast(alpha, beta)")
        return _gamma_sample(fn, out_shape, alpha, beta, dtype, _stream_base(seed))


# ----------------------------------------------------------------------------- poisson

def _knuth(lam: Any, settled: Any, base: Any) -> Any:
    """Counts for the elements not `settled` (rates below 10): multiply uniforms until the
    product falls to ``exp(-lam)`` or below; the count is the number of factors before."""
    n = lam.shape[0]
    limit = _m.exp(-lam)

    def cond(k, done, prod, count):
        return _m.reduce_any(_m.logical_not(done))

    def body(k, done, prod, count):
        prod = _m.where(done, prod, prod * _uniform(base, 2 * k + 2, n))
        stop = _m.less_equal(prod, limit)
        more = _m.logical_and(_m.logical_not(done), _m.logical_not(stop))
        return k + 1, _m.logical_or(done, stop), prod, count + _m.cast(more, float64)

    zeros = _a.zeros_like(lam)
    return _rounds(cond, body, (constant(np.int64(0)), settled, _a.ones_like(lam), zeros))[3]


def _ptrs(lam: Any, settled: Any, base: Any) -> Any:
    """Counts for the elements not `settled` (rates of 10 or more): Hormann's PTRS with
    TensorFlow's constants."""
    n = lam.shape[0]
    rate = _m.where(settled, _a.zeros_like(lam) + 10.0, lam)
    log_rate = _m.log(rate)
    b = 0.931 + 2.53 * _m.sqrt(rate)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2.0)

    def cond(k, done, x):
        return _m.reduce_any(_m.logical_not(done))

    def body(k, done, x):
        u = _uniform(base, 2 * k + 2, n) - 0.5
        v = _uniform(base, 2 * k + 3, n)
        us = 0.5 - _m.abs(u)
        kk = _m.floor((2.0 * a / us + b) * u + rate + 0.43)
        quick = _m.logical_and(_m.greater_equal(us, 0.07), _m.less_equal(v, v_r))
        reject = _m.logical_or(_m.less(kk, 0.0),
                               _m.logical_and(_m.less(us, 0.013), _m.greater(v, us)))
        safe_k = _m.maximum(kk, 0.0)
        s = _m.log(v * inv_alpha / (a / (us * us) + b))
        t = -rate + safe_k * log_rate - lgamma(safe_k + 1.0)
        accept = _m.logical_or(quick, _m.logical_and(_m.logical_not(reject),
                                                     _m.less_equal(s, t)))
        x = _m.where(_m.logical_and(_m.logical_not(done), accept), kk, x)
        return k + 1, _m.logical_or(done, accept), x

    return _rounds(cond, body, (constant(np.int64(0)), settled, _a.zeros_like(lam)))[2]


def _poisson_sample(fn: str, out_shape: tuple[int, ...], lam: Any, dtype: DType,
                    base: Any) -> Any:
    size = int(np.prod(out_shape, dtype=np.int64))
    lam_full = _a.broadcast_to(lam, list(out_shape)) if tuple(lam.shape) != out_shape else lam
    rate = _a.reshape(_m.cast(lam_full, float64), [size])
    bad = _m.logical_not(_m.greater_equal(rate, 0.0))   # negative or NaN
    infinite = _m.equal(rate, np.inf)
    small = _m.less(rate, 10.0)
    special = _m.logical_or(bad, infinite)
    counts = _m.where(small, _knuth(rate, _m.logical_or(special, _m.logical_not(small)), base),
                      _ptrs(rate, _m.logical_or(special, small), base))
    counts = _m.where(infinite, _a.zeros_like(counts) + np.inf, counts)
    if dtype.is_integer:
        from .debugging import _assert
        check = _assert(_m.logical_not(_m.reduce_any(special)),
                        f"{fn}: lam must be finite and non-negative for an integer dtype "
                        f"({dtype.name}); NaN, negative or infinite rates have no integer "
                        f"sample", None, [("lam", lam)])
        with control_dependencies([check]):
            counts = _a.identity(counts)
    else:
        counts = _m.where(bad, _a.zeros_like(counts) + np.nan, counts)
    return _a.reshape(_m.cast(counts, dtype), list(out_shape))


def _poisson_params(fn: str, lam: Any, dtype: Any) -> tuple[Any, DType]:
    dtype = as_dtype(dtype)
    _check_dtype(fn, "dtype", dtype, _POISSON_OUT_DTYPES)
    lam = convert_to_tensor(lam)
    if lam.dtype is bool_:
        raise _error(fn, DTypeError, "lam must be a number, got bool")
    _check_dtype(fn, "lam", lam.dtype, _POISSON_RATE_DTYPES)
    _static_shape(fn, lam, "lam")
    return lam, dtype


def poisson(shape: Sequence[int] | Any, lam: TensorLike, dtype: DType | str = float32,
            seed: int | None = None, name: str | None = None) -> Any:
    """Samples of Poisson(lam) of shape ``shape + lam.shape`` (``tf.random.poisson``):
    each run draws new samples. `dtype` is float16/32/64 or int32/64. Not differentiable
    (counts). A NaN or negative rate gives NaN in float dtypes and an
    InvalidArgumentError at run time in integer ones (TensorFlow's kernel never returns)."""
    fn = "tw.random.poisson"
    with name_scope(name or "random_poisson"):
        lam, dtype = _poisson_params(fn, lam, dtype)
        out_shape = _shape_attr(shape) + tuple(lam.shape)
        return _poisson_sample(fn, out_shape, lam, dtype, _stream_base(_stateful_seed(seed)))


def stateless_poisson(shape: Sequence[int] | Any, seed: Any, lam: TensorLike,
                      dtype: DType | str = int32, name: str | None = None) -> Any:
    """Poisson(lam) samples of shape `shape`, a pure function of `seed` (``[a, b]``)
    (``tf.random.stateless_poisson``): lam broadcasts to the trailing dims of `shape`;
    `dtype` defaults to int32, as TensorFlow's."""
    fn = "tw.random.stateless_poisson"
    with name_scope(name or "stateless_random_poisson"):
        lam, dtype = _poisson_params(fn, lam, dtype)
        out_shape = _shape_attr(shape)
        _fits_trailing(fn, out_shape, tuple(lam.shape), "lam")
        return _poisson_sample(fn, out_shape, lam, dtype, _stream_base(seed))


def random_poisson(lam: TensorLike, shape: Sequence[int] | Any, dtype: DType | str = float32,
                   seed: int | None = None, name: str | None = None) -> Any:
    """TensorFlow 1's ``tf.random_poisson`` (``tf.compat.v1.random.poisson``): `poisson`
    with `lam` first."""
    return poisson(shape, lam, dtype=dtype, seed=seed, name=name)


random_gamma = gamma  # TensorFlow 1's tf.random_gamma (the same parameters)

__all__ = ["gamma", "stateless_gamma", "poisson", "stateless_poisson", "random_gamma",
           "random_poisson"]
