"""Synchronous replication with backup workers: ``tf.ConditionalAccumulator`` and
``tf.train.SyncReplicasOptimizer`` (the paper's section 4.4), in graph mode.

Each worker computes gradients at its ``local_step`` and applies them to one accumulator
per variable (on the variable's PS task); a gradient older than the accumulator's step
is dropped. The chief's queue runner takes the mean of the first `replicas_to_aggregate`
gradients of each accumulator, applies them once with the wrapped optimizer (which
advances ``global_step``), and puts ``total_num_replicas`` tokens holding the new global
step into the token queue; a worker's train op ends by dequeuing a token into its
``local_step``, so queues act as the barrier. With fewer to aggregate than replicas, the
slowest gradients of a step arrive after it is taken and are dropped: backup workers.

With fewer than `replicas_to_aggregate` workers alive (or, for a worker, with the chief
gone) training stops with a `FailedPreconditionError` naming the unreachable tasks,
on every replica, instead of aggregating fewer replicas than asked or hanging: see
`replica_watchdog`. The watchdog runs in every replica's session-run hook, and in the
chief's queue runner for the classic API.

Classic use (``tf.train.Supervisor`` style)::

    opt = tf.train.SyncReplicasOptimizer(tf.train.AdamOptimizer(0.01),
                                         replicas_to_aggregate=2, total_num_replicas=3)
    train_op = opt.minimize(loss, global_step=global_step)
    if is_chief:
        sess.run([opt.chief_init_op, opt.get_init_tokens_op()])
        opt.get_chief_queue_runner().create_threads(sess, start=True, daemon=True)
    sess.run(opt.local_step_init_op)
    while ...: sess.run(train_op, feed_dict=...)
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ...compiler.dtypes import as_dtype
from ...errors import FailedPreconditionError, InvalidArgumentError
from ...frontend.building import apply_op, apply_op1, convert_to_tensor
from ...frontend.context import colocate_with, control_dependencies
from ...frontend.context import device as device_scope
from ...frontend.grouping import group, no_op
from ...frontend.indexed_slices import IndexedSlices
from ...frontend.queue_runner import Coordinator, QueueRunner
from .graph import (
    LOCAL_VARIABLES,
    Variable,
    get_default_graph,
    global_variables,
    placeholder,
    report_uninitialized_variables,
)
from .replica_watchdog import ReplicaWatchdog

TOKEN_QUEUE_CAPACITY = 1 << 30  # TensorFlow's token queue is unbounded


class ConditionalAccumulator:
    """Accumulates gradients of one dtype and shape; a node of the default graph, its
    state in the runtime of the task it is placed on (TensorFlow's
    ``tf.ConditionalAccumulator``)."""

    _sparse = False

    def __init__(self, dtype: Any, shape: Any = None, shared_name: str | None = None,
                 name: str = "conditional_accumulator", reduction_type: str = "MEAN") -> None:
        graph = get_default_graph()
        self.dtype = as_dtype(dtype)
        self.shape = tuple(None if d in (None, -1) else int(d) for d in (shape or ()))
        self.graph = graph
        with graph.as_default():
            self.name = shared_name or graph.unique_variable_name(name)
            self._handle = apply_op("AccumulatorHandle", [], {
                "shared_name": self.name, "dtype": self.dtype, "shape": self.shape,
                "reduction_type": reduction_type, "sparse": self._sparse}, name=name)[0]

    @property
    def accumulator_ref(self) -> Any:
        return self._handle

    def apply_grad(self, grad: Any, local_step: Any = 0, name: str | None = None) -> Any:
        """An op adding `grad`, computed at `local_step` (dropped when stale)."""
        with self.graph.as_default():
            step = convert_to_tensor(local_step)
            apply_op("AccumulatorApplyGradient", [self._handle, step, convert_to_tensor(grad)],
                     name=name or "AccumulatorApplyGradient")
            return self.graph.ir.nodes[-1]

    def take_grad(self, num_required: Any, name: str | None = None) -> Any:
        """The mean of `num_required` fresh gradients (blocks until they arrived)."""
        with self.graph.as_default():
            return apply_op1("AccumulatorTakeGradient",
                             [self._handle, convert_to_tensor(num_required, dtype_hint="int32")],
                             {"dtype": self.dtype, "shape": self.shape},
                             name=name or "AccumulatorTakeGradient")

    def set_global_step(self, new_global_step: Any, name: str | None = None) -> Any:
        """An op making `new_global_step` the accumulator's step."""
        with self.graph.as_default():
            apply_op("AccumulatorSetGlobalStep", [self._handle, convert_to_tensor(new_global_step)],
                     name=name or "AccumulatorSetGlobalStep")
            return self.graph.ir.nodes[-1]

    def num_accumulated(self, name: str | None = None) -> Any:
        with self.graph.as_default():
            return apply_op1("AccumulatorNumAccumulated", [self._handle],
                             name=name or "AccumulatorNumAccumulated")


