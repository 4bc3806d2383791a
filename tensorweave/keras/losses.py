"""``tw.keras.losses``: Keras' losses, as functions of ``(y_true, y_pred)`` giving one
value per example, and as `Loss` objects that weight and reduce them (tf_keras 2.x:
``'sum_over_batch_size'`` by default, sample weights broadcast against the per-example
losses).

A cross entropy given probabilities (``from_logits=False``) that a softmax or sigmoid
computed computes from their logits instead (`activations.logits_of`, or the op that
made the tensor in a trace), as tf_keras does."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import tensorweave as tw

from . import activations, backend, utils

__all__ = ["Loss", "LossFunctionWrapper", "Reduction", "MeanSquaredError", "MeanAbsoluteError",
           "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError", "BinaryCrossentropy",
           "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "Hinge", "SquaredHinge",
           "CategoricalHinge", "KLDivergence", "Poisson", "LogCosh", "Huber", "CosineSimilarity",
           "mean_squared_error", "mean_absolute_error", "mean_absolute_percentage_error",
           "mean_squared_logarithmic_error", "binary_crossentropy", "categorical_crossentropy",
           "sparse_categorical_crossentropy", "hinge", "squared_hinge", "categorical_hinge",
           "kl_divergence", "poisson", "log_cosh", "huber", "cosine_similarity", "mse", "mae",
           "mape", "msle", "kld", "kullback_leibler_divergence", "logcosh", "get", "serialize",
           "deserialize", "squeeze_or_expand_dimensions", "compute_weighted_loss"]


class Reduction:
    """How a `Loss` reduces the weighted per-example losses."""

    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key: str) -> None:
        if key not in cls.all():
            raise ValueError(f'Invalid Reduction Key: {key}. Expected keys are "{cls.all()}"')


# -- shapes and weights ----------------------------------------------------------------
def _last_is_1(shape: Any) -> bool:
    return len(shape) > 0 and shape[-1] in (1, None)


def _remove_squeezable(labels: Any, predictions: Any) -> tuple[Any, Any]:
    diff = len(predictions.shape) - len(labels.shape)
    if diff == 1 and _last_is_1(predictions.shape):
        predictions = tw.squeeze(predictions, [-1])
    elif diff == -1 and _last_is_1(labels.shape):
        labels = tw.squeeze(labels, [-1])
    return labels, predictions


def squeeze_or_expand_dimensions(y_pred: Any, y_true: Any = None,
                                 sample_weight: Any = None) -> tuple[Any, ...]:
    """tf_keras' alignment: drop a last dim of 1 from `y_pred` or `y_true` when their
    ranks differ by one, and squeeze or expand `sample_weight` to `y_pred`'s rank."""
    if y_true is not None:
        p_rank, t_rank = len(y_pred.shape), len(y_true.shape)
        if p_rank - t_rank != 1 or (p_rank and y_pred.shape[-1] == 1):
            y_true, y_pred = _remove_squeezable(y_true, y_pred)
    if sample_weight is None:
        return y_pred, y_true
    w_rank = len(sample_weight.shape)
    if w_rank == 0:
        return y_pred, y_true, sample_weight
    p_rank = len(y_pred.shape)
    if w_rank - p_rank == 1:
        sample_weight = tw.squeeze(sample_weight, [-1])
    elif p_rank - w_rank == 1:
        sample_weight = tw.expand_dims(sample_weight, -1)
    return y_pred, y_true, sample_weight


def compute_weighted_loss(losses: Any, sample_weight: Any = None,
                          reduction: str = Reduction.SUM_OVER_BATCH_SIZE) -> Any:
    """``losses * sample_weight`` reduced: summed, or summed and divided by the number of
    weighted values (``sum_over_batch_size``, 0 for none), or not at all."""
    losses = tw.convert_to_tensor(losses)
    if not losses.dtype.is_floating:
        losses = tw.cast(losses, tw.float32)
    if sample_weight is None:
        sample_weight = tw.constant(1.0, losses.dtype)
    sample_weight = tw.cast(tw.convert_to_tensor(sample_weight), losses.dtype)
    losses, _, sample_weight = squeeze_or_expand_dimensions(losses, None, sample_weight)
    weighted = losses * sample_weight
    if reduction == Reduction.NONE:
        return weighted
    total = tw.reduce_sum(weighted)
    if reduction == Reduction.SUM:
        return total
    count = tw.cast(tw.size(weighted), total.dtype)
    return tw.where(count > 0, total / tw.maximum(count, 1.0), tw.zeros_like(total))


