"""Adversarial review of ``SparseConditionalAccumulator`` (what SyncReplicasOptimizer
aggregates embedding gradients with) against TensorFlow's kernel
(core/kernels/sparse_conditional_accumulator.h, ``DivideAccumGradByCounter``: "average
element-wise"): with MEAN, each row is divided by the number of gradients that held
that row, not by the number of gradients taken. A row only one of two workers looked up
gets that worker's gradient in TensorFlow; here it gets half of it, so under
SyncReplicasOptimizer rarely-seen embedding rows learn at a fraction of the rate.

Fixed in runtime/accumulators.py (tests/distributed/test_sync_replicas.py's expectations
changed with it: they asserted the divide-by-all behaviour)."""

from __future__ import annotations

import numpy as np

from tensorweave.runtime.accumulators import SparseConditionalAccumulator


def test_mean_divides_each_row_by_the_gradients_that_held_it():
    acc = SparseConditionalAccumulator("emb", "f32", (10, 2))
    assert acc.apply_indexed_slices(0, np.array([1, 3]), np.float32([[1, 1], [2, 2]]))
    assert acc.apply_indexed_slices(0, np.array([3, 5]), np.float32([[4, 4], [6, 6]]))
    indices, values = acc.take_indexed_slices(2)
    np.testing.assert_array_equal(indices, [1, 3, 5])
    # row 1: one gradient (1); row 3: two gradients ((2 + 4) / 2); row 5: one (6)
    np.testing.assert_array_equal(values, np.float32([[1, 1], [3, 3], [6, 6]]))


def test_sum_reduction_adds_the_rows():
    acc = SparseConditionalAccumulator("emb", "f32", (10, 2), reduction_type="SUM")
    acc.apply_indexed_slices(0, np.array([1, 3]), np.float32([[1, 1], [2, 2]]))
    acc.apply_indexed_slices(0, np.array([3, 5]), np.float32([[4, 4], [6, 6]]))
    indices, values = acc.take_indexed_slices(2)
    np.testing.assert_array_equal(indices, [1, 3, 5])
    np.testing.assert_array_equal(values, np.float32([[1, 1], [6, 6], [6, 6]]))
