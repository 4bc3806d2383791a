"""``tw.keras.callbacks``: hooks into `fit`, `evaluate` and `predict` (tf_keras 2.x):
`History` (what `fit` returns), `ProgbarLogger`, `EarlyStopping`, `ModelCheckpoint`,
`LearningRateScheduler`, `ReduceLROnPlateau`, `TerminateOnNaN`, `CSVLogger` and
`LambdaCallback`."""

from __future__ import annotations

import csv
import logging
import math
import os
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..frontend.variables import Variable
from . import backend

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "EarlyStopping",
           "ModelCheckpoint", "LearningRateScheduler", "ReduceLROnPlateau", "TerminateOnNaN",
           "CSVLogger", "LambdaCallback", "Progbar"]

_log = logging.getLogger("tensorweave.keras")


class Callback:
    """Base class: override the ``on_*`` hooks; `model` and `params` (``verbose``,
    ``epochs``, ``steps``) are set before training starts."""

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict[str, Any] = {}
        self.validation_data = None

    def set_params(self, params: dict[str, Any]) -> None:
        self.params = params

    def set_model(self, model: Any) -> None:
        self.model = model

    def on_train_begin(self, logs=None): ...
    def on_train_end(self, logs=None): ...
    def on_epoch_begin(self, epoch, logs=None): ...
    def on_epoch_end(self, epoch, logs=None): ...
    def on_train_batch_begin(self, batch, logs=None): ...
    def on_train_batch_end(self, batch, logs=None): ...
    def on_test_begin(self, logs=None): ...
    def on_test_end(self, logs=None): ...
    def on_test_batch_begin(self, batch, logs=None): ...
    def on_test_batch_end(self, batch, logs=None): ...
    def on_predict_begin(self, logs=None): ...
    def on_predict_end(self, logs=None): ...
    def on_predict_batch_begin(self, batch, logs=None): ...
    def on_predict_batch_end(self, batch, logs=None): ...

    # Keras' old names of the training batch hooks
    def on_batch_begin(self, batch, logs=None): ...
    def on_batch_end(self, batch, logs=None): ...


