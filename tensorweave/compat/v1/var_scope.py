"""TensorFlow 1's ``tf.variable_scope`` and ``tf.get_variable``, with partitioned
variables.

Each graph keeps a store of the variables made by `get_variable`, by full name
(``scope/name``), and a current `VariableScope` (name, reuse mode, default initializer,
partitioner and dtype). A partitioner splits a variable into shards ``name/part_k``,
ordinary variables created one after the other (so ``replica_device_setter`` sends them
round robin to the PS tasks) and held by a `PartitionedVariable`, which
``tf.nn.embedding_lookup`` accepts as a list of shards.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import json
import threading
import weakref
from collections.abc import Iterator
from typing import Any

from ...compiler.dtypes import as_dtype, float32
from ...frontend import context as _context
from ...frontend.building import convert_to_tensor
from ...frontend.context import current_builder
from ...frontend.ops import array as _array
from .graph import Graph, Variable, get_default_graph, in_default_graph
from .initializers import PartitionInfo, glorot_uniform_initializer, zeros_initializer
from .partitioners import shard_layout

REGULARIZATION_LOSSES = "regularization_losses"


class _ReuseMode:
    """``tf.AUTO_REUSE``: `get_variable` returns the variable when it exists and creates it
    otherwise."""

    def __repr__(self) -> str:
        return "tf.AUTO_REUSE"


AUTO_REUSE = _ReuseMode()


@dataclasses.dataclass(frozen=True)
class SaveSliceInfo:
    """Where a shard sits in its partitioned variable (TensorFlow's
    ``Variable._save_slice_info``): checkpoints record it, so a model partitioned
    differently (or not at all) restores the variable from the shards."""

    full_name: str
    full_shape: tuple
    var_offset: tuple

    def spec(self) -> str:
        """The JSON the Save and Restore ops take."""
        return json.dumps({"full": self.full_name, "shape": list(self.full_shape),
                           "offset": list(self.var_offset)})

    def for_slot(self, slot_name: str) -> SaveSliceInfo:
        """The slice info of an optimizer slot of the shard (a shard of the slot of the
        whole variable)."""
        return SaveSliceInfo(f"{self.full_name}/{slot_name}", self.full_shape,
                             self.var_offset)


def slice_spec(variable: Any, name: str) -> str:
    """The slice spec a Saver records for `variable` saved as `name`: its shard info,
    or the whole variable (so a partitioned model can restore a single variable)."""
    info = getattr(variable, "_save_slice_info", None)
    if info is None:
        info = SaveSliceInfo(name, tuple(variable.shape), (0,) * len(tuple(variable.shape)))
    return info.spec()


class PartitionedVariable:
    """A variable split into shards along one axis: iterate it (or ``list(pv)``) for the
    shard Variables in order; ``shape`` is the full shape. Used as a tensor it is the
    concatenation of its shards."""

    def __init__(self, name: str, shape: tuple, dtype: Any, variables: list[Variable],
                 partitions: list[int], axis: int) -> None:
        self._name, self._shape, self._dtype = name, tuple(shape), as_dtype(dtype)
        self._variables, self._partitions, self._axis = list(variables), list(partitions), axis

    def __iter__(self) -> Iterator[Variable]:
        return iter(self._variables)

    def __len__(self) -> int:
        return len(self._variables)

    def __getitem__(self, k: int) -> Variable:
        return self._variables[k]

    def __repr__(self) -> str:
        return (f"<tf.PartitionedVariable '{self._name}' shape={list(self._shape)} "
                f"dtype={self._dtype.name} shards={len(self)}>")

    @property
    def name(self) -> str:
        """The full name given to `get_variable` (shards are ``name/part_k``)."""
        return self._name

    @property
    def dtype(self) -> Any:
        return self._dtype

    @property
    def shape(self) -> tuple:
        """The shape of the whole variable."""
        return self._shape

    def get_shape(self) -> tuple:
        """The shape of the whole variable."""
        return self._shape

    def _shard_list(self) -> list[Variable]:
        return list(self._variables)

    def _get_variable_list(self) -> list[Variable]:
        return list(self._variables)

    def _get_partitions(self) -> list[int]:
        return list(self._partitions)

    @in_default_graph
    def as_tensor(self) -> Any:
        """The whole variable's value: the shards concatenated."""
        if len(self._variables) == 1:
            return convert_to_tensor(self._variables[0])
        return _array.concat([convert_to_tensor(v) for v in self._variables], self._axis)

    def _as_tensor(self) -> Any:
        return self.as_tensor()


