"""TensorFlow 1 as a module: ``import tensorweave.compat.v1 as tf``.

Op functions build into the default graph (graph mode), `Session.run` executes pruned,
compiled subgraphs, and the TensorFlow 1 spellings work: ``tf.log``,
``reduction_indices=``, ``tf.initialize_all_variables``, ``tf.train.*Optimizer``,
``tf.placeholder("float", [None, 784])``.
"""

from __future__ import annotations

import contextlib
import importlib
import types
from collections.abc import Iterator
from typing import Any

import tensorweave as _tw

from ... import errors  # noqa: F401
from ...data import v1 as data  # noqa: F401  (tf.compat.v1.data)
from ...frontend import autodiff as _autodiff
from ...frontend import context as _context
from ...frontend import grouping as _grouping
from ...frontend import queues as _queues
from ...frontend.building import constant as _constant
from ...frontend.ops import random_distributions as _random_distributions
from ...frontend.ops import scatter as _scatter
from ...frontend.ops.dropout import dropout_v1 as _dropout_v1
from ...frontend.tensor_shape import (  # noqa: F401
    Dimension,
    TensorShape,
    dimension_at_index,
    dimension_value,
)
from . import activations as _activations
from . import assertions as _assertions
from . import layer_classes as _layer_classes
from . import layers, losses, metrics, operation_run, summary, train  # noqa: F401
from . import rnn as _rnn
from . import rnn_cell as _rnn_cell
from .aliases import *  # noqa: F401, F403  (tf.svd, tf.matrix_inverse, tf.foldr, ...)
from .assertions import (  # noqa: F401
    Assert,
    assert_equal,
    assert_greater,
    assert_greater_equal,
    assert_integer,
    assert_less,
    assert_less_equal,
    assert_near,
    assert_negative,
    assert_non_negative,
    assert_non_positive,
    assert_none_equal,
    assert_positive,
    assert_rank,
    assert_scalar,
    assert_type,
    verify_tensor_all_finite,
)
from .control_flow_v1 import cond, switch_case, tuple, while_loop  # noqa: F401, A004
from .graph import (  # noqa: F401  (the public names of this module)
    Graph,
    GraphKeys,
    Variable,
    add_to_collection,
    add_to_collections,
    all_variables,
    get_collection,
    get_collection_ref,
    get_default_graph,
    global_variables,
    global_variables_initializer,
    in_default_graph,
    initialize_all_variables,
    is_variable_initialized,
    local_variables,
    local_variables_initializer,
    placeholder,
    placeholder_with_default,
    report_uninitialized_variables,
    reset_default_graph,
    trainable_variables,
    variables_initializer,
)
from .initializers import (  # noqa: F401
    constant_initializer,
    glorot_normal_initializer,
    glorot_uniform_initializer,
    ones_initializer,
    orthogonal_initializer,
    random_normal_initializer,
    random_uniform_initializer,
    truncated_normal_initializer,
    uniform_unit_scaling_initializer,
    variance_scaling_initializer,
    zeros_initializer,
)
from .input_epochs import count_up_to  # noqa: F401
from .logging_ops import Print  # noqa: F401
from .moving_averages import moving_average_variables  # noqa: F401
from .partitioners import (  # noqa: F401
    fixed_size_partitioner,
    min_max_variable_partitioner,
    variable_axis_size_partitioner,
)
from .script_ops import numpy_function, py_func  # noqa: F401
from .session import (  # noqa: F401
    ConfigProto,
    InteractiveSession,
    RunMetadata,
    RunOptions,
    Session,
    get_default_session,
)
from .sync_replicas import ConditionalAccumulator, SparseConditionalAccumulator  # noqa: F401
from .var_scope import (  # noqa: F401
    AUTO_REUSE,
    PartitionedVariable,
    VariableScope,
    get_variable,
    get_variable_scope,
    variable_scope,
)
from .variable_collections import get_local_variable, model_variables  # noqa: F401
from ...io import gfile_v1 as gfile  # noqa: F401, E402  (tf.gfile: TensorFlow 1's names)
from ...io import python_io  # noqa: F401, E402  (tf.python_io)
from ...io import v1 as io  # noqa: F401, E402  (tf.compat.v1.io, in graph mode)
from ...io.readers import TFRecordReader  # noqa: F401, E402
from ...io.v1 import (  # noqa: F401, E402  (tf.parse_example, tf.decode_raw, ...)
    FixedLenFeature,
    VarLenFeature,
    decode_csv,
    decode_raw,
    matching_files,
    parse_example,
    parse_single_example,
    read_file,
    write_file,
)

