"""Step records: what the pipeline and the planner derive from a traced graph, on disk.

A warm first call in a new process would otherwise run the pipeline (`compiler.pipeline`),
specialize and plan the step (`step.plan_step`, which imports every lowering) and print
the planned graph for the object code's key: ~40-50 ms for issue 13's W2, more than the
code's load from the disk cache. A *step record* holds what a `NativeStep` needs to run
without any of that: the object code's disk key (`jit.compile_digest`), argument,
result and variable specs, the constants' bytes (after constant folding), the workspace
size and a few flags. The plan itself is rebuilt only when something rare needs it (an
error to report, a node that runs its reference kernel, a profile, donated arguments).

The record's key covers everything the record depends on:

- the traced graph (`printer.graph_fingerprint`: ops, names, value flow, attributes
  and constants by their bytes, types, devices, source lines, regions); graphs with an
  attribute that has no canonical form, or with an op whose declaration, inference,
  kernels or gradient come from outside tensorweave (a user's op may change between
  processes), get no record;
- the argument dtypes and shapes of the call (the step is specialized to them);
- the pipeline's stages for this compile, the passes each runs (by module and name:
  a pass from outside tensorweave, e.g. a user's stage, means no record) and the
  placement settings (soft placement, GPUs for automatic placement, the logical
  devices);
- every ``TW_*`` environment variable except the cache's location (``TW_LLVM_OPT``,
  ``TW_NUM_THREADS``, ``TW_BLAS_THREADS``, ...) and ``OPENBLAS_CORETYPE``;
- the host (LLVM triple, CPU, features), the thread count the step is cut for, the
  threads its module is compiled on (`jit.compile_threads`: they are in the object
  code's key), NumPy's data offset, the Python, NumPy, llvmlite and LLVM versions;
- the source of the whole package (`source_fingerprint`: every ``.py`` file's path,
  size and modification time, the test Python itself applies to its ``.pyc`` files;
  the object code's own key also hashes the cpu target's source by content).

The BLAS probe's answer (`executable._blas_key`, for steps with products) is stored in
the record and compared on load. Records are `disk_cache` entries (magic, version,
length, SHA-256 of key and payload): a truncated or altered one is deleted and the step
planned again. The payload is a JSON header followed by the constants' raw bytes (never
pickle: loading a record runs no code).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from . import disk_cache

_log = logging.getLogger(__name__)

RECORD_SUFFIX = ".twplan"
RECORD_VERSION = 2  # 2: dtypes by tensorweave name (bfloat16 was NumPy's '<V2')
_HEAD = struct.Struct("<I")  # length of the JSON header that starts a payload
# environment variables that choose where the cache is, not what it holds
_ENV_IGNORED = frozenset({"TW_CACHE_DIR", "TW_DISABLE_CACHE"})


@dataclass
class StepRecord:
    """What a `NativeStep` needs besides its code (see the module docstring)."""

    code_key: str                              # the object code's key (`jit.compile_digest`)
    arg_specs: list[tuple[np.dtype, tuple]]    # (dtype, shape) per graph argument
    result_specs: list[tuple[tuple, np.dtype]]  # (shape, dtype) per graph result
    consts: list[np.ndarray]                   # the step's constant table
    var_names: list[str]
    var_specs: list[tuple[np.dtype, tuple]]    # (dtype, shape) per variable
    var_first_access: list[str]                # "read" or "write" per variable
    workspace_bytes: int
    arena: bool        # loop-gradient stacks in the workspace header (`stacks`)
    has_loops: bool    # a While: a deadline sends calls to the dataflow executor
    uses_blas: bool    # the code calls BLAS routines (registered before it loads)
    blas_key: str      # `executable._blas_key` when the record was made
    callbacks: bool    # some node runs its reference kernel from the step


def _dtype_name(dtype: Any) -> str:
    """A dtype as its tensorweave name: NumPy's ``dtype.str`` of bfloat16 is ``'<V2'``,
    which reads back as a void dtype (its results came back as bytes)."""
    from ...compiler.dtypes import as_dtype
    return as_dtype(np.dtype(dtype)).ir_name


def _dtype_of(name: str) -> np.dtype:
    from ...compiler.dtypes import as_dtype
    return np.dtype(as_dtype(name).np)


def encode(record: StepRecord) -> bytes | None:
    """The record as bytes, or None when a constant has no plain byte form."""
    consts = []
    for c in record.consts:
        if c.dtype.hasobject or not c.flags.c_contiguous:
            return None
        try:
            name = _dtype_name(c.dtype)
        except Exception:  # noqa: BLE001 - a dtype without a tensorweave name: no record
            return None
        consts.append({"dtype": name, "shape": list(c.shape), "bytes": c.nbytes})
    head = {
        "version": RECORD_VERSION, "code_key": record.code_key,
        "args": [[_dtype_name(d), list(s)] for d, s in record.arg_specs],
        "results": [[list(s), _dtype_name(d)] for s, d in record.result_specs],
        "consts": consts, "var_names": list(record.var_names),
        "vars": [[_dtype_name(d), list(s)] for d, s in record.var_specs],
        "var_first_access": list(record.var_first_access),
        "workspace_bytes": int(record.workspace_bytes), "arena": record.arena,
        "has_loops": record.has_loops, "uses_blas": record.uses_blas,
        "blas_key": record.blas_key, "callbacks": record.callbacks,
    }
    text = json.dumps(head, separators=(",", ":")).encode()
    return b"".join([_HEAD.pack(len(text)), text] + [c.tobytes() for c in record.consts])


def decode(payload: bytes) -> StepRecord:
    """The record in `payload` (from `encode`); raises ValueError when it is not one."""
    try:
        (n,) = _HEAD.unpack_from(payload)
        head = json.loads(payload[_HEAD.size:_HEAD.size + n])
        if head["version"] != RECORD_VERSION:
            raise ValueError(f"record version {head['version']}")
        pos = _HEAD.size + n
        consts = []
        for c in head["consts"]:
            size = int(c["bytes"])
            if pos + size > len(payload):
                raise ValueError("constants cut short")
            a = np.empty(tuple(c["shape"]), _dtype_of(c["dtype"]))
            if a.nbytes != size:
                raise ValueError("constant size differs from its shape")
            a.reshape(-1).view(np.uint8)[:] = np.frombuffer(payload, np.uint8, size, pos)
            consts.append(a)
            pos += size
        if pos != len(payload):
            raise ValueError("trailing bytes")
        return StepRecord(
            str(head["code_key"]),
            [(_dtype_of(d), tuple(s)) for d, s in head["args"]],
            [(tuple(s), _dtype_of(d)) for s, d in head["results"]],
            consts, [str(v) for v in head["var_names"]],
            [(_dtype_of(d), tuple(s)) for d, s in head["vars"]],
            [str(v) for v in head["var_first_access"]],
            int(head["workspace_bytes"]), bool(head["arena"]), bool(head["has_loops"]),
            bool(head["uses_blas"]), str(head["blas_key"]), bool(head["callbacks"]))
    except (struct.error, KeyError, TypeError, ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"not a step record: {e}") from None


_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@lru_cache(maxsize=4)
def source_fingerprint(root: str = _PACKAGE) -> str:
    """A hash of every ``.py`` file under `root` (default: the tensorweave package, as it
    was when the package was imported: `tensorweave._source`) by path, size and
    modification time (what Python's own ``.pyc`` check compares), and of the versions of
    Python and the libraries whose behavior a plan may depend on."""
    import llvmlite

    from ... import _source
    h = hashlib.sha256()
    for part in (sys.version, np.__version__, llvmlite.__version__):
        h.update(part.encode() + b"\0")
    same = os.path.abspath(root) == _source.PACKAGE_ROOT
    h.update((_source.AT_IMPORT if same else _source.files_digest(root)).encode())
    return h.hexdigest()


_BUILTIN_OPS: dict[str, bool] = {}


def _builtin_op(op: str) -> bool:
    """Whether everything registered for `op` (declaration's inference, kernels,
    gradient) is tensorweave's own code."""
    known = _BUILTIN_OPS.get(op)
    if known is None:
        from ...compiler.registry import get_op
        try:
            od = get_op(op)
        except Exception:  # noqa: BLE001 -- an unknown op: never cached
            return False
        fns = [od.infer_fn, od.grad_fn] + [k.fn for k in od.kernels.values()]
        known = all(f is None or (getattr(f, "__module__", None) or "").startswith(
            "tensorweave.") for f in fns)
        # (not memoized when false: the user may register it again later)
        if known:
            _BUILTIN_OPS[op] = known
    return known


def _all_builtin(graph: Any) -> bool:
    for node in graph.nodes:
        if not _builtin_op(node.op):
            return False
        for r in node.regions:
            if not _all_builtin(r):
                return False
    return True


def _placement_settings() -> str:
    from ...config import get_soft_device_placement
    from ...runtime.devices import default_device_manager
    placement = sys.modules.get("tensorweave.passes.placement")
    auto = placement.auto_device_types() if placement is not None else ()
    scope = placement._scope.get() if placement is not None else None
    if scope is not None:
        return ""  # a cluster's placement scope: never cached
    devices = [d.name for d in default_device_manager().list_devices()]
    return f"soft={get_soft_device_placement()} auto={list(auto)} devices={devices}"


def _pass_names(stages: list[str]) -> str | None:
    """The passes of `stages` by module and qualified name, or None when one is not
    tensorweave's own (its source is not covered by `source_fingerprint`)."""
    from ...compiler.pipeline import stage_passes
    names = []
    for p in stage_passes(stages):
        module = getattr(p, "__module__", None) or ""
        if not module.startswith("tensorweave."):
            return None
        names.append(f"{module}:{getattr(p, '__qualname__', None) or repr(p)}")
    return ",".join(names)


def record_key(traced: Any, stages: list[str], arrays: Any, code_parts: str) -> str | None:
    """The key of the step record for `traced` (the traced graph, before the pipeline)
    compiled through `stages` and called with `arrays`; `code_parts` is what the
    object code depends on besides the graph (`executable._code_prefix`). None when
    this graph or setting is never cached (see the module docstring)."""
    from ...compiler.printer import graph_fingerprint
    if disk_cache.cache_dir() is None:
        return None
    placement = _placement_settings()
    if not placement or not _all_builtin(traced):
        return None
    fp = graph_fingerprint(traced)
    passes = _pass_names(stages)
    if fp is None or passes is None:
        return None
    from .jit import compile_threads, host_info
    host = host_info()
    env = sorted((k, v) for k, v in os.environ.items()
                 if (k.startswith("TW_") and k not in _ENV_IGNORED) or k == "OPENBLAS_CORETYPE")
    parts = [f"tensorweave step record v{RECORD_VERSION}", fp, ",".join(stages), passes,
             repr([(np.dtype(a.dtype).str, tuple(a.shape)) for a in arrays]), placement,
             repr(env), host.triple, host.cpu, host.features, code_parts,
             f"compile threads {compile_threads()}", source_fingerprint()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def load(key: str) -> StepRecord | None:
    """The record stored under `key`, or None; an entry that is not a valid record is
    deleted (and logged)."""
    try:
        payload = disk_cache.load(key, RECORD_SUFFIX)
    except disk_cache.InvalidEntry:  # (logged and deleted)
        return None
    if payload is None:
        return None
    try:
        return decode(payload)
    except ValueError as e:
        _log.debug("step record %s: %s; deleted", key[:16], e)
        disk_cache.discard(key, RECORD_SUFFIX)
        return None


def store(key: str, record: StepRecord) -> bool:
    """Write `record` under `key`; False when it has no byte form or was not written."""
    payload = encode(record)
    return payload is not None and disk_cache.store(key, payload, RECORD_SUFFIX)


def discard(key: str) -> None:
    """Delete the record under `key` (e.g. one whose code did not match)."""
    disk_cache.discard(key, RECORD_SUFFIX)


__all__ = ["RECORD_SUFFIX", "StepRecord", "decode", "discard", "encode", "load",
           "record_key", "source_fingerprint", "store"]
