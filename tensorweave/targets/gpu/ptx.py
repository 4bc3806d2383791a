"""Ahead-of-time checks with no GPU: a kernel's PTX (NVVM, through numba-cuda) and its
link to a cubin with nvJitLink (`cuda.bindings.nvjitlink`), whose log reports registers,
spills and shared memory.

NVVM from pip (13.x) writes PTX that an older system ``ptxas`` rejects, so linking goes
through the nvJitLink that comes with it, never the system toolkit. `compile_ptx` needs
the real numba.cuda (not the simulator), but no GPU: the compute capability is given.

`compile_ptx_arches` and `check_kernel_arches` serve several compute capabilities from one
run of numba's front end (typing and lowering to NVVM IR, the larger part): only NVVM
(IR to PTX) and the link run once per capability.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import CompileError
from .compile import python_function
from .source import Kernel

# shared memory a block may use without opting in (cudaFuncSetAttribute), on sm_80/sm_90
STATIC_SHARED_LIMIT = 48 * 1024

_SPILL_RE = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_REGS_RE = re.compile(r"[Uu]sed (\d+) registers")
_SMEM_RE = re.compile(r"(\d+) bytes smem")
_LMEM_RE = re.compile(r"(\d+) bytes lmem")


# The compute capabilities at which numba-cuda's lowering changes the NVVM IR it writes:
# double atomic add is native from 6.0 (nvvmutils.declare_atomic_add_float64), fastmath
# float32 tanh is tanh.approx from 7.5 (mathimpl.impl_tanh). Capabilities on the same side
# of each lower every kernel alike, so they share one front end. tests/gpu/test_ptx.py
# fails when numba-cuda compares the capability it compiles for against other values.
LOWERING_CC_THRESHOLDS = ((6, 0), (7, 5))


def _real_cuda() -> object:
    from .device import cuda
    module = cuda()
    if not hasattr(module, "compile_ptx"):
        raise CompileError("compile_ptx needs numba.cuda without the simulator "
                           "(NUMBA_ENABLE_CUDASIM is set)")
    return module


def compile_ptx(kernel: Kernel, cc: tuple[int, int]) -> str:
    """The PTX of `kernel` for compute capability `cc`, e.g. (9, 0)."""
    fn = python_function(kernel)
    ptx, _ = _real_cuda().compile_ptx(fn, kernel.signature, cc=cc)
    return ptx


def compile_ptx_arches(kernel: Kernel, ccs: list[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """The PTX of `kernel` for each compute capability in `ccs`, what `compile_ptx` gives
    for each, with numba's front end run once per group of capabilities it lowers alike
    (`LOWERING_CC_THRESHOLDS`) and NVVM once per capability."""
    _real_cuda()
    groups: dict[tuple[bool, ...], list[tuple[int, int]]] = {}
    for cc in ccs:
        groups.setdefault(tuple(cc >= t for t in LOWERING_CC_THRESHOLDS), []).append(cc)
    ptx = {}
    for group in groups.values():
        library = _front_end(kernel, group[0])
        for cc in group:
            codes = library.get_asm_strs(cc=cc)
            if len(codes) != 1:  # as numba's compile_ptx: one kernel, one module
                raise CompileError(f"{kernel.name} compiles to {len(codes)} PTX modules, not 1")
            ptx[cc] = codes[0]
    return {cc: ptx[cc] for cc in ccs}


def _front_end(kernel: Kernel, cc: tuple[int, int]) -> object:
    """numba-cuda's code library of `kernel` as `cuda.compile_ptx` builds it (typed,
    lowered to NVVM IR, fixed up as a kernel), before NVVM: its ``get_asm_strs(cc=...)``
    runs NVVM for any capability. numba-cuda has no public call that stops there; this is
    the body of its `compile` with compile_ptx's defaults."""
    from numba.cuda import compiler
    from numba.cuda.core.compiler_lock import global_compiler_lock
    with global_compiler_lock:
        library, _ = compiler._compile_pyfunc_with_fixup(
            python_function(kernel), kernel.signature, debug=None, lineinfo=False,
            device=False, fastmath=False, cc=cc, opt=None, abi="numba", abi_info=None,
            forceinline=False, launch_bounds=None, lto=False)
    return library


