"""Neural-network op functions with TensorFlow's names and conventions (``tw.nn.*``).

Images are NHWC and filters HWIO. `strides`, `ksize` and `dilations` may be one int, two
ints (height, width) or four ints (NHWC, batch and channel entries 1), as in TensorFlow 2;
`padding` is ``"SAME"``, ``"VALID"`` or, for convolutions, an explicit list
``[[0, 0], [top, bottom], [left, right], [0, 0]]``. Bad values are reported by the op's
type inference, so the error names the op and the line that made it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import UnimplementedError
from ..building import apply_op, apply_op1, convert_operands, convert_to_tensor, user_location
from ..tensor import Tensor

TensorLike = Any
IntOrInts = int | Sequence[int]


# ----------------------------------------------------------------------------- helpers

def _nhwc(value: IntOrInts | None, default: int = 1) -> tuple[int, ...] | Any:
    """An int, (h, w) or 4 NHWC ints as a 4-tuple; other lengths go through unchanged so
    that the op's inference reports them."""
    if value is None:
        return (1, default, default, 1)
    if isinstance(value, (int, np.integer)):
        return (1, int(value), int(value), 1)
    seq = tuple(value)
    if len(seq) == 1:
        return (1, seq[0], seq[0], 1)
    if len(seq) == 2:
        return (1, seq[0], seq[1], 1)
    return seq


def _padding_attrs(padding: str | Sequence[Sequence[int]]) -> dict[str, Any]:
    """``padding`` (a string, or TensorFlow's explicit [[b, a]] * 4 list) as op attributes."""
    if isinstance(padding, str):
        return {"padding": padding}
    pairs = [tuple(p) for p in padding]
    return {"padding": "EXPLICIT", "explicit_paddings": tuple(x for p in pairs for x in p)}


def _require_nhwc(data_format: str | None, fn: str) -> None:
    if data_format not in (None, "NHWC"):
        raise UnimplementedError(f"{fn}: data_format={data_format!r} is not supported; "
                                 f"transpose the input to NHWC", location=str(user_location()))


def _static_shape(shape: Any) -> tuple[int | None, ...]:
    """A shape given as a list/tuple, TensorShape-like or an eager tensor of ints."""
    if hasattr(shape, "numpy"):
        shape = shape.numpy().tolist()
    elif isinstance(shape, Tensor):
        producer = shape.op
        if producer is None or producer.op != "Const":
            raise UnimplementedError("an output shape must be known when the graph is built; "
                                     "pass a list of ints", location=str(user_location()))
        shape = producer.attrs["value"].tolist()
    return tuple(None if d is None or d == -1 else int(d) for d in shape)


# ------------------------------------------------------------------- softmax family

def softmax(logits: TensorLike, axis: int | None = None, name: str | None = None) -> Tensor:
    """``exp(logits) / reduce_sum(exp(logits), axis)``, computed stably (``tf.nn.softmax``)."""
    return apply_op1("Softmax", [convert_to_tensor(logits)],
                     {"axis": -1 if axis is None else axis}, name=name)


def log_softmax(logits: TensorLike, axis: int | None = None, name: str | None = None) -> Tensor:
    """``logits - log(reduce_sum(exp(logits), axis))``, computed stably."""
    return apply_op1("LogSoftmax", [convert_to_tensor(logits)],
                     {"axis": -1 if axis is None else axis}, name=name)


def _move_axis_last(x: Tensor, axis: int) -> Tensor:
    rank = len(x.shape)
    axis = axis % rank if rank else axis
    if axis == rank - 1:
        return x
    from .array import transpose  # the array family; only needed for a non-last axis
    perm = [i for i in range(rank) if i != axis] + [axis]
    return transpose(x, perm)


def softmax_cross_entropy_with_logits(labels: TensorLike, logits: TensorLike, axis: int = -1,
                                      name: str | None = None) -> Tensor:
    """Cross entropy between ``softmax(logits)`` and the distributions `labels` along
    `axis`; one loss per example (the shape of logits without `axis`). TensorFlow 2
    argument order: labels first (usually passed by keyword)."""
    logits, labels = convert_operands(logits, labels)
    logits, labels = _move_axis_last(logits, axis), _move_axis_last(labels, axis)
    return apply_op("SoftmaxCrossEntropyWithLogits", [logits, labels], name=name)[0]


