"""``tf.train`` of TensorFlow 1: the optimizers with their TensorFlow 1 defaults, and
checkpoint savers."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...compiler.dtypes import as_dtype, uint8
from ...compiler.ops.io import encode_path
from ...errors import NotFoundError
from ...frontend import optimizers as _opt
from ...frontend import schedules as _schedules
from ...frontend.building import apply_op, apply_op1
from ...frontend.context import colocate_with, control_dependencies
from ...frontend.grouping import group
from ...frontend.queue_runner import Coordinator, QueueRunner, add_queue_runner, start_queue_runners
from ...runtime import checkpoint_index, checkpoint_io
from .graph import (
    get_default_graph,
    global_variables,
    in_default_graph,
    placeholder,
    trainable_variables,
)
from .var_scope import PartitionedVariable, slice_spec


class _GraphModeOptimizer:
    """Makes an optimizer build into the default graph when called outside any graph."""

    # TensorFlow 1's optimizers keep no step counter unless their rule needs one
    _always_count_steps = False

    @in_default_graph
    def compute_gradients(self, loss: Any, var_list: Any = None, gate_gradients: int = 1,
                          aggregation_method: Any = None,
                          colocate_gradients_with_ops: bool = False, grad_loss: Any = None,
                          **_: Any) -> Any:
        """TensorFlow 1's signature; `grad_loss` is the loss's gradient (default ones).
        Without `var_list`, the variables of the graph's ``TRAINABLE_VARIABLES``
        collection, as in TensorFlow 1 (users edit it to freeze or add variables).
        Gating, aggregation and colocation choices do not change the values: ignored."""
        if var_list is None:
            var_list = trainable_variables()
            if not var_list:
                raise ValueError(f"{type(self).__name__}: no variables to optimize (the "
                                 f"graph's TRAINABLE_VARIABLES collection is empty)")
        return super().compute_gradients(loss, var_list, grad_loss=grad_loss)

    @in_default_graph
    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None,
                        name: str | None = None) -> Any:
        op = super().apply_gradients(grads_and_vars, name=name)
        if global_step is None:
            return op
        with control_dependencies([op]):
            return global_step.assign_add(1, read_value=False)

    @in_default_graph
    def minimize(self, loss: Any, global_step: Any = None, var_list: Any = None,
                 gate_gradients: int = 1, aggregation_method: Any = None,
                 colocate_gradients_with_ops: bool = False, name: str | None = None,
                 grad_loss: Any = None) -> Any:
        """TensorFlow 1's signature (and argument order); see `compute_gradients`."""
        return super().minimize(loss, var_list=var_list, global_step=global_step, name=name,
                                grad_loss=grad_loss)


class GradientDescentOptimizer(_GraphModeOptimizer, _opt.SGD):
    """``var -= learning_rate * grad``."""

    def __init__(self, learning_rate: Any, use_locking: bool = False,
                 name: str = "GradientDescent") -> None:
        _opt.SGD.__init__(self, learning_rate, name=name)


class MomentumOptimizer(_GraphModeOptimizer, _opt.Momentum):
    """``accum = momentum * accum + grad; var -= learning_rate * accum`` (Nesterov with
    ``use_nesterov=True``)."""

    def __init__(self, learning_rate: Any, momentum: float, use_locking: bool = False,
                 name: str = "Momentum", use_nesterov: bool = False) -> None:
        _opt.Momentum.__init__(self, learning_rate, momentum, use_nesterov, name=name)


class AdagradOptimizer(_GraphModeOptimizer, _opt.Adagrad):
    """Adagrad: per-element learning rates from the sum of squared gradients."""

    def __init__(self, learning_rate: Any, initial_accumulator_value: float = 0.1,
                 use_locking: bool = False, name: str = "Adagrad") -> None:
        _opt.Adagrad.__init__(self, learning_rate, initial_accumulator_value, epsilon=0.0,
                              name=name)


class AdadeltaOptimizer(_GraphModeOptimizer, _opt.Adadelta):
    """Adadelta: step sizes from running averages of squared gradients and updates."""

    def __init__(self, learning_rate: Any = 0.001, rho: float = 0.95, epsilon: float = 1e-8,
                 use_locking: bool = False, name: str = "Adadelta") -> None:
        _opt.Adadelta.__init__(self, learning_rate, rho, epsilon, name=name)


