"""`Session`: runs subgraphs of a v1 graph, holding the values of its variables.

Each ``run(fetches, feed_dict)`` prunes the graph to what the fetches need (fed tensors
become arguments), compiles that subgraph once per (fetches, feeds) signature (and per
shape fed to each placeholder of unknown rank: `fed_shapes.py`), and calls the compiled
code. Variables live in the Session (as in TensorFlow 1, two sessions on
one graph have separate variable values).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from ...compiler import ir
from ...compiler.dtypes import native_byte_order
from ...compiler.pipeline import compile_graph
from ...compiler.types import format_shape
from ...errors import AbortedError, InvalidArgumentError
from ...frontend import nest
from ...frontend.building import python_array
from ...frontend.function import DEFAULT_TARGET, own_results
from ...frontend.tensor import Tensor
from ...passes.prune import extract_subgraph
from ...runtime.queues import close_all_queues
from ...runtime.resources import ResourceManager, create_graph_resources
from ...sparse.session_support import session_feeds, session_fetches
from .fed_shapes import fed_shapes, specialize_to_feeds
from .graph import Graph, Variable, get_default_graph

_local = threading.local()


def _session_stack() -> list[Session]:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def get_default_session() -> Session:
    """The innermost session entered with ``with`` (or an InteractiveSession)."""
    stack = _session_stack()
    if not stack:
        raise InvalidArgumentError("no default session: use `with tf.Session() as sess:` or "
                                   "pass session=")
    return stack[-1]


class Session:
    """Runs ops and evaluates tensors of a `Graph` (TensorFlow 1's ``tf.Session``)."""

    def __init__(self, target: str = "", graph: Graph | None = None, config: Any = None,
                 compile_target: str | None = None) -> None:
        self.graph = graph or get_default_graph()
        self.sess_str = target
        self.compile_target = compile_target or DEFAULT_TARGET
        self._config = config
        if getattr(config, "allow_soft_placement", None) is not None:
            from ...config import set_soft_device_placement
            set_soft_device_placement(bool(config.allow_soft_placement))
        self._cluster = None
        if target:
            from ...distribute.master import Cluster
            # A cluster session: variables live on the tasks, not here.
            self._cluster = Cluster(target,
                                    device_filters=list(getattr(config, "device_filters", None)
                                                        or []))
            from .session_reset import track
            track(self)
        self._resources = ResourceManager()
        self._steps: dict[Any, Any] = {}  # (fetches, feeds) -> compiled step
        self._lock = threading.Lock()
        self._closed = False
        self._reset_by: str | None = None  # the target of the Session.reset that closed it

    # -- context management ----------------------------------------------------------
    def __enter__(self) -> Session:
        _session_stack().append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        stack = _session_stack()
        if stack and stack[-1] is self:
            stack.pop()
        self.close()

    @contextlib.contextmanager
    def as_default(self) -> Iterator[Session]:
        _session_stack().append(self)
        try:
            yield self
        finally:
            _session_stack().pop()

    def close(self) -> None:
        """Release the session's variables and compiled steps (in a cluster, the graphs
        registered on the tasks; the tasks keep their variables)."""
        with self._lock:  # another thread may be compiling a step of this session
            self._closed = True
            steps = list(self._steps.values())
            self._steps.clear()
        for step in steps:
            if self._cluster is not None and hasattr(step, "close"):
                step.close()
        close_all_queues(self._resources)  # wake threads blocked on the session's queues

    def _closed_exception(self) -> Exception:
        if self._reset_by is not None:
            return AbortedError(f"the session was closed by Session.reset({self._reset_by!r}): "
                                f"make a new one")
        return InvalidArgumentError("attempted to use a closed Session")

    def _close_by_reset(self, target: str) -> None:
        """Close the session for `Session.reset(target)`: its next run is an
        AbortedError, as TensorFlow's."""
        self._reset_by = target
        self.close()

    @staticmethod
    def reset(target: str, containers: Any = None, config: Any = None) -> None:
        """Reset the resource containers of `target`'s cluster (TensorFlow 1's
        ``Session.reset``): on every task, variables become uninitialized and queues are
        made anew, empty; this process's sessions on `target` are closed (their next run
        is an AbortedError). tensorweave has no ``tf.container``, so every resource is in
        the default container ``""``: `containers` None or holding ``""`` resets all,
        other names nothing. A local target (``""``) has nothing to reset, as in
        TensorFlow."""
        from .session_reset import reset
        reset(target, containers, config)

    @property
    def resources(self) -> ResourceManager:
        """Where this session keeps its variables."""
        return self._resources

    # -- running -----------------------------------------------------------------------
    def run(self, fetches: Any, feed_dict: dict | None = None, options: Any = None,
            run_metadata: Any = None) -> Any:
        """Evaluate `fetches` (a tensor, op, variable, tensor name, or a list, tuple, dict
        or namedtuple of them) with `feed_dict` values substituted for tensors."""
        if self._closed:
            raise self._closed_exception()
        fetches = session_fetches(fetches)  # a SparseTensor comes back as a SparseTensorValue
        leaves, tree = nest.flatten(fetches)
        # fetches computed in the graph and finished here (report_uninitialized_variables)
        finish = [getattr(f, "_session_result", None) for f in leaves]
        leaves = [f._session_fetch() if fin is not None else f for f, fin in zip(leaves, finish)]
        kinds: list[tuple[str, Any]] = [self._resolve_fetch(f) for f in leaves]
        values = [x for k, x in kinds if k == "value"]
        targets = [x for k, x in kinds if k == "op"]
        feed_values, feed_arrays, fed_variables = self._resolve_feeds(feed_dict or {})
        shapes = fed_shapes(feed_values, feed_arrays)  # to placeholders of unknown rank
        key = (tuple(map(id, values)), tuple(map(id, targets)), tuple(map(id, feed_values)),
               shapes)
        step = self._steps.get(key)
        if step is None:
            with self._lock:
                if self._closed:
                    raise self._closed_exception()
                step = self._steps.get(key)
                if step is None:
                    step = self._steps[key] = self._compile(values, targets, feed_values,
                                                            fed_variables, shapes)
                    if getattr(self._config, "log_device_placement", False):
                        _log_placement(step)
        # RunOptions' timeout, else the session's (ConfigProto.operation_timeout_in_ms),
        # as TensorFlow bounds every step of a session configured with one
        timeout_ms = (getattr(options, "timeout_in_ms", 0)
                      or getattr(self._config, "operation_timeout_in_ms", 0) or 0)
        timeout = timeout_ms / 1000 if timeout_ms > 0 else None
        if (getattr(options, "trace_level", 0) or 0) > 0 and run_metadata is not None:
            # a timeline of this step (run_metadata.step_stats; see tw.profiler.Timeline)
            trace: list = []
            results = iter(step.run(feed_arrays, timeout=timeout, trace=trace))
            run_metadata.step_stats = trace
        else:
            results = iter(step(*feed_arrays, timeout=timeout) if timeout is not None
                           else step(*feed_arrays))
        out = [next(results) if k == "value" else None for k, _ in kinds]
        owned = own_results([r if fin is None else None for r, fin in zip(out, finish)],
                            feed_arrays)
        return nest.unflatten(tree, [o if fin is None else fin(r)
                                     for r, o, fin in zip(out, owned, finish)])

    def make_callable(self, fetches: Any, feed_list: Any = None,
                      accept_options: bool = False) -> Any:
        """A function that runs `fetches` (any structure `run` takes) with its positional
        arguments fed to the tensors of `feed_list`, in order: ``f(x_value, y_value)``
        is ``run(fetches, {x: x_value, y: y_value})``, without rebuilding the feed
        dict. With `accept_options`, it also takes ``options=`` and ``run_metadata=``.
        Fetches are checked now (an invalid one is an error here, not at the call)."""
        feed_list = list(feed_list or [])
        for leaf in nest.flatten(fetches)[0]:
            fetch = getattr(leaf, "_session_fetch", None)
            self._resolve_fetch(leaf if fetch is None else fetch())

        def run_callable(*feed_args: Any, options: Any = None, run_metadata: Any = None) -> Any:
            if len(feed_args) != len(feed_list):
                raise TypeError(f"Session.make_callable: the callable takes "
                                f"{len(feed_list)} feed values (one per feed_list tensor), "
                                f"got {len(feed_args)}")
            if not accept_options and (options is not None or run_metadata is not None):
                raise TypeError("Session.make_callable: options and run_metadata need "
                                "accept_options=True")
            return self.run(fetches, dict(zip(feed_list, feed_args)), options, run_metadata)

        return run_callable

    def partial_run_setup(self, fetches: Any, feeds: Any = None) -> str:
        """Start running one step in pieces (TensorFlow 1's ``partial_run_setup``): the
        handle for `partial_run`, which may fetch `fetches` and feed `feeds`."""
        from .partial_run import setup
        return setup(self, fetches, feeds)

    def partial_run(self, handle: str, fetches: Any, feed_dict: dict | None = None) -> Any:
        """The next piece of partial run `handle`: `fetches` computed from everything
        fed and fetched so far (see `compat/v1/partial_run.py`)."""
        from .partial_run import run
        return run(self, handle, fetches, feed_dict)

    def _resolve_fetch(self, f: Any) -> tuple[str, Any]:
        g = self.graph
        if isinstance(f, str):
            f = g.get_tensor_by_name(f) if ":" in f else g.get_operation_by_name(f)
        if isinstance(f, Variable):
            f = f.snapshot()
        if isinstance(f, Tensor):
            if f.value.graph is not g.ir:
                raise InvalidArgumentError(f"fetch '{f.name}' is not an element of this graph")
            return "value", f.value
        if isinstance(f, ir.Node):
            if f.graph is not g.ir:
                raise InvalidArgumentError(f"fetch op '{f.name}' is not an element of this graph")
            return "op", f
        raise TypeError(f"fetch {f!r} has invalid type {type(f).__name__}: expected a tensor, "
                        f"op, variable or tensor name")

    def _resolve_feeds(self, feed_dict: dict
                       ) -> tuple[list[ir.Value], list[np.ndarray], set[str]]:
        """The fed values, their arrays, and the shared names of the variables fed.
        Feeding a variable feeds every plain read of it (as in TensorFlow 1, where ops
        read a variable through the one tensor a feed replaces)."""
        values, arrays, variables = [], [], set()
        for key, val in session_feeds(feed_dict).items():  # (a SparseTensor: its 3 tensors)
            if isinstance(key, str):
                key = self.graph.get_tensor_by_name(key)
            reads = []
            if isinstance(key, Variable):
                variables.add(key.shared_name)
                reads = _plain_reads(self.graph.ir, key)
                key = key.snapshot()
            if not isinstance(key, Tensor) or key.value.graph is not self.graph.ir:
                raise InvalidArgumentError(f"cannot feed {key!r}: not a tensor of this graph")
            arr = _feed_array(val, key)
            for v in [key.value] + [r for r in reads if r is not key.value]:
                if v in values:
                    raise InvalidArgumentError(f"'{key.name}' is fed twice in one feed_dict "
                                               f"(two keys name the same tensor)")
                values.append(v)
                arrays.append(arr)
        return values, arrays, variables

    def _compile(self, values: list[ir.Value], targets: list[ir.Node],
                 feeds: list[ir.Value], fed_variables: set[str] = frozenset(),
                 shapes: tuple = ()) -> Any:
        sub = extract_subgraph(self.graph.ir, values, targets, feeds, name="session_run")
        for n in sub.walk():
            if n.op == "VarHandle" and n.attrs["shared_name"] in fed_variables:
                users = [u for u in sub.walk() if any(i.producer is n for i in u.inputs)]
                used_by = users[0] if users else n
                raise InvalidArgumentError(
                    f"cannot feed variable '{n.attrs['shared_name']}' in this run: "
                    f"{used_by.op} '{used_by.name}' uses the variable itself (an "
                    f"assignment, the initializer, an update in a loop body), which a fed "
                    f"value cannot replace; feed a tensor computed from it instead",
                    **used_by.error_context())
        for n in sub.nodes:
            if n.op == "Placeholder":
                t = n.outputs[0].type
                raise InvalidArgumentError(
                    f"you must feed a value for placeholder tensor '{n.name}' of type {t}",
                    **n.error_context())
        # a placeholder of unknown rank: the step for the shapes fed (every rank known)
        sub = specialize_to_feeds(sub, shapes or (None,) * len(feeds))
        if self._cluster is not None:
            from ...distribute.master import compile_for_cluster
            target = "cpu" if self.compile_target == "cpu" else "reference"
            return compile_for_cluster(sub, self._cluster, target)
        create_graph_resources(sub, self._resources)
        return compile_graph(sub, self.compile_target, resources=self._resources)


def _plain_reads(graph: ir.Graph, variable: Variable) -> list[ir.Value]:
    """The values of `graph`'s top-level ReadVariable nodes of `variable` that depend on
    nothing else (a read after an assignment waits for it: feeding it would drop the
    assignment from the step, so it stays, and the run is an error)."""
    handle = variable.handle()
    return [n.outputs[0] for n in graph.nodes
            if n.op == "ReadVariable" and n.inputs[0] is handle and not n.control_inputs]


def _feed_array(val: Any, key: Tensor) -> np.ndarray:
    """`val` as an array of `key`'s dtype and a shape it accepts, or a clear error; a
    conversion into an int dtype that would change a value (a fraction, inf or NaN, an
    int out of range) is an error, as the ops refuse such Python numbers."""
    t = key.value.type
    if t.dtype.is_string:
        return _fed_shape_checked(_string_feed(val, key, t), key, t)
    try:
        given = np.asarray(val)
        if given.dtype.kind in "OSU":
            raise ValueError("strings and numbers do not convert into each other")
        with np.errstate(invalid="ignore"):  # (NaN into an int: refused just below)
            arr = given.astype(t.dtype.np, copy=False)
        if (t.dtype.np.kind in "iu" and given.dtype.kind in "iuf" and arr.dtype != given.dtype
                and not np.array_equal(arr.astype(given.dtype), given)):
            raise ValueError(f"not every value is a {t.dtype.ir_name} (a fraction, inf or NaN, or "
                             f"a number out of range would change in the conversion)")
    except (TypeError, ValueError, OverflowError) as e:
        raise InvalidArgumentError(f"cannot feed {val!r} to '{key.name}' of type {t}: "
                                   f"{e}") from None
    return _fed_shape_checked(arr, key, t)


def _string_feed(val: Any, key: Tensor, t: Any) -> np.ndarray:
    """A value fed to a string tensor: str/bytes (lists built as object arrays: NumPy's
    'S' arrays drop trailing NUL bytes), never numbers."""
    try:
        arr = native_byte_order(np.asarray(val)) if isinstance(val, np.ndarray) else \
            python_array(val, t.dtype)
        if arr.dtype != object:
            raise ValueError("a string tensor is fed str or bytes")
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"cannot feed {val!r} to '{key.name}' of type {t}: "
                                   f"{e}") from None
    return arr


