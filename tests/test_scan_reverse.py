"""``tw.scan(..., reverse=True)`` (TensorFlow's semantics: the slices are visited from the
last, the outputs keep the order of `elems`) against a NumPy loop on every target,
eagerly, with nested elems, an initializer or none, a length known only at run time, and
its gradient against finite differences in float64."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tests.helpers import TARGETS, assert_same, check_gradients


def _numpy_scan(fn, elems, init=None, reverse=False):
    order = range(len(elems) - 1, -1, -1) if reverse else range(len(elems))
    out = [None] * len(elems)
    a = init
    for k in order:
        if a is None:
            a = elems[k]
        else:
            a = fn(a, elems[k])
        out[k] = a
    return np.stack(out)


@settings(max_examples=6, deadline=None)
@given(x=hnp.arrays(np.float64, st.tuples(st.integers(1, 5), st.integers(1, 3)),
                    elements=st.floats(-4, 4)),
       with_init=st.booleans())
def test_reverse_scan_matches_a_numpy_loop(x, with_init):
    init = np.linspace(-1, 1, x.shape[1]) if with_init else None

    def step(a, e):
        return a * 0.5 + e * e

    want = _numpy_scan(step, x, init, reverse=True)

    def f(x):
        return tw.scan(step, x, initializer=None if init is None else tw.constant(init),
                       reverse=True)

    assert_same(f(tw.constant(x)), want, rtol=1e-12)
    for target in TARGETS:
        assert_same(tw.compile(f, target=target)(x), want, rtol=1e-12)


def test_reverse_differs_from_forward_and_keeps_the_original_order():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert_same(tw.scan(lambda a, e: a + e, tw.constant(x), reverse=True), [10.0, 9.0, 7.0, 4.0])
    # TF's docs example: the last output is the last element, the first the full fold
    assert_same(tw.scan(lambda a, e: a * 2 + e, tw.constant(x), initializer=np.float64(0),
                        reverse=True), [49.0, 24.0, 11.0, 4.0])


@pytest.mark.parametrize("target", TARGETS)
def test_nested_elems_and_a_length_known_only_at_run_time(target):
    @tw.compile(target=target, input_signature=[tw.TensorSpec([None, 2], tw.float32),
                                                tw.TensorSpec([None], tw.int32)])
    def f(x, k):
        out = tw.scan(lambda acc, e: {"s": acc["s"] + e[0], "n": acc["n"] * 2 + e[1]}, (x, k),
                      initializer={"s": tw.zeros([2]), "n": tw.constant(0)}, reverse=True)
        return out["s"], out["n"]

    for n in (4, 1, 0):
        x = np.arange(2 * n, dtype=np.float32).reshape(n, 2)
        k = np.arange(n, dtype=np.int32)
        s, c = f(x, k)
        assert_same(s, np.cumsum(x[::-1], 0)[::-1].reshape(n, 2))
        want = _numpy_scan(lambda a, e: a * 2 + e, k, np.int32(0), reverse=True) if n else \
            np.zeros(0, np.int32)
        assert_same(c, want.astype(np.int32))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("with_init", [False, True])
def test_reverse_scan_gradient_matches_finite_differences(target, with_init):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 3))
    h0 = rng.normal(size=3)

    def f(x, h0):
        return tw.scan(lambda h, e: tw.tanh(h * 0.9 + e) * e, x,
                       initializer=h0 if with_init else None, reverse=True)

    check_gradients(f, x, h0, argnums=(0, 1) if with_init else (0,), target=target)
