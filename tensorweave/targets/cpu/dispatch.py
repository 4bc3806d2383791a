"""Native dispatch: a `tw.compile` call that hits a compiled signature without Python.

`Dispatcher` is one Python-callable native function per `tw.compile` function (a
``PyCFunction`` with ``METH_FASTCALL`` whose code is `_IR`, generated once per process
and cached like every kernel). A call walks the dispatcher's table of entries, one per
argument signature that ran natively before: it checks that every argument is exactly a
NumPy array (``type(a) is np.ndarray``) with the entry's rank, dims and dtype
(type number, native byte order) and C-contiguous, reads nothing else, reuses the entry's
result buffers when only the entry still holds them (their reference count is 1) and
they are writeable (not given up to ``donate_argnums`` elsewhere; otherwise a fresh
buffer from the entry's allocator), releases the GIL around the step
as ctypes does, and returns the result (or the structure that ``finish`` builds). Any
mismatch returns `MISS` and the caller takes its Python path, which handles everything
else (other array types, DLPack producers, static arguments, keywords, errors) exactly
as before.

Each entry runs one call at a time (a ``busy`` word, set and cleared under the GIL): a
concurrent call on another thread, or a re-entrant one from a callback, takes the
Python path, which has its own buffers. The entry's Python object (`Entry`) is
referenced for the duration of the call, so removing an entry while a step runs on
another thread is safe. A failing step stores its status in the entry and calls
``on_error``, which raises the same error as the Python path.

Steps with variables take the variables' locks (in name order, as the Python path does,
but without waiting: a lock held elsewhere sends the call to the Python path, which
waits for it) and read each variable's buffer (``state.value``) on every call, checked
like an argument (an uninitialized variable sends the call to the Python path); both
are released after the step, before the result is built. ``TW_NATIVE_DISPATCH=0``
turns native dispatch off; it is also off where the layout of NumPy's array objects
cannot be verified or the interpreter is not a 64-bit build with a GIL.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sysconfig
import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

MAX_ENTRIES = 8  # signatures per function checked natively (most recent installs)
MAX_INSTALLS = 64  # past this many installs a function's shapes churn: stop installing


class _Miss:
    """The dispatcher's answer when no entry takes the arguments."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISS"


MISS: Any = _Miss()
_TAKEN = np.empty(0)  # a pool slot no call may reuse: its refcount is never 1
_WRITEABLE = 0x0400  # NPY_ARRAY_WRITEABLE (the IR tests it as 1024)

# table words (int64) of a dispatcher
_T_COUNT, _T_MISS, _T_NDARRAY, _T_INCREF, _T_DECREF, _T_GETITEM, _T_SETITEM, _T_CALL, \
    _T_SAVE, _T_RESTORE, _T_GETATTR, _T_VALUE, _T_TRUE = range(13)
_T_ENTRIES = 13
# words of an entry
(_E_NARGS, _E_SPEC, _E_STEP, _E_CONSTS, _E_CALLBACK, _E_OBJECTS, _E_NRES, _E_POOL,
 _E_ALLOCS, _E_WS, _E_BUSY, _E_FINISH, _E_ON_ERROR, _E_STATUS, _E_HITS, _E_RELEASE,
 _E_OWNER, _E_NVARS, _E_VSTATES, _E_VSPEC, _E_VVALS, _E_NLOCKS, _E_ACQUIRE,
 _E_RELEASES) = range(24)
_E_WORDS = 24


