"""The gpu target's bitwise kernels under numba's own lowering (`tests.gpu.native`),
which the simulator does not use: a shift by an amount outside [0, bits) is LLVM poison
(x86 masks the amount, PTX clamps it at the register width), so the kernels must replace
both the amount and the result; checked on every integer dtype against the reference."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tests.gpu.cases import BITWISE_DTYPES, BITWISE_OPS, bitwise_edge_pairs
from tests.gpu.native import run_natively


@pytest.mark.parametrize("dtype", BITWISE_DTYPES, ids=str)
@pytest.mark.parametrize("name", list(BITWISE_OPS))
def test_bitwise_kernels_under_native_lowering(name, dtype):
    x, y = bitwise_edge_pairs(dtype)
    want = np.asarray(tw.compile(BITWISE_OPS[name], target="reference")(x, y))
    (got,), status = run_natively(BITWISE_OPS[name], [x, y])
    assert status == 0
    np.testing.assert_array_equal(got, want)
