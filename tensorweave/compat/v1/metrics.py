"""``tf.metrics`` of TensorFlow 1 (``tf.compat.v1.metrics``): streaming metrics.

Each returns ``(value, update_op)``: `update_op` adds a batch to the metric's running
totals and returns the metric so far, `value` reads the totals. The totals are local
variables (``LOCAL_VARIABLES`` and ``METRIC_VARIABLES``, under a scope named after the
metric, ``accuracy/total``, ``accuracy_1/count``, ...): ``local_variables_initializer()``
resets them. As TensorFlow 1's ``metrics_impl.py``: values are float32, `weights`
scale each element (0 leaves it out), a trailing size-1 dim of labels, predictions or
weights is squeezed to match, and fetching `value` and `update_op` in one run gives no
order between them (fetch `update_op`, then `value`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from ...compiler.dtypes import bool_, float32
from ...errors import ShapeError
from ...frontend.building import convert_to_tensor
from ...frontend.context import control_dependencies, current_builder
from ...frontend.ops import array as _array
from ...frontend.ops import math as _math
from ...frontend.ops.debugging import _assert
from .graph import GraphKeys, Variable, add_to_collections, get_default_graph, in_default_graph
from .losses import _where, assert_broadcastable, div_no_nan
from .var_scope import variable_scope


def metric_variable(shape: Any, dtype: Any, name: str) -> Variable:
    """A zero-initialized local variable of the ``METRIC_VARIABLES`` collection."""
    return Variable(_array.zeros(list(shape), dtype), trainable=False, name=name,
                    collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES])


def _unique_scope(name: str) -> str:
    """`name`, or ``name_1``, ... : the first whose variables do not exist yet (TensorFlow
    makes the metric's name scope unique the same way)."""
    taken = get_default_graph()._variable_names
    builder = current_builder()
    candidate, k = name, 0
    while any(v.startswith(builder.scoped_name(candidate) + "/") for v in taken):
        k += 1
        candidate = f"{name}_{k}"
    return candidate


@contextlib.contextmanager
def _metric_scope(name: str | None, default: str) -> Iterator[None]:
    with variable_scope(_unique_scope(name or default)):
        yield


def _squeeze_last(t: Any) -> Any:
    return _array.squeeze(t, [-1])


def _remove_squeezable_dimensions(predictions: Any, labels: Any, weights: Any,
                                  api: str) -> tuple[Any, Any, Any]:
    """TensorFlow 1's metric inputs made to match: predictions or labels with one more
    trailing size-1 dim than the other lose it, weights one dim more than predictions
    lose their last, one dim fewer gain one."""
    predictions = convert_to_tensor(predictions)
    if labels is not None:
        labels = convert_to_tensor(labels)
        diff = len(predictions.shape) - len(labels.shape)
        if diff == 1 and predictions.shape[-1] in (1, None):
            predictions = _squeeze_last(predictions)
        elif diff == -1 and labels.shape[-1] in (1, None):
            labels = _squeeze_last(labels)
        p, lab = tuple(predictions.shape), tuple(labels.shape)
        if len(p) != len(lab) or any(a is not None and b is not None and a != b
                                     for a, b in zip(p, lab)):
            raise ShapeError(f"predictions of shape {list(p)} and labels of shape {list(lab)} "
                             f"must have the same shape", op=api, location=_where())
    if weights is None:
        return predictions, labels, None
    weights = convert_to_tensor(weights)
    if len(weights.shape):
        diff = len(weights.shape) - len(predictions.shape)
        if diff == 1:
            weights = _squeeze_last(weights)
        elif diff == -1:
            weights = _array.expand_dims(weights, -1)
    return predictions, labels, weights


def _broadcast_weights(weights: Any, values: Any, api: str) -> Any:
    """`weights` (float32) times ones of `values`' shape, checked to broadcast."""
    check = assert_broadcastable(weights, values, api)
    with control_dependencies([check] if check is not None else None):
        return _math.multiply(_math.cast(weights, float32), _array.ones_like(values))


def _float32(x: Any) -> Any:
    x = convert_to_tensor(x)
    return x if x.dtype is float32 else _math.cast(x, float32)


def _publish(value: Any, update_op: Any, metrics_collections: Any,
             updates_collections: Any) -> tuple[Any, Any]:
    if metrics_collections:
        add_to_collections(metrics_collections, value)
    if updates_collections:
        add_to_collections(updates_collections, update_op)
    return value, update_op


def _mean(values: Any, weights: Any, metrics_collections: Any, updates_collections: Any,
          name: str | None, default: str, api: str) -> tuple[Any, Any]:
    with _metric_scope(name, default):
        values = _float32(values)
        total = metric_variable([], float32, "total")
        count = metric_variable([], float32, "count")
        if weights is None:
            num_values = _math.cast(_array.size(values), float32)
        else:
            values, _, weights = _remove_squeezable_dimensions(values, None, weights, api)
            weights = _broadcast_weights(weights, values, api)
            values = _math.multiply(values, weights)
            num_values = _math.reduce_sum(weights)
        update_total = total.assign_add(_math.reduce_sum(values))
        # (TensorFlow orders the count after `values`; after the total's update is the
        # same here, and a control input on a fed placeholder would demand its feed)
        with control_dependencies([update_total]):
            update_count = count.assign_add(num_values)
        value = div_no_nan(total.read_value(), _math.maximum(count.read_value(), 0.0),
                           name="value")
        update_op = div_no_nan(update_total, _math.maximum(update_count, 0.0),
                               name="update_op")
    return _publish(value, update_op, metrics_collections, updates_collections)


@in_default_graph
def mean(values: Any, weights: Any = None, metrics_collections: Any = None,
         updates_collections: Any = None, name: str | None = None) -> tuple[Any, Any]:
    """The (weighted) mean of every value seen: ``sum(values * weights) / sum(weights)``
    over all updates (0 before any)."""
    return _mean(values, weights, metrics_collections, updates_collections, name, "mean",
                 "tf.metrics.mean")


@in_default_graph
def accuracy(labels: Any, predictions: Any, weights: Any = None,
             metrics_collections: Any = None, updates_collections: Any = None,
             name: str | None = None) -> tuple[Any, Any]:
    """How often `predictions` equals `labels` (weighted): the mean of
    ``cast(predictions == labels)``."""
    api = "tf.metrics.accuracy"
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights,
                                                                 api)
    if labels.dtype is not predictions.dtype:
        predictions = _math.cast(predictions, labels.dtype)
    is_correct = _math.cast(_math.equal(predictions, labels), float32)
    return _mean(is_correct, weights, metrics_collections, updates_collections, name,
                 "accuracy", api)