softmax_cross_entropy_with_logits_v2 = softmax_cross_entropy_with_logits


def sparse_softmax_cross_entropy_with_logits(labels: TensorLike, logits: TensorLike,
                                             name: str | None = None) -> Tensor:
    """Cross entropy between ``softmax(logits)`` and integer class `labels` (int32/int64,
    the shape of logits without its last axis). A label outside ``[0, classes)`` raises
    InvalidArgumentError when the op runs."""
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels)
    return apply_op("SparseSoftmaxCrossEntropyWithLogits", [logits, labels], name=name)[0]


# -------------------------------------------------------------------------- convolution

def _conv_attrs(strides: IntOrInts, padding: Any, dilations: IntOrInts | None) -> dict:
    return {"strides": _nhwc(strides), **_padding_attrs(padding), "dilations": _nhwc(dilations)}


def conv2d(input: TensorLike, filters: TensorLike, strides: IntOrInts,  # noqa: A002
           padding: str | Sequence[Sequence[int]], data_format: str = "NHWC",
           dilations: IntOrInts | None = None, name: str | None = None) -> Tensor:
    """2-D convolution of NHWC `input` with HWIO `filters` (``tf.nn.conv2d``).

    Output ``[batch, out_height, out_width, out_channels]``; with ``"SAME"`` padding
    ``out = ceil(in / stride)``, with ``"VALID"`` ``out = ceil((in - (k - 1) * d) / stride)``.
    """
    _require_nhwc(data_format, "conv2d")
    x, w = convert_operands(input, filters)
    return apply_op1("Conv2D", [x, w], _conv_attrs(strides, padding, dilations),
                     name=name or "conv2d")


def conv2d_backprop_input(input_sizes: Any, filters: TensorLike, out_backprop: TensorLike,
                          strides: IntOrInts, padding: str | Sequence[Sequence[int]],
                          data_format: str = "NHWC", dilations: IntOrInts | None = None,
                          name: str | None = None) -> Tensor:
    """The gradient of `conv2d` with respect to its input, of shape `input_sizes` (a list;
    None or -1 for the batch dim, which then comes from `out_backprop`)."""
    _require_nhwc(data_format, "conv2d_backprop_input")
    w, g = convert_operands(filters, out_backprop)
    attrs = {"input_shape": _static_shape(input_sizes), **_conv_attrs(strides, padding, dilations)}
    return apply_op1("Conv2DBackpropInput", [w, g], attrs, name=name or "conv2d_backprop_input")


def conv2d_backprop_filter(input: TensorLike, filter_sizes: Any,  # noqa: A002
                           out_backprop: TensorLike, strides: IntOrInts,
                           padding: str | Sequence[Sequence[int]], data_format: str = "NHWC",
                           dilations: IntOrInts | None = None, name: str | None = None) -> Tensor:
    """The gradient of `conv2d` with respect to its filter, of shape `filter_sizes`."""
    _require_nhwc(data_format, "conv2d_backprop_filter")
    x, g = convert_operands(input, out_backprop)
    attrs = {"filter_shape": _static_shape(filter_sizes),
             **_conv_attrs(strides, padding, dilations)}
    return apply_op1("Conv2DBackpropFilter", [x, g], attrs, name=name or "conv2d_backprop_filter")


def conv2d_transpose(input: TensorLike, filters: TensorLike, output_shape: Any,  # noqa: A002
                     strides: IntOrInts, padding: str | Sequence[Sequence[int]] = "SAME",
                     data_format: str = "NHWC", dilations: IntOrInts | None = None,
                     name: str | None = None) -> Tensor:
    """The transpose of `conv2d` (``tf.nn.conv2d_transpose``): `filters` are
    ``[height, width, output_channels, in_channels]`` and `output_shape` is static."""
    _require_nhwc(data_format, "conv2d_transpose")
    return conv2d_backprop_input(output_shape, filters, input, strides, padding,
                                 dilations=dilations, name=name)


# ------------------------------------------------------------------------------ pooling

def _pool(op: str, input: TensorLike, ksize: IntOrInts, strides: IntOrInts,  # noqa: A002
          padding: str, data_format: str | None, name: str | None, fn: str) -> Tensor:
    _require_nhwc(data_format, fn)
    attrs = {"ksize": _nhwc(ksize), "strides": _nhwc(strides), "padding": padding}
    return apply_op1(op, [convert_to_tensor(input)], attrs, name=name)


