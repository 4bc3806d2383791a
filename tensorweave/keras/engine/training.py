"""`Model`: a layer with Keras' training loop (tf_keras 2.x semantics).

``compile`` takes the optimizer, loss and metrics; ``fit`` runs the training step of
each batch as one ``tw.compile``d function (traced once per input signature, the batch
dimension left free), which computes the loss, applies the optimizer's updates to the
variables in place and updates the metrics' variables; ``evaluate`` and ``predict`` run
compiled test and predict steps. ``compile(run_eagerly=True)`` runs the same steps op
by op instead (for debugging). Override `train_step` / `test_step` / `predict_step` to
change what a step does, as in Keras."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

import tensorweave as tw

from ...compiler.dtypes import as_dtype
from ...frontend import nest
from ...frontend.function import TensorSpec
from .. import callbacks as callbacks_mod
from .. import optimizers as optimizers_mod
from .base_layer import Layer, dedup_weights
from .compile_utils import LossesContainer, MetricsContainer
from .data_adapter import (
    DataHandler,
    is_array_data,
    train_validation_split,
    unpack_x_y_sample_weight,
)

__all__ = ["Model", "flatten_metrics_in_order"]


def flatten_metrics_in_order(logs: dict[str, Any], metrics_names: list[str]) -> Any:
    """`logs` as a list in the order of `metrics_names` (then the others, sorted); one
    value alone is returned as it is."""
    results = [logs[name] for name in metrics_names if name in logs]
    results += [logs[k] for k in sorted(logs) if k not in metrics_names]
    return results[0] if len(results) == 1 else results


def _python_logs(logs: Any) -> dict[str, float]:
    """A step's results as Python floats (Keras' ``sync_to_numpy_or_python_type``)."""
    if not isinstance(logs, dict):
        raise TypeError(f"a train_step / test_step must return a dict of metric results, "
                        f"got {type(logs).__name__}")
    return {k: float(np.asarray(v)) if np.ndim(v) == 0 else np.asarray(v)
            for k, v in logs.items()}


class _CompileState:
    """What `Model.compile` set, kept out of the `tw.Module` attribute walk (so a
    weights checkpoint holds weights only)."""

    __slots__ = ("optimizer", "loss", "metrics", "compiled_loss", "compiled_metrics",
                 "run_eagerly", "target", "trainable_state", "config")

    def __init__(self, **kwargs: Any) -> None:
        for k in self.__slots__:
            setattr(self, k, kwargs.get(k))


class _StepFunctions:
    """The compiled `train_step` / `test_step` / `predict_step` of a model: one
    ``tw.compile``d function per structure and element type of the batches, each with
    an input signature whose batch dimension is free (one trace for every batch size)."""

    __slots__ = ("model", "kind", "functions")

    def __init__(self, model: Model, kind: str) -> None:
        self.model = model
        self.kind = kind
        self.functions: dict[Any, Any] = {}

    def _step(self) -> Any:
        return {"train": self.model.train_step, "test": self.model.test_step,
                "predict": self.model.predict_step}[self.kind]

    def __call__(self, data: Any) -> Any:
        leaves, tree = nest.flatten(data, expand_composites=False)
        state = self.model._compile_state
        if state is not None and state.run_eagerly:
            tensors = [None if x is None else tw.constant(x) for x in leaves]
            out = self._step()(nest.unflatten(tree, tensors))
            return nest.map_structure(np.asarray, out)
        present = tuple(i for i, x in enumerate(leaves) if x is not None)
        arrays = [leaves[i] for i in present]
        specs = tuple(TensorSpec((None,) + tuple(a.shape[1:]), as_dtype(a.dtype))
                      for a in arrays)
        key = (tree, present, len(leaves), specs)
        fn = self.functions.get(key)
        if fn is None:
            step, n = self._step(), len(leaves)

            def flat_step(*xs: Any) -> Any:
                full: list[Any] = [None] * n
                for i, x in zip(present, xs):
                    full[i] = x
                return step(nest.unflatten(tree, full))

            target = state.target if state is not None else None
            fn = tw.compile(flat_step, input_signature=list(specs), target=target,
                            name=f"{self.model.name}_{self.kind}_function")
            self.functions[key] = fn
        return fn(*arrays)


class Model(Layer):
    """A layer that trains: ``model.compile(optimizer, loss, metrics)`` then ``fit``,
    ``evaluate``, ``predict`` (``tf.keras.Model``).

    Build one with the functional API, ``Model(inputs, outputs)``, as a `Sequential`
    stack, or by subclassing: create layers in ``__init__`` and use them in
    ``call(inputs, training=None)``."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Model:
        if cls is Model and (args or "inputs" in kwargs or "outputs" in kwargs):
            from .functional import Functional
            return Layer.__new__(Functional)
        return Layer.__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args:
            raise TypeError(f"{type(self).__name__}() takes keyword arguments only (name, "
                            f"trainable, dtype); a functional model is Model(inputs, outputs)")
        allowed = {"name", "trainable", "dtype", "dynamic", "autocast"}
        unknown = sorted(set(kwargs) - allowed)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) "
                            f"{', '.join(unknown)}")
        super().__init__(**kwargs)
        self._init_model_state()

    def _init_model_state(self) -> None:
        self.__dict__["_compile_state"] = None
        self.__dict__["_steps"] = {}
        self.stop_training = False
        self.history = None
        self._in_fit = False

    # -- compile ------------------------------------------------------------------------------
    def compile(self, optimizer: Any = "rmsprop", loss: Any = None, metrics: Any = None,
                loss_weights: Any = None, weighted_metrics: Any = None,
                run_eagerly: bool | None = None, steps_per_execution: int | None = None,
                jit_compile: Any = None, pss_evaluation_shards: int = 0,
                target: str | None = None, **kwargs: Any) -> None:
        """Set the optimizer (a name such as ``'adam'``, or an optimizer object), the
        loss (a name, function or `tw.keras.losses.Loss`; per output: a list or dict),
        the metrics (``['accuracy', ...]``) for training. `run_eagerly` runs steps op by
        op; `target` (tensorweave's) names the ``tw.compile`` target of the compiled
        steps (default: the library's)."""
        if kwargs:
            raise TypeError(f"compile: unexpected keyword argument(s) "
                            f"{', '.join(sorted(kwargs))}")
        if steps_per_execution not in (None, 1):
            raise NotImplementedError("compile: steps_per_execution other than 1 is not "
                                      "supported by tw.keras (each step is one compiled call)")
        del jit_compile, pss_evaluation_shards  # every step is compiled by tw.compile
        names = self._output_names_or_none()
        self.__dict__["_compile_state"] = _CompileState(
            optimizer=optimizers_mod.get(optimizer), loss=loss, metrics=metrics,
            compiled_loss=LossesContainer(loss, loss_weights, names),
            compiled_metrics=MetricsContainer(metrics, weighted_metrics, names),
            run_eagerly=bool(run_eagerly) if run_eagerly is not None else self.dynamic,
            target=target,
            trainable_state={id(layer): (layer, layer.trainable)
                             for layer in self._flatten_layers()},
            config={"loss": loss, "metrics": metrics, "loss_weights": loss_weights,
                    "weighted_metrics": weighted_metrics, "optimizer": optimizer})
        self.__dict__["_steps"] = {}

    def _assert_compile_was_called(self) -> None:
        if self._compile_state is None:
            raise RuntimeError("You must compile your model before training/testing. Use "
                               "`model.compile(optimizer, loss)`.")

    @property
    def optimizer(self) -> Any:
        """The optimizer `compile` set (None before)."""
        state = self._compile_state
        return None if state is None else state.optimizer

    @optimizer.setter
    def optimizer(self, value: Any) -> None:
        self._assert_compile_was_called()
        self._compile_state.optimizer = optimizers_mod.get(value)
        self.__dict__["_steps"] = {}

    @property
    def compiled_loss(self) -> LossesContainer | None:
        state = self._compile_state
        return None if state is None else state.compiled_loss

    @property
    def compiled_metrics(self) -> MetricsContainer | None:
        state = self._compile_state
        return None if state is None else state.compiled_metrics

    @property
    def loss(self) -> Any:
        state = self._compile_state
        return None if state is None else state.loss

    @property
    def run_eagerly(self) -> bool:
        state = self._compile_state
        return bool(state and state.run_eagerly)

    @run_eagerly.setter
    def run_eagerly(self, value: bool) -> None:
        self._assert_compile_was_called()
        self._compile_state.run_eagerly = bool(value)

    @property
    def metrics(self) -> list[Any]:
        """The loss mean and the compiled metrics (after the first step), then the
        metrics set as attributes of the model or its layers."""
        state = self._compile_state
        out = [] if state is None else (state.compiled_loss.metrics +
                                        state.compiled_metrics.metrics)
        from ..metrics import Metric  # (metrics imports this package's base layer)
        for layer in self._flatten_layers():   # metrics set as attributes (Keras')
            out.extend(m for m in layer._sublayers()
                       if isinstance(m, Metric) and all(m is not o for o in out))
        return out

    @property
    def metrics_names(self) -> list[str]:
        """The names of `metrics`: the keys of `fit`'s logs."""
        return [m.name for m in self.metrics]

    def reset_metrics(self) -> None:
        """Set every metric's state back to zero."""
        for m in self.metrics:
            m.reset_state()

    def _output_names_or_none(self) -> list[str] | None:
        return None

    def _output_names_for(self, y_pred: Any) -> list[str]:
        names = self._output_names_or_none()
        if names is not None:
            return names
        n = len(nest.flatten(y_pred)[0])
        if isinstance(y_pred, dict):
            return list(y_pred)
        return [f"output_{i + 1}" for i in range(n)]

    # -- steps --------------------------------------------------------------------------------
    def compute_loss(self, x: Any = None, y: Any = None, y_pred: Any = None,
                     sample_weight: Any = None) -> Any:
        """The compiled loss of a batch plus the model's `losses` (regularization)."""
        del x
        return self.compiled_loss(y, y_pred, sample_weight, regularization_losses=self.losses,
                                  output_names=self._output_names_for(y_pred))

    def compute_metrics(self, x: Any, y: Any, y_pred: Any, sample_weight: Any) -> dict[str, Any]:
        """Update the compiled metrics with a batch; returns `get_metrics_result`."""
        del x
        self.compiled_metrics.update_state(y, y_pred, sample_weight,
                                           output_names=self._output_names_for(y_pred))
        return self.get_metrics_result()

    def get_metrics_result(self) -> dict[str, Any]:
        """``{name: result}`` of every metric."""
        out: dict[str, Any] = {}
        for m in self.metrics:
            result = m.result()
            if isinstance(result, dict):
                out.update(result)
            else:
                out[m.name] = result
        return out

    def train_step(self, data: Any) -> dict[str, Any]:
        """One training step: forward pass, loss, gradients, the optimizer's update,
        metrics; returns the metrics' results."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        with tw.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
        self._validate_target_and_loss(y, loss)
        variables = self.trainable_variables
        if variables:
            grads = tape.gradient(loss, variables)
            if all(g is None for g in grads):
                raise ValueError(f"No gradients provided for any variable: "
                                 f"{[v.name for v in variables]}. The loss does not depend "
                                 f"on the model's trainable weights.")
            self.optimizer.apply_gradients(
                [(g, v) for g, v in zip(grads, variables) if g is not None])
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data: Any) -> dict[str, Any]:
        """One evaluation step: forward pass (inference mode), loss and metrics."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        self.compute_loss(x, y, y_pred, sample_weight)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data: Any) -> Any:
        """One prediction step: the outputs in inference mode."""
        x, _, _ = unpack_x_y_sample_weight(data)
        return self(x, training=False)

    def _validate_target_and_loss(self, y: Any, loss: Any) -> None:
        if self.loss and y is None:
            raise ValueError("Target data is missing. Your model was compiled with "
                             f"loss={self.loss}, and therefore expects target data to be "
                             f"provided in `fit()`.")
        if loss is None:
            raise ValueError("No loss found. You may have forgotten to provide a `loss` "
                             "argument in the `compile()` method.")

    def _step_function(self, kind: str) -> _StepFunctions:
        steps = self.__dict__["_steps"]
        if kind not in steps:
            steps[kind] = _StepFunctions(self, kind)
        return steps[kind]

    @contextlib.contextmanager
    def _compiled_trainable_state(self) -> Iterator[None]:
        """Run with each layer's `trainable` as it was at `compile` (Keras: changing
        `trainable` takes effect at the next compile)."""
        state = self._compile_state.trainable_state if self._compile_state else None
        if not state:
            yield
            return
        now = {key: layer.__dict__["_trainable"] for key, (layer, _) in state.items()}
        for layer, was in state.values():
            layer.__dict__["_trainable"] = was
        try:
            yield
        finally:
            for key, (layer, _) in state.items():
                layer.__dict__["_trainable"] = now[key]

    def _ensure_built(self, x: Any) -> None:
        """Build the model from a first batch before any step is traced."""
        if self.built:
            return
        sample = nest.map_structure(lambda a: None if a is None else np.asarray(a)[:1], x,
                                    expand_composites=False)
        self(sample, training=False)

    # -- the loops ----------------------------------------------------------------------------
    def fit(self, x: Any = None, y: Any = None, batch_size: int | None = None,
            epochs: int = 1, verbose: Any = "auto", callbacks: Any = None,
            validation_split: float = 0.0, validation_data: Any = None,
            shuffle: bool | str = True, class_weight: dict[int, float] | None = None,
            sample_weight: Any = None, initial_epoch: int = 0,
            steps_per_epoch: int | None = None, validation_steps: int | None = None,
            validation_batch_size: int | None = None, validation_freq: Any = 1,
            max_queue_size: int = 10, workers: int = 1,
            use_multiprocessing: bool = False) -> callbacks_mod.History:
        """Train for `epochs` epochs on arrays (`x`, `y`, `sample_weight`, cut into
        batches of `batch_size`, shuffled each epoch unless ``shuffle=False``) or on a
        `tw.data.Dataset` / iterator of ``(x, y[, sample_weight])`` batches. Validation
        on `validation_data` (or the last `validation_split` of the arrays) at the end of
        each epoch adds ``val_*`` logs. Returns the `History`."""
        del max_queue_size, workers, use_multiprocessing   # one process, host pipelines
        self._assert_compile_was_called()
        verbose = 1 if verbose == "auto" else verbose
        if validation_split and validation_data is None:
            if not is_array_data(x):
                raise ValueError(f"`validation_split` is only supported for Tensors or NumPy "
                                 f"arrays, found input of type {type(x).__name__}")
            (x, y, sample_weight), validation_data = train_validation_split(
                (x, y, sample_weight), validation_split)
        val = None
        if validation_data is not None:
            val = (validation_data if not isinstance(validation_data, (tuple, list))
                   else unpack_x_y_sample_weight(tuple(validation_data)))
        handler = DataHandler(x, y, sample_weight, batch_size, steps_per_epoch, initial_epoch,
                              epochs, shuffle, class_weight)
        cbs = (callbacks if isinstance(callbacks, callbacks_mod.CallbackList) else
               callbacks_mod.CallbackList(callbacks, add_history=True,
                                          add_progbar=verbose != 0, model=self,
                                          verbose=verbose, epochs=epochs, steps=handler.steps))
        train_fn = self._step_function("train")
        self.stop_training = False
        training_logs = None
        with self._compiled_trainable_state():
            cbs.on_train_begin()
            for epoch, batches in handler.enumerate_epochs():
                self.reset_metrics()
                cbs.on_epoch_begin(epoch)
                logs = None
                for step, batch in enumerate(batches):
                    if logs is None and epoch == handler.initial_epoch:
                        self._ensure_built(unpack_x_y_sample_weight(batch)[0])
                    cbs.on_train_batch_begin(step)
                    logs = _python_logs(train_fn(batch))
                    cbs.on_train_batch_end(step, logs)
                    if self.stop_training:
                        break
                if logs is None:
                    if handler.exhausted and epoch > handler.initial_epoch:
                        break   # the iterator ran out (Keras: "Your input ran out of data")
                    raise ValueError("fit: the training data gave no batches")
                epoch_logs = dict(logs)
                if val is not None and _should_eval(epoch, validation_freq):
                    self._in_fit = True
                    try:
                        if isinstance(val, tuple):
                            vx, vy, vsw = val
                        else:
                            vx, vy, vsw = val, None, None
                        val_logs = self.evaluate(vx, vy, sample_weight=vsw,
                                                 batch_size=validation_batch_size or (
                                                     batch_size if is_array_data(vx) else None),
                                                 steps=validation_steps, callbacks=cbs,
                                                 return_dict=True, verbose=0)
                    finally:
                        self._in_fit = False
                    epoch_logs.update({f"val_{k}": v for k, v in val_logs.items()})
                cbs.on_epoch_end(epoch, epoch_logs)
                training_logs = epoch_logs
                if self.stop_training:
                    break
            cbs.on_train_end(logs=training_logs)
        return self.history

    def evaluate(self, x: Any = None, y: Any = None, batch_size: int | None = None,
                 verbose: Any = "auto", sample_weight: Any = None, steps: int | None = None,
                 callbacks: Any = None, max_queue_size: int = 10, workers: int = 1,
                 use_multiprocessing: bool = False, return_dict: bool = False,
                 **kwargs: Any) -> Any:
        """The loss and metrics over the data, in inference mode: a number (no metrics),
        a list in `metrics_names` order, or a dict with ``return_dict``."""
        del max_queue_size, workers, use_multiprocessing
        if kwargs:
            raise TypeError(f"evaluate: unexpected keyword argument(s) "
                            f"{', '.join(sorted(kwargs))}")
        self._assert_compile_was_called()
        verbose = 1 if verbose == "auto" else verbose
        handler = DataHandler(x, y, sample_weight, batch_size, steps, shuffle=False)
        cbs = (callbacks if isinstance(callbacks, callbacks_mod.CallbackList) else
               callbacks_mod.CallbackList(callbacks, add_progbar=verbose != 0, model=self,
                                          verbose=verbose, epochs=1, steps=handler.steps))
        test_fn = self._step_function("test")
        logs = None
        with self._compiled_trainable_state():
            cbs.on_test_begin()
            self.reset_metrics()
            for _, batches in handler.enumerate_epochs():
                for step, batch in enumerate(batches):
                    if logs is None:
                        self._ensure_built(unpack_x_y_sample_weight(batch)[0])
                    cbs.on_test_batch_begin(step)
                    logs = _python_logs(test_fn(batch))
                    cbs.on_test_batch_end(step, logs)
            if logs is None:
                raise ValueError("evaluate: the data gave no batches")
            cbs.on_test_end(logs=logs)
        return logs if return_dict else flatten_metrics_in_order(logs, self.metrics_names)

    def predict(self, x: Any, batch_size: int | None = None, verbose: Any = "auto",
                steps: int | None = None, callbacks: Any = None, max_queue_size: int = 10,
                workers: int = 1, use_multiprocessing: bool = False) -> Any:
        """The model's outputs for `x` (arrays, a dataset or an iterator), in inference
        mode, batch by batch, concatenated as NumPy arrays."""
        del max_queue_size, workers, use_multiprocessing
        verbose = 1 if verbose == "auto" else verbose
        handler = DataHandler(x, batch_size=batch_size, steps_per_epoch=steps, shuffle=False)
        cbs = (callbacks if isinstance(callbacks, callbacks_mod.CallbackList) else
               callbacks_mod.CallbackList(callbacks, add_progbar=verbose != 0, model=self,
                                          verbose=verbose, epochs=1, steps=handler.steps))
        predict_fn = self._step_function("predict")
        outputs: list[Any] = []
        cbs.on_predict_begin()
        for _, batches in handler.enumerate_epochs():
            for step, batch in enumerate(batches):
                if not outputs:
                    self._ensure_built(unpack_x_y_sample_weight(batch)[0])
                cbs.on_predict_batch_begin(step)
                outputs.append(predict_fn(batch))
                cbs.on_predict_batch_end(step, {"outputs": outputs[-1]})
        if not outputs:
            raise ValueError("predict: the data gave no batches")
        cbs.on_predict_end()
        return nest.map_structure(lambda *xs: np.concatenate([np.asarray(a) for a in xs]),
                                  *outputs) if len(outputs) > 1 else nest.map_structure(
                                      np.asarray, outputs[0])

    def _single_batch(self, x: Any, y: Any, sample_weight: Any,
                      class_weight: dict[int, float] | None = None) -> Any:
        handler = DataHandler(x, y, sample_weight, batch_size=None, shuffle=False,
                              class_weight=class_weight)
        handler.batch_size = handler.num_samples   # the whole input is one batch
        handler.steps = 1
        return next(iter(handler._array_pass()))

    def train_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None,
                       class_weight: dict[int, float] | None = None,
                       reset_metrics: bool = True, return_dict: bool = False) -> Any:
        """One training step on exactly this batch; returns the loss and metrics."""
        self._assert_compile_was_called()
        if reset_metrics:
            self.reset_metrics()
        batch = self._single_batch(x, y, sample_weight, class_weight)
        self._ensure_built(unpack_x_y_sample_weight(batch)[0])
        with self._compiled_trainable_state():
            logs = _python_logs(self._step_function("train")(batch))
        return logs if return_dict else flatten_metrics_in_order(logs, self.metrics_names)

    def test_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None,
                      reset_metrics: bool = True, return_dict: bool = False) -> Any:
        """One evaluation step on exactly this batch; returns the loss and metrics."""
        self._assert_compile_was_called()
        if reset_metrics:
            self.reset_metrics()
        batch = self._single_batch(x, y, sample_weight)
        self._ensure_built(unpack_x_y_sample_weight(batch)[0])
        with self._compiled_trainable_state():
            logs = _python_logs(self._step_function("test")(batch))
        return logs if return_dict else flatten_metrics_in_order(logs, self.metrics_names)

    def predict_on_batch(self, x: Any) -> Any:
        """The outputs for exactly this batch."""
        batch = self._single_batch(x, None, None)
        self._ensure_built(unpack_x_y_sample_weight(batch)[0])
        return nest.map_structure(np.asarray, self._step_function("predict")(batch))

    # -- structure ----------------------------------------------------------------------------
    def call(self, inputs: Any, training: bool | None = None, mask: Any = None) -> Any:
        raise NotImplementedError(
            f"Model {self.name}: unimplemented `call()`. To create a Model with the "
            f"functional API, give it `inputs` and `outputs`: Model(inputs, outputs); a "
            f"subclassed Model must define `call(self, inputs, training=None)`.")

    def build(self, input_shape: Any) -> None:
        """Build a subclassed model's layers by tracing `call` on inputs of
        `input_shape` (a shape with None for the batch, or a list/dict of them)."""
        if self.built:
            return
        if input_shape is None:
            raise ValueError("build: input_shape must be given")
        self.compute_output_shape(input_shape)
        self.built = True
        self._build_input_shape = input_shape

    build._is_default = True  # type: ignore[attr-defined]  (Layer._maybe_build skips it)

    @property
    def layers(self) -> list[Layer]:
        """The model's direct sublayers, in the order they were set (metrics apart)."""
        from ..metrics import Metric
        return [layer for layer in self._sublayers() if not isinstance(layer, Metric)]

    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        """A sublayer by `name` or by `index` in `layers`."""
        if index is not None and name is not None:
            raise ValueError(f"Provide only a layer name or a layer index. Received: "
                             f"index={index}, name={name}.")
        if index is not None:
            if len(self.layers) <= index:
                raise ValueError(f"Was asked to retrieve layer at index {index} but model "
                                 f"only has {len(self.layers)} layers.")
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}. Existing layers are: "
                         f"{[layer.name for layer in self.layers]}.")

    @property
    def trainable_weights(self) -> list[Any]:
        """The weights training updates: the sublayers' (in order), then the model's
        own (Keras' order for models)."""
        if not self.trainable:
            return []
        weights = [w for layer in self._self_tracked_trackables for w in layer.trainable_weights]
        weights += [w for w in self._weights_made_here() if w.trainable]
        return dedup_weights(weights)

    @property
    def non_trainable_weights(self) -> list[Any]:
        """The other weights (every weight when `trainable` is False)."""
        layers = self._self_tracked_trackables
        non = [w for layer in layers for w in layer.non_trainable_weights]
        own_t = [w for w in self._weights_made_here() if w.trainable]
        own_n = [w for w in self._weights_made_here() if not w.trainable]
        if not self.trainable:
            trainable = [w for layer in layers for w in layer.trainable_weights]
            return dedup_weights(own_t + trainable + own_n + non)
        return dedup_weights(own_n + non)

    @property
    def weights(self) -> list[Any]:
        """Every weight, layer by layer (each layer's trainable ones first), then the
        model's own: the order of `get_weights` / `set_weights` (Keras')."""
        weights = [w for layer in self._self_tracked_trackables for w in layer.weights]
        weights += [w for w in self._weights_made_here() if w.trainable]
        weights += [w for w in self._weights_made_here() if not w.trainable]
        return dedup_weights(weights)

    def summary(self, line_length: int | None = None, positions: Any = None,
                print_fn: Any = None, expand_nested: bool = False, show_trainable: bool = False,
                layer_range: Any = None) -> None:
        """Print a table of the layers, their output shapes and parameter counts."""
        from .summary import print_summary
        if not self.built:
            raise ValueError("This model has not yet been built. Build the model first by "
                             "calling `build()` or by calling the model on a batch of data.")
        print_summary(self, line_length=line_length, positions=positions, print_fn=print_fn,
                      expand_nested=expand_nested, show_trainable=show_trainable)

    # -- saving ---------------------------------------------------------------------------------
    def save_weights(self, filepath: str, overwrite: bool = True, save_format: str | None = None,
                     options: Any = None) -> None:
        """Write the weights (and the optimizer's state, once it has some) as a
        tensorweave checkpoint at `filepath` (a file prefix)."""
        from .saving import save_weights
        save_weights(self, filepath, overwrite=overwrite, save_format=save_format,
                     options=options)

    def load_weights(self, filepath: str, by_name: bool = False, skip_mismatch: bool = False,
                     options: Any = None) -> Any:
        """Read weights that `save_weights` wrote (into a model of the same structure;
        a layer not built yet takes its values when it builds)."""
        from .saving import load_weights
        return load_weights(self, filepath, by_name=by_name, skip_mismatch=skip_mismatch,
                            options=options)

    def save(self, filepath: str, overwrite: bool = True, save_format: str | None = None,
             **kwargs: Any) -> None:
        """Write the model's configuration (JSON), compile arguments and weights to the
        directory `filepath`; `tw.keras.models.load_model` reads it back."""
        from .saving import save_model
        save_model(self, filepath, overwrite=overwrite, save_format=save_format, **kwargs)

    def get_config(self) -> dict[str, Any]:
        raise NotImplementedError(f"{type(self).__name__}: a subclassed model has no config "
                                  f"to save; override get_config/from_config, or save its "
                                  f"weights with save_weights")

    def to_json(self, **kwargs: Any) -> str:
        """The model's configuration as JSON (`tw.keras.models.model_from_json`)."""
        from .saving import model_to_json
        return model_to_json(self, **kwargs)


def _should_eval(epoch: int, validation_freq: Any) -> bool:
    epoch += 1
    if isinstance(validation_freq, int):
        return epoch % validation_freq == 0
    if isinstance(validation_freq, (list, tuple, set)):
        return epoch in validation_freq
    raise ValueError(f"Expected `validation_freq` to be a list or int. Received: "
                     f"validation_freq={validation_freq} of the type {type(validation_freq)}.")
