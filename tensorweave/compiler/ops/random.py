"""Random-number ops, counter-based so that every target draws the same numbers.

The generator is Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as
1, 2, 3", SC11; the generator TensorFlow and JAX use). It is a pure function
``philox(counter: 4 x u32, key: 2 x u32) -> 4 x u32``, so any element of any draw can be
computed independently, in any order, on any device. A code generator must reproduce
the recipe below exactly; the uniform and integer results are then bit-identical, and
the normal ones identical up to the last-place rounding of the target's ``log``/``cos``/
``sin`` (evaluated in float64 and rounded once to float32, which hides it in practice).

Philox4x32-10 (Random123's ``philox4x32_R(10, ctr, key)``)::

    M0, M1 = 0xD2511F53, 0xCD9E8D57          # multipliers
    W0, W1 = 0x9E3779B9, 0xBB67AE85          # key bumps (Weyl sequence)
    repeat 10 times:
        p0 = M0 * c0 (64-bit product); p1 = M1 * c2
        c0, c1, c2, c3 = hi(p1) ^ c1 ^ k0, lo(p1), hi(p0) ^ c3 ^ k1, lo(p0)
        k0, k1 = k0 + W0, k1 + W1            # mod 2**32
    output c0, c1, c2, c3

Keys and counters of an op (attributes ``seed``, ``seed2`` taken modulo 2**64; ``n`` is
the node's call index, 0 on its first execution in an executable, then 1, 2, ...)::

    key           = (lo32(seed), hi32(seed))
    counter(j)    = (j, n mod 2**32, lo32(seed2), hi32(seed2))   # j = block index < 2**32
    word[4*j + l] = philox(counter(j), key)[l]                   # the op's word stream

Turning words into values (element ``i`` of the row-major output):

- bits per uniform: f16 10, bf16 7, f32 23, f64 52 (the mantissa width, so every
  value is exact and < 1). Types up to 32 bits use one word per uniform,
  ``b = word[i] >> (32 - bits)``; f64 uses two,
  ``b = ((word[2i] << 32) | word[2i+1]) >> 12``.
- RandomUniform: ``b * 2**-bits``, in [0, 1).
- RandomNormal (Box-Muller; f16 and bf16 use the f32 recipe, then round): for
  elements ``2k`` and ``2k+1`` take the uniforms' bits ``a = b(2k)``, ``c = b(2k+1)``,
  ``u1 = (a + 1) * 2**-bits`` in (0, 1], ``u2 = c * 2**-bits``,
  ``r = sqrt(-2 ln u1)``, ``z(2k) = r cos(2 pi u2)``, ``z(2k+1) = r sin(2 pi u2)``; for an
  odd count the last sine is dropped (its words are still consumed).
- TruncatedNormal (inverse CDF restricted to [-2, 2], f16/bf16 as f32):
  ``u = b(i) * 2**-bits``, ``x = (2u - 1) * erf(sqrt 2)`` (so ``|x| < 0.9545``),
  ``z = clip(sqrt(2) * erfinv(x), -2, 2)`` with Giles' single-precision ``erfinv``
  polynomial, whose central branch covers all such ``x``:
  ``w = -ln((1 - x)(1 + x)) - 2.5``, ``p = Horner(GILES_CENTRAL, w)``, ``erfinv = p x``.
- RandomUniformInt: range ``r = maxval - minval``; 64-bit dtypes combine two words as
  above (``(word[2i] << 32) | word[2i+1]``), others use ``word[i]``; the value is
  ``minval + (word mod r)`` (TensorFlow's recipe, with its small modulo bias).

Float math is done in float64 and rounded to float32 (f16/bf16: float64 -> float32 ->
target), or kept for float64. Scaling to ``[minval, maxval)`` or by ``mean``/``stddev``
is done by ordinary ops in the frontend, as in TensorFlow.

The same streams drive Multinomial (`categorical_values`: inverse CDF with float64
uniforms), RandomShuffle (`shuffle_permutation`: argsort of 64-bit keys) and the
``Stateless*`` ops, which take their seed as a tensor ``[a, b]`` and draw what the
stateful op draws on its first call with ``seed = a, seed2 = b`` (so `tw.random.Generator`,
which keeps ``[key, counter]`` in a variable, reads a fresh stream for every draw).
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import DTypeError, InvalidArgumentError, ShapeError
from ..dtypes import as_dtype, float32, int64
from ..registry import attr, def_op
from ..types import TensorType
from .common import expect_tensor

PHILOX_M = (0xD2511F53, 0xCD9E8D57)
PHILOX_W = (0x9E3779B9, 0xBB67AE85)
PHILOX_ROUNDS = 10
_MASK32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)

# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), single-precision
# central branch (w < 5), highest-degree coefficient first.
GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
ERF_SQRT2 = math.erf(math.sqrt(2.0))  # P(|z| < 2) for a standard normal
TRUNCATION = 2.0

# mantissa bits used per uniform, by dtype name
UNIFORM_BITS = {"f16": 10, "bf16": 7, "f32": 23, "f64": 52}


# ---------------------------------------------------------------------------- Philox

def philox4x32(counter: np.ndarray, key: tuple[int, int] | np.ndarray,
               rounds: int = PHILOX_ROUNDS) -> np.ndarray:
    """Philox4x32-`rounds` of `counter` (array ``[..., 4]`` of uint32) under `key`
    (two uint32); returns uint32 ``[..., 4]``. Vectorized over the leading axes."""
    c = np.asarray(counter, dtype=np.uint32).astype(np.uint64)
    c0, c1, c2, c3 = (c[..., i] for i in range(4))
    k0, k1 = (int(k) & 0xFFFFFFFF for k in np.asarray(key).reshape(2))
    m0, m1 = np.uint64(PHILOX_M[0]), np.uint64(PHILOX_M[1])
    for _ in range(rounds):
        p0 = m0 * c0  # < 2**64: both factors are < 2**32
        p1 = m1 * c2
        c0, c1, c2, c3 = ((p1 >> _SHIFT32) ^ c1 ^ np.uint64(k0), p1 & _MASK32,
                          (p0 >> _SHIFT32) ^ c3 ^ np.uint64(k1), p0 & _MASK32)
        k0 = (k0 + PHILOX_W[0]) & 0xFFFFFFFF
        k1 = (k1 + PHILOX_W[1]) & 0xFFFFFFFF
    return np.stack([c0, c1, c2, c3], axis=-1).astype(np.uint32)


def random_words(count: int, seed: int, seed2: int, call_index: int) -> np.ndarray:
    """The first `count` uint32 words of an op's stream (see the module docstring)."""
    blocks = -(-count // 4)
    if blocks > 2**32:
        raise InvalidArgumentError(f"cannot draw {count} random words in one op (limit 2**34)")
    s, s2 = seed % 2**64, seed2 % 2**64
    counter = np.empty((blocks, 4), np.uint32)
    counter[:, 0] = np.arange(blocks, dtype=np.uint64).astype(np.uint32)
    counter[:, 1] = call_index % 2**32
    counter[:, 2] = s2 & 0xFFFFFFFF
    counter[:, 3] = s2 >> 32
    return philox4x32(counter, (s & 0xFFFFFFFF, s >> 32)).reshape(-1)[:count]


def uniform_bits(count: int, bits: int, seed: int, seed2: int, call_index: int) -> np.ndarray:
    """`count` integers of `bits` bits (uint64): one word each, or two for bits > 32."""
    if bits <= 32:
        words = random_words(count, seed, seed2, call_index).astype(np.uint64)
        return words >> np.uint64(32 - bits)
    words = random_words(2 * count, seed, seed2, call_index).astype(np.uint64)
    wide = (words[0::2] << _SHIFT32) | words[1::2]
    return wide >> np.uint64(64 - bits)


# ---------------------------------------------------------------------- distributions

def _float_bits(dtype_name: str, exact_uniform: bool) -> int:
    """Uniforms use the dtype's mantissa; normals compute f16/bf16 through f32."""
    if exact_uniform:
        return UNIFORM_BITS[dtype_name]
    return 52 if dtype_name == "f64" else 23


def _round_to(z: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float64 -> dtype, through float32 for types narrower than float64."""
    if dtype == np.float64:
        return z
    return z.astype(np.float32).astype(dtype)


def uniform_values(count: int, dtype: np.dtype, dtype_name: str, seed: int, seed2: int,
                   call_index: int) -> np.ndarray:
    """RandomUniform's flat output: floats in [0, 1)."""
    bits = _float_bits(dtype_name, True)
    b = uniform_bits(count, bits, seed, seed2, call_index)
    return (b.astype(np.float64) * 2.0 ** -bits).astype(dtype)  # exact in `dtype`


def normal_values(count: int, dtype: np.dtype, dtype_name: str, seed: int, seed2: int,
                  call_index: int) -> np.ndarray:
    """RandomNormal's flat output: standard normals by Box-Muller."""
    bits = _float_bits(dtype_name, False)
    pairs = -(-count // 2)
    b = uniform_bits(2 * pairs, bits, seed, seed2, call_index).astype(np.float64)
    u1 = (b[0::2] + 1.0) * 2.0 ** -bits
    u2 = b[1::2] * 2.0 ** -bits
    r = np.sqrt(-2.0 * np.log(u1))
    z = np.empty(2 * pairs, np.float64)
    z[0::2] = r * np.cos(2.0 * np.pi * u2)
    z[1::2] = r * np.sin(2.0 * np.pi * u2)
    return _round_to(z[:count], dtype)


def erfinv_giles(x: np.ndarray) -> np.ndarray:
    """Giles' polynomial erfinv, central branch only (valid for |x| < 0.9966)."""
    w = -np.log((1.0 - x) * (1.0 + x)) - 2.5
    p = np.zeros_like(x)
    for coef in GILES_CENTRAL:
        p = p * w + coef
    return p * x


def truncated_normal_values(count: int, dtype: np.dtype, dtype_name: str, seed: int,
                            seed2: int, call_index: int) -> np.ndarray:
    """TruncatedNormal's flat output: standard normals restricted to [-2, 2]."""
    bits = _float_bits(dtype_name, False)
    u = uniform_bits(count, bits, seed, seed2, call_index).astype(np.float64) * 2.0 ** -bits
    x = (2.0 * u - 1.0) * ERF_SQRT2
    z = np.clip(math.sqrt(2.0) * erfinv_giles(x), -TRUNCATION, TRUNCATION)
    return _round_to(z, dtype)


def uniform_int_values(count: int, dtype: np.dtype, minval: int, maxval: int, seed: int,
                       seed2: int, call_index: int) -> np.ndarray:
    """RandomUniformInt's flat output: integers in [minval, maxval)."""
    bits = 64 if dtype.itemsize == 8 else 32
    words = uniform_bits(count, bits, seed, seed2, call_index)
    span = maxval - minval
    if span < 2**64:
        offsets = words % np.uint64(span)
    else:  # only int64's full range; wrap-around arithmetic below gives the right result
        offsets = words
    # minval + offset in 64-bit two's complement, then narrowed (the result fits).
    values = (offsets + np.uint64(minval % 2**64)).view(np.int64)
    return values.astype(dtype)


# ----------------------------------------------------------------------- declarations

_SEED_ATTRS = {"seed": attr("int", 0), "seed2": attr("int", 0)}


def _static_shape(shape) -> tuple[int, ...]:
    if any(d is None for d in shape):
        raise ShapeError(f"the shape of a random tensor must be fully known, got "
                         f"{list(shape)}")
    return tuple(shape)


def _float_infer(*, shape, dtype, seed, seed2):
    if not dtype.is_floating:
        raise DTypeError(f"dtype must be a floating-point type, got {dtype.ir_name}")
    return TensorType(dtype, _static_shape(shape))


def _declare(name: str, sampler, doc: str):
    op = def_op(name, [], {"shape": attr("shape"), "dtype": attr("dtype", float32),
                           **_SEED_ATTRS}, stateful=True, side_effects=False, doc=doc)
    op.infer(_float_infer)

    @op.kernel("reference", context=True)
    def _kernel(ctx, *, shape, dtype, seed, seed2):
        count = math.prod(shape)
        flat = sampler(count, dtype.np, dtype.ir_name, seed, seed2, ctx.next_call_index())
        return flat.reshape(shape)

    return op


RandomUniform = _declare("RandomUniform", uniform_values,
                         "Uniform floats in [0, 1) (Philox4x32-10; see the module docstring).")
RandomNormal = _declare("RandomNormal", normal_values,
                        "Standard normal floats (Philox4x32-10 and Box-Muller).")
TruncatedNormal = _declare("TruncatedNormal", truncated_normal_values,
                           "Standard normal floats restricted to [-2, 2] (inverse CDF).")

RandomUniformInt = def_op(
    "RandomUniformInt", [], {"shape": attr("shape"), "dtype": attr("dtype"),
                             "minval": attr("int"), "maxval": attr("int"), **_SEED_ATTRS},
    stateful=True, side_effects=False,
    doc="Uniform integers in [minval, maxval) (Philox4x32-10; see the module docstring).")


@RandomUniformInt.infer
def _uniform_int_infer(*, shape, dtype, minval, maxval, seed, seed2):
    if not dtype.is_integer:
        raise DTypeError(f"dtype must be an integer type, got {dtype.ir_name}")
    info = np.iinfo(dtype.np)
    if not info.min <= minval < maxval <= info.max + 1:
        raise InvalidArgumentError(f"need minval < maxval within the range of {dtype.ir_name}, "
                                   f"got minval={minval}, maxval={maxval}")
    return TensorType(dtype, _static_shape(shape))


@RandomUniformInt.kernel("reference", context=True)
def _uniform_int_kernel(ctx, *, shape, dtype, minval, maxval, seed, seed2):
    flat = uniform_int_values(math.prod(shape), dtype.np, minval, maxval, seed, seed2,
                              ctx.next_call_index())
    return flat.reshape(shape)


# -------------------------------------------------------- shapes known only at run time

RandomUniformLike = def_op(
    "RandomUniformLike", ["like"],
    {"noise_shape": attr("ints", None), "dtype": attr("dtype", None), **_SEED_ATTRS},
    stateful=True, side_effects=False,
    doc="Uniform floats in [0, 1) of `like`'s run-time shape, or of `noise_shape` where a "
        "-1 in it takes `like`'s dim (dropout with an unknown batch size). The numbers "
        "are RandomUniform's for the resulting shape and the same seeds.")


def noise_dims(like_shape: tuple, noise_shape: tuple[int, ...] | None) -> tuple:
    """RandomUniformLike's output shape: `noise_shape` with -1 replaced by `like`'s dim."""
    if noise_shape is None:
        return tuple(like_shape)
    if len(noise_shape) != len(like_shape):
        raise ShapeError(f"noise_shape {list(noise_shape)} has rank {len(noise_shape)}, the "
                         f"input has rank {len(like_shape)}")
    return tuple(d if n == -1 else n for n, d in zip(noise_shape, like_shape))


@RandomUniformLike.infer
def _uniform_like_infer(like, *, noise_shape, dtype, seed, seed2):
    like = expect_tensor(like, "like")
    dtype = like.dtype if dtype is None else dtype
    if not dtype.is_floating:
        raise DTypeError(f"dtype must be a floating-point type, got {dtype.ir_name}")
    if noise_shape is not None and any(n < -1 for n in noise_shape):
        raise ShapeError(f"noise_shape must hold sizes >= 0 or -1, got {list(noise_shape)}")
    return TensorType(dtype, noise_dims(like.shape, noise_shape))


@RandomUniformLike.kernel("reference", context=True)
def _uniform_like_kernel(ctx, like, *, noise_shape, dtype, seed, seed2):
    dtype = as_dtype(like.dtype) if dtype is None else dtype
    shape = noise_dims(like.shape, noise_shape)
    flat = uniform_values(math.prod(shape), dtype.np, dtype.ir_name, seed, seed2,
                          ctx.next_call_index())
    return flat.reshape(shape)


# ------------------------------------------------------------------ full-range integers

def full_int_values(count: int, dtype: np.dtype, seed: int, seed2: int,
                    call_index: int) -> np.ndarray:
    """Integers over the whole range of `dtype`: the words (two per 64-bit value, as
    RandomUniformInt) reinterpreted as `dtype`'s bits."""
    bits = 64 if dtype.itemsize == 8 else 32
    words = uniform_bits(count, bits, seed, seed2, call_index)
    if bits == 64:
        return words.view(np.int64).astype(dtype) if dtype.kind == "i" else words.astype(dtype)
    narrow = words.astype(np.uint32)
    if dtype.itemsize == 4:
        return narrow.view(np.int32 if dtype.kind == "i" else np.uint32).astype(dtype)
    return narrow.astype(dtype)  # 8/16-bit types keep the low bits (wrap-around)


# ---------------------------------------------------------------------- categorical

def categorical_values(logits: np.ndarray, num_samples: int, dtype: np.dtype, seed: int,
                       seed2: int, call_index: int) -> np.ndarray:
    """Multinomial's output ``[batch, num_samples]``: class ``k`` of row ``r`` with
    probability ``softmax(logits[r])[k]``, by inverting the row's CDF.

    Recipe: ``p = exp(logits - max(finite logits))`` per row (in float64; as in
    TensorFlow's CPU kernel only finite logits count: -inf, +inf and NaN have p = 0 and
    are never drawn), ``c = cumsum(p)``; sample ``s`` of row ``r`` takes the float64
    uniform ``u`` of element ``r * num_samples + s`` of the op's word stream (52 bits
    from two words, as RandomUniform's f64), and is the first class ``k`` with
    ``c[k] > u * c[-1]`` (the last class when no logit of the row is finite)."""
    batch, classes = logits.shape
    u = uniform_values(batch * num_samples, np.dtype(np.float64), "f64", seed, seed2,
                       call_index).reshape(batch, num_samples)
    lg = logits.astype(np.float64)
    finite = np.isfinite(lg)
    top = np.where(finite, lg, -np.inf).max(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", over="ignore"):
        p = np.where(finite, np.exp(lg - top), 0.0)
    cdf = np.cumsum(p, axis=1)
    out = np.empty((batch, num_samples), np.int64)
    for r in range(batch):
        out[r] = np.searchsorted(cdf[r], u[r] * cdf[r, -1], side="right")
    return np.minimum(out, classes - 1).astype(dtype)


def _categorical_infer(logits, *, num_samples, output_dtype):
    logits = expect_tensor(logits, "logits")
    if not logits.dtype.is_floating:
        raise DTypeError(f"logits must be floating-point, got {logits.dtype.ir_name}")
    if logits.rank != 2:
        raise ShapeError(f"logits must be a matrix [batch_size, num_classes], got rank "
                         f"{logits.rank} ({list(logits.shape)})")
    if logits.shape[1] == 0:
        raise InvalidArgumentError("logits must have at least one class, got 0 columns")
    if num_samples < 0:
        raise InvalidArgumentError(f"num_samples must be >= 0, got {num_samples}")
    if output_dtype.ir_name not in ("i32", "i64"):
        raise DTypeError(f"output_dtype must be int32 or int64, got {output_dtype.ir_name}")
    return TensorType(output_dtype, (logits.shape[0], num_samples))


def _check_logits_values(logits: np.ndarray) -> None:
    if logits.shape[0] and logits.shape[1] == 0:
        raise InvalidArgumentError("logits must have at least one class, got 0 columns")


Multinomial = def_op(
    "Multinomial", ["logits"],
    {"num_samples": attr("int"), "output_dtype": attr("dtype", int64), **_SEED_ATTRS},
    stateful=True, side_effects=False,
    doc="Draws from the categorical distributions whose unnormalized log-probabilities "
        "are the rows of `logits` (see `categorical_values`).")


@Multinomial.infer
def _multinomial_infer(logits, *, num_samples, output_dtype, seed, seed2):
    return _categorical_infer(logits, num_samples=num_samples, output_dtype=output_dtype)


@Multinomial.kernel("reference", context=True)
def _multinomial_kernel(ctx, logits, *, num_samples, output_dtype, seed, seed2):
    _check_logits_values(logits)
    return categorical_values(logits, num_samples, output_dtype.np, seed, seed2,
                              ctx.next_call_index())


# --------------------------------------------------------------------------- shuffle

def shuffle_permutation(n: int, seed: int, seed2: int, call_index: int) -> np.ndarray:
    """RandomShuffle's permutation of ``range(n)``: a stable argsort of n 64-bit keys
    (two words each, as RandomUniformInt's 64-bit values); every permutation is equally
    likely up to the (2**-64-scale) chance of tied keys."""
    keys = uniform_bits(n, 64, seed, seed2, call_index)
    return np.argsort(keys, kind="stable")


RandomShuffle = def_op(
    "RandomShuffle", ["value"], dict(_SEED_ATTRS), stateful=True, side_effects=False,
    doc="`value` with its first dimension randomly permuted (see `shuffle_permutation`).")


@RandomShuffle.infer
def _shuffle_infer(value, *, seed, seed2):
    value = expect_tensor(value, "value")
    if value.rank == 0:
        raise ShapeError("value must have at least one dimension to shuffle, got a scalar")
    return value


@RandomShuffle.kernel("reference", context=True)
def _shuffle_kernel(ctx, value, *, seed, seed2):
    perm = shuffle_permutation(value.shape[0], seed, seed2, ctx.next_call_index())
    return value[perm]


# -------------------------------------------------------------------------- stateless
#
# The stateless ops take their seed as a tensor ``[a, b]`` (int32 or int64, values taken
# modulo 2**64) and draw exactly what the stateful op draws on its first call with
# ``seed = a, seed2 = b`` (call index 0): the same Philox keys and counters, so the
# recipe above says what every target must produce. They are pure functions of their
# inputs (not stateful), so passes may fold or merge them.

def _seed_infer(seed) -> None:
    seed = expect_tensor(seed, "seed")
    if seed.dtype.ir_name not in ("i32", "i64"):
        raise DTypeError(f"seed must be int32 or int64, got {seed.dtype.ir_name}")
    if seed.rank != 1 or seed.shape[0] not in (None, 2):
        raise ShapeError(f"seed must have shape [2], got {list(seed.shape)}")


def seed_pair(seed: np.ndarray) -> tuple[int, int]:
    """The (seed, seed2) of a stateless op's seed tensor."""
    if seed.shape != (2,):
        raise InvalidArgumentError(f"seed must have shape [2], got {list(seed.shape)}")
    return int(seed[0]) % 2**64, int(seed[1]) % 2**64


def _declare_stateless(name: str, sampler, doc: str):
    op = def_op(name, ["seed"], {"shape": attr("shape"), "dtype": attr("dtype", float32)},
                doc=doc)

    @op.infer
    def _infer(seed, *, shape, dtype):
        _seed_infer(seed)
        return _float_infer(shape=shape, dtype=dtype, seed=0, seed2=0)

    @op.kernel("reference")
    def _kernel(seed, *, shape, dtype):
        s1, s2 = seed_pair(seed)
        return sampler(math.prod(shape), dtype.np, dtype.ir_name, s1, s2, 0).reshape(shape)

    return op


StatelessRandomUniform = _declare_stateless(
    "StatelessRandomUniform", uniform_values,
    "Uniform floats in [0, 1), a pure function of the seed tensor [a, b] (RandomUniform's "
    "first draw with seed=a, seed2=b).")
StatelessRandomNormal = _declare_stateless(
    "StatelessRandomNormal", normal_values,
    "Standard normal floats, a pure function of the seed tensor (RandomNormal's recipe).")
StatelessTruncatedNormal = _declare_stateless(
    "StatelessTruncatedNormal", truncated_normal_values,
    "Standard normals restricted to [-2, 2], a pure function of the seed tensor "
    "(TruncatedNormal's recipe).")

StatelessRandomUniformInt = def_op(
    "StatelessRandomUniformInt", ["seed"],
    {"shape": attr("shape"), "dtype": attr("dtype"), "minval": attr("int"),
     "maxval": attr("int")},
    doc="Uniform integers in [minval, maxval), a pure function of the seed tensor "
        "(RandomUniformInt's recipe).")


@StatelessRandomUniformInt.infer
def _stateless_int_infer(seed, *, shape, dtype, minval, maxval):
    _seed_infer(seed)
    return _uniform_int_infer(shape=shape, dtype=dtype, minval=minval, maxval=maxval, seed=0,
                              seed2=0)


@StatelessRandomUniformInt.kernel("reference")
def _stateless_int_kernel(seed, *, shape, dtype, minval, maxval):
    s1, s2 = seed_pair(seed)
    return uniform_int_values(math.prod(shape), dtype.np, minval, maxval, s1, s2,
                              0).reshape(shape)


StatelessRandomUniformFullInt = def_op(
    "StatelessRandomUniformFullInt", ["seed"], {"shape": attr("shape"), "dtype": attr("dtype")},
    doc="Integers over the whole range of `dtype`, a pure function of the seed tensor "
        "(see `full_int_values`).")


@StatelessRandomUniformFullInt.infer
def _stateless_full_int_infer(seed, *, shape, dtype):
    _seed_infer(seed)
    if not dtype.is_integer:
        raise DTypeError(f"dtype must be an integer type, got {dtype.ir_name}")
    return TensorType(dtype, _static_shape(shape))


@StatelessRandomUniformFullInt.kernel("reference")
def _stateless_full_int_kernel(seed, *, shape, dtype):
    s1, s2 = seed_pair(seed)
    return full_int_values(math.prod(shape), dtype.np, s1, s2, 0).reshape(shape)


StatelessMultinomial = def_op(
    "StatelessMultinomial", ["logits", "seed"],
    {"num_samples": attr("int"), "output_dtype": attr("dtype", int64)},
    doc="Multinomial's draws as a pure function of the seed tensor (its first call with "
        "seed=a, seed2=b).")


@StatelessMultinomial.infer
def _stateless_multinomial_infer(logits, seed, *, num_samples, output_dtype):
    _seed_infer(seed)
    return _categorical_infer(logits, num_samples=num_samples, output_dtype=output_dtype)


@StatelessMultinomial.kernel("reference")
def _stateless_multinomial_kernel(logits, seed, *, num_samples, output_dtype):
    _check_logits_values(logits)
    s1, s2 = seed_pair(seed)
    return categorical_values(logits, num_samples, output_dtype.np, s1, s2, 0)