def max_pool2d(input: TensorLike, ksize: IntOrInts, strides: IntOrInts, padding: str,  # noqa: A002
               data_format: str = "NHWC", name: str | None = None) -> Tensor:
    """The maximum over `ksize` windows of NHWC `input` (``tf.nn.max_pool2d``)."""
    return _pool("MaxPool", input, ksize, strides, padding, data_format, name, "max_pool2d")


def avg_pool2d(input: TensorLike, ksize: IntOrInts, strides: IntOrInts, padding: str,  # noqa: A002
               data_format: str = "NHWC", name: str | None = None) -> Tensor:
    """The mean over `ksize` windows of NHWC `input`; with ``"SAME"`` padding each window
    averages only its real elements (``tf.nn.avg_pool2d``)."""
    return _pool("AvgPool", input, ksize, strides, padding, data_format, name, "avg_pool2d")


def max_pool(value: TensorLike, ksize: IntOrInts, strides: IntOrInts, padding: str,
             data_format: str | None = "NHWC", name: str | None = None) -> Tensor:
    """`max_pool2d` with TensorFlow 1's spelling (4-element `ksize` and `strides`)."""
    return _pool("MaxPool", value, ksize, strides, padding, data_format, name, "max_pool")


def avg_pool(value: TensorLike, ksize: IntOrInts, strides: IntOrInts, padding: str,
             data_format: str | None = "NHWC", name: str | None = None) -> Tensor:
    """`avg_pool2d` with TensorFlow 1's spelling (4-element `ksize` and `strides`)."""
    return _pool("AvgPool", value, ksize, strides, padding, data_format, name, "avg_pool")


def max_pool_grad(orig_input: TensorLike, orig_output: TensorLike, grad: TensorLike,
                  ksize: IntOrInts, strides: IntOrInts, padding: str,
                  name: str | None = None) -> Tensor:
    """The gradient of `max_pool2d`: each window's gradient goes to its first maximum."""
    x, y, g = convert_operands(orig_input, orig_output, grad)
    attrs = {"ksize": _nhwc(ksize), "strides": _nhwc(strides), "padding": padding}
    return apply_op1("MaxPoolGrad", [x, y, g], attrs, name=name)


def avg_pool_grad(orig_input_shape: Any, grad: TensorLike, ksize: IntOrInts,
                  strides: IntOrInts, padding: str, name: str | None = None) -> Tensor:
    """The gradient of `avg_pool2d` for an input of shape `orig_input_shape`."""
    attrs = {"orig_input_shape": _static_shape(orig_input_shape), "ksize": _nhwc(ksize),
             "strides": _nhwc(strides), "padding": padding}
    return apply_op1("AvgPoolGrad", [convert_to_tensor(grad)], attrs, name=name)


# --------------------------------------------------------------------- bias and losses

def bias_add(value: TensorLike, bias: TensorLike, data_format: str | None = None,
             name: str | None = None) -> Tensor:
    """``value + bias`` with the vector `bias` added along the last (channel) axis."""
    _require_nhwc(data_format, "bias_add")
    value, bias = convert_operands(value, bias)
    return apply_op1("BiasAdd", [value, bias], name=name)


def bias_add_grad(out_backprop: TensorLike, data_format: str | None = None,
                  name: str | None = None) -> Tensor:
    """The gradient of `bias_add` w.r.t. the bias: sum over all but the last axis."""
    _require_nhwc(data_format, "bias_add_grad")
    return apply_op1("BiasAddGrad", [convert_to_tensor(out_backprop)], name=name)


def l2_loss(t: TensorLike, name: str | None = None) -> Tensor:
    """``sum(t ** 2) / 2`` as a scalar (``tf.nn.l2_loss``)."""
    return apply_op1("L2Loss", [convert_to_tensor(t)], name=name)


__all__ = ["softmax", "log_softmax", "softmax_cross_entropy_with_logits",
           "softmax_cross_entropy_with_logits_v2", "sparse_softmax_cross_entropy_with_logits",
           "conv2d", "conv2d_backprop_input", "conv2d_backprop_filter", "conv2d_transpose",
           "max_pool2d", "avg_pool2d", "max_pool", "avg_pool", "max_pool_grad", "avg_pool_grad",
           "bias_add", "bias_add_grad", "l2_loss"]
