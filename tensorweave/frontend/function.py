"""`@tw.compile`: trace a Python function into a graph once per input signature, compile
it, and run the compiled code on later calls.

Arrays (NumPy arrays and scalars, eager tensors) become graph arguments; every other
argument (Python numbers, strings, objects) is static: part of the cache key and baked
into the trace, as in ``tf.function``. With ``input_signature``, dims given as None accept
any size without retracing.
"""

from __future__ import annotations

import functools
import inspect
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..compiler.dtypes import DType, as_dtype, native_byte_order
from ..compiler.ir import Graph
from ..compiler.types import TensorType, as_shape, format_shape
from ..errors import DTypeError, InvalidArgumentError, TracingError
from ..runtime import profiler as _profiler
from . import building as _building
from . import compile_log, nest, tape_calls, trace_dependencies
from . import context as _context
from .building import convert_to_tensor, python_array
from .call_site import user_location
from .context import GraphBuilder, building, current_builder
from .indexed_slices import IndexedSlices
from .retracing import (
    RetraceTracker,
    TraceCache,
    accepts,
    default_max_traces,
    describe_arguments,
    relaxed_specs,
)
from .tensor import EagerTensor, Reference, Tensor, TensorOps
from .variables import Variable

# The target of `tw.compile` and `Session` when none is named; the environment variable
# TW_DEFAULT_TARGET changes it (``cpu``: native code, ``reference``: the NumPy oracle).
DEFAULT_TARGET = os.environ.get("TW_DEFAULT_TARGET") or "cpu"

# what a native dispatcher returns when no entry takes the arguments: `dispatch.MISS`,
# set when the first dispatcher is made (importing the cpu target here would slow down
# `import tensorweave`)
_MISS: Any = object()


class TensorSpec:
    """Describes a tensor argument: ``TensorSpec([None, 784], tw.float32)``."""

    __slots__ = ("shape", "dtype", "name")

    def __init__(self, shape: Sequence[int | None], dtype: DType | str = "float32",
                 name: str | None = None) -> None:
        self.shape = as_shape(tuple(shape))
        self.dtype = as_dtype(dtype)
        self.name = name

    @classmethod
    def from_array(cls, value: Any, name: str | None = None) -> TensorSpec:
        arr = np.asarray(value)
        return cls(arr.shape, as_dtype(arr.dtype.newbyteorder("=")), name)  # ('>f4': f32)

    @property
    def type(self) -> TensorType:
        return TensorType(self.dtype, self.shape)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TensorSpec) and self.shape == other.shape
                and self.dtype is other.dtype)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype.ir_name))

    def __repr__(self) -> str:
        return f"TensorSpec(shape={format_shape(self.shape)}, dtype={self.dtype!r})"


def _is_array_arg(x: Any) -> bool:
    return isinstance(x, (np.ndarray, np.generic, EagerTensor, TensorSpec)) or _is_foreign(x) \
        or _is_device_arg(x)


# Python values that are never arrays of another library, whatever they define
_NOT_FOREIGN = (np.ndarray, np.generic, TensorOps, TensorSpec, Variable, str, bytes, int,
                float, complex, list, tuple, dict, type)


def _is_foreign(x: Any) -> bool:
    """Whether `x` is an array of another library (a PyTorch or JAX array, any DLPack
    producer, an object with NumPy's array interface): a graph argument, not a static
    value."""
    if isinstance(x, _NOT_FOREIGN) or x is None:
        return False
    return (hasattr(x, "__dlpack__") or hasattr(x, "__array_interface__")
            or hasattr(x, "__array_struct__") or hasattr(x, "__array__"))


def _is_device_arg(x: Any) -> bool:
    """Whether `x` is an array in GPU memory (a numba device array, a gpu-target
    `DeviceTensor`, an object with ``__cuda_array_interface__``, a DLPack producer on a
    CUDA device): the gpu target takes it without a host round trip."""
    if isinstance(x, _NOT_FOREIGN) or x is None or isinstance(x, EagerTensor):
        return False
    from ..targets.gpu.interop import is_device_object
    return is_device_object(x)


def _device_argument(x: Any, target: str, what: str) -> Any:
    """A GPU array argument as the target takes it: a numba device array viewing it for
    the gpu target, a host copy for the others."""
    from ..targets.gpu import interop
    return interop.as_device_array(x, what) if target == "gpu" else interop.to_host(x)