class SparseConditionalAccumulator(ConditionalAccumulator):
    """Accumulates sparse gradients (`tw.IndexedSlices`): only the touched rows travel to
    it and come out of it (TensorFlow's ``tf.SparseConditionalAccumulator``)."""

    _sparse = True

    def apply_indexed_slices_grad(self, grad: Any, local_step: Any = 0,
                                  name: str | None = None) -> Any:
        """An op adding the IndexedSlices `grad`, computed at `local_step`."""
        with self.graph.as_default():
            apply_op("SparseAccumulatorApplyGradient",
                     [self._handle, convert_to_tensor(local_step),
                      convert_to_tensor(grad.indices), convert_to_tensor(grad.values)],
                     name=name or "SparseAccumulatorApplyGradient")
            return self.graph.ir.nodes[-1]

    apply_grad = apply_indexed_slices_grad

    def take_indexed_slices_grad(self, num_required: Any, name: str | None = None) -> Any:
        """An IndexedSlices: the rows `num_required` fresh gradients touched, averaged."""
        with self.graph.as_default():
            indices, values = apply_op(
                "SparseAccumulatorTakeGradient",
                [self._handle, convert_to_tensor(num_required, dtype_hint="int32")],
                {"dtype": self.dtype, "shape": self.shape},
                name=name or "SparseAccumulatorTakeGradient")
        return IndexedSlices(values, indices, self.shape)

    take_grad = take_indexed_slices_grad