class RMSPropOptimizer(_GraphModeOptimizer, _opt.RMSProp):
    """TensorFlow 1's RMSProp, whose mean-square slot starts at ones."""

    def __init__(self, learning_rate: Any, decay: float = 0.9, momentum: float = 0.0,
                 epsilon: float = 1e-10, use_locking: bool = False, centered: bool = False,
                 name: str = "RMSProp") -> None:
        _opt.RMSProp.__init__(self, learning_rate, decay, momentum, epsilon, centered, name=name,
                              initial_ms=1.0)


class AdamOptimizer(_GraphModeOptimizer, _opt.Adam):
    """Adam: bias-corrected running averages of the gradient and its square."""

    def __init__(self, learning_rate: Any = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, use_locking: bool = False, name: str = "Adam") -> None:
        _opt.Adam.__init__(self, learning_rate, beta1, beta2, epsilon, name=name)


class FtrlOptimizer(_GraphModeOptimizer, _opt.Ftrl):
    """FTRL-proximal, with L1 and L2 regularization strengths, L2 shrinkage (ApplyFtrlV2)
    and `beta` (added to L2 as ``beta / (2 * learning_rate)``); slots ``accum`` and
    ``linear``, as TensorFlow 1's. `accum_name` / `linear_name` name the slot variables
    (``<variable>/<accum_name>``, TensorFlow 1's checkpoint names for them)."""

    _accumulator_slot = "accum"

    def __init__(self, learning_rate: Any, learning_rate_power: float = -0.5,
                 initial_accumulator_value: float = 0.1, l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, use_locking: bool = False,
                 name: str = "Ftrl", accum_name: str | None = None,
                 linear_name: str | None = None,
                 l2_shrinkage_regularization_strength: float = 0.0,
                 beta: float | None = None) -> None:
        _opt.Ftrl.__init__(self, learning_rate, learning_rate_power, initial_accumulator_value,
                           l1_regularization_strength, l2_regularization_strength, name=name,
                           l2_shrinkage_regularization_strength=(
                               l2_shrinkage_regularization_strength),
                           beta=beta)
        self._slot_names = {"accum": accum_name, "linear": linear_name}

    def _slot_variable_name(self, slot: str) -> str:
        return self._slot_names.get(slot) or super()._slot_variable_name(slot)


class ProximalGradientDescentOptimizer(_GraphModeOptimizer, _opt.ProximalGradientDescent):
    """``prox = var - lr * grad; var = sign(prox) * max(|prox| - lr * l1, 0) /
    (1 + lr * l2)`` (TensorFlow's ApplyProximalGradientDescent); no slots."""

    def __init__(self, learning_rate: Any, l1_regularization_strength: Any = 0.0,
                 l2_regularization_strength: Any = 0.0, use_locking: bool = False,
                 name: str = "ProximalGradientDescent") -> None:
        _opt.ProximalGradientDescent.__init__(self, learning_rate, l1_regularization_strength,
                                              l2_regularization_strength, name=name)


class ProximalAdagradOptimizer(_GraphModeOptimizer, _opt.ProximalAdagrad):
    """Adagrad's accumulator, then the proximal step with the rate
    ``lr / sqrt(accumulator)`` (TensorFlow's ApplyProximalAdagrad); slot
    ``accumulator``."""

    def __init__(self, learning_rate: Any, initial_accumulator_value: float = 0.1,
                 l1_regularization_strength: Any = 0.0, l2_regularization_strength: Any = 0.0,
                 use_locking: bool = False, name: str = "ProximalAdagrad") -> None:
        _opt.ProximalAdagrad.__init__(self, learning_rate, initial_accumulator_value,
                                      l1_regularization_strength, l2_regularization_strength,
                                      name=name)


class AdagradDAOptimizer(_GraphModeOptimizer, _opt.AdagradDA):
    """Adagrad dual averaging (TensorFlow's ApplyAdagradDA) with ``T = global_step + 1``;
    slots ``gradient_accumulator`` and ``gradient_squared_accumulator``. Pass the same
    `global_step` to `minimize` / `apply_gradients` so that it counts the steps."""

    def __init__(self, learning_rate: Any, global_step: Any,
                 initial_gradient_squared_accumulator_value: float = 0.1,
                 l1_regularization_strength: Any = 0.0, l2_regularization_strength: Any = 0.0,
                 use_locking: bool = False, name: str = "AdagradDA") -> None:
        _opt.AdagradDA.__init__(self, learning_rate, global_step,
                                initial_gradient_squared_accumulator_value,
                                l1_regularization_strength, l2_regularization_strength,
                                name=name)


Optimizer = _opt.Optimizer


