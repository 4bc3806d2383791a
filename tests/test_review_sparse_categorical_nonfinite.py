"""tw.random.categorical with non-finite logits draws as TensorFlow's CPU kernel
(multinomial_op.cc) does: only finite logits count (their maximum is subtracted, and a
NaN or infinite logit has probability 0), so the draws equal those with -inf in place
of each non-finite logit. The kernel subtracted max(logits) = inf: the row [0, inf, inf]
became probabilities [0, nan, nan] and every sample was class 2 (TensorFlow: class 0,
the only finite logit), and [nan, 1, 2] drew class 2 only, class 1 never."""

import numpy as np
import pytest

import tensorweave as tw
from tests.helpers import TARGETS

ROWS = [
    ([0.0, np.inf, np.inf], [0.0, -np.inf, -np.inf]),
    ([np.nan, 1.0, 2.0], [-np.inf, 1.0, 2.0]),
    ([1.0, np.inf, 0.0], [1.0, -np.inf, 0.0]),
    ([np.inf, 0.0, -np.inf], [-np.inf, 0.0, -np.inf]),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("stateless", [False, True])
def test_non_finite_logits_draw_as_minus_infinity(target, stateless):
    logits = np.array([r for r, _ in ROWS], np.float32)
    masked = np.array([m for _, m in ROWS], np.float32)

    def draw(lg):
        if stateless:
            return tw.random.stateless_categorical(lg, 400, seed=[3, 4])
        return tw.random.categorical(lg, 400, seed=7)

    got = tw.compile(draw, target=target)(logits)
    want = tw.compile(draw, target=target)(masked)
    np.testing.assert_array_equal(got, want)
    assert (got[0] == 0).all()
    counts = np.bincount(got[1], minlength=3)
    assert counts[0] == 0 and counts[1] > 50 and counts[2] > 200  # p = 0, 0.27, 0.73
    assert set(got[2].tolist()) <= {0, 2} and (got[3] == 1).all()
