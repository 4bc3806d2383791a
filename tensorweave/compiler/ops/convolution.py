"""More neural-network window ops: depthwise 2-D convolution (NHWC) and 3-D convolution and
pooling (NDHWC), each with its gradient ops, after TensorFlow's op definitions.

- ``DepthwiseConv2dNative``: `filter` is ``[height, width, in_channels, multiplier]``;
  output channel ``c * multiplier + m`` is input channel `c` correlated with
  ``filter[:, :, c, m]``. Attributes are Conv2D's (4 NHWC entries; SAME, VALID or
  EXPLICIT padding; dilations).
- ``Conv3D``: `filter` is DHWIO; `strides` and `dilations` have 5 NDHWC entries whose
  batch and channel entries are 1; padding SAME or VALID (TensorFlow has no explicit
  padding for 3-D convolution).
- ``MaxPool3D`` / ``AvgPool3D``: `ksize` and `strides` have 5 NDHWC entries; padding
  never wins a max, and a SAME average counts only the real elements of its window, as
  in TensorFlow.

Output sizes and SAME padding are those of the 2-D ops (`nn.window_output_size`). The
gradient ops take the forward input's shape as an attribute whose unknown dims come, at
run time, from the optional `input_like` operand (usually the forward input), as the 2-D
gradient ops do. Reference kernels are vectorized: one strided slice (or one small matrix
product) per window tap, never a loop over output positions; half-precision inputs are
computed in float32 and rounded once.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ...errors import InvalidArgumentError, ShapeError
from ..registry import attr, def_op
from ..types import TensorType, format_shape
from .common import expect_tensor
from .common import same_dtype as _same_dtype
from .nn import (
    _CONV_ATTRS,
    _check_conv_attrs,
    _check_grad_shape,
    _check_out_backprop,
    _check_padding,
    _compute_dtype,
    _conv_geometry,
    _floating,
    _infer_window_out,
    _lowest,
    _merge_dim,
    _merge_shapes,
    _numeric,
    _rank4,
    _resolve_shape,
    _static_out_dim,
    _upcast,
    window_output_size,
)

Dim = int | None

# ============================================================ depthwise 2-D convolution


def _depthwise_out_channels(c: Dim, m: Dim) -> Dim:
    return None if c is None or m is None else c * m


def _check_depthwise_operands(x: TensorType, w: TensorType) -> None:
    if x.shape[3] is not None and w.shape[2] is not None and x.shape[3] != w.shape[2]:
        raise ShapeError(f"input channels differ: input is {x}, filter is {w} (filter is "
                         f"[height, width, in_channels, channel_multiplier])")
    if any(d == 0 for d in w.shape[:2]):
        raise ShapeError(f"filter spatial dimensions must be >= 1, filter is {w}")


def _depthwise_output_shape(x: Sequence[Dim], w: Sequence[Dim], strides, padding,
                            explicit_paddings, dilations) -> tuple[Dim, ...]:
    oh, ow = _infer_window_out(x, w[0], w[1], strides, dilations, padding, explicit_paddings)
    return (x[0], oh, ow, _depthwise_out_channels(_merge_dim(x[3], w[2], "channels"), w[3]))


DepthwiseConv2dNative = def_op(
    "DepthwiseConv2dNative", ["input", "filter"], _CONV_ATTRS,
    doc="Depthwise 2-D convolution of NHWC `input` with a [height, width, in_channels, "
        "multiplier] `filter`: output channel c*multiplier+m is channel c correlated with "
        "filter[:, :, c, m].")


@DepthwiseConv2dNative.infer
def _depthwise_infer(x, w, *, strides, padding, explicit_paddings, dilations):
    x = _rank4(_floating(x, "input"), "input")
    w = _rank4(_floating(w, "filter"), "filter")
    dtype = _same_dtype([x, w], ["input", "filter"])
    _check_conv_attrs(strides, padding, explicit_paddings, dilations)
    _check_depthwise_operands(x, w)
    return TensorType(dtype, _depthwise_output_shape(x.shape, w.shape, strides, padding,
                                                     explicit_paddings, dilations))


@DepthwiseConv2dNative.kernel("reference")
def _depthwise_kernel(x, w, *, strides, padding, explicit_paddings, dilations):
    n, _, _, c = x.shape
    if c != w.shape[2]:
        raise InvalidArgumentError(f"input has {c} channels, filter expects {w.shape[2]}")
    geo = _conv_geometry(x.shape, w.shape, strides, padding, explicit_paddings, dilations)
    mult = w.shape[3]
    out_shape = (n, *geo.out, c * mult)
    if geo.empty or 0 in out_shape:
        return np.zeros(out_shape, x.dtype)
    xp, wc = geo.pad_input(_upcast(x)), _upcast(w)
    acc = np.zeros((n, *geo.out, c, mult), wc.dtype)
    tmp = np.empty_like(acc)  # products into one buffer: no temporary per tap
    for i in range(w.shape[0]):  # one strided slice per filter tap, not per pixel
        for j in range(w.shape[1]):
            rows, cols = geo.tap_slices(i, j)
            np.multiply(xp[:, rows, cols, :, None], wc[i, j], out=tmp)
            acc += tmp
    return acc.reshape(out_shape).astype(x.dtype, copy=False)


DepthwiseConv2dNativeBackpropInput = def_op(
    "DepthwiseConv2dNativeBackpropInput", ["filter", "out_backprop", "*input_like"],
    {"input_shape": attr("shape"), **_CONV_ATTRS},
    doc="The gradient of DepthwiseConv2dNative with respect to its input, whose shape is "
        "`input_shape` (unknown dims come from `input_like`, or batch and channels from the "
        "other operands).")


def _infer_like(shape: Sequence[Dim], like: Sequence, role: str, rank: int,
                layout: str) -> tuple[Dim, ...]:
    """The forward input's static shape: the attribute merged with `input_like`'s type."""
    if len(shape) != rank:
        raise ShapeError(f"{role} must have {rank} dims ({layout}), got {format_shape(shape)}")
    if not like:
        return tuple(shape)
    if len(like) > 1:
        raise ShapeError(f"at most one input_like operand, got {len(like)}")
    t = expect_tensor(like[0], "input_like")
    return _merge_shapes(shape, t.shape, f"{role} {format_shape(shape)} does not match "
                                         f"input_like {t}")


@DepthwiseConv2dNativeBackpropInput.infer
def _depthwise_bp_input_infer(w, g, *like, input_shape, strides, padding, explicit_paddings,
                              dilations):
    w = _rank4(_floating(w, "filter"), "filter")
    g = _rank4(_floating(g, "out_backprop"), "out_backprop")
    dtype = _same_dtype([w, g], ["filter", "out_backprop"])
    _check_conv_attrs(strides, padding, explicit_paddings, dilations)
    shape = _infer_like(input_shape, like, "input_shape", 4, "NHWC")
    x = TensorType(dtype, shape)
    _check_depthwise_operands(x, w)
    _check_out_backprop(g, _depthwise_output_shape(shape, w.shape, strides, padding,
                                                   explicit_paddings, dilations), f"input {x}")
    return TensorType(dtype, (_merge_dim(shape[0], g.shape[0], "batch"), *shape[1:3],
                              _merge_dim(shape[3], w.shape[2], "channels")))


@DepthwiseConv2dNativeBackpropInput.kernel("reference")
def _depthwise_bp_input_kernel(w, g, *like, input_shape, strides, padding, explicit_paddings,
                               dilations):
    shape = _resolve_shape(input_shape, like, {0: g.shape[0], 3: w.shape[2]}, "input_shape")
    geo = _conv_geometry(shape, w.shape, strides, padding, explicit_paddings, dilations)
    c, mult = w.shape[2], w.shape[3]
    _check_grad_shape(g, (shape[0], *geo.out, c * mult))
    if geo.empty or g.size == 0 or 0 in shape:
        return np.zeros(shape, g.dtype)
    wc = _upcast(w)
    g5 = _upcast(g).reshape(*g.shape[:3], c, mult)
    gp = np.zeros(geo.padded_shape(shape[0], c), wc.dtype)
    for i in range(w.shape[0]):
        for j in range(w.shape[1]):
            rows, cols = geo.tap_slices(i, j)
            gp[:, rows, cols, :] += (g5 * wc[i, j]).sum(axis=-1)
    return geo.crop(gp).astype(g.dtype)


DepthwiseConv2dNativeBackpropFilter = def_op(
    "DepthwiseConv2dNativeBackpropFilter", ["input", "out_backprop"],
    {"filter_shape": attr("shape"), **_CONV_ATTRS},
    doc="The gradient of DepthwiseConv2dNative with respect to its filter, of shape "
        "`filter_shape` (the channel dims may be unknown: they come from input and "
        "out_backprop).")


@DepthwiseConv2dNativeBackpropFilter.infer
def _depthwise_bp_filter_infer(x, g, *, filter_shape, strides, padding, explicit_paddings,
                               dilations):
    x = _rank4(_floating(x, "input"), "input")
    g = _rank4(_floating(g, "out_backprop"), "out_backprop")
    dtype = _same_dtype([x, g], ["input", "out_backprop"])
    _check_conv_attrs(strides, padding, explicit_paddings, dilations)
    if len(filter_shape) != 4 or filter_shape[0] is None or filter_shape[1] is None:
        raise ShapeError(f"filter_shape must have 4 dims with known height and width, got "
                         f"{format_shape(filter_shape)}")
    c = _merge_dim(filter_shape[2], x.shape[3],
                   f"filter_shape {format_shape(filter_shape)} does not match input {x}")
    mult = filter_shape[3]
    if mult is None and c and g.shape[3] is not None:
        mult = g.shape[3] // c
    w = TensorType(dtype, (*filter_shape[:2], c, mult))
    _check_depthwise_operands(x, w)
    _check_out_backprop(g, _depthwise_output_shape(x.shape, w.shape, strides, padding,
                                                   explicit_paddings, dilations), f"filter {w}")
    return w


@DepthwiseConv2dNativeBackpropFilter.kernel("reference")
def _depthwise_bp_filter_kernel(x, g, *, filter_shape, strides, padding, explicit_paddings,
                                dilations):
    c = x.shape[3]
    mult = filter_shape[3]
    if mult is None:
        mult = g.shape[3] // c if c else 0
    shape = (filter_shape[0], filter_shape[1], c, mult)
    geo = _conv_geometry(x.shape, shape, strides, padding, explicit_paddings, dilations)
    _check_grad_shape(g, (x.shape[0], *geo.out, c * mult))
    if geo.empty or g.size == 0:
        return np.zeros(shape, x.dtype)
    xp = geo.pad_input(_upcast(x))
    g5 = _upcast(g).reshape(*g.shape[:3], c, mult)
    dw = np.zeros(shape, xp.dtype)
    for i in range(shape[0]):
        for j in range(shape[1]):
            rows, cols = geo.tap_slices(i, j)
            dw[i, j] = np.einsum("nhwc,nhwcm->cm", xp[:, rows, cols, :], g5)
    return dw.astype(x.dtype)


# ===================================================================== 3-D geometry

_SPATIAL = 3


def _check_window5(name: str, values: Sequence[int]) -> None:
    """A 5-entry NDHWC attribute (strides, dilations, ksize) with batch and channel entries 1."""
    if len(values) != 5:
        raise InvalidArgumentError(f"{name} must have 5 entries (NDHWC), got {list(values)}")
    if values[0] != 1 or values[4] != 1:
        raise InvalidArgumentError(f"{name} must be 1 in the batch and channel dimensions, "
                                   f"got {list(values)}")
    if min(values) < 1:
        raise InvalidArgumentError(f"{name} must be >= 1, got {list(values)}")


def _rank5(t: TensorType, role: str) -> TensorType:
    if t.rank != 5:
        raise ShapeError(f"{role} must have rank 5 (NDHWC), got {t}")
    return t


def _out_spatial(x: Sequence[Dim], k: Sequence[Dim], strides, dilations,
                 padding: str) -> tuple[Dim, ...]:
    return tuple(_static_out_dim(x[1 + i], k[i], strides[1 + i], dilations[1 + i], padding,
                                 (0, 0)) for i in range(_SPATIAL))


class _Window:
    """The run-time window geometry of an (N, *spatial, C) input, any number of spatial
    dims (the 2-D `nn._Geometry` generalized)."""

    def __init__(self, in_sp: Sequence[int], k_sp: Sequence[int], strides: Sequence[int],
                 dilations: Sequence[int], padding: str) -> None:
        if min(k_sp) < 1:
            raise InvalidArgumentError(f"window sizes must be >= 1, got {list(k_sp)}")
        dims = [window_output_size(s, k, st, d, padding)
                for s, k, st, d in zip(in_sp, k_sp, strides, dilations)]
        self.k, self.s, self.d = tuple(k_sp), tuple(strides), tuple(dilations)
        self.out = tuple(o for o, _, _ in dims)
        self.pad = tuple((lo, hi) for _, lo, hi in dims)
        self.in_sp = tuple(in_sp)
        self.nd = len(self.in_sp)

    @property
    def empty(self) -> bool:
        return 0 in self.out

    def pad_input(self, x: np.ndarray, value=0) -> np.ndarray:
        return np.pad(x, ((0, 0), *self.pad, (0, 0)), constant_values=value)

    def windows(self, xp: np.ndarray) -> np.ndarray:
        """A view (N, *out, C, *k) of the windows of the padded input `xp`."""
        eff = [(k - 1) * d + 1 for k, d in zip(self.k, self.d)]
        view = sliding_window_view(xp, eff, axis=tuple(range(1, self.nd + 1)))
        strided = (slice(None), *(slice(None, None, s) for s in self.s), slice(None),
                   *(slice(None, None, d) for d in self.d))
        view = view[strided]
        return view[(slice(None), *(slice(0, o) for o in self.out))]

    def taps(self) -> Iterator[tuple[int, ...]]:
        return itertools.product(*(range(k) for k in self.k))

    def tap_index(self, tap: Sequence[int]) -> tuple[slice, ...]:
        """Where window tap `tap` reads in the padded input, for all output positions."""
        return (slice(None), *(slice(t * d, t * d + (o - 1) * s + 1, s)
                               for t, d, o, s in zip(tap, self.d, self.out, self.s)),
                slice(None))

    def crop(self, xp: np.ndarray) -> np.ndarray:
        return xp[(slice(None), *(slice(lo, lo + n) for (lo, _), n in zip(self.pad, self.in_sp)))]

    def padded_shape(self, n: int, c: int) -> tuple[int, ...]:
        return (n, *(s + lo + hi for s, (lo, hi) in zip(self.in_sp, self.pad)), c)


def _im2col(x: np.ndarray, geo: _Window) -> np.ndarray:
    """(N*prod(out), prod(k)*C) patches, columns ordered like a flattened D..HWIO filter."""
    win = geo.windows(geo.pad_input(x))  # (N, *out, C, *k)
    nd = geo.nd
    perm = (*range(nd + 1), *range(nd + 2, 2 * nd + 2), nd + 1)
    rows = int(np.prod(win.shape[:nd + 1]))
    return win.transpose(perm).reshape(rows, -1)


# ====================================================================== Conv3D

_CONV3D_ATTRS = {"strides": attr("ints"), "padding": attr("str"),
                 "dilations": attr("ints", (1, 1, 1, 1, 1))}


def _check_conv3d_attrs(strides, padding, dilations) -> None:
    _check_window5("strides", strides)
    _check_window5("dilations", dilations)
    _check_padding(padding, allow_explicit=False)


def _check_conv3d_operands(x: TensorType, w: TensorType) -> None:
    if x.shape[4] is not None and w.shape[3] is not None and x.shape[4] != w.shape[3]:
        raise ShapeError(f"input channels differ: input is {x}, filter is {w} (filter is "
                         f"[depth, height, width, in_channels, out_channels])")
    if any(d == 0 for d in w.shape[:3]):
        raise ShapeError(f"filter spatial dimensions must be >= 1, filter is {w}")


def _conv3d_output_shape(x: Sequence[Dim], w: Sequence[Dim], strides, padding,
                         dilations) -> tuple[Dim, ...]:
    return (x[0], *_out_spatial(x, w[:3], strides, dilations, padding), w[4])


def _conv3d_window(x_shape, w_shape, strides, padding, dilations) -> _Window:
    return _Window(x_shape[1:4], w_shape[:3], strides[1:4], dilations[1:4], padding)


Conv3D = def_op("Conv3D", ["input", "filter"], _CONV3D_ATTRS,
                doc="3-D convolution (cross-correlation) of NDHWC `input` with DHWIO `filter`.")


@Conv3D.infer
def _conv3d_infer(x, w, *, strides, padding, dilations):
    x = _rank5(_floating(x, "input"), "input")
    w = _rank5(_floating(w, "filter"), "filter")
    dtype = _same_dtype([x, w], ["input", "filter"])
    _check_conv3d_attrs(strides, padding, dilations)
    _check_conv3d_operands(x, w)
    return TensorType(dtype, _conv3d_output_shape(x.shape, w.shape, strides, padding, dilations))


@Conv3D.kernel("reference")
def _conv3d_kernel(x, w, *, strides, padding, dilations):
    if x.shape[4] != w.shape[3]:
        raise InvalidArgumentError(f"input has {x.shape[4]} channels, filter expects {w.shape[3]}")
    geo = _conv3d_window(x.shape, w.shape, strides, padding, dilations)
    out_shape = (x.shape[0], *geo.out, w.shape[4])
    if geo.empty or 0 in out_shape:
        return np.zeros(out_shape, x.dtype)
    cols = _im2col(_upcast(x), geo)
    out = cols @ _upcast(w).reshape(cols.shape[1], w.shape[4])
    return out.reshape(out_shape).astype(x.dtype)


Conv3DBackpropInputV2 = def_op(
    "Conv3DBackpropInputV2", ["filter", "out_backprop", "*input_like"],
    {"input_shape": attr("shape"), **_CONV3D_ATTRS},
    doc="The gradient of Conv3D with respect to its input, whose shape is `input_shape` "
        "(unknown dims come from `input_like`, or batch and channels from the other operands).")


@Conv3DBackpropInputV2.infer
def _conv3d_bp_input_infer(w, g, *like, input_shape, strides, padding, dilations):
    w = _rank5(_floating(w, "filter"), "filter")
    g = _rank5(_floating(g, "out_backprop"), "out_backprop")
    dtype = _same_dtype([w, g], ["filter", "out_backprop"])
    _check_conv3d_attrs(strides, padding, dilations)
    shape = _infer_like(input_shape, like, "input_shape", 5, "NDHWC")
    x = TensorType(dtype, shape)
    _check_conv3d_operands(x, w)
    _check_out_backprop(g, _conv3d_output_shape(shape, w.shape, strides, padding, dilations),
                        f"input {x}")
    return TensorType(dtype, (_merge_dim(shape[0], g.shape[0], "batch"), *shape[1:4],
                              _merge_dim(shape[4], w.shape[3], "channels")))


@Conv3DBackpropInputV2.kernel("reference")
def _conv3d_bp_input_kernel(w, g, *like, input_shape, strides, padding, dilations):
    shape = _resolve_shape(input_shape, like, {0: g.shape[0], 4: w.shape[3]}, "input_shape")
    geo = _conv3d_window(shape, w.shape, strides, padding, dilations)
    _check_grad_shape(g, (shape[0], *geo.out, w.shape[4]))
    if geo.empty or g.size == 0 or 0 in shape:
        return np.zeros(shape, g.dtype)
    wc, gc = _upcast(w), _upcast(g)
    gp = np.zeros(geo.padded_shape(shape[0], shape[4]), wc.dtype)
    for tap in geo.taps():  # one strided slice (and one matrix product) per filter tap
        gp[geo.tap_index(tap)] += gc @ wc[tap].T
    return geo.crop(gp).astype(g.dtype)


Conv3DBackpropFilterV2 = def_op(
    "Conv3DBackpropFilterV2", ["input", "out_backprop"],
    {"filter_shape": attr("shape"), **_CONV3D_ATTRS},
    doc="The gradient of Conv3D with respect to its filter, of shape `filter_shape` (the "
        "channel dims may be unknown: they come from input and out_backprop).")


@Conv3DBackpropFilterV2.infer
def _conv3d_bp_filter_infer(x, g, *, filter_shape, strides, padding, dilations):
    x = _rank5(_floating(x, "input"), "input")
    g = _rank5(_floating(g, "out_backprop"), "out_backprop")
    dtype = _same_dtype([x, g], ["input", "out_backprop"])
    _check_conv3d_attrs(strides, padding, dilations)
    if len(filter_shape) != 5 or None in filter_shape[:3]:
        raise ShapeError(f"filter_shape must have 5 dims with known depth, height and width, "
                         f"got {format_shape(filter_shape)}")
    w = TensorType(dtype, (*filter_shape[:3], _merge_dim(filter_shape[3], x.shape[4], "c"),
                           _merge_dim(filter_shape[4], g.shape[4], "o")))
    _check_conv3d_operands(x, w)
    _check_out_backprop(g, _conv3d_output_shape(x.shape, w.shape, strides, padding, dilations),
                        f"filter {w}")
    return w


@Conv3DBackpropFilterV2.kernel("reference")
def _conv3d_bp_filter_kernel(x, g, *, filter_shape, strides, padding, dilations):
    shape = (*filter_shape[:3], x.shape[4], g.shape[4])
    geo = _conv3d_window(x.shape, shape, strides, padding, dilations)
    _check_grad_shape(g, (x.shape[0], *geo.out, shape[4]))
    if geo.empty or g.size == 0 or x.size == 0:
        return np.zeros(shape, x.dtype)
    cols = _im2col(_upcast(x), geo)
    dw = cols.T @ _upcast(g).reshape(cols.shape[0], shape[4])
    return dw.reshape(shape).astype(x.dtype)


# ====================================================================== 3-D pooling

_POOL3D_ATTRS = {"ksize": attr("ints"), "strides": attr("ints"), "padding": attr("str")}
_ONES5 = (1, 1, 1, 1, 1)


def _check_pool3d_attrs(ksize, strides, padding) -> None:
    _check_window5("ksize", ksize)
    _check_window5("strides", strides)
    _check_padding(padding, allow_explicit=False)


def _pool3d_output_shape(x: Sequence[Dim], ksize, strides, padding) -> tuple[Dim, ...]:
    return (x[0], *_out_spatial(x, ksize[1:4], strides, _ONES5, padding), x[4])


def _pool3d_window(x_shape, ksize, strides, padding) -> _Window:
    return _Window(x_shape[1:4], ksize[1:4], strides[1:4], (1, 1, 1), padding)


def _pool3d_infer(x, *, ksize, strides, padding, floating_only: bool) -> TensorType:
    x = _rank5(_floating(x, "input") if floating_only else _numeric(x, "input"), "input")
    _check_pool3d_attrs(ksize, strides, padding)
    return TensorType(x.dtype, _pool3d_output_shape(x.shape, ksize, strides, padding))


MaxPool3D = def_op("MaxPool3D", ["input"], _POOL3D_ATTRS,
                   doc="The maximum of each `ksize` window of NDHWC `input`; padding never wins.")


@MaxPool3D.infer
def _max_pool3d_infer(x, *, ksize, strides, padding):
    return _pool3d_infer(x, ksize=ksize, strides=strides, padding=padding, floating_only=False)


@MaxPool3D.kernel("reference")
def _max_pool3d_kernel(x, *, ksize, strides, padding):
    geo = _pool3d_window(x.shape, ksize, strides, padding)
    out_shape = (x.shape[0], *geo.out, x.shape[4])
    if geo.empty or x.size == 0:
        return np.zeros(out_shape, x.dtype)
    win = geo.windows(geo.pad_input(x, _lowest(x.dtype)))
    return win.max(axis=(-3, -2, -1)).astype(x.dtype)


def _valid_counts(geo: _Window) -> np.ndarray:
    """How many real (unpadded) elements each window covers, shape `geo.out`."""
    mask = np.ones((1, *geo.in_sp, 1), np.float32)
    counts = geo.windows(geo.pad_input(mask)).sum(axis=tuple(range(-geo.nd, 0)))
    return counts[0, ..., 0]


AvgPool3D = def_op("AvgPool3D", ["input"], _POOL3D_ATTRS,
                   doc="The mean of each `ksize` window of NDHWC `input`; with SAME padding only "
                       "the real elements of a window are counted, as in TensorFlow.")


@AvgPool3D.infer
def _avg_pool3d_infer(x, *, ksize, strides, padding):
    return _pool3d_infer(x, ksize=ksize, strides=strides, padding=padding, floating_only=True)


@AvgPool3D.kernel("reference")
def _avg_pool3d_kernel(x, *, ksize, strides, padding):
    geo = _pool3d_window(x.shape, ksize, strides, padding)
    out_shape = (x.shape[0], *geo.out, x.shape[4])
    if geo.empty or x.size == 0:
        return np.zeros(out_shape, x.dtype)
    xc = _upcast(x)
    sums = geo.windows(geo.pad_input(xc)).sum(axis=(-3, -2, -1))
    return (sums / _valid_counts(geo).astype(xc.dtype)[None, ..., None]).astype(x.dtype)


MaxPool3DGrad = def_op(
    "MaxPool3DGrad", ["orig_input", "orig_output", "grad"], _POOL3D_ATTRS,
    doc="The gradient of MaxPool3D: each window's incoming gradient goes to the first "
        "maximal element of the window (row-major order over depth, height, width).")


@MaxPool3DGrad.infer
def _max_pool3d_grad_infer(x, y, g, *, ksize, strides, padding):
    x = _rank5(_floating(x, "orig_input"), "orig_input")
    y = _rank5(_floating(y, "orig_output"), "orig_output")
    g = _rank5(_floating(g, "grad"), "grad")
    _same_dtype([x, y, g], ["orig_input", "orig_output", "grad"])
    _check_pool3d_attrs(ksize, strides, padding)
    out = _pool3d_output_shape(x.shape, ksize, strides, padding)
    _check_out_backprop(y, out, f"pooling orig_input {x}")
    _check_out_backprop(g, out, f"pooling orig_input {x}")
    return x


@MaxPool3DGrad.kernel("reference")
def _max_pool3d_grad_kernel(x, y, g, *, ksize, strides, padding):
    geo = _pool3d_window(x.shape, ksize, strides, padding)
    n, c = x.shape[0], x.shape[4]
    _check_grad_shape(g, (n, *geo.out, c))
    if geo.empty or x.size == 0:
        return np.zeros(x.shape, x.dtype)
    nd = geo.nd
    win = geo.windows(geo.pad_input(x, _lowest(x.dtype)))
    first = win.reshape(*win.shape[:nd + 2], -1).argmax(axis=-1)  # first max, row-major
    taps = np.unravel_index(first, geo.k)
    index = [np.arange(n).reshape(-1, *[1] * (nd + 1))]
    for i in range(nd):
        positions = np.arange(geo.out[i]).reshape([1] * (i + 1) + [-1] + [1] * (nd - i))
        index.append(positions * geo.s[i] + taps[i])
    index.append(np.arange(c).reshape([1] * (nd + 1) + [-1]))
    gp = np.zeros(geo.padded_shape(n, c), _compute_dtype(x.dtype))
    np.add.at(gp, tuple(index), _upcast(g))
    return geo.crop(gp).astype(x.dtype)


AvgPool3DGrad = def_op(
    "AvgPool3DGrad", ["grad", "*input_like"],
    {"orig_input_shape": attr("shape"), **_POOL3D_ATTRS},
    doc="The gradient of AvgPool3D for an input of shape `orig_input_shape` (unknown dims come "
        "from `input_like`, or batch and channels from grad).")


@AvgPool3DGrad.infer
def _avg_pool3d_grad_infer(g, *like, orig_input_shape, ksize, strides, padding):
    g = _rank5(_floating(g, "grad"), "grad")
    _check_pool3d_attrs(ksize, strides, padding)
    shape = _infer_like(orig_input_shape, like, "orig_input_shape", 5, "NDHWC")
    _check_out_backprop(g, _pool3d_output_shape(shape, ksize, strides, padding),
                        f"pooling an input of shape {format_shape(shape)}")
    return TensorType(g.dtype, (_merge_dim(shape[0], g.shape[0], "batch"), *shape[1:4],
                                _merge_dim(shape[4], g.shape[4], "channels")))


@AvgPool3DGrad.kernel("reference")
def _avg_pool3d_grad_kernel(g, *like, orig_input_shape, ksize, strides, padding):
    shape = _resolve_shape(orig_input_shape, like, {0: g.shape[0], 4: g.shape[4]},
                           "orig_input_shape")
    geo = _pool3d_window(shape, ksize, strides, padding)
    _check_grad_shape(g, (shape[0], *geo.out, shape[4]))
    if geo.empty or g.size == 0:
        return np.zeros(shape, g.dtype)
    gc = _upcast(g)
    share = gc / _valid_counts(geo).astype(gc.dtype)[None, ..., None]
    gp = np.zeros(geo.padded_shape(shape[0], shape[4]), gc.dtype)
    for tap in geo.taps():  # one strided slice per window tap, not per pixel
        gp[geo.tap_index(tap)] += share
    return geo.crop(gp).astype(g.dtype)