@in_default_graph
def mean_squared_error(labels: Any, predictions: Any, weights: Any = None,
                       metrics_collections: Any = None, updates_collections: Any = None,
                       name: str | None = None) -> tuple[Any, Any]:
    """The (weighted) mean of ``(labels - predictions)**2`` over every element seen."""
    api = "tf.metrics.mean_squared_error"
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights,
                                                                 api)
    squared = _math.squared_difference(labels, predictions)
    return _mean(squared, weights, metrics_collections, updates_collections, name,
                 "mean_squared_error", api)


@in_default_graph
def mean_absolute_error(labels: Any, predictions: Any, weights: Any = None,
                        metrics_collections: Any = None, updates_collections: Any = None,
                        name: str | None = None) -> tuple[Any, Any]:
    """The (weighted) mean of ``|predictions - labels|`` over every element seen."""
    api = "tf.metrics.mean_absolute_error"
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights,
                                                                 api)
    absolute = _math.abs(_math.subtract(predictions, labels))
    return _mean(absolute, weights, metrics_collections, updates_collections, name,
                 "mean_absolute_error", api)


@in_default_graph
def root_mean_squared_error(labels: Any, predictions: Any, weights: Any = None,
                            metrics_collections: Any = None, updates_collections: Any = None,
                            name: str | None = None) -> tuple[Any, Any]:
    """The square root of `mean_squared_error`."""
    api = "tf.metrics.root_mean_squared_error"
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights,
                                                                 api)
    mse, update_mse = _mean(_math.squared_difference(labels, predictions), weights, None, None,
                            name, "root_mean_squared_error", api)
    return _publish(_math.sqrt(mse), _math.sqrt(update_mse), metrics_collections,
                    updates_collections)


# -- counts of true/false positives/negatives, precision, recall ------------------------------

def _count_condition(values: Any, weights: Any, api: str) -> tuple[Any, Any]:
    """The local ``count`` of `values` (bool) that hold, weighted; (value, update_op)."""
    count = metric_variable([], float32, "count")
    values = _math.cast(values, float32)
    if weights is not None:
        rank = len(convert_to_tensor(weights).shape)
        if rank not in (0, len(values.shape)):
            raise ShapeError(f"weights of rank {rank} must be a scalar or have the rank of "
                             f"the predictions ({len(values.shape)})", op=api,
                             location=_where())
        values = _math.multiply(values, _float32(weights))
    return count.read_value(), count.assign_add(_math.reduce_sum(values))


def _as_bools(predictions: Any, labels: Any, weights: Any, api: str) -> tuple[Any, Any, Any]:
    return _remove_squeezable_dimensions(_math.cast(convert_to_tensor(predictions), bool_),
                                         _math.cast(convert_to_tensor(labels), bool_),
                                         weights, api)


