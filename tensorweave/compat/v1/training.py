"""Training loops that survive failures: ``tf.train.MonitoredTrainingSession``, its
hooks, and ``tf.train.Supervisor`` (the paper's user-level fault tolerance, section 4.3).

The chief initializes the model, or restores it from the newest checkpoint in its
checkpoint directory, and saves checkpoints as it trains; the other workers wait until
the model is ready. When a task of the cluster dies and comes back empty, a step fails
with `UnavailableError`, `AbortedError` or, once the task is back with uninitialized
variables, `FailedPreconditionError`: the session is then recreated (the chief restores
the last checkpoint, the others wait for it) and the step retried, so a training loop
loses only the steps since that checkpoint.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from ...errors import (
    AbortedError,
    CancelledError,
    FailedPreconditionError,
    InvalidArgumentError,
    OutOfRangeError,
    UnavailableError,
)
from ...frontend.queue_runner import Coordinator, start_queue_runners
from .graph import (
    GLOBAL_VARIABLES,
    Graph,
    Variable,
    get_default_graph,
    global_variables,
    global_variables_initializer,
    local_variables_initializer,
    report_uninitialized_variables,
)
from .session import Session

log = logging.getLogger("tensorweave.training")

GLOBAL_STEP = "global_step"
RECOVERABLE = (UnavailableError, AbortedError)


# ------------------------------------------------------------------ the global step

def get_global_step(graph: Graph | None = None) -> Variable | None:
    """The graph's global step: its ``global_step`` collection, else a global variable
    named ``global_step``; None if there is none."""
    graph = graph or get_default_graph()
    found = graph.get_collection(GLOBAL_STEP)
    if found:
        return found[0]
    return next((v for v in graph.get_collection(GLOBAL_VARIABLES)
                 if v.shared_name == "global_step"), None)


def create_global_step(graph: Graph | None = None) -> Variable:
    """A new int64 ``global_step`` variable (an error if the graph has one)."""
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise InvalidArgumentError("the graph already has a global step")
    with graph.as_default():
        step = Variable(np.zeros((), np.int64), trainable=False, name="global_step",
                        _absolute_name=True)
    graph.add_to_collection(GLOBAL_STEP, step)
    return step


def get_or_create_global_step(graph: Graph | None = None) -> Variable:
    """The graph's global step, made if it has none."""
    return get_global_step(graph) or create_global_step(graph)


# ------------------------------------------------------------------ hooks

class SessionRunArgs:
    """What a hook adds to a `run`: fetches (and feeds)."""

    def __init__(self, fetches: Any, feed_dict: dict | None = None, options: Any = None) -> None:
        self.fetches = fetches
        self.feed_dict = feed_dict
        self.options = options


class SessionRunContext:
    """A run as hooks see it; `request_stop` ends the training loop after this run."""

    def __init__(self, original_args: SessionRunArgs, session: Any) -> None:
        self.original_args = original_args
        self.session = session
        self.stop_requested = False

    def request_stop(self) -> None:
        self.stop_requested = True


class SessionRunValues:
    """The results of a hook's fetches."""

    def __init__(self, results: Any, options: Any = None, run_metadata: Any = None) -> None:
        self.results = results
        self.options = options
        self.run_metadata = run_metadata


class SessionRunHook:
    """Base of training hooks: override what you need."""

    def begin(self) -> None:
        """Before the graph is finalized: build the ops the hook needs."""

    def after_create_session(self, session: Any, coord: Any) -> None:
        """After the session is created (and again after it is recreated)."""

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        return None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        pass

    def end(self, session: Any) -> None:
        pass


