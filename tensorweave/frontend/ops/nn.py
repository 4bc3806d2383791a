"""Neural-network op functions with TensorFlow's names and conventions (``tw.nn.*``).

Images are NHWC and filters HWIO (1-D: NWC and WIO; 3-D: NDHWC and DHWIO; depthwise
filters ``[h, w, in, multiplier]``). `strides`, `ksize` and `dilations` may be one int, two
ints (height, width) or four ints (NHWC, batch and channel entries 1), as in TensorFlow 2
(1-D: an int or ``[1, s, 1]``; 3-D: one, three or five ints);
`padding` is ``"SAME"``, ``"VALID"`` or, for convolutions, an explicit list
``[[0, 0], [top, bottom], [left, right], [0, 0]]``. Bad values are reported by the op's
type inference, so the error names the op and the line that made it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import DTypeError, InvalidArgumentError, ShapeError, UnimplementedError
from ..building import apply_op, apply_op1, convert_operands, convert_to_tensor, user_location
from ..context import name_scope
from ..tensor import Tensor
from . import math as m
from .array import expand_dims, pad, squeeze

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
    if axis == -1 and x.shape.rank is None:
        return x  # (the last axis of whatever rank x has)
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
                     name=name, default_name="conv2d")


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


def _require_format(data_format: str | None, expected: str, fn: str) -> None:
    if data_format not in (None, expected):
        raise UnimplementedError(f"{fn}: data_format={data_format!r} is not supported; "
                                 f"transpose the input to {expected}", location=str(user_location()))


def _ndhwc(value: IntOrInts | None, default: int = 1) -> tuple[int, ...] | Any:
    """An int, (d, h, w) or 5 NDHWC ints as a 5-tuple; other lengths go through unchanged
    so that the op's inference reports them."""
    if value is None:
        return (1, default, default, default, 1)
    if isinstance(value, (int, np.integer)):
        return (1, int(value), int(value), int(value), 1)
    seq = tuple(value)
    if len(seq) == 1:
        return (1, seq[0], seq[0], seq[0], 1)
    if len(seq) == 3:
        return (1, *seq, 1)
    return seq


def _one_spatial(value: IntOrInts | None, what: str, fn: str) -> int:
    """A 1-D window parameter: an int, [v] or TensorFlow's [1, v, 1]."""
    if value is None:
        return 1
    if isinstance(value, (int, np.integer)):
        return int(value)
    seq = tuple(value)
    if len(seq) == 1:
        return int(seq[0])
    if len(seq) == 3 and seq[0] == 1 and seq[2] == 1:
        return int(seq[1])
    raise InvalidArgumentError(f"{what} must be an int, [{what}] or [1, {what}, 1], got "
                               f"{list(seq)}", op=fn, location=str(user_location()))


def _check_rank(t: Tensor, rank: int, layout: str, role: str, fn: str) -> None:
    """A composite function's rank check, so the error names it (not the op it builds)."""
    if len(t.shape) != rank:
        raise ShapeError(f"{role} must have rank {rank} ({layout}), got {t.type}", op=fn,
                         location=str(user_location()))


def _padding_1d(padding: str | Sequence[Sequence[int]]) -> str | list[list[int]]:
    """1-D padding (a string or [[0, 0], [left, right], [0, 0]]) in conv2d's NHWC form."""
    if isinstance(padding, str):
        return padding
    pairs = [list(p) for p in padding]
    if len(pairs) != 3:
        raise InvalidArgumentError(f"explicit 1-D padding needs 3 [before, after] pairs (NWC), "
                                   f"got {pairs}", op="conv1d", location=str(user_location()))
    return [pairs[0], [0, 0], pairs[1], pairs[2]]


def conv1d(input: TensorLike, filters: TensorLike, stride: IntOrInts,  # noqa: A002
           padding: str | Sequence[Sequence[int]], data_format: str = "NWC",
           dilations: IntOrInts | None = None, name: str | None = None) -> Tensor:
    """1-D convolution of NWC `input` with WIO `filters` (``tf.nn.conv1d``).

    As in TensorFlow, the input and filter get a unit height and go through `conv2d` (so
    the cpu target runs its native convolution); the result is NWC again."""
    _require_format(data_format, "NWC", "conv1d")
    x, w = convert_operands(input, filters)
    _check_rank(x, 3, "NWC", "input", "conv1d")
    _check_rank(w, 3, "[width, in_channels, out_channels]", "filters", "conv1d")
    s = _one_spatial(stride, "stride", "conv1d")
    d = _one_spatial(dilations, "dilations", "conv1d")
    with name_scope(name or "conv1d"):
        y = conv2d(expand_dims(x, 1), expand_dims(w, 0), (1, 1, s, 1), _padding_1d(padding),
                   dilations=(1, 1, d, 1))
        return squeeze(y, [1])


