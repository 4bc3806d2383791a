"""Every kernel the gpu target generates for tests/gpu/cases.py compiles to PTX for sm_80
and sm_90 (NVVM from pip) and links to a cubin with nvJitLink, with no register spills and
no more shared memory than a block may use: what a GPU would load, checked with none."""

from __future__ import annotations

import pytest

from tensorweave.targets.gpu.ptx import check_kernel, link
from tests.gpu.cases import CASES, VARIABLE_CASES
from tests.gpu.plans import plan_of

pytest.importorskip("cuda.bindings.nvjitlink")

ARCHES = [(8, 0), (9, 0)]


def _unique_kernels():
    """Each distinct kernel once (name aside) per signature: cases share many."""
    seen, out = set(), []
    for case, (fn, arrays) in (CASES | VARIABLE_CASES).items():
        for k in plan_of(fn, arrays).kernels:
            # the signature too: a copy kernel's source is the same for every dtype
            key = (k.source.replace(k.name, "K"), k.signature)
            if key not in seen:
                seen.add(key)
                out.append((case, k))
    return out


KERNELS = _unique_kernels()


def test_every_case_has_gpu_kernels_and_no_host_fallback():
    for case, (fn, arrays) in (CASES | VARIABLE_CASES).items():
        plan = plan_of(fn, arrays)
        assert plan.kernels, case
        assert not plan.fallbacks, (case, plan.fallbacks)


@pytest.mark.parametrize("cc", ARCHES, ids=lambda cc: f"sm_{cc[0]}{cc[1]}")
def test_kernels_compile_and_link_without_spills(cc):
    failures = []
    for case, kernel in KERNELS:
        try:
            report = check_kernel(kernel, cc)
        except Exception as e:  # noqa: BLE001 - collect them all, report at once
            failures.append(f"{case}/{kernel.name}: {type(e).__name__}: {e}")
            continue
        assert report.cubin_bytes > 0 and report.registers > 0
    assert not failures, "\n".join(failures)


def test_link_reports_a_broken_ptx():
    from tensorweave.errors import CompileError
    with pytest.raises(CompileError, match="nvJitLink failed"):
        link(".version 9.5\n.target sm_90\n.address_size 64\n.entry broken( { bad }", "sm_90")
