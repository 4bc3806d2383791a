"""Matrix products on the cpu target: BLAS through function pointers, and a loop kernel
for integers.

SciPy ships an optimized BLAS (OpenBLAS) and exposes its routines to Cython as
PyCapsules (``scipy.linalg.cython_blas.__pyx_capi__``); the capsule holds the function
pointer. We register ``sgemm``/``dgemm`` with LLVM's symbol table under our own names
(`SYMBOLS`), so JIT-compiled code calls them directly. They use the Fortran convention:
every argument by pointer, column-major matrices; `lowering.gemm_function` wraps them
as one row-major GEMM, which both the native steps and the kernels here call.

`matmul_ir(dtype)` is one JIT function per dtype that runs a batch of products:

    i32 tw_matmul_<dt>(T* a, T* b, T* c, i64 batch, i64* a_offsets, i64* b_offsets,
                       i64* dims)      ; dims = [m, n, k, transpose_a, transpose_b, split]

For f32/f64 it calls the BLAS once per batch entry, on one thread or cut over threads
as `lowering.gemm_plan` chose for the shape when the kernel planned it (``split``,
`SPLIT_CODES`: 0 one call, 1 rows, 2 columns, 3 one call on the BLAS library's own
threads; each checked bit for bit against one call at that shape, so results do not
depend on the thread count); for integers it runs an i-k-j loop nest that LLVM
vectorizes over j (wrapping arithmetic, like NumPy).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import llvmlite.binding as llvm
import numpy as np

from ...compiler.dtypes import DType
from ...compiler.ir import Node
from ...compiler.types import TensorType
from ...errors import InvalidArgumentError, UnimplementedError
from . import jit

# (`elementwise` and `fused` bring the code generator: imported where used, since a step
# loaded from the disk cache needs only `register_blas` from this module)

# our JIT symbol name -> SciPy cython_blas routine
SYMBOLS = {"tw_blas_sgemm": "sgemm", "tw_blas_dgemm": "dgemm"}
_GEMM = {"f32": "tw_blas_sgemm", "f64": "tw_blas_dgemm"}
INT_DTYPES = ("i8", "i16", "i32", "i64", "u8")

MatMulFn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                            ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


@lru_cache(maxsize=1)
def blas_addresses() -> dict[str, int]:
    """Addresses of SciPy's BLAS routines by our symbol names; empty without SciPy."""
    return _addresses_from_library() or _addresses_from_capsules()


def _addresses_from_library() -> dict[str, int]:
    """Load SciPy's bundled OpenBLAS directly: importing ``scipy.linalg`` for its
    capsules costs a few hundred milliseconds of a cold first call, this a few."""
    import glob
    import importlib.util
    import os
    spec = importlib.util.find_spec("scipy")
    if spec is None or spec.origin is None:
        return {}
    libs = sorted(glob.glob(os.path.join(os.path.dirname(os.path.dirname(spec.origin)),
                                         "scipy.libs", "libscipy_openblas*.so*")))
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
            return {symbol: ctypes.cast(getattr(lib, f"scipy_{routine}_"), ctypes.c_void_p).value
                    for symbol, routine in SYMBOLS.items()}
        except (OSError, AttributeError):
            continue
    return {}


def _addresses_from_capsules() -> dict[str, int]:
    try:
        from scipy.linalg import cython_blas
    except ImportError:
        return {}
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    out = {}
    for symbol, routine in SYMBOLS.items():
        capsule = cython_blas.__pyx_capi__[routine]
        out[symbol] = get_pointer(capsule, get_name(capsule))
    return out


@lru_cache(maxsize=1)
def register_blas() -> bool:
    """Make the BLAS symbols known to the JIT (and, where the library has them, its
    thread-count functions and `BLAS_LOCK`'s lock); False when SciPy is not installed."""
    addresses = blas_addresses()
    jit.host_info()  # initializes LLVM
    with jit.LLVM_LOCK:
        for symbol, address in addresses.items():
            llvm.add_symbol(symbol, address)
        llvm.add_symbol(LOCK_SYMBOL, _lock_address())
        for symbol, address in (thread_control() or {}).items():
            llvm.add_symbol(symbol, address)
    if addresses:
        # Loading SciPy's BLAS starts OpenBLAS's own (spinning) threads; on top of the
        # executor's threads they oversubscribe the cores. The runtime's policy (one
        # BLAS thread unless TW_BLAS_THREADS says otherwise) must cover this library
        # too: measured on the 2-core machine, the W1 step went from 12 ms to 1.3 ms and
        # the W2 step from 40 ms to 31 ms with one SciPy BLAS thread.
        from ...runtime.threads import limit_blas_threads
        limit_blas_threads()
    return bool(addresses)


