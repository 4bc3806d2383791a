"""Expected counts of the candidate samplers with ``unique=True``, as TensorFlow's
range_sampler.cc (ExpectedCountHelper) computes them: ``num_sampled * P(k)`` when the
draws needed no retry (``num_tries == num_sampled``), else ``1 - (1 - P(k))**num_tries``.
The kernel used the second formula for every unique draw, so a draw without repeats
gave 1 - (1 - P)**n instead of n * P: for the log-uniform class 0 of 10 (P = 0.289)
and 3 draws, 0.640 instead of 0.867, a different logit correction in
sampled_softmax_loss and nce_loss than TensorFlow's."""

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.compiler.ops.candidate import class_probability, sample_candidates
from tests.helpers import TARGETS

RANGE = 10
TRUE = np.array([[0], [4]], np.int64)


def _tf_expected(kind, ids, num_sampled, tries):
    p = class_probability(kind, np.asarray(ids), RANGE)
    if tries == num_sampled:
        return num_sampled * p
    return -np.expm1(tries * np.log1p(-p))


def _seed_with_tries(kind, num_sampled, want_retry):
    """An op seed whose first unique draw needs retries (or needs none)."""
    for seed2 in range(200):
        _, tries = sample_candidates(kind, num_sampled, True, RANGE, 1, seed2, 0)
        if (tries > num_sampled) == want_retry:
            return seed2, tries
    raise AssertionError("no such seed in 200")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", ["log_uniform", "uniform"])
@pytest.mark.parametrize("want_retry", [False, True])
def test_unique_expected_counts_follow_tensorflow(target, kind, want_retry):
    num_sampled = 3
    seed2, tries = _seed_with_tries(kind, num_sampled, want_retry)
    sampler = getattr(tw.random, f"{kind}_candidate_sampler")
    tw.random.set_seed(1)
    try:
        sampled, true_expected, sampled_expected = tw.compile(
            lambda y: sampler(y, 1, num_sampled, True, RANGE, seed=seed2), target=target)(TRUE)
    finally:
        tw.random.set_seed(None)
    assert len(set(sampled.tolist())) == num_sampled
    np.testing.assert_allclose(true_expected, _tf_expected(kind, TRUE, num_sampled, tries),
                               rtol=1e-6)
    np.testing.assert_allclose(sampled_expected,
                               _tf_expected(kind, sampled, num_sampled, tries), rtol=1e-6)


def test_the_example_in_the_docstring():
    p = class_probability("log_uniform", np.array([0]), RANGE)[0]
    assert abs(p - 0.289) < 1e-3
    assert abs(3 * p - 0.867) < 1e-3 and abs(-np.expm1(3 * np.log1p(-p)) - 0.640) < 1e-3