def _condition_count(kind: str, label_value: bool, prediction_value: bool) -> Any:
    @in_default_graph
    def metric(labels: Any, predictions: Any, weights: Any = None,
               metrics_collections: Any = None, updates_collections: Any = None,
               name: str | None = None) -> tuple[Any, Any]:
        with _metric_scope(name, kind):
            return _publish(*_counted(kind, labels, predictions, weights, label_value,
                                      prediction_value), metrics_collections,
                            updates_collections)

    metric.__name__ = kind
    metric.__doc__ = (f"The (weighted) count of elements whose label is {label_value} and "
                      f"prediction {prediction_value} (both cast to bool).")
    return metric


def _counted(kind: str, labels: Any, predictions: Any, weights: Any, label_value: bool,
             prediction_value: bool) -> tuple[Any, Any]:
    api = f"tf.metrics.{kind}"
    predictions, labels, weights = _as_bools(predictions, labels, weights, api)
    hit = _math.logical_and(_math.equal(labels, label_value),
                            _math.equal(predictions, prediction_value))
    return _count_condition(hit, weights, api)


true_positives = _condition_count("true_positives", True, True)
false_positives = _condition_count("false_positives", False, True)
true_negatives = _condition_count("true_negatives", False, False)
false_negatives = _condition_count("false_negatives", True, False)


def _ratio(hits: Any, misses: Any, name: str) -> Any:
    """``hits / (hits + misses)``, 0 when both are 0."""
    total = hits + misses
    return _math.where(_math.greater(total, 0.0), div_no_nan(hits, total),
                       _array.zeros_like(total), name=name)


def _precision_or_recall(kind: str, miss_kind: str, miss_label: bool,
                         miss_prediction: bool) -> Any:
    api = f"tf.metrics.{kind}"

    @in_default_graph
    def metric(labels: Any, predictions: Any, weights: Any = None,
               metrics_collections: Any = None, updates_collections: Any = None,
               name: str | None = None) -> tuple[Any, Any]:
        with _metric_scope(name, kind):
            predictions, labels, weights = _as_bools(predictions, labels, weights, api)
            with _metric_scope(None, "true_positives"):
                tp, update_tp = _counted("true_positives", labels, predictions, weights,
                                         True, True)
            with _metric_scope(None, miss_kind):
                miss, update_miss = _counted(miss_kind, labels, predictions, weights,
                                             miss_label, miss_prediction)
            return _publish(_ratio(tp, miss, "value"), _ratio(update_tp, update_miss,
                                                              "update_op"),
                            metrics_collections, updates_collections)

    metric.__name__ = kind
    return metric


precision = _precision_or_recall("precision", "false_positives", False, True)
precision.__doc__ = ("``true_positives / (true_positives + false_positives)`` over every "
                     "element seen (predictions and labels cast to bool; 0 when no "
                     "prediction is positive).")
recall = _precision_or_recall("recall", "false_negatives", True, False)
recall.__doc__ = ("``true_positives / (true_positives + false_negatives)`` over every "
                  "element seen (predictions and labels cast to bool; 0 when no label is "
                  "positive).")


# -- AUC -------------------------------------------------------------------------------------

def _confusion_at_thresholds(labels: Any, predictions: Any, thresholds: list[float],
                             weights: Any, api: str) -> tuple[dict, dict]:
    """Per threshold, the local (weighted) counts of tp, fn, tn and fp with
    ``prediction > threshold`` as positive; predictions are checked to lie in [0, 1]
    when the update runs."""
    predictions = _float32(predictions)
    in_range = _math.logical_and(_math.reduce_all(_math.greater_equal(predictions, 0.0)),
                                 _math.reduce_all(_math.less_equal(predictions, 1.0)))
    check = _assert(in_range, f"{api}: predictions must be in [0, 1]", "assert_in_range",
                    [("predictions", predictions)])
    with control_dependencies([check]):
        predictions, labels, weights = _remove_squeezable_dimensions(
            _array.identity(predictions), _math.cast(convert_to_tensor(labels), bool_),
            weights, api)
    pred_row = _array.reshape(predictions, [1, -1])
    label_pos = _array.reshape(labels, [1, -1])
    label_neg = _math.logical_not(label_pos)
    column = np.asarray(thresholds, np.float32).reshape(-1, 1)
    pred_pos = _math.greater(pred_row, column)  # [thresholds, n]
    pred_neg = _math.logical_not(pred_pos)
    w = None
    if weights is not None:
        w = _array.reshape(_broadcast_weights(weights, predictions, api), [1, -1])
    values, updates = {}, {}
    for key, label, pred, var_name in (("tp", label_pos, pred_pos, "true_positives"),
                                       ("fn", label_pos, pred_neg, "false_negatives"),
                                       ("tn", label_neg, pred_neg, "true_negatives"),
                                       ("fp", label_neg, pred_pos, "false_positives")):
        var = metric_variable([len(thresholds)], float32, var_name)
        hits = _math.cast(_math.logical_and(label, pred), float32)
        if w is not None:
            hits = hits * w
        values[key] = var.read_value()
        updates[key] = var.assign_add(_math.reduce_sum(hits, axis=1))
    return values, updates


