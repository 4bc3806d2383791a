"""Neural-network ops: softmax and cross entropies, 2-D convolution and pooling (NHWC) with
their gradient ops, bias addition and the L2 loss.

Layouts follow TensorFlow: images are NHWC (``[batch, height, width, channels]``), conv
filters are HWIO (``[height, width, in_channels, out_channels]``), and `strides`,
`dilations` and `ksize` have four entries in NHWC order whose batch and channel entries
must be 1. Output sizes are TensorFlow's:

- ``VALID``: ``(in - eff + stride) // stride`` with ``eff = (k - 1) * dilation + 1``;
- ``SAME``: ``ceil(in / stride)``, padded with ``max((out - 1) * stride + eff - in, 0)``
  elements, the smaller half before;
- ``EXPLICIT`` (Conv2D only): `explicit_paddings` holds 8 ints, (before, after) for each
  NHWC axis, as in ``tf.nn.conv2d(padding=[[0, 0], [1, 1], [2, 2], [0, 0]])``.

The reference kernels are vectorized: convolution is im2col (a strided window view of
the padded input) followed by one matrix product; the data-gradient ops accumulate one
strided slice per filter tap. Half-precision inputs are computed in float32 and rounded
once at the end.

The gradient ops take their forward input's shape as an attribute (`input_shape`,
`filter_shape`, `orig_input_shape`) whose dims may be unknown (None) at trace time: the
batch and channel dims are then taken from the other operands at run time, and the
optional last operand (`input_like`) is any tensor with the forward input's shape (usually
the forward input itself), which settles the remaining dims.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ...errors import DTypeError, InvalidArgumentError, ShapeError
from ..dtypes import int32
from ..registry import attr, def_op
from ..types import TensorType, format_shape
from .common import check_dtype, expect_tensor, normalize_axis, same_dtype
from .indexing import stable_argsort

Dim = int | None

# ----------------------------------------------------------------------------- helpers


def _floating(t, role: str) -> TensorType:
    t = expect_tensor(t, role)
    check_dtype(t, lambda d: d.is_floating, role, "a floating-point dtype")
    return t


def _numeric(t, role: str) -> TensorType:
    t = expect_tensor(t, role)
    check_dtype(t, lambda d: d.is_floating or d.is_integer, role, "a numeric dtype")
    return t


def _is_half(dtype: np.dtype) -> bool:
    return dtype.name in ("float16", "bfloat16")


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    """Half-precision floats are computed in float32 (as TensorFlow does on CPU)."""
    return np.dtype(np.float32) if _is_half(dtype) else dtype


def _upcast(x: np.ndarray) -> np.ndarray:
    return x.astype(_compute_dtype(x.dtype), copy=False)


def _merge_dim(a: Dim, b: Dim, what: str) -> Dim:
    if a is None:
        return b
    if b is not None and a != b:
        raise ShapeError(what)
    return a


def _merge_shapes(a: Sequence[Dim], b: Sequence[Dim], what: str) -> tuple[Dim, ...]:
    if len(a) != len(b):
        raise ShapeError(what)
    return tuple(_merge_dim(x, y, what) for x, y in zip(a, b))


# ------------------------------------------------------------------- softmax family

def _softmax_infer(logits, *, axis):
    logits = _floating(logits, "logits")
    if logits.rank == 0:
        raise ShapeError(f"logits must have rank >= 1, got {logits}")
    normalize_axis(axis, logits.rank)
    return logits


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """Stable log-softmax in the compute dtype: subtract the max before exponentiating."""
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


Softmax = def_op("Softmax", ["logits"], {"axis": attr("int", -1)},
                 doc="exp(logits) / sum(exp(logits)) along `axis` (computed stably).")
Softmax.infer(_softmax_infer)


@Softmax.kernel("reference")
def _softmax_kernel(logits, *, axis):
    if logits.size == 0:
        return logits.copy()
    x = _upcast(logits)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return (e / np.sum(e, axis=axis, keepdims=True)).astype(logits.dtype)


LogSoftmax = def_op("LogSoftmax", ["logits"], {"axis": attr("int", -1)},
                    doc="logits - log(sum(exp(logits))) along `axis` (computed stably).")
LogSoftmax.infer(_softmax_infer)


@LogSoftmax.kernel("reference")
def _log_softmax_kernel(logits, *, axis):
    if logits.size == 0:
        return logits.copy()
    return _log_softmax(_upcast(logits), axis).astype(logits.dtype)


def _class_logits(logits) -> TensorType:
    logits = _floating(logits, "logits")
    if logits.rank == 0:
        raise ShapeError(f"logits must have rank >= 1 (classes on the last axis), got {logits}")
    return logits


SoftmaxCrossEntropyWithLogits = def_op(
    "SoftmaxCrossEntropyWithLogits", ["logits", "labels"],
    doc="Cross entropy between softmax(logits) and the distribution `labels` along the last "
        "axis. Outputs (loss, backprop): loss has the shape of logits without its last axis; "
        "backprop = softmax(logits) - labels is the gradient of the loss sum w.r.t. logits.")


@SoftmaxCrossEntropyWithLogits.infer
def _softmax_xent_infer(logits, labels):
    logits = _class_logits(logits)
    labels = _floating(labels, "labels")
    dtype = same_dtype([logits, labels], ["logits", "labels"])
    shape = _merge_shapes(logits.shape, labels.shape,
                          f"logits and labels must have the same shape: logits is {logits}, "
                          f"labels is {labels}")
    return [TensorType(dtype, shape[:-1]), TensorType(dtype, shape)]


@SoftmaxCrossEntropyWithLogits.kernel("reference")
def _softmax_xent_kernel(logits, labels):
    if logits.shape != labels.shape:
        raise InvalidArgumentError(f"logits and labels must have the same shape: "
                                   f"{format_shape(logits.shape)} vs {format_shape(labels.shape)}")
    if logits.size == 0:
        return np.zeros(logits.shape[:-1], logits.dtype), np.zeros(logits.shape, logits.dtype)
    x, y = _upcast(logits), _upcast(labels)
    log_p = _log_softmax(x, -1)
    loss = -np.sum(y * log_p, axis=-1)
    return loss.astype(logits.dtype), (np.exp(log_p) - y).astype(logits.dtype)


SparseSoftmaxCrossEntropyWithLogits = def_op(
    "SparseSoftmaxCrossEntropyWithLogits", ["logits", "labels"],
    doc="Cross entropy between softmax(logits) and one-hot integer `labels` (class indices, "
        "shape of logits without its last axis). Outputs (loss, backprop) as "
        "SoftmaxCrossEntropyWithLogits; a label outside [0, classes) is an error.")


@SparseSoftmaxCrossEntropyWithLogits.infer
def _sparse_xent_infer(logits, labels):
    logits = _class_logits(logits)
    labels = expect_tensor(labels, "labels")
    check_dtype(labels, lambda d: d.ir_name in ("i32", "i64"), "labels", "int32 or int64")
    batch = _merge_shapes(logits.shape[:-1], labels.shape,
                          f"labels must have the shape of logits without its last axis: "
                          f"logits is {logits}, labels is {labels}")
    return [TensorType(logits.dtype, batch), TensorType(logits.dtype, batch + logits.shape[-1:])]


@SparseSoftmaxCrossEntropyWithLogits.kernel("reference")
def _sparse_xent_kernel(logits, labels):
    classes = logits.shape[-1]
    bad = (labels < 0) | (labels >= classes)
    if np.any(bad):
        value = labels[bad].flat[0]
        raise InvalidArgumentError(f"received a label value of {value} which is outside the "
                                   f"valid range of [0, {classes})")
    if logits.size == 0:
        return np.zeros(labels.shape, logits.dtype), np.zeros(logits.shape, logits.dtype)
    log_p = _log_softmax(_upcast(logits), -1)
    index = labels[..., None].astype(np.intp)
    picked = np.take_along_axis(log_p, index, axis=-1)
    backprop = np.exp(log_p)
    np.put_along_axis(backprop, index, np.exp(picked) - 1, axis=-1)  # softmax - one_hot
    return (-picked[..., 0]).astype(logits.dtype), backprop.astype(logits.dtype)


# --------------------------------------------------------------- window geometry

_PADDINGS = ("SAME", "VALID", "EXPLICIT")


def _check_window_attrs(name: str, values: Sequence[int], minimum: int = 1) -> None:
    """A 4-entry NHWC attribute (strides, dilations, ksize) with batch and depth 1."""
    if len(values) != 4:
        raise InvalidArgumentError(f"{name} must have 4 entries (NHWC), got {list(values)}")
    if values[0] != 1 or values[3] != 1:
        raise InvalidArgumentError(f"{name} must be 1 in the batch and channel dimensions, "
                                   f"got {list(values)}")
    if min(values) < minimum:
        raise InvalidArgumentError(f"{name} must be >= {minimum}, got {list(values)}")


def _check_padding(padding: str, explicit_paddings: Sequence[int] = (),
                   allow_explicit: bool = True) -> None:
    allowed = _PADDINGS if allow_explicit else _PADDINGS[:2]
    if padding not in allowed:
        raise InvalidArgumentError(f"padding must be one of {', '.join(allowed)}, "
                                   f"got {padding!r}")
    if padding == "EXPLICIT":
        if len(explicit_paddings) != 8 or min(explicit_paddings) < 0:
            raise InvalidArgumentError(f"explicit padding needs 8 non-negative ints (before, "
                                       f"after for N, H, W, C), got {list(explicit_paddings)}")
        if any(explicit_paddings[i] for i in (0, 1, 6, 7)):
            raise InvalidArgumentError("explicit padding of the batch and channel dimensions "
                                       "must be 0")
    elif explicit_paddings:
        raise InvalidArgumentError("explicit_paddings is only allowed with padding='EXPLICIT'")


def window_output_size(size: int, k: int, stride: int, dilation: int, padding: str,
                       pads: tuple[int, int] = (0, 0)) -> tuple[int, int, int]:
    """(output size, padding before, padding after) of one spatial dim, as TensorFlow."""
    eff = (k - 1) * dilation + 1
    if padding == "SAME":
        out = -(-size // stride)
        need = max((out - 1) * stride + eff - size, 0)
        return out, need // 2, need - need // 2
    lo, hi = pads if padding == "EXPLICIT" else (0, 0)
    span = size + lo + hi - eff + stride
    if span < 0:
        raise ShapeError(f"the window (size {k}, dilation {dilation}, effective size {eff}) "
                         f"is larger than the padded input size {size + lo + hi}")
    return span // stride, lo, hi


def _static_out_dim(size: Dim, k: Dim, stride: int, dilation: int, padding: str,
                    pads: tuple[int, int]) -> Dim:
    if size is None:
        return None
    if padding == "SAME":
        return -(-size // stride)
    if k is None:
        return None
    return window_output_size(size, k, stride, dilation, padding, pads)[0]


def _spatial_pads(explicit_paddings: Sequence[int]) -> list[tuple[int, int]]:
    if not explicit_paddings:
        return [(0, 0), (0, 0)]
    p = list(explicit_paddings)
    return [(p[2], p[3]), (p[4], p[5])]


def _infer_window_out(x_shape, kh: Dim, kw: Dim, strides, dilations, padding,
                      explicit_paddings=()) -> tuple[Dim, Dim]:
    pads = _spatial_pads(explicit_paddings)
    return (_static_out_dim(x_shape[1], kh, strides[1], dilations[1], padding, pads[0]),
            _static_out_dim(x_shape[2], kw, strides[2], dilations[2], padding, pads[1]))


class _Geometry:
    """The run-time window geometry of one (padded) NHWC input."""

    def __init__(self, in_hw: Sequence[int], k_hw: Sequence[int], strides, dilations,
                 padding: str, explicit_paddings=()) -> None:
        if min(k_hw) < 1:
            raise InvalidArgumentError(f"window sizes must be >= 1, got {list(k_hw)}")
        pads = _spatial_pads(explicit_paddings)
        self.k = tuple(k_hw)
        self.s = (strides[1], strides[2])
        self.d = (dilations[1], dilations[2])
        h = window_output_size(in_hw[0], k_hw[0], self.s[0], self.d[0], padding, pads[0])
        w = window_output_size(in_hw[1], k_hw[1], self.s[1], self.d[1], padding, pads[1])
        self.out = (h[0], w[0])
        self.pad = ((h[1], h[2]), (w[1], w[2]))
        self.in_hw = tuple(in_hw)

    @property
    def empty(self) -> bool:
        return self.out[0] == 0 or self.out[1] == 0

    def pad_input(self, x: np.ndarray, value=0) -> np.ndarray:
        return np.pad(x, ((0, 0), self.pad[0], self.pad[1], (0, 0)), constant_values=value)

    def windows(self, xp: np.ndarray) -> np.ndarray:
        """A view (N, OH, OW, C, KH, KW) of the windows of the padded input `xp`."""
        eff = [(k - 1) * d + 1 for k, d in zip(self.k, self.d)]
        view = sliding_window_view(xp, eff, axis=(1, 2))
        view = view[:, ::self.s[0], ::self.s[1], :, ::self.d[0], ::self.d[1]]
        return view[:, :self.out[0], :self.out[1]]

    def tap_slices(self, i: int, j: int) -> tuple[slice, slice]:
        """Where filter tap (i, j) reads in the padded input, for all output positions."""
        h0, w0 = i * self.d[0], j * self.d[1]
        return (slice(h0, h0 + (self.out[0] - 1) * self.s[0] + 1, self.s[0]),
                slice(w0, w0 + (self.out[1] - 1) * self.s[1] + 1, self.s[1]))

    def crop(self, xp: np.ndarray) -> np.ndarray:
        (t, _), (left, _) = self.pad
        return xp[:, t:t + self.in_hw[0], left:left + self.in_hw[1]]

    def padded_shape(self, n: int, c: int) -> tuple[int, int, int, int]:
        return (n, self.in_hw[0] + sum(self.pad[0]), self.in_hw[1] + sum(self.pad[1]), c)


def _rank4(t, role: str) -> TensorType:
    if t.rank != 4:
        raise ShapeError(f"{role} must have rank 4 (NHWC), got {t}")
    return t


def _check_out_backprop(g: TensorType, expected: Sequence[Dim], what: str) -> None:
    _merge_shapes(g.shape, expected, f"out_backprop is {g}, but {what} gives "
                                     f"output shape {format_shape(expected)}")


def _resolve_shape(static: Sequence[Dim], like: Sequence[np.ndarray], fill: dict[int, int],
                   role: str) -> tuple[int, ...]:
    """A run-time shape: static dims, else the `like` operand's dims, else `fill`."""
    dims = list(static)
    if like:
        actual = like[0].shape
        if len(actual) != len(dims) or any(d is not None and d != a for d, a in zip(dims, actual)):
            raise InvalidArgumentError(f"{role} is {format_shape(dims)}, but the input_like "
                                       f"operand has shape {format_shape(actual)}")
        return tuple(actual)
    for i, d in enumerate(dims):
        if d is None:
            if i not in fill:
                raise InvalidArgumentError(f"{role} {format_shape(dims)} has an unknown spatial "
                                           f"dimension; pass the forward input as input_like")
            dims[i] = fill[i]
    return tuple(dims)


