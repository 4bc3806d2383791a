"""What `@tw.compile(target="cpu")` runs: one native function per step when it can,
the dataflow executor (with native per-node kernels) when it cannot.

`CpuExecutable` keeps one `NativeStep` per tuple of argument shapes: the graph is
specialized to those shapes (`passes.shape_inference.specialize`), planned and compiled
by `step`. Graphs that `step` declines (several devices, queues, control-flow regions,
shapes only known at run time) and calls that need the dataflow executor's services
(node traces, shared step ids) use a `DataflowExecutable` of the same graph, resources and
counters, so random numbers and variables are shared between both paths.
"""

from __future__ import annotations

import ctypes
import logging
import sys
import threading
import time
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from ...compiler.ir import Graph
from ...compiler.types import TensorType, format_shape
from ...errors import (
    CompileError,
    FailedPreconditionError,
    InvalidArgumentError,
    TensorWeaveError,
)
from ...runtime.devices import DeviceSpec
from ...runtime.kernel_context import CallCounters, StepContext
from ...runtime.resources import ResourceManager, default_resource_manager
from ...runtime.threads import limit_blas_threads
from ..step_cache import StepCache
from . import allocator, disk_cache, jit, plan_cache
from .step_abi import OBJECTS_STEP_NAME, WORKSPACE_HEADER, CallbackFn, Ineligible, numpy_data_offset

if TYPE_CHECKING:
    from .step import StepPlan

# The code generator (`step`, `lowering`, `stacks`: llvmlite's IR builder and every
# lowering) is imported where a plan is made or code generated, not here: a step loaded
# with its record from the disk cache (`plan_cache`) needs none of it.


def plan_step(graph: Graph) -> StepPlan:
    """`step.plan_step` (imported on first use)."""
    from .step import plan_step as plan
    return plan(graph)


def emit_step(plan: StepPlan, **kw: Any) -> Any:
    """`step.emit_step` (imported on first use)."""
    from .step import emit_step as emit
    return emit(plan, **kw)


def uses_stacks(plan: StepPlan) -> bool:
    """`step.uses_stacks` (imported on first use)."""
    from .step import uses_stacks as uses
    return uses(plan)

_UNSET: Any = object()
_log = logging.getLogger(__name__)
MAX_SHAPES = 64  # argument-shape tuples remembered per executable


# ops whose lowerings may call BLAS (through `lowering.gemm_function`)
_MAY_CALL_BLAS = frozenset({"MatMul", "FusedMatMul", "Conv2D", "FusedConv2D", "Conv2DBackpropInput",
                            "Conv2DBackpropFilter"})


def _blas_key(plan: StepPlan) -> str:
    """What the GEMM code generated for `plan` depends on besides the graph: where this
    process's BLAS may split products (probed) and its thread setting."""
    return _blas_key_of(any(n.op in _MAY_CALL_BLAS for n in _all_nodes(plan)))


def _blas_key_of(uses_blas: bool) -> str:
    if not uses_blas:
        return "no-blas"
    import os
    return _blas_settings(os.environ.get("TW_BLAS_THREADS", ""),
                          os.environ.get("TW_BLAS_OWN_THREADS", "0").strip() == "1")


def _code_prefix() -> str:
    """What a step's object code depends on besides its graph and the BLAS probe."""
    from .parallel import num_threads
    return f"data_offset={_data_offset()} threads={num_threads()}"


def _code_text(plan: StepPlan) -> str:
    """The text a step's object code is keyed by (`jit.compile_keyed`): the printed graph
    and everything else the code generator reads."""
    from ...compiler.printer import print_graph
    blas = _blas_key(plan)
    return f"step objects {_code_prefix()} {blas}\n" + print_graph(plan.graph)