def conv1d_transpose(input: TensorLike, filters: TensorLike, output_shape: Any,  # noqa: A002
                     strides: IntOrInts, padding: str = "SAME", data_format: str = "NWC",
                     dilations: IntOrInts | None = None, name: str | None = None) -> Tensor:
    """The transpose of `conv1d` (``tf.nn.conv1d_transpose``): `filters` are ``[width,
    output_channels, in_channels]`` and `output_shape` (NWC) is static."""
    _require_format(data_format, "NWC", "conv1d_transpose")
    x, w = convert_operands(input, filters)
    _check_rank(x, 3, "NWC", "input", "conv1d_transpose")
    _check_rank(w, 3, "[width, output_channels, in_channels]", "filters", "conv1d_transpose")
    shape = _static_shape(output_shape)
    if len(shape) != 3:
        raise ShapeError(f"output_shape must have 3 dims (NWC), got {list(shape)}",
                         op="conv1d_transpose", location=str(user_location()))
    n, width, c = shape
    s = _one_spatial(strides, "strides", "conv1d_transpose")
    d = _one_spatial(dilations, "dilations", "conv1d_transpose")
    with name_scope(name or "conv1d_transpose"):
        y = conv2d_backprop_input([n, 1, width, c], expand_dims(w, 0), expand_dims(x, 1),
                                  (1, 1, s, 1), padding, dilations=(1, 1, d, 1))
        return squeeze(y, [1])


def depthwise_conv2d(input: TensorLike, filter: TensorLike, strides: IntOrInts,  # noqa: A002
                     padding: str | Sequence[Sequence[int]], data_format: str | None = None,
                     dilations: IntOrInts | None = None, name: str | None = None) -> Tensor:
    """Depthwise 2-D convolution (``tf.nn.depthwise_conv2d``): NHWC `input`, `filter`
    ``[height, width, in_channels, channel_multiplier]``; output channel
    ``c * channel_multiplier + m`` is input channel `c` convolved with ``filter[:, :, c, m]``.
    `strides` and `dilations` take the forms `conv2d` takes."""
    _require_nhwc(data_format, "depthwise_conv2d")
    x, w = convert_operands(input, filter)
    return apply_op1("DepthwiseConv2dNative", [x, w], _conv_attrs(strides, padding, dilations),
                     name=name or "depthwise")


def depthwise_conv2d_backprop_input(input_sizes: Any, filter: TensorLike,  # noqa: A002
                                    out_backprop: TensorLike, strides: IntOrInts,
                                    padding: str | Sequence[Sequence[int]],
                                    data_format: str = "NHWC",
                                    dilations: IntOrInts | None = None,
                                    name: str | None = None) -> Tensor:
    """The gradient of `depthwise_conv2d` with respect to its input, of shape `input_sizes`
    (None or -1 for the batch dim, which then comes from `out_backprop`)."""
    _require_nhwc(data_format, "depthwise_conv2d_backprop_input")
    w, g = convert_operands(filter, out_backprop)
    attrs = {"input_shape": _static_shape(input_sizes), **_conv_attrs(strides, padding, dilations)}
    return apply_op1("DepthwiseConv2dNativeBackpropInput", [w, g], attrs,
                     name=name or "depthwise_backprop_input")


def depthwise_conv2d_backprop_filter(input: TensorLike, filter_sizes: Any,  # noqa: A002
                                     out_backprop: TensorLike, strides: IntOrInts,
                                     padding: str | Sequence[Sequence[int]],
                                     data_format: str = "NHWC",
                                     dilations: IntOrInts | None = None,
                                     name: str | None = None) -> Tensor:
    """The gradient of `depthwise_conv2d` with respect to its filter, of shape
    `filter_sizes`."""
    _require_nhwc(data_format, "depthwise_conv2d_backprop_filter")
    x, g = convert_operands(input, out_backprop)
    attrs = {"filter_shape": _static_shape(filter_sizes),
             **_conv_attrs(strides, padding, dilations)}
    return apply_op1("DepthwiseConv2dNativeBackpropFilter", [x, g], attrs,
                     name=name or "depthwise_backprop_filter")