# -- learning-rate decay (tf.train.*_decay): a tensor of the default graph --------------------
def _decayed(schedule_cls: Any, fn: str, global_step: Any, *args: Any, **kwargs: Any) -> Any:
    if global_step is None:
        raise ValueError(f"global_step is required for {fn}")
    return schedule_cls(*args, **kwargs)(global_step)


@in_default_graph
def exponential_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                      staircase: bool = False, name: str | None = None) -> Any:
    """``learning_rate * decay_rate ** (global_step / decay_steps)`` (floored exponent
    with `staircase`), as a tensor recomputed at every run."""
    return _decayed(_schedules.ExponentialDecay, "exponential_decay", global_step,
                    learning_rate, decay_steps, decay_rate, staircase, name)


def _dtype_of(x: Any) -> Any:
    """The dtype of a tensor, variable or Python/NumPy value."""
    return as_dtype(x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype)


@in_default_graph
def piecewise_constant(x: Any, boundaries: Any, values: Any, name: str | None = None) -> Any:
    """``values[i]`` for the interval of `boundaries` that `x` (the step) falls in:
    ``values[0]`` while ``x <= boundaries[0]``, ..., ``values[-1]`` after the last.
    Floating boundaries with an integer step are an error, as in TensorFlow 1: cast to
    the step's type, -0.5 would become 0 and move the step 0 to the wrong interval."""
    step_dtype = _dtype_of(x)
    if step_dtype.is_integer:
        for b in boundaries:
            if _dtype_of(b).is_floating:
                raise ValueError(f"piecewise_constant: boundaries ({_dtype_of(b).name}) "
                                 f"must have the same dtype as x ({step_dtype.name})")
    return _decayed(_schedules.PiecewiseConstantDecay, "piecewise_constant", x, boundaries,
                    values, name)


@in_default_graph
def cosine_decay(learning_rate: Any, global_step: Any, decay_steps: Any, alpha: float = 0.0,
                 name: str | None = None) -> Any:
    """Cosine decay from `learning_rate` to ``alpha * learning_rate`` over `decay_steps`."""
    return _decayed(_schedules.CosineDecay, "cosine_decay", global_step, learning_rate,
                    decay_steps, alpha, name)


@in_default_graph
def polynomial_decay(learning_rate: Any, global_step: Any, decay_steps: Any,
                     end_learning_rate: float = 0.0001, power: float = 1.0, cycle: bool = False,
                     name: str | None = None) -> Any:
    """Polynomial decay from `learning_rate` to `end_learning_rate` over `decay_steps`."""
    return _decayed(_schedules.PolynomialDecay, "polynomial_decay", global_step, learning_rate,
                    decay_steps, end_learning_rate, power, cycle, name)


@in_default_graph
def inverse_time_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                       staircase: bool = False, name: str | None = None) -> Any:
    """``learning_rate / (1 + decay_rate * global_step / decay_steps)``."""
    return _decayed(_schedules.InverseTimeDecay, "inverse_time_decay", global_step,
                    learning_rate, decay_steps, decay_rate, staircase, name)


class _NaturalExpDecay(_schedules._StepDecay):
    """``initial_learning_rate * exp(-decay_rate * step / decay_steps)`` (floored
    exponent with `staircase`)."""

    def _decayed(self, lr: Any, rate: Any, p: Any) -> Any:
        from ...frontend.ops import math as m
        return lr * m.exp(-rate * p)


@in_default_graph
def natural_exp_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                      staircase: bool = False, name: str | None = None) -> Any:
    """``learning_rate * exp(-decay_rate * global_step / decay_steps)`` (floored exponent
    with `staircase`), as a tensor recomputed at every run."""
    return _decayed(_NaturalExpDecay, "natural_exp_decay", global_step, learning_rate,
                    decay_steps, decay_rate, staircase, name)