def _infer_like(shape: Sequence[Dim], like: Sequence, role: str) -> tuple[Dim, ...]:
    if len(shape) != 4:
        raise ShapeError(f"{role} must have 4 dims (NHWC), got {format_shape(shape)}")
    if not like:
        return tuple(shape)
    if len(like) > 1:
        raise ShapeError(f"at most one input_like operand, got {len(like)}")
    t = expect_tensor(like[0], "input_like")
    return _merge_shapes(shape, t.shape, f"{role} {format_shape(shape)} does not match "
                                         f"input_like {t}")


# -------------------------------------------------------------------------- Conv2D

_CONV_ATTRS = {"strides": attr("ints"), "padding": attr("str"),
               "explicit_paddings": attr("ints", ()), "dilations": attr("ints", (1, 1, 1, 1))}

Conv2D = def_op("Conv2D", ["input", "filter"], _CONV_ATTRS,
                doc="2-D convolution (cross-correlation) of NHWC `input` with HWIO `filter`.")


def _check_conv_attrs(strides, padding, explicit_paddings, dilations) -> None:
    _check_window_attrs("strides", strides)
    _check_window_attrs("dilations", dilations)
    _check_padding(padding, explicit_paddings)


def _conv_output_shape(x: Sequence[Dim], w: Sequence[Dim], strides, padding, explicit_paddings,
                       dilations) -> tuple[Dim, ...]:
    oh, ow = _infer_window_out(x, w[0], w[1], strides, dilations, padding, explicit_paddings)
    return (x[0], oh, ow, w[3])