def as_numpy(x: Any, what: str = "argument", op: str | None = None) -> np.ndarray:
    """An array argument as a NumPy array, sharing memory where it can: an `EagerTensor`'s
    buffer, a DLPack producer through ``np.from_dlpack`` (PyTorch CPU tensors, JAX CPU
    arrays), else NumPy's array interface. Raises `DTypeError` (a TypeError) naming `op`,
    `what` and the caller's line when the object cannot be read on the host (a GPU tensor,
    a PyTorch tensor that requires grad)."""
    if type(x) is np.ndarray:
        return x
    if isinstance(x, EagerTensor):
        return np.asarray(x)
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        try:
            return np.from_dlpack(x)
        except (BufferError, TypeError, ValueError, RuntimeError) as e:
            dlpack_error = e  # e.g. a tensor that requires grad: the array interface may do
    else:
        dlpack_error = None
    try:
        return np.asarray(x)
    except Exception as e:  # noqa: BLE001 - any library's refusal, reported with the argument
        reason = dlpack_error if dlpack_error is not None else e
        raise DTypeError(f"{what}: expected an array readable on the host (CPU), got a "
                         f"{type(x).__module__}.{type(x).__name__} that is not "
                         f"({type(reason).__name__}: {reason}); pass a CPU array (PyTorch: "
                         f"t.detach().cpu())", op=op, location=_location()) from None


def _viewed_arrays(args: tuple) -> tuple | None:
    """`args` as NumPy arrays when every one is an array (NumPy, eager tensor or another
    library's, viewed without a copy), else None."""
    out = []
    for a in args:
        if type(a) is np.ndarray:
            out.append(a)
        elif _is_device_arg(a):
            return None  # GPU memory: the full path views it for the gpu target
        elif isinstance(a, EagerTensor) or _is_foreign(a):
            try:
                out.append(as_numpy(a))
            except DTypeError:
                return None  # the full path reports it with the argument's name
        else:
            return None
    return tuple(out)


def _spec_of(x: Any) -> TensorSpec:
    if isinstance(x, TensorSpec):
        return x
    if not isinstance(x, np.ndarray) and _is_device_arg(x):  # viewed by _bind: has both
        return TensorSpec(tuple(x.shape), as_dtype(np.dtype(x.dtype)))
    return TensorSpec.from_array(x)


def _has_dtype(x: Any) -> bool:
    try:
        _spec_of(x)
    except DTypeError:
        return False
    return True


def _location() -> str | None:
    loc = user_location()
    return str(loc) if loc is not None else None


def _static_key(x: Any) -> Any:
    """What a static (non-array) argument contributes to a trace's cache key."""
    if isinstance(x, TensorOps):
        # A variable (or symbolic tensor) is captured by identity: its `==` is elementwise,
        # and the reference keeps it alive so that its id is never reused by another.
        return ("ref", x.ref())
    if type(x) is float:
        # by bits, not `==`: 0.0 == -0.0 would share a trace (x / -0.0 gave +inf), and
        # nan != nan would trace every call again
        return ("float", x.hex())
    if type(x) is complex:
        return ("complex", x.real.hex(), x.imag.hex())
    try:
        hash(x)
        return ("v", type(x), x)
    except TypeError:
        # unhashable (a plain dataclass, a set): by identity, and the reference keeps it
        # alive, else a later object at the same address would run this one's trace
        return ("id", Reference(x))


def _holds_container(value: Any) -> bool:
    """Whether a default value holds a dict or list (in tuples too): `nest` flattens
    them into static values of the trace key, which change when the container is
    mutated in place."""
    if isinstance(value, (dict, list)):
        return True
    return isinstance(value, tuple) and any(_holds_container(v) for v in value)


def _same_key(a: Any, b: Any) -> bool:
    """Whether two parts of trace cache keys are the same key as the cache's dict finds
    it: by hash first, then ``==``. ``==`` alone is not that: a hashable static argument
    whose ``==`` reaches tensors (a frozen dataclass holding a variable, hashed by the
    variable's identity) equals another model's whenever their values are equal."""
    if a is b:
        return True
    try:
        return hash(a) == hash(b) and bool(a == b)
    except (TypeError, ValueError):  # (an elementwise comparison: not the same key)
        return False