_PASS_THROUGH = (_tw.DType, type)

# -- every tw op function, in graph mode --------------------------------------------------
for _name in _tw.__all__:
    _obj = getattr(_tw, _name)
    if _name in globals() or _name in ("compile", "Variable", "errors", "compat", "distribute"):
        continue
    if callable(_obj) and not isinstance(_obj, _PASS_THROUGH):
        globals()[_name] = in_default_graph(_obj)
    else:
        globals()[_name] = _obj



@in_default_graph
def constant(value: Any, dtype: Any = None, shape: Any = None, name: str | None = "Const",
             verify_shape: bool = False) -> Any:
    """TensorFlow 1's ``tf.constant``: named ``Const`` (``Const_1``, ...) by default, a
    name that a Python value converted for an op never takes (it is ``mul/y``)."""
    return _constant(value, dtype, shape, name=name or "Const")


# (they return the variable's value after the update, as TensorFlow 1's do)
scatter_add = in_default_graph(_scatter.returning_value(_scatter.scatter_add))
scatter_sub = in_default_graph(_scatter.returning_value(_scatter.scatter_sub))
scatter_update = in_default_graph(_scatter.returning_value(_scatter.scatter_update))
scatter_mul = in_default_graph(_scatter.returning_value(_scatter.scatter_mul))
scatter_div = in_default_graph(_scatter.returning_value(_scatter.scatter_div))
scatter_min = in_default_graph(_scatter.returning_value(_scatter.scatter_min))
scatter_max = in_default_graph(_scatter.returning_value(_scatter.scatter_max))


@in_default_graph
def convert_to_tensor(value: Any, dtype: Any = None, name: str | None = None,
                      preferred_dtype: Any = None, dtype_hint: Any = None) -> Any:
    """TensorFlow 1's ``tf.convert_to_tensor``: a new constant is named ``Const`` (or
    `name`), as ``tf.constant``'s."""
    return _tw.convert_to_tensor(value, dtype, name=name or "Const",
                                 dtype_hint=dtype_hint if dtype_hint is not None
                                 else preferred_dtype)


def _variable_update(method: str) -> Any:
    def update(ref: Any, value: Any, use_locking: Any = None, name: str | None = None,
               read_value: bool = True) -> Any:
        if not hasattr(ref, method):
            raise TypeError(f"tf.{method} updates a variable, got {type(ref).__name__}")
        with name_scope(name or method.title().replace("_", "")):
            return getattr(ref, method)(value, read_value=read_value)

    update.__name__ = method
    update.__doc__ = (f"TensorFlow 1's ``tf.{method}(ref, value)``: ``ref.{method}(value)``, "
                      f"returning the variable's value after the update (the update op with "
                      f"``read_value=False``).")
    return update


_assign = _variable_update("assign")


def assign(ref: Any, value: Any, validate_shape: Any = None, use_locking: Any = None,
           name: str | None = None, read_value: bool = True) -> Any:
    """TensorFlow 1's ``tf.assign(ref, value)``: ``ref.assign(value)``, returning the
    variable's value after the update. `validate_shape` is accepted and, as for
    TensorFlow 2's resource variables, changes nothing: a variable takes values of
    another size only where it was declared with unknown dims (``shape=[None, 3]``)."""
    return _assign(ref, value, use_locking, name, read_value)


assign_add = _variable_update("assign_add")
assign_sub = _variable_update("assign_sub")
gradients = in_default_graph(_autodiff.gradients)
stop_gradient = in_default_graph(_autodiff.stop_gradient)
group = in_default_graph(_grouping.group)
no_op = in_default_graph(_grouping.no_op)


@contextlib.contextmanager
def _in_default(cm_factory: Any, *args: Any) -> Iterator[Any]:
    if _context.current_builder() is None:
        with get_default_graph().as_default(), cm_factory(*args) as v:
            yield v
    else:
        with cm_factory(*args) as v:
            yield v