def _check_conv_operands(x: TensorType, w: TensorType) -> None:
    if x.shape[3] is not None and w.shape[2] is not None and x.shape[3] != w.shape[2]:
        raise ShapeError(f"input channels differ: input is {x}, filter is {w} "
                         f"(filter is [height, width, in_channels, out_channels])")
    if any(d == 0 for d in w.shape[:2]):
        raise ShapeError(f"filter spatial dimensions must be >= 1, filter is {w}")


@Conv2D.infer
def _conv_infer(x, w, *, strides, padding, explicit_paddings, dilations):
    x = _rank4(_floating(x, "input"), "input")
    w = _rank4(_floating(w, "filter"), "filter")
    dtype = same_dtype([x, w], ["input", "filter"])
    _check_conv_attrs(strides, padding, explicit_paddings, dilations)
    _check_conv_operands(x, w)
    return TensorType(dtype, _conv_output_shape(x.shape, w.shape, strides, padding,
                                                explicit_paddings, dilations))


def _conv_geometry(x_shape, w_shape, strides, padding, explicit_paddings, dilations):
    return _Geometry(x_shape[1:3], w_shape[0:2], strides, dilations, padding, explicit_paddings)


def _im2col(x: np.ndarray, geo: _Geometry) -> np.ndarray:
    """(N*OH*OW, KH*KW*C) patches, columns ordered like a flattened HWIO filter."""
    win = geo.windows(geo.pad_input(x))  # (N, OH, OW, C, KH, KW)
    n, oh, ow, c, kh, kw = win.shape
    return win.transpose(0, 1, 2, 4, 5, 3).reshape(n * oh * ow, kh * kw * c)