class CallbackList:
    """The callbacks of one `fit` / `evaluate` / `predict` call, with a `ProgbarLogger`
    first and a `History` last when asked (as Keras)."""

    def __init__(self, callbacks: Iterable[Callback] | None = None, add_history: bool = False,
                 add_progbar: bool = False, model: Any = None, **params: Any) -> None:
        self.callbacks = list(callbacks or [])
        for cb in self.callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"callbacks must be tw.keras.callbacks.Callback objects, got "
                                f"{type(cb).__name__}")
        if add_progbar and not any(isinstance(c, ProgbarLogger) for c in self.callbacks):
            self.callbacks.insert(0, ProgbarLogger())
        self.history: History | None = next(
            (c for c in self.callbacks if isinstance(c, History)), None)
        if add_history and self.history is None:
            self.history = History()
            self.callbacks.append(self.history)
        if model is not None:
            self.set_model(model)
        if params:
            self.set_params(params)

    def set_model(self, model: Any) -> None:
        for cb in self.callbacks:
            cb.set_model(model)

    def set_params(self, params: dict[str, Any]) -> None:
        for cb in self.callbacks:
            cb.set_params(params)

    def _call(self, hook: str, *args: Any) -> None:
        for cb in self.callbacks:
            getattr(cb, hook)(*args)

    def on_train_begin(self, logs=None): self._call("on_train_begin", logs)
    def on_train_end(self, logs=None): self._call("on_train_end", logs)
    def on_epoch_begin(self, epoch, logs=None): self._call("on_epoch_begin", epoch, logs)
    def on_epoch_end(self, epoch, logs=None): self._call("on_epoch_end", epoch, logs)
    def on_test_begin(self, logs=None): self._call("on_test_begin", logs)
    def on_test_end(self, logs=None): self._call("on_test_end", logs)
    def on_predict_begin(self, logs=None): self._call("on_predict_begin", logs)
    def on_predict_end(self, logs=None): self._call("on_predict_end", logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._call("on_train_batch_begin", batch, logs)
        self._call("on_batch_begin", batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self._call("on_train_batch_end", batch, logs)
        self._call("on_batch_end", batch, logs)

    def on_test_batch_begin(self, batch, logs=None): self._call("on_test_batch_begin", batch, logs)
    def on_test_batch_end(self, batch, logs=None): self._call("on_test_batch_end", batch, logs)

    def on_predict_batch_begin(self, batch, logs=None):
        self._call("on_predict_batch_begin", batch, logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._call("on_predict_batch_end", batch, logs)

    def __iter__(self):
        return iter(self.callbacks)


class History(Callback):
    """Records the logs of each epoch: ``history.history['loss']`` is the list of epoch
    losses; `fit` returns it (and sets ``model.history``)."""

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list[float]] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        self.epoch.append(epoch)
        for k, v in logs.items():
            self.history.setdefault(k, []).append(v)
        if self.model is not None:
            self.model.history = self


def _format_value(v: Any) -> str:
    v = float(v)
    return f"{v:.4f}" if abs(v) > 1e-3 or v == 0 else f"{v:.4e}"


class Progbar:
    """Keras' progress bar: ``12/32 [=====>....] - ETA: 1s - loss: 0.3411``; with
    ``verbose=2`` one line at the end."""

    def __init__(self, target: int | None, width: int = 30, verbose: int = 1,
                 unit_name: str = "step", stream: Any = None) -> None:
        self.target, self.width, self.verbose, self.unit_name = target, width, verbose, unit_name
        self.stream = stream or sys.stdout
        self._start = time.time()
        self._last_len = 0

    def update(self, current: int, values: dict[str, Any] | None = None,
               finalize: bool | None = None) -> None:
        values = values or {}
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        elapsed = time.time() - self._start
        per_step = elapsed / max(current, 1)
        metrics = "".join(f" - {k}: {_format_value(v)}" for k, v in values.items())
        if self.verbose == 1:
            if self.target is not None:
                digits = len(str(self.target))
                done = int(self.width * current / max(self.target, 1))
                bar = "=" * max(done - 1, 0) + (">" if current < self.target else "=") \
                    if done else ""
                bar = f"{current:{digits}d}/{self.target} [{bar:.<{self.width}}]"
            else:
                bar = f"{current:7d}/Unknown"
            if finalize:
                timing = f" - {elapsed:.0f}s {per_step * 1000:.0f}ms/{self.unit_name}"
            else:
                eta = per_step * ((self.target or current) - current)
                timing = f" - ETA: {eta:.0f}s"
            line = bar + timing + metrics
            pad = " " * max(self._last_len - len(line), 0)
            self.stream.write("\r" + line + pad + ("\n" if finalize else ""))
            self._last_len = len(line)
            self.stream.flush()
        elif self.verbose == 2 and finalize:
            count = f"{current}/{self.target}" if self.target else f"{current}"
            self.stream.write(f"{count} - {elapsed:.0f}s{metrics} - {elapsed:.0f}s/epoch - "
                              f"{per_step * 1000:.0f}ms/{self.unit_name}\n")
            self.stream.flush()


class ProgbarLogger(Callback):
    """Prints ``Epoch i/n`` and a progress bar with the logs (``verbose=1``), or one line
    per epoch (``verbose=2``)."""

    def __init__(self, count_mode: str = "steps", stateful_metrics: Any = None) -> None:
        super().__init__()
        self._bar: Progbar | None = None
        self._seen = 0
        self._mode = "train"

    def _verbose(self) -> int:
        v = self.params.get("verbose", 1)
        return 1 if v == "auto" else int(v)

    def on_train_begin(self, logs=None):
        self._mode = "train"

    def on_epoch_begin(self, epoch, logs=None):
        if self._verbose() and self.params.get("epochs", 1) > 1:
            print(f"Epoch {epoch + 1}/{self.params.get('epochs', 1)}",
                  file=sys.stdout, flush=True)
        self._bar = Progbar(self.params.get("steps"), verbose=self._verbose())
        self._seen = 0

    def on_train_batch_end(self, batch, logs=None):
        self._seen = batch + 1
        if self._bar is not None and self._verbose() == 1:
            self._bar.update(self._seen, logs, finalize=False)

    def on_epoch_end(self, epoch, logs=None):
        if self._bar is not None:
            self._bar.update(self._seen, logs, finalize=True)
        self._bar = None

    def on_test_begin(self, logs=None):
        if self.model is not None and getattr(self.model, "_in_fit", False):
            return   # validation inside fit: its logs join the epoch's line
        self._bar = Progbar(self.params.get("steps"), verbose=self._verbose())
        self._seen = 0

    def on_test_batch_end(self, batch, logs=None):
        if self.model is not None and getattr(self.model, "_in_fit", False):
            return
        self._seen = batch + 1
        if self._bar is not None and self._verbose() == 1:
            self._bar.update(self._seen, logs, finalize=False)

    def on_test_end(self, logs=None):
        if self.model is not None and getattr(self.model, "_in_fit", False):
            return
        if self._bar is not None:
            self._bar.update(self._seen, logs, finalize=True)
        self._bar = None

    def on_predict_begin(self, logs=None):
        self._bar = Progbar(self.params.get("steps"), verbose=self._verbose())
        self._seen = 0

    def on_predict_batch_end(self, batch, logs=None):
        self._seen = batch + 1
        if self._bar is not None and self._verbose() == 1:
            self._bar.update(self._seen, None, finalize=False)

    def on_predict_end(self, logs=None):
        if self._bar is not None:
            self._bar.update(self._seen, None, finalize=True)
        self._bar = None


def _monitor_op(monitor: str, mode: str, who: str, acc_rule: Callable[[str], bool]) -> Any:
    if mode not in ("auto", "min", "max"):
        _log.warning("%s mode %s is unknown, fallback to auto mode.", who, mode)
        mode = "auto"
    if mode == "min":
        return np.less
    if mode == "max":
        return np.greater
    return np.greater if acc_rule(monitor) else np.less


class EarlyStopping(Callback):
    """Stop training when `monitor` (default ``val_loss``) has not improved by
    `min_delta` for `patience` epochs; `restore_best_weights` puts back the weights of
    the best epoch when training ends (tf_keras' rules, `baseline` and
    `start_from_epoch` included)."""

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0, patience: int = 0,
                 verbose: int = 0, mode: str = "auto", baseline: float | None = None,
                 restore_best_weights: bool = False, start_from_epoch: int = 0) -> None:
        super().__init__()
        self.monitor = monitor
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.min_delta = abs(min_delta)
        self.wait = 0
        self.stopped_epoch = 0
        self.restore_best_weights = restore_best_weights
        self.best_weights: list[np.ndarray] | None = None
        self.start_from_epoch = start_from_epoch
        self.monitor_op = _monitor_op(
            monitor, mode, "EarlyStopping",
            lambda m: m.endswith("acc") or m.endswith("accuracy") or m.endswith("auc"))
        self.min_delta *= 1 if self.monitor_op is np.greater else -1
        self.best = np.inf if self.monitor_op is np.less else -np.inf
        self.best_epoch = 0

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = np.inf if self.monitor_op is np.less else -np.inf
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch, logs=None):
        current = self.get_monitor_value(logs)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
            self.best_epoch = epoch
        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._is_improvement(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print(f"Restoring model weights from the end of the best epoch: "
                      f"{self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)

    def get_monitor_value(self, logs):
        value = (logs or {}).get(self.monitor)
        if value is None:
            _log.warning("Early stopping conditioned on metric `%s` which is not available. "
                         "Available metrics are: %s", self.monitor, ",".join(logs or {}))
        return value

    def _is_improvement(self, value, reference):
        return self.monitor_op(value - self.min_delta, reference)


class ModelCheckpoint(Callback):
    """Save the model (``model.save``) or its weights (``save_weights_only``) at the end
    of each epoch, or every `save_freq` batches; `filepath` may hold ``{epoch}`` and log
    names (``weights.{epoch:02d}-{val_loss:.2f}``); with `save_best_only`, only when
    `monitor` improved on the best so far. Weights are tensorweave checkpoints."""

    def __init__(self, filepath: str, monitor: str = "val_loss", verbose: int = 0,
                 save_best_only: bool = False, save_weights_only: bool = False,
                 mode: str = "auto", save_freq: str | int = "epoch", options: Any = None,
                 initial_value_threshold: float | None = None, **kwargs: Any) -> None:
        super().__init__()
        if kwargs:
            raise TypeError(f"ModelCheckpoint: unexpected keyword argument(s) "
                            f"{', '.join(sorted(kwargs))}")
        if options is not None:
            raise NotImplementedError("ModelCheckpoint: options are not supported")
        self.filepath = os.fspath(filepath)
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        if save_freq != "epoch" and not isinstance(save_freq, int):
            raise ValueError(f"Unrecognized save_freq: {save_freq}. Expected save_freq are "
                             f'"epoch" or integer')
        self.save_freq = save_freq
        self.monitor_op = _monitor_op(monitor, mode, "ModelCheckpoint",
                                      lambda m: "acc" in m or m.startswith("fmeasure"))
        self.best = initial_value_threshold
        if self.best is None:
            self.best = -np.inf if self.monitor_op is np.greater else np.inf
        self._batches_seen = 0
        self._last_batch = -1
        self._current_epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq == "epoch":
            return
        self._batches_seen += batch + 1 if batch <= self._last_batch else batch - self._last_batch
        self._last_batch = batch
        if self._batches_seen >= self.save_freq:
            self._batches_seen = 0
            self._save(self._current_epoch, batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, None, logs)

    def _file_path(self, epoch: int, batch: int | None, logs: dict[str, Any]) -> str:
        try:
            if batch is None or "batch" in logs:
                return self.filepath.format(epoch=epoch + 1, **logs)
            return self.filepath.format(epoch=epoch + 1, batch=batch + 1, **logs)
        except KeyError as e:
            raise KeyError(f'Failed to format this callback filepath: "{self.filepath}". '
                           f"Reason: {e}") from None

    def _save(self, epoch: int, batch: int | None, logs: dict[str, Any] | None) -> None:
        logs = dict(logs or {})
        path = self._file_path(epoch, batch, logs)
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                _log.warning("Can save best model only with %s available, skipping.",
                             self.monitor)
                return
            if not self.monitor_op(current, self.best):
                if self.verbose > 0:
                    print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from "
                          f"{self.best:.5f}")
                return
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {self.best:.5f} "
                      f"to {current:.5f}, saving model to {path}")
            self.best = current
        elif self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: saving model to {path}")
        if self.save_weights_only:
            self.model.save_weights(path, overwrite=True)
        else:
            self.model.save(path, overwrite=True)