def _conv3d_attrs(strides: IntOrInts, padding: str, dilations: IntOrInts | None) -> dict:
    return {"strides": _ndhwc(strides), "padding": padding, "dilations": _ndhwc(dilations)}


def conv3d(input: TensorLike, filters: TensorLike, strides: IntOrInts,  # noqa: A002
           padding: str, data_format: str = "NDHWC", dilations: IntOrInts | None = None,
           name: str | None = None) -> Tensor:
    """3-D convolution of NDHWC `input` with DHWIO `filters` (``tf.nn.conv3d``); `strides`
    and `dilations` are one int, three ints (depth, height, width) or five NDHWC ints;
    `padding` is ``"SAME"`` or ``"VALID"``."""
    _require_format(data_format, "NDHWC", "conv3d")
    x, w = convert_operands(input, filters)
    return apply_op1("Conv3D", [x, w], _conv3d_attrs(strides, padding, dilations),
                     name=name, default_name="conv3d")


def conv3d_backprop_input(input_sizes: Any, filters: TensorLike, out_backprop: TensorLike,
                          strides: IntOrInts, padding: str, data_format: str = "NDHWC",
                          dilations: IntOrInts | None = None, name: str | None = None) -> Tensor:
    """The gradient of `conv3d` with respect to its input, of shape `input_sizes` (None or
    -1 for the batch dim, which then comes from `out_backprop`)."""
    _require_format(data_format, "NDHWC", "conv3d_backprop_input")
    w, g = convert_operands(filters, out_backprop)
    attrs = {"input_shape": _static_shape(input_sizes),
             **_conv3d_attrs(strides, padding, dilations)}
    return apply_op1("Conv3DBackpropInputV2", [w, g], attrs, name=name or "conv3d_backprop_input")


def conv3d_backprop_filter(input: TensorLike, filter_sizes: Any,  # noqa: A002
                           out_backprop: TensorLike, strides: IntOrInts, padding: str,
                           data_format: str = "NDHWC", dilations: IntOrInts | None = None,
                           name: str | None = None) -> Tensor:
    """The gradient of `conv3d` with respect to its filter, of shape `filter_sizes`."""
    _require_format(data_format, "NDHWC", "conv3d_backprop_filter")
    x, g = convert_operands(input, out_backprop)
    attrs = {"filter_shape": _static_shape(filter_sizes),
             **_conv3d_attrs(strides, padding, dilations)}
    return apply_op1("Conv3DBackpropFilterV2", [x, g], attrs,
                     name=name or "conv3d_backprop_filter")


def conv3d_transpose(input: TensorLike, filters: TensorLike, output_shape: Any,  # noqa: A002
                     strides: IntOrInts, padding: str = "SAME", data_format: str = "NDHWC",
                     dilations: IntOrInts | None = None, name: str | None = None) -> Tensor:
    """The transpose of `conv3d` (``tf.nn.conv3d_transpose``): `filters` are ``[depth,
    height, width, output_channels, in_channels]`` and `output_shape` is static."""
    _require_format(data_format, "NDHWC", "conv3d_transpose")
    return conv3d_backprop_input(output_shape, filters, input, strides, padding,
                                 dilations=dilations, name=name or "conv3d_transpose")


def separable_conv2d(input: TensorLike, depthwise_filter: TensorLike,  # noqa: A002
                     pointwise_filter: TensorLike, strides: IntOrInts,
                     padding: str | Sequence[Sequence[int]], data_format: str | None = None,
                     dilations: IntOrInts | None = None, name: str | None = None) -> Tensor:
    """`depthwise_conv2d` (with `strides`, `padding`, `dilations`) followed by a 1x1
    `conv2d` with `pointwise_filter` ``[1, 1, in_channels * multiplier, out_channels]``
    (``tf.nn.separable_conv2d``); both run natively on the cpu target."""
    _require_nhwc(data_format, "separable_conv2d")
    x, dw, pw = convert_operands(input, depthwise_filter, pointwise_filter)
    if len(pw.shape) != 4 or tuple(pw.shape[:2]) != (1, 1):
        raise ShapeError(f"pointwise_filter must be [1, 1, in_channels * multiplier, "
                         f"out_channels], got {pw.type}", op="separable_conv2d",
                         location=str(user_location()))
    with name_scope(name or "separable_conv2d"):
        depthwise = depthwise_conv2d(x, dw, strides, padding, dilations=dilations)
        return conv2d(depthwise, pw, 1, "VALID")