@lru_cache(maxsize=1)
def layout() -> dict[str, int] | None:
    """Offsets of the fields the dispatcher reads in NumPy's array and dtype objects,
    found on sample objects and checked (None when they cannot be verified)."""
    if ctypes.sizeof(ctypes.c_void_p) != 8 or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return None
    from .step_abi import numpy_data_offset
    try:
        data = numpy_data_offset()
    except Exception:  # noqa: BLE001 - unknown layout: no native dispatch
        return None
    # NumPy's PyArrayObject: data, nd, dimensions, strides, base, descr, flags (public ABI)
    off = {"data": data, "nd": data + 8, "dims": data + 16, "descr": data + 40,
           "flags": data + 48, "type_num": 28, "byteorder": 26, "type": 8}
    read_only = np.empty(4, np.float32)
    read_only.flags.writeable = False
    samples = [np.empty((2, 3), np.float32), np.zeros(5, np.int64), np.empty((), np.float64),
               np.ones((4, 1, 2), np.uint8)[:, :, ::2], np.empty((3, 2), np.int32, order="F"),
               np.empty(3, ">f8"), read_only]

    def i32(addr: int) -> int:
        return ctypes.c_int32.from_address(addr).value

    for a in samples:
        base = id(a)
        if ctypes.c_void_p.from_address(base + off["type"]).value != id(np.ndarray) \
                or i32(base + off["nd"]) != a.ndim:
            return None
        dims = ctypes.c_void_p.from_address(base + off["dims"]).value
        if a.ndim and [ctypes.c_int64.from_address(dims + 8 * k).value
                       for k in range(a.ndim)] != list(a.shape):
            return None
        descr = ctypes.c_void_p.from_address(base + off["descr"]).value
        if descr != id(a.dtype) or i32(descr + off["type_num"]) != a.dtype.num \
                or ctypes.c_char.from_address(descr + off["byteorder"]).value \
                != a.dtype.byteorder.encode():
            return None
        flags = i32(base + off["flags"])
        if bool(flags & 1) != a.flags.c_contiguous or \
                bool(flags & _WRITEABLE) != a.flags.writeable:
            return None
    return off


def enabled() -> bool:
    """Whether calls may be dispatched natively in this process."""
    return os.environ.get("TW_NATIVE_DISPATCH", "1") != "0" and layout() is not None


