"""``tw.keras.metrics``: stateful metrics (tf_keras 2.x). A metric keeps running totals
in non-trainable variables: `update_state` adds a batch (inside a compiled step, as
ops on those variables), `result` reads the value so far, `reset_state` starts over.
``metrics=['accuracy']`` in `Model.compile` picks binary, sparse or categorical
accuracy from the shapes of the labels and predictions, as Keras does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import tensorweave as tw

from . import backend, utils
from . import losses as losses_mod
from .engine.base_layer import Layer

__all__ = ["Metric", "Reduce", "Sum", "Mean", "MeanMetricWrapper", "Accuracy",
           "BinaryAccuracy", "CategoricalAccuracy", "SparseCategoricalAccuracy",
           "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy", "MeanSquaredError",
           "MeanAbsoluteError", "MeanAbsolutePercentageError", "RootMeanSquaredError",
           "BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
           "Precision", "Recall", "accuracy", "binary_accuracy", "categorical_accuracy",
           "sparse_categorical_accuracy", "top_k_categorical_accuracy",
           "sparse_top_k_categorical_accuracy", "get", "serialize", "deserialize"]

SUM, SUM_OVER_BATCH_SIZE, WEIGHTED_MEAN = "sum", "sum_over_batch_size", "weighted_mean"


class Metric(Layer):
    """Base class: subclasses make their state with `add_weight` in ``__init__`` and
    define `update_state`, `result` (and `reset_state` if zeros are not the start).
    ``metric(y_true, y_pred)`` updates and returns the result."""

    def __init__(self, name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.built = True

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.update_state(*args, **kwargs)
        return self.result()

    def update_state(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def result(self) -> Any:
        raise NotImplementedError

    def reset_state(self) -> None:
        """Set every state variable back to zero."""
        for v in self.variables:
            v.assign(np.zeros([int(d) for d in v.shape], v.dtype.np), read_value=False)

    reset_states = reset_state

    def add_weight(self, name: str, shape: Any = (), aggregation: Any = None,
                   synchronization: Any = None, initializer: Any = None,
                   dtype: Any = None, **kwargs: Any) -> Any:
        """A state variable (non-trainable, zeros unless `initializer` says)."""
        return super().add_weight(name=name, shape=shape, dtype=dtype or self.dtype,
                                  initializer=initializer or "zeros", trainable=False)

    def get_config(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}>"


def _broadcast_weights(sample_weight: Any, values: Any) -> tuple[Any, Any]:
    """`values` and `sample_weight` aligned as tf_keras' ``Reduce.update_state``:
    weights squeezed or expanded to the values' rank, then broadcast to their shape
    (or, with fewer dims than the values, the values averaged over the extra dims)."""
    values, _, sample_weight = losses_mod.squeeze_or_expand_dimensions(
        values, sample_weight=sample_weight)
    w_rank, v_rank = len(sample_weight.shape), len(values.shape)
    if w_rank < v_rank and w_rank > 0 and any(
            d not in (1, None) for d in values.shape[w_rank:]):
        values = tw.reduce_mean(values, axis=list(range(w_rank, v_rank)))
    return values, sample_weight * tw.ones_like(values)


class Reduce(Metric):
    """The sum of values (``reduction='sum'``) or their weighted mean."""

    def __init__(self, reduction: str, name: str | None, dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.reduction = reduction
        self.total = self.add_weight("total")
        if reduction in (SUM_OVER_BATCH_SIZE, WEIGHTED_MEAN):
            self.count = self.add_weight("count")

    def update_state(self, values: Any, sample_weight: Any = None) -> Any:
        """Add `values` (weighted by `sample_weight`, broadcast against them)."""
        dtype = tw.as_dtype(self.dtype)
        values = tw.cast(values, dtype)
        if sample_weight is not None:
            sample_weight = tw.cast(sample_weight, dtype)
            values, sample_weight = _broadcast_weights(sample_weight, values)
            values = values * sample_weight
        self.total.assign_add(tw.reduce_sum(values), read_value=False)
        if self.reduction == SUM:
            return None
        if self.reduction == WEIGHTED_MEAN and sample_weight is not None:
            num = tw.reduce_sum(sample_weight)
        else:
            num = tw.cast(tw.size(values), dtype)
        self.count.assign_add(num, read_value=False)
        return None

    def result(self) -> Any:
        """The sum, or the total divided by the count (0 before any value)."""
        if self.reduction == SUM:
            return tw.identity(self.total.read_value())
        total, count = self.total.read_value(), self.count.read_value()
        return tw.where(tw.equal(count, 0.0), tw.zeros_like(total),
                        total / tw.where(tw.equal(count, 0.0), tw.ones_like(count), count))


class Sum(Reduce):
    """The running sum of the values."""

    def __init__(self, name: str = "sum", dtype: Any = None) -> None:
        super().__init__(SUM, name, dtype)


class Mean(Reduce):
    """The running (weighted) mean of the values."""

    def __init__(self, name: str = "mean", dtype: Any = None) -> None:
        super().__init__(WEIGHTED_MEAN, name, dtype)


class MeanMetricWrapper(Mean):
    """The running mean of ``fn(y_true, y_pred, **kwargs)`` over all examples."""

    def __init__(self, fn: Callable[..., Any], name: str | None = None, dtype: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(name=name or getattr(fn, "__name__", "mean_metric_wrapper"),
                         dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        """Add ``fn(y_true, y_pred)`` of a batch."""
        dtype = tw.as_dtype(self.dtype)
        y_true = tw.cast(y_true, dtype)
        y_pred = tw.cast(y_pred, dtype)
        y_pred, y_true = losses_mod.squeeze_or_expand_dimensions(y_pred, y_true)
        matches = self._fn(y_true, y_pred, **self._fn_kwargs)
        return super().update_state(matches, sample_weight=sample_weight)

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs}


# -- metric functions ---------------------------------------------------------------------
def accuracy(y_true: Any, y_pred: Any) -> Any:
    """1.0 where `y_pred` equals `y_true`, else 0.0."""
    y_pred = tw.convert_to_tensor(y_pred)
    y_true = tw.cast(y_true, y_pred.dtype)
    return tw.cast(tw.equal(y_true, y_pred), backend.floatx())


def binary_accuracy(y_true: Any, y_pred: Any, threshold: float = 0.5) -> Any:
    """The mean over the last axis of ``y_true == (y_pred > threshold)``."""
    y_pred = tw.convert_to_tensor(y_pred)
    y_true = tw.cast(y_true, y_pred.dtype)
    predicted = tw.cast(y_pred > threshold, y_pred.dtype)
    return tw.reduce_mean(tw.cast(tw.equal(y_true, predicted), backend.floatx()), axis=-1)


def categorical_accuracy(y_true: Any, y_pred: Any) -> Any:
    """1.0 where ``argmax(y_true) == argmax(y_pred)`` (one-hot labels)."""
    return tw.cast(tw.equal(tw.argmax(y_true, axis=-1), tw.argmax(y_pred, axis=-1)),
                   backend.floatx())


def sparse_categorical_accuracy(y_true: Any, y_pred: Any) -> Any:
    """1.0 where the integer label `y_true` is ``argmax(y_pred)``."""
    y_pred = tw.convert_to_tensor(y_pred)
    y_true = tw.convert_to_tensor(y_true)
    reshape = len(y_true.shape) == len(y_pred.shape)
    true_shape = tw.shape(y_true)
    if reshape:
        y_true = tw.squeeze(y_true, [-1])
    predicted = tw.argmax(y_pred, axis=-1)
    if predicted.dtype is not y_true.dtype:
        predicted = tw.cast(predicted, y_true.dtype)
    matches = tw.cast(tw.equal(y_true, predicted), backend.floatx())
    if reshape:
        matches = tw.reshape(matches, true_shape)
    return matches


def top_k_categorical_accuracy(y_true: Any, y_pred: Any, k: int = 5) -> Any:
    """1.0 where the one-hot label is among the `k` highest predictions."""
    return sparse_top_k_categorical_accuracy(tw.argmax(y_true, axis=-1), y_pred, k)


def sparse_top_k_categorical_accuracy(y_true: Any, y_pred: Any, k: int = 5) -> Any:
    """1.0 where the integer label is among the `k` highest predictions."""
    y_pred = tw.convert_to_tensor(y_pred)
    y_true = tw.convert_to_tensor(y_true)
    if len(y_true.shape) == len(y_pred.shape):
        y_true = tw.squeeze(y_true, [-1])
    preds = backend.reshape(y_pred, [None, y_pred.shape[-1]], "sparse_top_k_categorical_accuracy")
    labels = tw.cast(tw.reshape(y_true, [-1]), tw.int32)
    hits = tw.math.in_top_k(labels, preds, k)
    return tw.reshape(tw.cast(hits, backend.floatx()), tw.shape(y_true))


def _wrapper_class(fn: Callable[..., Any], default_name: str, doc: str,
                   **defaults: Any) -> type[MeanMetricWrapper]:
    """A `MeanMetricWrapper` subclass of `fn` whose constructor takes `defaults`."""
    def __init__(self, name: str = default_name, dtype: Any = None, **kwargs: Any) -> None:
        unknown = sorted(set(kwargs) - set(defaults))
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) "
                            f"{', '.join(unknown)}")
        MeanMetricWrapper.__init__(self, fn, name=name, dtype=dtype, **{**defaults, **kwargs})

    return type("_MetricWrapper", (MeanMetricWrapper,), {"__init__": __init__, "__doc__": doc})


Accuracy = _wrapper_class(accuracy, "accuracy", "How often predictions equal labels.")
BinaryAccuracy = _wrapper_class(binary_accuracy, "binary_accuracy",
                                "How often thresholded predictions match binary labels.",
                                threshold=0.5)
CategoricalAccuracy = _wrapper_class(categorical_accuracy, "categorical_accuracy",
                                     "How often the argmax matches one-hot labels.")
SparseCategoricalAccuracy = _wrapper_class(sparse_categorical_accuracy,
                                           "sparse_categorical_accuracy",
                                           "How often the argmax matches integer labels.")
TopKCategoricalAccuracy = _wrapper_class(top_k_categorical_accuracy,
                                         "top_k_categorical_accuracy",
                                         "How often one-hot labels are in the top k.", k=5)
SparseTopKCategoricalAccuracy = _wrapper_class(sparse_top_k_categorical_accuracy,
                                               "sparse_top_k_categorical_accuracy",
                                               "How often integer labels are in the top k.",
                                               k=5)
MeanSquaredError = _wrapper_class(losses_mod.mean_squared_error, "mean_squared_error",
                                  "Running mean squared error.")
MeanAbsoluteError = _wrapper_class(losses_mod.mean_absolute_error, "mean_absolute_error",
                                   "Running mean absolute error.")
MeanAbsolutePercentageError = _wrapper_class(losses_mod.mean_absolute_percentage_error,
                                             "mean_absolute_percentage_error",
                                             "Running mean absolute percentage error.")
BinaryCrossentropy = _wrapper_class(losses_mod.binary_crossentropy, "binary_crossentropy",
                                    "Running binary cross entropy.", from_logits=False,
                                    label_smoothing=0.0)
CategoricalCrossentropy = _wrapper_class(losses_mod.categorical_crossentropy,
                                         "categorical_crossentropy",
                                         "Running categorical cross entropy.",
                                         from_logits=False, label_smoothing=0.0)
SparseCategoricalCrossentropy = _wrapper_class(losses_mod.sparse_categorical_crossentropy,
                                               "sparse_categorical_crossentropy",
                                               "Running sparse categorical cross entropy.",
                                               from_logits=False)

for _cls_name in ("Accuracy", "BinaryAccuracy", "CategoricalAccuracy",
                  "SparseCategoricalAccuracy", "TopKCategoricalAccuracy",
                  "SparseTopKCategoricalAccuracy", "MeanSquaredError", "MeanAbsoluteError",
                  "MeanAbsolutePercentageError", "BinaryCrossentropy", "CategoricalCrossentropy",
                  "SparseCategoricalCrossentropy"):
    globals()[_cls_name].__name__ = globals()[_cls_name].__qualname__ = _cls_name


class RootMeanSquaredError(Mean):
    """``sqrt`` of the running mean squared error."""

    def __init__(self, name: str = "root_mean_squared_error", dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        dtype = tw.as_dtype(self.dtype)
        y_true, y_pred = tw.cast(y_true, dtype), tw.cast(y_pred, dtype)
        y_pred, y_true = losses_mod.squeeze_or_expand_dimensions(y_pred, y_true)
        return super().update_state(tw.square(y_pred - y_true), sample_weight=sample_weight)

    def result(self) -> Any:
        return tw.sqrt(super().result())


class _ConfusionCount(Metric):
    """Counts of true/false positives (and negatives) of predictions thresholded at
    `thresholds` (one value), optionally for one `class_id`."""

    _counts: tuple[str, ...] = ()

    def __init__(self, thresholds: float | None = None, top_k: int | None = None,
                 class_id: int | None = None, name: str | None = None,
                 dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)
        if top_k is not None:
            raise NotImplementedError(f"{type(self).__name__}: top_k is not supported by "
                                      f"tw.keras")
        if thresholds is not None and not isinstance(thresholds, (int, float)):
            raise NotImplementedError(f"{type(self).__name__}: only one threshold is "
                                      f"supported by tw.keras, got {thresholds!r}")
        self.thresholds = 0.5 if thresholds is None else float(thresholds)
        self.class_id = class_id
        for c in self._counts:
            setattr(self, c, self.add_weight(c))

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        dtype = tw.as_dtype(self.dtype)
        y_pred = tw.convert_to_tensor(y_pred)
        y_true = tw.convert_to_tensor(y_true)
        if self.class_id is not None:
            y_true = y_true[..., self.class_id]
            y_pred = y_pred[..., self.class_id]
        pred = tw.cast(y_pred, dtype) > self.thresholds
        true = tw.cast(y_true, tw.bool)
        weight = (tw.ones_like(tw.cast(pred, dtype)) if sample_weight is None else
                  _broadcast_weights(tw.cast(sample_weight, dtype), tw.cast(pred, dtype))[1])
        cases = {"true_positives": tw.logical_and(pred, true),
                 "false_positives": tw.logical_and(pred, tw.logical_not(true)),
                 "false_negatives": tw.logical_and(tw.logical_not(pred), true)}
        for c in self._counts:
            getattr(self, c).assign_add(tw.reduce_sum(tw.cast(cases[c], dtype) * weight),
                                        read_value=False)

    def _ratio(self, num: Any, other: Any) -> Any:
        num, other = num.read_value(), other.read_value()
        den = num + other
        return tw.where(den > 0, num / tw.where(den > 0, den, tw.ones_like(den)),
                        tw.zeros_like(den))

    def get_config(self):
        return {**super().get_config(), "thresholds": self.thresholds,
                "class_id": self.class_id}


class Precision(_ConfusionCount):
    """``true_positives / (true_positives + false_positives)`` at a threshold."""

    _counts = ("true_positives", "false_positives")

    def __init__(self, thresholds: float | None = None, top_k: int | None = None,
                 class_id: int | None = None, name: str = "precision", dtype: Any = None):
        super().__init__(thresholds, top_k, class_id, name, dtype)

    def result(self):
        return self._ratio(self.true_positives, self.false_positives)


class Recall(_ConfusionCount):
    """``true_positives / (true_positives + false_negatives)`` at a threshold."""

    _counts = ("true_positives", "false_negatives")

    def __init__(self, thresholds: float | None = None, top_k: int | None = None,
                 class_id: int | None = None, name: str = "recall", dtype: Any = None):
        super().__init__(thresholds, top_k, class_id, name, dtype)

    def result(self):
        return self._ratio(self.true_positives, self.false_negatives)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "accuracy": accuracy, "binary_accuracy": binary_accuracy,
    "categorical_accuracy": categorical_accuracy,
    "sparse_categorical_accuracy": sparse_categorical_accuracy,
    "top_k_categorical_accuracy": top_k_categorical_accuracy,
    "sparse_top_k_categorical_accuracy": sparse_top_k_categorical_accuracy,
    "mse": losses_mod.mean_squared_error, "mean_squared_error": losses_mod.mean_squared_error,
    "mae": losses_mod.mean_absolute_error,
    "mean_absolute_error": losses_mod.mean_absolute_error,
    "mape": losses_mod.mean_absolute_percentage_error,
    "mean_absolute_percentage_error": losses_mod.mean_absolute_percentage_error,
    "binary_crossentropy": losses_mod.binary_crossentropy,
    "categorical_crossentropy": losses_mod.categorical_crossentropy,
    "sparse_categorical_crossentropy": losses_mod.sparse_categorical_crossentropy,
}
_CLASSES = {name: globals()[name] for name in __all__ if name[0].isupper()}


def get(identifier: Any) -> Any:
    """A metric (function or `Metric`) from a name, a `Metric`, a class, a config dict
    or a callable."""
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        return utils.object_from_name(identifier, _FUNCTIONS, _CLASSES, "metric function",
                                      "metrics")
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret metric identifier: {identifier!r}")


def serialize(metric: Any) -> Any:
    """A name (functions) or ``{'class_name', 'config'}`` (metrics)."""
    return utils.serialize_object(metric, Metric, _FUNCTIONS)


def deserialize(config: Any, custom_objects: dict[str, Any] | None = None) -> Any:
    """The metric `serialize` described."""
    return utils.deserialize_object(config, custom_objects, get, _CLASSES, "metric")