class ConcreteFunction:
    """One trace of a `Function`: the graph, its compiled executable and how to map
    Python arguments onto it."""

    def __init__(self, graph: Graph, output_tree: Any, output_leaves: list[Any],
                 specs: list[TensorSpec], target: str, timeout: float | None = None,
                 lower_control_flow: bool | None = None, keep_on_device: bool = False) -> None:
        self.graph = graph
        self.keep_on_device = keep_on_device  # gpu target: DeviceTensor results
        self.variables: list[Variable] = []  # the tw.Variables the trace uses
        self.input_specs = specs
        self.target = target
        self.timeout = timeout
        self.lower_control_flow = lower_control_flow
        self._output_tree = output_tree
        self._output_leaves = output_leaves  # (True, result index) or (False, static value)
        self._executable = None
        self._lock = threading.Lock()
        # a single tensor returned as is: results[0], without rebuilding a structure
        self._single_result = output_tree == ("leaf",) and output_leaves == [(True, 0)]
        # for the compile log (`compile_log`): who traced this, why, how long it took;
        # the first call records the compile (pipeline and code generation)
        self.compile_owner: tuple[str, str, str, int] = (graph.name, "", target, 0)
        self.trace_reason = ""
        self.trace_seconds = 0.0
        self.pipeline_seconds = 0.0
        self.announce_compiles = False
        self._first_call = True
        # why the Function dropped this trace (an attribute it baked in changed), or None
        self.dropped: str | None = None

    @property
    def executable(self) -> Any:
        """The compiled graph (compiled on first use)."""
        if self._executable is None:
            with self._lock:
                if self._executable is None:
                    from ..compiler.pipeline import compile_graph
                    from ..passes.lower_control_flow import lowering
                    from ..runtime.distributed.connection import cluster_compiler
                    on_cluster = cluster_compiler()  # tw.config.experimental_connect_to_cluster
                    start = time.perf_counter()
                    with lowering(self.lower_control_flow):
                        exe = (compile_graph(self.graph, self.target) if on_cluster is None
                               else on_cluster(self.graph, self.target))
                    self.pipeline_seconds = time.perf_counter() - start
                    if hasattr(type(exe), "compile_owner"):  # the cpu target's per-shape steps
                        exe.compile_owner = self.compile_owner
                    self._executable = exe
        return self._executable

    def ir(self, stage: str = "traced") -> str:
        """The IR text of this trace after pipeline stage `stage`."""
        from ..compiler.pipeline import run_pipeline
        from ..compiler.printer import print_graph
        g = self.graph if stage == "traced" else run_pipeline(self.graph, stage)
        return print_graph(g)

    def call_flat(self, arrays: Sequence[np.ndarray], donated: frozenset[int] = frozenset()
                  ) -> list[np.ndarray]:
        """Run on arrays in argument order; returns results in graph order. The arrays
        at the `donated` positions are given up to the results (``donate_argnums``)."""
        if self._first_call:
            return self._call_first(arrays, donated)
        exe = self._executable or self.executable
        recorder = _profiler.active()
        if donated and getattr(exe, "supports_donation", False) and recorder is None \
                and self.timeout is None:
            return exe(*arrays, donated=donated)  # (its results are its own: owns_results)
        if recorder is not None and hasattr(exe, "run"):  # inside tw.profiler.trace
            trace: list = []
            results = exe.run(list(arrays), timeout=self.timeout, trace=trace)
            recorder.add(trace)
        elif self.keep_on_device:
            results = exe(*arrays, timeout=self.timeout, keep_on_device=True)
        elif self.timeout is None:
            results = exe(*arrays)
        else:
            results = exe(*arrays, timeout=self.timeout)
        if getattr(exe, "owns_results", False):  # fresh buffers, checked by the target
            return results
        return own_results(results, arrays)

    def _call_first(self, arrays: Sequence[np.ndarray], donated: frozenset[int] = frozenset()
                    ) -> list[np.ndarray]:
        """The first call: compiles, and records in the compile log how long the pipeline
        and the target's code generation took (and the trace before them)."""
        self._first_call = False  # (two racing first calls may both record: harmless)
        with compile_log.collecting() as generated:
            try:
                return self.call_flat(arrays, donated)
            finally:
                # (the cpu target runs the pipeline when a call needs it: its time)
                deferred = getattr(self._executable, "pipeline_seconds", 0.0)
                phases = {"trace": self.trace_seconds,
                          "pipeline": self.pipeline_seconds + deferred}
                if "codegen" in generated:
                    phases["codegen"] = generated["codegen"]
                name, signature, target, owner = self.compile_owner
                compile_log.add(compile_log.CompileRecord(
                    "compile", name, signature, target, self.trace_reason, phases,
                    generated.get("cache", ""), time.time(), owner),
                    announce=self.announce_compiles)

    def structured(self, results: list[np.ndarray]) -> Any:
        if self._single_result:
            return results[0]
        leaves = [results[x] if is_result else x for is_result, x in self._output_leaves]
        return nest.unflatten(self._output_tree, leaves)

    def __call__(self, *arrays: Any) -> Any:
        if self.dropped is not None:
            raise TracingError(f"this concrete function of {self.compile_owner[0]} is out of "
                               f"date: {self.dropped}; get it again with "
                               f"get_concrete_function (which traces with the new value)")
        return self.structured(self.call_flat(
            [_device_argument(a, self.target, "argument") if _is_device_arg(a) else as_numpy(a)
             for a in arrays]))


def _donate_argnums(value: int | Sequence[int]) -> tuple[int, ...]:
    """`tw.compile`'s ``donate_argnums`` as a tuple of non-negative ints."""
    try:
        items = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    except TypeError:
        items = (value,)  # (reported below)
    for k in items:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise InvalidArgumentError(f"donate_argnums must be non-negative argument "
                                       f"positions, got {value!r}", op="tw.compile",
                                       location=_location())
    return tuple(int(k) for k in items)


