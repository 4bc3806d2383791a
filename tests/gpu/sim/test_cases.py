"""Each case of tests/gpu/cases.py on the gpu target (numba's simulator) against the
reference target: same dtype and shape, values within `cases.tolerance`."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tests.gpu.cases import CASES, tolerance


def assert_close(actual, expected):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, \
        (actual.dtype, actual.shape, expected.dtype, expected.shape)
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, equal_nan=True, **tolerance(expected.dtype))
    else:
        np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("case", sorted(CASES))
def test_case_matches_the_reference(case):
    fn, arrays = CASES[case]
    expected = tw.compile(fn, target="reference")(*arrays)
    gpu = tw.compile(fn, target="gpu")
    actual = gpu(*arrays)
    exe = gpu.get_concrete_function(*arrays).executable
    assert exe.native_reason is None and not exe.fallbacks
    actual, expected = (list(x) if isinstance(x, (tuple, list)) else [x]
                        for x in (actual, expected))
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_close(a, e)