class VariableScope:
    """A variable scope: the name prefix of variables made with `get_variable`, whether
    they are reused (True, `AUTO_REUSE`, or False to create), and the defaults
    `get_variable` takes for initializer, partitioner and dtype."""

    def __init__(self, reuse: Any, name: str = "", initializer: Any = None,
                 partitioner: Any = None, dtype: Any = None, regularizer: Any = None,
                 custom_getter: Any = None) -> None:
        self.name, self.reuse = name, reuse
        self.initializer, self.partitioner, self.regularizer = initializer, partitioner, regularizer
        self.custom_getter = custom_getter
        self.dtype = as_dtype(dtype) if dtype is not None else float32
        self.original_name_scope = f"{name}/" if name else ""

    def reuse_variables(self) -> None:
        """Reuse variables in this scope from now on."""
        self.reuse = True

    def set_initializer(self, initializer: Any) -> None:
        """The default initializer of this scope."""
        self.initializer = initializer

    def set_partitioner(self, partitioner: Any) -> None:
        """The default partitioner of this scope."""
        self.partitioner = partitioner

    def set_custom_getter(self, custom_getter: Any) -> None:
        """The custom getter of this scope (replacing the one it had)."""
        self.custom_getter = custom_getter

    def get_variable(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """`get_variable` in this scope."""
        with variable_scope(self):
            return get_variable(name, *args, **kwargs)


class _GraphState:
    def __init__(self) -> None:
        self.store: dict[str, Any] = {}
        self.scope = VariableScope(False)
        # how many times each full scope name was opened (TensorFlow's
        # variable_scopes_count): a default name is made unique against it
        self.scope_counts: dict[str, int] = {}

    def unique_default_name(self, parent: str, prefix: str) -> str:
        """`prefix`, or ``prefix_k`` with the smallest k, not yet opened under `parent`."""
        name = f"{parent}/{prefix}" if parent else prefix
        if not self.scope_counts.get(name):
            return prefix
        k = 1
        while self.scope_counts.get(f"{name}_{k}"):
            k += 1
        return f"{prefix}_{k}"

    def close_subscopes(self, name: str) -> None:
        """Forget the counts of the scopes under `name` (TensorFlow does when `name` is
        left, so a model built again in the same scope gets the same names)."""
        start = f"{name}/"
        for key in self.scope_counts:
            if key.startswith(start):
                self.scope_counts[key] = 0


_STATES: weakref.WeakKeyDictionary[Graph, _GraphState] = weakref.WeakKeyDictionary()
_STATES_LOCK = threading.Lock()


def _state() -> _GraphState:
    graph = get_default_graph()
    with _STATES_LOCK:
        state = _STATES.get(graph)
        if state is None:
            state = _STATES[graph] = _GraphState()
        return state


def _refuse_constraint(api: str, constraint: Any) -> None:
    """A constraint would have to be applied after every optimizer update (TensorFlow 1's
    optimizers do): not supported, so an error rather than a variable trained without
    it."""
    if constraint is not None:
        raise NotImplementedError(f"{api}(constraint=...) is not supported: optimizers would "
                                  f"not apply it after their updates")


def get_variable_scope() -> VariableScope:
    """The current variable scope of the default graph."""
    return _state().scope


@contextlib.contextmanager
def variable_scope(name_or_scope: Any, default_name: str | None = None, values: Any = None,
                   initializer: Any = None, regularizer: Any = None, caching_device: Any = None,
                   partitioner: Any = None, custom_getter: Any = None, reuse: Any = None,
                   dtype: Any = None, use_resource: Any = None, constraint: Any = None,
                   auxiliary_name_scope: bool = True) -> Iterator[VariableScope]:
    """Open a variable scope: names of `get_variable` inside get its name as a prefix.

    `name_or_scope` is a name (nested under the current scope), a `VariableScope` (entered
    again, by its full name) or None with `default_name` (made unique). ``reuse=True``
    makes `get_variable` return existing variables (an error if one is missing),
    `AUTO_REUSE` creates the missing ones; reuse is inherited and cannot be turned off in
    a nested scope. `initializer`, `partitioner`, `regularizer` and `dtype` become the
    defaults of `get_variable` in the block. Ops created inside get the scope's name as
    their name scope."""
    if custom_getter is not None and not callable(custom_getter):
        raise ValueError(f"variable_scope: custom_getter must be callable, got "
                         f"{type(custom_getter).__name__}")
    _refuse_constraint("variable_scope", constraint)
    state = _state()
    parent = state.scope
    reentered = isinstance(name_or_scope, VariableScope)
    aux_name = default_name if name_or_scope is None else str(name_or_scope)
    if reentered:
        base = name_or_scope
        full = base.name
        # (a scope object keeps its own reuse: the parent's is not inherited)
        inherited = base.reuse
    else:
        if name_or_scope is None:
            if default_name is None:
                raise ValueError("variable_scope needs name_or_scope or default_name")
            if reuse is True:
                raise ValueError("reuse=True cannot be used without a name_or_scope")
            name_or_scope = state.unique_default_name(parent.name, default_name)
        base = parent
        full = f"{parent.name}/{name_or_scope}" if parent.name else str(name_or_scope)
        inherited = parent.reuse
    # TensorFlow's counting: every scope opened counts for the default names; leaving a
    # named scope forgets its subscopes' counts, leaving a scope object restores the
    # counts as they were just after it was entered
    state.scope_counts[full] = state.scope_counts.get(full, 0) + 1
    saved_counts = dict(state.scope_counts) if reentered else None
    scope = VariableScope(reuse if reuse else inherited, full,
                          initializer if initializer is not None else base.initializer,
                          partitioner if partitioner is not None else base.partitioner,
                          dtype if dtype is not None else base.dtype,
                          regularizer if regularizer is not None else base.regularizer,
                          _chain_getters(custom_getter, base.custom_getter))
    state.scope = scope
    try:
        # the name scope TensorFlow opens, under the current one (made unique there): the
        # whole name given ("a/b"), the default name (not the variable scope's unique
        # one: "d_2/" may hold the ops of variable scope "d_1"), or the last part of a
        # scope object's name
        aux = (full.rsplit("/", 1)[-1] if reentered else aux_name) \
            if auxiliary_name_scope else None
        with _name_scope(aux) as opened:
            scope.original_name_scope = base.original_name_scope if reentered else opened
            yield scope
    finally:
        if saved_counts is not None:
            state.scope_counts = saved_counts
        else:
            state.close_subscopes(full)
        state.scope = parent


def _chain_getters(new: Any, old: Any) -> Any:
    """A scope's custom getter: `new` calling `old` (the enclosing scope's) as its getter,
    as TensorFlow nests them."""
    if new is None or old is None:
        return new if new is not None else old

    def chained(getter: Any, *args: Any, **kwargs: Any) -> Any:
        return new(functools.partial(old, getter), *args, **kwargs)

    return chained


@contextlib.contextmanager
def _name_scope(name: str | None) -> Iterator[str]:
    """Open name scope `name` (none when empty) under the current one; yields the
    current name scope inside (``outer/name/``, or ``""`` at the root)."""
    with contextlib.ExitStack() as stack:
        if current_builder() is None:
            stack.enter_context(get_default_graph().as_default())
        if name:
            stack.enter_context(_context.name_scope(name))
        prefix = current_builder().scoped_name("").rstrip("/")
        yield f"{prefix}/" if prefix else ""


@in_default_graph
def get_variable(name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
                 regularizer: Any = None, trainable: bool | None = None, collections: Any = None,
                 caching_device: Any = None, partitioner: Any = None, validate_shape: bool = True,
                 use_resource: Any = None, custom_getter: Any = None, constraint: Any = None,
                 **_: Any) -> Any:
    """The variable ``scope/name``: created (with `initializer`, by default Glorot
    uniform for floats and zeros otherwise) unless the scope reuses variables, then
    returned by later calls in reusing scopes.

    With a `partitioner` (or the scope's), the variable is split into shards
    ``name/part_k`` along one axis, with TensorFlow's shard shapes, and a
    `PartitionedVariable` is returned. `initializer` may also be a tensor or array, which
    then gives the shape.

    With a `custom_getter` (or the scope's), the variable is what
    ``custom_getter(getter, name, shape=..., dtype=..., ...)`` returns, `name` the full
    name and `getter` the function that makes or finds variables, as in TensorFlow: the
    scope's initializer, regularizer, partitioner, reuse and dtype come as arguments."""
    _refuse_constraint("get_variable", constraint)
    scope = _state().scope
    full = f"{scope.name}/{name}" if scope.name else name
    kwargs = dict(shape=shape, dtype=dtype,
                  initializer=initializer if initializer is not None else scope.initializer,
                  regularizer=regularizer if regularizer is not None else scope.regularizer,
                  reuse=scope.reuse, trainable=trainable, collections=collections,
                  caching_device=caching_device,
                  partitioner=partitioner if partitioner is not None else scope.partitioner,
                  validate_shape=validate_shape, use_resource=use_resource)
    getter = custom_getter if custom_getter is not None else scope.custom_getter
    if getter is None:
        return _true_getter(full, **kwargs)
    if dtype is None and (kwargs["initializer"] is None or callable(kwargs["initializer"])):
        kwargs["dtype"] = scope.dtype  # (TensorFlow gives custom getters the scope's dtype)
    kwargs.update(synchronization=None, aggregation=None)
    if _takes_keyword(getter, "constraint"):
        kwargs["constraint"] = None
    return getter(getter=_true_getter, name=full, **kwargs)


def _takes_keyword(fn: Any, keyword: str) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == keyword or p.kind is p.VAR_KEYWORD for p in params)