@Conv2D.kernel("reference")
def _conv_kernel(x, w, *, strides, padding, explicit_paddings, dilations):
    if x.shape[3] != w.shape[2]:
        raise InvalidArgumentError(f"input has {x.shape[3]} channels, filter expects {w.shape[2]}")
    geo = _conv_geometry(x.shape, w.shape, strides, padding, explicit_paddings, dilations)
    out_shape = (x.shape[0], *geo.out, w.shape[3])
    if geo.empty:
        return np.zeros(out_shape, x.dtype)
    cols = _im2col(_upcast(x), geo)
    out = cols @ _upcast(w).reshape(cols.shape[1], w.shape[3])
    return out.reshape(out_shape).astype(x.dtype)


Conv2DBackpropInput = def_op(
    "Conv2DBackpropInput", ["filter", "out_backprop", "*input_like"],
    {"input_shape": attr("shape"), **_CONV_ATTRS},
    doc="The gradient of Conv2D with respect to its input, whose shape is `input_shape` "
        "(unknown dims come from `input_like`, or batch from out_backprop).")


@Conv2DBackpropInput.infer
def _conv_bp_input_infer(w, g, *like, input_shape, strides, padding, explicit_paddings,
                         dilations):
    w = _rank4(_floating(w, "filter"), "filter")
    g = _rank4(_floating(g, "out_backprop"), "out_backprop")
    dtype = same_dtype([w, g], ["filter", "out_backprop"])
    _check_conv_attrs(strides, padding, explicit_paddings, dilations)
    shape = _infer_like(input_shape, like, "input_shape")
    x = TensorType(dtype, shape)
    _check_conv_operands(x, w)
    _check_out_backprop(g, _conv_output_shape(shape, w.shape, strides, padding,
                                              explicit_paddings, dilations), f"input {x}")
    return TensorType(dtype, (_merge_dim(shape[0], g.shape[0], "batch"), *shape[1:3],
                              _merge_dim(shape[3], w.shape[2], "channels")))