# -- Loss objects ---------------------------------------------------------------------
class Loss:
    """Base class: ``loss(y_true, y_pred, sample_weight=None)`` is the reduced loss;
    subclasses define `call(y_true, y_pred)`, the per-example losses."""

    def __init__(self, reduction: str = Reduction.AUTO, name: str | None = None) -> None:
        Reduction.validate(reduction)
        self.reduction = reduction
        self.name = name or backend.to_snake_case(type(self).__name__)

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        losses = self.call(y_true, y_pred)
        reduction = (Reduction.SUM_OVER_BATCH_SIZE if self.reduction == Reduction.AUTO
                     else self.reduction)
        return compute_weighted_loss(losses, sample_weight, reduction)

    def call(self, y_true: Any, y_pred: Any) -> Any:
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        """The constructor's arguments."""
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Loss:
        return cls(**config)


class LossFunctionWrapper(Loss):
    """A `Loss` from a function ``fn(y_true, y_pred, **kwargs)`` of per-example losses."""

    def __init__(self, fn: Callable[..., Any], reduction: str = Reduction.AUTO,
                 name: str | None = None, **kwargs: Any) -> None:
        super().__init__(reduction=reduction, name=name)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        y_pred = tw.convert_to_tensor(y_pred) if not _is_tensor(y_pred) else y_pred
        y_true = tw.convert_to_tensor(y_true) if not _is_tensor(y_true) else y_true
        y_pred, y_true = squeeze_or_expand_dimensions(y_pred, y_true)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs}


def _is_tensor(x: Any) -> bool:
    return isinstance(x, (tw.Tensor, tw.EagerTensor))


def _wrapper(fn: Callable[..., Any], default_name: str, doc: str,
             **defaults: Any) -> type[LossFunctionWrapper]:
    """A `LossFunctionWrapper` subclass of `fn` whose constructor takes `defaults`."""
    def __init__(self, reduction: str = Reduction.AUTO, name: str = default_name,
                 **kwargs: Any) -> None:
        unknown = sorted(set(kwargs) - set(defaults))
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) "
                            f"{', '.join(unknown)}")
        LossFunctionWrapper.__init__(self, fn, reduction=reduction, name=name,
                                     **{**defaults, **kwargs})

    def from_config(cls, config):
        return cls(**config)

    return type("_Wrapper", (LossFunctionWrapper,), {"__init__": __init__, "__doc__": doc,
                                                     "from_config": classmethod(from_config)})


# -- per-example loss functions ----------------------------------------------------------
def _pred_true(y_true: Any, y_pred: Any) -> tuple[Any, Any]:
    y_pred = tw.convert_to_tensor(y_pred)
    return tw.cast(y_true, y_pred.dtype), y_pred


def mean_squared_error(y_true: Any, y_pred: Any) -> Any:
    """``mean(square(y_true - y_pred), axis=-1)``."""
    y_true, y_pred = _pred_true(y_true, y_pred)
    return tw.reduce_mean(tw.square(y_pred - y_true), axis=-1)


def mean_absolute_error(y_true: Any, y_pred: Any) -> Any:
    """``mean(abs(y_true - y_pred), axis=-1)``."""
    y_true, y_pred = _pred_true(y_true, y_pred)
    return tw.reduce_mean(tw.abs(y_pred - y_true), axis=-1)


def mean_absolute_percentage_error(y_true: Any, y_pred: Any) -> Any:
    """``100 * mean(abs((y_true - y_pred) / max(abs(y_true), epsilon)), axis=-1)``."""
    y_true, y_pred = _pred_true(y_true, y_pred)
    diff = tw.abs((y_true - y_pred) / tw.maximum(tw.abs(y_true), backend.epsilon()))
    return 100.0 * tw.reduce_mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true: Any, y_pred: Any) -> Any:
    """``mean(square(log(y_true + 1) - log(y_pred + 1)), axis=-1)`` (clipped at eps)."""
    y_true, y_pred = _pred_true(y_true, y_pred)
    first = tw.log(tw.maximum(y_pred, backend.epsilon()) + 1.0)
    second = tw.log(tw.maximum(y_true, backend.epsilon()) + 1.0)
    return tw.reduce_mean(tw.square(first - second), axis=-1)