def name_scope(name: str | None, default_name: str | None = None, values: Any = None) -> Any:
    """Prefix op names created in the block (``with tf.name_scope("layer1"):``), as
    TensorFlow 1: the scope is made unique (``layer1_1/`` the second time), a name ending
    in ``/`` re-enters that scope exactly, `default_name` is used when `name` is None, and
    None or ``""`` opens the root scope. Yields the scope (``outer/layer1/``)."""
    return _in_default(_context.name_scope, default_name if name is None else name)


def device(spec: str | None) -> Any:
    """Place ops created in the block on `spec`."""
    return _in_default(_context.device, spec)


def control_dependencies(deps: Any) -> Any:
    """Ops created in the block run after `deps`."""
    return _in_default(_context.control_dependencies, deps)


# -- TensorFlow 1 spellings ----------------------------------------------------------------

def _v1_reduce(fn_name: str) -> Any:
    fn = getattr(_tw, fn_name)

    @in_default_graph
    def reduce(input_tensor: Any, axis: Any = None, keepdims: Any = None, name: str | None = None,
               reduction_indices: Any = None, keep_dims: Any = None) -> Any:
        if axis is None:
            axis = reduction_indices
        if keepdims is None:
            keepdims = keep_dims is not None and keep_dims is not False
        return fn(input_tensor, axis=axis, keepdims=keepdims, name=name)

    reduce.__name__ = fn_name
    reduce.__doc__ = f"TensorFlow 1 ``tf.{fn_name}`` (accepts ``reduction_indices``, ``keep_dims``)."
    return reduce


for _name in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
              "reduce_all", "reduce_any", "reduce_logsumexp"):
    if hasattr(_tw, _name):
        globals()[_name] = _v1_reduce(_name)


def _v1_arg(fn_name: str) -> Any:
    fn = getattr(_tw, fn_name)

    @in_default_graph
    def arg(input: Any, axis: Any = None, name: str | None = None, dimension: Any = None,
            output_type: Any = _tw.int64) -> Any:
        axis = dimension if axis is None else axis
        return fn(input, axis=0 if axis is None else axis, output_type=output_type, name=name)

    arg.__name__ = fn_name
    arg.__doc__ = f"TensorFlow 1 ``tf.{fn_name}`` (accepts ``dimension``; axis 0 by default)."
    return arg


for _name in ("argmax", "argmin"):
    if hasattr(_tw, _name):
        globals()[_name] = _v1_arg(_name)


@in_default_graph
def concat(values: Any, axis: Any, name: str = "concat") -> Any:
    """``tf.concat(values, axis)``; the pre-1.0 order ``tf.concat(axis, values)`` also works."""
    if isinstance(values, int) and not isinstance(axis, int):
        values, axis = axis, values
    return _tw.concat(values, axis, name=name)


def _cast_to(dtype: Any) -> Any:
    @in_default_graph
    def to(x: Any, name: str | None = None) -> Any:
        return _tw.cast(x, dtype, name=name)
    to.__doc__ = f"`x` cast to {dtype.tf_name} (TensorFlow 1's ``tf.to_*``)."
    return to


to_float = _cast_to(_tw.float32)
to_double = _cast_to(_tw.float64)
to_int32 = _cast_to(_tw.int32)
to_int64 = _cast_to(_tw.int64)

mul = globals().get("multiply")
sub = globals().get("subtract")
neg = globals().get("negative")


@in_default_graph
def div(x: Any, y: Any, name: str | None = None) -> Any:
    """Python 2 division: floor division for integers, true division for floats."""
    xt = _tw.convert_to_tensor(x)
    if xt.dtype.is_integer:
        return _tw.floordiv(xt, y, name=name)
    return _tw.divide(xt, y, name=name)


def disable_eager_execution() -> None:
    """Accepted for compatibility: this module always builds graphs."""


disable_v2_behavior = disable_eager_execution


# -- queues: constructed in the default graph; tf.train's queue runners ------------------------

def _graph_mode_class(cls: type) -> type:
    """`cls` whose constructor builds into the default graph."""
    return type(cls.__name__, (cls,), {"__init__": in_default_graph(cls.__init__),
                                       "__doc__": cls.__doc__, "__module__": __name__})