_IR = """
; -1: does not match this spec; -2: not a NumPy array; else the spec position after it
define internal i64 @tw_check(ptr %a, ptr %spec, i64 %pos, ptr %arrtype) alwaysinline {{
entry:
  %tp = getelementptr i8, ptr %a, i64 8
  %t = load ptr, ptr %tp
  %isarr = icmp eq ptr %t, %arrtype
  br i1 %isarr, label %arg_nd, label %not_array

not_array:
  ret i64 -2

arg_nd:
  %ndp = getelementptr i8, ptr %a, i64 {nd}
  %nd32 = load i32, ptr %ndp
  %nd = sext i32 %nd32 to i64
  %snp = getelementptr i64, ptr %spec, i64 %pos
  %snd = load i64, ptr %snp
  %ndok = icmp eq i64 %nd, %snd
  br i1 %ndok, label %arg_dtype, label %mismatch

arg_dtype:
  %dp = getelementptr i8, ptr %a, i64 {descr}
  %d = load ptr, ptr %dp
  %tnp = getelementptr i8, ptr %d, i64 {type_num}
  %tn32 = load i32, ptr %tnp
  %tn = sext i32 %tn32 to i64
  %post = add i64 %pos, 1
  %stp = getelementptr i64, ptr %spec, i64 %post
  %stn = load i64, ptr %stp
  %tnok = icmp eq i64 %tn, %stn
  %bop = getelementptr i8, ptr %d, i64 {byteorder}
  %bo = load i8, ptr %bop
  %bo_eq = icmp eq i8 %bo, 61
  %bo_pipe = icmp eq i8 %bo, 124
  %bo_ok = or i1 %bo_eq, %bo_pipe
  %flp = getelementptr i8, ptr %a, i64 {flags}
  %fl = load i32, ptr %flp
  %cbit = and i32 %fl, 1
  %cok = icmp ne i32 %cbit, 0
  %ok1 = and i1 %tnok, %bo_ok
  %ok2 = and i1 %ok1, %cok
  br i1 %ok2, label %dims_start, label %mismatch

dims_start:
  %dimsp = getelementptr i8, ptr %a, i64 {dims}
  %dims = load ptr, ptr %dimsp
  %sdims = add i64 %pos, 2
  br label %dim_loop

dim_loop:
  %k = phi i64 [0, %dims_start], [%k1, %dim_body]
  %dmore = icmp slt i64 %k, %nd
  br i1 %dmore, label %dim_body, label %matched

dim_body:
  %dkp = getelementptr i64, ptr %dims, i64 %k
  %dk = load i64, ptr %dkp
  %sk = add i64 %sdims, %k
  %skp = getelementptr i64, ptr %spec, i64 %sk
  %sv = load i64, ptr %skp
  %k1 = add i64 %k, 1
  %dok = icmp eq i64 %dk, %sv
  br i1 %dok, label %dim_loop, label %mismatch

matched:
  %next = add i64 %sdims, %nd
  ret i64 %next

mismatch:
  ret i64 -1
}}

; drop the first `nvals` fetched variable values and release the first `nlocks` locks
define internal void @tw_release(ptr %e, ptr %tbl, i64 %nvals, i64 %nlocks) {{
entry:
  %decrefp = getelementptr i64, ptr %tbl, i64 4
  %decref = load ptr, ptr %decrefp
  %callp = getelementptr i64, ptr %tbl, i64 7
  %call0 = load ptr, ptr %callp
  %valsp = getelementptr i64, ptr %e, i64 20
  %vals = load ptr, ptr %valsp
  %relsp = getelementptr i64, ptr %e, i64 23
  %rels = load ptr, ptr %relsp
  br label %val_loop

val_loop:
  %i = phi i64 [0, %entry], [%i1, %val_body]
  %vmore = icmp slt i64 %i, %nvals
  br i1 %vmore, label %val_body, label %lock_loop

val_body:
  %vp = getelementptr ptr, ptr %vals, i64 %i
  %v = load ptr, ptr %vp
  call void %decref(ptr %v)
  %i1 = add i64 %i, 1
  br label %val_loop

lock_loop:
  %j = phi i64 [%nlocks, %val_loop], [%j1, %lock_body], [%j1, %drop]
  %lmore = icmp sgt i64 %j, 0
  br i1 %lmore, label %lock_body, label %done

lock_body:
  %j1 = sub i64 %j, 1
  %rp = getelementptr ptr, ptr %rels, i64 %j1
  %rel = load ptr, ptr %rp
  %r = call ptr %call0(ptr %rel)
  %rnull = icmp eq ptr %r, null
  br i1 %rnull, label %lock_loop, label %drop

drop:
  call void %decref(ptr %r)
  br label %lock_loop

done:
  ret void
}}

define ptr @tw_dispatch(ptr %self, ptr %args, i64 %nargs) {{
entry:
  %tblp = getelementptr i8, ptr %self, i64 {data}
  %tbl = load ptr, ptr %tblp
  %n = load i64, ptr %tbl
  %missp = getelementptr i64, ptr %tbl, i64 1
  %miss = load ptr, ptr %missp
  %atp = getelementptr i64, ptr %tbl, i64 2
  %arrtype = load ptr, ptr %atp
  %increfp = getelementptr i64, ptr %tbl, i64 3
  %incref = load ptr, ptr %increfp
  br label %entry_loop

entry_loop:
  %ei = phi i64 [0, %entry], [%ei1, %next_entry]
  %more = icmp slt i64 %ei, %n
  br i1 %more, label %entry_body, label %miss_out

entry_body:
  %eidx = add i64 %ei, {entries}
  %epp = getelementptr i64, ptr %tbl, i64 %eidx
  %e = load ptr, ptr %epp
  %enargs = load i64, ptr %e
  %okn = icmp eq i64 %enargs, %nargs
  br i1 %okn, label %args_start, label %next_entry

args_start:
  %specpp = getelementptr i64, ptr %e, i64 1
  %spec = load ptr, ptr %specpp
  br label %arg_loop

arg_loop:
  %i = phi i64 [0, %args_start], [%i1, %arg_ok]
  %pos = phi i64 [0, %args_start], [%pos1, %arg_ok]
  %amore = icmp slt i64 %i, %nargs
  br i1 %amore, label %arg_body, label %hit

arg_body:
  %ap = getelementptr ptr, ptr %args, i64 %i
  %a = load ptr, ptr %ap
  %pos1 = call i64 @tw_check(ptr %a, ptr %spec, i64 %pos, ptr %arrtype)
  %notarr = icmp eq i64 %pos1, -2
  br i1 %notarr, label %miss_out, label %arg_test

arg_test:
  %bad = icmp slt i64 %pos1, 0
  br i1 %bad, label %next_entry, label %arg_ok

arg_ok:
  %i1 = add i64 %i, 1
  br label %arg_loop

next_entry:
  %ei1 = add i64 %ei, 1
  br label %entry_loop

miss_out:
  call void %incref(ptr %miss)
  ret ptr %miss

hit:
  %busyp = getelementptr i64, ptr %e, i64 10
  %busy = load i64, ptr %busyp
  %isbusy = icmp ne i64 %busy, 0
  br i1 %isbusy, label %miss_out, label %take

take:
  store i64 1, ptr %busyp
  %ownerp = getelementptr i64, ptr %e, i64 16
  %owner = load ptr, ptr %ownerp
  call void %incref(ptr %owner)
  %decrefp = getelementptr i64, ptr %tbl, i64 4
  %decref = load ptr, ptr %decrefp
  %getitemp = getelementptr i64, ptr %tbl, i64 5
  %getitem = load ptr, ptr %getitemp
  %setitemp = getelementptr i64, ptr %tbl, i64 6
  %setitem = load ptr, ptr %setitemp
  %callp = getelementptr i64, ptr %tbl, i64 7
  %call0 = load ptr, ptr %callp
  %objsp = getelementptr i64, ptr %e, i64 5
  %objs = load ptr, ptr %objsp
  %nresp = getelementptr i64, ptr %e, i64 6
  %nres = load i64, ptr %nresp
  %nvarsp = getelementptr i64, ptr %e, i64 17
  %nvars = load i64, ptr %nvarsp
  %nlocksp = getelementptr i64, ptr %e, i64 21
  %nlocks = load i64, ptr %nlocksp
  %acqsp = getelementptr i64, ptr %e, i64 22
  %acqs = load ptr, ptr %acqsp
  %truep = getelementptr i64, ptr %tbl, i64 12
  %true = load ptr, ptr %truep
  br label %lock_loop

lock_loop:
  %li = phi i64 [0, %take], [%li1, %lock_got]
  %lmore = icmp slt i64 %li, %nlocks
  br i1 %lmore, label %lock_body, label %vars_start

lock_body:
  %lap = getelementptr ptr, ptr %acqs, i64 %li
  %la = load ptr, ptr %lap
  %lr = call ptr %call0(ptr %la)
  %lnull = icmp eq ptr %lr, null
  br i1 %lnull, label %lock_failed, label %lock_check

lock_check:
  %lok = icmp eq ptr %lr, %true
  call void %decref(ptr %lr)
  br i1 %lok, label %lock_got, label %lock_failed

lock_got:
  %li1 = add i64 %li, 1
  br label %lock_loop

lock_failed:
  ; (held by another call, or an error: the Python path waits for it or reports it)
  call void @tw_release(ptr %e, ptr %tbl, i64 0, i64 %li)
  store i64 0, ptr %busyp
  call void %decref(ptr %owner)
  br label %miss_out

vars_start:
  %vstatesp = getelementptr i64, ptr %e, i64 18
  %vstates = load ptr, ptr %vstatesp
  %vspecp = getelementptr i64, ptr %e, i64 19
  %vspec = load ptr, ptr %vspecp
  %vvalsp = getelementptr i64, ptr %e, i64 20
  %vvals = load ptr, ptr %vvalsp
  %getattrp = getelementptr i64, ptr %tbl, i64 10
  %getattr = load ptr, ptr %getattrp
  %vnamep = getelementptr i64, ptr %tbl, i64 11
  %vname = load ptr, ptr %vnamep
  br label %var_loop

var_loop:
  %vk = phi i64 [0, %vars_start], [%vk1, %var_ok]
  %vpos = phi i64 [0, %vars_start], [%vpos1, %var_ok]
  %vmore = icmp slt i64 %vk, %nvars
  br i1 %vmore, label %var_body, label %copy_start

var_body:
  %vsp = getelementptr ptr, ptr %vstates, i64 %vk
  %vs = load ptr, ptr %vsp
  %val = call ptr %getattr(ptr %vs, ptr %vname)
  %vnull = icmp eq ptr %val, null
  br i1 %vnull, label %var_error, label %var_have

var_error:
  ; (an attribute error: handed to the caller as is)
  call void @tw_release(ptr %e, ptr %tbl, i64 %vk, i64 %nlocks)
  store i64 0, ptr %busyp
  call void %decref(ptr %owner)
  ret ptr null

var_have:
  %vvp = getelementptr ptr, ptr %vvals, i64 %vk
  store ptr %val, ptr %vvp
  %vpos1 = call i64 @tw_check(ptr %val, ptr %vspec, i64 %vpos, ptr %arrtype)
  %vbad = icmp slt i64 %vpos1, 0
  %vk1 = add i64 %vk, 1
  br i1 %vbad, label %var_mismatch, label %var_ok

var_mismatch:
  ; (uninitialized, or another shape or layout: the Python path deals with it)
  call void @tw_release(ptr %e, ptr %tbl, i64 %vk1, i64 %nlocks)
  store i64 0, ptr %busyp
  call void %decref(ptr %owner)
  br label %miss_out

var_ok:
  br label %var_loop

copy_start:
  br label %copy_loop

copy_loop:
  %j = phi i64 [0, %copy_start], [%j1, %copy_body]
  %cmore = icmp slt i64 %j, %nargs
  br i1 %cmore, label %copy_body, label %res_start

copy_body:
  %cap = getelementptr ptr, ptr %args, i64 %j
  %ca = load ptr, ptr %cap
  %cop = getelementptr ptr, ptr %objs, i64 %j
  store ptr %ca, ptr %cop
  %j1 = add i64 %j, 1
  br label %copy_loop

res_start:
  %poolp = getelementptr i64, ptr %e, i64 7
  %pool = load ptr, ptr %poolp
  %allocsp = getelementptr i64, ptr %e, i64 8
  %allocs = load ptr, ptr %allocsp
  br label %res_loop

res_loop:
  %rk = phi i64 [0, %res_start], [%rk1, %res_store]
  %rmore = icmp slt i64 %rk, %nres
  br i1 %rmore, label %res_body, label %vcopy_start

res_body:
  %r = call ptr %getitem(ptr %pool, i64 %rk)
  %rc = load i64, ptr %r
  %unheld = icmp eq i64 %rc, 1
  ; (and writeable: a buffer donated elsewhere, made read-only, is not handed out again)
  %rflp = getelementptr i8, ptr %r, i64 {flags}
  %rfl = load i32, ptr %rflp
  %rwbit = and i32 %rfl, 1024
  %rw = icmp ne i32 %rwbit, 0
  %free = and i1 %unheld, %rw
  br i1 %free, label %res_store, label %res_alloc

res_alloc:
  %al = call ptr %getitem(ptr %allocs, i64 %rk)
  %nr = call ptr %call0(ptr %al)
  %isnull = icmp eq ptr %nr, null
  br i1 %isnull, label %fail, label %res_set

res_set:
  %setres = call i32 %setitem(ptr %pool, i64 %rk, ptr %nr)
  br label %res_store

res_store:
  %rr = phi ptr [%r, %res_body], [%nr, %res_set]
  %ridx = add i64 %nargs, %rk
  %rop = getelementptr ptr, ptr %objs, i64 %ridx
  store ptr %rr, ptr %rop
  %rk1 = add i64 %rk, 1
  br label %res_loop

vcopy_start:
  %vbase = add i64 %nargs, %nres
  br label %vcopy_loop

vcopy_loop:
  %q = phi i64 [0, %vcopy_start], [%q1, %vcopy_body]
  %qmore = icmp slt i64 %q, %nvars
  br i1 %qmore, label %vcopy_body, label %res_done

vcopy_body:
  %qvp = getelementptr ptr, ptr %vvals, i64 %q
  %qv = load ptr, ptr %qvp
  %qidx = add i64 %vbase, %q
  %qop = getelementptr ptr, ptr %objs, i64 %qidx
  store ptr %qv, ptr %qop
  %q1 = add i64 %q, 1
  br label %vcopy_loop

res_done:
  %widx = add i64 %vbase, %nvars
  %wop = getelementptr ptr, ptr %objs, i64 %widx
  %wsp = getelementptr i64, ptr %e, i64 9
  %ws = load ptr, ptr %wsp
  store ptr %ws, ptr %wop
  %stepp = getelementptr i64, ptr %e, i64 2
  %step = load ptr, ptr %stepp
  %constsp = getelementptr i64, ptr %e, i64 3
  %consts = load ptr, ptr %constsp
  %cbp = getelementptr i64, ptr %e, i64 4
  %cb = load ptr, ptr %cbp
  %relp = getelementptr i64, ptr %e, i64 15
  %rel = load i64, ptr %relp
  %release = icmp ne i64 %rel, 0
  br i1 %release, label %call_released, label %call_held

call_released:
  %savep = getelementptr i64, ptr %tbl, i64 8
  %save = load ptr, ptr %savep
  %restorep = getelementptr i64, ptr %tbl, i64 9
  %restore = load ptr, ptr %restorep
  %ts = call ptr %save()
  %st1 = call i32 %step(ptr %objs, ptr %consts, ptr %cb)
  call void %restore(ptr %ts)
  br label %after

call_held:
  %st2 = call i32 %step(ptr %objs, ptr %consts, ptr %cb)
  br label %after

after:
  %st = phi i32 [%st1, %call_released], [%st2, %call_held]
  call void @tw_release(ptr %e, ptr %tbl, i64 %nvars, i64 %nlocks)
  %hitsp = getelementptr i64, ptr %e, i64 14
  %hits = load i64, ptr %hitsp
  %hits1 = add i64 %hits, 1
  store i64 %hits1, ptr %hitsp
  %failed = icmp ne i32 %st, 0
  br i1 %failed, label %err, label %ok

err:
  %st64 = sext i32 %st to i64
  %statusp = getelementptr i64, ptr %e, i64 13
  store i64 %st64, ptr %statusp
  %onerrp = getelementptr i64, ptr %e, i64 12
  %onerr = load ptr, ptr %onerrp
  %out1 = call ptr %call0(ptr %onerr)
  br label %done

ok:
  %finp = getelementptr i64, ptr %e, i64 11
  %fin = load ptr, ptr %finp
  %nofin = icmp eq ptr %fin, null
  br i1 %nofin, label %single, label %structured

structured:
  %out2 = call ptr %call0(ptr %fin)
  br label %done

single:
  %out3 = call ptr %getitem(ptr %pool, i64 0)
  call void %incref(ptr %out3)
  br label %done

done:
  %out = phi ptr [%out1, %err], [%out2, %structured], [%out3, %single]
  store i64 0, ptr %busyp
  call void %decref(ptr %owner)
  ret ptr %out

fail:
  call void @tw_release(ptr %e, ptr %tbl, i64 %nvars, i64 %nlocks)
  store i64 0, ptr %busyp
  call void %decref(ptr %owner)
  ret ptr null
}}
"""


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


