"""TensorFlow 1 graphs: the default graph, placeholders, graph-mode variables and their
initializers, and collections."""

from __future__ import annotations

import contextlib
import difflib
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ...compiler import ir
from ...compiler.dtypes import DType, as_dtype
from ...compiler.types import TensorType, as_shape, format_shape
from ...errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    TracingError,
    UnknownNameError,
)
from ...frontend.building import apply_op, apply_op1, convert_to_tensor
from ...frontend.call_site import api_name, describe_frame, user_location
from ...frontend.context import (
    GraphBuilder,
    building,
    control_dependencies,
    current_builder,
    name_scope,
)
from ...frontend.grouping import group
from ...frontend.tensor import Tensor
from ...frontend.tensor_shape import Dimension, TensorShape, UnknownRankError, dimension_value
from ...frontend.variables import Variable as _Variable
from ...frontend.variables import declared_variable_shape

GLOBAL_VARIABLES = "variables"
TRAINABLE_VARIABLES = "trainable_variables"
LOCAL_VARIABLES = "local_variables"  # per-worker state, e.g. a sync replica's local step


class Graph:
    """A TensorFlow 1 graph: ops are added to it while it is the default graph."""

    def __init__(self) -> None:
        self._ir = ir.Graph("graph")
        self._builder = GraphBuilder(self._ir, auto_control_deps=False, kind="v1")
        self._builder.v1_graph = self
        self._collections: dict[str, list[Any]] = {}
        self._variable_names: set[str] = set()
        self.finalized = False

    @property
    def ir(self) -> ir.Graph:
        """The IR graph holding every op added so far."""
        return self._ir

    @contextlib.contextmanager
    def as_default(self) -> Iterator[Graph]:
        """Make this the graph that new ops go to, for the duration of the block."""
        with building(self._builder):
            yield self

    def get_operations(self) -> list[ir.Node]:
        return list(self._ir.nodes)

    def get_operation_by_name(self, name: str) -> ir.Node:
        """The op called `name`; `UnknownNameError` (a KeyError) naming similar ones if
        there is none."""
        return find_node(self._ir, name, f"operation {name!r}")

    def get_tensor_by_name(self, name: str) -> Tensor | Variable:
        """The tensor called ``"node:i"``; a variable's name (``"dense/kernel:0"``) gives
        the variable, which fetches, feeds and converts as its value (TensorFlow 1's
        ``w:0`` is the variable's value, not an opaque handle)."""
        node_name, _, idx = name.rpartition(":")
        if not node_name or not idx.isdigit():
            raise ValueError(f"tensor names look like 'op:0', got {name!r}")
        node = find_node(self._ir, node_name, f"tensor {name!r}")
        variable = self._builder.variables.get(node.attrs.get("shared_name")) \
            if node.op == "VarHandle" and idx == "0" else None
        if isinstance(variable, Variable) and variable.graph is self:
            return variable
        if int(idx) >= len(node.outputs):
            last = len(node.outputs) - 1
            outputs = f"only {node_name}:0" if last == 0 else \
                f"{node_name}:0 to {node_name}:{last}" if last > 0 else "no outputs"
            raise UnknownNameError(f"tensor {name!r} does not exist: op {node_name!r} "
                                   f"({node.op}) has {outputs}", op=api_name(),
                                   location=_where())
        return Tensor(node.outputs[int(idx)], self._builder)

    def add_to_collection(self, name: str, value: Any) -> None:
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names: Any, value: Any) -> None:
        for name in ([names] if isinstance(names, str) else names):
            self.add_to_collection(name, value)

    def get_collection(self, name: str, scope: str | None = None) -> list[Any]:
        """The values in collection `name` (those whose name starts with `scope`, a
        regular expression as in TensorFlow, when given)."""
        items = list(self._collections.get(name, []))
        if scope is None:
            return items
        import re
        pattern = re.compile(scope)
        # as TensorFlow: an item without a name is never returned when a scope is given
        names = [getattr(v, "shared_name", getattr(v, "name", None)) for v in items]
        return [v for v, n in zip(items, names)
                if isinstance(n, str) and pattern.match(n)]

    def get_collection_ref(self, name: str) -> list[Any]:
        """The collection's list itself: changing it changes the collection."""
        return self._collections.setdefault(name, [])

    def get_all_collection_keys(self) -> list[str]:
        return sorted(self._collections)

    def unique_variable_name(self, base: str) -> str:
        """A variable name not used yet in this graph (``w``, ``w_1``, ...)."""
        name, i = base, 0
        while name in self._variable_names:
            i += 1
            name = f"{base}_{i}"
        self._variable_names.add(name)
        return name

    def finalize(self) -> None:
        self.finalized = True