def _learning_rate(model: Any) -> float:
    opt = getattr(model, "optimizer", None)
    if opt is None:
        raise ValueError('The model has no optimizer: compile it first')
    lr = opt.learning_rate
    return float(np.asarray(lr)) if isinstance(lr, (Variable, int, float, np.number)) \
        else float(np.asarray(lr))


def _set_learning_rate(model: Any, value: float) -> None:
    opt = model.optimizer
    if isinstance(opt.learning_rate, Variable):
        backend.set_value(opt.learning_rate, value)
    elif isinstance(opt.learning_rate, (int, float)):
        opt.learning_rate = float(value)
    else:
        raise TypeError(f"the optimizer's learning rate is {type(opt.learning_rate).__name__}"
                        f", which a callback cannot set (a schedule?)")


class LearningRateScheduler(Callback):
    """At the start of each epoch, set the learning rate to ``schedule(epoch, lr)`` (or
    ``schedule(epoch)``); the epoch's logs get ``lr``."""

    def __init__(self, schedule: Callable[..., float], verbose: int = 0) -> None:
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None):
        lr = _learning_rate(self.model)
        try:
            lr = self.schedule(epoch, lr)
        except TypeError:   # an old-style schedule of the epoch only
            lr = self.schedule(epoch)
        lr = float(np.asarray(lr))
        if not isinstance(lr, float) or math.isnan(lr):
            raise ValueError(f'The output of the "schedule" function should be a float. '
                             f"Got: {lr}")
        _set_learning_rate(self.model, lr)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to "
                  f"{lr}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = _learning_rate(self.model)


