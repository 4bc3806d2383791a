"""What `Model.compile` turns its `loss` and `metrics` arguments into: a
`LossesContainer` (one loss per model output, their weighted sum plus the
regularization losses, and the running mean 'loss' that `fit` reports) and a
`MetricsContainer` (the metrics of each output). Both are built at the first step, when
the shapes of labels and predictions are known (Keras picks the accuracy from them)."""

from __future__ import annotations

from typing import Any

import tensorweave as tw

from ...frontend import nest
from .. import losses as losses_mod
from .. import metrics as metrics_mod

__all__ = ["LossesContainer", "MetricsContainer", "match_dtype_and_rank", "conform_to_outputs"]


def match_dtype_and_rank(y_t: Any, y_p: Any, sw: Any) -> tuple[Any, Any, Any]:
    """tf_keras' alignment of labels and weights with predictions: a rank-1 label or
    weight beside rank-2 predictions gets a last dim of 1; labels take the predictions'
    dtype when both are float or both integer; weights take the predictions' dtype."""
    if len(y_t.shape) == 1 and len(y_p.shape) == 2:
        y_t = tw.expand_dims(y_t, -1)
    if sw is not None and len(sw.shape) == 1 and len(y_p.shape) == 2:
        sw = tw.expand_dims(sw, -1)
    if (y_t.dtype.is_floating and y_p.dtype.is_floating) or (
            y_t.dtype.is_integer and y_p.dtype.is_integer):
        y_t = tw.cast(y_t, y_p.dtype)
    if sw is not None:
        sw = tw.cast(sw, y_p.dtype)
    return y_t, y_p, sw


def conform_to_outputs(outputs: Any, struct: Any, output_names: list[str],
                       what: str) -> list[Any]:
    """`struct` (labels, weights, losses...) as one entry per flattened model output:
    a dict by output name, a list in order, or one value for a one-output model."""
    n = len(nest.flatten(outputs)[0])
    if struct is None:
        return [None] * n
    if isinstance(struct, dict):
        if isinstance(outputs, dict):
            names = list(outputs)
        else:
            names = output_names
        unknown = sorted(set(struct) - set(names))
        if unknown:
            raise ValueError(f"Unknown entries in {what} dictionary: {unknown}. Only "
                             f"expected the following keys: {names}")
        return [struct.get(name) for name in names]
    if n == 1 and not (isinstance(struct, (list, tuple)) and len(struct) == 1):
        return [struct]
    leaves = list(struct) if isinstance(struct, (list, tuple)) else [struct]
    if len(leaves) != n:
        raise ValueError(f"the model has {n} outputs ({', '.join(output_names)}) but "
                         f"{what} has {len(leaves)} entries")
    return leaves


def _broadcast(struct: Any, outputs: Any, output_names: list[str], what: str) -> list[Any]:
    """A loss or metrics argument per output: one loss (or a flat list of metrics) for
    every output, or a list / dict of them per output."""
    n = len(nest.flatten(outputs)[0])
    if isinstance(struct, dict):
        return conform_to_outputs(outputs, struct, output_names, what)
    if isinstance(struct, (list, tuple)) and what == "loss" and n > 1:
        return conform_to_outputs(outputs, list(struct), output_names, what)
    if isinstance(struct, (list, tuple)) and what != "loss":
        if n > 1 and len(struct) == n and all(isinstance(s, (list, tuple)) or s is None
                                              for s in struct):
            return list(struct)
        return [list(struct)] * n
    return [struct] * n


