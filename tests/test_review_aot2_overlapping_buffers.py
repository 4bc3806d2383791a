"""Results are written while the arguments are still read, so the header forbids
overlapping buffers, but nothing checked it: ``al_run`` with ``results[0] == args[0]``
for ``(a @ b, transpose(a))`` returned status 0 with both results all zeros. A call whose
result buffer overlaps an argument's or another result's now computes nothing and
returns -2, and ``_run_with_error`` names the result. Adjacent buffers (one allocation
cut in pieces) and empty ones do not overlap."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.targets.cpu.aot import build_library
from tests.helpers import needs_c_compiler

S = tw.TensorSpec


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    f = tw.compile(lambda a, b, e: (tw.matmul(a, b), tw.transpose(a), tw.reshape(e, [0, 1])),
                   input_signature=[S([3, 3], tw.float32), S([3, 3], tw.float32),
                                    S([0], tw.float32)])
    return f, build_library(f.get_concrete_function(), str(tmp_path_factory.mktemp("al")),
                            name="al")


def _call(lib, args, results):
    run = ctypes.CDLL(lib.library).al_run_with_error
    run.restype = ctypes.c_int
    error = ctypes.c_char_p()
    status = run((ctypes.c_void_p * 3)(*args), (ctypes.c_void_p * 3)(*results),
                 ctypes.byref(error))
    return status, error.value and error.value.decode()


A = np.arange(9, dtype=np.float32).reshape(3, 3)
B = np.eye(3, dtype=np.float32)[::-1].copy()


@needs_c_compiler
@pytest.mark.parametrize("case", ["result is an argument", "result inside an argument",
                                  "two results share a buffer"])
def test_overlapping_buffers_are_refused(lib, case):
    _, lib = lib
    a, b, e = A.copy(), B.copy(), np.zeros(0, np.float32)
    r0, r1 = np.full((3, 3), 7, np.float32), np.full((3, 3), 7, np.float32)
    big = np.zeros(20, np.float32)
    results = {"result is an argument": [a.ctypes.data, r1.ctypes.data, e.ctypes.data],
               "result inside an argument": [r0.ctypes.data, big.ctypes.data, e.ctypes.data],
               "two results share a buffer": [r0.ctypes.data, r0.ctypes.data + 4,
                                              e.ctypes.data]}[case]
    args = [a.ctypes.data, (big.ctypes.data + 8) if case == "result inside an argument"
            else b.ctypes.data, e.ctypes.data]
    if case == "result inside an argument":
        big[2:11] = B.reshape(-1)
    status, error = _call(lib, args, results)
    assert status == -2
    which = 0 if case == "result is an argument" else 1
    assert error.startswith(f"the buffer of result {which} ('output{which}') overlaps")
    # nothing was computed
    assert np.array_equal(a, A) and (r0 == 7).all() and (r1 == 7).all()


@needs_c_compiler
def test_adjacent_and_empty_buffers_are_separate(lib):
    f, lib = lib
    a, b, e = A.copy(), B.copy(), np.zeros(0, np.float32)
    out = np.zeros(18, np.float32)  # both results in one allocation, back to back
    status, error = _call(lib, [a.ctypes.data, b.ctypes.data, e.ctypes.data],
                          [out.ctypes.data, out.ctypes.data + 36, a.ctypes.data])
    assert (status, error) == (0, None)
    want = f(A, B, np.zeros(0, np.float32))
    assert want[2].shape == (0, 1)
    np.testing.assert_allclose(out[:9].reshape(3, 3), want[0], rtol=1e-6)
    np.testing.assert_array_equal(out[9:].reshape(3, 3), want[1])
