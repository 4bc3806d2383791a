"""Candidate sampling for sampled losses (TensorFlow's ``*CandidateSampler`` ops).

``CandidateSampler`` draws `num_sampled` class ids in ``[0, range_max)`` from a uniform or
a log-uniform (Zipfian: ``P(k) = log((k + 2) / (k + 1)) / log(range_max + 1)``, for
vocabularies sorted by frequency) distribution, with or without repeats (`unique`), and
returns the expected count of every true and every sampled class among the draws (what
a sampled loss subtracts, in log space, to stay unbiased): ``num_sampled * P(k)``, or
for unique draws that took ``n > num_sampled`` tries, ``1 - (1 - P(k))**n``, as
TensorFlow computes them.

Draws use the project's Philox stream (`random.random_words`): reproducible across
targets and thread counts for the same seeds and call index.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import InvalidArgumentError, ShapeError
from ..dtypes import float32, int64
from ..registry import attr, def_op, not_differentiable
from ..types import TensorType
from .common import expect_tensor
from .random import _SEED_ATTRS, random_words

KINDS = ("uniform", "log_uniform")

CandidateSampler = def_op(
    "CandidateSampler", ["true_classes"],
    {"kind": attr("str"), "num_true": attr("int"), "num_sampled": attr("int"),
     "unique": attr("bool"), "range_max": attr("int"), **_SEED_ATTRS},
    stateful=True, side_effects=False,
    doc="Sampled class ids, and the expected counts of the true and sampled classes.")


@CandidateSampler.infer
def _infer(true_classes, *, kind, num_true, num_sampled, unique, range_max, seed, seed2):
    t = expect_tensor(true_classes, "true_classes")
    if kind not in KINDS:
        raise ShapeError(f"unknown sampler {kind!r}; known: {', '.join(KINDS)}")
    if t.rank != 2 or (t.shape[1] is not None and t.shape[1] != num_true):
        raise ShapeError(f"true_classes must be [batch, num_true={num_true}], got {t}")
    if not t.dtype.is_integer:
        raise ShapeError(f"true_classes must be integer class ids, got {t}")
    if range_max < 1 or num_sampled < 1:
        raise ShapeError(f"range_max and num_sampled must be >= 1, got {range_max}, "
                         f"{num_sampled}")
    if unique and num_sampled > range_max:
        raise ShapeError(f"cannot draw {num_sampled} unique classes out of {range_max}")
    return [TensorType(int64, (num_sampled,)), TensorType(float32, t.shape),
            TensorType(float32, (num_sampled,))]


def class_probability(kind: str, ids: np.ndarray, range_max: int) -> np.ndarray:
    """P(k) of each id under the sampler's distribution (float64)."""
    ids = ids.astype(np.float64)
    if kind == "uniform":
        return np.full(ids.shape, 1.0 / range_max)
    return np.log((ids + 2.0) / (ids + 1.0)) / math.log(range_max + 1.0)


def _draw(kind: str, u: np.ndarray, range_max: int) -> np.ndarray:
    if kind == "uniform":
        return np.minimum((u * range_max).astype(np.int64), range_max - 1)
    value = np.floor(np.exp(u * math.log(range_max + 1.0))).astype(np.int64) - 1
    return np.clip(value, 0, range_max - 1)


def sample_candidates(kind: str, num_sampled: int, unique: bool, range_max: int, seed: int,
                      seed2: int, call_index: int) -> tuple[np.ndarray, int]:
    """The sampled ids and the number of draws it took (more than `num_sampled` when
    `unique` rejected repeats)."""
    out: list[int] = []
    seen: set[int] = set()
    tries, block = 0, 0
    while len(out) < num_sampled:
        # Fresh words per block of draws: the stream is indexed, so block b's words are
        # those of a (virtual) longer draw, the same on every target.
        words = random_words(4 * num_sampled * (block + 1), seed, seed2, call_index)
        u = (words[4 * num_sampled * block:] >> np.uint32(8)).astype(np.float64) * 2.0 ** -24
        for v in _draw(kind, u, range_max):
            if len(out) == num_sampled:
                break
            tries += 1
            if unique and int(v) in seen:
                continue
            seen.add(int(v))
            out.append(int(v))
        block += 1
        if block > 10_000:
            raise InvalidArgumentError("candidate sampling did not finish (range too small?)")
    return np.asarray(out, np.int64), tries


def expected_count(kind: str, ids: np.ndarray, num_sampled: int, tries: int, unique: bool,
                   range_max: int) -> np.ndarray:
    """Expected occurrences of each id among the draws (TensorFlow's ExpectedCountHelper):
    ``num_sampled * P(k)`` when the draws took no retry (always, without `unique`), else
    ``1 - (1 - P(k))**tries``."""
    p = class_probability(kind, ids, range_max)
    if unique and tries != num_sampled:
        return -np.expm1(tries * np.log1p(-np.minimum(p, 1.0 - 1e-12)))
    return num_sampled * p


@CandidateSampler.kernel("reference", context=True)
def _kernel(ctx, true_classes, *, kind, num_true, num_sampled, unique, range_max, seed, seed2):
    sampled, tries = sample_candidates(kind, num_sampled, unique, range_max, seed, seed2,
                                       ctx.next_call_index())
    true_expected = expected_count(kind, np.asarray(true_classes), num_sampled, tries, unique,
                                   range_max)
    sampled_expected = expected_count(kind, sampled, num_sampled, tries, unique, range_max)
    return (sampled, true_expected.astype(np.float32), sampled_expected.astype(np.float32))


not_differentiable("CandidateSampler")
