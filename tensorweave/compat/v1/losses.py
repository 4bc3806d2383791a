"""``tf.losses`` of TensorFlow 1 (``tf.compat.v1.losses``): per-element losses reduced
by `compute_weighted_loss` and recorded in the graph's ``LOSSES`` collection.

As TensorFlow 1's ``losses_impl.py``: the regression and hinge losses cast `labels` and
`predictions` to float32 first (their result is float32 whatever the inputs); the
cross-entropy losses keep the logits' dtype, but `compute_weighted_loss` reduces in
float32 and casts back, so a float64 loss has float32 precision. `weights` is a scalar
or has the rank of the per-element losses with each dim 1 or equal to theirs (checked
while building where the dims are known, else by an op at run time).
"""

from __future__ import annotations

from typing import Any

from ...compiler.dtypes import float32, int32
from ...compiler.types import format_shape
from ...errors import ShapeError
from ...frontend.building import convert_to_tensor
from ...frontend.call_site import user_location
from ...frontend.context import control_dependencies, name_scope
from ...frontend.ops import array as _array
from ...frontend.ops import math as _math
from ...frontend.ops import nn as _nn
from ...frontend.ops.activations import sigmoid_cross_entropy_with_logits
from ...frontend.ops.debugging import _assert
from .graph import GraphKeys, get_collection, get_default_graph, in_default_graph

LOSSES = GraphKeys.LOSSES


class Reduction:
    """How `compute_weighted_loss` reduces the weighted per-element losses."""

    NONE = "none"                                     # the weighted losses, unreduced
    SUM = "weighted_sum"                              # their sum
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"  # sum / number of elements
    MEAN = "weighted_mean"                            # sum / sum of the weights
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"  # sum / count of weights != 0
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple[str, ...]:
        """Every reduction key."""
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS, cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key: Any) -> None:
        """ValueError unless `key` is one of `all()`."""
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key!r}. Key should be one of "
                             f"{cls.all()}.")


def _where() -> str | None:
    loc = user_location()
    return str(loc) if loc is not None else None


def div_no_nan(x: Any, y: Any, name: str | None = None) -> Any:
    """``x / y``, and 0 where ``y == 0`` (TensorFlow's ``tf.div_no_nan``). The divisor is
    replaced by 1 where it is 0 before dividing, so the gradient there is 0, not NaN."""
    x, y = convert_to_tensor(x), convert_to_tensor(y, dtype=convert_to_tensor(x).dtype)
    zero = _math.equal(y, _array.zeros_like(y))
    safe = _math.where(zero, _array.ones_like(y), y)
    return _math.where(zero, _array.zeros_like(_math.divide(x, safe)), _math.divide(x, safe),
                       name=name)


def _to_float32(x: Any) -> Any:
    t = convert_to_tensor(x)
    return t if t.dtype is float32 else _math.cast(t, float32)


def _same_shape(a: Any, b: Any, api: str, what: tuple[str, str]) -> None:
    """ShapeError unless the static shapes of `a` and `b` are compatible (TensorFlow's
    ``assert_is_compatible_with``: same rank, equal dims where both are known; a shape
    of unknown rank is compatible with any)."""
    if not a.shape.is_compatible_with(b.shape):
        raise ShapeError(f"{what[0]} of shape {list(a.shape)} and {what[1]} of shape "
                         f"{list(b.shape)} must have the same shape", op=api, location=_where())


def assert_broadcastable(weights: Any, values: Any, api: str = "tf.losses") -> Any:
    """Check that `weights` may scale `values`: a scalar, or the rank of `values` with
    each dim 1 or equal to theirs. Known dims are checked at once (ShapeError, a
    ValueError); the others by an Assert op, returned (None when nothing is left to
    check at run time)."""
    w, v = convert_to_tensor(weights), convert_to_tensor(values)
    if w.shape.rank == 0:
        return None
    prefix = "weights can not be broadcast to values."
    if w.shape.rank is None or v.shape.rank is None:
        # (TensorFlow checks the ranks at run time; here the check is built on them)
        raise ShapeError(f"{prefix} weights of shape {format_shape(w.shape)} and values "
                         f"of shape {format_shape(v.shape)}: tensorweave checks weights "
                         f"against values while the graph is built and needs both ranks "
                         f"(scalar weights need none); give the placeholder a shape",
                         op=api, location=_where())
    ws, vs = tuple(w.shape), tuple(v.shape)
    if len(ws) != len(vs):
        raise ShapeError(f"{prefix} values.rank={len(vs)}. weights.rank={len(ws)}. "
                         f"values.shape={list(vs)}. weights.shape={list(ws)}", op=api,
                         location=_where())
    dynamic = []
    for i, (wd, vd) in enumerate(zip(ws, vs)):
        if wd is not None and vd is not None:
            if wd not in (1, vd):
                raise ShapeError(f"{prefix} Mismatch at dim {i}. values.shape={list(vs)}, "
                                 f"weights.shape={list(ws)}", op=api, location=_where())
        elif wd != 1:
            dynamic.append(i)
    if not dynamic:
        return None
    w_shape, v_shape = _array.shape(w, out_type=int32), _array.shape(v, out_type=int32)
    ok = [_math.logical_or(_math.equal(w_shape[i], 1), _math.equal(w_shape[i], v_shape[i]))
          for i in dynamic]
    return _assert(_math.reduce_all(_array.stack(ok)),
                   f"{api}: {prefix} weights.shape={list(ws)}, values.shape={list(vs)} "
                   f"(the dims left unknown while building differ)",
                   "assert_broadcastable", [("weights.shape", w_shape),
                                            ("values.shape", v_shape)])


