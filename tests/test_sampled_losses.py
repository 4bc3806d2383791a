"""Candidate samplers and sampled losses (sampled softmax, NCE)."""

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.compiler.ops.candidate import class_probability

from .helpers import check_gradients

V, D, B = 20, 6, 4


def _problem(seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(V, D)).astype(dtype), rng.normal(size=V).astype(dtype),
            rng.normal(size=(B, D)).astype(dtype), rng.integers(0, V, size=(B, 1)))


@pytest.mark.parametrize("kind", ["log_uniform", "uniform"])
def test_samplers_draw_from_their_distribution(kind):
    sampler = getattr(tw.random, f"{kind}_candidate_sampler")
    labels = np.zeros((1, 1), np.int64)

    @tw.compile
    def draw(y):
        return sampler(y, 1, 4000, False, 10, seed=11)

    sampled, true_expected, sampled_expected = draw(labels)
    freq = np.bincount(sampled, minlength=10) / sampled.size
    np.testing.assert_allclose(freq, class_probability(kind, np.arange(10), 10), atol=0.03)
    np.testing.assert_allclose(sampled_expected, 4000 * class_probability(kind, sampled, 10),
                               rtol=1e-5)
    unique = tw.compile(lambda y: sampler(y, 1, 7, True, 10, seed=5)[0])(labels)
    assert len(set(unique.tolist())) == 7 and unique.min() >= 0 and unique.max() < 10


def test_sampled_softmax_gradients_match_finite_differences_for_fixed_samples():
    w, b, x, y = _problem()
    sampled = (np.array([3, 5, 8, 11, 0], np.int64), np.full((B, 1), 0.3, np.float32),
               np.array([0.2, 0.4, 0.5, 0.1, 0.9], np.float32))

    def f(w, b, x):
        return tw.nn.sampled_softmax_loss(w, b, y, x, num_sampled=5, num_classes=V,
                                          sampled_values=sampled)

    check_gradients(f, w, b, x, rtol=1e-5, atol=1e-7)

    def g(w, b, x):
        return tw.nn.nce_loss(w, b, y, x, num_sampled=5, num_classes=V, sampled_values=sampled)

    check_gradients(g, w, b, x, rtol=1e-5, atol=1e-7)


def test_accidental_hits_are_removed():
    w, b, x, _ = _problem()
    y = np.array([[3], [3], [3], [3]])
    sampled = (np.array([3, 5], np.int64), np.ones((B, 1), np.float32),
               np.ones(2, np.float32))
    loss = tw.compile(lambda w, b, x: tw.nn.sampled_softmax_loss(
        w, b, y, x, 2, V, sampled_values=sampled))(w, b, x)
    logits = x @ w[[3, 5]].T + b[[3, 5]]
    want = -logits[:, 0] + np.logaddexp(logits[:, 0], logits[:, 1])  # class 3 counted once
    np.testing.assert_allclose(loss, want, rtol=1e-6)


def test_the_sampled_softmax_gradient_points_like_the_full_softmax_gradient():
    """Averaged over draws, the sampled loss's gradient with respect to the inputs has the
    direction of the full softmax loss's (cosine > 0.95 with 300 draws of 10 of 20
    classes, seeds fixed)."""
    w, b, x, y = _problem(1, np.float32)

    def full(x):
        logits = tw.matmul(x, w, transpose_b=True) + b
        return tw.reduce_sum(tw.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y[:, 0], logits=logits))

    want = np.asarray(tw.grad(full)(x)).ravel()
    grads = []
    for seed in range(300):
        def sampled(x, seed=seed):
            return tw.reduce_sum(tw.nn.sampled_softmax_loss(w, b, y, x, 10, V, seed=seed))
        grads.append(np.asarray(tw.grad(sampled)(x)).ravel())
    mean = np.mean(grads, axis=0)
    cosine = mean @ want / (np.linalg.norm(mean) * np.linalg.norm(want))
    assert cosine > 0.95, cosine
