"""Random tensors (``tw.random.*``) and TensorFlow's seed rules.

Every random op carries two seeds, `seed` and `seed2`, fixed when the op is created;
the numbers it draws are a pure function of those seeds, the element index and how many
times that node has run (see `tensorweave.compiler.ops.random`). The seeds follow
TensorFlow's `get_seed`:

- a global seed (`set_seed`) and an op seed: ``(global, op)``;
- a global seed only: ``(global, n)`` where ``n`` counts the random ops created so far
  without an op seed in this graph (eagerly: since the last `set_seed`), so a program
  traced twice draws the same numbers;
- an op seed only: ``(DEFAULT_GRAPH_SEED, op)``;
- neither: two random seeds drawn when the op is created (traced), so each run of the
  Python program differs.

A graph-level seed (a ``seed`` attribute on the graph being built, as ``tf.compat.v1``
graphs have) takes the place of the global seed.
"""

from __future__ import annotations

import secrets
import threading
import weakref
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from ...compiler.dtypes import DType, as_dtype, float32
from ...compiler.ops.random import UNIFORM_BITS
from ...errors import DTypeError, InvalidArgumentError, UnimplementedError
from ..building import apply_op1, convert_to_tensor, user_location
from ..context import current_builder
from ..tensor import EagerTensor, Tensor
from . import math as _m

DEFAULT_GRAPH_SEED = 87654321

_lock = threading.Lock()
_global_seed: int | None = None
_eager_op_count = 0
_graph_op_counts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

TensorLike = Any


# -------------------------------------------------------------------------------- seeds

def set_seed(seed: int | None) -> None:
    """Set the global random seed (``tf.random.set_seed``).

    Ops created afterwards without their own seed get deterministic seeds derived from
    it; eager random ops restart their sequences, so re-running the same eager code after
    ``set_seed(s)`` draws the same numbers again. ``None`` clears the global seed.
    """
    global _global_seed, _eager_op_count
    with _lock:
        _global_seed = None if seed is None else int(seed)
        _eager_op_count = 0
    _reset_eager_call_counts()


def _reset_eager_call_counts() -> None:
    """Eager random ops count their calls per op name (see building._run_eager); only
    random ops (the stateful ones, categorical, shuffle and the candidate samplers
    included) read those counts, so all of them restart. (A list of the uniform/normal
    ops missed Multinomial, RandomShuffle and CandidateSampler.)"""
    from .. import building
    counters = building._eager_counters
    with counters.lock:
        counters.counts.clear()


def _next_op_count() -> int:
    """The per-graph (or, eagerly, per-`set_seed`) count of ops seeded from the global seed."""
    global _eager_op_count
    builder = current_builder()
    with _lock:
        if builder is None:
            n = _eager_op_count
            _eager_op_count += 1
            return n
        n = _graph_op_counts.get(builder.graph, 0)
        _graph_op_counts[builder.graph] = n + 1
        return n


def _graph_seed() -> int | None:
    builder = current_builder()
    seed = getattr(builder.graph, "seed", None) if builder is not None else None
    return _global_seed if seed is None else int(seed)


def get_seed(op_seed: int | None) -> tuple[int, int]:
    """The (seed, seed2) pair an op created now gets, by TensorFlow's rules (module doc)."""
    global_seed = _graph_seed()
    if global_seed is not None:
        return global_seed, _next_op_count() if op_seed is None else int(op_seed)
    if op_seed is not None:
        return DEFAULT_GRAPH_SEED, int(op_seed)
    return secrets.randbits(63), secrets.randbits(63)


# ------------------------------------------------------------------------------ helpers

