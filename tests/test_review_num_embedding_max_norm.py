"""embedding_lookup(max_norm=...) clips each row as tw.clip_by_norm does (float16 rows are
normed in float32: their squares overflow float16), on every target."""
import numpy as np
import pytest

import tensorweave as tw


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_float16_rows_clip_without_overflow(target):
    table = np.array([[300, 400], [3, 4], [0.3, 0.4], [0, 0]], np.float16)
    look = tw.compile(lambda t: tw.nn.embedding_lookup(t, [0, 1, 2, 3], max_norm=1.0),
                      target=target)
    got = np.asarray(look(table))
    want = np.array([[0.6, 0.8], [0.6, 0.8], [0.3, 0.4], [0, 0]], np.float16)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3)


def test_clipped_rows_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    table = rng.normal(size=(4, 3)) * np.array([[3.0], [0.1], [2.0], [0.5]])
    ids = np.array([0, 1, 0, 3])

    def loss(t):
        return tw.reduce_sum(tw.nn.embedding_lookup(t, ids, max_norm=1.0) * np.arange(3.0))

    grad = np.asarray(tw.compile(lambda t: tw.gradients(loss(t), t)[0])(table))
    eps = 1e-6
    fd = np.zeros_like(table)
    f = tw.compile(loss)
    for i in np.ndindex(table.shape):
        d = np.zeros_like(table)
        d[i] = eps
        fd[i] = (float(f(table + d)) - float(f(table - d))) / (2 * eps)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)