class LossesContainer:
    """The compiled loss: ``container(y_true, y_pred, sample_weight, regularization_losses)``
    is the total loss of a batch (weighted per-output losses plus regularization), and
    updates the 'loss' mean that `fit` reports (weighted by the batch size, as Keras)."""

    def __init__(self, losses: Any, loss_weights: Any = None,
                 output_names: list[str] | None = None) -> None:
        self._user_losses = losses
        self._user_loss_weights = loss_weights
        self._output_names = output_names
        self._loss_metric = metrics_mod.Mean(name="loss")
        self._losses: list[Any] = []
        self._loss_weights: list[Any] = []
        self._per_output_metrics: list[Any] = []
        self._built = False

    @property
    def metrics(self) -> list[Any]:
        """The 'loss' mean (and one per output of a model with several), once built."""
        if not self._built:
            return []
        return [self._loss_metric] + [m for m in self._per_output_metrics if m is not None]

    def build(self, y_pred: Any, output_names: list[str]) -> None:
        names = self._output_names or output_names
        losses = _broadcast(self._user_losses, y_pred, names, "loss")
        self._losses = [self._loss_object(x) for x in losses]
        weights = self._user_loss_weights
        self._loss_weights = (conform_to_outputs(y_pred, weights, names, "loss_weights")
                              if weights is not None else [None] * len(self._losses))
        if len(self._losses) > 1:
            self._per_output_metrics = [None if loss is None else
                                        metrics_mod.Mean(name=f"{name}_loss")
                                        for loss, name in zip(self._losses, names)]
        else:
            self._per_output_metrics = [None]
        self._built = True

    @staticmethod
    def _loss_object(loss: Any) -> Any:
        if loss is None:
            return None
        obj = losses_mod.get(loss)
        if isinstance(obj, losses_mod.Loss):
            return obj
        name = loss if isinstance(loss, str) else getattr(obj, "__name__", "loss")
        return losses_mod.LossFunctionWrapper(obj, name=name)

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None,
                 regularization_losses: list[Any] | None = None,
                 output_names: list[str] | None = None) -> Any:
        names = self._output_names or output_names or []
        if not self._built:
            self.build(y_pred, names)
        y_true = conform_to_outputs(y_pred, y_true, names, "y")
        sample_weight = conform_to_outputs(y_pred, sample_weight, names, "sample_weight")
        preds = nest.flatten(y_pred)[0]
        loss_values, metric_values = [], []
        batch_dim = None
        for y_t, y_p, sw, loss_obj, weight, metric in zip(
                y_true, preds, sample_weight, self._losses, self._loss_weights,
                self._per_output_metrics):
            if y_t is None or loss_obj is None:
                continue
            y_t, y_p, sw = match_dtype_and_rank(tw.convert_to_tensor(y_t), y_p,
                                                None if sw is None else tw.convert_to_tensor(sw))
            value = loss_obj(y_t, y_p, sample_weight=sw)
            metric_value = value
            if getattr(loss_obj, "reduction", None) == losses_mod.Reduction.SUM:
                metric_value = value / tw.cast(tw.shape(y_p)[0], value.dtype)
            if batch_dim is None:
                batch_dim = tw.shape(y_t)[0]
            if metric is not None:
                metric.update_state(metric_value, sample_weight=batch_dim)
            if weight is not None:
                value = value * weight
                metric_value = metric_value * weight
            loss_values.append(value)
            metric_values.append(metric_value)
        if regularization_losses:
            reg = tw.add_n([tw.cast(r, tw.float32) for r in regularization_losses])
            loss_values.append(reg)
            metric_values.append(reg)
        if not loss_values:
            return tw.zeros(())
        if batch_dim is None:
            batch_dim = tw.shape(preds[0])[0]
        total_metric = tw.add_n(metric_values) if len(metric_values) > 1 else metric_values[0]
        self._loss_metric.update_state(total_metric, sample_weight=batch_dim)
        return tw.add_n(loss_values) if len(loss_values) > 1 else loss_values[0]

    def reset_state(self) -> None:
        for m in self.metrics:
            m.reset_state()


