"""Every kernel the gpu target generates for tests/gpu/cases.py compiles to PTX for sm_80
and sm_90 (NVVM from pip) and links to a cubin with nvJitLink, with no register spills and
no more shared memory than a block may use: what a GPU would load, checked with none.

numba's front end (typing, lowering to NVVM IR) runs once per kernel for both
architectures (`check_kernel_arches`), which halves the time; the tests below check that
this gives the PTX `cuda.compile_ptx` gives and that a bad kernel still fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tensorweave.errors import CompileError
from tensorweave.targets.gpu.ptx import (
    LOWERING_CC_THRESHOLDS,
    check_kernel_arches,
    compile_ptx,
    compile_ptx_arches,
    link,
)
from tensorweave.targets.gpu.source import PRELUDE, Kernel
from tests.gpu.cases import CASES, VARIABLE_CASES
from tests.gpu.plans import plan_of

pytest.importorskip("cuda.bindings.nvjitlink")

ARCHES = [(8, 0), (9, 0)]
# the kernels are checked in this many tests, so pytest-xdist's workers share them
SHARDS = 2


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


def _link_failures(kernels: list[tuple[str, Kernel]]) -> list[str]:
    """One line per kernel that fails to compile or link for an arch of ARCHES, spills,
    or uses too much shared memory."""
    failures = []
    for case, kernel in kernels:
        try:
            reports = check_kernel_arches(kernel, ARCHES)
        except Exception as e:  # noqa: BLE001 - collect them all, report at once
            failures.append(f"{case}/{kernel.name}: {type(e).__name__}: {e}")
            continue
        assert sorted(reports) == ARCHES
        assert all(r.cubin_bytes > 0 and r.registers > 0 for r in reports.values())
    return failures


def test_every_case_has_gpu_kernels_and_no_host_fallback():
    for case, (fn, arrays) in (CASES | VARIABLE_CASES).items():
        plan = plan_of(fn, arrays)
        assert plan.kernels, case
        assert not plan.fallbacks, (case, plan.fallbacks)


@pytest.mark.parametrize("shard", range(SHARDS), ids=lambda s: f"part{s}")
def test_kernels_compile_and_link_without_spills(shard):
    failures = _link_failures(KERNELS[shard::SHARDS])
    assert not failures, "\n".join(failures)


def _numba_names_numbered(ptx: str) -> str:
    """`ptx` with numba's mangled names (they hold a per-compile id and the compile
    flags, the compute capability among them) and its shared arrays' names (numbered
    per process) replaced by N0, N1, ... in order."""
    names: dict[str, str] = {}
    return re.sub(r"_ZN\w+?E(?=\W|_param_)|_cudapy_smem_\d+\b",
                  lambda m: names.setdefault(m[0], f"N{len(names)}"), ptx)


def _first_kernel(predicate):
    return next((case, k) for case, k in KERNELS if predicate(k))


def test_one_front_end_gives_the_ptx_compile_ptx_gives_for_each_arch():
    # kernels that meet numba's arch-dependent lowering (tanh, float64 atomic add), and one
    # with shared memory
    chosen = [_first_kernel(lambda k: "math.tanh" in k.source),
              _first_kernel(lambda k: "cuda.atomic.add" in k.source and k.params[0] == "float64"),
              _first_kernel(lambda k: "cuda.shared" in k.source)]
    for case, kernel in chosen:
        shared = compile_ptx_arches(kernel, ARCHES)
        for cc in ARCHES:
            assert f".target sm_{cc[0]}{cc[1]}" in shared[cc]
            assert (_numba_names_numbered(shared[cc])
                    == _numba_names_numbered(compile_ptx(kernel, cc))), (case, kernel.name, cc)


def test_numba_cuda_lowers_by_compute_capability_only_at_the_known_thresholds():
    """LOWERING_CC_THRESHOLDS is read off numba-cuda's source: a new comparison of the
    capability being compiled for (after an upgrade) must be reviewed there."""
    import numba.cuda
    root = Path(numba.cuda.__file__).parent
    found = set()
    for path in root.rglob("*.py"):
        if path.relative_to(root).parts[0] in ("tests", "simulator"):
            continue
        text = path.read_text()
        # lowering reaches the compile flags (and their compute_capability) this way
        if "ConfigStack" not in text and "flags.compute_capability" not in text:
            continue
        for m in re.finditer(r"(?:\bcc|compute_capability)\s*(?:[<>]=?|==|!=)\s*\((\d+),\s*(\d+)\)",
                             text):
            found.add((int(m[1]), int(m[2])))
    assert found == set(LOWERING_CC_THRESHOLDS)
    assert all(cc >= t for cc in ARCHES for t in LOWERING_CC_THRESHOLDS)


def _bad_kernel(name: str, body: str, params: list[str], shared_bytes: int = 0) -> Kernel:
    return Kernel(name, f"{PRELUDE}\n\n@cuda.jit\ndef {name}(a, out):\n{body}", params,
                  (1,), (32,), shared_bytes=shared_bytes)


def test_a_kernel_that_spills_fails_on_every_arch():
    # NVVM unrolls the loops and keeps the 130 float64 values in registers: more than 255
    body = ("    i = cuda.grid(1)\n    v = cuda.local.array(130, float64)\n"
            "    for k in range(130):\n        v[k] = a[i + k]\n"
            "    t = float64(0)\n    for k in range(130):\n        t += v[k] * v[129 - k]\n"
            "    for k in range(130):\n        out[i + k] = v[k] * t\n")
    [failure] = _link_failures([("bad", _bad_kernel("kspill", body, ["float64", "float64"]))])
    assert "kspill spills registers on sm_80" in failure
    assert "kspill spills registers on sm_90" in failure


def test_a_kernel_over_the_shared_memory_limit_fails_to_link():
    body = ("    buf = cuda.shared.array(16384, float32)\n"  # 64 KiB, static: over 48 KiB
            "    i = cuda.threadIdx.x\n    buf[i] = a[i]\n    cuda.syncthreads()\n"
            "    out[i] = buf[16383 - i]\n")
    kernel = _bad_kernel("kshared", body, ["float32", "float32"], shared_bytes=65536)
    [failure] = _link_failures([("bad", kernel)])
    assert "nvJitLink failed for kshared (sm_80)" in failure
    assert "nvJitLink failed for kshared (sm_90)" in failure
    assert "uses too much shared data" in failure


def test_a_kernel_declaring_too_much_shared_memory_fails():
    body = "    i = cuda.grid(1)\n    out[i] = a[i]\n"
    kernel = _bad_kernel("kdeclared", body, ["float32", "float32"], shared_bytes=65536)
    with pytest.raises(CompileError, match="kdeclared uses 65536 bytes of shared memory on sm_90"):
        check_kernel_arches(kernel, ARCHES)


def test_link_reports_a_broken_ptx():
    with pytest.raises(CompileError, match="nvJitLink failed"):
        link(".version 9.5\n.target sm_90\n.address_size 64\n.entry broken( { bad }", "sm_90")