def step_record(plan: StepPlan, code_text: str | None = None) -> plan_cache.StepRecord:
    """The `plan_cache.StepRecord` of `plan` (`code_text`: its `_code_text`, if made):
    its object code's key and what a call needs."""
    uses_blas = any(n.op in _MAY_CALL_BLAS for n in _all_nodes(plan))
    blas = _blas_key_of(uses_blas)
    key = code_text if code_text is not None else _code_text(plan)
    graph = plan.graph
    return plan_cache.StepRecord(
        code_key=jit.keyed_digest(key, loop_vectorize=True),
        arg_specs=[(np.dtype(v.type.dtype.np), tuple(v.type.shape)) for v in graph.args],
        result_specs=[(tuple(v.type.shape), np.dtype(v.type.dtype.np)) for v in graph.results],
        consts=list(plan.consts), var_names=list(plan.var_names),
        var_specs=[(np.dtype(t.dtype.np), tuple(t.shape)) for t in plan.var_types],
        var_first_access=list(plan.var_first_access), workspace_bytes=plan.workspace_bytes,
        arena=uses_stacks(plan), has_loops=any(n.op == "While" for n in _all_nodes(plan)),
        uses_blas=uses_blas, blas_key=blas, callbacks=bool(plan.callback_nodes))


@lru_cache(maxsize=8)
def _blas_settings(threads: str, own_threads: bool = False) -> str:
    """`_blas_key` for a BLAS thread setting (``TW_BLAS_THREADS``) and whether products
    may run on the library's own threads (``TW_BLAS_OWN_THREADS``, `lowering.gemm_plan`:
    code that calls them differs). Probing the BLAS (`lowering.blas_row_align`:
    hundreds of small products, ~0.1 s) would be most of a first call whose step comes
    from the disk cache, so the answer is kept there too, under the identity of the BLAS
    library (path, size, modification time), the host CPU, the thread settings and the
    code generator's source: the same library on the same CPU answers the same."""
    def probe() -> bytes:
        from .lowering import blas_row_align  # (the code generator: only when probing)
        # (split=cols: products may be cut by columns too, `lowering.gemm_split`)
        return (f"blas_align={blas_row_align('f32')},{blas_row_align('f64')} split=cols "
                f"blas_threads={threads}").encode()

    settings = disk_cache.note(_blas_probe_key(threads), probe).decode()
    return settings + (" blas_own_threads=1" if own_threads else "")


def _blas_probe_key(threads: str) -> str | None:
    """The disk-cache key of the BLAS probe's answer, or None when the library holding
    the BLAS cannot be identified (then the probe runs in every process)."""
    import hashlib
    import os

    from .blas import library_path, register_blas
    if disk_cache.cache_dir() is None or not register_blas():
        return None
    path = library_path()
    try:
        st = os.stat(path) if path else None
    except OSError:
        return None
    if st is None:
        return None
    host = jit.host_info()
    parts = ("tensorweave blas probe v1", path, str(st.st_size), str(st.st_mtime_ns),
             host.triple, host.cpu, host.features, f"TW_BLAS_THREADS={threads}",
             f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')}",
             jit.codegen_fingerprint())
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _all_nodes(plan: StepPlan) -> list[Any]:
    """The nodes of a plan and of its regions' plans."""
    out = [a.node for a in plan.actions if a.node is not None]
    for a in plan.actions:
        for r in a.regions:
            out.extend(_all_nodes(r))
    return out


class _CallState(threading.local):
    """The call in progress on this thread (the callback needs it)."""

    error: BaseException | None = None
    step: StepContext | None = None


ObjectsStepFn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_void_p)


@lru_cache(maxsize=1)
def _data_offset() -> int:
    return numpy_data_offset()