_METH_FASTCALL = 0x0080
_lock = threading.Lock()


@lru_cache(maxsize=1)
def _native() -> tuple[Any, _MethodDef, list[int]]:
    """The compiled dispatcher (kept alive), its method definition, and the table
    header: the C-API functions it calls."""
    from . import jit
    off = layout()
    assert off is not None
    compiled = jit.compile_module(_IR.format(entries=_T_ENTRIES, **off), ["tw_dispatch"],
                                  runtime=True)
    method = _MethodDef(b"tw_dispatch", compiled.address("tw_dispatch"), _METH_FASTCALL,
                        b"A tw.compile function's native dispatcher.")
    api = ctypes.pythonapi

    def fn(name: str) -> int:
        return ctypes.cast(getattr(api, name), ctypes.c_void_p).value

    header = [0, id(MISS), id(np.ndarray), fn("Py_IncRef"), fn("Py_DecRef"),
              fn("PyList_GetItem"), fn("PyList_SetItem"), fn("PyObject_CallNoArgs"),
              fn("PyEval_SaveThread"), fn("PyEval_RestoreThread"), fn("PyObject_GetAttr"),
              id(_VALUE), id(True)]
    return compiled, method, header


_VALUE = "value"  # the attribute of a variable's state that holds its buffer
_new_function = ctypes.pythonapi.PyCFunction_NewEx
_new_function.restype = ctypes.py_object
_new_function.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p]