@dataclass
class LinkReport:
    """What nvJitLink says about one kernel: its cubin size and resource use."""

    arch: str
    cubin_bytes: int
    registers: int
    spill_stores: int
    spill_loads: int
    shared_bytes: int
    local_bytes: int
    log: str

    @property
    def spills(self) -> bool:
        return bool(self.spill_stores or self.spill_loads)


def link(ptx: str, arch: str, name: str = "kernel") -> LinkReport:
    """Link `ptx` into a cubin for `arch` (e.g. ``"sm_90"``) with nvJitLink; raises
    CompileError with nvJitLink's log when it fails."""
    from cuda.bindings import nvjitlink
    handle = nvjitlink.create(2, [f"-arch={arch}", "-verbose"])
    try:
        data = ptx.encode()
        try:
            nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), name)
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as e:
            raise CompileError(f"nvJitLink failed for {name} ({arch}): {e}\n"
                               f"{_error_log(handle)}") from None
        log = _info_log(handle)
        size = nvjitlink.get_linked_cubin_size(handle)
    finally:
        nvjitlink.destroy(handle)
    stores = loads = regs = smem = lmem = 0
    for m in _SPILL_RE.finditer(log):
        stores, loads = max(stores, int(m[1])), max(loads, int(m[2]))
    for pattern in (_REGS_RE,):
        regs = max([int(m[1]) for m in pattern.finditer(log)] or [0])
    smem = max([int(m[1]) for m in _SMEM_RE.finditer(log)] or [0])
    lmem = max([int(m[1]) for m in _LMEM_RE.finditer(log)] or [0])
    return LinkReport(arch, size, regs, stores, loads, smem, lmem, log)


def _info_log(handle: int) -> str:
    from cuda.bindings import nvjitlink
    n = nvjitlink.get_info_log_size(handle)
    buf = bytearray(n)
    if n:
        nvjitlink.get_info_log(handle, buf)
    return buf.decode(errors="replace").rstrip("\x00")


def _error_log(handle: int) -> str:
    from cuda.bindings import nvjitlink
    try:
        n = nvjitlink.get_error_log_size(handle)
        buf = bytearray(n)
        if n:
            nvjitlink.get_error_log(handle, buf)
        return buf.decode(errors="replace").rstrip("\x00")
    except Exception:  # noqa: BLE001 - the log is a courtesy
        return ""


def _arch(cc: tuple[int, int]) -> str:
    return f"sm_{cc[0]}{cc[1]}"


def _checked(kernel: Kernel, ptx: str, arch: str) -> LinkReport:
    """Link `ptx` for `arch`; CompileError on a link error, spills or too much shared memory."""
    report = link(ptx, arch, kernel.name)
    if report.spills:
        raise CompileError(f"{kernel.name} spills registers on {arch}: "
                           f"{report.spill_stores} bytes stored, {report.spill_loads} loaded")
    shared = max(report.shared_bytes, kernel.shared_bytes)
    if shared > STATIC_SHARED_LIMIT:
        raise CompileError(f"{kernel.name} uses {shared} bytes of shared memory "
                           f"on {arch} (limit {STATIC_SHARED_LIMIT})")
    return report


def check_kernel(kernel: Kernel, cc: tuple[int, int]) -> LinkReport:
    """Compile `kernel` for `cc` and link it; raises CompileError on a link error, on
    register spills, or on more static shared memory than a block may use."""
    return _checked(kernel, compile_ptx(kernel, cc), _arch(cc))


def check_kernel_arches(kernel: Kernel,
                        ccs: list[tuple[int, int]]) -> dict[tuple[int, int], LinkReport]:
    """`check_kernel` for each compute capability in `ccs`, with one front end
    (`compile_ptx_arches`); the CompileError names every capability that fails."""
    reports, problems = {}, []
    for cc, ptx in compile_ptx_arches(kernel, ccs).items():
        try:
            reports[cc] = _checked(kernel, ptx, _arch(cc))
        except CompileError as e:
            problems.append(str(e))
    if problems:
        raise CompileError("\n".join(problems))
    return reports


__all__ = ["LOWERING_CC_THRESHOLDS", "STATIC_SHARED_LIMIT", "LinkReport", "check_kernel",
           "check_kernel_arches", "compile_ptx", "compile_ptx_arches", "link"]
