"""Math functions on values where C's libm (and libdevice on a GPU) give inf or NaN:
the gpu target under numba's simulator gives the reference's results there too.

The simulator runs kernels as Python, whose math functions raise instead: log(0),
sqrt(-1), exp(1000), sin(inf) and the like failed the whole step with ValueError or
OverflowError ("math domain error") where the reference and a GPU give -inf, NaN, inf.
`compile._SimulatedMath` gives kernels IEEE results there."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tests.gpu.cases import tolerance

EDGES = [0.0, -0.0, -1.0, 2.0, 1e5, -1e5, np.inf, -np.inf, np.nan]

OPS = {
    "log": tw.log, "log1p": tw.log1p, "sqrt": tw.sqrt, "rsqrt": tw.rsqrt, "exp": tw.exp,
    "expm1": tw.math.expm1, "sin": tw.sin, "cos": tw.cos, "tan": tw.math.tan,
    "asin": tw.math.asin, "acos": tw.math.acos, "sinh": tw.math.sinh,
    "cosh": tw.math.cosh, "pow": lambda x: tw.pow(x, x),
    "x_log_x": lambda x: x * tw.log(x),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(OPS))
def test_math_on_edge_values_as_the_reference(name, dtype):
    x = np.array(EDGES, dtype)
    fn = OPS[name]
    want = np.asarray(tw.compile(fn, target="reference")(x))
    got = np.asarray(tw.compile(fn, target="gpu")(x))
    np.testing.assert_allclose(got, want, equal_nan=True, **tolerance(np.dtype(dtype)))