class MetricsContainer:
    """The compiled metrics of each output: `metrics` use no sample weights,
    `weighted_metrics` use them (as tf_keras)."""

    def __init__(self, metrics: Any = None, weighted_metrics: Any = None,
                 output_names: list[str] | None = None) -> None:
        self._user_metrics = metrics
        self._user_weighted_metrics = weighted_metrics
        self._output_names = output_names
        self._metrics: list[list[Any]] = []
        self._weighted_metrics: list[list[Any]] = []
        self._built = False

    @property
    def metrics(self) -> list[Any]:
        """The metric objects, in compile order, each once (once built)."""
        if not self._built:
            return []
        out, seen = [], set()
        for group in self._metrics + self._weighted_metrics:
            for m in group:
                if m is not None and id(m) not in seen:
                    seen.add(id(m))
                    out.append(m)
        return out

    def build(self, y_pred: Any, y_true: list[Any], output_names: list[str]) -> None:
        names = self._output_names or output_names
        preds = nest.flatten(y_pred)[0]
        multi = len(preds) > 1
        per_output = _broadcast(self._user_metrics, y_pred, names, "metrics")
        weighted = _broadcast(self._user_weighted_metrics, y_pred, names, "weighted_metrics")
        used: set[str] = set()

        def resolve(group: Any, y_t: Any, y_p: Any, name: str, prefix: str) -> list[Any]:
            if group is None:
                return []
            group = list(group) if isinstance(group, (list, tuple)) else [group]
            out = []
            for metric in group:
                if metric is None:
                    continue
                obj = self._metric_object(metric, y_t, y_p)
                base = obj.name
                if multi:
                    base = f"{name}_{base}"
                if prefix:
                    base = f"{prefix}{base}"
                final, n = base, 0
                while final in used:   # tf_keras numbers repeated names
                    n += 1
                    final = f"{base}_{n}"
                used.add(final)
                obj._module_name = final
                out.append(obj)
            return out

        self._metrics = [resolve(g, y_t, y_p, n, "")
                         for g, y_t, y_p, n in zip(per_output, y_true, preds, names)]
        self._weighted_metrics = [resolve(g, y_t, y_p, n, "weighted_")
                                  for g, y_t, y_p, n in zip(weighted, y_true, preds, names)]
        self._built = True

    @staticmethod
    def _metric_object(metric: Any, y_t: Any, y_p: Any) -> Any:
        """A `Metric` for a metric argument; 'accuracy' and 'crossentropy' picked from
        the shapes, as tf_keras' ``_get_metric_object``."""
        if isinstance(metric, metrics_mod.Metric):
            return metric
        if metric in ("accuracy", "acc", "crossentropy", "ce"):
            t_rank, p_rank = len(y_t.shape), len(y_p.shape)
            t_last = y_t.shape[-1] if t_rank else None
            p_last = y_p.shape[-1] if p_rank else None
            is_binary = p_last == 1
            is_sparse = t_rank < p_rank or (t_last == 1 and p_last != 1)
            if metric in ("accuracy", "acc"):
                fn = (metrics_mod.binary_accuracy if is_binary else
                      metrics_mod.sparse_categorical_accuracy if is_sparse else
                      metrics_mod.categorical_accuracy)
            else:
                fn = (losses_mod.binary_crossentropy if is_binary else
                      losses_mod.sparse_categorical_crossentropy if is_sparse else
                      losses_mod.categorical_crossentropy)
            return metrics_mod.MeanMetricWrapper(fn, name=metric)
        obj = metrics_mod.get(metric)
        if isinstance(obj, metrics_mod.Metric):
            return obj
        name = (metric if isinstance(metric, str) else getattr(obj, "name", None)
                or getattr(obj, "__name__", "metric"))
        return metrics_mod.MeanMetricWrapper(obj, name=name)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None,
                     output_names: list[str] | None = None) -> None:
        names = self._output_names or output_names or []
        y_true = conform_to_outputs(y_pred, y_true, names, "y")
        sample_weight = conform_to_outputs(y_pred, sample_weight, names, "sample_weight")
        if not self._built:
            self.build(y_pred, [None if y is None else tw.convert_to_tensor(y) for y in y_true],
                       names)
        preds = nest.flatten(y_pred)[0]
        for y_t, y_p, sw, group, weighted in zip(y_true, preds, sample_weight, self._metrics,
                                                  self._weighted_metrics):
            if y_t is None or (not group and not weighted):
                continue
            y_t, y_p, sw = match_dtype_and_rank(tw.convert_to_tensor(y_t), y_p,
                                                None if sw is None else tw.convert_to_tensor(sw))
            for m in group:
                m.update_state(y_t, y_p)
            for m in weighted:
                m.update_state(y_t, y_p, sample_weight=sw)

    def reset_state(self) -> None:
        for m in self.metrics:
            m.reset_state()