QueueBase = _queues.QueueBase
FIFOQueue = _graph_mode_class(_queues.FIFOQueue)
RandomShuffleQueue = _graph_mode_class(_queues.RandomShuffleQueue)
PaddingFIFOQueue = _graph_mode_class(_queues.PaddingFIFOQueue)
queue = types.ModuleType(f"{__name__}.queue", "``tf.queue``: queues built in the default graph.")
queue.__dict__.update(QueueBase=QueueBase, FIFOQueue=FIFOQueue, PaddingFIFOQueue=PaddingFIFOQueue,
                      RandomShuffleQueue=RandomShuffleQueue)


# -- sub-namespaces --------------------------------------------------------------------------

def _graph_mode_module(name: str, source: Any, extra: dict[str, Any]) -> types.ModuleType:
    mod = types.ModuleType(f"{__name__}.{name}", f"``tf.{name}`` of TensorFlow 1: "
                           f"``tw.{name}`` building into the default graph.")
    for attr in getattr(source, "__all__", []):
        obj = getattr(source, attr)
        mod.__dict__[attr] = in_default_graph(obj) if callable(obj) and not isinstance(
            obj, _PASS_THROUGH) else obj
    mod.__dict__.update(extra)
    _public_only(mod)
    return mod


def _public_only(mod: types.ModuleType) -> None:
    """Give a module built here an ``__all__`` of its public names and a `dir` of those."""
    names = sorted(n for n in mod.__dict__ if not n.startswith("_"))
    mod.__dict__.update(__all__=names, __dir__=lambda: list(names))