@Conv2DBackpropInput.kernel("reference")
def _conv_bp_input_kernel(w, g, *like, input_shape, strides, padding, explicit_paddings,
                          dilations):
    shape = _resolve_shape(input_shape, like, {0: g.shape[0], 3: w.shape[2]}, "input_shape")
    geo = _conv_geometry(shape, w.shape, strides, padding, explicit_paddings, dilations)
    _check_grad_shape(g, (shape[0], *geo.out, w.shape[3]))
    if geo.empty or g.size == 0:
        return np.zeros(shape, g.dtype)
    wc, gc = _upcast(w), _upcast(g)
    gp = np.zeros(geo.padded_shape(shape[0], shape[3]), wc.dtype)
    for i in range(w.shape[0]):  # one strided slice per filter tap, not per pixel
        for j in range(w.shape[1]):
            rows, cols = geo.tap_slices(i, j)
            gp[:, rows, cols, :] += gc @ wc[i, j].T
    return geo.crop(gp).astype(g.dtype)


def _check_grad_shape(g: np.ndarray, expected: Sequence[int]) -> None:
    if tuple(g.shape) != tuple(expected):
        raise InvalidArgumentError(f"the incoming gradient has shape {format_shape(g.shape)}, "
                                   f"the forward output has shape {format_shape(expected)}")


Conv2DBackpropFilter = def_op(
    "Conv2DBackpropFilter", ["input", "out_backprop"],
    {"filter_shape": attr("shape"), **_CONV_ATTRS},
    doc="The gradient of Conv2D with respect to its filter, of shape `filter_shape` (the "
        "channel dims may be unknown: they come from input and out_backprop).")


