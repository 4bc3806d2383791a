"""tw.random.uniform (and stateless_uniform, Generator.uniform) promise floats in
[minval, maxval). The raw uniforms are below 1, but ``u * (maxval - minval) + minval``
rounds: with bounds (1, 1.5) the largest raw uniform, 1 - 2**-23, gives
1.5 - 2**-24, a tie that float32 rounds to 1.5 == maxval (TensorFlow does the same,
its issue 51465). Seeds (1, 2) draw that raw uniform at element 912635 of a
float32 stream: these tests fail unless the scaled value stays below maxval."""

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.compiler.ops.random import uniform_bits
from tests.helpers import TARGETS

N = 912636
HIT = 912635  # the element whose raw uniform is 1 - 2**-23 with seed=1, seed2=2


def test_the_stream_holds_the_largest_raw_uniform():
    # the premise of the tests below (the documented recipe, not a kernel)
    assert uniform_bits(N, 23, 1, 2, 0)[HIT] == 2**23 - 1


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("lo, hi", [(1.0, 1.5), (-3.0, -2.5), (0.5, 0.75)])
def test_uniform_stays_below_maxval(target, lo, hi):
    tw.random.set_seed(1)
    try:
        x = tw.compile(lambda: tw.random.uniform([N], minval=lo, maxval=hi, seed=2),
                       target=target)()
    finally:
        tw.random.set_seed(None)
    assert x.dtype == np.float32
    assert x.min() >= np.float32(lo)
    assert x.max() < np.float32(hi), x[HIT]
    # the largest value representable below maxval takes the place of maxval
    assert x[HIT] == np.nextafter(np.float32(hi), np.float32(-np.inf))


def test_stateless_and_generator_uniform_stay_below_maxval():
    x = tw.random.stateless_uniform([N], seed=[1, 2], minval=1.0, maxval=1.5).numpy()
    assert x.max() < 1.5
    gen = tw.random.Generator.from_state([1, 2])
    assert gen.uniform([N], minval=1.0, maxval=1.5).numpy().max() < 1.5


def test_bounds_that_cannot_round_up_keep_the_numbers_as_they_were():
    # the clamp is only added where rounding can reach maxval: (-1, 1) and (0, 8) keep
    # exactly u * span + minval
    tw.random.set_seed(1)
    try:
        got = tw.compile(lambda: (tw.random.uniform([64], seed=2),
                                  tw.random.uniform([64], -1.0, 1.0, seed=2),
                                  tw.random.uniform([64], 0, 8, seed=2)),
                         target="reference")()
    finally:
        tw.random.set_seed(None)
    u = got[0]
    np.testing.assert_array_equal(got[1], u * np.float32(2) - np.float32(1))
    np.testing.assert_array_equal(got[2], u * np.float32(8))
