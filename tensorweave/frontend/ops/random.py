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
from typing import Any

import numpy as np

from ...compiler.dtypes import DType, as_dtype, float32
from ...compiler.registry import get_op
from ...errors import DTypeError, InvalidArgumentError, UnimplementedError
from ..building import apply_op1, convert_to_tensor, user_location
from ..context import current_builder
from ..tensor import EagerTensor, Tensor

DEFAULT_GRAPH_SEED = 87654321

_lock = threading.Lock()
_global_seed: int | None = None
_eager_op_count = 0
_graph_op_counts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_RANDOM_OPS = ("RandomUniform", "RandomNormal", "TruncatedNormal", "RandomUniformInt",
               "RandomUniformLike")

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
    """Eager random ops count their calls per op name (see building._run_eager)."""
    from .. import building
    counters = building._eager_counters
    with counters.lock:
        for op in _RANDOM_OPS:
            counters.counts.pop(get_op(op).default_name, None)


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
    if isinstance(minval, (int, float)) and isinstance(maxval, (int, float)):
        return _affine(rnd, maxval - minval, minval, dtype)
    lo, hi = convert_to_tensor(minval, dtype=dtype), convert_to_tensor(maxval, dtype=dtype)
    return rnd * (hi - lo) + lo


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


# TensorFlow 1 spellings
random_uniform = uniform
random_normal = normal
set_random_seed = set_seed

__all__ = ["uniform", "normal", "truncated_normal", "set_seed", "get_seed", "random_uniform",
           "random_normal", "set_random_seed", "DEFAULT_GRAPH_SEED"]