@Conv2DBackpropFilter.infer
def _conv_bp_filter_infer(x, g, *, filter_shape, strides, padding, explicit_paddings,
                          dilations):
    x = _rank4(_floating(x, "input"), "input")
    g = _rank4(_floating(g, "out_backprop"), "out_backprop")
    dtype = same_dtype([x, g], ["input", "out_backprop"])
    _check_conv_attrs(strides, padding, explicit_paddings, dilations)
    if len(filter_shape) != 4 or filter_shape[0] is None or filter_shape[1] is None:
        raise ShapeError(f"filter_shape must have 4 dims with known height and width, got "
                         f"{format_shape(filter_shape)}")
    w = TensorType(dtype, (*filter_shape[:2], _merge_dim(filter_shape[2], x.shape[3], "c"),
                           _merge_dim(filter_shape[3], g.shape[3], "o")))
    _check_conv_operands(x, w)
    _check_out_backprop(g, _conv_output_shape(x.shape, w.shape, strides, padding,
                                              explicit_paddings, dilations), f"filter {w}")
    return w


@Conv2DBackpropFilter.kernel("reference")
def _conv_bp_filter_kernel(x, g, *, filter_shape, strides, padding, explicit_paddings,
                           dilations):
    shape = (filter_shape[0], filter_shape[1], x.shape[3], g.shape[3])
    geo = _conv_geometry(x.shape, shape, strides, padding, explicit_paddings, dilations)
    _check_grad_shape(g, (x.shape[0], *geo.out, shape[3]))
    if geo.empty or g.size == 0:
        return np.zeros(shape, x.dtype)
    cols = _im2col(_upcast(x), geo)
    dw = cols.T @ _upcast(g).reshape(cols.shape[0], shape[3])
    return dw.reshape(shape).astype(x.dtype)


# ------------------------------------------------------------------------- pooling

_POOL_ATTRS = {"ksize": attr("ints"), "strides": attr("ints"), "padding": attr("str")}
_ONES = (1, 1, 1, 1)


def _check_pool_attrs(ksize, strides, padding) -> None:
    _check_window_attrs("ksize", ksize)
    _check_window_attrs("strides", strides)
    _check_padding(padding, allow_explicit=False)


def _pool_output_shape(x: Sequence[Dim], ksize, strides, padding) -> tuple[Dim, ...]:
    oh, ow = _infer_window_out(x, ksize[1], ksize[2], strides, _ONES, padding)
    return (x[0], oh, ow, x[3])


def _pool_geometry(x_shape, ksize, strides, padding) -> _Geometry:
    return _Geometry(x_shape[1:3], ksize[1:3], strides, _ONES, padding)


def _pool_infer(x, *, ksize, strides, padding, floating_only: bool):
    x = _rank4(_floating(x, "input") if floating_only else _numeric(x, "input"), "input")
    _check_pool_attrs(ksize, strides, padding)
    return TensorType(x.dtype, _pool_output_shape(x.shape, ksize, strides, padding))


def _lowest(dtype: np.dtype):
    """The padding value that never wins a max."""
    return -np.inf if dtype.kind == "f" or _is_half(dtype) else np.iinfo(dtype).min


MaxPool = def_op("MaxPool", ["input"], _POOL_ATTRS,
                 doc="The maximum of each `ksize` window of NHWC `input`; padding never wins.")


@MaxPool.infer
def _max_pool_infer(x, *, ksize, strides, padding):
    return _pool_infer(x, ksize=ksize, strides=strides, padding=padding, floating_only=False)


@MaxPool.kernel("reference")
def _max_pool_kernel(x, *, ksize, strides, padding):
    geo = _pool_geometry(x.shape, ksize, strides, padding)
    out_shape = (x.shape[0], *geo.out, x.shape[3])
    if geo.empty or x.size == 0:
        return np.zeros(out_shape, x.dtype)
    win = geo.windows(geo.pad_input(x, _lowest(x.dtype)))
    return win.max(axis=(4, 5)).astype(x.dtype)


def _valid_counts(geo: _Geometry) -> np.ndarray:
    """How many real (unpadded) elements each window covers, shape (OH, OW)."""
    mask = np.ones((1, *geo.in_hw, 1), np.float32)
    return geo.windows(geo.pad_input(mask)).sum(axis=(4, 5))[0, :, :, 0]


AvgPool = def_op("AvgPool", ["value"], _POOL_ATTRS,
                 doc="The mean of each `ksize` window of NHWC `value`; with SAME padding only "
                     "the real elements of a window are counted, as in TensorFlow.")