class SyncReplicasOptimizer:
    """Wraps an optimizer so that `replicas_to_aggregate` replicas' gradients are averaged
    and applied once per global step (see the module docstring)."""

    def __init__(self, opt: Any, replicas_to_aggregate: int, total_num_replicas: int | None = None,
                 variable_averages: Any = None, variables_to_average: Any = None,
                 use_locking: bool = False, name: str = "sync_replicas", *,
                 dead_worker_timeout_secs: float = 10.0) -> None:
        if variable_averages is not None:
            raise InvalidArgumentError("variable_averages is not supported")
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        if replicas_to_aggregate < 1 or total_num_replicas < 1:
            raise InvalidArgumentError(f"replicas_to_aggregate and total_num_replicas must be "
                                       f">= 1, got {replicas_to_aggregate}, {total_num_replicas}")
        self._opt = opt
        self._replicas_to_aggregate = int(replicas_to_aggregate)
        self._total_num_replicas = int(total_num_replicas)
        self._tokens_per_step = max(self._total_num_replicas, self._replicas_to_aggregate)
        self._name = name
        self._dead_worker_timeout = float(dead_worker_timeout_secs)
        self._gradients_applied = False
        self._global_step: Any = None
        self._sync_token_queue: Any = None
        self._chief_queue_runner: QueueRunner | None = None
        self._accumulators: list[ConditionalAccumulator] = []
        self.local_step_init_op: Any = None
        self.chief_init_op: Any = None
        self.ready_for_local_init_op: Any = None

    def compute_gradients(self, *args: Any, **kwargs: Any) -> Any:
        """The wrapped optimizer's gradients."""
        return self._opt.compute_gradients(*args, **kwargs)

    def minimize(self, loss: Any, global_step: Any = None, var_list: Any = None,
                 gate_gradients: int = 1, aggregation_method: Any = None,
                 colocate_gradients_with_ops: bool = False, name: str | None = None,
                 grad_loss: Any = None) -> Any:
        """TensorFlow 1's signature: the wrapped optimizer's gradients, aggregated."""
        return self.apply_gradients(self.compute_gradients(loss, var_list=var_list,
                                                           grad_loss=grad_loss),
                                    global_step=global_step, name=name)

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None,
                        name: str | None = None) -> Any:
        """The workers' train op: apply gradients to the accumulators, then wait for a
        token of the next step. Also builds the chief's update (its queue runner)."""
        if global_step is None:
            raise InvalidArgumentError("SyncReplicasOptimizer needs a global_step")
        if self._gradients_applied:
            raise InvalidArgumentError("apply_gradients can be called once per "
                                       "SyncReplicasOptimizer")
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise InvalidArgumentError("no gradients provided for any variable")
        self._gradients_applied = True
        self._global_step = global_step
        graph = self._graph = get_default_graph()
        with graph.as_default():
            step_dtype = global_step.dtype
            # The local step lives on this worker, wherever device functions put
            # variables: next to an anchor op placed as any other op of the worker.
            anchor = no_op(name=f"{self._name}/local_anchor")
            with colocate_with(anchor), device_scope(anchor.device):
                self._local_step = Variable(np.zeros((), step_dtype.np), trainable=False,
                                            collections=[LOCAL_VARIABLES],
                                            name=f"{self._name}/local_step")
                local_step = self._local_step.read_value()
            self.local_step_init_op = self._local_step.assign(global_step.read_value())
            train_ops, aggregated = [], []
            for grad, var in pairs:
                with colocate_with(var), device_scope(var.op.device):
                    # sparse gradients (an embedding's) stay sparse on the way to the PS
                    kind = (SparseConditionalAccumulator if isinstance(grad, IndexedSlices)
                            else ConditionalAccumulator)
                    acc = kind(grad.dtype, var.shape,
                               shared_name=f"{var.shared_name}/grad_accum",
                               name=f"{self._name}/grad_accum")
                    train_ops.append(acc.apply_grad(grad, local_step=local_step))
                    aggregated.append(acc.take_grad(self._replicas_to_aggregate))
                self._accumulators.append(acc)
            with colocate_with(global_step), device_scope(global_step.op.device):
                self._sync_token_queue = _token_queue(step_dtype, f"{self._name}/token_q")
                token_queue = self._sync_token_queue
            with control_dependencies(train_ops):
                token = token_queue.dequeue()
            train_op = self._local_step.assign(token)
            # The chief: apply the aggregated gradients once, then release everyone.
            update_op = self._opt.apply_gradients(list(zip(aggregated, [v for _, v in pairs])),
                                                  global_step=global_step)
            with control_dependencies([update_op]), colocate_with(global_step):
                tokens = _fill(self._tokens_per_step, global_step.read_value())
                sync_op = token_queue.enqueue_many([tokens])
            # how a replica that sees too few live workers releases all of them
            self._failure_message = placeholder("uint8", [None],
                                                name=f"{self._name}/failure_message")
            with colocate_with(global_step):
                self._fail_op = token_queue.close_with_error(self._failure_message)
            # Its close and cancel ops leave the token queue open, as TensorFlow's chief
            # queue runner closes only a dummy queue: closing the token queue when the
            # runner stops (a failed step, the coordinator's stop) would end the workers
            # waiting for a token with OutOfRangeError, which a MonitoredTrainingSession
            # takes for the end of its input, as if training had finished.
            self._chief_queue_runner = _ChiefQueueRunner(
                self, token_queue, [sync_op], no_op(name=f"{self._name}/chief_qr_close"),
                no_op(name=f"{self._name}/chief_qr_cancel"))
            with colocate_with(global_step):
                self.chief_init_op = group(*[a.set_global_step(global_step.read_value())
                                             for a in self._accumulators])
            # TensorFlow's: the workers' local init (local_step from global_step) waits
            # until every global variable holds a value
            self.ready_for_local_init_op = report_uninitialized_variables(
                global_variables())
        return train_op

    def get_chief_queue_runner(self) -> QueueRunner:
        """The queue runner the chief starts: it aggregates, applies and hands out
        tokens, step after step."""
        if self._chief_queue_runner is None:
            raise InvalidArgumentError("call apply_gradients (or minimize) before "
                                       "get_chief_queue_runner")
        return self._chief_queue_runner

    def get_init_tokens_op(self, num_tokens: int = -1) -> Any:
        """An op putting `num_tokens` tokens (default: replicas_to_aggregate) in the token
        queue, so the workers can run their first step."""
        if self._sync_token_queue is None:
            raise InvalidArgumentError("call apply_gradients (or minimize) before "
                                       "get_init_tokens_op")
        needed = self._replicas_to_aggregate - self._total_num_replicas  # TensorFlow's rule
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < needed:
            raise InvalidArgumentError(f"too few tokens to finish the first step: "
                                       f"{num_tokens} (given) vs {needed} (needed)")
        with self._graph.as_default(), colocate_with(self._global_step):
            # The first tokens start the protocol afresh: the token queue outlives the
            # chief on its PS, holding stale tokens, or failed by a watchdog that stopped
            # the replicas (which would fail a restarted chief's tokens forever).
            _, reset = self._sync_token_queue._apply("QueueReset", [], {},
                                                     f"{self._name}/token_q_reset")
            if num_tokens <= 0:
                return reset
            with control_dependencies([reset]):
                return self._sync_token_queue.enqueue_many(
                    [_fill(num_tokens, self._global_step.read_value())])

    def make_session_run_hook(self, is_chief: bool, num_tokens: int = -1) -> Any:
        """A hook doing the chief's and workers' setup when a session is created."""
        return _SyncReplicasHook(self, is_chief, num_tokens)

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args: Any, **kwargs: Any) -> Any:
        return self._opt.get_slot_names(*args, **kwargs)

    @property
    def accumulators(self) -> list[ConditionalAccumulator]:
        return list(self._accumulators)


    def _watchdog(self, session: Any, is_chief: bool,
                  coord: Coordinator | None) -> ReplicaWatchdog | None:
        """A watchdog of the workers of `session`'s cluster (None for a local session)."""
        cluster = getattr(session, "_cluster", None)
        if cluster is None:
            return None

        def fail(message: str) -> None:
            try:  # release every replica blocked on a token, on whatever task it runs
                session.run(self._fail_op, feed_dict={
                    self._failure_message: np.frombuffer(message.encode("utf-8"), np.uint8)})
            except Exception:  # noqa: BLE001 - the PS may be what is gone; the error stands
                pass
            if coord is not None:
                coord.request_stop(FailedPreconditionError(message))

        return ReplicaWatchdog(cluster, replicas_to_aggregate=self._replicas_to_aggregate,
                               is_chief=is_chief, on_failure=fail,
                               timeout_secs=self._dead_worker_timeout, name=self._name,
                               active=lambda: not getattr(session, "_closed", False))