def convolution(input: TensorLike, filters: TensorLike, strides: IntOrInts | None = None,  # noqa: A002
                padding: str = "VALID", data_format: str | None = None,
                dilations: IntOrInts | None = None, name: str | None = None) -> Tensor:
    """N-D convolution, N = 1, 2 or 3 from the filters' rank (``tf.nn.convolution``):
    `conv1d`, `conv2d` or `conv3d` with channels-last layouts; `strides` and `dilations`
    default to 1."""
    x, w = convert_operands(input, filters)
    rank = len(w.shape)
    if rank not in (3, 4, 5) or len(x.shape) != rank:
        raise ShapeError(f"input and filters must both have rank 3, 4 or 5 (1-D to 3-D), got "
                         f"{x.type} and {w.type}", op="convolution", location=str(user_location()))
    strides = 1 if strides is None else strides
    fn = {3: conv1d, 4: conv2d, 5: conv3d}[rank]
    return fn(x, w, strides, padding, data_format=data_format, dilations=dilations,
              name=name or "convolution")


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


def _pool_by_rank(kind: str, value: TensorLike, ksize: IntOrInts, strides: IntOrInts,
                  padding: str, data_format: str | None, name: str | None, fn: str) -> Tensor:
    """TensorFlow 2's N-D `max_pool`/`avg_pool`: the input's rank picks 1-D, 2-D or 3-D."""
    x = convert_to_tensor(value)
    rank = len(x.shape)
    if rank == 3:
        return _pool1d(max_pool2d if kind == "MAX" else avg_pool2d, x, ksize, strides,
                       padding, data_format or "NWC", name, fn)
    if rank == 5:
        return _pool3d("MaxPool3D" if kind == "MAX" else "AvgPool3D", x, ksize, strides,
                       padding, data_format or "NDHWC", name, fn)
    return _pool("MaxPool" if kind == "MAX" else "AvgPool", x, ksize, strides, padding,
                 data_format, name, fn)


def _pool_input(input: TensorLike, value: TensorLike, ksize: Any, strides: Any,  # noqa: A002
                padding: Any, fn: str) -> TensorLike:
    """The pooled tensor, given as TF2's `input` or TF1's `value` (exactly one); `ksize`,
    `strides` and `padding` must be given too (they have defaults only so that `input`
    may be a keyword)."""
    if (input is None) == (value is None):
        raise DTypeError(f"tw.nn.{fn}: give the tensor to pool as input (or TensorFlow 1's "
                         f"value), exactly once", location=str(user_location()))
    if ksize is None or strides is None or padding is None:
        raise DTypeError(f"tw.nn.{fn} needs ksize, strides and padding",
                         location=str(user_location()))
    return input if value is None else value


def max_pool(input: TensorLike = None, ksize: IntOrInts = None,  # noqa: A002
             strides: IntOrInts = None, padding: str | None = None,
             data_format: str | None = None, name: str | None = None, *,
             value: TensorLike = None) -> Tensor:
    """Max pooling of an NWC, NHWC or NDHWC `input`, chosen by its rank (``tf.nn.max_pool``;
    TensorFlow 1's 4-element `ksize` and `strides` work for NHWC).
    The tensor may also be given as TensorFlow 1's ``value=``."""
    x = _pool_input(input, value, ksize, strides, padding, "max_pool")
    return _pool_by_rank("MAX", x, ksize, strides, padding, data_format, name, "max_pool")


def avg_pool(input: TensorLike = None, ksize: IntOrInts = None,  # noqa: A002
             strides: IntOrInts = None, padding: str | None = None,
             data_format: str | None = None, name: str | None = None, *,
             value: TensorLike = None) -> Tensor:
    """Average pooling of an NWC, NHWC or NDHWC `input`, chosen by its rank
    (``tf.nn.avg_pool``; TensorFlow 1's 4-element `ksize` and `strides` work for NHWC).
    The tensor may also be given as TensorFlow 1's ``value=``."""
    x = _pool_input(input, value, ksize, strides, padding, "avg_pool")
    return _pool_by_rank("AVG", x, ksize, strides, padding, data_format, name, "avg_pool")


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


