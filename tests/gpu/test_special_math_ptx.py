"""The gpu target's kernels for the special functions (every special op; float32 and
float64) compile to PTX for sm_80 and sm_90 with NVVM and
link with nvJitLink, without register spills: what a GPU would load, checked with none
(their numerics: tests/gpu/sim/test_special_math_gpu.py)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tests.gpu.plans import plan_of

pytest.importorskip("cuda.bindings.nvjitlink")

ARCHES = [(8, 0), (9, 0)]


def _special(x, y):
    return (tw.math.lgamma(x) + tw.math.digamma(y) * tw.math.erfc(x)
            + tw.math.xlogy(x, y) - tw.math.xlog1py(y, x) + tw.math.xdivy(x, y)
            + tw.math.erfinv(x * 0.3) * tw.math.ndtri(y * 0.1) + tw.math.bessel_i0e(x)
            - tw.math.bessel_i1e(y) + tw.math.polygamma(tw.floor(x), y))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_special_function_kernels_compile_and_link(dtype):
    from tensorweave.targets.gpu.ptx import check_kernel_arches

    x = np.linspace(0.5, 3.0, 6).astype(dtype)
    plan = plan_of(_special, [x, x[::-1].copy()])
    assert plan.kernels and not plan.fallbacks, plan.fallbacks
    sources = "".join(k.source for k in plan.kernels)
    for fn in ("math.lgamma", "math.erfc", "math.log1p", "math.tan", "math.erf", "math.pow"):
        assert fn in sources
    for kernel in plan.kernels:
        reports = check_kernel_arches(kernel, ARCHES)
        assert sorted(reports) == ARCHES
        assert all(r.cubin_bytes > 0 and r.registers > 0 for r in reports.values())