@AvgPool.infer
def _avg_pool_infer(x, *, ksize, strides, padding):
    return _pool_infer(x, ksize=ksize, strides=strides, padding=padding, floating_only=True)


@AvgPool.kernel("reference")
def _avg_pool_kernel(x, *, ksize, strides, padding):
    geo = _pool_geometry(x.shape, ksize, strides, padding)
    out_shape = (x.shape[0], *geo.out, x.shape[3])
    if geo.empty or x.size == 0:
        return np.zeros(out_shape, x.dtype)
    xc = _upcast(x)
    sums = geo.windows(geo.pad_input(xc)).sum(axis=(4, 5))
    counts = _valid_counts(geo).astype(xc.dtype)
    return (sums / counts[None, :, :, None]).astype(x.dtype)


MaxPoolGrad = def_op(
    "MaxPoolGrad", ["orig_input", "orig_output", "grad"], _POOL_ATTRS,
    doc="The gradient of MaxPool: each window's incoming gradient goes to the first "
        "maximal element of the window (row-major order), as TensorFlow does.")


@MaxPoolGrad.infer
def _max_pool_grad_infer(x, y, g, *, ksize, strides, padding):
    x = _rank4(_floating(x, "orig_input"), "orig_input")
    y = _rank4(_floating(y, "orig_output"), "orig_output")
    g = _rank4(_floating(g, "grad"), "grad")
    same_dtype([x, y, g], ["orig_input", "orig_output", "grad"])
    _check_pool_attrs(ksize, strides, padding)
    out = _pool_output_shape(x.shape, ksize, strides, padding)
    _check_out_backprop(y, out, f"pooling orig_input {x}")
    _check_out_backprop(g, out, f"pooling orig_input {x}")
    return x


@MaxPoolGrad.kernel("reference")
def _max_pool_grad_kernel(x, y, g, *, ksize, strides, padding):
    geo = _pool_geometry(x.shape, ksize, strides, padding)
    _check_grad_shape(g, (x.shape[0], *geo.out, x.shape[3]))
    if geo.empty or x.size == 0:
        return np.zeros(x.shape, x.dtype)
    n, c = x.shape[0], x.shape[3]
    kh, kw = geo.k
    win = geo.windows(geo.pad_input(x, _lowest(x.dtype)))
    first = win.reshape(*win.shape[:4], kh * kw).argmax(axis=-1)  # first max, row-major
    oh, ow = np.arange(geo.out[0]), np.arange(geo.out[1])
    rows = oh[None, :, None, None] * geo.s[0] + first // kw
    cols = ow[None, None, :, None] * geo.s[1] + first % kw
    batch = np.arange(n)[:, None, None, None]
    chan = np.arange(c)[None, None, None, :]
    gp = np.zeros(geo.padded_shape(n, c), _compute_dtype(x.dtype))
    np.add.at(gp, (batch, rows, cols, chan), _upcast(g))
    return geo.crop(gp).astype(x.dtype)


AvgPoolGrad = def_op(
    "AvgPoolGrad", ["grad", "*input_like"], {"orig_input_shape": attr("shape"), **_POOL_ATTRS},
    doc="The gradient of AvgPool for an input of shape `orig_input_shape` (unknown dims come "
        "from `input_like`, or batch and channels from grad).")


@AvgPoolGrad.infer
def _avg_pool_grad_infer(g, *like, orig_input_shape, ksize, strides, padding):
    g = _rank4(_floating(g, "grad"), "grad")
    _check_pool_attrs(ksize, strides, padding)
    shape = _infer_like(orig_input_shape, like, "orig_input_shape")
    _check_out_backprop(g, _pool_output_shape(shape, ksize, strides, padding),
                        f"pooling an input of shape {format_shape(shape)}")
    return TensorType(g.dtype, (_merge_dim(shape[0], g.shape[0], "batch"), *shape[1:3],
                                _merge_dim(shape[3], g.shape[3], "channels")))