def has_blas() -> bool:
    return register_blas()


# ------------------------------------------------------------- BLAS thread count
#
# OpenBLAS runs one thread per call under tensorweave (`runtime.threads`); a product whose
# bits with OpenBLAS's own threads equal one thread's may run threaded (`lowering.
# gemm_plan`). The thread count is one global of the library, so a product on OpenBLAS's
# threads must be the only BLAS call in flight: every BLAS call of generated code holds
# `LOCK_SYMBOL`, a process-wide readers-writer lock: one-thread calls as readers (any
# number at once, our own split's halves too), a threaded call as the writer, which only
# tries the lock and runs on one thread when another call is in flight (the same bits,
# and the other call's thread already has the second core). The probes' BLAS calls
# hold it too (`serial_calls`, or the JIT'd kernel's writer that waits).

LOCK_SYMBOL = "tw_blas_lock"
SET_THREADS, GET_THREADS = "tw_blas_set_threads", "tw_blas_get_threads"
# the library's exports: SciPy's OpenBLAS prefixes its symbols, a plain one does not
_THREAD_EXPORTS = {SET_THREADS: ("scipy_openblas_set_num_threads", "openblas_set_num_threads"),
                   GET_THREADS: ("scipy_openblas_get_num_threads", "openblas_get_num_threads")}


@lru_cache(maxsize=1)
def _lock() -> Any:
    """The process's BLAS readers-writer lock (a ``pthread_rwlock_t``, initialized)."""
    libc = ctypes.CDLL(None, use_errno=True)
    lock = ctypes.create_string_buffer(256)  # (>= sizeof(pthread_rwlock_t) everywhere)
    if libc.pthread_rwlock_init(lock, None) != 0:
        raise OSError(ctypes.get_errno(), "pthread_rwlock_init failed")
    return lock


def _lock_address() -> int:
    return ctypes.addressof(_lock())


class serial_calls:
    """``with serial_calls(): ...``: hold the BLAS lock as a reader, so that BLAS calls made
    through ctypes in the block (the probes') run on one thread whatever other threads
    of the process run meanwhile."""

    def __enter__(self) -> None:
        # (a ctypes call releases the GIL while it waits: a writer never needs the GIL)
        ctypes.CDLL(None).pthread_rwlock_rdlock(_lock())

    def __exit__(self, *exc: object) -> None:
        ctypes.CDLL(None).pthread_rwlock_unlock(_lock())


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


@lru_cache(maxsize=1)
def library_path() -> str | None:
    """The real path of the shared library holding the BLAS routines (`blas_addresses`),
    or None when it cannot be found."""
    import os
    addresses = blas_addresses()
    if not addresses:
        return None
    info = _DlInfo()
    try:
        found = ctypes.CDLL(None).dladdr(ctypes.c_void_p(addresses[_GEMM["f32"]]),
                                         ctypes.byref(info))
        if not found or not info.dli_fname:
            return None
        return os.path.realpath(info.dli_fname.decode())
    except (AttributeError, OSError, KeyError, UnicodeDecodeError):
        return None


@lru_cache(maxsize=1)
def thread_control() -> dict[str, int] | None:
    """The addresses of the BLAS library's ``set_num_threads`` and ``get_num_threads``
    by our symbol names (`SET_THREADS`, `GET_THREADS`); None when the library has none
    (then no product runs on the library's threads)."""
    path = library_path()
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return None
    out = {}
    for symbol, names in _THREAD_EXPORTS.items():
        fn = next((getattr(lib, name) for name in names if hasattr(lib, name)), None)
        if fn is None:
            return None
        out[symbol] = ctypes.cast(fn, ctypes.c_void_p).value
    return out


# ------------------------------------------------------------------------ the IR