def _fed_shape_checked(arr: np.ndarray, key: Tensor, t: Any) -> np.ndarray:
    if not t.accepts(t.dtype, arr.shape):
        raise InvalidArgumentError(
            f"cannot feed value of shape {format_shape(arr.shape)} for tensor "
            f"'{key.name}', which has shape {format_shape(t.shape)}")
    return arr


class RunOptions:
    """Options for one `Session.run`: ``timeout_in_ms`` bounds the step (0: no bound);
    ``trace_level=RunOptions.FULL_TRACE`` with a `RunMetadata` records a timeline."""

    NO_TRACE, SOFTWARE_TRACE, HARDWARE_TRACE, FULL_TRACE = 0, 1, 2, 3

    def __init__(self, timeout_in_ms: int = 0, trace_level: int = 0, **_: Any) -> None:
        self.timeout_in_ms = timeout_in_ms
        self.trace_level = trace_level


class RunMetadata:
    """What a traced `Session.run` reports: `step_stats`, every node's device, thread,
    start and end (on every task of a cluster); ``tw.profiler.Timeline(step_stats)``
    turns it into a Chrome trace."""

    def __init__(self) -> None:
        self.step_stats: list = []


def _log_placement(step: Any) -> None:
    """``log_device_placement``: every node of a compiled step with its device."""
    graph = getattr(step, "graph", None)
    for node in getattr(graph, "nodes", []):
        if node.assigned_device:
            print(f"{node.name}: ({node.op}): {node.assigned_device}", flush=True)