def _pool1d(pool2d: Any, input: TensorLike, ksize: IntOrInts,  # noqa: A002
            strides: IntOrInts, padding: str, data_format: str, name: str | None,
            fn: str) -> Tensor:
    """A 1-D pool as TensorFlow builds it: a unit height, the 2-D pool, the height dropped."""
    _require_format(data_format, "NWC", fn)
    x = convert_to_tensor(input)
    _check_rank(x, 3, "NWC", "input", fn)
    k = _one_spatial(ksize, "ksize", fn)
    s = _one_spatial(strides, "strides", fn)
    with name_scope(name or fn):
        return squeeze(pool2d(expand_dims(x, 1), (1, 1, k, 1), (1, 1, s, 1), padding), [1])


def max_pool1d(input: TensorLike, ksize: IntOrInts, strides: IntOrInts,  # noqa: A002
               padding: str, data_format: str = "NWC", name: str | None = None) -> Tensor:
    """The maximum over `ksize` windows of NWC `input` (``tf.nn.max_pool1d``); `ksize` and
    `strides` are an int, [k] or [1, k, 1]."""
    return _pool1d(max_pool2d, input, ksize, strides, padding, data_format, name, "max_pool1d")


def avg_pool1d(input: TensorLike, ksize: IntOrInts, strides: IntOrInts,  # noqa: A002
               padding: str, data_format: str = "NWC", name: str | None = None) -> Tensor:
    """The mean over `ksize` windows of NWC `input` (``tf.nn.avg_pool1d``); with ``"SAME"``
    padding each window averages only its real elements."""
    return _pool1d(avg_pool2d, input, ksize, strides, padding, data_format, name, "avg_pool1d")


def _pool3d(op: str, input: TensorLike, ksize: IntOrInts, strides: IntOrInts,  # noqa: A002
            padding: str, data_format: str, name: str | None, fn: str) -> Tensor:
    _require_format(data_format, "NDHWC", fn)
    attrs = {"ksize": _ndhwc(ksize), "strides": _ndhwc(strides), "padding": padding}
    return apply_op1(op, [convert_to_tensor(input)], attrs, name=name)


def max_pool3d(input: TensorLike, ksize: IntOrInts, strides: IntOrInts,  # noqa: A002
               padding: str, data_format: str = "NDHWC", name: str | None = None) -> Tensor:
    """The maximum over `ksize` windows of NDHWC `input` (``tf.nn.max_pool3d``); `ksize` and
    `strides` are an int, three ints or five NDHWC ints."""
    return _pool3d("MaxPool3D", input, ksize, strides, padding, data_format, name, "max_pool3d")


def avg_pool3d(input: TensorLike, ksize: IntOrInts, strides: IntOrInts,  # noqa: A002
               padding: str, data_format: str = "NDHWC", name: str | None = None) -> Tensor:
    """The mean over `ksize` windows of NDHWC `input` (``tf.nn.avg_pool3d``); with ``"SAME"``
    padding each window averages only its real elements."""
    return _pool3d("AvgPool3D", input, ksize, strides, padding, data_format, name, "avg_pool3d")


def max_pool3d_grad(orig_input: TensorLike, orig_output: TensorLike, grad: TensorLike,
                    ksize: IntOrInts, strides: IntOrInts, padding: str,
                    name: str | None = None) -> Tensor:
    """The gradient of `max_pool3d`: each window's gradient goes to its first maximum."""
    x, y, g = convert_operands(orig_input, orig_output, grad)
    attrs = {"ksize": _ndhwc(ksize), "strides": _ndhwc(strides), "padding": padding}
    return apply_op1("MaxPool3DGrad", [x, y, g], attrs, name=name)


def avg_pool3d_grad(orig_input_shape: Any, grad: TensorLike, ksize: IntOrInts,
                    strides: IntOrInts, padding: str, name: str | None = None) -> Tensor:
    """The gradient of `avg_pool3d` for an input of shape `orig_input_shape`."""
    attrs = {"orig_input_shape": _static_shape(orig_input_shape), "ksize": _ndhwc(ksize),
             "strides": _ndhwc(strides), "padding": padding}
    return apply_op1("AvgPool3DGrad", [convert_to_tensor(grad)], attrs, name=name)


_POOLS = {("MAX", 1): max_pool1d, ("MAX", 2): max_pool2d, ("MAX", 3): max_pool3d,
          ("AVG", 1): avg_pool1d, ("AVG", 2): avg_pool2d, ("AVG", 3): avg_pool3d}
_POOL_FORMATS = {1: "NWC", 2: "NHWC", 3: "NDHWC"}