class Saver:
    """Saves and restores variables of the default graph with Save/Restore ops.

    ``saver.save(sess, "dir/model", global_step=100)`` writes ``dir/model-100.safetensors``
    atomically and records it in ``dir/checkpoint.json``, keeping the newest `max_to_keep`.
    """

    def __init__(self, var_list: Any = None, max_to_keep: int = 5, name: str = "save",
                 sharded: bool = False, keep_checkpoint_every_n_hours: float = 10000.0,
                 **_: Any) -> None:
        """`max_to_keep` newest checkpoints are kept (None or 0: all); of those dropped,
        one every `keep_checkpoint_every_n_hours` (counted from the Saver's creation) is
        left on disk, as in TensorFlow."""
        if var_list is None:
            var_list = global_variables()
        named = _saved_names(var_list)
        if not named:
            raise ValueError("Saver: no variables to save")
        self.max_to_keep = max_to_keep
        self.keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._last_preserved = checkpoint_index.now()
        self._graph = get_default_graph()
        # sharded: one Save op per task, next to that task's variables, all run in one
        # step (in parallel); a manifest written after them makes the checkpoint.
        groups = _by_task(named) if sharded else {None: list(named)}
        self._shards: list[tuple[Any, list[str]]] = []
        with self._graph.as_default():
            self._filename = placeholder(uint8, [None], name=f"{name}/filename")
            save_ops = []
            for k, names in enumerate(groups.values()):
                filename = (placeholder(uint8, [None], name=f"{name}/shard_{k}")
                            if sharded else self._filename)
                with colocate_with(named[names[0]]) if sharded else _no_scope():
                    apply_op("Save", [filename] + [named[n].snapshot() for n in names],
                             {"names": tuple(names),
                              "slices": tuple(slice_spec(named[n], n) for n in names)},
                             name=f"{name}/save")
                save_ops.append(self._graph.ir.nodes[-1])
                self._shards.append((filename, names))
            self.save_op = save_ops[0] if len(save_ops) == 1 else group(*save_ops,
                                                                         name=f"{name}/save_all")
            self.sharded = sharded
            assigns = []
            for key, v in named.items():
                with colocate_with(v) if sharded else _no_scope():
                    value = apply_op1("Restore", [self._filename],
                                      {"name": key, "dtype": v.dtype, "shape": v.shape,
                                       "slice": slice_spec(v, key)},
                                      name=f"{name}/restore")
                    assigns.append(v.assign(value, read_value=False))
            self.restore_op = group(*assigns, name=f"{name}/restore_all")

    def _feed(self, path: str) -> dict:
        return {self._filename: encode_path(path)}

    def save(self, sess: Any, save_path: str, global_step: Any = None,
             write_state: bool = True, **_: Any) -> str:
        """Write a checkpoint; returns its prefix (``save_path-global_step``). Sharded, each
        task writes the shard of its own variables, then the manifest is written."""
        if global_step is not None:
            # a number (a NumPy integer, or the 0-d array a session returned for the
            # step) names the checkpoint as it is; a tensor or variable is read
            number = np.asarray(global_step) if isinstance(
                global_step, (int, np.integer, np.ndarray)) else None
            if number is not None and (number.ndim != 0 or number.dtype.kind not in "iub"):
                raise TypeError(f"Saver.save: global_step must be an integer, a tensor or a "
                                f"variable, got {global_step!r}")
            global_step = int(number) if number is not None else int(sess.run(global_step))
            save_path = f"{save_path}-{global_step}"
        if self.sharded:
            count = len(self._shards)
            save_id = checkpoint_io.new_save_id()  # never overwrites the current shards
            prefixes = [checkpoint_io.shard_prefix(save_path, k, count, save_id)
                        for k in range(count)]
            sess.run(self.save_op, {f: encode_path(p)
                                    for (f, _), p in zip(self._shards, prefixes)})
            checkpoint_io.write_manifest(save_path, {n: p for (_, names), p in
                                                     zip(self._shards, prefixes)
                                                     for n in names})
        else:
            sess.run(self.save_op, self._feed(save_path))
        if write_state:
            _, self._last_preserved = checkpoint_index.record(
                save_path, self.max_to_keep, self.keep_checkpoint_every_n_hours,
                self._last_preserved)
        return save_path

    def restore(self, sess: Any, save_path: str) -> None:
        """Load every variable of this saver from checkpoint `save_path`."""
        if save_path is None:
            raise NotFoundError("no checkpoint to restore (save_path is None)")
        sess.run(self.restore_op, self._feed(save_path))


def _saved_names(var_list: Any) -> dict[str, Any]:
    """Checkpoint name -> variable for a Saver's `var_list`: a dict as given, a list by
    the variables' names, a partitioned variable in a list as its shards (each saved
    with where it sits in the whole variable, as `global_variables()` lists them)."""
    if isinstance(var_list, dict):
        for key, v in var_list.items():
            if isinstance(v, PartitionedVariable):
                raise TypeError(f"Saver: var_list['{key}'] is a partitioned variable; pass a "
                                f"list holding it (its shards are saved under their own names)")
        return dict(var_list)
    named = {}
    for v in var_list:
        for shard in (list(v) if isinstance(v, PartitionedVariable) else [v]):
            named[shard.shared_name] = shard
    return named


