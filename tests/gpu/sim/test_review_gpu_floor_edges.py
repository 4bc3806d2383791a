"""Floor, Ceil, FloorDiv and FloorMod of floats on edge values (infinities, NaN, signed
zeros, results in (-1, 0)) give the reference's values and signs on the gpu target.

In the simulator, ``math.floor`` is Python's: it returns an int, so floor(-0.0) and
ceil(-0.5) lost their sign (+0.0 where the reference and libdevice's floorf/ceilf give
-0.0), and FloorDiv of an infinite or NaN quotient raised OverflowError/ValueError
inside the kernel instead of giving inf/NaN, as did FloorMod's ``math.fmod`` of an
infinite dividend or by zero."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw

X = [np.inf, -np.inf, np.nan, 1e38, -0.5, 0.5, -0.0, 0.0, 7.0, -7.0, 3e38, -2.5, 1e-30]
Y = [2.0, 3.0, 1.0, 1e-38, 2.0, -2.0, 5.0, -5.0, np.inf, np.inf, 0.1, 0.0, -1e30]

OPS = {"floor": lambda x, y: tw.floor(x), "ceil": lambda x, y: tw.ceil(x),
       "floordiv": tw.floordiv, "floormod": tw.floormod}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(OPS))
def test_floor_family_on_edge_values(name, dtype):
    x, y = np.array(X, dtype), np.array(Y, dtype)
    fn = OPS[name]
    want = np.asarray(tw.compile(fn, target="reference")(x, y))
    got = np.asarray(tw.compile(fn, target="gpu")(x, y))
    np.testing.assert_array_equal(got, want)  # NaN where NaN
    numbers = ~np.isnan(want)  # a NaN's sign bit is the hardware's, not the op's
    np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))