class Entry:
    """One signature a dispatcher runs natively: the step's function and buffers, the
    argument spec, and the Python objects the native code refers to (all kept alive by
    this object, which the dispatcher references while a call runs).

    `step_fn`, `consts` and `callback` are the addresses `tw_step_objects` takes;
    `arg_specs` the (dtype, shape) of each argument; `result_allocs` a zero-argument
    allocator per result; `finish` None to return the one result as is, else a
    zero-argument callable that builds the return value from `pool`; `on_error(status,
    workspace)` raises the step's error. `keep` holds whatever else must stay alive;
    `pool` optionally gives the result buffers to start from (reused once the caller has
    dropped them). `variables`: the states of the variables the step reads or assigns
    (their ``value`` is read on every call and must match the (dtype, shape) in
    `var_specs`, else the call takes the Python path, e.g. while uninitialized), and
    `locks` the locks to hold during the step, in the order to take them (taken without
    waiting: a lock held elsewhere sends the call to the Python path, which waits)."""

    def __init__(self, key: Any, step_fn: int, consts: int, callback: int,
                 arg_specs: list[tuple[np.dtype, tuple[int, ...]]],
                 result_allocs: list[Callable[[], np.ndarray]],
                 finish: Callable[[list[np.ndarray]], Any] | None,
                 on_error: Callable[[int, np.ndarray], Any], workspace: np.ndarray,
                 release_gil: bool, keep: Any, pool: list[np.ndarray] | None = None,
                 variables: Sequence[Any] = (),
                 var_specs: Sequence[tuple[np.dtype, tuple[int, ...]]] = (),
                 locks: Sequence[Any] = ()) -> None:
        self.key = key
        self.keep = keep
        spec: list[int] = []
        for dt, shape in arg_specs:
            spec += [len(shape), np.dtype(dt).num, *shape]
        self.spec = np.array(spec or [0], np.int64)
        # the result buffers the next call may reuse; `_TAKEN` (always referenced
        # elsewhere too) makes the first call allocate
        self.pool = list(pool) if pool is not None else [_TAKEN] * len(result_allocs)
        self.allocs = list(result_allocs)
        self.workspace = workspace
        n = len(arg_specs) + len(result_allocs) + len(variables) + 1
        self.objects = np.zeros(n, np.uint64)
        vspec: list[int] = []
        for dt, shape in var_specs:
            vspec += [len(shape), np.dtype(dt).num, *shape]
        self.var_spec = np.array(vspec or [0], np.int64)
        self.variables = list(variables)
        self.var_ids = np.array([id(v) for v in self.variables] or [0], np.uint64)
        self.var_values = np.zeros(max(1, len(self.variables)), np.uint64)  # (scratch)
        self.acquires = [functools.partial(lock.acquire, False) for lock in locks]
        self.releases = [lock.release for lock in locks]
        self.acquire_ids = np.array([id(f) for f in self.acquires] or [0], np.uint64)
        self.release_ids = np.array([id(f) for f in self.releases] or [0], np.uint64)
        self.finish = None if finish is None else (lambda: finish(list(self.pool)))
        self._on_error = on_error
        self.raise_error = self._raise_error
        self.words = np.zeros(_E_WORDS, np.int64)
        w = self.words
        w[_E_NARGS], w[_E_SPEC] = len(arg_specs), self.spec.ctypes.data
        w[_E_STEP], w[_E_CONSTS], w[_E_CALLBACK] = step_fn, consts, callback
        w[_E_OBJECTS], w[_E_NRES] = self.objects.ctypes.data, len(result_allocs)
        w[_E_POOL], w[_E_ALLOCS], w[_E_WS] = id(self.pool), id(self.allocs), id(workspace)
        w[_E_FINISH] = 0 if self.finish is None else id(self.finish)
        w[_E_ON_ERROR], w[_E_RELEASE] = id(self.raise_error), int(release_gil)
        w[_E_OWNER] = id(self)
        w[_E_NVARS], w[_E_VSTATES] = len(self.variables), self.var_ids.ctypes.data
        w[_E_VSPEC], w[_E_VVALS] = self.var_spec.ctypes.data, self.var_values.ctypes.data
        w[_E_NLOCKS], w[_E_ACQUIRE] = len(self.acquires), self.acquire_ids.ctypes.data
        w[_E_RELEASES] = self.release_ids.ctypes.data

    @property
    def hits(self) -> int:
        """Calls this entry answered."""
        return int(self.words[_E_HITS])

    def _raise_error(self) -> Any:
        return self._on_error(int(self.words[_E_STATUS]), self.workspace)