class ReduceLROnPlateau(Callback):
    """Multiply the learning rate by `factor` when `monitor` has not improved for
    `patience` epochs (not below `min_lr`; `cooldown` epochs of rest after each cut)."""

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1, patience: int = 10,
                 verbose: int = 0, mode: str = "auto", min_delta: float = 1e-4,
                 cooldown: int = 0, min_lr: float = 0, **kwargs: Any) -> None:
        super().__init__()
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor >= 1.0. Got "
                             f"{factor}")
        if "epsilon" in kwargs:
            min_delta = kwargs.pop("epsilon")
        if kwargs:
            raise TypeError(f"ReduceLROnPlateau: unexpected keyword argument(s) "
                            f"{', '.join(sorted(kwargs))}")
        self.monitor, self.factor, self.min_lr = monitor, factor, min_lr
        self.min_delta, self.patience, self.verbose = min_delta, patience, verbose
        self.cooldown, self.mode = cooldown, mode
        self._reset()

    def _reset(self) -> None:
        if self.mode not in ("auto", "min", "max"):
            self.mode = "auto"
        if self.mode == "min" or (self.mode == "auto" and "acc" not in self.monitor):
            self.monitor_op = lambda a, b: np.less(a, b - self.min_delta)
            self.best = np.inf
        else:
            self.monitor_op = lambda a, b: np.greater(a, b + self.min_delta)
            self.best = -np.inf
        self.cooldown_counter = 0
        self.wait = 0

    def on_train_begin(self, logs=None):
        self._reset()

    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        logs["lr"] = _learning_rate(self.model)
        current = logs.get(self.monitor)
        if current is None:
            _log.warning("Learning rate reduction is conditioned on metric `%s` which is not "
                         "available. Available metrics are: %s", self.monitor, ",".join(logs))
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self.monitor_op(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = _learning_rate(self.model)
                if old_lr > np.float32(self.min_lr):
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    _set_learning_rate(self.model, new_lr)
                    if self.verbose > 0:
                        print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning "
                              f"rate to {new_lr}.")
                    self.cooldown_counter = self.cooldown
                    self.wait = 0


