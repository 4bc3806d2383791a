"""`tw.map_fn` over elements whose count is known only at run time, with a full
`fn_output_signature`: it failed to trace ("cannot convert the Python TensorType ... to a
tensor") because the output buffers were made from the signature's type, not a tensor."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tests.helpers import assert_same

F64 = np.float64
TARGETS = [("reference", False), ("cpu", False), ("reference", True)]
IDS = ["reference", "cpu", "reference-lowered"]
X = np.array([[0.3, -0.2], [0.5, 0.1], [-0.4, 0.9]])


def mapped(x, mask):
    rows = tw.boolean_mask(x, mask)  # a run-time row count
    return tw.map_fn(lambda e: (e * 2.0, tw.cast(tw.reduce_sum(e) > 0, tw.int32)), rows,
                     fn_output_signature=(tw.TensorSpec([2], tw.float64),
                                          tw.TensorSpec([], tw.int32)))


@pytest.mark.parametrize("target,lowered", TARGETS, ids=IDS)
@pytest.mark.parametrize("mask", [[True, False, True], [False, False, False], [True] * 3])
def test_run_time_count_with_a_signature(target, lowered, mask):
    mask = np.array(mask)
    doubled, positive = tw.compile(mapped, target=target, lower_control_flow=lowered)(X, mask)
    assert_same(doubled, X[mask] * 2.0)
    assert_same(positive, (X[mask].sum(axis=1) > 0).astype(np.int32))


def test_eager_agrees():
    mask = np.array([True, False, True])
    doubled, positive = mapped(tw.constant(X), tw.constant(mask))
    assert_same(doubled.numpy(), X[mask] * 2.0)
    assert_same(positive.numpy(), (X[mask].sum(axis=1) > 0).astype(np.int32))