def own_result(result: np.ndarray, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Never hand back a buffer the caller or the graph still owns (an input, a constant)."""
    if not isinstance(result, np.ndarray):
        return result
    if not result.flags.writeable or any(np.may_share_memory(result, a) for a in inputs):
        return result.copy()
    return result


def own_results(results: Sequence[Any], inputs: Sequence[np.ndarray]) -> list[Any]:
    """`own_result` of each result, where the results handed back before count as owned
    too: two results of one value (``return -x, -x`` after CSE) are two arrays, so
    writing one does not change the other."""
    out: list[Any] = []
    owned = list(inputs)
    for r in results:
        r = own_result(r, owned)
        out.append(r)
        if isinstance(r, np.ndarray):
            owned.append(r)
    return out


class Function:
    """A Python function compiled by `tw.compile`. Call it like the original."""

    def __init__(self, fn: Callable, input_signature: Sequence[Any] | None, target: str | None,
                 name: str | None, timeout: float | None = None,
                 lower_control_flow: bool | None = None, reduce_retracing: bool = False,
                 max_traces: int | None = None, jit_compile_stats: bool = False,
                 keep_on_device: bool = False, donate_argnums: int | Sequence[int] = ()
                 ) -> None:
        self.python_function = fn
        self.donate_argnums = _donate_argnums(donate_argnums)
        self.input_signature = None if input_signature is None else list(input_signature)
        self.target = target or DEFAULT_TARGET
        if keep_on_device and self.target != "gpu":
            raise InvalidArgumentError(f"keep_on_device=True returns GPU tensors: it needs "
                                       f"target='gpu', got target={self.target!r}",
                                       op="tw.compile", location=_location())
        self.keep_on_device = bool(keep_on_device)
        self.name = name or getattr(fn, "__name__", "function")
        self.timeout = timeout
        self.lower_control_flow = lower_control_flow
        self._signature = inspect.signature(fn)
        # A default that holds a dict or list is flattened into static values of the
        # key when a call is bound, and changes when mutated in place: a call that
        # leaves such a parameter out never takes the fast path, which skips binding.
        # The fast path needs at least this many positional arguments (inf: never).
        self._fast_min_args: float = 0
        for i, p in enumerate(self._signature.parameters.values()):
            if p.default is not inspect.Parameter.empty and _holds_container(p.default):
                given_by_position = p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                               inspect.Parameter.POSITIONAL_OR_KEYWORD)
                self._fast_min_args = max(self._fast_min_args,
                                          i + 1 if given_by_position else float("inf"))
        self.reduce_retracing = bool(reduce_retracing)
        self._cache = TraceCache(default_max_traces() if max_traces is None else max_traces)
        # calls with only arrays as positional arguments: (shape, dtype) per array ->
        # (trace, its cache key)
        self._fast: dict[tuple, tuple[ConcreteFunction, Any]] = {}
        self._lock = threading.RLock()
        self._retraces = RetraceTracker(self.name)
        self._last_described: dict[str, tuple[str, str]] | None = None
        self.jit_compile_stats = bool(jit_compile_stats)
        self.tracing_count = 0
        # native dispatch (`targets/cpu/dispatch.py`): `_native` answers calls whose
        # arrays match a signature that ran natively before, without Python; None until
        # one has. `_native_tried`: the `_fast` keys an entry was asked for.
        self._dispatcher: Any = None
        self._native: Any = None
        self._native_tried: set[tuple] = set()
        self._native_seen: dict[int, int] = {}  # entry -> its hits when last synced
        # whether a trace registers with the objects whose attributes it baked in (an
        # optimizer's hyperparameters), to be dropped when one is set (the eager
        # optimizer updates key their traces by those values themselves)
        self.watch_static_owners = True
        self._forgotten: dict[Any, str] = {}  # dropped trace keys -> why (the next trace)
        functools.update_wrapper(self, fn)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    # -- argument handling -----------------------------------------------------------
    def _bind(self, args: tuple, kwargs: dict) -> tuple[list[Any], Any, list[str]]:
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.name}(): {e}") from None
        bound.apply_defaults()
        if self.input_signature is not None:
            self._coerce_to_signature(bound)
        structure = (tuple(bound.args), dict(bound.kwargs))
        leaves, tree = nest.flatten(structure)
        names = _leaf_names(self._signature, bound)
        for i, leaf in enumerate(leaves):
            if _is_device_arg(leaf):  # GPU memory: viewed for the gpu target, else copied
                leaves[i] = _device_argument(leaf, self.target, f"argument '{names[i]}'")
            elif _is_foreign(leaf):  # another library's array: viewed as NumPy, not copied
                leaves[i] = as_numpy(leaf, f"argument '{names[i]}'", f"{self.name}()")
            if isinstance(leaves[i], np.ndarray):  # big-endian: converted (a new array,
                try:                                  # so no fast-path entry keeps it)
                    leaves[i] = native_byte_order(leaves[i])
                except DTypeError as e:  # an object array that is not text
                    raise DTypeError(f"argument '{names[i]}': NumPy dtype {leaves[i].dtype} "
                                     f"has no tensorweave equivalent: {e.message}",
                                     op=f"{self.name}()", location=_location()) from None
        return leaves, tree, names

    def _coerce_to_signature(self, bound: inspect.BoundArguments) -> None:
        """Python numbers and lists given where the input signature has a tensor become
        arrays of the spec's dtype, as in ``tf.function``; a value that dtype cannot hold
        (None, 1.5 for an int32 spec) is an error naming the argument."""
        specs = list(self.input_signature)
        for pname, param in self._signature.parameters.items():
            if not specs or pname not in bound.arguments:
                break
            value = bound.arguments[pname]
            if param.kind is inspect.Parameter.VAR_POSITIONAL:
                taken, specs = specs[:len(value)], specs[len(value):]
                bound.arguments[pname] = tuple(
                    self._coerce(v, s, f"{pname}[{i}]") for i, (v, s) in enumerate(zip(value, taken)))
                continue
            if param.kind is inspect.Parameter.VAR_KEYWORD:
                break
            bound.arguments[pname] = self._coerce(value, specs.pop(0), pname)

    def _coerce(self, value: Any, spec: Any, what: str) -> Any:
        if isinstance(spec, TensorSpec):
            if _is_array_arg(value) or isinstance(value, (Tensor, Variable)):
                return value
            try:
                return python_array(value, spec.dtype)
            except DTypeError as e:
                raise DTypeError(f"argument '{what}' must match {spec}: {e.message}",
                                 op=f"{self.name}()", location=_location()) from None
        if isinstance(spec, (list, tuple)) and type(value) in (list, tuple) and \
                len(spec) == len(value):
            return type(value)(self._coerce(v, s, f"{what}[{i}]")
                               for i, (v, s) in enumerate(zip(value, spec)))
        if isinstance(spec, dict) and isinstance(value, dict) and spec.keys() == value.keys():
            # in the signature's key order: its specs are matched to the leaves in order
            return {k: self._coerce(value[k], spec[k], f"{what}[{k!r}]") for k in spec}
        return value

    def _classify(self, leaves: list[Any], names: list[str]) -> tuple[list[int], list[TensorSpec],
                                                                       tuple]:
        """Which leaves are tensors, their specs, and the cache key."""
        if self.input_signature is not None:
            specs_flat, _ = nest.flatten(self.input_signature)
            tensor_idx = [i for i, x in enumerate(leaves) if _is_array_arg(x)]
            if len(tensor_idx) != len(specs_flat):
                others = [f"'{names[i]}' ({type(x).__name__})" for i, x in enumerate(leaves)
                          if i not in set(tensor_idx)]
                raise TypeError(f"{self.name}(): input_signature has {len(specs_flat)} tensors, "
                                f"the call passes {len(tensor_idx)} arrays"
                                + (f"; not arrays: {', '.join(others)}" if others else ""))
            for i, spec in zip(tensor_idx, specs_flat):
                leaf = leaves[i]
                if isinstance(leaf, TensorSpec):
                    # (get_concrete_function(spec): a None dim only where the signature
                    # has one, as in TensorFlow; the trace is the signature's)
                    fits, got = spec.type.accepts(leaf.dtype, tuple(leaf.shape)), str(leaf)
                else:
                    arr = leaf if _is_device_arg(leaf) else np.asarray(leaf)
                    fits = arr.dtype == spec.dtype.np and spec.type.accepts(spec.dtype, arr.shape)
                    got = f"{arr.dtype}{format_shape(arr.shape)}"
                if not fits:
                    raise InvalidArgumentError(f"argument '{names[i]}' must match {spec}, got "
                                               f"{got}", op=f"{self.name}()",
                                               location=_location())
            specs = list(specs_flat)
            key_specs = tuple(specs)
        else:
            tensor_idx = [i for i, x in enumerate(leaves) if _is_array_arg(x)]
            try:
                specs = [_spec_of(leaves[i]) for i in tensor_idx]
            except DTypeError as e:  # (an object or big-endian array: name the argument)
                bad = next(names[i] for i in tensor_idx if not _has_dtype(leaves[i]))
                raise DTypeError(f"argument '{bad}': {e.message}", op=f"{self.name}()",
                                 location=_location()) from None
            key_specs = tuple(specs)
        tensor_set = set(tensor_idx)
        statics = tuple(_static_key(x) for i, x in enumerate(leaves) if i not in tensor_set)
        return tensor_idx, specs, (key_specs, statics)

    # -- tracing -----------------------------------------------------------------------
    def _trace(self, leaves: list[Any], tree: Any, names: list[str], tensor_idx: list[int],
               specs: list[TensorSpec], count: bool = True) -> ConcreteFunction:
        graph = Graph(self.name)
        builder = GraphBuilder(graph)
        with building(builder), trace_dependencies.collecting() as read_from:
            traced_leaves = list(leaves)
            for i, spec in zip(tensor_idx, specs):
                traced_leaves[i] = Tensor(graph.add_arg(spec.type, spec.name or names[i]), builder)
            args, kwargs = nest.unflatten(tree, traced_leaves)
            out = self.python_function(*args, **kwargs)
            out_leaves, out_tree = nest.flatten(out)
            results, mapping, result_names = [], [], []
            for j, leaf in enumerate(out_leaves):
                if isinstance(leaf, (Tensor, Variable, EagerTensor, IndexedSlices)):
                    t = convert_to_tensor(leaf)  # (a tape's sparse gradient: its dense value)
                    mapping.append((True, len(results)))
                    results.append(t.value)
                    result_names.append(f"output{j}")
                elif leaf is None or isinstance(leaf, (bool, int, float, str)):
                    mapping.append((False, leaf))
                else:
                    raise TracingError(f"{self.name}() returned {type(leaf).__name__} "
                                       f"{leaf!r}; return tensors, Python constants or "
                                       f"tuples/lists/dicts of them")
            graph.set_results(results, result_names)
        if count:  # (not a check's trace: `tape_calls` comparing a fresh trace)
            self.tracing_count += 1
        cf = ConcreteFunction(graph, out_tree, mapping, specs, self.target, self.timeout,
                              self.lower_control_flow, self.keep_on_device)
        cf.variables = list(builder.variables.values())  # what the trace reads or assigns
        # objects (optimizers) whose attributes the trace baked in: set one, and the trace
        # is dropped (`_forget_trace`)
        cf.static_owners = list(read_from.values())
        return cf

    def _concrete(self, args: tuple, kwargs: dict) -> tuple[ConcreteFunction, list[np.ndarray],
                                                            Any]:
        """The trace for these arguments (tracing on a miss), the array arguments, and
        the trace's cache key."""
        leaves, tree, names = self._bind(args, kwargs)
        tensor_idx, specs, key = self._classify(leaves, names)
        key = (tree, key)
        arrays = [leaves[i] if isinstance(leaves[i], TensorSpec)
                  or (type(leaves[i]) is not np.ndarray and _is_device_arg(leaves[i]))
                  else np.asarray(leaves[i]) for i in tensor_idx]
        cf = self._cache.get(key)
        if cf is None:
            with self._lock:
                cf = self._cache.get(key)
                if cf is None and self.reduce_retracing:
                    key, cf = self._generalized(key, specs, arrays)
                if cf is None:
                    trace_specs = list(key[1][0])
                    start = time.perf_counter()
                    cf = self._trace(leaves, tree, names, tensor_idx, trace_specs)
                    seconds = time.perf_counter() - start
                    described = describe_arguments(names, leaves, tensor_idx, specs)
                    forgotten = self._forgotten.pop(key, None)
                    self._record_trace(cf, seconds, described,
                                       compile_log.format_signature(names, leaves, tensor_idx,
                                                                    trace_specs),
                                       relaxed=trace_specs != specs, reason=forgotten)
                    self._retraces.record(described, reason=forgotten)
                    if len(self._cache) >= self._cache.max_size:
                        self._sync_native_hits()
                    if self.watch_static_owners:
                        for owner in cf.static_owners:
                            trace_dependencies.watch(owner, self, key)
                    evicted = self._cache.put(key, cf)
                    if evicted:
                        self._fast = {k: v for k, v in self._fast.items()
                                      if not any(v[0] is e for e in evicted)}
                        self._native_tried = set(self._fast)
                        if self._dispatcher is not None:
                            live = {k for k, _ in self._cache.items()}
                            self._dispatcher.remove(lambda entry: entry.key in live)
        return cf, [a for a in arrays if not isinstance(a, TensorSpec)], key

    def _forget_trace(self, key: Any) -> None:
        """Drop the trace cached under `key` (an attribute it baked in changed: see
        `trace_dependencies`); the next call with its signature traces again."""
        with self._lock:
            cf = self._cache.pop(key)
            if cf is None:
                return
            cf.dropped = ("an optimizer hyperparameter it read as a constant was set to "
                          "another value")
            self._fast = {k: v for k, v in self._fast.items() if v[0] is not cf}
            self._native_tried = set(self._fast)
            if self._dispatcher is not None:
                self._dispatcher.remove(lambda entry: entry.key != key)
            if len(self._forgotten) >= self._cache.max_size:
                self._forgotten.clear()
            self._forgotten[key] = ("an attribute of an object the trace read changed (an "
                                    "optimizer's hyperparameter)")

    def _record_trace(self, cf: ConcreteFunction, seconds: float,
                      described: dict[str, tuple[str, str]], signature: str,
                      relaxed: bool, reason: str | None = None) -> None:
        """Note a trace in the compile log, and what its compile records will say
        (`reason`: why, when the arguments do not say)."""
        if reason is None:
            reason = compile_log.trace_reason(self._last_described, described)
        if relaxed:  # reduce_retracing traced with unknown dims
            reason += "; traced with unknown dims for what varied (reduce_retracing)"
        self._last_described = described
        cf.compile_owner = (self.name, signature, self.target, id(self))
        cf.trace_reason, cf.trace_seconds = reason, seconds
        cf.announce_compiles = self.jit_compile_stats
        compile_log.add(compile_log.CompileRecord("trace", self.name, signature, self.target,
                                                  reason, {"trace": seconds}, "", time.time(),
                                                  id(self)), announce=self.jit_compile_stats)

    def _generalized(self, key: Any, specs: list[TensorSpec], arrays: list[Any]) -> tuple[Any,
                                                                                    Any]:
        """With ``reduce_retracing``: a trace with unknown dims that takes these arrays,
        or the key of a new one whose dims are None where the last trace of the same
        structure had other sizes (TensorFlow's shape relaxation)."""
        tree, (_, statics) = key
        same = [(k, cf) for k, cf in self._cache.items()
                if _same_key((k[0], k[1][1]), (tree, statics))]
        concrete = [a for a in arrays if not isinstance(a, TensorSpec)]
        if len(concrete) == len(arrays):
            for k, cf in reversed(same):
                if accepts(cf.input_specs, concrete):
                    self._cache.touch(k)
                    return k, cf
        for _, cf in reversed(same):
            relaxed = relaxed_specs(cf.input_specs, specs)
            if relaxed is not None:
                return (tree, (tuple(relaxed), statics)), None
        return key, None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _building.eager_observers and current_builder() is None:
            # an eager GradientTape may be recording: make the call differentiable
            tapes = tape_calls.recording_tapes()
            if tapes:
                return tape_calls.call_recorded(self, args, kwargs, tapes)
        if self.donate_argnums and current_builder() is None:
            return self._call_donating(args, kwargs)
        native = self._native
        if native is not None and not kwargs and not _profiler._recorders and \
                not getattr(_context._state, "stack", None):
            # (not while tracing: a call inside another trace is inlined; not inside
            # tw.profiler.trace: those steps run on the dataflow executor with traces)
            result = native(*args)
            if result is not _MISS:
                return result
        if not kwargs:
            key = tuple([(a.shape, a.dtype) for a in args if type(a) is np.ndarray])
            if len(key) != len(args):
                # eager tensors, PyTorch/JAX/DLPack arrays: NumPy views of them take the
                # same fast path (and keep it for later calls)
                viewed = _viewed_arrays(args)
                if viewed is not None:
                    args = viewed
                    key = tuple([(a.shape, a.dtype) for a in args])
            hit = self._fast.get(key) if len(key) == len(args) else None
            if hit is not None and current_builder() is None:
                cf, cache_key = hit
                self._cache.touch(cache_key)
                out = cf.structured(cf.call_flat(args))
                if key not in self._native_tried:
                    self._install_native(key, cf, cache_key, args)
                return out
        if current_builder() is not None:
            # Called while another function is traced: inline into that graph.
            return self.python_function(*args, **kwargs)
        cf, arrays, cache_key = self._concrete(args, kwargs)
        if not kwargs and all(type(a) is np.ndarray for a in args) and \
                len(arrays) == len(args) and all(x is y for x, y in zip(arrays, args)) \
                and len(args) >= self._fast_min_args:
            # the arrays are the arguments, in order: later calls skip binding
            if len(self._fast) >= 4 * self._cache.max_size:  # many shapes, one relaxed trace
                self._fast.clear()
                self._native_tried.clear()
            self._fast[tuple((a.shape, a.dtype) for a in args)] = (cf, cache_key)
        return cf.structured(cf.call_flat(arrays))

    def _call_donating(self, args: tuple, kwargs: dict) -> Any:
        """A call of a function with ``donate_argnums``: the NumPy arrays among the
        donated positional arguments may become the results' memory (always through
        Python: the native dispatcher does not donate)."""
        cf, arrays, _ = self._concrete(args, kwargs)
        given = {id(leaf) for k in self.donate_argnums if k < len(args)
                 for leaf in nest.flatten(args[k])[0] if type(leaf) is np.ndarray}
        donated = frozenset(j for j, a in enumerate(arrays) if id(a) in given)
        return cf.structured(cf.call_flat(arrays, donated))

    def _install_native(self, key: tuple, cf: ConcreteFunction, cache_key: Any,
                        arrays: tuple) -> None:
        """After a Python-path call with these arrays: let the native dispatcher answer
        later calls with their signature, when the target can (the cpu target's native
        steps, `targets/cpu/dispatch.py`)."""
        self._native_tried.add(key)
        exe = cf._executable
        if not hasattr(exe, "dispatch_entry") or getattr(cf, "keep_on_device", False) or \
                not all(type(a) is np.ndarray for a in arrays):
            return
        from ..targets.cpu import dispatch
        if not dispatch.enabled():
            return
        global _MISS
        _MISS = dispatch.MISS
        finish = None if cf._single_result else cf.structured
        entry = exe.dispatch_entry(arrays, cf.timeout, cache_key, finish)
        if entry is None:
            return
        with self._lock:
            if self._dispatcher is None:
                self._dispatcher = dispatch.Dispatcher()
            if self._dispatcher.install(entry):
                self._native = self._dispatcher.function

    def _sync_native_hits(self) -> None:
        """Calls the native dispatcher answered skip the trace cache's LRU bookkeeping:
        before the cache evicts, mark the traces it answered since the last time as
        used (in the order of their entries, the most recently installed last)."""
        d = self._dispatcher
        if d is None:
            return
        for entry in reversed(d.entries):
            if entry.hits != self._native_seen.get(id(entry)):
                self._cache.touch(entry.key)
        self._native_seen = {id(e): e.hits for e in d.entries}

    def get_concrete_function(self, *args: Any, **kwargs: Any) -> ConcreteFunction:
        """The trace for these arguments (arrays or `TensorSpec`s); traces if needed.
        With an input signature, call it with no arguments."""
        if not args and not kwargs and self.input_signature is not None:
            specs, tree = nest.flatten(self.input_signature)
            args = tuple(nest.unflatten(tree, specs))
        return self._concrete(args, kwargs)[0]

    @property
    def concrete_functions(self) -> list[ConcreteFunction]:
        """The traces kept (at most ``max_traces``, least recently used first)."""
        return self._cache.values()

    def experimental_get_compile_stats(self) -> compile_log.CompileLog:
        """This function's traces and compiles, with their reasons and times (a list of
        `CompileRecord`s that prints as a table); see `tw.debugging.compile_log`."""
        return compile_log.compile_log(self)

    def experimental_get_tracing_count(self) -> int:
        """How many times the function has been traced (TensorFlow's spelling)."""
        return self.tracing_count

    @property
    def retrace_reasons(self) -> list[str]:
        """Why each recent trace happened (``"first call"``, then what changed)."""
        return list(self._retraces.reasons)


def _leaf_names(signature: inspect.Signature, bound: inspect.BoundArguments) -> list[str]:
    names: list[str] = []
    for pname, value in bound.arguments.items():
        kind = signature.parameters[pname].kind
        leaves, _ = nest.flatten(value)
        if kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD) or len(leaves) != 1:
            names.extend(f"{pname}_{i}" for i in range(len(leaves)))
        else:
            names.append(pname)
    return names


