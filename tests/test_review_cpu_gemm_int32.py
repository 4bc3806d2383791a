"""Review of the cpu target's GEMM on dimensions past the int32 range: the BLAS takes
m, n, k and the leading dimensions as 32-bit ints (LP64 Fortran interface), and the
cpu target passed them truncated, so a product with a dimension of 2**31 or more (an
8 GiB float32 row, say) got an illegal or wrapped size: the library refused it
(``parameter number 10 had an illegal value``) and left C as it was, a silently wrong
result. Such products now run the generated GEMM, whose loops count in int64.

No tensor of 2**31 elements is allocated: a row-major A of one row may have any leading
dimension (only row 0 is read), so lda = 2**31 + 1 reaches the same code."""

import ctypes

import llvmlite.ir as ir
import numpy as np
import pytest

from tensorweave.compiler.dtypes import as_dtype
from tensorweave.targets.cpu import blas, jit, lowering


def _gemm(dtype, monkeypatch):
    """The cpu target's BLAS GEMM function (one thread), JIT-compiled, as a ctypes
    function of `lowering._gemm_type`'s signature."""
    monkeypatch.setenv("TW_NUM_THREADS", "1")
    if not blas.register_blas():
        pytest.skip("no BLAS")
    dt = as_dtype(dtype)
    module = ir.Module()
    inner = lowering.gemm_function(module, dt, "blas")
    entry = ir.Function(module, inner.function_type, "entry")
    b = ir.IRBuilder(entry.append_basic_block())
    b.call(inner, list(entry.args))
    b.ret_void()
    compiled = jit.compile_module(str(module), ["entry"])
    scalar = ctypes.c_float if dtype == np.float32 else ctypes.c_double
    p, i32, i64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64
    fn = ctypes.CFUNCTYPE(None, i32, i32, i64, i64, i64, scalar, p, i64, p, i64, scalar, p,
                          i64)(compiled.address("entry"))
    return fn, compiled


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lda", [2**31 + 1, 2**32 + 3])
def test_a_leading_dimension_past_int32_is_not_truncated(dtype, lda, monkeypatch) -> None:
    fn, keep = _gemm(dtype, monkeypatch)
    a = np.array([[1.0, 2.0, 3.0]], dtype)            # 1 x 3, row 0 of a huge-ld matrix
    b = np.array([[1.0, 0.5], [2.0, 0.25], [4.0, -1.0]], dtype)  # 3 x 2
    c = np.full((1, 2), -7.0, dtype)
    fn(0, 0, 1, 2, 3, 1.0, a.ctypes.data, lda, b.ctypes.data, 2, 0.0, c.ctypes.data, 2)
    np.testing.assert_array_equal(c, a @ b)  # [[17, -2]], exact
    # an ordinary leading dimension still goes to the BLAS, same result
    c2 = np.full((1, 2), -7.0, dtype)
    fn(0, 0, 1, 2, 3, 1.0, a.ctypes.data, 3, b.ctypes.data, 2, 0.0, c2.ctypes.data, 2)
    np.testing.assert_array_equal(c2, a @ b)
    del keep