# `noalias` on a, b and c is sound for the same reason as beside the generated GEMM
# (`lowering._gemm_generated`): a product's output is a workspace value placed after its
# inputs' last use, a result buffer, or a loop accumulator whose operands are other
# buffers, and a donated argument takes a result only from a Fusion, never from a
# MatMul; a and b may be the same memory (x @ x) since both are only read, which
# `noalias` allows.
_BATCH_LOOP = """
define i32 @tw_matmul_{dt}({t}* noalias %a, {t}* noalias %b, {t}* noalias %c, i64 %batch,
                           i64* %aoff, i64* %boff, i64* %dims) {{
entry:
  %m = load i64, i64* %dims
  %pn = getelementptr i64, i64* %dims, i64 1
  %n = load i64, i64* %pn
  %pk = getelementptr i64, i64* %dims, i64 2
  %k = load i64, i64* %pk
  %pta = getelementptr i64, i64* %dims, i64 3
  %ta = load i64, i64* %pta
  %ptb = getelementptr i64, i64* %dims, i64 4
  %tb = load i64, i64* %ptb
  %psplit = getelementptr i64, i64* %dims, i64 5
  %split = load i64, i64* %psplit
  %mn = mul i64 %m, %n
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %body]
  %more = icmp slt i64 %i, %batch
  br i1 %more, label %body, label %done
body:
  %pao = getelementptr i64, i64* %aoff, i64 %i
  %ao = load i64, i64* %pao
  %pbo = getelementptr i64, i64* %boff, i64 %i
  %bo = load i64, i64* %pbo
  %co = mul i64 %i, %mn
  %pa = getelementptr {t}, {t}* %a, i64 %ao
  %pb = getelementptr {t}, {t}* %b, i64 %bo
  %pc = getelementptr {t}, {t}* %c, i64 %co
  call void @tw_one_{dt}({t}* %pa, {t}* %pb, {t}* %pc, i64 %m, i64 %n, i64 %k, i64 %ta, i64 %tb,
                        i64 %split)
  %i1 = add i64 %i, 1
  br label %loop
done:
  ret i32 0
}}
"""

# One product through `lowering.gemm_function` (BLAS, row-major, Fortran call inside):
# `{call}` is the GEMM call with the arguments `{args}`, or a switch on %split over the
# serial GEMM and the row and column cuts (with threads).
_GEMM_ONE = """
define internal void @tw_one_{dt}({t}* %a, {t}* %b, {t}* %c, i64 %m, i64 %n, i64 %k,
                                  i64 %ta, i64 %tb, i64 %split) {{
entry:
  %taf = icmp ne i64 %ta, 0
  %tbf = icmp ne i64 %tb, 0
  %ta32 = zext i1 %taf to i32
  %tb32 = zext i1 %tbf to i32
  %lda = select i1 %taf, i64 %m, i64 %k
  %ldb = select i1 %tbf, i64 %k, i64 %n
{call}
  ret void
}}
"""
_GEMM_ARGS = ("(i32 %ta32, i32 %tb32, i64 %m, i64 %n, i64 %k, {t} 1.0, {t}* %a, i64 %lda, "
              "{t}* %b, i64 %ldb, {t} 0.0, {t}* %c, i64 %n)")
_GEMM_SWITCH = """  switch i64 %split, label %serial [i64 1, label %rows
                                     i64 2, label %cols{more_cases}]
serial:
  call void @"{serial}"{args}
  br label %done
rows:
  call void @"{rows}"{args}
  br label %done
cols:
  call void @"{cols}"{args}
  br label %done
{more_blocks}done:"""
# with the library's thread count settable: 3, the library's threads (`lowering.
# blas_threads_function`); 4, the same waiting for the BLAS lock (the probe's)
_THREADED_CASES = """
                                     i64 3, label %blas
                                     i64 4, label %blas_wait"""
_THREADED_BLOCKS = """blas:
  call void @"{blas}"{args}
  br label %done
blas_wait:
  call void @"{blas_wait}"{args}
  br label %done
"""
# the ``split`` values of `matmul_ir`'s dims by `lowering.gemm_plan`'s answer (and the
# probe's "one" and "blas_wait")
SPLIT_CODES = {None: 0, "one": 0, "rows": 1, "cols": 2, "blas": 3, "blas_wait": 4}