def _true_getter(name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
                 regularizer: Any = None, reuse: Any = None, trainable: bool | None = None,
                 collections: Any = None, caching_device: Any = None, partitioner: Any = None,
                 validate_shape: bool = True, use_resource: Any = None, constraint: Any = None,
                 **_: Any) -> Any:
    """The variable called `name` (a full name): found in the graph's store when `reuse`
    allows, else made; what `get_variable` does, and the getter a custom getter calls."""
    _refuse_constraint("get_variable", constraint)
    state = _state()
    full = name
    dtype = as_dtype(dtype) if dtype is not None else None
    if initializer is not None and not callable(initializer):
        value = convert_to_tensor(initializer, dtype=dtype)
        if shape is not None and validate_shape and tuple(shape) != tuple(value.shape):
            raise ValueError(f"get_variable {full!r}: shape {list(shape)} given with an "
                             f"initializer of shape {list(value.shape)}; give only one")
        shape, dtype = tuple(value.shape), value.dtype
        initializer = _ConstantValue(value)
    requested_dtype = dtype  # (given, or the initializer value's: a reuse must match it)
    dtype = dtype or state.scope.dtype

    existing = state.store.get(full)
    if existing is not None:
        if reuse is False or reuse is None:
            raise ValueError(f"Variable {full} already exists, disallowed. Did you mean to set "
                             f"reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
        if shape is not None and tuple(shape) != tuple(existing.shape):
            raise ValueError(f"Trying to share variable {full}, but specified shape "
                             f"{list(shape)} and found shape {list(existing.shape)}")
        if requested_dtype is not None and requested_dtype is not existing.dtype:
            # (a float64 model reusing a float32 variable would compute in float32)
            raise ValueError(f"Trying to share variable {full}, but specified dtype "
                             f"{requested_dtype.ir_name} and found dtype {existing.dtype.ir_name}")
        return existing
    if reuse is True:
        raise ValueError(f"Variable {full} does not exist, or was not created with "
                         f"tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                         f"VarScope?")
    if shape is None:
        raise ValueError(f"get_variable {full!r}: the shape of a new variable must be given "
                         f"(or come from a constant initializer)")
    shape = tuple(int(d) for d in shape)
    if initializer is None:
        initializer = glorot_uniform_initializer() if dtype.is_floating else zeros_initializer()
    trainable = True if trainable is None else trainable
    if partitioner is None:
        var = _make(full, shape, dtype, initializer, None, trainable, collections, regularizer)
    else:
        var = _make_partitioned(full, shape, dtype, initializer, partitioner, trainable,
                                collections, regularizer)
    state.store[full] = var
    return var


class _ConstantValue:
    """A constant initial value as an initializer (sliced for shards)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self, shape: Any, dtype: Any = None,
                 partition_info: PartitionInfo | None = None) -> Any:
        if partition_info is None or tuple(shape) == tuple(self.value.shape):
            return self.value
        begin = list(partition_info.var_offset)
        return _array.slice(self.value, begin, list(shape))


def _make(name: str, shape: tuple, dtype: Any, initializer: Any, info: PartitionInfo | None,
          trainable: bool, collections: Any, regularizer: Any) -> Variable:
    def initial() -> Any:
        return initializer(shape, dtype=dtype, partition_info=info)

    var = Variable(initial, trainable=trainable, name=name, dtype=dtype, shape=shape,
                   collections=collections, _absolute_name=True)
    if regularizer is not None:
        loss = _regularization_loss(regularizer, var, name)
        if loss is not None:
            get_default_graph().add_to_collection(REGULARIZATION_LOSSES, loss)
    return var


def _regularization_loss(regularizer: Any, var: Variable, name: str) -> Any:
    """``regularizer(var)`` built under ``<name>/Regularizer/`` whatever the current name
    scope, as TensorFlow's get_variable: scope filters of ``REGULARIZATION_LOSSES`` then
    find a loss by its variable's name (a root ``v``'s ``sum`` matched scope ``s``)."""
    with get_default_graph().as_default():
        b = current_builder()
        saved, b.name_scopes = b.name_scopes, [name, "Regularizer"]
        try:
            return regularizer(var)
        finally:
            b.name_scopes = saved


def _make_partitioned(name: str, shape: tuple, dtype: Any, initializer: Any, partitioner: Any,
                      trainable: bool, collections: Any, regularizer: Any) -> PartitionedVariable:
    partitions = list(partitioner(shape=shape, dtype=dtype))
    axis, layout = shard_layout(shape, partitions)
    shards = []
    for k, (offset, shard_shape) in enumerate(layout):
        var_offset = tuple(offset if d == axis else 0 for d in range(len(shape)))
        info = PartitionInfo(shape, var_offset)
        shards.append(_make(f"{name}/part_{k}", shard_shape, dtype, initializer, info,
                            trainable, collections, regularizer))
        # what a Saver records so that another partitioning can restore it
        shards[-1]._save_slice_info = SaveSliceInfo(name, tuple(shape), var_offset)
    return PartitionedVariable(name, shape, dtype, shards, partitions, axis)


__all__ = ["AUTO_REUSE", "PartitionedVariable", "SaveSliceInfo", "VariableScope", "get_variable",
           "get_variable_scope", "variable_scope"]