def _logits(output: Any, op_type: str) -> Any:
    """The logits `output` was computed from by a softmax (``op_type`` 'Softmax') or
    sigmoid, or None."""
    logits = activations.logits_of(output)
    if logits is not None:
        return logits
    if isinstance(output, tw.Tensor):
        node = output.value.producer
        if node is not None and node.op == op_type and len(node.inputs) == 1:
            if op_type == "Softmax" and node.attrs.get("axis", -1) not in (
                    -1, len(output.shape) - 1):
                return None   # a softmax along another axis: its probabilities are used
            return tw.Tensor(node.inputs[0], output.builder)
    return None


def _backend_binary_crossentropy(target: Any, output: Any, from_logits: bool) -> Any:
    logits = _logits(output, "Sigmoid")
    if logits is not None:
        output, from_logits = logits, True
    if from_logits:
        return tw.nn.sigmoid_cross_entropy_with_logits(labels=target, logits=output)
    eps = backend.epsilon()
    output = tw.clip_by_value(output, eps, 1.0 - eps)
    bce = target * tw.log(output + eps)
    bce = bce + (1 - target) * tw.log(1 - output + eps)
    return -bce


def binary_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                        label_smoothing: float = 0.0, axis: int = -1) -> Any:
    """Mean over `axis` of the binary cross entropies of probabilities `y_pred` (or
    logits) against targets in [0, 1]; `label_smoothing` pulls targets to 0.5."""
    y_pred_t = y_pred if _is_tensor(y_pred) else tw.convert_to_tensor(y_pred)
    y_true = tw.cast(y_true, y_pred_t.dtype)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    return tw.reduce_mean(_backend_binary_crossentropy(y_true, y_pred_t, from_logits),
                          axis=axis)


def categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                             label_smoothing: float = 0.0, axis: int = -1) -> Any:
    """``-sum(y_true * log(y_pred), axis)`` for one-hot (or soft) targets; `y_pred`
    probabilities are renormalized and clipped to [eps, 1 - eps] (or are logits)."""
    if isinstance(axis, bool):
        raise ValueError(f"`axis` must be of type `int`. Received: axis={axis} of type "
                         f"{type(axis)}")
    output = y_pred if _is_tensor(y_pred) else tw.convert_to_tensor(y_pred)
    target = tw.cast(y_true, output.dtype)
    if label_smoothing:
        num_classes = tw.cast(tw.shape(target)[-1], output.dtype)
        target = target * (1.0 - label_smoothing) + label_smoothing / num_classes
    if len(target.shape) != len(output.shape) or any(
            a is not None and b is not None and a != b
            for a, b in zip(target.shape, output.shape)):
        raise ValueError(f"categorical_crossentropy: Shapes {tuple(target.shape)} and "
                         f"{tuple(output.shape)} are incompatible (use "
                         f"sparse_categorical_crossentropy for integer class labels)")
    logits = _logits(output, "Softmax")
    if logits is not None:
        output, from_logits = logits, True
    if from_logits:
        return tw.nn.softmax_cross_entropy_with_logits(labels=target, logits=output, axis=axis)
    output = output / tw.reduce_sum(output, axis, keepdims=True)
    eps = backend.epsilon()
    output = tw.clip_by_value(output, eps, 1.0 - eps)
    return -tw.reduce_sum(target * tw.log(output), axis)


def sparse_categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                                    axis: int = -1, ignore_class: int | None = None) -> Any:
    """The cross entropy of integer class labels `y_true` under probabilities (or
    logits) `y_pred` along `axis`: ``-log(y_pred[y_true])``."""
    if ignore_class is not None:
        raise NotImplementedError("sparse_categorical_crossentropy: ignore_class is not "
                                  "supported by tw.keras")
    output = y_pred if _is_tensor(y_pred) else tw.convert_to_tensor(y_pred)
    target = tw.cast(y_true, tw.int64)
    logits = _logits(output, "Softmax")
    if logits is not None:
        output, from_logits = logits, True
    if not from_logits:
        eps = backend.epsilon()
        output = tw.log(tw.clip_by_value(output, eps, 1 - eps))
    rank = len(output.shape)
    axis %= rank
    if axis != rank - 1:
        output = tw.transpose(output, [*range(axis), *range(axis + 1, rank), axis])
    out_shape = tuple(output.shape)
    update_shape = len(target.shape) != rank - 1
    if update_shape:
        target = tw.reshape(target, [-1])
        output = backend.reshape(output, [None, out_shape[-1]], "sparse_categorical_crossentropy")
    res = tw.nn.sparse_softmax_cross_entropy_with_logits(labels=target, logits=output)
    if update_shape and rank >= 3:
        res = backend.reshape(res, out_shape[:-1], "sparse_categorical_crossentropy")
    return res