_INT_ONE = """
define internal void @tw_one_{dt}({t}* noalias %a, {t}* noalias %b, {t}* noalias %c, i64 %m,
                                  i64 %n, i64 %k, i64 %ta, i64 %tb, i64 %split) {{
entry:
  ; element (i, p) of op(A) is a[i * sa0 + p * sa1]; (p, j) of op(B) is b[p * sb0 + j * sb1]
  %taf = icmp ne i64 %ta, 0
  %sa0 = select i1 %taf, i64 1, i64 %k
  %sa1 = select i1 %taf, i64 %m, i64 1
  %tbf = icmp ne i64 %tb, 0
  %sb0 = select i1 %tbf, i64 1, i64 %n
  %sb1 = select i1 %tbf, i64 %k, i64 1
  br label %rows
rows:
  %i = phi i64 [0, %entry], [%i1, %rows_next]
  %more_i = icmp slt i64 %i, %m
  br i1 %more_i, label %zero, label %done
zero:
  %crow = mul i64 %i, %n
  br label %zero_loop
zero_loop:
  %z = phi i64 [0, %zero], [%z1, %zero_body]
  %more_z = icmp slt i64 %z, %n
  br i1 %more_z, label %zero_body, label %inner
zero_body:
  %zi = add i64 %crow, %z
  %pz = getelementptr {t}, {t}* %c, i64 %zi
  store {t} 0, {t}* %pz
  %z1 = add i64 %z, 1
  br label %zero_loop
inner:
  %p = phi i64 [0, %zero_loop], [%p1, %cols_done]
  %more_p = icmp slt i64 %p, %k
  br i1 %more_p, label %load_a, label %rows_next
load_a:
  %ai0 = mul i64 %i, %sa0
  %ai1 = mul i64 %p, %sa1
  %ai = add i64 %ai0, %ai1
  %pa = getelementptr {t}, {t}* %a, i64 %ai
  %av = load {t}, {t}* %pa
  %bi0 = mul i64 %p, %sb0
  br label %cols
cols:
  %j = phi i64 [0, %load_a], [%j1, %cols_body]
  %more_j = icmp slt i64 %j, %n
  br i1 %more_j, label %cols_body, label %cols_done
cols_body:
  %bj = mul i64 %j, %sb1
  %bi = add i64 %bi0, %bj
  %pb = getelementptr {t}, {t}* %b, i64 %bi
  %bv = load {t}, {t}* %pb
  %prod = mul {t} %av, %bv
  %ci = add i64 %crow, %j
  %pc = getelementptr {t}, {t}* %c, i64 %ci
  %cv = load {t}, {t}* %pc
  %sum = add {t} %cv, %prod
  store {t} %sum, {t}* %pc
  %j1 = add i64 %j, 1
  br label %cols
cols_done:
  %p1 = add i64 %p, 1
  br label %inner
rows_next:
  %i1 = add i64 %i, 1
  br label %rows
done:
  ret void
}}
"""


def matmul_ir(dtype: DType) -> str:
    """The LLVM IR module of ``tw_matmul_<dtype>``."""
    from .elementwise import scalar_type
    t = str(scalar_type(dtype))
    if dtype.ir_name in _GEMM:
        import llvmlite.ir as ir

        from .lowering import _gemm_cols_function, blas_threads_function, gemm_function
        gemm = ir.Module(name=f"tw_matmul_{dtype.ir_name}")
        fn = gemm_function(gemm, dtype, "blas")
        serial = gemm.globals.get(fn.name + ".serial")
        args = _GEMM_ARGS.format(t=t)
        if serial is None:  # one thread: `fn` is the serial GEMM
            call = f'  call void @"{fn.name}"{args}'
        else:
            cols = _gemm_cols_function(gemm, fn, serial, dtype)
            cases = blocks = ""
            if thread_control() is not None:
                cases = _THREADED_CASES
                blocks = _THREADED_BLOCKS.format(
                    blas=blas_threads_function(gemm, dtype).name,
                    blas_wait=blas_threads_function(gemm, dtype, wait=True).name, args=args)
            call = _GEMM_SWITCH.format(serial=serial.name, rows=fn.name, cols=cols.name,
                                       args=args, more_cases=cases, more_blocks=blocks)
        one = str(gemm) + _GEMM_ONE.format(dt=dtype.ir_name, t=t, call=call)
    elif dtype.ir_name in INT_DTYPES:
        one = _INT_ONE.format(dt=dtype.ir_name, t=t)
    else:
        raise UnimplementedError(f"the cpu target has no native MatMul for {dtype.ir_name}")
    return one + _BATCH_LOOP.format(dt=dtype.ir_name, t=t)


