"""`tw.scan`, `tw.foldl`, `tw.map_fn` and `tw.vectorized_map` over a nest of elements
whose first dims differ: an error, as in TensorFlow. They used the first tensor's count
and silently dropped the extra rows of the others (scan over (x[3], y[4]) gave 3
results from y[:3]); with counts known only at run time the rows past the first
tensor's count were dropped the same way."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tests.helpers import assert_same

F32 = np.float32

CALLS = {
    "scan": lambda e: tw.scan(lambda a, x: a + x[0] * x[1], e, initializer=F32(0)),
    "foldl": lambda e: tw.foldl(lambda a, x: a + x[0] * x[1], e, initializer=F32(0)),
    "map_fn": lambda e: tw.map_fn(lambda x: x[0] * x[1], e),
    "vectorized_map": lambda e: tw.vectorized_map(lambda x: x[0] * x[1], e),
}
EXPECTED = {
    "scan": lambda x, y: np.cumsum(x * y).astype(F32),
    "foldl": lambda x, y: F32(np.sum(x * y)),
    "map_fn": lambda x, y: x * y,
    "vectorized_map": lambda x, y: x * y,
}
X3, Y3, Y4 = np.arange(3, dtype=F32), np.arange(3, dtype=F32) + 1, np.arange(4, dtype=F32)


@pytest.mark.parametrize("fn", list(CALLS))
def test_static_counts_that_differ_are_an_error(fn):
    with pytest.raises(tw.errors.ShapeError, match=r"same first dim.*\[3\].*\[4\]"):
        tw.compile(lambda x, y: CALLS[fn]((x, y)))(X3, Y4)
    with pytest.raises(tw.errors.ShapeError, match="same first dim"):
        CALLS[fn]((tw.constant(X3), tw.constant(Y4)))  # eager


@pytest.mark.parametrize("target", ["reference", "cpu"])
@pytest.mark.parametrize("fn", ["scan", "foldl", "map_fn"])
def test_run_time_counts_that_differ_are_an_error(fn, target):
    # boolean_mask: counts known only when it runs
    f = tw.compile(lambda x, y, mx, my: CALLS[fn]((tw.boolean_mask(x, mx),
                                                     tw.boolean_mask(y, my))), target=target)
    with pytest.raises(tw.errors.InvalidArgumentError, match="same first dim"):
        f(X3, Y4, np.ones(3, bool), np.ones(4, bool))
    # equal counts still run
    got = f(X3, Y4, np.ones(3, bool), np.array([True, True, False, True]))
    assert_same(got, EXPECTED[fn](X3, Y4[[0, 1, 3]]))


@pytest.mark.parametrize("fn", list(CALLS))
def test_equal_counts_run(fn):
    assert_same(tw.compile(lambda x, y: CALLS[fn]((x, y)))(X3, Y3), EXPECTED[fn](X3, Y3))


def test_v1_placeholders_of_unknown_count():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None])
        y = tf.placeholder(tf.float32, [None])
        out = CALLS["scan"]((x, y))
        with tf.Session() as sess:
            assert_same(sess.run(out, {x: X3, y: Y3}), EXPECTED["scan"](X3, Y3))
            with pytest.raises(tw.errors.InvalidArgumentError, match="same first dim"):
                sess.run(out, {x: X3, y: Y4})