def _static_ints(value: Any, what: str) -> list[int]:
    """A value known when the graph is built (list, array, eager or constant tensor)."""
    if isinstance(value, Tensor):
        producer = value.op
        if producer is None or producer.op != "Const":
            raise UnimplementedError(f"{what} must be known when the graph is built (a list "
                                     f"of ints or a constant), got a computed tensor",
                                     location=str(user_location()))
        value = producer.attrs["value"]
    elif isinstance(value, EagerTensor):
        value = value.numpy()
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu" and arr.size:
        raise DTypeError(f"{what} must hold integers, got {value!r}")
    return [int(v) for v in arr.reshape(-1)]


def _shape_attr(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    dims = _static_ints(shape, "shape")
    if any(d < 0 for d in dims):
        raise InvalidArgumentError(f"shape must be non-negative, got {dims}",
                                   location=str(user_location()))
    return tuple(dims)


def _random_op(op: str, shape: Any, dtype: DType, seed: int | None, name: str | None,
               **attrs: Any) -> Tensor:
    seed1, seed2 = get_seed(seed)
    return apply_op1(op, [], {"shape": _shape_attr(shape), "dtype": dtype, "seed": seed1,
                              "seed2": seed2, **attrs}, name=name)


def _is_number(x: Any, value: float) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and float(x) == value


def _as_operand(x: Any, dtype: DType) -> Any:
    """Python numbers stay numbers (they take the tensor's dtype); others become tensors."""
    if isinstance(x, (int, float)):
        return x
    return convert_to_tensor(x, dtype=dtype)


def _affine(z: Tensor, scale: Any, shift: Any, dtype: DType) -> Tensor:
    """``z * scale + shift``, skipping the ops when they would do nothing."""
    if not _is_number(scale, 1.0):
        z = z * _as_operand(scale, dtype)
    if not _is_number(shift, 0.0):
        z = z + _as_operand(shift, dtype)
    return z


# ---------------------------------------------------------------------------- functions

def uniform(shape: Sequence[int] | Any, minval: TensorLike = 0, maxval: TensorLike | None = None,
            dtype: DType | str = float32, seed: int | None = None,
            name: str | None = None) -> Tensor:
    """Uniform values in ``[minval, maxval)`` (``tf.random.uniform``).

    For floating dtypes `maxval` defaults to 1. Integer dtypes need Python-int bounds
    known when the graph is built (``maxval`` is then required).
    """
    dtype = as_dtype(dtype)
    if dtype.is_integer:
        return _uniform_int(shape, minval, maxval, dtype, seed, name)
    if not dtype.is_floating:
        raise DTypeError(f"tw.random.uniform: dtype must be a float or integer type, got "
                         f"{dtype!r}", location=str(user_location()))
    maxval = 1 if maxval is None else maxval
    rnd = _random_op("RandomUniform", shape, dtype, seed, name)
    return _scaled_uniform(rnd, minval, maxval, dtype)


def _scaled_uniform(rnd: Tensor, minval: Any, maxval: Any, dtype: DType) -> Tensor:
    """Uniforms in [0, 1) scaled to [minval, maxval). With Python-number bounds the
    result is clamped below maxval where rounding ``u * span + minval`` can reach it."""
    if isinstance(minval, (int, float)) and isinstance(maxval, (int, float)):
        x = _affine(rnd, maxval - minval, minval, dtype)
        below = _largest_below(minval, maxval, dtype)
        return x if below is None else _m.minimum(x, below)
    lo, hi = convert_to_tensor(minval, dtype=dtype), convert_to_tensor(maxval, dtype=dtype)
    return rnd * (hi - lo) + lo


def _largest_below(minval: float, maxval: float, dtype: DType) -> Any:
    """The largest `dtype` value below maxval when ``u * (maxval - minval) + minval``
    for the largest raw uniform u = 1 - 2**-bits can round up to maxval (rounded once,
    fused, or twice), else None: e.g. bounds (1, 1.5) in float32 give 1.5 - 2**-24, a
    tie that rounds to 1.5 (TensorFlow's issue 51465). Other bounds keep their graph."""
    t = dtype.np.type
    hi, lo, span = t(maxval), t(minval), t(maxval - minval)
    if not (np.isfinite(float(hi)) and np.isfinite(float(lo)) and float(lo) < float(hi)):
        return None  # (reversed or equal bounds scale as they are, as in TensorFlow)
    below = np.nextafter(hi, t(-np.inf))
    top = t(1.0 - 2.0 ** -UNIFORM_BITS[dtype.ir_name])
    exact = Fraction(float(top)) * Fraction(float(span)) + Fraction(float(lo))
    twice = Fraction(float(t(top * span))) + Fraction(float(lo))
    if max(exact, twice) <= Fraction(float(below)):
        return None  # every rounding of the largest value stays at or below `below`
    return float(below)


def _uniform_int(shape: Any, minval: Any, maxval: Any, dtype: DType, seed: int | None,
                 name: str | None) -> Tensor:
    if maxval is None:
        raise InvalidArgumentError(f"tw.random.uniform: maxval must be given for integer "
                                   f"dtype {dtype!r}", location=str(user_location()))
    (lo,) = _static_ints(minval, "minval")
    (hi,) = _static_ints(maxval, "maxval")
    return _random_op("RandomUniformInt", shape, dtype, seed, name, minval=lo, maxval=hi)


def normal(shape: Sequence[int] | Any, mean: TensorLike = 0.0, stddev: TensorLike = 1.0,
           dtype: DType | str = float32, seed: int | None = None,
           name: str | None = None) -> Tensor:
    """Normally distributed values (``tf.random.normal``)."""
    dtype = as_dtype(dtype)
    z = _random_op("RandomNormal", shape, dtype, seed, name)
    return _affine(z, stddev, mean, dtype)


def truncated_normal(shape: Sequence[int] | Any, mean: TensorLike = 0.0,
                     stddev: TensorLike = 1.0, dtype: DType | str = float32,
                     seed: int | None = None, name: str | None = None) -> Tensor:
    """Normal values restricted to ``mean ± 2 * stddev`` (``tf.random.truncated_normal``;
    drawn by inverting the truncated CDF, not by rejection)."""
    dtype = as_dtype(dtype)
    z = _random_op("TruncatedNormal", shape, dtype, seed, name)
    return _affine(z, stddev, mean, dtype)


def categorical(logits: TensorLike, num_samples: int | Any, dtype: DType | str | None = None,
                seed: int | None = None, name: str | None = None) -> Tensor:
    """Samples ``[batch_size, num_samples]`` of class indices, row ``r`` drawn from the
    categorical distribution ``softmax(logits[r])`` (``tf.random.categorical``; `logits`
    is ``[batch_size, num_classes]``, unnormalized log-probabilities; -inf means
    probability 0). `dtype` is int64 (default) or int32; `num_samples` must be known
    when the graph is built."""
    dtype = as_dtype("int64" if dtype is None else dtype)
    (n,) = _static_ints(num_samples, "num_samples")
    seed1, seed2 = get_seed(seed)
    return apply_op1("Multinomial", [convert_to_tensor(logits)],
                     {"num_samples": n, "output_dtype": dtype, "seed": seed1, "seed2": seed2},
                     name=name)


def shuffle(value: TensorLike, seed: int | None = None, name: str | None = None) -> Tensor:
    """`value` with its first dimension randomly permuted (``tf.random.shuffle``): each
    call (each run of the traced op) draws a new permutation."""
    seed1, seed2 = get_seed(seed)
    return apply_op1("RandomShuffle", [convert_to_tensor(value)],
                     {"seed": seed1, "seed2": seed2}, name=name)


# ---------------------------------------------------------------------- stateless

def _seed_tensor(seed: Any) -> Tensor:
    """A stateless op's ``seed=[a, b]`` as an int32 or int64 tensor of shape [2]."""
    if seed is None:
        raise InvalidArgumentError("stateless random functions need seed=[a, b] (two "
                                   "integers), got None", location=str(user_location()))
    if isinstance(seed, (Tensor, EagerTensor)):
        return seed
    arr = np.asarray(seed)
    if arr.dtype.kind not in "iu":
        raise DTypeError(f"seed must hold two integers, got {seed!r}",
                         location=str(user_location()))
    if arr.dtype != np.int32:
        # Python ints beyond int32 (and unsigned seeds) keep their bits as int64
        arr = arr.astype(np.uint64).view(np.int64) if arr.dtype.kind == "u" else \
            arr.astype(np.int64)
    return convert_to_tensor(arr)


def stateless_uniform(shape: Sequence[int] | Any, seed: Any, minval: TensorLike = 0,
                      maxval: TensorLike | None = None, dtype: DType | str = float32,
                      name: str | None = None, alg: str = "auto_select") -> Tensor:
    """Uniform values in ``[minval, maxval)``, a pure function of `seed` (``[a, b]``,
    int32 or int64) and the shape (``tf.random.stateless_uniform``): the same seed gives
    the same numbers on every target and run. Integer dtypes need Python-int bounds, or
    ``minval=None, maxval=None`` for the dtype's full range."""
    dtype = as_dtype(dtype)
    seed_t = _seed_tensor(seed)
    if dtype.is_integer:
        # the full range: minval=None and maxval=None, as in TensorFlow. minval's default
        # 0 with no maxval is an error there too: `minval=0` must not give negatives.
        if maxval is None and minval is None:
            return apply_op1("StatelessRandomUniformFullInt", [seed_t],
                             {"shape": _shape_attr(shape), "dtype": dtype}, name=name)
        if maxval is None or minval is None:
            missing = "maxval" if maxval is None else "minval"
            raise InvalidArgumentError(f"tw.random.stateless_uniform: {missing} must be given "
                                       f"for integer dtype {dtype!r} (or neither bound: "
                                       f"minval=None, maxval=None for its full range); got "
                                       f"minval={minval!r}, maxval={maxval!r}",
                                       location=str(user_location()))
        (lo,) = _static_ints(minval, "minval")
        (hi,) = _static_ints(maxval, "maxval")
        return apply_op1("StatelessRandomUniformInt", [seed_t],
                         {"shape": _shape_attr(shape), "dtype": dtype, "minval": lo,
                          "maxval": hi}, name=name)
    maxval = 1 if maxval is None else maxval
    rnd = apply_op1("StatelessRandomUniform", [seed_t], {"shape": _shape_attr(shape),
                                                         "dtype": dtype}, name=name)
    return _scaled_uniform(rnd, minval, maxval, dtype)


def stateless_normal(shape: Sequence[int] | Any, seed: Any, mean: TensorLike = 0.0,
                     stddev: TensorLike = 1.0, dtype: DType | str = float32,
                     name: str | None = None, alg: str = "auto_select") -> Tensor:
    """Normal values, a pure function of `seed` (``[a, b]``) and the shape
    (``tf.random.stateless_normal``)."""
    dtype = as_dtype(dtype)
    z = apply_op1("StatelessRandomNormal", [_seed_tensor(seed)],
                  {"shape": _shape_attr(shape), "dtype": dtype}, name=name)
    return _affine(z, stddev, mean, dtype)


def stateless_truncated_normal(shape: Sequence[int] | Any, seed: Any, mean: TensorLike = 0.0,
                               stddev: TensorLike = 1.0, dtype: DType | str = float32,
                               name: str | None = None, alg: str = "auto_select") -> Tensor:
    """Normal values within ``mean ± 2 * stddev``, a pure function of `seed` (``[a, b]``)
    and the shape (``tf.random.stateless_truncated_normal``)."""
    dtype = as_dtype(dtype)
    z = apply_op1("StatelessTruncatedNormal", [_seed_tensor(seed)],
                  {"shape": _shape_attr(shape), "dtype": dtype}, name=name)
    return _affine(z, stddev, mean, dtype)


def stateless_categorical(logits: TensorLike, num_samples: int | Any, seed: Any,
                          dtype: DType | str = "int64", name: str | None = None) -> Tensor:
    """`categorical`'s samples as a pure function of `seed` (``[a, b]``)
    (``tf.random.stateless_categorical``)."""
    (n,) = _static_ints(num_samples, "num_samples")
    return apply_op1("StatelessMultinomial", [convert_to_tensor(logits), _seed_tensor(seed)],
                     {"num_samples": n, "output_dtype": as_dtype(dtype)}, name=name)


# ---------------------------------------------------------------------- Generator

_MASK64 = 2**64 - 1


def _as_int64(value: int) -> int:
    """A 64-bit pattern as the signed int64 that stores it."""
    value &= _MASK64
    return value - 2**64 if value >= 2**63 else value


class Generator:
    """A random-number generator whose state is a variable (``tf.random.Generator``).

    The state is an int64 variable ``[key, counter]``. Every draw reads it, uses it as
    the seed of a stateless op (so the numbers are the Philox stream of that key and
    counter, the same on every target), and adds one to the counter: inside a compiled
    step the state advances at every run, and draws in one step are ordered as written.
    Build generators outside ``@tw.compile`` (they create a variable), use them inside.
    """

    ALGORITHM = "philox"

    def __init__(self, copy_from: Generator | None = None, state: Any = None,
                 alg: str | None = None) -> None:
        from ..variables import Variable
        if alg not in (None, "philox", "auto_select", 1):
            raise InvalidArgumentError(f"tw.random.Generator supports the philox algorithm "
                                       f"only, got alg={alg!r}")
        if copy_from is not None:
            state = copy_from.state.numpy()
        if state is None:
            raise ValueError("tw.random.Generator needs copy_from or state; use "
                             "Generator.from_seed(seed) or "
                             "Generator.from_non_deterministic_state()")
        arr = np.asarray(state)
        if arr.shape != (2,) or arr.dtype.kind not in "iu":
            raise ValueError(f"a Generator's state is two integers [key, counter], got "
                             f"{state!r}")
        arr = np.array([_as_int64(int(v)) for v in arr], np.int64)
        self._state = Variable(arr, trainable=False, name="rng_state")

    @classmethod
    def from_seed(cls, seed: int, alg: str | None = None) -> Generator:
        """A generator whose key is `seed` (any integer, taken modulo 2**64), counter 0."""
        return cls(state=[_as_int64(int(seed)), 0], alg=alg)

    @classmethod
    def from_non_deterministic_state(cls, alg: str | None = None) -> Generator:
        """A generator with a random key (from the operating system)."""
        return cls(state=[_as_int64(secrets.randbits(64)), 0], alg=alg)

    @classmethod
    def from_state(cls, state: Any, alg: str | None = None) -> Generator:
        """A generator starting from `state` (``[key, counter]``)."""
        return cls(state=state, alg=alg)

    @property
    def state(self) -> Any:
        """The int64 variable ``[key, counter]``."""
        return self._state

    @property
    def algorithm(self) -> str:
        """The bit generator: always ``"philox"`` (Philox4x32-10)."""
        return self.ALGORITHM

    def reset_from_seed(self, seed: int) -> None:
        """Restart as `from_seed(seed)` would."""
        self._state.assign(np.array([_as_int64(int(seed)), 0], np.int64))

    def skip(self, delta: int) -> None:
        """Advance the counter by `delta` draws."""
        self._state.assign_add(np.array([0, int(delta)], np.int64), read_value=False)

    def _next_seed(self) -> Any:
        """The state as a stateless seed, then the counter advanced (read first: the
        automatic control dependencies order both on the state variable)."""
        seed = self._state.read_value()
        self._state.assign_add(np.array([0, 1], np.int64), read_value=False)
        return seed

    def normal(self, shape: Sequence[int] | Any, mean: TensorLike = 0.0,
               stddev: TensorLike = 1.0, dtype: DType | str = float32,
               name: str | None = None) -> Tensor:
        """Normal values (advances the state)."""
        return stateless_normal(shape, self._next_seed(), mean, stddev, dtype, name)

    def uniform(self, shape: Sequence[int] | Any, minval: TensorLike = 0,
                maxval: TensorLike | None = None, dtype: DType | str = float32,
                name: str | None = None) -> Tensor:
        """Uniform values in ``[minval, maxval)`` (advances the state); integer dtypes
        need Python-int bounds, or ``minval=None, maxval=None`` for the full range."""
        return stateless_uniform(shape, self._next_seed(), minval, maxval, dtype, name)

    def truncated_normal(self, shape: Sequence[int] | Any, mean: TensorLike = 0.0,
                         stddev: TensorLike = 1.0, dtype: DType | str = float32,
                         name: str | None = None) -> Tensor:
        """Normal values within ``mean ± 2 * stddev`` (advances the state)."""
        return stateless_truncated_normal(shape, self._next_seed(), mean, stddev, dtype, name)

    def uniform_full_int(self, shape: Sequence[int] | Any, dtype: DType | str = "uint64",
                         name: str | None = None) -> Tensor:
        """Integers over the whole range of `dtype` (advances the state)."""
        return apply_op1("StatelessRandomUniformFullInt", [self._next_seed()],
                         {"shape": _shape_attr(shape), "dtype": as_dtype(dtype)}, name=name)

    def make_seeds(self, count: int = 1) -> Tensor:
        """An int64 tensor ``[2, count]`` whose columns are seeds for the stateless
        functions (advances the state)."""
        return self.uniform_full_int([2, int(count)], dtype="int64")

    def split(self, count: int = 1) -> list[Generator]:
        """`count` new generators with keys drawn from this one (advances its state).
        Creates variables, so call it outside ``@tw.compile``."""
        if current_builder() is not None:
            from ...errors import TracingError
            raise TracingError("Generator.split creates generators (variables): call it "
                               "outside @tw.compile functions")
        keys = np.asarray(self.uniform_full_int([int(count)], dtype="int64"))
        return [Generator(state=[int(k), 0]) for k in keys]


_global_generator: Generator | None = None


def get_global_generator() -> Generator:
    """The process-wide generator, created from the global seed (or nondeterministically
    when there is none) on first use."""
    global _global_generator
    if _global_generator is None:
        _global_generator = (Generator.from_non_deterministic_state() if _global_seed is None
                             else Generator.from_seed(_global_seed))
    return _global_generator


def set_global_generator(generator: Generator) -> None:
    """Replace the process-wide generator (functions compiled with the old one keep it)."""
    global _global_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"expected a tw.random.Generator, got {type(generator).__name__}")
    _global_generator = generator


# TensorFlow 1 spellings
random_uniform = uniform
random_normal = normal
set_random_seed = set_seed
random_shuffle = shuffle


def multinomial(logits: TensorLike, num_samples: int | Any, seed: int | None = None,
                name: str | None = None, output_dtype: DType | str | None = None) -> Tensor:
    """TensorFlow 1's ``tf.multinomial`` (``tf.random.multinomial``): `categorical` with
    TF1's argument order, the seed third and the dtype last as `output_dtype`."""
    return categorical(logits, num_samples, dtype=output_dtype, seed=seed, name=name)


__all__ = ["uniform", "normal", "truncated_normal", "set_seed", "get_seed", "random_uniform",
           "random_normal", "set_random_seed", "DEFAULT_GRAPH_SEED", "categorical", "shuffle",
           "stateless_uniform", "stateless_normal", "stateless_truncated_normal",
           "stateless_categorical", "Generator", "get_global_generator",
           "set_global_generator", "random_shuffle", "multinomial"]