class StopAtStepHook(SessionRunHook):
    """Stops training when the global step reaches `last_step` (or after `num_steps`
    more steps than when the session was created)."""

    def __init__(self, num_steps: int | None = None, last_step: int | None = None) -> None:
        if (num_steps is None) == (last_step is None):
            raise InvalidArgumentError("give exactly one of num_steps and last_step")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self) -> None:
        self._step = get_global_step()
        if self._step is None:
            raise InvalidArgumentError("StopAtStepHook needs a global step variable")
        self._read = self._step.read_value()

    def after_create_session(self, session: Any, coord: Any) -> None:
        if self._last_step is None:
            self._last_step = int(session.run(self._read)) + self._num_steps

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._read)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if int(run_values.results) + 1 >= self._last_step:
            # the step just run moved the global step on by (at least) one
            step = int(run_context.session.run(self._read))
            if step >= self._last_step:
                run_context.request_stop()


class _Timer:
    """Fires every `secs` seconds or every `steps` steps."""

    def __init__(self, secs: float | None, steps: int | None) -> None:
        if (secs is None) == (steps is None):
            raise InvalidArgumentError("give exactly one of every_n_secs/save_secs and "
                                       "every_n_steps/save_steps")
        self.secs, self.steps = secs, steps
        self.last_time: float | None = None
        self.last_step: int | None = None

    def due(self, step: int) -> bool:
        if self.last_step is None:
            return True
        if self.steps is not None:
            return step >= self.last_step + self.steps
        return time.monotonic() >= (self.last_time or 0.0) + (self.secs or 0.0)

    def mark(self, step: int) -> None:
        self.last_time, self.last_step = time.monotonic(), step


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint every `save_secs` seconds or `save_steps` steps (the chief)."""

    def __init__(self, checkpoint_dir: str, save_secs: float | None = None,
                 save_steps: int | None = None, saver: Any = None,
                 checkpoint_basename: str = "model.ckpt", scaffold: Any = None) -> None:
        self._dir = checkpoint_dir
        self._timer = _Timer(save_secs, save_steps)
        self._saver = saver or getattr(scaffold, "saver", None)
        self._path = os.path.join(checkpoint_dir, checkpoint_basename)

    def begin(self) -> None:
        os.makedirs(self._dir, exist_ok=True)
        self._step = get_global_step()
        if self._step is None:
            raise InvalidArgumentError("CheckpointSaverHook needs a global step variable")
        self._read = self._step.read_value()
        if self._saver is None:
            from .train import Saver
            self._saver = Saver()

    def after_create_session(self, session: Any, coord: Any) -> None:
        step = int(session.run(self._read))
        if self._timer.last_step is None and latest_checkpoint(self._dir) is None:
            self._save(session, step)  # the initial state, as TensorFlow does
        self._timer.mark(step)

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._read)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        # The step read in the train step may or may not include its own increment (the
        # two are not ordered): an estimate, to skip reading the step when no save can be
        # due; the step read now decides (TensorFlow's double check).
        if self._timer.due(int(run_values.results) + 1):
            step = int(run_context.session.run(self._read))
            if self._timer.due(step):
                self._save(run_context.session, step)

    def end(self, session: Any) -> None:
        step = int(session.run(self._read))
        if step != self._timer.last_step:
            self._save(session, step)

    def _save(self, session: Any, step: int) -> None:
        self._saver.save(session, self._path, global_step=step)
        self._timer.mark(step)
        log.info("saved checkpoint %s-%d", self._path, step)


class StepCounterHook(SessionRunHook):
    """Logs global steps per second every `every_n_steps` steps."""

    def __init__(self, every_n_steps: int = 100, every_n_secs: float | None = None,
                 output_dir: str | None = None, summary_writer: Any = None) -> None:
        self._timer = _Timer(every_n_secs, None if every_n_secs is not None else every_n_steps)

    def begin(self) -> None:
        step = get_global_step()
        self._read = step.read_value() if step is not None else None

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        return SessionRunArgs(self._read) if self._read is not None else None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if self._read is None:
            return
        step = int(run_values.results)
        if self._timer.last_step is None:
            self._timer.mark(step)
        elif self._timer.due(step):
            elapsed = time.monotonic() - (self._timer.last_time or 0.0)
            rate = (step - (self._timer.last_step or 0)) / max(elapsed, 1e-9)
            log.info("global_step/sec: %.3g", rate)
            self._timer.mark(step)


class SummarySaverHook(SessionRunHook):
    """Writes the summaries of `summary_op` (default: ``tf.summary.merge_all()``) every
    `save_steps` steps or `save_secs` seconds to `output_dir` (or `summary_writer`), at
    the global step (the chief; needs the ``tensorweave[tensorboard]`` extra)."""

    def __init__(self, save_steps: int | None = None, save_secs: float | None = None,
                 output_dir: str | None = None, summary_writer: Any = None,
                 scaffold: Any = None, summary_op: Any = None) -> None:
        if (output_dir is None) == (summary_writer is None):
            raise InvalidArgumentError("give exactly one of output_dir and summary_writer")
        self._timer = _Timer(save_secs, save_steps)
        self._output_dir = output_dir
        self._writer = summary_writer
        self._summary_op = summary_op
        self._scaffold = scaffold

    def begin(self) -> None:
        from .summary import FileWriter, merge_all
        if self._writer is None:
            self._writer = FileWriter(self._output_dir)
        if self._summary_op is None:
            self._summary_op = getattr(self._scaffold, "summary_op", None)
            if self._summary_op is None:
                self._summary_op = merge_all()
        self._step = get_global_step()
        if self._step is None:
            raise InvalidArgumentError("SummarySaverHook needs a global step variable")
        self._read = self._step.read_value()
        self._next: int | None = None

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        want = {"step": self._read}
        if self._summary_op is not None and (self._next is None or self._timer.due(self._next)):
            want["summary"] = self._summary_op
        return SessionRunArgs(want)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        # The fetched step is the one the summarized values belong to (read before the
        # train op moved it on).
        step = int(run_values.results["step"])
        if "summary" in run_values.results:
            self._writer.add_summary(run_values.results["summary"], step)
            self._timer.mark(step)
        self._next = step + 1

    def end(self, session: Any) -> None:
        self._writer.flush()


class LoggingTensorHook(SessionRunHook):
    """Logs the values of `tensors` (a dict of name -> tensor, or a list) every
    `every_n_iter` runs or `every_n_secs` seconds."""

    def __init__(self, tensors: Any, every_n_iter: int | None = None,
                 every_n_secs: float | None = None, at_end: bool = False,
                 formatter: Any = None) -> None:
        self._tensors = tensors if isinstance(tensors, dict) else {
            getattr(t, "name", str(t)): t for t in tensors}
        self._timer = _Timer(every_n_secs, every_n_iter) if not at_end else None
        self._formatter = formatter
        self._iter = 0

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        if self._timer is not None and self._timer.due(self._iter):
            return SessionRunArgs(self._tensors)
        return None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if run_values.results is not None:
            values = run_values.results
            text = (self._formatter(values) if self._formatter else
                    ", ".join(f"{k} = {v}" for k, v in values.items()))
            log.info("%s", text)
            self._timer.mark(self._iter)
        self._iter += 1

    def end(self, session: Any) -> None:
        if self._timer is None:
            log.info("%s", session.run(self._tensors))


class NanLossDuringTrainingError(RuntimeError):
    """The loss became NaN (`NanTensorHook`)."""


class NanTensorHook(SessionRunHook):
    """Fails (or stops) training when `loss_tensor` is NaN."""

    def __init__(self, loss_tensor: Any, fail_on_nan_loss: bool = True) -> None:
        self._loss = loss_tensor
        self._fail = fail_on_nan_loss

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._loss)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if np.isnan(run_values.results).any():
            if self._fail:
                raise NanLossDuringTrainingError("NaN loss during training")
            log.warning("NaN loss during training: stopping")
            run_context.request_stop()


def latest_checkpoint(checkpoint_dir: str) -> str | None:
    from .train import latest_checkpoint as latest
    return latest(checkpoint_dir)


# ------------------------------------------------------------------ scaffold and sessions

class Scaffold:
    """The ops that make a model ready: `init_op` (default: initialize every global
    variable), then `init_fn(scaffold, session)` when given (both only when no checkpoint
    was restored: where pretrained weights are loaded), `local_init_op` (local
    variables), the `saver`, and the `summary_op` the summary hook writes (default:
    ``tf.summary.merge_all()``). Fields left None are taken from `copy_from_scaffold`."""

    def __init__(self, init_op: Any = None, init_feed_dict: dict | None = None,
                 init_fn: Any = None, ready_op: Any = None,
                 ready_for_local_init_op: Any = None, local_init_op: Any = None,
                 summary_op: Any = None, saver: Any = None, copy_from_scaffold: Any = None,
                 local_init_feed_dict: dict | None = None) -> None:
        given = {"init_op": init_op, "init_feed_dict": init_feed_dict, "init_fn": init_fn,
                 "ready_op": ready_op, "ready_for_local_init_op": ready_for_local_init_op,
                 "local_init_op": local_init_op, "summary_op": summary_op, "saver": saver,
                 "local_init_feed_dict": local_init_feed_dict}
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold must be a Scaffold")
            for key, value in given.items():
                if value is None:
                    given[key] = getattr(copy_from_scaffold, "_init_fn_given" if
                                         key == "init_fn" else key)
        self.init_op = given["init_op"]
        self.init_feed_dict = given["init_feed_dict"]
        self._init_fn_given = given["init_fn"]
        fn = given["init_fn"]
        # TensorFlow 1 calls it as init_fn(scaffold, session)
        self.init_fn = (lambda sess: fn(self, sess)) if fn is not None else None
        self.ready_op = given["ready_op"]
        self.ready_for_local_init_op = given["ready_for_local_init_op"]
        self.local_init_op = given["local_init_op"]
        self.local_init_feed_dict = given["local_init_feed_dict"]
        self.summary_op = given["summary_op"]
        self.saver = given["saver"]

    def finalize(self, graph: Graph) -> None:
        """Build the default ops in `graph` (called once, before the first session)."""
        with graph.as_default():
            if self.init_op is None:
                self.init_op = global_variables_initializer()
            if self.local_init_op is None:
                self.local_init_op = local_variables_initializer()
            if self.saver is None and graph.get_collection(GLOBAL_VARIABLES):
                from .train import Saver
                self.saver = Saver()
            if self.ready_op is None:  # TensorFlow's default: every variable
                self.ready_op = report_uninitialized_variables()
            if self.ready_for_local_init_op is None:
                self.ready_for_local_init_op = report_uninitialized_variables(
                    global_variables())


class _SessionMaker:
    """Makes a ready session: the chief restores or initializes, the others wait."""

    def __init__(self, master: str, graph: Graph, scaffold: Scaffold, is_chief: bool,
                 checkpoint_dir: str | None, config: Any, recovery_wait_secs: float,
                 max_wait_secs: float) -> None:
        self.master, self.graph, self.scaffold = master, graph, scaffold
        self.is_chief, self.checkpoint_dir, self.config = is_chief, checkpoint_dir, config
        self.recovery_wait_secs, self.max_wait_secs = recovery_wait_secs, max_wait_secs

    def ready(self, sess: Session, op: Any = None) -> bool:
        """Whether `op` (a ``report_uninitialized_variables``; by default the one the
        local init op waits for) reports nothing uninitialized."""
        op = self.scaffold.ready_for_local_init_op if op is None else op
        return op is None or len(sess.run(op)) == 0

    def make(self) -> Session:
        sess = Session(self.master, graph=self.graph, config=self.config)
        try:
            if self.is_chief:
                restored = False
                if self.checkpoint_dir and self.scaffold.saver is not None:
                    path = latest_checkpoint(self.checkpoint_dir)
                    if path is not None:
                        self.scaffold.saver.restore(sess, path)
                        log.info("restored the model from %s", path)
                        restored = True
                if not restored and self.scaffold.init_op is not None:
                    sess.run(self.scaffold.init_op, self.scaffold.init_feed_dict)
                if not restored and self.scaffold.init_fn is not None:
                    self.scaffold.init_fn(sess)
            else:
                self._wait_until_ready(sess)
            if self.scaffold.local_init_op is not None:
                sess.run(self.scaffold.local_init_op, self.scaffold.local_init_feed_dict)
            missing = sess.run(self.scaffold.ready_op) if self.scaffold.ready_op is not None \
                else ()
            if len(missing):
                raise RuntimeError(  # TensorFlow's choice too: no retry can help
                    f"init operations did not make the model ready: variables "
                    f"{[m.decode() for m in missing]} hold no value (neither init_op, the "
                    f"checkpoint nor local_init_op set them)")
        except BaseException:
            sess.close()
            raise
        return sess

    def _wait_until_ready(self, sess: Session) -> None:
        deadline = time.monotonic() + self.max_wait_secs
        while not self.ready(sess):
            if time.monotonic() > deadline:
                raise UnavailableError(f"the model was not ready (initialized by the chief) "
                                       f"within {self.max_wait_secs:g} s")
            time.sleep(min(self.recovery_wait_secs, 1.0))


class MonitoredSession:
    """A session that runs hooks around every `run` and recreates itself (restoring the
    newest checkpoint) when a task of the cluster was lost. Use as a context manager;
    ``while not sess.should_stop(): sess.run(train_op)``."""

    def __init__(self, maker: _SessionMaker, hooks: Iterable[SessionRunHook],
                 stop_grace_period_secs: float = 120.0) -> None:
        self._maker = maker
        self._hooks = list(hooks)
        self._grace = stop_grace_period_secs
        for h in self._hooks:
            with maker.graph.as_default():
                h.begin()
        self._coord = Coordinator()
        self._stop = False
        self._sess: Session | None = None
        self._threads: list[threading.Thread] = []
        self.recoveries = 0
        self._create()

    @property
    def graph(self) -> Graph:
        return self._maker.graph

    def _create(self) -> None:
        delay = 0.1
        deadline = time.monotonic() + self._maker.max_wait_secs
        while True:
            try:
                self._sess = self._maker.make()
                self._coord = Coordinator()
                self._threads = start_queue_runners(self._sess, coord=self._coord)
                for h in self._hooks:
                    h.after_create_session(self._sess, self._coord)
                return
            except (*RECOVERABLE, FailedPreconditionError) as e:
                if time.monotonic() > deadline:
                    raise
                log.warning("creating the session failed (%s); retrying", e)
                time.sleep(delay)
                delay = min(2 * delay, self._maker.recovery_wait_secs)

    def _drop_session(self, raise_thread_error: bool = False) -> None:
        """Close the session and join its threads. A thread's error is raised with
        `raise_thread_error` (closing after training), only logged otherwise (a session
        being replaced: its queue runners died with the lost task)."""
        sess, self._sess = self._sess, None
        if sess is None:
            return
        self._coord.request_stop()
        try:
            sess.close()
        except Exception:  # noqa: BLE001 - the session is being replaced
            pass
        try:
            self._coord.join(self._threads, stop_grace_period_secs=self._grace,
                             ignore_live_threads=True)
        except Exception as e:
            if raise_thread_error:
                raise
            log.warning("a queue runner of the lost session failed: %s", e)

    def run(self, fetches: Any, feed_dict: dict | None = None, options: Any = None,
            run_metadata: Any = None) -> Any:
        """Run `fetches` with the hooks' fetches; on a lost task, recreate the session
        (restoring the newest checkpoint) and run again."""
        while True:
            if self._sess is None:
                self._create()
            try:
                return self._run_coordinated(fetches, feed_dict, options, run_metadata)
            except (*RECOVERABLE, FailedPreconditionError) as e:
                if isinstance(e, FailedPreconditionError) and "uninitialized" not in str(e):
                    raise
                self.recoveries += 1
                log.warning("a task was lost (%s): recreating the session", e)
                self._drop_session()

    def _run_coordinated(self, fetches: Any, feed_dict: dict | None, options: Any,
                         run_metadata: Any) -> Any:
        """One run; when it fails and a thread of the session (a queue runner) reported
        an error to the coordinator, that error is raised instead: the run's own (the
        OutOfRangeError of the queue the failing runner closed) only follows from it, and
        would end the training loop as if the input were exhausted (TensorFlow 1's
        coordinated session does the same)."""
        try:
            return self._run_with_hooks(fetches, feed_dict, options, run_metadata)
        except RECOVERABLE:
            raise
        except Exception:
            self._coord.raise_requested_exception()
            raise

    def _run_with_hooks(self, fetches: Any, feed_dict: dict | None, options: Any,
                        run_metadata: Any = None) -> Any:
        args = SessionRunArgs(fetches, feed_dict, options)
        context = SessionRunContext(args, self._sess)
        extra = [h.before_run(context) for h in self._hooks]
        feeds = _merge_hook_feeds(feed_dict, extra)
        # a hook asking for no fetches (only feeds) gets None back, as in TensorFlow 1
        wanted = [a is not None and a.fetches is not None for a in extra]
        results = self._sess.run([fetches, [a.fetches if w else [] for a, w in zip(extra, wanted)]],
                                 feeds or None, options=options, run_metadata=run_metadata)
        outcome, hook_results = results
        for h, w, r in zip(self._hooks, wanted, hook_results):
            h.after_run(context, SessionRunValues(r if w else None))
        if context.stop_requested:
            self._stop = True
        return outcome

    def should_stop(self) -> bool:
        """Whether the training loop should end. A queue runner's error is raised here
        (TensorFlow 1's coordinated session does the same): the loop must not end as if
        it had finished, which would write the final checkpoint of a failed run."""
        if self._sess is not None:
            self._coord.raise_requested_exception()
        return self._stop or self._coord.should_stop()

    def close(self, _failed: bool = False) -> None:
        """End the hooks (their final checkpoint, summaries...) and release the session.
        When the training ended with an error (`_failed`), the hooks' ``end`` does not run,
        as in TensorFlow 1: the state may be what the error was about (a NaN loss), and
        must not become the newest checkpoint."""
        if self._sess is not None and not _failed:
            for h in self._hooks:
                try:
                    h.end(self._sess)
                except (*RECOVERABLE, CancelledError) as e:
                    log.warning("hook %s could not finish: %s", type(h).__name__, e)
        # a queue runner's error is raised here (TensorFlow 1: the coordinator's join),
        # unless the block already ends with an error of its own
        self._drop_session(raise_thread_error=not _failed)

    def __enter__(self) -> MonitoredSession:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        normal_end = exc_type is None or exc_type in (OutOfRangeError, StopIteration)
        self.close(_failed=not normal_end)
        return exc_type in (OutOfRangeError, StopIteration)


def _merge_hook_feeds(feed_dict: dict | None, hook_args: list) -> dict:
    """The caller's feeds with the hooks'; a tensor fed twice is an error (TensorFlow 1's
    rule), never one value silently replacing the other."""
    feeds = dict(feed_dict or {})
    from_hook: dict[Any, int] = {}
    for a in hook_args:
        for key, value in ((a.feed_dict or {}) if a is not None else {}).items():
            if key in from_hook:
                raise RuntimeError(f"{getattr(key, 'name', key)!s} is fed by two "
                                   f"SessionRunHooks")
            if key in feeds:
                raise RuntimeError(f"{getattr(key, 'name', key)!s} is fed by a SessionRunHook "
                                   f"and the caller")
            from_hook[key] = 1
            feeds[key] = value
    return feeds


def MonitoredTrainingSession(master: str = "", is_chief: bool = True,  # noqa: N802
                             checkpoint_dir: str | None = None, scaffold: Scaffold | None = None,
                             hooks: Iterable[SessionRunHook] | None = None,
                             chief_only_hooks: Iterable[SessionRunHook] | None = None,
                             save_checkpoint_secs: float | None = 600,
                             save_summaries_steps: Any = 100, save_summaries_secs: Any = None,
                             config: Any = None, stop_grace_period_secs: float = 120,
                             log_step_count_steps: int = 100, max_wait_secs: float = 7200,
                             save_checkpoint_steps: int | None = None,
                             recovery_wait_secs: float = 2.0) -> MonitoredSession:
    """TensorFlow 1's ``tf.train.MonitoredTrainingSession`` (see the module docstring)."""
    graph = get_default_graph()
    scaffold = scaffold or Scaffold()
    scaffold.finalize(graph)
    all_hooks = list(hooks or [])
    if is_chief:
        all_hooks += list(chief_only_hooks or [])
        if checkpoint_dir and (save_checkpoint_steps or save_checkpoint_secs):
            all_hooks.append(CheckpointSaverHook(
                checkpoint_dir, save_secs=None if save_checkpoint_steps else save_checkpoint_secs,
                save_steps=save_checkpoint_steps, saver=scaffold.saver))
        if checkpoint_dir and (save_summaries_steps or save_summaries_secs) and \
                get_global_step(graph) is not None and (
                    scaffold.summary_op is not None or graph.get_collection("summaries")):
            all_hooks.append(SummarySaverHook(
                save_steps=None if save_summaries_secs else save_summaries_steps,
                save_secs=save_summaries_secs, output_dir=checkpoint_dir, scaffold=scaffold))
        if log_step_count_steps and get_global_step(graph) is not None:
            all_hooks.append(StepCounterHook(every_n_steps=log_step_count_steps))
    maker = _SessionMaker(master, graph, scaffold, is_chief, checkpoint_dir, config,
                          recovery_wait_secs, max_wait_secs)
    return MonitoredSession(maker, all_hooks, stop_grace_period_secs)


# ------------------------------------------------------------------ Supervisor

class Supervisor:
    """TensorFlow 1's ``tf.train.Supervisor``: the chief initializes or restores the
    model and saves it every `save_model_secs`; the others wait until it is ready."""

    USE_DEFAULT = object()

    def __init__(self, graph: Graph | None = None, ready_op: Any = USE_DEFAULT,
                 is_chief: bool = True, init_op: Any = USE_DEFAULT,
                 init_feed_dict: dict | None = None, local_init_op: Any = USE_DEFAULT,
                 logdir: str | None = None, summary_op: Any = None, saver: Any = USE_DEFAULT,
                 global_step: Any = USE_DEFAULT, save_summaries_secs: Any = None,
                 save_model_secs: float = 600, recovery_wait_secs: float = 30,
                 stop_grace_secs: float = 120, checkpoint_basename: str = "model.ckpt",
                 ready_for_local_init_op: Any = USE_DEFAULT, init_fn: Any = None,
                 **_: Any) -> None:
        self._graph = graph or get_default_graph()
        use = Supervisor.USE_DEFAULT
        self._scaffold = Scaffold(init_op=None if init_op is use else init_op,
                                  init_feed_dict=init_feed_dict,
                                  # TensorFlow 1's Supervisor calls init_fn(session)
                                  init_fn=None if init_fn is None else
                                  (lambda _scaffold, sess: init_fn(sess)),
                                  local_init_op=None if local_init_op is use else local_init_op,
                                  saver=None if saver is use else saver,
                                  ready_op=None if ready_op is use else ready_op,
                                  ready_for_local_init_op=None if ready_for_local_init_op is use
                                  else ready_for_local_init_op)
        self._scaffold.finalize(self._graph)
        # TensorFlow 1's Supervisor: USE_DEFAULT builds the default op, an explicit None
        # means none (no saver, no initializer, no readiness check)
        for attr, given in (("saver", saver), ("init_op", init_op),
                            ("local_init_op", local_init_op), ("ready_op", ready_op),
                            ("ready_for_local_init_op", ready_for_local_init_op)):
            if given is None:
                setattr(self._scaffold, attr, None)
        self._is_chief = is_chief
        self._logdir = logdir
        self._global_step = get_global_step(self._graph) if global_step is use else global_step
        self._save_model_secs = save_model_secs
        self._recovery_wait_secs = recovery_wait_secs
        self._stop_grace_secs = stop_grace_secs
        self._save_path = os.path.join(logdir, checkpoint_basename) if logdir else None
        self._coord = Coordinator()
        self._threads: list[threading.Thread] = []
        self._saving = threading.Event()

    @property
    def is_chief(self) -> bool:
        return self._is_chief

    @property
    def coord(self) -> Coordinator:
        return self._coord

    @property
    def saver(self) -> Any:
        return self._scaffold.saver

    @property
    def global_step(self) -> Any:
        return self._global_step

    @property
    def save_path(self) -> str | None:
        return self._save_path

    def prepare_or_wait_for_session(self, master: str = "", config: Any = None,
                                    wait_for_checkpoint: bool = False,
                                    max_wait_secs: float = 7200,
                                    start_standard_services: bool = True) -> Session:
        """A ready session: the chief restores from `logdir` or runs `init_op`, the others
        wait for the model; then the local init op, the queue runners and (chief) the
        checkpoint thread."""
        maker = _SessionMaker(master, self._graph, self._scaffold, self._is_chief,
                              self._logdir, config, self._recovery_wait_secs, max_wait_secs)
        sess = maker.make()
        if start_standard_services:
            self.start_queue_runners(sess)
            if self._is_chief and self._save_path and self.saver is not None and \
                    self._save_model_secs and self._global_step is not None:
                t = threading.Thread(target=self._save_loop, args=(sess,), daemon=True,
                                     name="Supervisor-checkpoints")
                self._threads.append(t)
                t.start()
        return sess

    def _save_loop(self, sess: Session) -> None:
        os.makedirs(self._logdir or ".", exist_ok=True)
        while not self._coord.wait_for_stop(self._save_model_secs):
            try:
                self.saver.save(sess, self._save_path, global_step=self._global_step)
            except Exception as e:  # noqa: BLE001 - reported; training goes on
                log.warning("Supervisor could not save a checkpoint: %s", e)

    def start_queue_runners(self, sess: Session, queue_runners: Any = None) -> list:
        if queue_runners is None:
            threads = start_queue_runners(sess, coord=self._coord)
        else:
            threads = [t for qr in queue_runners
                       for t in qr.create_threads(sess, coord=self._coord, daemon=True,
                                                  start=True)]
        self._threads.extend(threads)
        return threads

    def should_stop(self) -> bool:
        return self._coord.should_stop()

    def request_stop(self, ex: BaseException | None = None) -> None:
        self._coord.request_stop(ex)

    def stop(self, threads: Any = None, close_summary_writer: bool = True,
             ignore_live_threads: bool = False) -> None:
        """Stop the services and join their threads."""
        self._coord.request_stop()
        self._coord.join(self._threads + list(threads or []),
                         stop_grace_period_secs=self._stop_grace_secs,
                         ignore_live_threads=True)

    def managed_session(self, master: str = "", config: Any = None,
                        start_standard_services: bool = True) -> Any:
        """``with sv.managed_session(target) as sess:`` a prepared session, stopped and
        closed at the end (OutOfRangeError ends the block quietly)."""
        import contextlib

        @contextlib.contextmanager
        def managed() -> Any:
            sess = self.prepare_or_wait_for_session(master, config,
                                                    start_standard_services=start_standard_services)
            try:
                yield sess
            except OutOfRangeError:
                pass
            finally:
                self.stop()
                sess.close()
        return managed()


__all__ = ["CheckpointSaverHook", "LoggingTensorHook", "MonitoredSession",
           "MonitoredTrainingSession", "NanLossDuringTrainingError", "NanTensorHook", "Scaffold",
           "SessionRunArgs", "SessionRunContext", "SessionRunHook", "SessionRunValues",
           "StepCounterHook", "StopAtStepHook", "SummarySaverHook", "Supervisor",
           "create_global_step", "get_global_step", "get_or_create_global_step"]