def hinge(y_true: Any, y_pred: Any) -> Any:
    """``mean(max(1 - y_true * y_pred, 0), axis=-1)``; 0/1 targets become -1/1."""
    y_true, y_pred = _pred_true(y_true, y_pred)
    y_true = _as_signs(y_true)
    return tw.reduce_mean(tw.maximum(1.0 - y_true * y_pred, 0.0), axis=-1)


def squared_hinge(y_true: Any, y_pred: Any) -> Any:
    """``mean(square(max(1 - y_true * y_pred, 0)), axis=-1)``."""
    y_true, y_pred = _pred_true(y_true, y_pred)
    y_true = _as_signs(y_true)
    return tw.reduce_mean(tw.square(tw.maximum(1.0 - y_true * y_pred, 0.0)), axis=-1)


def _as_signs(y_true: Any) -> Any:
    # tf_keras maps labels in {0, 1} to {-1, 1} when every label is 0 or 1
    is_binary = tw.reduce_all(tw.logical_or(tw.equal(y_true, 0.0), tw.equal(y_true, 1.0)))
    return tw.where(is_binary, 2.0 * y_true - 1.0, y_true)


def categorical_hinge(y_true: Any, y_pred: Any) -> Any:
    """``max(neg - pos + 1, 0)`` with ``pos = sum(y_true * y_pred)`` and
    ``neg = max((1 - y_true) * y_pred)``."""
    y_true, y_pred = _pred_true(y_true, y_pred)
    pos = tw.reduce_sum(y_true * y_pred, axis=-1)
    neg = tw.reduce_max((1.0 - y_true) * y_pred, axis=-1)
    return tw.maximum(neg - pos + 1.0, 0.0)


def kl_divergence(y_true: Any, y_pred: Any) -> Any:
    """``sum(y_true * log(y_true / y_pred), axis=-1)``, both clipped to [eps, 1]."""
    y_true, y_pred = _pred_true(y_true, y_pred)
    eps = backend.epsilon()
    y_true = tw.clip_by_value(y_true, eps, 1.0)
    y_pred = tw.clip_by_value(y_pred, eps, 1.0)
    return tw.reduce_sum(y_true * tw.log(y_true / y_pred), axis=-1)


def poisson(y_true: Any, y_pred: Any) -> Any:
    """``mean(y_pred - y_true * log(y_pred + eps), axis=-1)``."""
    y_true, y_pred = _pred_true(y_true, y_pred)
    return tw.reduce_mean(y_pred - y_true * tw.log(y_pred + backend.epsilon()), axis=-1)


def log_cosh(y_true: Any, y_pred: Any) -> Any:
    """``mean(log(cosh(y_pred - y_true)), axis=-1)``, computed without overflow."""
    y_true, y_pred = _pred_true(y_true, y_pred)
    x = y_pred - y_true
    return tw.reduce_mean(x + tw.nn.softplus(-2.0 * x) - math.log(2.0),
                          axis=-1)


def huber(y_true: Any, y_pred: Any, delta: float = 1.0) -> Any:
    """``mean(0.5 * e**2 if |e| <= delta else delta * (|e| - 0.5 * delta), axis=-1)``."""
    y_true, y_pred = _pred_true(y_true, y_pred)
    error = y_pred - y_true
    abs_error = tw.abs(error)
    quadratic = 0.5 * tw.square(error)
    linear = delta * abs_error - 0.5 * delta * delta
    return tw.reduce_mean(tw.where(abs_error <= delta, quadratic, linear), axis=-1)


def cosine_similarity(y_true: Any, y_pred: Any, axis: int = -1) -> Any:
    """``-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)``."""
    y_true, y_pred = _pred_true(y_true, y_pred)
    y_true = tw.math.l2_normalize(y_true, axis=axis)
    y_pred = tw.math.l2_normalize(y_pred, axis=axis)
    return -tw.reduce_sum(y_true * y_pred, axis=axis)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence = kl_divergence
logcosh = log_cosh


MeanSquaredError = _wrapper(mean_squared_error, "mean_squared_error",
                            "Mean of squared errors.")
MeanAbsoluteError = _wrapper(mean_absolute_error, "mean_absolute_error",
                             "Mean of absolute errors.")
MeanAbsolutePercentageError = _wrapper(mean_absolute_percentage_error,
                                       "mean_absolute_percentage_error",
                                       "Mean absolute percentage error.")