def find_node(graph: ir.Graph, name: str, what: str) -> ir.Node:
    """The node of `graph` called `name`; else an `UnknownNameError` that says `what` was
    asked for, that no op has that name, and which names are close."""
    try:
        return graph.node_by_name(name)
    except KeyError:
        pass
    names = [n.name for n in graph.nodes]
    close = difflib.get_close_matches(name, names, n=5, cutoff=0.5)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else \
        f"; it has {len(names)} ops" + (f", e.g. {', '.join(repr(n) for n in names[:5])}"
                                          if names else "")
    raise UnknownNameError(f"{what} does not exist: the graph has no op named {name!r}{hint}",
                           op=api_name(), location=_where())


def _where() -> str | None:
    loc = user_location()
    return str(loc) if loc is not None else None


_default_lock = threading.Lock()
_default_graph: Graph | None = None


def get_default_graph() -> Graph:
    """The graph ops go to: the innermost ``as_default`` graph, else the global one."""
    b = current_builder()
    if b is not None and getattr(b, "v1_graph", None) is not None:
        return b.v1_graph
    global _default_graph
    with _default_lock:
        if _default_graph is None:
            _default_graph = Graph()
        return _default_graph


def reset_default_graph() -> None:
    """Start a fresh global default graph."""
    global _default_graph
    with _default_lock:
        _default_graph = Graph()