def _num_present(losses: Any, weights: Any) -> Any:
    """How many elements of `losses` have a nonzero weight (weights broadcast)."""
    present = _math.where(_math.equal(weights, _array.zeros_like(weights)),
                          _array.zeros_like(weights), _array.ones_like(weights))
    return _math.reduce_sum(_math.multiply(present, _array.ones_like(losses)))


def _reduce(losses: Any, weights: Any, reduction: str) -> Any:
    weighted = _math.multiply(losses, weights)
    if reduction == Reduction.NONE:
        return weighted
    total = _math.reduce_sum(weighted)
    if reduction == Reduction.MEAN:
        return div_no_nan(total, _math.reduce_sum(_math.multiply(_array.ones_like(losses),
                                                                 weights)), name="value")
    if reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
        return div_no_nan(total, _num_present(losses, weights), name="value")
    if reduction == Reduction.SUM_OVER_BATCH_SIZE:
        return div_no_nan(total, _math.cast(_array.size(losses), float32), name="value")
    return total


@in_default_graph
def compute_weighted_loss(losses: Any, weights: Any = 1.0, scope: str | None = None,
                          loss_collection: str | None = LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Any:
    """``losses * weights`` reduced by `reduction` (default: the sum over the count of
    nonzero weights), computed in float32 and cast back to the dtype of `losses`, and
    added to `loss_collection` (None: to none)."""
    with name_scope(scope or "weighted_loss"):
        return _weighted_loss(losses, weights, loss_collection, reduction)


def _weighted_loss(losses: Any, weights: Any, loss_collection: str | None,
                   reduction: str) -> Any:
    """`compute_weighted_loss` in the current name scope: each loss reduces in its own
    scope, as TensorFlow 1's (``mean_squared_error/value``), so `get_losses(scope=...)`
    finds it by the loss's name."""
    Reduction.validate(reduction)
    losses = convert_to_tensor(losses)
    input_dtype = losses.dtype
    check = assert_broadcastable(weights, losses, "tf.losses.compute_weighted_loss")
    with control_dependencies([check] if check is not None else None):
        loss = _reduce(_to_float32(losses), _to_float32(weights), reduction)
        if loss.dtype is not input_dtype:
            loss = _math.cast(loss, input_dtype)
        elif check is not None:  # (the check must gate the result)
            loss = _array.identity(loss)
    add_loss(loss, loss_collection)
    return loss


def _required(**args: Any) -> None:
    for name, value in args.items():
        if value is None:
            raise ValueError(f"Argument `{name}` must not be None.")


def _pair(api: str, labels: Any, predictions: Any, what: str = "predictions") -> tuple[Any, Any]:
    """`labels` and `predictions` cast to float32 and checked to have one shape."""
    _required(labels=labels, **{what: predictions})
    predictions, labels = _to_float32(predictions), _to_float32(labels)
    _same_shape(predictions, labels, api, (what, "labels"))
    return labels, predictions


@in_default_graph
def absolute_difference(labels: Any, predictions: Any, weights: Any = 1.0,
                        scope: str | None = None, loss_collection: str | None = LOSSES,
                        reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Any:
    """``|predictions - labels|``, weighted and reduced (float32)."""
    with name_scope(scope or "absolute_difference"):
        labels, predictions = _pair("tf.losses.absolute_difference", labels, predictions)
        losses = _math.abs(_math.subtract(predictions, labels))
        return _weighted_loss(losses, weights, loss_collection, reduction)


@in_default_graph
def mean_squared_error(labels: Any, predictions: Any, weights: Any = 1.0,
                       scope: str | None = None, loss_collection: str | None = LOSSES,
                       reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Any:
    """``(predictions - labels)**2``, weighted and reduced (float32)."""
    with name_scope(scope or "mean_squared_error"):
        labels, predictions = _pair("tf.losses.mean_squared_error", labels, predictions)
        losses = _math.squared_difference(predictions, labels)
        return _weighted_loss(losses, weights, loss_collection, reduction)


@in_default_graph
def huber_loss(labels: Any, predictions: Any, weights: Any = 1.0, delta: float = 1.0,
               scope: str | None = None, loss_collection: str | None = LOSSES,
               reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Any:
    """``0.5 e**2`` where ``|e| <= delta``, else ``delta * (|e| - 0.5 delta)``, with
    ``e = predictions - labels``, weighted and reduced (float32)."""
    with name_scope(scope or "huber_loss"):
        labels, predictions = _pair("tf.losses.huber_loss", labels, predictions)
        abs_error = _math.abs(_math.subtract(predictions, labels))
        quadratic = _math.minimum(abs_error, delta)
        # abs_error - quadratic, not max(abs_error - delta, 0): its gradient is 0 at
        # |e| == delta, where the quadratic term already contributes (TensorFlow's choice)
        linear = _math.subtract(abs_error, quadratic)
        losses = 0.5 * quadratic * quadratic + delta * linear
        return _weighted_loss(losses, weights, loss_collection, reduction)


@in_default_graph
def log_loss(labels: Any, predictions: Any, weights: Any = 1.0, epsilon: float = 1e-7,
             scope: str | None = None, loss_collection: str | None = LOSSES,
             reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Any:
    """``-labels log(predictions + eps) - (1 - labels) log(1 - predictions + eps)``,
    weighted and reduced (float32)."""
    with name_scope(scope or "log_loss"):
        labels, predictions = _pair("tf.losses.log_loss", labels, predictions)
        losses = (-labels * _math.log(predictions + epsilon)
                  - (1 - labels) * _math.log(1 - predictions + epsilon))
        return _weighted_loss(losses, weights, loss_collection, reduction)


@in_default_graph
def hinge_loss(labels: Any, logits: Any, weights: Any = 1.0, scope: str | None = None,
               loss_collection: str | None = LOSSES,
               reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Any:
    """``max(0, 1 - (2 labels - 1) logits)`` for labels in {0, 1}, weighted and reduced
    (float32)."""
    with name_scope(scope or "hinge_loss"):
        labels, logits = _pair("tf.losses.hinge_loss", labels, logits, "logits")
        signs = 2 * labels - 1
        losses = _math.relu(1 - signs * logits)
        return _weighted_loss(losses, weights, loss_collection, reduction)


@in_default_graph
def cosine_distance(labels: Any, predictions: Any, axis: int | None = None,
                    weights: Any = 1.0, scope: str | None = None,
                    loss_collection: str | None = LOSSES,
                    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
                    dim: int | None = None) -> Any:
    """``1 - sum(labels * predictions, axis)`` (the inputs are expected unit-normalized
    along `axis`; `dim` is the old name), kept with a size-1 `axis`, weighted and
    reduced (float32)."""
    if axis is not None and dim is not None:
        raise ValueError("cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("You must specify argument `axis`.")
    with name_scope(scope or "cosine_distance_loss"):
        labels, predictions = _pair("tf.losses.cosine_distance", labels, predictions)
        losses = 1 - _math.reduce_sum(_math.multiply(predictions, labels), axis=(axis,),
                                      keepdims=True)
        return _weighted_loss(losses, weights, loss_collection, reduction)


@in_default_graph
def sigmoid_cross_entropy(multi_class_labels: Any, logits: Any, weights: Any = 1.0,
                          label_smoothing: float = 0, scope: str | None = None,
                          loss_collection: str | None = LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Any:
    """``sigmoid_cross_entropy_with_logits`` of labels (in the logits' dtype) smoothed
    towards 1/2: ``labels * (1 - label_smoothing) + 0.5 * label_smoothing``."""
    _required(multi_class_labels=multi_class_labels, logits=logits)
    with name_scope(scope or "sigmoid_cross_entropy_loss"):
        logits = convert_to_tensor(logits)
        labels = _math.cast(convert_to_tensor(multi_class_labels), logits.dtype)
        _same_shape(logits, labels, "tf.losses.sigmoid_cross_entropy",
                    ("logits", "multi_class_labels"))
        if label_smoothing > 0:
            labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
        losses = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits,
                                                   name="xentropy")
        return _weighted_loss(losses, weights, loss_collection, reduction)


@in_default_graph
def softmax_cross_entropy(onehot_labels: Any, logits: Any, weights: Any = 1.0,
                          label_smoothing: float = 0, scope: str | None = None,
                          loss_collection: str | None = LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Any:
    """Cross entropy of ``softmax(logits)`` against `onehot_labels` smoothed as
    ``labels * (1 - label_smoothing) + label_smoothing / num_classes``; one loss per
    example (`weights` scales examples), no gradient into the labels."""
    _required(onehot_labels=onehot_labels, logits=logits)
    api = "tf.losses.softmax_cross_entropy"
    with name_scope(scope or "softmax_cross_entropy_loss"):
        logits = convert_to_tensor(logits)
        labels = _math.cast(convert_to_tensor(onehot_labels), logits.dtype)
        _same_shape(logits, labels, api, ("logits", "onehot_labels"))
        if label_smoothing > 0:
            num_classes = _math.cast(_array.shape(labels, out_type=int32)[-1], logits.dtype)
            labels = labels * (1.0 - label_smoothing) + label_smoothing / num_classes
        from ...frontend.autodiff import stop_gradient
        labels = stop_gradient(labels)
        losses = _nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                       name="xentropy")
        return _weighted_loss(losses, weights, loss_collection, reduction)


def _squeeze_last(t: Any, api: str, what: str) -> Any:
    if t.shape[-1] not in (1, None):
        return t
    if t.shape[-1] is None:
        raise ShapeError(f"{what} has one dim more than expected, and its last dim (which "
                         f"must be 1 to be squeezed) is unknown: {list(t.shape)}", op=api,
                         location=_where())
    return _array.squeeze(t, [-1])


@in_default_graph
def sparse_softmax_cross_entropy(labels: Any, logits: Any, weights: Any = 1.0,
                                 scope: str | None = None,
                                 loss_collection: str | None = LOSSES,
                                 reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Any:
    """Cross entropy of ``softmax(logits)`` against integer class ids `labels` (rank one
    less than `logits`; a trailing size-1 dim of `labels`, and of `weights` then, is
    squeezed, as TensorFlow 1 does)."""
    _required(labels=labels, logits=logits)
    api = "tf.losses.sparse_softmax_cross_entropy"
    with name_scope(scope or "sparse_softmax_cross_entropy_loss"):
        labels, logits = convert_to_tensor(labels), convert_to_tensor(logits)
        weights = convert_to_tensor(weights)
        if None in (labels.shape.rank, logits.shape.rank):
            # (an unknown rank: no squeeze decided now; the op checks the ranks it runs at)
            losses = _nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=logits, name="xentropy")
            return _weighted_loss(losses, weights, loss_collection, reduction)
        if len(logits.shape) - len(labels.shape) == 0:
            labels = _squeeze_last(labels, api, "labels")
        if weights.shape.rank and len(weights.shape) - len(labels.shape) == 1:
            weights = _squeeze_last(weights, api, "weights")
        if len(logits.shape) - len(labels.shape) != 1:
            raise ShapeError(f"labels of shape {list(labels.shape)} must have one dim fewer "
                             f"than logits of shape {list(logits.shape)}", op=api,
                             location=_where())
        losses = _nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                              name="xentropy")
        return _weighted_loss(losses, weights, loss_collection, reduction)


# -- the LOSSES and REGULARIZATION_LOSSES collections ------------------------------------

def add_loss(loss: Any, loss_collection: str | None = LOSSES) -> None:
    """Add `loss` to `loss_collection` of the default graph (None or "": to none)."""
    if loss_collection:
        get_default_graph().add_to_collection(loss_collection, loss)


def get_losses(scope: str | None = None, loss_collection: str = LOSSES) -> list[Any]:
    """The losses of `loss_collection` (those whose name `scope` matches, when given)."""
    return get_collection(loss_collection, scope)


def get_regularization_losses(scope: str | None = None) -> list[Any]:
    """The ``REGULARIZATION_LOSSES`` collection (a variable's `regularizer` adds there)."""
    return get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


@in_default_graph
def get_regularization_loss(scope: str | None = None,
                            name: str = "total_regularization_loss") -> Any:
    """The sum of the regularization losses, or a float32 0 when there are none."""
    losses = get_regularization_losses(scope)
    if losses:
        return _math.add_n(losses, name=name)
    return convert_to_tensor(0.0)


@in_default_graph
def get_total_loss(add_regularization_losses: bool = True, name: str = "total_loss",
                   scope: str | None = None) -> Any:
    """The sum of `get_losses()` (and the regularization losses); ValueError when there
    is no loss at all (TensorFlow's add_n of nothing)."""
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses += get_regularization_losses(scope=scope)
    if not losses:
        raise ValueError("tf.losses.get_total_loss: no losses in the graph's LOSSES (or "
                         "REGULARIZATION_LOSSES) collection")
    return _math.add_n(losses, name=name)


__all__ = ["Reduction", "absolute_difference", "add_loss", "compute_weighted_loss",
           "cosine_distance", "get_losses", "get_regularization_loss",
           "get_regularization_losses", "get_total_loss", "hinge_loss", "huber_loss",
           "log_loss", "mean_squared_error", "sigmoid_cross_entropy", "softmax_cross_entropy",
           "sparse_softmax_cross_entropy"]


def __dir__() -> list[str]:
    return sorted(__all__)