class TerminateOnNaN(Callback):
    """Stop training when a batch's loss is NaN or infinite."""

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


class CSVLogger(Callback):
    """Write each epoch's logs as a row of a CSV file (``epoch`` first)."""

    def __init__(self, filename: str, separator: str = ",", append: bool = False) -> None:
        super().__init__()
        self.filename, self.sep, self.append = os.fspath(filename), separator, append
        self._file: Any = None
        self._writer: Any = None
        self._keys: list[str] | None = None

    def on_train_begin(self, logs=None):
        header_written = self.append and os.path.exists(self.filename) and \
            os.path.getsize(self.filename) > 0
        self._file = open(self.filename, "a" if self.append else "w", newline="")
        self._keys = None
        self._append_header = not header_written

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self._keys is None:
            self._keys = sorted(logs)
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch", *self._keys],
                                          delimiter=self.sep)
            if self._append_header:
                self._writer.writeheader()
        row = {"epoch": epoch, **{k: logs.get(k, "NA") for k in self._keys}}
        self._writer.writerow(row)
        self._file.flush()

    def on_train_end(self, logs=None):
        if self._file is not None:
            self._file.close()
            self._file = None


class LambdaCallback(Callback):
    """A callback from functions: ``LambdaCallback(on_epoch_end=lambda epoch, logs: ...)``
    (any ``on_*`` hook by name)."""

    def __init__(self, **hooks: Callable[..., Any]) -> None:
        super().__init__()
        for name, fn in hooks.items():
            if not name.startswith("on_") or not hasattr(Callback, name):
                raise TypeError(f"LambdaCallback: unknown hook {name!r}")
            setattr(self, name, fn)