class _ChiefQueueRunner(QueueRunner):
    """The chief's queue runner: aggregates, applies and hands out tokens, and watches
    the workers (`replica_watchdog`) while its threads run."""

    def __init__(self, opt: SyncReplicasOptimizer, *args: Any) -> None:
        super().__init__(*args)
        self._opt = opt

    def create_threads(self, sess: Any = None, coord: Coordinator | None = None,
                       daemon: bool = False, start: bool = False) -> list:
        threads = super().create_threads(sess, coord=coord, daemon=daemon, start=start)
        watchdog = self._opt._watchdog(sess, True, coord) if threads else None
        if watchdog is not None:
            thread = watchdog.start() if start else None
            if coord is not None:
                threading.Thread(target=lambda: (coord.wait_for_stop(), watchdog.stop()),
                                 daemon=True).start()
            if thread is not None:
                threads.append(thread)
        return threads


class _SyncReplicasHook:
    """``after_create_session``: the chief initializes the accumulators, puts the first
    tokens in and starts its queue runner; every worker sets its local step."""

    def __init__(self, opt: SyncReplicasOptimizer, is_chief: bool, num_tokens: int) -> None:
        self._opt = opt
        self._is_chief = is_chief
        self._num_tokens = num_tokens
        self._init_tokens = None
        self._watchdog: ReplicaWatchdog | None = None

    def begin(self) -> None:
        if self._is_chief:
            self._init_tokens = self._opt.get_init_tokens_op(self._num_tokens)

    def after_create_session(self, session: Any, coord: Any = None) -> None:
        if self._is_chief:
            if self._init_tokens is None:
                self.begin()
            session.run(self._opt.chief_init_op)
            session.run(self._init_tokens)
            self._opt.get_chief_queue_runner().create_threads(session, coord=coord,
                                                              daemon=True, start=True)
        else:
            # the chief's queue runner watches on the chief; every other worker watches
            # too, so that a dead chief is an error instead of a wait for tokens forever
            # (a recreated session gets a new watchdog: the old one watched the old one)
            self.end(session)
            self._watchdog = self._opt._watchdog(session, False, coord)
            if self._watchdog is not None:
                self._watchdog.start()
        session.run(self._opt.local_step_init_op)

    def end(self, session: Any) -> None:
        if self._watchdog is not None:
            self._watchdog.stop()
            self._watchdog = None


def _token_queue(dtype: Any, name: str) -> Any:
    from . import FIFOQueue
    return FIFOQueue(TOKEN_QUEUE_CAPACITY, [dtype], shapes=[[]], shared_name=name, name=name)


def _fill(n: int, value: Any) -> Any:
    from ...frontend.ops.array import fill
    return fill([n], value)


__all__ = ["ConditionalAccumulator", "SparseConditionalAccumulator", "SyncReplicasOptimizer"]