def compile(fn: Callable | None = None, *, input_signature: Sequence[Any] | None = None,
            target: str | None = None, name: str | None = None,
            timeout: float | None = None, lower_control_flow: bool | None = None,
            reduce_retracing: bool = False, max_traces: int | None = None,
            jit_compile_stats: bool = False, keep_on_device: bool = False,
            donate_argnums: int | Sequence[int] = ()) -> Any:
    """Compile a Python function into a graph: ``@tw.compile`` or
    ``@tw.compile(input_signature=[tw.TensorSpec([None, 784], tw.float32)])``.

    The function is traced on the first call for each input signature (array shapes and
    dtypes plus static Python arguments); later calls with the same signature run the
    compiled graph. Returns NumPy arrays in the structure the function returns.
    `target` picks the code generator (``"reference"`` is the NumPy oracle); `timeout`
    (seconds) bounds each call, which then raises ``tw.errors.DeadlineExceededError``.
    `lower_control_flow` runs ``tw.cond``/``tw.while_loop`` as the dataflow primitives
    Switch, Merge, Enter, Exit and NextIteration (the ``lowered`` stage) instead of as
    functional ops; None: ``tw.config.set_lower_control_flow``'s default (off).

    Each trace is logged (logger ``tensorweave``, INFO) with what changed since the last
    one; after 5 retraces a `tw.errors.RetracingWarning` names the argument and the fix.
    `reduce_retracing=True` traces once more with None for the dims that changed, so
    later shapes reuse that trace. At most `max_traces` traces are kept (least recently
    used go first; default 64, or the environment variable ``TW_MAX_TRACES``).

    Every trace and compile is kept in `tw.debugging.compile_log()` with its reason and
    the time of each phase (``fn.experimental_get_compile_stats()``: this function's); a
    compile over 1 s logs one INFO line, and with `jit_compile_stats=True` every trace and
    compile of this function does.

    With ``target="gpu"``, arguments may be GPU arrays (numba device arrays, objects with
    ``__cuda_array_interface__`` such as CuPy arrays and PyTorch CUDA tensors, CUDA
    DLPack producers): they are copied device-to-device, never through the host (other
    targets copy them to the host). `keep_on_device=True` (gpu target only) returns
    `DeviceTensor`s (``__cuda_array_interface__`` v3, ``__dlpack__``) instead of NumPy
    arrays, for ``torch.from_dlpack``, ``cupy.asarray`` or the next gpu function.

    `donate_argnums` (as in JAX): positions of arguments whose NumPy arrays the caller
    gives up: on the cpu target a result of the same shape and dtype may be computed
    into a donated array's memory instead of a new buffer (``x = f(x)`` then touches no
    new memory). The caller must not use a donated array after the call: when its memory
    was reused it holds the result's values and is made read-only (writes raise), and
    when it was not (the target, a shape that matches no result, a result that must be
    computed elsewhere, an array shared with another argument) it is left as it was.
    """
    def wrap(f: Callable) -> Function:
        return Function(f, input_signature, target, name, timeout, lower_control_flow,
                        reduce_retracing, max_traces, jit_compile_stats, keep_on_device,
                        donate_argnums)
    return wrap if fn is None else wrap(fn)