class NativeStep:
    """One static graph compiled by `step` into one native function.

    Made from a `StepPlan`, or from a `plan_cache.StepRecord` alone (a warm first call in
    a new process) with `make_plan` to rebuild the plan when something rare needs it
    (`plan`: errors, callbacks, profiles, donation)."""

    def __init__(self, plan: StepPlan | None, resources: ResourceManager,
                 counters: CallCounters, record: plan_cache.StepRecord | None = None,
                 make_plan: Any = None) -> None:
        self._plan = plan
        self._make_plan = make_plan
        self._plan_lock = threading.Lock()
        code_text = _code_text(plan) if record is None else None
        self.record = record = record if record is not None else step_record(plan, code_text)
        self.resources = resources
        self.counters = counters
        # BLAS and libc symbols must be known to the JIT before code calling them loads.
        if record.uses_blas:
            from .blas import register_blas
            register_blas()
        from . import profiling
        profiling.register_symbols()
        # a step with loop-gradient stacks keeps their arena in each workspace's header
        self._arena = record.arena
        if self._arena:
            from . import stacks
            stacks.register_symbols()
        def build() -> str:
            if code_text is None:
                # A record whose code is in neither cache: the caller plans the step
                # anew (`CpuExecutable._build_step`) rather than pairing a fresh plan's
                # code with the record's buffers and constants.
                raise _RecordWithoutCode
            return str(emit_step(self.plan, data_offset=_data_offset()))
        names = [OBJECTS_STEP_NAME]
        if self._arena:
            from .stacks import ARENA_RELEASE_NAME
            names.append(ARENA_RELEASE_NAME)
        self._compiled = (jit.compile_keyed(code_text, build, names, loop_vectorize=True)
                          if code_text is not None else
                          jit.compile_digest(record.code_key, build, names, loop_vectorize=True))
        self._fn = ObjectsStepFn(self._compiled.address(OBJECTS_STEP_NAME))
        self._release = (ctypes.CFUNCTYPE(None, ctypes.c_void_p)(
            self._compiled.address(names[1])) if self._arena else None)
        if self._arena:
            from .stacks import ARENA_OFFSET
            self._arena_offset = ARENA_OFFSET
        self._arg_specs = record.arg_specs
        self._result_specs = record.result_specs
        self._var_specs = record.var_specs
        self._consts_arrays = record.consts  # (kept alive: the table holds their addresses)
        self._consts = (ctypes.c_void_p * max(1, len(record.consts)))(
            *[c.ctypes.data for c in record.consts])
        self._objects = ctypes.c_void_p * (len(record.arg_specs) + len(record.result_specs)
                                           + len(record.var_names) + 1)
        self._var_states: list[Any] | None = None
        self._locks: list[Any] = []
        self._workspaces: list[np.ndarray] = []
        self._ws_bytes = WORKSPACE_HEADER + max(1, record.workspace_bytes)
        self._spares: list[list[np.ndarray]] = []  # result sets of finished calls
        self._donation_cache: dict[frozenset[int], dict[int, int]] = {}
        self._state = _CallState()
        self._callback = CallbackFn(self._run_callback)
        self.has_loops = record.has_loops
        self._callback_kernels: dict[int, Any] = {}  # action position -> kernel (first use)

    @property
    def plan(self) -> StepPlan:
        """The step's plan (rebuilt on first use for a step made from a record; a plan
        whose code differs from the record's deletes the record, see `plan_cache`)."""
        plan = self._plan
        if plan is None:
            with self._plan_lock:
                plan = self._plan
                if plan is None:
                    plan, record_key = self._make_plan()
                    if step_record(plan).code_key != self.record.code_key:
                        # (never expected: the record's key covers what the plan depends
                        # on; its positions would not name this code's actions)
                        if record_key is not None:
                            plan_cache.discard(record_key)
                        raise CompileError(
                            f"the cached step record of {plan.graph.name!r} does not match "
                            f"its graph's plan (deleted; the next process plans it anew)")
                    self._plan = plan
        return plan

    # ------------------------------------------------------------------ variables
    def _variables(self) -> list[Any]:
        if self._var_states is None:
            states = [self.resources.variable(n) for n in self.record.var_names]
            self._locks = [st.lock for st in sorted(states, key=lambda st: st.name)]
            self._var_states = states
        return self._var_states

    def _var_buffers(self, states: list[Any]) -> tuple[list[np.ndarray], list[int]]:
        """The variables' buffers (under their locks); new buffers for variables this step
        initializes (returned by index, stored only when the step succeeds)."""
        buffers, fresh = [], []
        for k, st in enumerate(states):
            value = st.value
            dt, shape = self._var_specs[k]
            if value is None:
                if self.record.var_first_access[k] == "read":
                    raise FailedPreconditionError(
                        f"attempting to use uninitialized variable '{st.name}'")
                value = np.empty(shape, dt)
                fresh.append(k)
            elif value.shape != shape or value.dtype != dt or not value.flags.c_contiguous:
                raise _Unplanned
            buffers.append(value)
        return buffers, fresh

    # ------------------------------------------------------------------ results
    def _results(self) -> list[np.ndarray]:
        """Result buffers: an earlier call's, where nobody else holds them any more (so
        large results do not page-fault fresh memory every step), else blocks that other
        results left behind (`allocator`: the caller may still hold the last result)."""
        try:
            spare = self._spares.pop()  # atomic: concurrent calls never share a set
        except IndexError:
            return [allocator.empty(shape, dt) for shape, dt in self._result_specs]
        out = []
        for k, (shape, dt) in enumerate(self._result_specs):
            # references: `spare`'s list and getrefcount's argument: nobody else has it;
            # read-only: donated to another function since (`donate_argnums`)
            out.append(spare[k] if sys.getrefcount(spare[k]) <= 2 and spare[k].flags.writeable
                       else allocator.empty(shape, dt))
        return out

    # ------------------------------------------------------------------ donation
    def _donations(self, args: list[np.ndarray], donated: frozenset[int]) -> dict[int, int]:
        """result -> argument whose buffer it is computed into, for this call's donated
        arguments (`allocator.donation_pairs`), where the buffer may be written: the
        array is writeable and shares no memory with another argument."""
        pairs = self._donation_cache.get(donated)
        if pairs is None:
            pairs = self._donation_cache[donated] = allocator.donation_pairs(self.plan,
                                                                               donated)
        return {r: i for r, i in pairs.items() if args[i].flags.writeable and not any(
            j != i and np.may_share_memory(args[i], a) for j, a in enumerate(args))}

    # ------------------------------------------------------------------ calling
    def __call__(self, arrays: Sequence[np.ndarray], step: StepContext | None = None,
                 donated: frozenset[int] = frozenset()) -> list[np.ndarray]:
        """Run the step on `arrays` (one per graph argument); returns fresh results, or
        for `donated` arguments (graph argument indices) possibly their buffers, which
        the caller gives up (`tw.compile`'s ``donate_argnums``)."""
        args = []
        for a, (dt, shape) in zip(arrays, self._arg_specs):
            # (exactly arrays: the entry point reads the data pointer of an ndarray object)
            if type(a) is not np.ndarray or a.dtype != dt or a.shape != shape:
                raise _Unplanned
            args.append(a if a.flags.c_contiguous else np.ascontiguousarray(a))
        donations = self._donations(args, donated) if donated else None
        states = self._var_states if self._var_states is not None else self._variables()
        locks = self._locks
        for lock in locks:
            lock.acquire()
        try:
            buffers, fresh = self._var_buffers(states) if states else ((), ())
            results = self._results()
            if donations:
                for r, i in donations.items():
                    results[r] = args[i]
            try:
                ws = self._workspaces.pop()
            except IndexError:
                ws = np.empty(self._ws_bytes, np.uint8)
                ws[:WORKSPACE_HEADER] = 0  # (an empty arena)
            if self.record.callbacks:
                state = self._state
                state.error, state.step = None, step
            objects = self._objects(*map(id, args), *map(id, results), *map(id, buffers),
                                    id(ws))
            status = self._fn(objects, self._consts, self._callback)
            position = int(ws[:4].view(np.int32)[0]) if status else -1
            self._workspaces.append(ws)
            if status:
                self._raise(status, position)
            for k in fresh:
                states[k].value = buffers[k]
        finally:
            for lock in locks:
                lock.release()
        if donations:
            # the result is a new array object on the donated memory; the caller's array
            # becomes read-only (using it afterwards is the caller's bug: a write fails)
            for r, i in donations.items():
                results[r] = args[i].view()
                args[i].flags.writeable = False
            return results  # (not kept as spares: that memory is the caller's)
        self._spares.append(list(results))
        return results

    def traced(self, arrays: Sequence[np.ndarray], trace: list[Any],
               step: StepContext | None = None) -> list[np.ndarray]:
        """A call that appends to `trace` one `NativeNodeTrace` per action run (its start
        and end read by the step's own code: `profiling`); raises `_Unplanned` like a
        call, and for code without probes."""
        from ...runtime.profiler import note_dropped
        from . import profiling
        prof = profiling.profile_of(self._compiled)
        if prof is None:
            raise _Unplanned
        prof.begin()
        try:
            return self(arrays, step)
        finally:
            records, dropped = prof.finish()
            trace.extend(profiling.node_traces(self.plan, records))
            note_dropped(dropped)

    def __del__(self) -> None:
        # the arenas' chunks are malloc'd by the step's code: give them back
        release = getattr(self, "_release", None)
        if release is not None:
            # (the offset was read in __init__: no import while the interpreter shuts down)
            for ws in self._workspaces:
                release(ws.__array_interface__["data"][0] + self._arena_offset)
            self._workspaces = []

    def dispatch_entry(self, key: Any, finish: Any) -> Any:
        """A `dispatch.Entry` that runs this step from native code (the call path of
        `tw.compile` on a signature hit), or None for steps that keep stacks in their
        workspaces' arenas (released with `_workspaces`). The entry reads the variables'
        buffers and takes their locks (in name order, as `__call__` does) on every call;
        a variable not yet initialized sends the call here. `finish`: see
        `dispatch.Entry`."""
        if self._arena:
            return None
        from functools import partial

        from .allocator import empty
        from .dispatch import Entry

        def on_error(status: int, ws: np.ndarray) -> None:
            self._raise(status, int(ws[:4].view(np.int32)[0]))

        try:  # the last call's results: recycled by the entry once the caller drops them
            pool = self._spares.pop()
        except IndexError:
            pool = None
        ws = np.empty(self._ws_bytes, np.uint8)
        ws[:WORKSPACE_HEADER] = 0
        return Entry(key, self._compiled.address(OBJECTS_STEP_NAME),
                     ctypes.addressof(self._consts),
                     ctypes.cast(self._callback, ctypes.c_void_p).value,
                     [(np.dtype(dt), shape) for dt, shape in self._arg_specs],
                     [partial(empty, shape, dt) for shape, dt in self._result_specs],
                     finish, on_error, ws, release_gil=True, keep=self, pool=pool,
                     variables=self._variables(),
                     var_specs=list(self._var_specs),
                     locks=self._locks)

    def _raise(self, status: int, position: int) -> None:
        error, self._state.error = self._state.error, None
        if error is not None:
            raise error
        from .lowering import status_error
        node = self.plan.action_by_id(position).node
        message, blamed = status_error(node, status)
        raise InvalidArgumentError(message, **blamed.error_context())

    def _run_callback(self, _ctx: int, position: int, ins: Any, outs: Any) -> int:
        """Run a node without a native lowering: its reference kernel on views of the
        step's buffers. Errors are kept for `_raise` (they cannot cross C frames)."""
        try:
            from .step import array_at
            node = self.plan.actions[position].node
            kernel = self._callback_kernels.get(position)
            if kernel is None:  # (a callback node, or a failed Assert formatting its data:
                # `step._formats_on_failure`)
                from ..reference.executor import PreparedKernel
                kernel = self._callback_kernels[position] = PreparedKernel(node)
            inputs = [array_at(ins[j], v.type) for j, v in enumerate(node.inputs)]
            with np.errstate(all="ignore"):
                results = kernel(inputs, self.resources, self.counters, self._state.step)
            for j, (v, r) in enumerate(zip(node.outputs, results)):
                t: TensorType = v.type
                r = np.asarray(r)
                if r.dtype != t.dtype.np or r.shape != tuple(t.shape):
                    raise InvalidArgumentError(
                        f"produced {r.dtype}{list(r.shape)}, the compiled step expects {t}",
                        **node.error_context())
                np.copyto(array_at(outs[j], t), r)
            return 0
        except BaseException as e:  # noqa: BLE001 - handed back to the caller
            self._state.error = e
            return 1


