"""LLVM through llvmlite: the host target machine, the O3 pipeline and the JIT.

`compile_module(ir_text, names)` optimizes one module of LLVM IR for the host CPU (its
name and features, as LLVM detects them) with the new pass manager at O3 (loop and SLP
vectorization on), JIT-compiles it with MCJIT and returns the addresses of the named
functions. Results are cached in memory, keyed by the IR text: two kernels that generate
the same IR (same ops, dtypes and loop structure, whatever their sizes) share one
compilation.

LLVM state is process-wide and not thread-safe, so every use of it holds `LLVM_LOCK`.
Calling compiled code does not: ctypes releases the GIL for the call.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import llvmlite.binding as llvm

from ...errors import CompileError

LLVM_LOCK = threading.RLock()

# libm functions that LLVM intrinsics and our kernels lower to; MCJIT finds them in the
# process when libm is loaded (NumPy loads it), and `_ensure_libm` adds any that are not.
LIBM_SYMBOLS = ("expf", "exp", "logf", "log", "log1pf", "log1p", "sinf", "sin", "cosf", "cos",
                "powf", "pow", "fmodf", "fmod", "tanhf", "tanh")


@dataclass
class CacheStats:
    """How often `compile_module` compiled and how often the cache answered."""

    hits: int = 0
    misses: int = 0
    compile_seconds: float = 0.0


STATS = CacheStats()


@dataclass(frozen=True)
class HostInfo:
    """What code is generated for: the host CPU as LLVM sees it."""

    triple: str
    cpu: str
    features: str
    vector_bits: int  # widest SIMD register: 512 (AVX-512), 256 (AVX2) or 128


@lru_cache(maxsize=1)
def _initialize() -> None:
    # llvm.initialize() is gone in llvmlite 0.50; the native target is all we need
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    _ensure_libm()


def _ensure_libm() -> None:
    """Register libm's functions with the JIT's symbol table when the process does not
    already export them."""
    missing = [s for s in LIBM_SYMBOLS if not llvm.address_of_symbol(s)]
    if not missing:
        return
    name = ctypes.util.find_library("m")
    libm = ctypes.CDLL(name) if name else ctypes.CDLL(None)
    for s in missing:
        fn = getattr(libm, s, None)
        if fn is not None:
            llvm.add_symbol(s, ctypes.cast(fn, ctypes.c_void_p).value)


@lru_cache(maxsize=1)
def host_info() -> HostInfo:
    """The host's triple, CPU name, features and widest vector register."""
    _initialize()
    features = llvm.get_host_cpu_features()
    flat = features.flatten()
    enabled = {f[1:] for f in flat.split(",") if f.startswith("+")}
    bits = 512 if "avx512f" in enabled else 256 if "avx2" in enabled or "avx" in enabled else 128
    return HostInfo(llvm.get_process_triple(), llvm.get_host_cpu_name(), flat, bits)


def new_target_machine() -> llvm.TargetMachine:
    """A host target machine (opt level 3) built from the host CPU name and features.
    An execution engine takes ownership of (and frees) the one it is given: each gets
    its own."""
    info = host_info()
    target = llvm.Target.from_triple(info.triple)
    return target.create_target_machine(cpu=info.cpu, features=info.features, opt=3,
                                        codemodel="jitdefault", jit=True)


@lru_cache(maxsize=1)
def target_machine() -> llvm.TargetMachine:
    """The shared host target machine for optimization and assembly (never given to an
    execution engine)."""
    return new_target_machine()


def parse_and_optimize(ir_text: str, loop_vectorize: bool = False) -> llvm.ModuleRef:
    """Parse LLVM IR text, verify it, and run the O3 pipeline for the host on it.

    Fused kernels are vectorized explicitly by the code generator, so LLVM's loop
    vectorizer and unroller are off unless `loop_vectorize` (for plain scalar loops):
    they would only duplicate code and double the compile time. SLP vectorization
    stays on."""
    _initialize()
    tm = target_machine()
    with LLVM_LOCK:
        try:
            module = llvm.parse_assembly(ir_text)
            module.verify()
        except RuntimeError as e:
            raise CompileError(f"LLVM rejected the generated IR: {e}") from None
        module.triple = tm.triple
        module.data_layout = str(tm.target_data)
        options = llvm.create_pipeline_tuning_options(speed_level=3)
        options.loop_vectorization = loop_vectorize
        options.loop_interleaving = loop_vectorize
        options.loop_unrolling = loop_vectorize
        options.slp_vectorization = True
        builder = llvm.create_pass_builder(tm, options)
        builder.getModulePassManager().run(module, builder)
        return module


class CompiledModule:
    """A JIT-compiled module: keeps the execution engine (and so the code) alive."""

    def __init__(self, engine: llvm.ExecutionEngine, module: llvm.ModuleRef,
                 addresses: dict[str, int]) -> None:
        self.engine = engine
        self.module = module
        self.addresses = addresses

    def address(self, name: str) -> int:
        return self.addresses[name]


_CACHE: dict[str, CompiledModule] = {}


def compile_module(ir_text: str, names: Sequence[str], loop_vectorize: bool = False
                   ) -> CompiledModule:
    """JIT-compile `ir_text` (cached by the text) and resolve the functions `names`."""
    with LLVM_LOCK:
        hit = _CACHE.get(ir_text)
        if hit is not None:
            STATS.hits += 1
            return hit
        start = time.perf_counter()
        module = parse_and_optimize(ir_text, loop_vectorize)
        engine = llvm.create_mcjit_compiler(module, new_target_machine())
        engine.finalize_object()
        addresses = {}
        for name in names:
            addr = engine.get_function_address(name)
            if not addr:
                raise CompileError(f"JIT: function {name!r} not found after compilation")
            addresses[name] = addr
        compiled = CompiledModule(engine, module, addresses)
        _CACHE[ir_text] = compiled
        STATS.misses += 1
        STATS.compile_seconds += time.perf_counter() - start
        return compiled


def assembly(ir_text: str, loop_vectorize: bool = False) -> str:
    """The host assembly of an LLVM IR module after the O3 pipeline (for inspection)."""
    module = parse_and_optimize(ir_text, loop_vectorize)
    with LLVM_LOCK:
        return target_machine().emit_assembly(module)


def clear_cache() -> None:
    """Forget every compiled module (code still referenced by live kernels stays)."""
    with LLVM_LOCK:
        _CACHE.clear()