def in_default_graph(fn: Callable) -> Callable:
    """Wrap an op function so that, outside any graph, it builds into the default graph
    (TensorFlow 1's graph mode) instead of running eagerly. A function that needs the
    rank of an input of unknown rank (`UnknownRankError`) fails naming itself and the
    user's line (`_needs_rank`)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        depth = getattr(_calls, "depth", 0)
        _calls.depth = depth + 1
        try:
            if current_builder() is not None:
                return fn(*args, **kwargs)
            with get_default_graph().as_default():
                return fn(*args, **kwargs)
        except UnknownRankError as e:
            if depth or e.op is not None:
                raise
            raise _needs_rank(e, (args, kwargs)) from e
        finally:
            _calls.depth = depth
    return wrapper


_calls = threading.local()  # how deep in v1 op functions this thread is


def _needs_rank(error: UnknownRankError, arguments: Any) -> UnknownRankError:
    """`error` (a rank needed and unknown, raised inside the v1 op function the user
    called) as an error naming that function, the input of unknown rank and the user's
    line: the function cannot be built on it (its result would depend on the rank)."""
    tb = error.__traceback__
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    # the first frame past this wrapper: the function the user called
    name = describe_frame(frames[1]) if len(frames) > 1 else "this function"
    tensors = [t for t in _tensors_in(arguments) if t.shape.rank is None]
    which = f"its input '{tensors[0].name}' has" if tensors else "an input has"
    return UnknownRankError(
        f"needs the rank of its input while the graph is built, and {which} an unknown "
        f"rank (a tf.placeholder made without a shape, or computed from one): give the "
        f"placeholder a shape, e.g. tf.placeholder(tf.float32, [None, 3]) ({error.message})",
        op=name, location=_where())


def _tensors_in(value: Any, depth: int = 0) -> Iterator[Tensor]:
    """The tensors in `value` (nested lists, tuples and dicts, a few levels deep)."""
    if isinstance(value, Tensor):
        yield value
    elif depth < 4 and isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors_in(v, depth + 1)
    elif depth < 4 and isinstance(value, dict):
        for v in value.values():
            yield from _tensors_in(v, depth + 1)


@in_default_graph
def placeholder(dtype: DType | str, shape: Any = None, name: str | None = None) -> Tensor:
    """A tensor whose value must be fed to `Session.run`. Dims given as None accept any
    size; without a `shape` (or with ``TensorShape(None)``) the rank is unknown too, as
    in TensorFlow 1: any array may be fed, and ``shape=[]`` is a scalar.

    Ops built on a tensor of unknown rank have the static shapes TensorFlow 1 gives them
    (mostly an unknown rank; ``tf.reshape(x, [-1, 3])`` is ``(None, 3)``,
    ``tf.reduce_sum(x)`` a scalar); each run specializes the graph to the ranks of the
    values fed (compiled once per rank), where every shape is inferred again."""
    dims = _declared_dims(shape, "tf.placeholder")
    dtype = as_dtype(dtype)
    return apply_op1("Placeholder", [], {"dtype": dtype, "shape": dims},
                     name=name or "Placeholder")


def _declared_dims(shape: Any, op: str) -> tuple | None:
    """A shape argument (a list, tuple or `TensorShape`, dims ints, None, -1 or
    ``tf.Dimension``) as a tuple of ints and None; None (or ``TensorShape(None)``) for
    an unknown rank."""
    if shape is None or (isinstance(shape, TensorShape) and shape.rank is None):
        return None
    if isinstance(shape, (int, Dimension)):
        shape = (shape,)
    return as_shape(tuple(dimension_value(d) for d in shape))


@in_default_graph
def placeholder_with_default(input: Any, shape: Any, name: str | None = None) -> Tensor:
    """A tensor that takes `input` unless a value is fed for it; its shape is `shape`
    (None dims: a fed value may have any size there; None: any shape at all, as
    TensorFlow's), which must allow `input`'s."""
    t = convert_to_tensor(input)
    declared = _declared_dims(shape, "tf.placeholder_with_default")
    if not t.type.is_compatible_with(TensorType(t.dtype, declared)):
        raise ValueError(f"placeholder_with_default: the default of shape "
                         f"{format_shape(t.type.shape)} does not have the shape given, "
                         f"{format_shape(declared)}")
    out = apply_op1("Identity", [t], name=name or "PlaceholderWithDefault")
    # the tensor is what a feed gives as well as the default: only `shape` is known of it
    out.value.type = TensorType(t.dtype, declared)
    return out


class Variable(_Variable):
    """A TensorFlow 1 variable: a node of the default graph, initialized by running its
    `initializer` in a Session (its value lives in that Session)."""

    def __init__(self, initial_value: Any = None, trainable: bool = True, name: str | None = None,
                 dtype: DType | str | None = None, shape: Any = None, collections: Any = None,
                 validate_shape: bool = True, *, _absolute_name: bool = False) -> None:
        """As TensorFlow 1's ``tf.Variable``: `name` (default ``Variable``) is prefixed
        with the enclosing name scopes (a variable scope opens one), and made unique."""
        if initial_value is None:
            raise ValueError("Variable needs an initial_value")
        builder = current_builder()
        if builder is not None and builder.kind == "function":
            # it would go to the default graph, which the traced function cannot read
            # (its step failed with KeyError or NotFoundError)
            loc = user_location()
            raise TracingError(
                "tf.compat.v1 variables (tf.Variable, tf.get_variable, and the layers and "
                "RNN cells that make them) cannot be created inside @tw.compile functions: "
                "build the model in a tf.Graph and run it with a Session, or create "
                "tw.Variables outside the function and use them inside",
                op="tf.Variable", location=str(loc) if loc else None)
        graph = get_default_graph()
        with graph.as_default():
            self._graph = graph
            self._shared_name = _unique_variable_name(graph, name or "Variable",
                                                      absolute=_absolute_name)
            # the initial value's ops under the variable's name (``v/Initializer/...``)
            with self._own_scope():
                if callable(initial_value):
                    with name_scope("Initializer"):
                        initial_value = initial_value()
                # (a Python value is TensorFlow's ``<name>/initial_value``)
                init = convert_to_tensor(initial_value, dtype_hint=dtype,
                                         name="initial_value")
                if dtype is not None and init.dtype is not as_dtype(dtype):
                    from ...frontend.ops.math import cast
                    init = cast(init, dtype)
            var_shape, self._unknown_rank = declared_variable_shape(init.shape, shape,
                                                                    name or "Variable")
            self._type = TensorType(init.dtype, var_shape)
            self.trainable = trainable
            self._initial_value = init
            self.initializer = self._build_initializer(init)
        # None: the global variables; [] (TensorFlow's way to leave a variable out of
        # global_variables_initializer) none
        collections = [GLOBAL_VARIABLES] if collections is None else list(collections)
        if trainable and TRAINABLE_VARIABLES not in collections:
            collections.append(TRAINABLE_VARIABLES)
        # once per collection, as TensorFlow: a variable listed twice among the trainable
        # ones would be stepped twice by minimize()
        for c in dict.fromkeys(collections):
            graph.add_to_collection(c, self)

    def _build_initializer(self, init: Tensor) -> ir.Node:
        with self._own_scope():
            apply_op("AssignVariable", [self.handle(), init], name="Assign")
        return self._graph.ir.nodes[-1]

    def _own_scope(self) -> Any:
        """The variable's name scope, ``<name>/`` whatever the current one (TensorFlow
        names its ops ``v/Assign``, ``v/read``), in the graph being built (a loop body's
        inside one)."""
        stack = contextlib.ExitStack()
        if current_builder() is None:
            stack.enter_context(self._graph.as_default())
        stack.enter_context(name_scope(f"{self._shared_name}/"))
        return stack

    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def initial_value(self) -> Tensor:
        return self._initial_value

    @property
    def op(self) -> ir.Node:
        return self.handle().producer

    def initialized_value(self) -> Tensor:
        """The variable's value once initialized, else its initial value (TensorFlow 1's
        ``initialized_value``: ``w2 = tf.Variable(w.initialized_value() * 2)`` gets a
        value from one ``global_variables_initializer()`` run, whatever its order)."""
        from ...frontend.control_flow import cond
        with self._graph.as_default():
            return cond(is_variable_initialized(self), self.read_value,
                        lambda: self._initial_value)

    def _create_slot(self, slot_name: str, initial: Any) -> Variable:
        """An optimizer's slot variable, on the device of this variable whatever the
        scopes and device functions say (as TensorFlow colocates slots)."""
        from ...frontend.context import colocate_with
        from ...frontend.context import device as device_scope
        # the device request inside the colocation (which shadows outer device scopes):
        # a graph of the slot alone no longer holds this variable to colocate with
        with self._graph.as_default(), device_scope(None), colocate_with(self.op), \
                device_scope(self.op.device):
            slot = Variable(initial, trainable=False, name=f"{self._shared_name}/{slot_name}",
                            _absolute_name=True)
        info = getattr(self, "_save_slice_info", None)
        if info is not None and tuple(slot.shape) == tuple(self.shape):
            slot._save_slice_info = info.for_slot(slot_name)
        return slot

    def _create_non_slot(self, name: str, initial: Any) -> Variable:
        """Optimizer state that belongs to no one variable (Adam's step counter), named
        `name` whatever the variables are (as TensorFlow 1's ``beta1_power``), so a model
        whose first variable changed, or is partitioned differently, still restores it;
        placed beside this variable."""
        from ...frontend.context import colocate_with
        from ...frontend.context import device as device_scope
        with self._graph.as_default(), device_scope(None), colocate_with(self.op), \
                device_scope(self.op.device):
            return Variable(initial, trainable=False, name=name, _absolute_name=True)

    def handle(self) -> ir.Value:
        if getattr(current_builder(), "capture", None) is not None:
            # Inside a tf.cond/tf.while_loop body: the body gets a handle of its own,
            # requested where the variable is (on a cluster the conditional or loop must
            # run on that task; placement reads the request).
            handle = super().handle()
            outer = self._graph._builder.var_handles.get(self._shared_name)
            if outer is not None and handle.producer is not None and not handle.producer.device:
                handle.producer.device = outer.producer.device
            return handle
        with self._graph.as_default():
            return super().handle()

    def _resource_arg(self) -> Any:
        return self.handle()

    def read_value(self) -> Tensor:
        # in the current name scope, as TensorFlow 1's ``identity(v, name="read")``
        with self._graph.as_default() if current_builder() is None else contextlib.nullcontext():
            return apply_op1("ReadVariable", [self.handle()], name="read")

    value = read_value

    def _as_tensor(self) -> Tensor:
        # a v1 variable converts to a read in its graph, never to an eager value (the
        # base class reads the eager state outside a builder: `w * w` at top level)
        return self.read_value()

    def snapshot(self) -> Tensor:
        """One read of the variable kept for fetching and feeding (``var/read:0``)."""
        snap = getattr(self, "_snapshot", None)
        if snap is None:
            with self._graph.as_default(), self._own_scope():
                snap = self._snapshot = apply_op1("ReadVariable", [self.handle()],
                                                  name="read")
        return snap

    def _update(self, op: str, value: Any, read_value: bool) -> Any:
        with self._graph.as_default() if current_builder() is None else contextlib.nullcontext():
            value = self._converted(value)
            self._check_shape(value)
            apply_op(op, [self.handle(), value])
            node = current_builder().graph.nodes[-1]  # a body's graph inside tf.while_loop
            if not read_value:
                return node
            # As in TensorFlow 1, fetching the returned value runs the assignment.
            with control_dependencies([node]):
                return self.read_value()

    def _graph_context(self) -> Any:
        return self._graph.as_default() if current_builder() is None else contextlib.nullcontext()

    def eval(self, session: Any = None) -> Any:
        from .session import get_default_session
        return (session or get_default_session()).run(self)

    def count_up_to(self, limit: int) -> Tensor:
        """TensorFlow 1's ``Variable.count_up_to``: ``tf.count_up_to(self, limit)``, the
        value before an increment; OutOfRangeError once it has reached `limit`."""
        from .input_epochs import count_up_to
        return count_up_to(self, limit)

    def load(self, value: Any, session: Any = None) -> None:
        """Set the variable to `value` in `session` (default: the default session)
        without adding ops, as TensorFlow 1's ``Variable.load``: runs the initializer with
        `value` fed for the initial value, so every call reuses one compiled step (the
        value must fit the initial value's shape, as that feed)."""
        from .session import get_default_session
        if session is None:
            try:
                session = get_default_session()
            except InvalidArgumentError:
                raise InvalidArgumentError(
                    f"Variable.load of '{self.name}': either pass session= or call it "
                    f"with a default session (`with sess.as_default():`)") from None
        session.run(self.initializer, {self._initial_value: value})

    def numpy(self):
        raise FailedPreconditionError(f"v1 variable '{self.name}' has no value outside a "
                                      f"Session: use sess.run(var)")

    def __repr__(self) -> str:
        return f"<tf.Variable '{self.name}' shape={self._type.shape} dtype={self.dtype.tf_name}>"


def _unique_variable_name(graph: Graph, name: str, absolute: bool) -> str:
    """A new variable's name, as TensorFlow 1 names it: unique among the graph's op names
    (``v``, ``v_1``; ignoring case), under the current name scope unless `absolute`
    (`get_variable` and optimizer slots give full names: TensorFlow resets the name
    scope for them)."""
    builder = graph._builder
    saved = builder.name_scopes
    if absolute:
        builder.name_scopes = []
    try:
        unique = builder.unique_name(name)
    finally:
        builder.name_scopes = saved
    graph._variable_names.add(unique)
    return unique


def global_variables(scope: str | None = None) -> list[Variable]:
    """The variables of the default graph (its ``GLOBAL_VARIABLES`` collection), those
    whose name `scope` matches from the start (a regular expression) when given."""
    return get_default_graph().get_collection(GLOBAL_VARIABLES, scope)


all_variables = global_variables


def trainable_variables(scope: str | None = None) -> list[Variable]:
    """The trainable variables of the default graph (what optimizers update by default),
    those whose name `scope` matches from the start when given (TensorFlow 1's
    ``tf.trainable_variables(scope="generator")``)."""
    return get_default_graph().get_collection(TRAINABLE_VARIABLES, scope)


def variables_initializer(var_list: list[Variable], name: str = "init") -> ir.Node:
    """An op that runs the initializers of `var_list`."""
    with get_default_graph().as_default():
        return group(*[v.initializer for v in var_list], name=name)


def global_variables_initializer() -> ir.Node:
    """An op that initializes every global variable of the default graph."""
    return variables_initializer(global_variables())


initialize_all_variables = global_variables_initializer


def local_variables(scope: str | None = None) -> list[Variable]:
    """The default graph's ``LOCAL_VARIABLES``: state of this worker only (not saved);
    those whose name `scope` matches from the start when given."""
    return get_default_graph().get_collection(LOCAL_VARIABLES, scope)


def local_variables_initializer() -> ir.Node:
    """An op that initializes every local variable of the default graph."""
    return variables_initializer(local_variables(), name="init_local")


class UninitializedVariables:
    """What `report_uninitialized_variables` returns: fetched with ``Session.run``, a 1-D
    NumPy array (dtype object) of the names, as bytes, of the variables that hold no
    value yet; empty when the model is ready (TensorFlow's string tensor, without a
    string dtype in the graph: the graph computes one flag per variable, the session
    turns the flags into names)."""

    def __init__(self, names: list[str], initialized: Tensor) -> None:
        self.names = names
        self.initialized = initialized  # bool [len(names)]

    def _session_fetch(self) -> Tensor:
        return self.initialized

    def _session_result(self, initialized: Any) -> Any:
        import numpy as np
        return np.array([n.encode() for n, ok in zip(self.names, initialized) if not ok],
                        dtype=object)

    def __repr__(self) -> str:
        return f"<report_uninitialized_variables of {len(self.names)} variables>"


def report_uninitialized_variables(var_list: Any = None,
                                   name: str = "report_uninitialized_variables"
                                   ) -> UninitializedVariables:
    """The variables of `var_list` (default: every global and local variable) that are
    not initialized yet, as names: what ``tf.train.Supervisor`` and
    ``SyncReplicasOptimizer.ready_for_local_init_op`` wait on."""
    from ...frontend.ops.array import stack
    if var_list is None:
        var_list = global_variables() + local_variables()
    var_list = list(var_list)
    graph = get_default_graph()
    with graph.as_default():
        if not var_list:
            flags = convert_to_tensor(_empty_flags())
        else:
            flags = stack([is_variable_initialized(v) for v in var_list], name=name)
    return UninitializedVariables([v.shared_name for v in var_list], flags)


def _empty_flags() -> Any:
    import numpy as np
    return np.zeros(0, np.bool_)


class GraphKeys:
    """TensorFlow 1's standard graph collection names."""

    GLOBAL_VARIABLES = GLOBAL_VARIABLES
    VARIABLES = GLOBAL_VARIABLES
    TRAINABLE_VARIABLES = TRAINABLE_VARIABLES
    LOCAL_VARIABLES = LOCAL_VARIABLES
    MODEL_VARIABLES = "model_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    METRIC_VARIABLES = "metric_variables"
    GLOBAL_STEP = "global_step"
    QUEUE_RUNNERS = "queue_runners"
    SUMMARIES = "summaries"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    UPDATE_OPS = "update_ops"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SAVERS = "savers"
    TRAIN_OP = "train_op"


def add_to_collection(name: str, value: Any) -> None:
    """Add `value` to the default graph's collection `name`."""
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names: Any, value: Any) -> None:
    """Add `value` to each of the default graph's collections `names`."""
    get_default_graph().add_to_collections(names, value)


def get_collection(key: str, scope: str | None = None) -> list[Any]:
    """A copy of the default graph's collection `key` (filtered by `scope`)."""
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key: str) -> list[Any]:
    """The default graph's collection `key` itself."""
    return get_default_graph().get_collection_ref(key)


def is_variable_initialized(variable: Variable) -> Tensor:
    """A boolean scalar: whether `variable` holds a value yet (in the session, or on its
    parameter server: how non-chief workers wait for the chief's initialization)."""
    with variable.graph.as_default(), variable._own_scope():
        return apply_op1("VarIsInitialized", [variable.handle()], name="IsInitialized")