class ConfigProto:
    """TensorFlow 1's session configuration. `device_filters` limits a cluster session to
    the tasks it names (``["/job:ps", "/job:worker/task:1"]``): the others are neither
    used nor contacted. `allow_soft_placement` sets ``tw.config``'s soft placement when the
    session is created; `log_device_placement` prints each node's device when a step is
    compiled. `operation_timeout_in_ms` bounds every step of the session
    (`DeadlineExceededError`; a step's ``RunOptions.timeout_in_ms`` overrides it).
    Thread-pool and GPU options are accepted and ignored (the runtime sizes its pools
    from the machine)."""

    def __init__(self, allow_soft_placement: bool | None = None,
                 log_device_placement: bool = False, device_filters: Any = None,
                 operation_timeout_in_ms: int = 0, **_: Any) -> None:
        self.allow_soft_placement = allow_soft_placement
        self.log_device_placement = log_device_placement
        self.device_filters = list(device_filters or [])
        self.operation_timeout_in_ms = int(operation_timeout_in_ms or 0)


class InteractiveSession(Session):
    """A Session that makes itself the default on creation (for shells and notebooks)."""

    def __init__(self, target: str = "", graph: Graph | None = None, config: Any = None) -> None:
        super().__init__(target, graph, config)
        _session_stack().append(self)

    def close(self) -> None:
        stack = _session_stack()
        if self in stack:
            stack.remove(self)
        super().close()


def _tensor_eval(self: Tensor, feed_dict: dict | None = None, session: Session | None = None):
    """``tensor.eval()``: run it in the default (or given) session."""
    return (session or get_default_session()).run(self, feed_dict)


Tensor.eval = _tensor_eval
