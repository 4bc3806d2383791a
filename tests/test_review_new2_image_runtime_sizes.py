"""Review of tw.image ops on images whose height and width are known only at run time (a
TensorSpec with None dims, a v1 placeholder [None, None, None, d]), on every target:
sobel_edges raised a bare TypeError (int() of None) while building the graph, where
TensorFlow's sobel_edges reshapes by the run-time shape."""

from __future__ import annotations

import numpy as np

import tensorweave as tw
from tests.helpers import TARGETS, assert_same

_DY = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float64)


def _sobel_numpy(x: np.ndarray) -> np.ndarray:
    """[b, h, w, d] -> [b, h, w, d, 2]: correlation with TensorFlow's (dy, dx) kernels over
    the image mirrored by one pixel (REFLECT)."""
    p = np.pad(x.astype(np.float64), [(0, 0), (1, 1), (1, 1), (0, 0)], mode="reflect")
    h, w = x.shape[1:3]
    out = []
    for k in (_DY, _DY.T):
        out.append(sum(k[i, j] * p[:, i:i + h, j:j + w] for i in range(3) for j in range(3)))
    return np.stack(out, axis=-1).astype(x.dtype)


def test_sobel_edges_with_run_time_height_and_width():
    rng = np.random.default_rng(0)
    spec = [tw.TensorSpec([None, None, None, 2], tw.float32)]
    for shape in [(1, 3, 4, 2), (2, 5, 2, 2), (1, 2, 17, 2)]:
        x = rng.uniform(0, 1, shape).astype(np.float32)
        for target in TARGETS:
            got = tw.compile(tw.image.sobel_edges, input_signature=spec, target=target)(x)
            assert np.asarray(got).shape == (*shape, 2)
            assert_same(np.asarray(got), _sobel_numpy(x), rtol=1e-6, atol=1e-6)


def test_sobel_edges_in_a_v1_session_with_a_placeholder():
    x = np.arange(2 * 3 * 4 * 1, dtype=np.float32).reshape(2, 3, 4, 1) ** 1.5 / 128
    with tw.compat.v1.Graph().as_default():
        ph = tw.compat.v1.placeholder(tw.float32, [None, None, None, 1])
        edges = tw.image.sobel_edges(ph)
        with tw.compat.v1.Session() as sess:
            got = sess.run(edges, {ph: x})
    assert_same(got, _sobel_numpy(x), rtol=1e-6, atol=1e-5)
