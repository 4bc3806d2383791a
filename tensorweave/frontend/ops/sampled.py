"""Sampled losses for large output vocabularies: ``tw.nn.sampled_softmax_loss`` and
``tw.nn.nce_loss`` (Jean et al. 2015; Mnih and Teh 2012), with TensorFlow's candidate
samplers ``tw.random.log_uniform_candidate_sampler`` / ``uniform_candidate_sampler``.

A sampled loss scores each example's true classes and `num_sampled` classes drawn for the
whole batch, with logits corrected by ``-log(expected count)`` so the estimate stays
unbiased; only the drawn rows of the output weights are read (through
`embedding_lookup`, so weights sharded over parameter servers stay sharded), and so only
those rows get a gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...compiler.dtypes import int64
from ...errors import ShapeError
from ..autodiff import stop_gradient
from ..building import apply_op, convert_to_tensor
from . import array as a
from . import math as m
from .activations import sigmoid_cross_entropy_with_logits
from .embedding import embedding_lookup
from .nn import softmax_cross_entropy_with_logits
from .random import get_seed

# Added to the logits of sampled classes that are in fact true ("accidental hits"), as
# TensorFlow's remove_accidental_hits does: they vanish from the softmax.
_HIT_PENALTY = float(np.finfo(np.float32).min) / 2


def _candidate_sampler(kind: str, true_classes: Any, num_true: int, num_sampled: int,
                       unique: bool, range_max: int, seed: int | None, name: str | None) -> Any:
    seed1, seed2 = get_seed(seed)
    true_classes = a.reshape(m.cast(convert_to_tensor(true_classes), int64), [-1, num_true])
    return tuple(apply_op("CandidateSampler", [true_classes], {
        "kind": kind, "num_true": int(num_true), "num_sampled": int(num_sampled),
        "unique": bool(unique), "range_max": int(range_max), "seed": seed1, "seed2": seed2},
        name=name or f"{kind}_candidate_sampler"))


def log_uniform_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int,
                                  unique: bool, range_max: int, seed: int | None = None,
                                  name: str | None = None) -> tuple[Any, Any, Any]:
    """Draw `num_sampled` classes from the log-uniform (Zipfian) distribution over
    ``[0, range_max)``; returns ``(sampled_candidates, true_expected_count,
    sampled_expected_count)``."""
    return _candidate_sampler("log_uniform", true_classes, num_true, num_sampled, unique,
                              range_max, seed, name)


def uniform_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int,
                              unique: bool, range_max: int, seed: int | None = None,
                              name: str | None = None) -> tuple[Any, Any, Any]:
    """Draw `num_sampled` classes uniformly from ``[0, range_max)``; returns
    ``(sampled_candidates, true_expected_count, sampled_expected_count)``."""
    return _candidate_sampler("uniform", true_classes, num_true, num_sampled, unique,
                              range_max, seed, name)


def _sampled_logits(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
                    num_classes: int, num_true: int, sampled_values: Any,
                    remove_accidental_hits: bool, partition_strategy: str,
                    seed: int | None) -> tuple[Any, Any]:
    """(logits [batch, num_true + num_sampled], labels of the same shape)."""
    labels = a.reshape(m.cast(convert_to_tensor(labels), int64), [-1, num_true])
    if sampled_values is None:
        sampled_values = log_uniform_candidate_sampler(labels, num_true, num_sampled, True,
                                                       num_classes, seed=seed)
    sampled, true_expected, sampled_expected = (stop_gradient(convert_to_tensor(v))
                                                for v in sampled_values)
    sampled = m.cast(sampled, int64)
    inputs = convert_to_tensor(inputs)
    flat_labels = a.reshape(labels, [-1])
    true_w = embedding_lookup(weights, flat_labels, partition_strategy=partition_strategy)
    sampled_w = embedding_lookup(weights, sampled, partition_strategy=partition_strategy)
    true_b = embedding_lookup(biases, flat_labels, partition_strategy=partition_strategy)
    sampled_b = embedding_lookup(biases, sampled, partition_strategy=partition_strategy)
    dim = true_w.shape[-1]
    if dim is None:
        raise ShapeError(f"sampled losses need the weights' row width to be known, got "
                         f"{true_w.shape}")
    # true logits: per example, the dot product with each of its true classes' rows
    true_w = a.reshape(true_w, [-1, num_true, dim])
    true_logits = m.reduce_sum(a.expand_dims(inputs, 1) * true_w, axis=2)
    true_logits = (true_logits + a.reshape(true_b, [-1, num_true])
                   - m.log(m.cast(true_expected, true_logits.dtype)))
    sampled_logits = m.matmul(inputs, sampled_w, transpose_b=True) + sampled_b
    sampled_logits = sampled_logits - m.log(m.cast(sampled_expected, sampled_logits.dtype))
    if remove_accidental_hits:
        hits = m.reduce_any(m.equal(a.expand_dims(labels, 2), a.reshape(sampled, [1, 1, -1])),
                            axis=1)
        sampled_logits = sampled_logits + m.cast(hits, sampled_logits.dtype) * _HIT_PENALTY
    logits = a.concat([true_logits, sampled_logits], 1)
    out_labels = a.concat([a.ones_like(true_logits) / float(num_true),
                           a.zeros_like(sampled_logits)], 1)
    return logits, out_labels


def sampled_softmax_loss(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
                         num_classes: int, num_true: int = 1, sampled_values: Any = None,
                         remove_accidental_hits: bool = True, partition_strategy: str = "div",
                         name: str = "sampled_softmax_loss", seed: int | None = None) -> Any:
    """Softmax cross entropy over each example's true classes and `num_sampled` sampled
    classes (per example, shape ``[batch]``): a cheap, consistent estimate of the full
    softmax loss for large `num_classes`. `weights` is ``[num_classes, dim]`` (or a list
    of shards), `biases` ``[num_classes]``, `inputs` ``[batch, dim]``, `labels` ``[batch,
    num_true]`` ints. Use the full softmax for evaluation. Sharded `weights` are looked
    up with `partition_strategy` ("div" by default, as TensorFlow 2 always does;
    ``tf.compat.v1.nn.sampled_softmax_loss`` defaults to TensorFlow 1's "mod")."""
    logits, out_labels = _sampled_logits(weights, biases, labels, inputs, num_sampled,
                                         num_classes, num_true, sampled_values,
                                         remove_accidental_hits, partition_strategy, seed)
    return softmax_cross_entropy_with_logits(labels=stop_gradient(out_labels), logits=logits)


def nce_loss(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
             num_classes: int, num_true: int = 1, sampled_values: Any = None,
             remove_accidental_hits: bool = False, partition_strategy: str = "div",
             name: str = "nce_loss", seed: int | None = None) -> Any:
    """Noise-contrastive estimation: logistic regression telling true classes from
    sampled noise classes; per example, shape ``[batch]``. With ``num_true > 1`` each true
    class's target probability is ``1 / num_true``, as in TensorFlow. Sharded `weights`
    are looked up with `partition_strategy` ("div" by default, as in TensorFlow 2;
    ``tf.compat.v1.nn.nce_loss`` defaults to TensorFlow 1's "mod")."""
    logits, out_labels = _sampled_logits(weights, biases, labels, inputs, num_sampled,
                                         num_classes, num_true, sampled_values,
                                         remove_accidental_hits, partition_strategy, seed)
    # each true class's target is 1 / num_true, as in TensorFlow ("so that the target
    # probabilities sum to 1 per-example"), not 1
    losses = sigmoid_cross_entropy_with_logits(labels=stop_gradient(out_labels), logits=logits)
    return m.reduce_sum(losses, axis=1)



__all__ = ["log_uniform_candidate_sampler", "nce_loss", "sampled_softmax_loss",
           "uniform_candidate_sampler"]