MeanSquaredLogarithmicError = _wrapper(mean_squared_logarithmic_error,
                                       "mean_squared_logarithmic_error",
                                       "Mean squared logarithmic error.")
BinaryCrossentropy = _wrapper(binary_crossentropy, "binary_crossentropy",
                              "Binary cross entropy (``from_logits``, ``label_smoothing``).",
                              from_logits=False, label_smoothing=0.0, axis=-1)
CategoricalCrossentropy = _wrapper(categorical_crossentropy, "categorical_crossentropy",
                                   "Categorical cross entropy of one-hot targets.",
                                   from_logits=False, label_smoothing=0.0, axis=-1)
SparseCategoricalCrossentropy = _wrapper(sparse_categorical_crossentropy,
                                         "sparse_categorical_crossentropy",
                                         "Categorical cross entropy of integer labels.",
                                         from_logits=False, ignore_class=None, axis=-1)
Hinge = _wrapper(hinge, "hinge", "Hinge loss.")
SquaredHinge = _wrapper(squared_hinge, "squared_hinge", "Squared hinge loss.")
CategoricalHinge = _wrapper(categorical_hinge, "categorical_hinge", "Categorical hinge loss.")
KLDivergence = _wrapper(kl_divergence, "kl_divergence", "Kullback-Leibler divergence.")
Poisson = _wrapper(poisson, "poisson", "Poisson loss.")
LogCosh = _wrapper(log_cosh, "log_cosh", "Logarithm of the hyperbolic cosine of the error.")
Huber = _wrapper(huber, "huber_loss", "Huber loss (``delta``).", delta=1.0)
CosineSimilarity = _wrapper(cosine_similarity, "cosine_similarity",
                            "Negative cosine similarity.", axis=-1)

for _cls_name in ("MeanSquaredError", "MeanAbsoluteError", "MeanAbsolutePercentageError",
                  "MeanSquaredLogarithmicError", "BinaryCrossentropy", "CategoricalCrossentropy",
                  "SparseCategoricalCrossentropy", "Hinge", "SquaredHinge", "CategoricalHinge",
                  "KLDivergence", "Poisson", "LogCosh", "Huber", "CosineSimilarity"):
    globals()[_cls_name].__name__ = globals()[_cls_name].__qualname__ = _cls_name

_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "mean_squared_error": mean_squared_error, "mse": mean_squared_error,
    "MSE": mean_squared_error, "mean_absolute_error": mean_absolute_error,
    "mae": mean_absolute_error, "MAE": mean_absolute_error,
    "mean_absolute_percentage_error": mean_absolute_percentage_error,
    "mape": mean_absolute_percentage_error, "MAPE": mean_absolute_percentage_error,
    "mean_squared_logarithmic_error": mean_squared_logarithmic_error,
    "msle": mean_squared_logarithmic_error, "MSLE": mean_squared_logarithmic_error,
    "binary_crossentropy": binary_crossentropy,
    "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "hinge": hinge, "squared_hinge": squared_hinge, "categorical_hinge": categorical_hinge,
    "kl_divergence": kl_divergence, "kld": kl_divergence, "KLD": kl_divergence,
    "kullback_leibler_divergence": kl_divergence, "poisson": poisson,
    "log_cosh": log_cosh, "logcosh": log_cosh, "huber": huber, "huber_loss": huber,
    "cosine_similarity": cosine_similarity,
}
# the public Loss classes, by name (`get`, `deserialize`)
_CLASSES: dict[str, type[Loss]] = {
    name: cls for name, cls in globals().items()
    if name in __all__ and isinstance(cls, type) and issubclass(cls, Loss)}


def get(identifier: Any) -> Any:
    """A loss from a name (a function: ``'mse'``; a class: ``'MeanSquaredError'``), a
    `Loss`, a config dict, a callable, or None."""
    if identifier is None or isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, str):
        return utils.object_from_name(identifier, _FUNCTIONS, _CLASSES, "loss function",
                                      "losses")
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret loss function identifier: {identifier!r}")


def serialize(loss: Any) -> Any:
    """A name (built-in functions) or ``{'class_name', 'config'}`` (Loss objects)."""
    return utils.serialize_object(loss, Loss, _FUNCTIONS)


def deserialize(config: Any, custom_objects: dict[str, Any] | None = None) -> Any:
    """The loss `serialize` described (`custom_objects` first)."""
    return utils.deserialize_object(config, custom_objects, get, _CLASSES, "loss")