def _by_task(named: dict[str, Any]) -> dict[str | None, list[str]]:
    """Variable names grouped by the task their variable is requested on (None: no
    request, the client's task)."""
    from ...runtime.devices import DeviceSpec
    groups: dict[str | None, list[str]] = {}
    for key, v in named.items():
        spec = DeviceSpec.from_string(v.op.device or "")
        task = None if spec.job is None else f"/job:{spec.job}/task:{spec.task or 0}"
        groups.setdefault(task, []).append(key)
    return groups


def _no_scope() -> Any:
    import contextlib
    return contextlib.nullcontext()


def latest_checkpoint(checkpoint_dir: str) -> str | None:
    """The newest checkpoint prefix recorded in `checkpoint_dir`."""
    return checkpoint_io.latest_checkpoint(checkpoint_dir)



# -- distributed training: tf.train.ClusterSpec, Server, replica_device_setter -------------
_DISTRIBUTED = ("ClusterSpec", "GreedyLoadBalancingStrategy", "Server", "replica_device_setter")


def __getattr__(name: str) -> Any:
    # Imported on first use: the distributed runtime brings in gRPC (~0.1 s).
    if name in _DISTRIBUTED:
        from ... import distribute
        return getattr(distribute, name)
    raise AttributeError(f"module 'tf.train' has no attribute {name!r}")


# -- fault-tolerant training loops (tf.train.MonitoredTrainingSession, hooks, Supervisor) --
from .checkpoint_utils import (  # noqa: E402
    NewCheckpointReader,
    init_from_checkpoint,
    list_variables,
    load_checkpoint,
    load_variable,
)
from .moving_averages import ExponentialMovingAverage  # noqa: E402
from .sync_replicas import SyncReplicasOptimizer  # noqa: E402
from .training import (  # noqa: E402
    CheckpointSaverHook,
    LoggingTensorHook,
    MonitoredSession,
    MonitoredTrainingSession,
    NanLossDuringTrainingError,
    NanTensorHook,
    Scaffold,
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
    StepCounterHook,
    StopAtStepHook,
    SummarySaverHook,
    Supervisor,
    create_global_step,
    get_global_step,
    get_or_create_global_step,
)

__all__ = ["Optimizer", "GradientDescentOptimizer", "MomentumOptimizer", "AdagradOptimizer",
           "AdadeltaOptimizer", "RMSPropOptimizer", "AdamOptimizer", "FtrlOptimizer",
           "ProximalGradientDescentOptimizer", "ProximalAdagradOptimizer", "AdagradDAOptimizer",
           "Saver",
           "latest_checkpoint", "exponential_decay", "piecewise_constant", "cosine_decay",
           "polynomial_decay", "inverse_time_decay", "natural_exp_decay",
           "ExponentialMovingAverage", "NewCheckpointReader", "init_from_checkpoint",
           "list_variables", "load_checkpoint", "load_variable", "Coordinator", "QueueRunner",
           "add_queue_runner", "start_queue_runners", "SyncReplicasOptimizer", *_DISTRIBUTED,
           "CheckpointSaverHook", "LoggingTensorHook", "MonitoredSession",
           "MonitoredTrainingSession", "NanLossDuringTrainingError", "NanTensorHook", "Scaffold",
           "SessionRunArgs", "SessionRunContext", "SessionRunHook", "SessionRunValues",
           "StepCounterHook", "StopAtStepHook", "SummarySaverHook", "Supervisor", "create_global_step",
           "get_global_step", "get_or_create_global_step"]


# -- queue-based input pipelines (tf.train.batch & co) and tf.train.get_checkpoint_state --
from .checkpoint_state import CheckpointState, get_checkpoint_state  # noqa: E402
from .input_batching import (  # noqa: E402
    batch,
    batch_join,
    maybe_batch,
    maybe_batch_join,
    maybe_shuffle_batch,
    maybe_shuffle_batch_join,
    shuffle_batch,
    shuffle_batch_join,
)
from .input_epochs import limit_epochs  # noqa: E402
from .input_producers import (  # noqa: E402
    input_producer,
    range_input_producer,
    slice_input_producer,
    string_input_producer,
)

__all__ += ["CheckpointState", "get_checkpoint_state", "batch", "batch_join", "maybe_batch",
            "maybe_batch_join", "maybe_shuffle_batch", "maybe_shuffle_batch_join",
            "shuffle_batch", "shuffle_batch_join", "limit_epochs", "input_producer",
            "range_input_producer", "slice_input_producer", "string_input_producer"]

def __dir__() -> list[str]:
    return sorted(__all__)