class _RecordWithoutCode(Exception):
    """A step record whose object code is in neither cache (see `NativeStep`)."""


class _Unplanned(Exception):
    """This call does not fit the compiled step (shapes, dtypes, variable buffers)."""


class CpuExecutable:
    """A graph compiled for the cpu target; call it like a `DataflowExecutable`:
    ``exe(*arrays) -> list of results``."""

    def __init__(self, graph: Graph | None, resources: ResourceManager | None = None,
                 timeout: float | None = None, *, traced: Graph | None = None,
                 stages: list[str] | None = None, pipeline: Any = None) -> None:
        limit_blas_threads()
        self._graph = graph
        # (deferred: the traced graph, the pipeline's stages and ``pipeline()``, which
        # makes `graph` when something needs it; see `deferred`)
        self._traced = traced if traced is not None else graph
        self._stages = stages
        self._pipeline = pipeline
        self._graph_lock = threading.Lock()
        self.pipeline_seconds = 0.0  # the deferred pipeline's time (the compile log's)
        self.resources = resources or default_resource_manager()
        self.timeout = timeout
        self.counters = CallCounters()
        self._dataflow: Any = None
        self._cache = StepCache(MAX_SHAPES)
        self._steps = self._cache.steps  # shape tuple -> step (None: not native)
        self.native_reason: str | None = None  # why the last plan fell back, if it did

    @classmethod
    def deferred(cls, traced: Graph, stages: list[str], pipeline: Any,
                 resources: ResourceManager | None = None) -> CpuExecutable:
        """An executable of `traced` whose pipeline (`pipeline()`: the graph through
        `stages`) runs only when a call needs the optimized graph: a step whose record
        is in the disk cache (`plan_cache`) does not."""
        return cls(None, resources, traced=traced, stages=stages, pipeline=pipeline)

    @property
    def graph(self) -> Graph:
        """The compiled graph (the pipeline's output; made on first use when deferred)."""
        graph = self._graph
        if graph is None:
            with self._graph_lock:
                if self._graph is None:
                    start = time.perf_counter()
                    self._graph = self._pipeline()
                    self.pipeline_seconds = time.perf_counter() - start
                graph = self._graph
        return graph

    @property
    def _device_reason(self) -> str | None:
        """Why the graph's placement keeps it off the native CPU step: it spans several
        devices (Send/Recv between partitions), or its one device is not a CPU (placement
        put it on a GPU, and the dataflow executor runs it there, as TensorFlow runs
        what placement put on a GPU); None for a graph on the CPU."""
        devices = {n.assigned_device for n in self.graph.nodes} - {None}
        if len(devices) > 1:
            return "the graph spans several devices"
        if devices:
            (device,) = devices
            if DeviceSpec.from_string(device).device_type not in (None, "CPU"):
                return f"the graph is placed on {device}"
        return None

    @property
    def dataflow(self) -> Any:
        """The dataflow executable of the same graph (made on first use)."""
        if self._dataflow is None:
            from ...runtime.dataflow import DataflowExecutable
            from . import _register_with_executor
            _register_with_executor()
            exe = DataflowExecutable(self.graph, "cpu", self.resources, self.timeout)
            exe.counters = self.counters
            for ex in exe.executors:
                ex.counters = self.counters
            self._dataflow = exe
        return self._dataflow

    def __getattr__(self, name: str) -> Any:
        # devices, partitions, executors, ... are the dataflow executable's
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.dataflow, name)

    def native_step(self, arrays: Sequence[np.ndarray]) -> NativeStep | None:
        """The native step for these argument shapes (compiled on first use), or None."""
        key = tuple(np.shape(a) for a in arrays)
        return self._cache.get(key, lambda: self._build(arrays))

    # (function, signature, target, id) of the tw.compile function this executes, set by
    # `ConcreteFunction` for the compile log (a class attribute: `__getattr__` would
    # otherwise build the dataflow executable to look it up)
    compile_owner: Any = None

    def _shapes_text(self, shapes: Sequence[tuple]) -> str:
        graph = self._traced  # (the same arguments as the compiled graph's)
        return ", ".join(f"{name}: {v.type.dtype.ir_name}{format_shape(shape)}" for name, v, shape
                         in zip(graph.arg_names, graph.args, shapes))

    def _build(self, arrays: Sequence[np.ndarray]) -> NativeStep | None:
        # Every build is a whole code generation (the graph specialized to these shapes):
        # the compile log records it, with the shapes built before, so that a new batch
        # size compiling again is not silent.
        from ...frontend import compile_log
        existing = [self._shapes_text(k) for k in list(self._steps)]
        start, before = time.perf_counter(), compile_log.kernel_counts()
        pipeline_before = self.pipeline_seconds
        step = self._build_step(arrays)
        # (a deferred pipeline that ran meanwhile is the log's "pipeline", not codegen)
        elapsed = time.perf_counter() - start - (self.pipeline_seconds - pipeline_before)
        compile_log.codegen_done(
            self.compile_owner, self._traced.name, self._shapes_text([np.shape(a) for a in arrays]),
            elapsed, compile_log.cache_words(before,
                                                                 compile_log.kernel_counts()),
            existing, "" if step is not None else
            f"runs on the dataflow executor: {self.native_reason}")
        return step

    def _record_key(self, arrays: Sequence[np.ndarray]) -> str | None:
        """The key of this call's step record, or None (not deferred, not cacheable)."""
        if self._stages is None or len(arrays) != len(self._traced.args):
            return None
        try:
            return plan_cache.record_key(self._traced, self._stages, arrays, _code_prefix())
        except Exception as e:  # noqa: BLE001 -- a key we cannot make is only a miss
            _log.debug("cpu: no step record for %s: %s", self._traced.name, e)
            return None

    def _from_record(self, key: str, arrays: Sequence[np.ndarray]) -> NativeStep | None:
        """The step of a record in the disk cache, without the pipeline or the planner,
        or None."""
        record = plan_cache.load(key)
        if record is None or (record.uses_blas
                              and record.blas_key != _blas_key_of(True)):
            return None
        shapes = [np.shape(a) for a in arrays]
        return NativeStep(None, self.resources, self.counters, record=record,
                          make_plan=lambda: (self._plan(shapes), key))

    def _plan(self, shapes: Sequence[tuple]) -> StepPlan:
        """The graph specialized to argument `shapes` and planned as one step; raises
        `Ineligible` (or another `TensorWeaveError`) when it cannot run that way."""
        reason = self._device_reason
        if reason is not None:
            raise Ineligible(reason)
        graph = self.graph
        if not all(isinstance(v.type, TensorType) and v.type.is_fully_defined
                   for v in graph.args) or _has_unknown(graph):
            from ...passes.shape_inference import specialize
            graph = specialize(graph, [TensorType(v.type.dtype, shape)
                                       for v, shape in zip(graph.args, shapes)])
        return plan_step(graph)

    def _build_step(self, arrays: Sequence[np.ndarray]) -> NativeStep | None:
        arrays = [np.asarray(a) for a in arrays]
        if len(arrays) != len(self._traced.args):
            return None
        key = self._record_key(arrays)
        try:
            if key is not None:
                try:
                    step = self._from_record(key, arrays)
                except _RecordWithoutCode:
                    step = None
                if step is not None:
                    return step
            step = NativeStep(self._plan([a.shape for a in arrays]), self.resources,
                              self.counters)
            if key is not None:
                plan_cache.store(key, step.record)
            return step
        except Ineligible as e:
            self.native_reason = str(e)
            _log.debug("cpu: %s runs on the dataflow executor: %s", self._traced.name, e)
            return None
        except TensorWeaveError as e:
            # e.g. shapes that do not fit: the dataflow path reports it properly
            self.native_reason = f"{type(e).__name__}: {e}"
            _log.debug("cpu: %s runs on the dataflow executor: %s", self._traced.name, e)
            return None

    # Results are never an argument's or a constant's buffer (`tw.compile` need not check).
    owns_results = True

    # `tw.compile(donate_argnums=...)` may pass ``donated=`` (graph argument indices)
    supports_donation = True

    def __call__(self, *args: Any, timeout: float | None = _UNSET,
                 donated: frozenset[int] = frozenset()) -> list[Any]:
        """Run one step on `args`; returns the graph's results in order. A native step
        may compute a result into the buffer of a `donated` argument (see
        `NativeStep.__call__`)."""
        try:
            step = self._steps[tuple([a.shape for a in args])]
        except (KeyError, AttributeError):
            step = _UNSET
        if step is _UNSET:
            args = tuple(np.asarray(a) for a in args)
            step = self.native_step(args) if len(args) == len(self._traced.args) else None
        t = self.timeout if timeout is _UNSET else timeout
        if step is not None and (t is None or not step.has_loops):
            # (a native loop cannot be interrupted: steps with a deadline and loops run on
            # the dataflow executor, which enforces it)
            try:
                return step(args, donated=donated) if donated else step(args)
            except _Unplanned:
                pass
        from ...frontend.function import own_results
        arrays = [np.asarray(a) for a in args]
        return own_results(self.dataflow.run(args, timeout=t), arrays)

    def dispatch_entry(self, arrays: Sequence[np.ndarray], timeout: float | None,
                       key: Any, finish: Any) -> Any:
        """A native-dispatch entry (`dispatch.Entry`) for calls with the shapes of
        `arrays`, when their step is native and may run without Python (no variables;
        no deadline on a step with loops, which only the dataflow executor enforces);
        else None."""
        step = self._steps.get(tuple([a.shape for a in arrays]))
        t = self.timeout if timeout is None else timeout
        if step is None or (t is not None and step.has_loops):
            return None
        return step.dispatch_entry(key, finish)

    def run(self, args: Sequence[Any], timeout: float | None = None, trace: Any = None,
            **kw: Any) -> list[Any]:
        """The dataflow executor's `run` (node traces, shared step ids); a traced call
        with nothing else asked runs the native step when there is one, timed by its own
        code (`tw.profiler` profiles what users run)."""
        if trace is not None and not kw and len(args) == len(self._traced.args):
            arrays = tuple(np.asarray(a) for a in args)
            step = self.native_step(arrays)
            if step is not None and (timeout is None or not step.has_loops):
                try:
                    return step.traced(arrays, trace)
                except _Unplanned:
                    pass
        return self.dataflow.run(args, timeout=timeout, trace=trace, **kw)


def _has_unknown(graph: Graph) -> bool:
    for node in graph.nodes:
        for v in node.outputs:
            if isinstance(v.type, TensorType) and not v.type.is_fully_defined:
                return True
    return False
