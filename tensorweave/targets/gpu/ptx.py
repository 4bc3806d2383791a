"""Ahead-of-time checks with no GPU: a kernel's PTX (NVVM, through numba-cuda) and its
link to a cubin with nvJitLink (`cuda.bindings.nvjitlink`), whose log reports registers,
spills and shared memory.

NVVM from pip (13.x) writes PTX that an older system ``ptxas`` rejects, so linking goes
through the nvJitLink that comes with it, never the system toolkit. `compile_ptx` needs
the real numba.cuda (not the simulator), but no GPU: the compute capability is given.
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


def compile_ptx(kernel: Kernel, cc: tuple[int, int]) -> str:
    """The PTX of `kernel` for compute capability `cc`, e.g. (9, 0)."""
    from .device import cuda
    module = cuda()
    if not hasattr(module, "compile_ptx"):
        raise CompileError("compile_ptx needs numba.cuda without the simulator "
                           "(NUMBA_ENABLE_CUDASIM is set)")
    fn = python_function(kernel)
    ptx, _ = module.compile_ptx(fn, kernel.signature, cc=cc)
    return ptx


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


def check_kernel(kernel: Kernel, cc: tuple[int, int]) -> LinkReport:
    """Compile `kernel` for `cc` and link it; raises CompileError on a link error, on
    register spills, or on more static shared memory than a block may use."""
    arch = f"sm_{cc[0]}{cc[1]}"
    report = link(compile_ptx(kernel, cc), arch, kernel.name)
    if report.spills:
        raise CompileError(f"{kernel.name} spills registers on {arch}: "
                           f"{report.spill_stores} bytes stored, {report.spill_loads} loaded")
    if max(report.shared_bytes, kernel.shared_bytes) > STATIC_SHARED_LIMIT:
        raise CompileError(f"{kernel.name} uses {report.shared_bytes} bytes of shared memory "
                           f"on {arch} (limit {STATIC_SHARED_LIMIT})")
    return report


__all__ = ["STATIC_SHARED_LIMIT", "LinkReport", "check_kernel", "compile_ptx", "link"]