def matmul_function(dtype: DType, runtime: bool = False) -> tuple[Any, jit.CompiledModule]:
    """The compiled batched matmul for `dtype` and the module that holds its code
    (`runtime`: for tensorweave's own use, the probes': not counted in `jit.STATS`)."""
    if dtype.ir_name in _GEMM and not register_blas():
        raise UnimplementedError("no BLAS available (SciPy is not installed)")
    module = jit.compile_module(matmul_ir(dtype), [f"tw_matmul_{dtype.ir_name}"],
                                loop_vectorize=dtype.ir_name in INT_DTYPES, runtime=runtime)
    return MatMulFn(module.address(f"tw_matmul_{dtype.ir_name}")), module


# ---------------------------------------------------------------------- the kernel

def _batch_offsets(a_batch: tuple, b_batch: tuple, a_size: int, b_size: int
                   ) -> tuple[tuple, np.ndarray, np.ndarray]:
    """The broadcast batch shape and, per batch entry, the element offset of its matrix
    in a and in b."""
    try:
        batch = tuple(np.broadcast_shapes(a_batch, b_batch))
    except ValueError:
        raise InvalidArgumentError(f"batch dimensions cannot be broadcast together: "
                                   f"{list(a_batch)} vs {list(b_batch)}") from None

    def offsets(own: tuple, size: int) -> np.ndarray:
        idx = np.arange(int(np.prod(own, dtype=np.int64)), dtype=np.int64).reshape(own) * size
        return np.ascontiguousarray(np.broadcast_to(idx, batch)).reshape(-1)

    return batch, offsets(a_batch, a_size), offsets(b_batch, b_size)


class MatMulKernel:
    """MatMul of f32/f64 (BLAS) or integers (loop kernel), batched and transposed; the
    executor's per-node kernel protocol."""

    def __init__(self, node: Node) -> None:
        t = node.outputs[0].type
        if not isinstance(t, TensorType):
            raise UnimplementedError("MatMul of a non-tensor")
        self.node = node
        self.dtype = t.dtype
        self.ta = bool(node.attrs.get("transpose_a"))
        self.tb = bool(node.attrs.get("transpose_b"))
        self.fn, self._module = matmul_function(self.dtype)
        from .parallel import num_threads
        self._threads = num_threads()  # (what the compiled cuts were generated for)
        self._plans: dict[tuple, tuple] = {}

    def _plan(self, a_shape: tuple, b_shape: tuple) -> tuple:
        (ar, ac), (br, bc) = a_shape[-2:], b_shape[-2:]
        m, k = (ac, ar) if self.ta else (ar, ac)
        kb, n = (bc, br) if self.tb else (br, bc)
        if k != kb:
            raise InvalidArgumentError(f"inner dimensions differ: a has shape {list(a_shape)}, "
                                       f"b has shape {list(b_shape)}")
        batch, aoff, boff = _batch_offsets(a_shape[:-2], b_shape[:-2], ar * ac, br * bc)
        split = 0
        from .parallel import num_threads
        if self.dtype.ir_name in _GEMM and num_threads() == self._threads:
            # cut over threads (ours or the library's) only where that gives one call's
            # bits at this shape
            from .lowering import gemm_plan
            split = SPLIT_CODES[gemm_plan(self.dtype, self.ta, self.tb, m, n, k)]
        dims = np.array([m, n, k, int(self.ta), int(self.tb), split], dtype=np.int64)
        return batch + (m, n), aoff, boff, dims, k

    def __call__(self, inputs: Sequence[Any], resources: Any = None, counters: Any = None,
                 step: Any = None, step_id: int = 0) -> list[np.ndarray]:
        from .fused import contiguous
        a, b = (contiguous(x) for x in inputs)
        key = (a.shape, b.shape)
        plan = self._plans.get(key)
        if plan is None:
            try:
                plan = self._plans[key] = self._plan(a.shape, b.shape)
            except InvalidArgumentError as e:
                raise e.with_context(**self.node.error_context()) from None
        out_shape, aoff, boff, dims, k = plan
        if k == 0 or 0 in out_shape:
            return [np.zeros(out_shape, self.dtype.np)]
        c = np.empty(out_shape, self.dtype.np)
        self.fn(a.ctypes.data, b.ctypes.data, c.ctypes.data, len(aoff), aoff.ctypes.data,
                boff.ctypes.data, dims.ctypes.data)
        return [c]


def supports_matmul(dtype: DType) -> bool:
    """Whether MatMul of `dtype` has a native kernel here."""
    return dtype.ir_name in INT_DTYPES or (dtype.ir_name in _GEMM and has_blas())

