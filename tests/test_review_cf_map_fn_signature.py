"""`tw.map_fn` checks fn's results against the shapes of `fn_output_signature`
(TensorSpecs), eagerly as when traced: eagerly a signature of shape [3] for results of
shape [2] was ignored (the stacked [n, 2] came back), traced it failed inside a
DynamicUpdateRow ("row f32[2] is not a row of tensor f32[3,3]") without naming
map_fn's signature."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tests.helpers import assert_same

F32 = np.float32
X = np.arange(6, dtype=F32).reshape(3, 2)


def wrong(x):
    return tw.map_fn(lambda e: e * 2.0, x, fn_output_signature=tw.TensorSpec([3], tw.float32))


def test_eager_result_shape_must_fit_the_signature():
    with pytest.raises(tw.errors.ShapeError,
                       match=r"output 0 of fn has shape \[2\].*fn_output_signature says \[3\]"):
        wrong(tw.constant(X))


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_traced_result_shape_must_fit_the_signature(target):
    with pytest.raises(tw.errors.ShapeError,
                       match=r"output 0 of fn has shape \[2\].*fn_output_signature says \[3\]"):
        tw.compile(wrong, target=target)(X)


def test_unknown_dims_of_the_signature_fit_anything():
    def f(x):
        return tw.map_fn(lambda e: e * 2.0, x,
                         fn_output_signature=tw.TensorSpec([None], tw.float32))
    assert_same(f(tw.constant(X)).numpy(), X * 2)
    assert_same(tw.compile(f)(X), X * 2)
