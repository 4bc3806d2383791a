"""LLVM through llvmlite: the host target machine, the optimization pipeline and the JIT.

`compile_module(ir_text, names)` optimizes one module of LLVM IR for the host CPU (its
name and features, as LLVM detects them) with the new pass manager at O3 (`opt_level`:
``TW_LLVM_OPT`` 1-3; identical functions merged first, SLP vectorization on, the
loop vectorizer with `loop_vectorize`, LLVM's loop unrolling off), JIT-compiles it with
MCJIT and returns the addresses of the named functions. Results are cached in memory,
keyed by the IR text (and `loop_vectorize`, the pipeline): two kernels that generate the
same IR (same ops, dtypes and loop structure, whatever their sizes) share one
compilation. The memory cache finds every module still held elsewhere and holds only
the recently used ones itself (`MEMORY_CACHE_SIZE`): each engine costs memory mappings,
and a load that would take the process near the kernel's limit of them raises
`MappingLimitError` instead of letting LLVM abort (`_check_mappings`).

Code reaches the engine as an object file: the optimized module is assembled with
`TargetMachine.emit_object` and loaded with `ExecutionEngine.add_object_file`. The same
bytes go to the on-disk cache (`disk_cache`), keyed by `cache_key` (IR text,
`loop_vectorize`, host triple/CPU/features, llvmlite and LLVM versions, cache format), so
a later process loads them without running LLVM's optimizer or code generator
(`TW_CACHE_DIR=off` or `TW_DISABLE_CACHE=1` turns that off). External
symbols (libm, the BLAS symbols registered with `llvm.add_symbol`) are resolved by name
when an object is loaded, in whichever process loads it; an object that needs a symbol
this process does not define is refused (an entry from disk is then rebuilt, a fresh
compile raises `CompileError`) instead of letting LLVM abort the process.

A step's module (`compile_keyed`, `compile_digest`) is cut into parts compiled on
`compile_threads()` threads (``TW_COMPILE_THREADS``; 1 compiles it whole), each part in an
LLVM context and with a target machine of its own (`_compile_parts`, `ir_split`); the
objects are linked in one engine and stored as one entry (`pack_objects`).

LLVM's process-wide state (the global context, engines) is not thread-safe, so every
use of it holds `LLVM_LOCK`; the parts' threads use only objects of their own. Calling
compiled code does not: ctypes releases the GIL for the call.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import hashlib
import logging
import os
import struct
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import llvmlite
import llvmlite.binding as llvm

from ...errors import CompileError
from . import disk_cache, ir_split

_log = logging.getLogger(__name__)
LLVM_LOCK = threading.RLock()

# libm functions that LLVM intrinsics and our kernels lower to; MCJIT finds them in the
# process when libm is loaded (NumPy loads it), and `_ensure_libm` adds any that are not.
LIBM_SYMBOLS = ("expf", "exp", "logf", "log", "log1pf", "log1p", "sinf", "sin", "cosf", "cos",
                "powf", "pow", "fmodf", "fmod", "tanhf", "tanh")


@dataclass
class CacheStats:
    """How often `compile_module` compiled and how often the caches answered.

    `hits`/`misses` count the in-memory cache; every miss is answered from disk
    (`disk_hits`) or by LLVM (`llvm_compiles`). `disk_misses` counts lookups that found no
    usable entry while the disk cache is on, `disk_errors` entries that were invalid or
    failed to load (deleted and rebuilt), `disk_writes` entries written.
    `compile_seconds` is the time spent answering misses, both ways; `disk_load_seconds`
    the part of it spent loading entries from disk. `split_compiles` counts the LLVM
    compiles that ran as several parts on threads (`compile_threads`)."""

    hits: int = 0
    misses: int = 0
    compile_seconds: float = 0.0
    disk_hits: int = 0
    disk_misses: int = 0
    disk_errors: int = 0
    disk_writes: int = 0
    llvm_compiles: int = 0
    disk_load_seconds: float = 0.0
    split_compiles: int = 0  # modules LLVM compiled as several parts on threads


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
    # glibc's soname first: `find_library` runs ldconfig or a compiler (20-120 ms, most
    # of a first call whose code comes from the disk cache)
    try:
        libm = ctypes.CDLL("libm.so.6")
    except OSError:
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


def opt_level() -> int:
    """The speed level of the module pipeline: ``TW_LLVM_OPT`` (1-3), default 3.

    O2 was the default for a while (O3's extra passes bought nothing at run time and cost
    a fifth of a cold first call: W3 1.21-1.33 s to compile instead of 1.58-1.71 s), but
    with its loop unroller off (`LOOP_UNROLLING`, as here) it miscompiled a
    DepthwiseConv2dNative node function (H=2, W=1, a 2x1 filter, explicit padding (0, 1)
    on the right: its second filter row was dropped;
    tests/test_review_cpu_depthwise_opt_level.py). The cause is an LLVM bug, not undefined
    behaviour in our IR: InstCombine's store merging (`mergeStoreIntoSuccessor`) deletes a
    store on a loop back edge (docs/llvm_o2_miscompile.md). Its minimal reproducer is
    wrong at O1, O2 and O3 alike (tests/test_review_llvm_instcombine_store_merge.py); O3
    computes the depthwise case right only because its pipeline shapes that function
    differently, so it stays the default. The code generator (instruction selection,
    scheduling, register allocation) is at -O3 either way."""
    try:
        level = int(os.environ.get("TW_LLVM_OPT", "3"))
    except ValueError:
        level = 3
    return min(3, max(1, level))


# The pipeline's choices (`parse_and_optimize`); cache keys name them (`_pipeline`), so
# a test that compares their results with the other setting's gets entries of its own.
LOOP_UNROLLING = False
LOOP_INTERLEAVING = False
MERGE_FUNCTIONS = True


def parse_and_optimize(ir_text: str, loop_vectorize: bool = False) -> llvm.ModuleRef:
    """Parse LLVM IR text, verify it, and run the host's pipeline at `opt_level` on it.

    Fused kernels are vectorized explicitly by the code generator, so LLVM's loop
    vectorizer is off unless `loop_vectorize` (for plain scalar loops: a step's updates,
    reductions, epilogues): it would only duplicate code. LLVM's loop unroller and the
    vectorizer's interleaving stay off either way: with them a cold W2 / W3 step took
    ~30% longer to optimize and compile (objects 36 / 62 KB -> 24 / 44 KB without) and
    ran no faster (W2-W5 steps the same to 1-2% on the znver4 host: their hot loops are
    vectorized and tiled by the code generator). SLP vectorization stays on. `MergeFunctions` first folds
    functions that came out identical (two layers' epilogues, reductions of the same
    shape) so that each is optimized and compiled once."""
    _initialize()
    tm = target_machine()
    with LLVM_LOCK:
        module = _parse(ir_text, tm)
        _optimize(module, tm, loop_vectorize, _locked_run)
        return module


def _parse(ir_text: str, tm: llvm.TargetMachine,
           context: llvm.ContextRef | None = None) -> llvm.ModuleRef:
    """`ir_text` parsed (into `context`, default LLVM's global one) and verified, with
    `tm`'s triple and data layout; CompileError when LLVM rejects it."""
    try:
        module = llvm.parse_assembly(ir_text, context=context)
    except RuntimeError as e:
        raise CompileError(f"LLVM rejected the generated IR: {e}") from None
    try:
        module.verify()
    except RuntimeError as e:
        module.close()
        raise CompileError(f"LLVM rejected the generated IR: {e}") from None
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    return module


def _locked_run(pm: Any, module: llvm.ModuleRef, builder: Any) -> None:
    pm.run(module, builder)


def _optimize(module: llvm.ModuleRef, tm: llvm.TargetMachine, loop_vectorize: bool,
              run: Callable[[Any, llvm.ModuleRef, Any], None]) -> None:
    """Run the pipeline (`parse_and_optimize`) on `module` with `run(pass manager,
    module, pass builder)`. Each run gets a pass builder of its own: llvmlite registers
    the run's instrumentation callbacks with the builder and frees them when the run
    ends, so a builder used twice would call the first run's freed callbacks."""
    options = llvm.create_pipeline_tuning_options(speed_level=opt_level())
    options.loop_vectorization = loop_vectorize
    options.loop_interleaving = loop_vectorize and LOOP_INTERLEAVING
    options.loop_unrolling = loop_vectorize and LOOP_UNROLLING
    options.slp_vectorization = True
    held = [options]
    try:
        if MERGE_FUNCTIONS:
            merge_builder = llvm.create_pass_builder(tm, options)
            merge = llvm.create_new_module_pass_manager()
            held += [merge, merge_builder]
            merge.add_merge_functions_pass()
            run(merge, module, merge_builder)
        builder = llvm.create_pass_builder(tm, options)
        held.append(builder)
        pipeline = builder.getModulePassManager()
        held.append(pipeline)
        run(pipeline, module, builder)
    finally:
        for obj in reversed(held):  # (pass managers before their builders)
            obj.close()


# Engines and modules whose CompiledModule was dropped, freed by `_bury` under
# `LLVM_LOCK`: the last reference can go in any thread at any time (an executable
# collected), and freeing LLVM objects edits the process-wide LLVM context, which must
# not happen while another thread parses or compiles.
_GRAVEYARD: list[tuple[llvm.ExecutionEngine, llvm.ModuleRef | None]] = []


class CompiledModule:
    """A JIT-compiled module: keeps the execution engine (and so the code) alive.
    `module` is the optimized LLVM module when this process compiled it, None when its
    code came from the disk cache. Whoever calls its code holds it for as long as the
    addresses are used: the in-memory cache keeps only the recently used ones."""

    def __init__(self, engine: llvm.ExecutionEngine, module: llvm.ModuleRef | None,
                 addresses: dict[str, int]) -> None:
        self.engine = engine
        self.module = module
        self.addresses = addresses

    def address(self, name: str) -> int:
        return self.addresses[name]

    def __del__(self) -> None:
        graveyard = globals().get("_GRAVEYARD")  # (None at interpreter exit)
        if graveyard is not None:
            graveyard.append((self.engine, self.module))  # (list.append is atomic)


def _bury() -> None:
    """Free the engines (code memory, mappings) and modules of dropped modules."""
    with LLVM_LOCK:
        while _GRAVEYARD:
            engine, module = _GRAVEYARD.pop()
            engine.close()
            if module is not None:
                module.close()


class ObjectLoadError(Exception):
    """An object file that cannot be (or was not) loaded into an execution engine."""


class MappingLimitError(CompileError):
    """Loading more code would take the process past its limit of memory mappings."""


# The in-memory cache: (loop_vectorize, pipeline, IR text) or (loop_vectorize, pipeline,
# key) -> compiled module. Every module anyone still holds is found (`_LIVE`, weak), and
# the `MEMORY_CACHE_SIZE` most recently used are held here too (`_RECENT`), so that a
# retrace of a dropped function does not reload them. The rest are freed: each engine
# holds ~3 memory mappings for its code, and a process that kept every module (a
# thorough run of the op tests: tens of thousands of shape-specialized steps) reached
# the kernel's vm.max_map_count (65530), where LLVM could not map the next object's
# sections and aborted the process ("LLVM ERROR: Unable to allocate section memory!",
# in add_object_file) or left code unexecutable (a segfault on calling it).
MEMORY_CACHE_SIZE = 256
_LIVE: weakref.WeakValueDictionary[tuple, CompiledModule] = weakref.WeakValueDictionary()
_RECENT: OrderedDict[tuple, CompiledModule] = OrderedDict()
# tensorweave's own code (`compile_module` with ``runtime``): kept for the process, even
# past `clear_cache`, as callers may keep only its addresses (the BLAS split probes)
_PINNED: list[CompiledModule] = []


def _cached(key: tuple) -> CompiledModule | None:
    """The module under `key` if anything holds it; it becomes the most recently used."""
    hit = _LIVE.get(key)
    if hit is not None:
        _remember(key, hit)
    return hit


def _remember(key: tuple, compiled: CompiledModule) -> None:
    _LIVE[key] = compiled
    _RECENT[key] = compiled
    _RECENT.move_to_end(key)
    while len(_RECENT) > MEMORY_CACHE_SIZE:
        _RECENT.popitem(last=False)


def _pipeline() -> str:
    """What the code of an entry depends on besides its key's other parts: the pipeline
    and target-machine options of `parse_and_optimize` and `new_target_machine`."""
    return (f"mergefunc={int(MERGE_FUNCTIONS)}; O{opt_level()} slp loopvec=flag "
            f"interleave={int(LOOP_INTERLEAVING)} unroll={int(LOOP_UNROLLING)}; "
            "tm opt=3 codemodel=jitdefault jit=1 reloc=default")


def cache_key(ir_text: str, loop_vectorize: bool = False) -> str:
    """The disk-cache key of a module: SHA-256 of its IR text and of everything else its
    object code depends on (flag, host, llvmlite and LLVM versions, cache format)."""
    info = host_info()
    h = hashlib.sha256()
    for part in (f"tensorweave cpu-jit v{disk_cache.FORMAT_VERSION}",
                 _pipeline(),
                 f"loop_vectorize={int(loop_vectorize)}", info.triple, info.cpu,
                 info.features, f"llvmlite {llvmlite.__version__}",
                 "llvm " + ".".join(map(str, llvm.llvm_version_info))):
        h.update(part.encode())
        h.update(b"\0")
    h.update(ir_text.encode())
    return h.hexdigest()


# ELF64, little-endian: the file header's section-table fields, section header, symbol
_ELF_SHDR_FIELDS = struct.Struct("<QIHHHHHH")  # e_shoff ... e_shstrndx, from offset 0x28
_ELF_SHDR = struct.Struct("<IIQQQQIIQQ")
_ELF_SYM = struct.Struct("<IBBHQQ")
_SHT_SYMTAB = 2
_RUNTIME_DYLD_SYMBOLS = frozenset({"_GLOBAL_OFFSET_TABLE_"})  # RuntimeDyld defines it
_SHF_ALLOC = 2  # section flag: placed in memory when loaded


def _elf_sections(obj: bytes) -> list[tuple] | None:
    """The section headers of a 64-bit little-endian ELF object, None for other files;
    ValueError (or struct.error) when it claims to be one but is malformed."""
    if obj[:4] != b"\x7fELF" or obj[4:6] != b"\x02\x01":
        return None
    shoff, _, _, _, _, shentsize, shnum, _ = _ELF_SHDR_FIELDS.unpack_from(obj, 0x28)
    if shentsize != _ELF_SHDR.size:
        raise ValueError(f"section header size {shentsize}")
    return [_ELF_SHDR.unpack_from(obj, shoff + i * shentsize) for i in range(shnum)]


# Several object files stored as one disk-cache entry (a module compiled in parts,
# `_compile_parts`): magic, count, each size, then the objects. One object is stored as
# it is, so entries of modules compiled whole are plain ELF files.
_OBJECTS_MAGIC = b"TWOBJS1\0"
_OBJECTS_COUNT = struct.Struct("<I")
_MAX_OBJECTS = 64


def pack_objects(objs: Sequence[bytes]) -> bytes:
    """The object files `objs` as one entry (`unpack_objects` reads it back)."""
    if len(objs) == 1:
        return objs[0]
    if not 1 < len(objs) <= _MAX_OBJECTS:
        raise ValueError(f"cannot pack {len(objs)} object files (at most {_MAX_OBJECTS})")
    sizes = struct.pack(f"<{len(objs)}Q", *(len(o) for o in objs))
    return b"".join([_OBJECTS_MAGIC, _OBJECTS_COUNT.pack(len(objs)), sizes, *objs])


def unpack_objects(data: bytes) -> list[bytes]:
    """The object files of an entry (`pack_objects`): `data` itself when it is not a
    pack. ValueError when it is a malformed pack."""
    if not data.startswith(_OBJECTS_MAGIC):
        return [data]
    pos = len(_OBJECTS_MAGIC)
    try:
        (n,) = _OBJECTS_COUNT.unpack_from(data, pos)
        if not 1 < n <= _MAX_OBJECTS:
            raise ValueError(f"malformed object pack: {n} objects")
        sizes = struct.unpack_from(f"<{n}Q", data, pos + _OBJECTS_COUNT.size)
    except struct.error as e:
        raise ValueError(f"malformed object pack: {e}") from None
    pos += _OBJECTS_COUNT.size + 8 * n
    if pos + sum(sizes) != len(data):
        raise ValueError("malformed object pack: its sizes do not add up to its length")
    out = []
    for size in sizes:
        out.append(data[pos:pos + size])
        pos += size
    return out


def loaded_sections(obj: bytes) -> int | None:
    """How many sections of an ELF object (or of all objects of a pack, `pack_objects`)
    the JIT places in memory (each may take a memory mapping of its own), None when one
    is not a 64-bit little-endian ELF file. ValueError when one claims to be one but is
    malformed."""
    total = 0
    for part in unpack_objects(obj):
        try:
            sections = _elf_sections(part)
        except struct.error as e:
            raise ValueError(f"malformed ELF object: {e}") from None
        if sections is None:
            return None
        total += sum(1 for sh in sections if sh[2] & _SHF_ALLOC and sh[5])
    return total


def undefined_symbols(obj: bytes) -> list[str] | None:
    """The global symbols an object file (or a pack of them, `pack_objects`: those none
    of its objects defines) needs from outside it: what the JIT linker will look up by
    name. None when one is not a 64-bit little-endian ELF file (other hosts: not
    checked). ValueError when one claims to be one but is malformed, or when two objects
    of a pack define the same symbol (LLVM would abort the process loading them)."""
    needed: list[str] = []
    defined: set[str] = set()
    for part in unpack_objects(obj):
        symbols = _elf_symbols(part)
        if symbols is None:
            return None
        undefined, here = symbols
        twice = defined & here
        if twice:
            raise ValueError("symbols defined by two objects: " + ", ".join(sorted(twice)))
        needed += undefined
        defined |= here
    return [n for n in dict.fromkeys(needed) if n not in defined]


def _elf_symbols(obj: bytes) -> tuple[list[str], set[str]] | None:
    """(undefined global symbols but those RuntimeDyld defines, defined global and weak
    symbols) of one ELF object; None when it is not one."""
    try:
        sections = _elf_sections(obj)
        if sections is None:
            return None
        names, defined = [], set()
        for sh in sections:
            if sh[1] != _SHT_SYMTAB:
                continue
            offset, size, link = sh[4], sh[5], sh[6]
            stroff, strsize = sections[link][4], sections[link][5]
            strtab = obj[stroff:stroff + strsize]
            if offset + size > len(obj) or len(strtab) != strsize:
                raise ValueError("symbol table outside the file")
            for i in range(offset, offset + size - _ELF_SYM.size + 1, _ELF_SYM.size):
                st_name, st_info, _, st_shndx, _, _ = _ELF_SYM.unpack_from(obj, i)
                bind = st_info >> 4
                if st_name == 0 or bind not in (1, 2):
                    continue  # local
                end = strtab.index(b"\0", st_name)
                name = strtab[st_name:end].decode()
                if st_shndx != 0:
                    defined.add(name)
                elif bind == 1:  # (RuntimeDyld allows weak undefined)
                    names.append(name)
        return [n for n in names if n not in _RUNTIME_DYLD_SYMBOLS], defined
    except (struct.error, IndexError, UnicodeDecodeError) as e:
        raise ValueError(f"malformed ELF object: {e}") from None


# Memory mappings left for the rest of the process (malloc, thread stacks, NumPy) when
# JIT code is loaded: past this, loading raises `MappingLimitError` instead.
MAP_RESERVE = 512
_map_budget = 0  # mappings loads may still take before the next count (`_check_mappings`)


@lru_cache(maxsize=1)
def max_map_count() -> int | None:
    """The kernel's limit on a process's memory mappings (Linux: vm.max_map_count), None
    where it cannot be read."""
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def mapping_count() -> int | None:
    """How many memory mappings this process has (Linux), None where unknown."""
    try:
        with open("/proc/self/maps", "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return None


def _check_mappings(needed: int) -> None:
    """Make sure loading an object that takes up to `needed` mappings leaves the process
    `MAP_RESERVE` of them, freeing dropped modules if need be; MappingLimitError if it
    would not. At the limit the kernel refuses LLVM's mmap (LLVM aborts the process) or
    mprotect (the code stays unexecutable: a segfault when called).

    Counting the mappings reads /proc/self/maps (0.4 ms at 300 mappings, 200 ms at
    65000), so a count is trusted for half the headroom it found: the other half is left
    for whatever else in the process maps memory meanwhile."""
    global _map_budget
    if needed <= _map_budget:
        _map_budget -= needed
        return
    limit = max_map_count()
    count = mapping_count()
    if limit is None or count is None:
        return
    if limit - count - MAP_RESERVE < needed:
        _RECENT.clear()  # modules no one else holds: freed by the collection and `_bury`
        gc.collect()
        _bury()
        count = mapping_count() or count
    headroom = limit - count - MAP_RESERVE
    if headroom < needed:
        _map_budget = 0
        raise MappingLimitError(
            f"JIT: cannot load more compiled code: this process has {count} memory "
            f"mappings of the {limit} the kernel allows (vm.max_map_count), and "
            f"{len(_LIVE)} compiled modules are still held. Drop compiled functions that "
            "are no longer used, or raise the limit (sysctl vm.max_map_count).")
    _map_budget = headroom // 2 - needed


def load_object(obj: bytes, names: Sequence[str]) -> tuple[llvm.ExecutionEngine,
                                                            dict[str, int]]:
    """An MCJIT engine holding the object code `obj` (one object file, or a pack of them
    that call each other: `pack_objects`), and the addresses of `names`.

    Checks first what LLVM would otherwise abort the process on (a symbol no one
    defines; no memory mapping left for the code) or crash on (bytes that are not an
    object file): ObjectLoadError, MappingLimitError (a CompileError: the entry is
    fine, the process is full)."""
    _initialize()
    with LLVM_LOCK:
        _bury()
        try:
            objects = unpack_objects(obj)
            needed = undefined_symbols(obj)
            sections = loaded_sections(obj)
        except ValueError as e:
            raise ObjectLoadError(str(e)) from None
        if needed is None and "-linux" in host_info().triple:
            raise ObjectLoadError("not an ELF object file")
        empty = llvm.parse_assembly("")
        empty.triple = target_machine().triple
        # creating an engine also makes the process's own symbols visible to lookups
        engine = llvm.create_mcjit_compiler(empty, new_target_machine())
        try:
            missing = sorted(s for s in needed or () if not llvm.address_of_symbol(s))
            if missing:
                raise ObjectLoadError("undefined symbols: " + ", ".join(missing))
            # a mapping per placed section, the GOT and stubs, and one more per
            # permission group when finalizing splits a mapping
            _check_mappings(2 * (sections or 8 * len(objects)) + 4 * len(objects))
            for part in objects:  # (the engine links their calls to each other)
                engine.add_object_file(llvm.ObjectFileRef.from_data(part))
            engine.finalize_object()
            addresses = {}
            for name in names:
                addr = engine.get_function_address(name)
                if not addr:
                    raise ObjectLoadError(f"function {name!r} not found in the object")
                addresses[name] = addr
        except BaseException:
            engine.close()  # here, under the lock (not whenever the traceback goes)
            raise
        return engine, addresses


def _from_disk(key: str, names: Sequence[str], stats: CacheStats = STATS
               ) -> CompiledModule | None:
    """The module stored under `key` on disk, loaded; None when there is no usable entry
    (an entry that does not load is deleted)."""
    if disk_cache.cache_dir() is None:
        return None
    start = time.perf_counter()
    try:
        obj = disk_cache.load(key)
    except disk_cache.InvalidEntry:  # logged and deleted by `load`
        obj = None
        stats.disk_errors += 1
    if obj is None:
        stats.disk_misses += 1
        return None
    try:
        engine, addresses = load_object(obj, names)
    except ObjectLoadError as e:
        _log.debug("compile cache: entry %s does not load (%s); rebuilding it", key, e)
        disk_cache.discard(key)
        stats.disk_errors += 1
        stats.disk_misses += 1
        return None
    stats.disk_hits += 1
    stats.disk_load_seconds += time.perf_counter() - start
    return CompiledModule(engine, None, addresses)


def _compile(ir_text: str, names: Sequence[str], loop_vectorize: bool, key: str,
             stats: CacheStats = STATS, parts: int = 1) -> CompiledModule:
    """Run LLVM on `ir_text` (cut into up to `parts` modules compiled on threads of their
    own: `_compile_parts`), load the object code, and store it on disk."""
    texts = (ir_split.split_module(ir_text, parts, SPLIT_MIN_LINES) if parts > 1
             else [ir_text])
    module = None
    if len(texts) == 1:
        module = parse_and_optimize(ir_text, loop_vectorize)
        with LLVM_LOCK:
            obj = target_machine().emit_object(module)
    else:
        obj = pack_objects(_compile_parts(texts, loop_vectorize))
        stats.split_compiles += 1
    stats.llvm_compiles += 1
    try:
        engine, addresses = load_object(obj, names)
    except ObjectLoadError as e:
        raise CompileError(f"JIT: cannot load the compiled code: {e}") from None
    if disk_cache.store(key, obj):
        stats.disk_writes += 1
    return CompiledModule(engine, module, addresses)


# ---------------------------------------------------------------- compiling on threads
#
# A step's module is most of a cold first call's time in LLVM (W2 ~0.4 s, W3 ~0.85 s of
# CPU on the AMD EPYC host), and LLVM can optimize and compile independent modules on
# separate threads when each has its own context and target machine (as its ThinLTO
# back end does). llvmlite holds one process-wide lock around every call into its
# library (`llvmlite.binding.ffi._lib_fn_wrapper`), so threads calling it take turns; the
# two long calls (running a pass pipeline, emitting object code) are therefore made
# through the same ctypes functions without that lock, on objects only their thread
# holds. Everything else (parsing, creating and freeing objects) goes through llvmlite
# as usual. ctypes releases the GIL for the call.

MAX_COMPILE_THREADS = 4  # a module cut in more parts copies more of its shared helpers
SPLIT_MIN_LINES = 400    # smaller modules compile whole (threads and parts cost ~ms)


def _unlocked(name: str) -> Any:
    """llvmlite's ctypes function `name` without llvmlite's lock (None if this llvmlite
    does not wrap its functions the way `_compile_parts` expects)."""
    try:
        return getattr(getattr(llvm.ffi.lib, name), "_cfn", None)
    except AttributeError:
        return None


@lru_cache(maxsize=1)
def _threads_supported() -> bool:
    return all(_unlocked(n) is not None for n in (
        "LLVMPY_RunNewModulePassManager", "LLVMPY_TargetMachineEmitToMemory"))


def compile_threads() -> int:
    """How many threads LLVM compiles a step's module on (the parts it is cut into):
    ``TW_COMPILE_THREADS`` when set (1 turns this off: the module is compiled whole, as
    before; anything but a whole number >= 1 is a ValueError), else the CPUs this process
    may run on, at most `MAX_COMPILE_THREADS`; 1 on a one-core host and where llvmlite
    does not allow it (`_unlocked`)."""
    raw = os.environ.get("TW_COMPILE_THREADS", "").strip()
    if raw:
        try:
            n = int(raw)
        except ValueError:
            n = 0
        if n < 1:
            # (a ValueError, not a CompileError: a native step that cannot compile falls
            # back to the dataflow executor, which would hide the typo)
            raise ValueError(f"TW_COMPILE_THREADS must be a whole number of threads >= 1 "
                             f"(1: compile each module whole, on one thread), got {raw!r}")
    else:
        try:
            n = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            n = os.cpu_count() or 1
        n = min(n, MAX_COMPILE_THREADS)
    return n if n > 1 and _threads_supported() else 1


def _compile_parts(texts: Sequence[str], loop_vectorize: bool) -> list[bytes]:
    """The object code of each module of `texts` (the parts of one module:
    `ir_split.split_module`), each parsed, optimized and compiled on a thread of its own
    (the first on this one). All threads are joined before this returns or raises; a
    part that fails is a CompileError naming it."""
    n = len(texts)
    results: list[bytes | None] = [None] * n
    errors: list[BaseException | None] = [None] * n

    def work(i: int) -> None:
        try:
            results[i] = _compile_part(texts[i], loop_vectorize)
        except BaseException as e:  # noqa: BLE001 -- reported by the caller's thread
            errors[i] = e

    threads, inline = [], [0]
    for i in range(1, n):
        t = threading.Thread(target=work, args=(i,), name=f"tw-llvm-part-{i}", daemon=True)
        try:
            t.start()
        except RuntimeError:  # (no thread to be had: this one compiles it)
            inline.append(i)
            continue
        threads.append(t)
    try:
        for i in inline:
            work(i)
    finally:
        for t in threads:
            t.join()
    for i, e in enumerate(errors):
        if e is not None:
            what = str(e) if isinstance(e, CompileError) else f"{type(e).__name__}: {e}"
            raise CompileError(
                f"JIT: part {i + 1} of {n} of a module, compiled on its own thread, failed "
                f"(TW_COMPILE_THREADS=1 compiles modules whole): {what}") from e
    return [r for r in results if r is not None]


def _compile_part(text: str, loop_vectorize: bool) -> bytes:
    """One part's object code: parsed into a context of its own, optimized and compiled
    with a target machine of its own (the long calls without llvmlite's lock), every
    LLVM object freed before returning, in this thread."""
    tm = new_target_machine()
    context = llvm.create_context()
    module = None
    try:
        module = _parse(text, tm, context)
        _optimize(module, tm, loop_vectorize, _unlocked_run)
        return _emit_object_unlocked(tm, module)
    finally:
        if module is not None:
            module.close()
        context.close()
        tm.close()


def _unlocked_run(pm: Any, module: llvm.ModuleRef, builder: Any) -> None:
    _unlocked("LLVMPY_RunNewModulePassManager")(pm, module, builder)


def _emit_object_unlocked(tm: llvm.TargetMachine, module: llvm.ModuleRef) -> bytes:
    """`tm.emit_object(module)` (llvmlite's `TargetMachine._emit_to_memory`) without
    llvmlite's lock around the code generator."""
    ffi = llvm.ffi
    with ffi.OutputString() as err:
        buf = _unlocked("LLVMPY_TargetMachineEmitToMemory")(tm, module, 1, err)
        if not buf:
            raise CompileError(f"LLVM could not compile the module: {err}")
    try:
        return ctypes.string_at(ffi.lib.LLVMPY_GetBufferStart(buf),
                                ffi.lib.LLVMPY_GetBufferSize(buf))
    finally:
        ffi.lib.LLVMPY_DisposeMemoryBuffer(buf)


def compile_module(ir_text: str, names: Sequence[str], loop_vectorize: bool = False,
                   runtime: bool = False) -> CompiledModule:
    """JIT-compile `ir_text` (cached in memory by the text and flag, and on disk) and
    resolve the functions `names`. `runtime`: tensorweave's own code (the native call
    dispatcher), compiled once per process and not counted in `STATS`, which counts the
    kernels of users' graphs."""
    stats = CacheStats() if runtime else STATS
    with LLVM_LOCK:
        _bury()
        memory_key = (loop_vectorize, _pipeline(), ir_text)
        hit = _cached(memory_key)
        if hit is not None:
            stats.hits += 1
            return hit
        start = time.perf_counter()
        key = cache_key(ir_text, loop_vectorize)
        compiled = (_from_disk(key, names, stats)
                    or _compile(ir_text, names, loop_vectorize, key, stats))
        _remember(memory_key, compiled)
        if runtime:
            _PINNED.append(compiled)
        stats.misses += 1
        stats.compile_seconds += time.perf_counter() - start
        return compiled


def compile_keyed(key_text: str, build_ir: Callable[[], str], names: Sequence[str],
                  loop_vectorize: bool = False) -> CompiledModule:
    """Like `compile_module`, but cached under `key_text` (a cheap description of what
    the module computes, e.g. a specialized graph's IR plus everything else the code
    generator reads) instead of the module's text, so a hit skips generating the LLVM IR
    too. `build_ir` makes the text on a miss. The key also covers the code generator's
    own source (`codegen_fingerprint`): editing it invalidates these entries."""
    return _compile_digest(keyed_digest(key_text, loop_vectorize), build_ir, names,
                           loop_vectorize)


def keyed_digest(key_text: str, loop_vectorize: bool = False) -> str:
    """The cache key `compile_keyed` uses for `key_text` (a step record keeps it, so that
    a later process loads the code without making the text: `plan_cache`)."""
    parts = [f"keyed v{disk_cache.FORMAT_VERSION}", codegen_fingerprint(), key_text]
    threads = compile_threads()
    if threads > 1:  # (its code is compiled in parts, `_compile_parts`: other objects)
        parts.insert(2, f"compile threads {threads}")
    return cache_key("\0".join(parts), loop_vectorize)


def compile_digest(key: str, build_ir: Callable[[], str], names: Sequence[str],
                   loop_vectorize: bool = False) -> CompiledModule:
    """`compile_keyed` by the key `keyed_digest` returned: memory, then disk, then
    ``build_ir()`` and LLVM."""
    return _compile_digest(key, build_ir, names, loop_vectorize)


def _compile_digest(key: str, build_ir: Callable[[], str], names: Sequence[str],
                    loop_vectorize: bool) -> CompiledModule:
    with LLVM_LOCK:
        _bury()
        hit = _cached((loop_vectorize, _pipeline(), key))
        if hit is not None:
            STATS.hits += 1
            return hit
        start = time.perf_counter()
        compiled = _from_disk(key, names)
        if compiled is None:
            compiled = _compile(build_ir(), names, loop_vectorize, key,
                                parts=compile_threads())
        _remember((loop_vectorize, _pipeline(), key), compiled)
        STATS.misses += 1
        STATS.compile_seconds += time.perf_counter() - start
        return compiled


# files outside this directory whose code runs while the code generator makes IR (the
# epilogue's operand kinds, dtypes, types, the graph): hashed with it, so that a fix in
# one of them never loads the code made before (tests/test_review_cache_codegen_inputs.py)
CODEGEN_DEPENDENCIES = ("passes/epilogue.py", "compiler/dtypes.py", "compiler/types.py",
                        "compiler/ir.py",
                        # POLYGAMMA_MIN_X is a constant of the generated polygamma code
                        "compiler/ops/special.py")


@lru_cache(maxsize=1)
def codegen_fingerprint() -> str:
    """A hash of the cpu target's source files (what turns graphs into LLVM IR) and of
    `CODEGEN_DEPENDENCIES`.

    The files are read at the first compile, not at import. If the package's files
    changed since this process imported it (`tensorweave._source`), the code running
    here is not the code on disk: hashing the files would key this process's object
    code as the new code's, and a later process would load it. Such a process gets a
    fingerprint of its own (its entries are never found by another process)."""
    from ... import _source
    h = hashlib.sha256()
    root = os.path.dirname(os.path.abspath(__file__))
    for dirpath, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if name.endswith(".py"):
                with open(os.path.join(dirpath, name), "rb") as f:
                    h.update(name.encode() + b"\0" + f.read())
    for rel in CODEGEN_DEPENDENCIES:
        with open(os.path.join(os.path.dirname(os.path.dirname(root)), rel), "rb") as f:
            h.update(rel.encode() + b"\0" + f.read())
    if _source.files_digest(_source.PACKAGE_ROOT) != _source.AT_IMPORT:
        h.update(f"\0edited after import: process {os.getpid()} {os.urandom(8).hex()}".encode())
    return h.hexdigest()


def assembly(ir_text: str, loop_vectorize: bool = False) -> str:
    """The host assembly of an LLVM IR module after the pipeline (for inspection)."""
    module = parse_and_optimize(ir_text, loop_vectorize)
    with LLVM_LOCK:
        return target_machine().emit_assembly(module)


def forget(ir_text: str, loop_vectorize: bool = False) -> None:
    """Drop `ir_text` from the in-memory cache (at every pipeline level): the next
    compile of it goes to the disk cache."""
    with LLVM_LOCK:
        for k in [k for k in _LIVE.keys() if k[0] == loop_vectorize and k[-1] == ir_text]:
            _LIVE.pop(k, None)
            _RECENT.pop(k, None)


def clear_cache() -> None:
    """Forget every compiled module (code still referenced by live kernels stays, and so
    does tensorweave's own runtime code, though a later compile of it compiles anew)."""
    with LLVM_LOCK:
        _LIVE.clear()
        _RECENT.clear()
        _bury()