@AvgPoolGrad.kernel("reference")
def _avg_pool_grad_kernel(g, *like, orig_input_shape, ksize, strides, padding):
    shape = _resolve_shape(orig_input_shape, like, {0: g.shape[0], 3: g.shape[3]},
                           "orig_input_shape")
    geo = _pool_geometry(shape, ksize, strides, padding)
    _check_grad_shape(g, (shape[0], *geo.out, shape[3]))
    if geo.empty or g.size == 0:
        return np.zeros(shape, g.dtype)
    gc = _upcast(g)
    share = gc / _valid_counts(geo).astype(gc.dtype)[None, :, :, None]
    gp = np.zeros(geo.padded_shape(shape[0], shape[3]), gc.dtype)
    for i in range(geo.k[0]):  # one strided slice per window tap, not per pixel
        for j in range(geo.k[1]):
            rows, cols = geo.tap_slices(i, j)
            gp[:, rows, cols, :] += share
    return geo.crop(gp).astype(g.dtype)


# ------------------------------------------------------------------- bias and losses

BiasAdd = def_op("BiasAdd", ["value", "bias"],
                 doc="value + bias, with the vector `bias` added along the last (channel) axis.")


@BiasAdd.infer
def _bias_add_infer(value, bias):
    value = _numeric(value, "value")
    bias = _numeric(bias, "bias")
    dtype = same_dtype([value, bias], ["value", "bias"])
    if value.rank < 2:
        raise ShapeError(f"value must have rank >= 2, got {value}")
    if bias.rank != 1:
        raise ShapeError(f"bias must be a vector, got {bias}")
    last = _merge_dim(value.shape[-1], bias.shape[0],
                      f"bias length must match the last dimension of value: value is {value}, "
                      f"bias is {bias}")
    return TensorType(dtype, (*value.shape[:-1], last))


@BiasAdd.kernel("reference")
def _bias_add_kernel(value, bias):
    if value.shape[-1] != bias.shape[0]:
        raise InvalidArgumentError(f"bias has {bias.shape[0]} elements, value has "
                                   f"{value.shape[-1]} channels")
    return (value + bias).astype(value.dtype, copy=False)


BiasAddGrad = def_op("BiasAddGrad", ["out_backprop"],
                     doc="The gradient of BiasAdd w.r.t. bias: sum over all but the last axis.")


@BiasAddGrad.infer
def _bias_add_grad_infer(g):
    g = _numeric(g, "out_backprop")
    if g.rank < 2:
        raise ShapeError(f"out_backprop must have rank >= 2, got {g}")
    return TensorType(g.dtype, g.shape[-1:])


@BiasAddGrad.kernel("reference")
def _bias_add_grad_kernel(g):
    return _upcast(g).sum(axis=tuple(range(g.ndim - 1))).astype(g.dtype)


L2Loss = def_op("L2Loss", ["t"], tags=["reduction"], doc="sum(t ** 2) / 2, a scalar.")


@L2Loss.infer
def _l2_loss_infer(t):
    t = _floating(t, "t")
    return TensorType(t.dtype, ())


@L2Loss.kernel("reference")
def _l2_loss_kernel(t):
    tc = _upcast(t)
    return np.asarray(np.sum(tc * tc) / 2, dtype=t.dtype)


# ------------------------------------------------------------------------------- top k

TopK = def_op("TopK", ["input"], {"k": attr("int"), "sorted": attr("bool", True)},
              doc="The `k` largest entries along the last axis and their indices (int32), "
                  "largest first; equal values in index order (``tf.math.top_k``).")


@TopK.infer
def _top_k_infer(x, *, k, sorted):  # noqa: A002 - TensorFlow's attribute name
    x = expect_tensor(x, "input")
    if x.rank < 1:
        raise ShapeError(f"top_k needs an input of rank >= 1, got {x}")
    if k < 0:
        raise ShapeError(f"k must be >= 0, got {k}")
    n = x.shape[-1]
    if n is not None and k > n:
        raise ShapeError(f"k = {k} exceeds the last dim of the input {x}")
    if not (x.dtype.is_floating or x.dtype.is_integer):
        raise DTypeError(f"top_k needs a numeric input, got {x.dtype.ir_name}")
    out = x.shape[:-1] + (k,)
    return [TensorType(x.dtype, out), TensorType(int32, out)]


def top_k_indices(x: np.ndarray, k: int) -> np.ndarray:
    """Indices of the `k` largest entries of each last-axis row, ties by lower index
    (NaN above every number)."""
    return np.ascontiguousarray(stable_argsort(x, x.ndim - 1, True)[..., :k])


@TopK.kernel("reference")
def _top_k_kernel(x, *, k, sorted):  # noqa: A002
    if k > x.shape[-1]:
        raise InvalidArgumentError(f"k = {k} exceeds the last dim {x.shape[-1]} of the input")
    idx = top_k_indices(x, k)
    return np.take_along_axis(x, idx.astype(np.intp), axis=-1), idx
