"""``TensorArray.split(value, lengths)``: equal pieces of `value` along axis 0, eagerly and
on every target (static and run-time row counts, dynamic_size arrays, through a loop),
its gradient against finite differences in float64, and the errors for what this
TensorArray cannot hold (unequal lengths) or does not match."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tests.helpers import TARGETS, assert_same, check_gradients


def test_eager_pieces_read_and_concat_back():
    v = np.arange(12.0).reshape(6, 2)
    ta = tw.TensorArray(tw.float64, size=3).split(v, [2, 2, 2])
    assert int(ta.size()) == 3
    for k in range(3):
        assert_same(ta.read(k), v[2 * k:2 * k + 2])
    assert_same(ta.concat(), v)
    assert_same(tw.TensorArray(tw.float64, size=0, dynamic_size=True).split(v, [3, 3]).stack(),
                v.reshape(2, 3, 2))


@pytest.mark.parametrize("target", TARGETS)
def test_traced_with_rows_known_only_at_run_time(target):
    @tw.compile(target=target, input_signature=[tw.TensorSpec([None, 3], tw.float32)])
    def f(v):
        ta = tw.TensorArray(tw.float32, size=2, element_shape=[2, 3]).split(v, np.array([2, 2]))

        def body(i, acc):
            return i + 1, acc + ta.read(i)

        _, total = tw.while_loop(lambda i, acc: i < ta.size(), body,
                                 (tw.constant(0), tw.zeros([2, 3])))
        return total, ta.stack()

    v = np.arange(12, dtype=np.float32).reshape(4, 3)
    total, stacked = f(v)
    assert_same(total, v[:2] + v[2:])
    assert_same(stacked, v.reshape(2, 2, 3))
    with pytest.raises(tw.errors.InvalidArgumentError, match="reshape"):
        f(v[:3])


@pytest.mark.parametrize("target", TARGETS)
def test_split_gradient_matches_finite_differences(target):
    v = np.random.default_rng(0).normal(size=(6, 2))
    w = np.array([1.0, -2.0, 0.5])

    def f(v):
        ta = tw.TensorArray(tw.float64, size=3).split(v, [2, 2, 2])
        return ta.read(0) * w[0] + tw.sin(ta.read(2)) * w[2] + ta.stack()[1] ** 2 * w[1]

    check_gradients(f, v, target=target)


def test_errors():
    v = np.zeros((6, 2))
    ta = tw.TensorArray(tw.float64, size=3)
    with pytest.raises(tw.errors.ShapeError, match="equal"):
        ta.split(v, [2, 4])
    with pytest.raises(tw.errors.ShapeError, match="sum to 9 but the value has 6 rows"):
        ta.split(v, [3, 3, 3])
    with pytest.raises(tw.errors.ShapeError, match="size 3.*2 pieces"):
        ta.split(v, [3, 3])
    with pytest.raises(tw.errors.DTypeError, match="f64 but the value is f32"):
        ta.split(v.astype(np.float32), [2, 2, 2])
    with pytest.raises(tw.errors.ShapeError, match="rank >= 1"):
        ta.split(np.float64(1), [1])
    with pytest.raises(tw.errors.ShapeError, match="element shape"):
        tw.TensorArray(tw.float64, size=3, element_shape=[3, 2]).split(v, [2, 2, 2])
