"""A loop gradient on the cpu target under a generous `maximum_iterations` (a safety
bound on a loop whose trip count depends on the data): the weight gradient's histories
were planned for every iteration the bound allows, so an RNN with
``maximum_iterations=10**7`` that stops after 5 steps failed with "MemoryError: Unable to
allocate 38.1 GiB" (8 TiB for 2**31 - 1) where the reference target runs it."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tests.helpers import assert_same

F32 = np.float32


def rnn_weight_grad(x, w, n, bound):
    with tw.GradientTape() as tape:
        tape.watch(w)

        def body(i, h):
            return i + 1, tw.tanh(tw.matmul(h, w) + x)
        _, h = tw.while_loop(lambda i, h: i < n, body, (0, x), maximum_iterations=bound)
        loss = tw.reduce_sum(h)
    return tape.gradient(loss, w)


@pytest.mark.parametrize("bound", [10, 10**7, 2**31 - 1])
def test_cpu_matches_reference_under_a_large_bound(bound):
    rs = np.random.RandomState(0)
    x = (rs.randn(4, 16) * 0.3).astype(F32)
    w = (rs.randn(16, 16) * 0.3).astype(F32)
    f = lambda x, w, n: rnn_weight_grad(x, w, n, bound)  # noqa: E731
    expected = tw.compile(f, target="reference")(x, w, np.int32(5))
    assert_same(tw.compile(f, target="cpu")(x, w, np.int32(5)), expected)