def pool(input: TensorLike, window_shape: Sequence[int], pooling_type: str,  # noqa: A002
         strides: Sequence[int] | None = None, padding: str = "VALID",
         data_format: str | None = None, dilations: Sequence[int] | None = None,
         name: str | None = None) -> Tensor:
    """N-D max or average pooling, N = ``len(window_shape)`` in 1..3 (``tf.nn.pool``):
    `input` is ``[batch, *spatial, channels]``, `pooling_type` ``"MAX"`` or ``"AVG"``.

    Without dilation this is `max_pool1d` ... `avg_pool3d`. With ``dilations`` > 1 (strides
    must then be 1, as in TensorFlow) each window reads every d-th element; TensorFlow
    computes that through space-to-batch with zero padding, so a dilated SAME window
    counts padding as zeros (in a max too) and a dilated average divides by the whole
    window size. The dilated form is built from one strided slice per window tap."""
    x = convert_to_tensor(input)
    nd = len(window_shape)
    kind = pooling_type.upper() if isinstance(pooling_type, str) else pooling_type
    where = str(user_location())
    if (kind, nd) not in _POOLS:
        raise InvalidArgumentError(f"pooling_type must be 'MAX' or 'AVG' and window_shape "
                                   f"have 1 to 3 entries, got {pooling_type!r} and "
                                   f"{list(window_shape)}", op="pool", location=where)
    _require_format(data_format, _POOL_FORMATS[nd], "pool")
    _check_rank(x, nd + 2, _POOL_FORMATS[nd], "input", "pool")
    strides = [1] * nd if strides is None else [int(v) for v in strides]
    dilations = [1] * nd if dilations is None else [int(v) for v in dilations]
    if len(strides) != nd or len(dilations) != nd:
        raise InvalidArgumentError(f"strides and dilations need {nd} entries (one per window "
                                   f"dim), got {strides} and {dilations}", op="pool",
                                   location=where)
    if min(dilations) < 1 or min(strides) < 1 or min(window_shape) < 1:
        raise InvalidArgumentError(f"window_shape, strides and dilations must be >= 1, got "
                                   f"{list(window_shape)}, {strides}, {dilations}", op="pool",
                                   location=where)
    if max(dilations) == 1:
        window = window_shape[0] if nd == 1 else list(window_shape)
        return _POOLS[kind, nd](x, window, strides[0] if nd == 1 else strides, padding,
                                name=name)
    if max(strides) > 1:
        raise InvalidArgumentError(f"strides > 1 are not supported with dilations > 1 (as in "
                                   f"TensorFlow), got strides {strides}, dilations {dilations}",
                                   op="pool", location=where)
    if padding not in ("SAME", "VALID"):
        raise InvalidArgumentError(f"padding must be 'SAME' or 'VALID', got {padding!r}",
                                   op="pool", location=where)
    if kind == "AVG" and not x.dtype.is_floating:
        raise DTypeError(f"average pooling needs a floating-point input, got {x.type}",
                         op="pool", location=where)
    with name_scope(name or "pool"):
        return _dilated_pool(x, list(window_shape), dilations, padding, kind)


def _dilated_pool(x: Tensor, window: list[int], dilations: list[int], padding: str,
                  kind: str) -> Tensor:
    """Stride-1 dilated pooling as one strided slice per window tap (TensorFlow's
    space-to-batch semantics: SAME pads with zeros, which take part in the window)."""
    span = [(k - 1) * d for k, d in zip(window, dilations)]
    if padding == "SAME":
        x = pad(x, [[0, 0], *[[s // 2, s - s // 2] for s in span], [0, 0]])
    acc = None
    for tap in itertools.product(*(range(k) for k in window)):
        # tap t reads from t*d to the end less what the later taps still need
        index = (slice(None), *(slice(t * d, (t * d - s) or None)
                                for t, d, s in zip(tap, dilations, span)), slice(None))
        part = x[index]
        if acc is None:
            acc = part
        else:
            acc = m.maximum(acc, part) if kind == "MAX" else acc + part
    if kind == "AVG":
        acc = acc / np.asarray(int(np.prod(window)), x.dtype.np)
    return acc


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
           "bias_add", "bias_add_grad", "l2_loss",
           "conv1d", "conv1d_transpose", "depthwise_conv2d", "depthwise_conv2d_backprop_input",
           "depthwise_conv2d_backprop_filter", "conv3d", "conv3d_backprop_input",
           "conv3d_backprop_filter", "conv3d_transpose", "max_pool1d", "avg_pool1d",
           "max_pool3d", "avg_pool3d", "max_pool3d_grad", "avg_pool3d_grad", "pool",
           "separable_conv2d", "convolution"]