def _interpolate_pr_auc(tp: Any, fp: Any, fn: Any, n: int) -> Any:
    """TensorFlow's careful interpolation of the precision-recall curve (Davis &
    Goadrich 2006), as metrics_impl's ``interpolate_pr_auc``."""
    dtp = tp[:n - 1] - tp[1:]
    p = tp + fp
    prec_slope = div_no_nan(dtp, _math.maximum(p[:n - 1] - p[1:], 0.0))
    intercept = tp[1:] - prec_slope * p[1:]
    both = _math.logical_and(_math.greater(p[:n - 1], 0.0), _math.greater(p[1:], 0.0))
    safe_ratio = _math.where(both, div_no_nan(p[:n - 1], _math.maximum(p[1:], 0.0)),
                             _array.ones_like(p[1:]))
    return _math.reduce_sum(div_no_nan(prec_slope * (dtp + intercept * _math.log(safe_ratio)),
                                       _math.maximum(tp[1:] + fn[1:], 0.0)))


def _auc_of(c: dict, n: int, curve: str, summation_method: str, name: str) -> Any:
    tp, fn, tn, fp = c["tp"], c["fn"], c["tn"], c["fp"]
    if curve == "PR" and summation_method == "careful_interpolation":
        return _array.identity(_interpolate_pr_auc(tp, fp, fn, n), name=name)
    epsilon = 1.0e-6
    rec = (tp + epsilon) / (tp + fn + epsilon)
    if curve == "ROC":
        x, y = fp / (fp + tn + epsilon), rec
    else:
        x, y = rec, (tp + epsilon) / (tp + fp + epsilon)
    if summation_method in ("trapezoidal", "careful_interpolation"):
        heights = (y[:n - 1] + y[1:]) / 2.0
    elif summation_method == "minoring":
        heights = _math.minimum(y[:n - 1], y[1:])
    else:
        heights = _math.maximum(y[:n - 1], y[1:])
    return _math.reduce_sum((x[:n - 1] - x[1:]) * heights, name=name)


@in_default_graph
def auc(labels: Any, predictions: Any, weights: Any = None, num_thresholds: int = 200,
        metrics_collections: Any = None, updates_collections: Any = None,
        curve: str = "ROC", name: str | None = None, summation_method: str = "trapezoidal",
        thresholds: Any = None) -> tuple[Any, Any]:
    """The area under the ROC (or ``curve="PR"``) curve, from counts at `num_thresholds`
    thresholds evenly spaced in [0, 1] (or the sorted `thresholds`, with -eps and 1+eps
    added), summed by the trapezoidal rule (or ``minoring``, ``majoring``,
    ``careful_interpolation``), as TensorFlow 1 computes it. Predictions must lie in
    [0, 1] (checked when the update runs); labels are cast to bool."""
    if curve not in ("ROC", "PR"):
        raise ValueError(f"tf.metrics.auc: curve must be either ROC or PR, got {curve!r}")
    if summation_method not in ("trapezoidal", "careful_interpolation", "minoring",
                                "majoring"):
        raise ValueError(f"tf.metrics.auc: invalid summation_method {summation_method!r}: "
                         f"should be 'trapezoidal', 'careful_interpolation', 'minoring', or "
                         f"'majoring'")
    kepsilon = 1e-7  # (TensorFlow's margin for floating-point imprecision)
    if thresholds is not None:
        inner = sorted(float(t) for t in thresholds)
        num_thresholds = len(inner) + 2
    else:
        if num_thresholds < 2:
            raise ValueError(f"tf.metrics.auc: num_thresholds must be at least 2, got "
                             f"{num_thresholds}")
        inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    edges = [0.0 - kepsilon] + inner + [1.0 + kepsilon]
    with _metric_scope(name, "auc"):
        values, updates = _confusion_at_thresholds(labels, predictions, edges, weights,
                                                   "tf.metrics.auc")
        value = _auc_of(values, num_thresholds, curve, summation_method, "value")
        update_op = _auc_of(updates, num_thresholds, curve, summation_method, "update_op")
    return _publish(value, update_op, metrics_collections, updates_collections)


__all__ = ["accuracy", "auc", "false_negatives", "false_positives", "mean",
           "mean_absolute_error", "mean_squared_error", "precision", "recall",
           "root_mean_squared_error", "true_negatives", "true_positives"]


def __dir__() -> list[str]:
    return sorted(__all__)