class Dispatcher:
    """One `tw.compile` function's native dispatcher: `function` is the callable
    (``function(*arrays)`` returns the result or `MISS`); `install` adds an entry (the
    oldest goes when `MAX_ENTRIES` are in use), `remove` drops entries."""

    def __init__(self) -> None:
        compiled, method, header = _native()
        self._keep = (compiled, method)
        self.table = np.zeros(_T_ENTRIES + MAX_ENTRIES, np.int64)
        self.table[:_T_ENTRIES] = header
        self.entries: list[Entry] = []
        self.installs = 0
        self.function = _new_function(ctypes.addressof(method), self.table, None)

    def _publish(self) -> None:
        # (under the GIL, like every native read of the table: no call sees it half-done)
        t = self.table
        t[_T_ENTRIES:_T_ENTRIES + len(self.entries)] = [e.words.ctypes.data
                                                        for e in self.entries]
        t[_T_COUNT] = len(self.entries)

    def install(self, entry: Entry) -> bool:
        """Add `entry` (replacing one with the same key and argument specs: one trace
        with unknown dims has an entry per shape); False once this function has
        installed `MAX_INSTALLS` entries (its shapes keep changing: the Python path is
        cheaper than rebuilding entries)."""
        with _lock:
            if self.installs >= MAX_INSTALLS:
                return False
            self.installs += 1
            kept = [e for e in self.entries
                    if e.key != entry.key or not np.array_equal(e.spec, entry.spec)]
            self.entries = ([entry] + kept)[:MAX_ENTRIES]
            self._publish()
            return True

    def remove(self, keep: Callable[[Entry], bool]) -> None:
        """Drop the entries for which `keep` is false."""
        with _lock:
            self.entries = [e for e in self.entries if keep(e)]
            self._publish()

    def hit_counts(self) -> dict[Any, int]:
        """Calls answered natively, per entry key (the entries of one key summed)."""
        counts: dict[Any, int] = {}
        for e in self.entries:
            counts[e.key] = counts.get(e.key, 0) + e.hits
        return counts


__all__ = ["MAX_ENTRIES", "MISS", "Dispatcher", "Entry", "enabled", "layout"]