def _optional(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        return None


_nn_src = _optional("tensorweave.nn")
_random_src = _optional("tensorweave.random")


def _nn_extras() -> dict[str, Any]:
    extras: dict[str, Any] = {}
    if _nn_src is None:
        return extras

    @in_default_graph
    def softmax(logits: Any, axis: Any = None, name: str | None = None, dim: Any = None) -> Any:
        """``tf.nn.softmax`` (TensorFlow 1 also spells `axis` as ``dim``)."""
        return _nn_src.softmax(logits, axis=axis if axis is not None else dim, name=name)

    @in_default_graph
    def log_softmax(logits: Any, axis: Any = None, name: str | None = None, dim: Any = None) -> Any:
        """``tf.nn.log_softmax`` (TensorFlow 1 also spells `axis` as ``dim``)."""
        return _nn_src.log_softmax(logits, axis=axis if axis is not None else dim, name=name)

    @in_default_graph
    def softmax_cross_entropy_with_logits(_sentinel: Any = None, labels: Any = None,
                                          logits: Any = None, dim: int = -1,
                                          name: str | None = None, axis: Any = None) -> Any:
        """Cross entropy of ``softmax(logits)`` against `labels` (keyword arguments only,
        as TensorFlow 1 insists). As in TensorFlow 1, no gradient reaches `labels` (only
        ``softmax_cross_entropy_with_logits_v2`` differentiates them)."""
        if _sentinel is not None:
            raise ValueError("call softmax_cross_entropy_with_logits with labels= and logits=")
        return _nn_src.softmax_cross_entropy_with_logits(
            labels=_autodiff.stop_gradient(labels), logits=logits,
            axis=dim if axis is None else axis, name=name)

    dropout = in_default_graph(_dropout_v1)

    @in_default_graph
    def in_top_k(predictions: Any, targets: Any, k: int, name: str | None = None) -> Any:
        """``tf.nn.in_top_k`` with TensorFlow 1's argument order (predictions first)."""
        return _nn_src.in_top_k(targets, predictions, k, name=name)

    @in_default_graph
    def depthwise_conv2d(input: Any, filter: Any, strides: Any, padding: Any,  # noqa: A002
                         rate: Any = None, name: str | None = None, data_format: Any = None,
                         dilations: Any = None) -> Any:
        """``tf.nn.depthwise_conv2d`` of TensorFlow 1: `rate` ([r_h, r_w]) is the dilation."""
        return _nn_src.depthwise_conv2d(input, filter, strides, padding,
                                        data_format=data_format,
                                        dilations=rate if dilations is None else dilations,
                                        name=name)

    @in_default_graph
    def conv1d(value: Any = None, filters: Any = None, stride: Any = None, padding: Any = None,
               use_cudnn_on_gpu: Any = None, data_format: Any = None, name: str | None = None,
               input: Any = None, dilations: Any = None) -> Any:  # noqa: A002
        """``tf.nn.conv1d`` of TensorFlow 1 (`value` or `input`; `use_cudnn_on_gpu` is
        accepted and ignored)."""
        return _nn_src.conv1d(value if input is None else input, filters, stride, padding,
                              data_format=data_format or "NWC", dilations=dilations, name=name)

    @in_default_graph
    def pool(input: Any, window_shape: Any, pooling_type: str, padding: str,  # noqa: A002
             dilation_rate: Any = None, strides: Any = None, name: str | None = None,
             data_format: Any = None, dilations: Any = None) -> Any:
        """``tf.nn.pool`` with TensorFlow 1's argument order (padding fourth,
        `dilation_rate`)."""
        return _nn_src.pool(input, window_shape, pooling_type, strides, padding,
                            data_format=data_format,
                            dilations=dilation_rate if dilations is None else dilations,
                            name=name)

    @in_default_graph
    def separable_conv2d(input: Any, depthwise_filter: Any, pointwise_filter: Any,  # noqa: A002
                         strides: Any, padding: Any, rate: Any = None, name: str | None = None,
                         data_format: Any = None, dilations: Any = None) -> Any:
        """``tf.nn.separable_conv2d`` of TensorFlow 1: `rate` is the depthwise dilation."""
        return _nn_src.separable_conv2d(input, depthwise_filter, pointwise_filter, strides,
                                        padding, data_format=data_format,
                                        dilations=rate if dilations is None else dilations,
                                        name=name)

    @in_default_graph
    def convolution(input: Any, filter: Any = None, padding: Any = None,  # noqa: A002
                    strides: Any = None, dilation_rate: Any = None, name: str | None = None,
                    data_format: Any = None, filters: Any = None, dilations: Any = None) -> Any:
        """``tf.nn.convolution`` with TensorFlow 1's argument order (padding third,
        `dilation_rate`; `filters=` also accepted)."""
        return _nn_src.convolution(input, filter if filters is None else filters, strides,
                                   padding, data_format=data_format,
                                   dilations=dilation_rate if dilations is None else dilations,
                                   name=name)

    # TensorFlow 1's "mod" partition strategy by default (tw.nn's is TensorFlow 2's "div")
    @in_default_graph
    def embedding_lookup(params: Any, ids: Any, partition_strategy: str = "mod",
                         name: str | None = None, validate_indices: bool = True,
                         max_norm: Any = None) -> Any:
        """``tf.compat.v1.nn.embedding_lookup``: shards looked up "mod" by default."""
        return _nn_src.embedding_lookup(params, ids, partition_strategy, name,
                                        validate_indices, max_norm)

    @in_default_graph
    def nce_loss(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
                 num_classes: int, num_true: int = 1, sampled_values: Any = None,
                 remove_accidental_hits: bool = False, partition_strategy: str = "mod",
                 name: str = "nce_loss", seed: Any = None) -> Any:
        """``tf.compat.v1.nn.nce_loss``: sharded weights looked up "mod" by default."""
        return _nn_src.nce_loss(weights, biases, labels, inputs, num_sampled, num_classes,
                                num_true, sampled_values, remove_accidental_hits,
                                partition_strategy, name, seed)

    @in_default_graph
    def sampled_softmax_loss(weights: Any, biases: Any, labels: Any, inputs: Any,
                             num_sampled: int, num_classes: int, num_true: int = 1,
                             sampled_values: Any = None, remove_accidental_hits: bool = True,
                             partition_strategy: str = "mod",
                             name: str = "sampled_softmax_loss", seed: Any = None) -> Any:
        """``tf.compat.v1.nn.sampled_softmax_loss``: sharded weights looked up "mod" by
        default."""
        return _nn_src.sampled_softmax_loss(weights, biases, labels, inputs, num_sampled,
                                            num_classes, num_true, sampled_values,
                                            remove_accidental_hits, partition_strategy, name,
                                            seed)

    extras.update(embedding_lookup=embedding_lookup, nce_loss=nce_loss,
                  sampled_softmax_loss=sampled_softmax_loss)
    extras.update(softmax=softmax, log_softmax=log_softmax, dropout=dropout, in_top_k=in_top_k,
                  softmax_cross_entropy_with_logits=softmax_cross_entropy_with_logits,
                  depthwise_conv2d=depthwise_conv2d, conv1d=conv1d, pool=pool,
                  separable_conv2d=separable_conv2d, convolution=convolution,
                  # TensorFlow 1's names of the native op (no `rate`, strides and dilations
                  # in NHWC order): the tf.nn.* functions of this module
                  depthwise_conv2d_native=in_default_graph(_nn_src.depthwise_conv2d),
                  depthwise_conv2d_native_backprop_input=in_default_graph(
                      _nn_src.depthwise_conv2d_backprop_input),
                  depthwise_conv2d_native_backprop_filter=in_default_graph(
                      _nn_src.depthwise_conv2d_backprop_filter))
    return extras


def _rnn_cell_module() -> types.ModuleType:
    mod = types.ModuleType(f"{__name__}.nn.rnn_cell", "``tf.nn.rnn_cell``: TensorFlow 1's "
                           "recurrent cells.")
    mod.__dict__.update({k: getattr(_rnn_cell, k) for k in _rnn_cell.__all__})
    _public_only(mod)
    return mod


nn = _graph_mode_module("nn", _nn_src, _nn_extras())
nn.__dict__.update(_activations.v1_activations())  # tf.nn.elu is Elu, ... (TF's names)
# TensorFlow 1's recurrent networks: tf.nn.rnn_cell.*, tf.nn.dynamic_rnn, ...
nn.__dict__.update({k: getattr(_rnn, k) for k in _rnn.__all__ if k != "reverse_sequence"},
                   rnn_cell=_rnn_cell_module())
# tf.sparse, tf.SparseTensor, tf.sparse_placeholder, tf.sparse_tensor_dense_matmul, ...,
# tf.nn.embedding_lookup_sparse (tensorweave/sparse/v1.py)
from ...sparse.v1 import v1_names as _sparse_v1_names  # noqa: E402

globals().update(_sparse_v1_names(in_default_graph, nn))
_public_only(nn)
reverse_sequence = _rnn.reverse_sequence
# tf.layers' classes (Dense, Conv2D, ...): a name layers.py defines itself stays its own
for _name in _layer_classes.__all__:
    if not hasattr(layers, _name):
        setattr(layers, _name, getattr(_layer_classes, _name))
        layers.__all__.append(_name)
random = _graph_mode_module("random", _random_src, {
    # TensorFlow 1's tf.random.poisson takes lam first
    "poisson": in_default_graph(_random_distributions.random_poisson)})
math = _graph_mode_module("math", importlib.import_module("tensorweave.math"), {})
linalg = _graph_mode_module("linalg", importlib.import_module("tensorweave.linalg"), {})
debugging = _graph_mode_module("debugging", None, _assertions.debugging_namespace())
# tf.image with TensorFlow 1's names and defaults (resize_images, resize_bilinear, ...)
image = _graph_mode_module("image", importlib.import_module("tensorweave.image"),
                           importlib.import_module("tensorweave.image.v1").graph_mode_names())


@in_default_graph
def boolean_mask(tensor: Any, mask: Any, name: str = "boolean_mask", axis: Any = None) -> Any:
    """``tf.boolean_mask`` with TensorFlow 1's argument order (`name` third)."""
    return _tw.boolean_mask(tensor, mask, axis=axis, name=name)


@in_default_graph
def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Any:
    """TensorFlow 1's ``tf.where``: the coordinates of the true entries, or with `x` and `y`
    a selection where a rank-1 `condition` picks whole rows (its length is x's first dim),
    as TensorFlow 1's Select; other conditions are elementwise. ``where_v2`` broadcasts
    (``tw.where``), which would line a vector up with the last dim instead."""
    if x is None and y is None:
        return _tw.where(condition, name=name)
    condition = _tw.convert_to_tensor(condition)
    ranks = [condition.shape.rank] + [_tw.convert_to_tensor(v).shape.rank for v in (x, y)]
    if None in ranks:  # (a placeholder made without a shape)
        return _where_of_unknown_rank(condition, x, y, ranks, name)
    # (`tuple` is tf.tuple here)
    shapes = [[*_tw.convert_to_tensor(v).shape] for v in (x, y)]
    rank = max(len(s) for s in shapes)
    if condition.ndim == 1 and rank > 1:
        rows = {s[0] for s in shapes if s and s[0] is not None} | (
            {condition.shape[0]} if condition.shape[0] is not None else set())
        if len(rows) > 1:  # broadcasting would make a bigger result instead
            raise errors.ShapeError(f"tf.where: a rank-1 condition selects rows: its length "
                                    f"must be the first dim of x and y, got condition "
                                    f"{[*condition.shape]}, x {shapes[0]}, y {shapes[1]}")
        condition = _tw.reshape(condition, [-1] + [1] * (rank - 1))
    return _tw.where(condition, x, y, name=name)


def _where_of_unknown_rank(condition: Any, x: Any, y: Any, ranks: list, name: Any) -> Any:
    """`where` with an input of unknown rank: elementwise where TensorFlow 1's Select is
    elementwise whatever the unknown rank turns out to be (a condition of rank 0 or above
    1, which must then have x's shape; x and y of rank 0 or 1), else an error: a
    condition of rank 1 selects rows of an x of higher rank, and which one it is would
    be known only at run time."""
    cond_rank, value_ranks = ranks[0], ranks[1:]
    if (cond_rank is not None and cond_rank != 1) or (
            None not in value_ranks and max(value_ranks) <= 1):
        return _tw.where(condition, x, y, name=name)
    from ...frontend.call_site import user_location
    raise errors.ShapeError(
        f"TensorFlow 1's where selects whole rows when the condition is a vector and x has a "
        f"higher rank, and elementwise otherwise; with condition of shape "
        f"{condition.shape} and x and y of shapes "
        f"{', '.join(str(_tw.convert_to_tensor(v).shape) for v in (x, y))} which one is "
        f"unknown while the graph is built: give the placeholders shapes, or use "
        f"tf.where_v2 (elementwise, broadcasting)", op="tf.where",
        location=str(user_location()))


where_v2 = in_default_graph(_tw.where)

# TensorFlow 1's top-level names of special functions (TensorFlow 2 keeps them in tf.math)
for _name in ("lgamma", "digamma", "polygamma", "erfc", "lbeta", "log_sigmoid"):
    globals()[_name] = in_default_graph(getattr(_tw.math, _name))

if _random_src is not None:
    for _name in ("random_normal", "random_uniform", "truncated_normal", "random_shuffle",
                  "multinomial"):
        _fn = getattr(importlib.import_module("tensorweave.frontend.ops.random"), _name, None)
        if _fn is not None:
            globals()[_name] = in_default_graph(_fn)
    set_random_seed = getattr(_random_src, "set_seed", None)
    random_gamma = in_default_graph(_random_distributions.random_gamma)
    random_poisson = in_default_graph(_random_distributions.random_poisson)

_public_only(queue)

# TensorFlow 1's name scopes of its Python-level functions (clip_by_value/..., zeros, ...)
from . import tf1_scopes as _tf1_scopes  # noqa: E402

_tf1_scopes.apply({"": globals(), "nn": nn, "math": math, "debugging": debugging})


# names bound here that are how this module is built, not TensorFlow 1's API
_IMPLEMENTATION = frozenset({"annotations", "graph", "session", "in_default_graph", "compat",
                             "initializers", "partitioners", "var_scope",
                             "operation_run", "assertions", "checkpoint_utils",
                             "control_flow_v1", "moving_averages", "variable_collections",
                             "aliases", "template", "activations", "tf1_scopes"})


def _is_api(name: str, obj: Any) -> bool:
    """A public name of this module: not an import of the standard library or typing."""
    if name.startswith("_") or name in _IMPLEMENTATION:
        return False
    if isinstance(obj, types.ModuleType):
        return obj.__name__.startswith("tensorweave.")
    return getattr(obj, "__module__", None) in (None, __name__) or \
        obj.__module__.startswith("tensorweave.") or isinstance(obj, _tw.DType)


__all__ = sorted(n for n, v in list(globals().items()) if _is_api(n, v))


def __dir__() -> list[str]:
    return list(__all__)
