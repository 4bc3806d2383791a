"""Adversarial review of `tw.random.set_seed`: eager random ops restart their sequences
(docs/api.md, as ``tf.random.set_seed`` resets TensorFlow's counters), so the same eager
code after ``set_seed(s)`` draws the same numbers again. Only the uniform/normal family
restarted: `categorical`, `shuffle` and the candidate samplers went on with their call
counts, so ``set_seed(1); categorical(...)`` gave other samples each time."""

import numpy as np
import pytest

import tensorweave as tw

LOGITS = np.log(np.float32([[0.2, 0.3, 0.5]]))
TRUE = np.int64([[1]])

DRAWS = {
    "categorical": lambda: tw.random.categorical(LOGITS, 16),
    "categorical op seed": lambda: tw.random.categorical(LOGITS, 16, seed=3),
    "shuffle": lambda: tw.random.shuffle(tw.range(16)),
    "uniform_candidate_sampler": lambda: tw.random.uniform_candidate_sampler(
        TRUE, 1, 4, True, 50)[0],
    "log_uniform_candidate_sampler": lambda: tw.random.log_uniform_candidate_sampler(
        TRUE, 1, 4, False, 50)[0],
    "uniform": lambda: tw.random.uniform([8]),
    "dropout": lambda: tw.nn.dropout(tw.ones([16]), 0.5),
}


@pytest.mark.parametrize("name", list(DRAWS))
def test_set_seed_restarts_every_eager_random_op(name):
    draw = DRAWS[name]
    runs = []
    for _ in range(3):
        tw.random.set_seed(1234)
        runs.append([np.asarray(draw()) for _ in range(2)])
    for later in runs[1:]:
        for a, b in zip(runs[0], later):
            np.testing.assert_array_equal(a, b)
    # within one run, two calls still differ
    assert not np.array_equal(*runs[0])
