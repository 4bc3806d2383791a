"""Gradients of the neural-network ops, after TensorFlow's nn_grad.py."""

from __future__ import annotations

import itertools

from ...compiler.ops.nn import window_output_size
from ...compiler.registry import not_differentiable, register_gradient
from ...errors import CompileError
from ..building import apply_op1
from ..ops import array as a
from ..ops import math as m

not_differentiable("RandomUniform", "RandomNormal", "TruncatedNormal", "RandomUniformInt",
                   "RandomUniformLike")


@register_gradient("Softmax")
def _softmax(op, g):
    y = op.outputs[0]
    axis = op.attrs["axis"]
    return [(g - m.reduce_sum(g * y, axis=axis, keepdims=True)) * y]


@register_gradient("LogSoftmax")
def _log_softmax(op, g):
    y = op.outputs[0]
    axis = op.attrs["axis"]
    return [g - m.exp(y) * m.reduce_sum(g, axis=axis, keepdims=True)]


def _unused(g) -> bool:
    """Whether output gradient `g` is absent, or the ZerosLike that autodiff fills in for
    an output nothing used."""
    return g is None or (g.op is not None and g.op.op == "ZerosLike")


def _softmax_vjp(logits, g):
    """The gradient of ``sum(g * softmax(logits))`` w.r.t. logits (softmax on the last axis)."""
    p = apply_op1("Softmax", [logits], {"axis": -1})
    return (g - m.reduce_sum(g * p, axis=-1, keepdims=True)) * p


@register_gradient("SoftmaxCrossEntropyWithLogits")
def _softmax_xent(op, g_loss, g_backprop):
    logits, labels = op.inputs
    backprop = op.outputs[1]
    g = a.expand_dims(g_loss, -1)
    log_p = apply_op1("LogSoftmax", [logits], {"axis": -1})
    d_logits, d_labels = g * backprop, -g * log_p
    # The backprop output (softmax - labels) is itself differentiated when a gradient of
    # the loss is differentiated again (Hessians, gradient penalties): as TensorFlow does,
    # add its term unless autodiff filled it with zeros because nothing used it.
    if not _unused(g_backprop):
        d_logits = d_logits + _softmax_vjp(logits, g_backprop)
        d_labels = d_labels - g_backprop
    return [d_logits, d_labels]


@register_gradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_softmax_xent(op, g_loss, g_backprop):
    d_logits = a.expand_dims(g_loss, -1) * op.outputs[1]
    if not _unused(g_backprop):  # second-order path, as in the dense op above
        d_logits = d_logits + _softmax_vjp(op.inputs[0], g_backprop)
    return [d_logits, None]


def _conv_attrs(op):
    return {k: op.attrs[k] for k in ("strides", "padding", "explicit_paddings", "dilations")}


@register_gradient("Conv2D")
def _conv2d(op, g):
    x, w = op.inputs
    attrs = _conv_attrs(op)
    dx = apply_op1("Conv2DBackpropInput", [w, g, x], {"input_shape": x.shape, **attrs})
    dw = apply_op1("Conv2DBackpropFilter", [x, g], {"filter_shape": w.shape, **attrs})
    return [dx, dw]


@register_gradient("Conv2DBackpropInput")
def _conv2d_backprop_input(op, g):
    w, dy = op.inputs[:2]
    attrs = _conv_attrs(op)
    dw = apply_op1("Conv2DBackpropFilter", [g, dy], {"filter_shape": w.shape, **attrs})
    ddy = apply_op1("Conv2D", [g, w], attrs)
    return [dw, ddy] + [None] * (len(op.inputs) - 2)


@register_gradient("Conv2DBackpropFilter")
def _conv2d_backprop_filter(op, g):
    x, dy = op.inputs
    attrs = _conv_attrs(op)
    dx = apply_op1("Conv2DBackpropInput", [g, dy, x], {"input_shape": x.shape, **attrs})
    ddy = apply_op1("Conv2D", [x, g], attrs)
    return [dx, ddy]


def _pool_attrs(op):
    return {k: op.attrs[k] for k in ("ksize", "strides", "padding")}


@register_gradient("MaxPool")
def _max_pool(op, g):
    x, y = op.inputs[0], op.outputs[0]
    return [apply_op1("MaxPoolGrad", [x, y, g], _pool_attrs(op))]


@register_gradient("MaxPoolGrad")
@register_gradient("MaxPool3DGrad")
def _max_pool_grad_grad(op, g):
    # MaxPool(3D)Grad routes each window's gradient to the window's first maximum: it is
    # linear in `grad`, with the adjoint below, and piecewise constant in the original input
    # and output (zero gradient almost everywhere), as TensorFlow's MaxPoolGradGrad.
    x = op.inputs[0]
    pool_op = "MaxPool" if op.type == "MaxPoolGrad" else "MaxPool3D"
    return [None, None, _gather_at_window_max(x, g, _pool_attrs(op), pool_op)]


def _gather_at_window_max(x, h, attrs, pool_op="MaxPool"):
    """For each max-pooling window of `x`, the element of `h` (shaped like x) at the
    window's first maximum in row-major order: the adjoint of MaxPool(3D)Grad in its
    gradient. Any number of spatial dims (NHWC or NDHWC).

    Built from one strided slice per window tap, so it needs the spatial dims of x."""
    ksize, strides = attrs["ksize"][1:-1], attrs["strides"][1:-1]
    size = x.shape[1:-1]
    if None in size:
        raise CompileError(f"the gradient of {pool_op}Grad needs static spatial dims, the "
                           f"input is {x.type}")
    dims = [window_output_size(n, k, s, 1, attrs["padding"])
            for n, k, s in zip(size, ksize, strides)]
    pads = [[0, 0], *[[lo, hi] for _, lo, hi in dims], [0, 0]]
    # The kernel compares against the max it recomputes from x, so do the same here.
    y = apply_op1(pool_op, [x], attrs)
    if any(o == 0 for o, _, _ in dims):
        return a.zeros_like(y)  # no windows (and the slices below would wrap around)
    xp = a.pad(x, pads, constant_values=float("-inf"))  # padding never wins a max
    hp = a.pad(h, pads)
    unclaimed = a.ones_like(y)  # 1 until the window's first maximum has been found
    out = a.zeros_like(y)
    for tap in itertools.product(*(range(k) for k in ksize)):  # row-major, like the kernel
        index = (slice(None), *(slice(t, t + (o - 1) * s + 1, s)
                                for t, (o, _, _), s in zip(tap, dims, strides)), slice(None))
        hit = m.cast(m.equal(xp[index], y), y.dtype) * unclaimed
        out = out + hit * hp[index]
        unclaimed = unclaimed - hit
    return out


@register_gradient("AvgPool")
def _avg_pool(op, g):
    x = op.inputs[0]
    return [apply_op1("AvgPoolGrad", [g, x], {"orig_input_shape": x.shape, **_pool_attrs(op)})]


@register_gradient("AvgPoolGrad")
def _avg_pool_grad(op, g):
    # AvgPoolGrad is linear in its gradient input; its adjoint is AvgPool itself.
    return [apply_op1("AvgPool", [g], _pool_attrs(op))] + [None] * (len(op.inputs) - 1)


@register_gradient("MaxPool3D")
def _max_pool3d(op, g):
    x, y = op.inputs[0], op.outputs[0]
    return [apply_op1("MaxPool3DGrad", [x, y, g], _pool_attrs(op))]


@register_gradient("AvgPool3D")
def _avg_pool3d(op, g):
    x = op.inputs[0]
    return [apply_op1("AvgPool3DGrad", [g, x], {"orig_input_shape": x.shape, **_pool_attrs(op)})]


@register_gradient("AvgPool3DGrad")
def _avg_pool3d_grad(op, g):
    # linear in its gradient input, with AvgPool3D as the adjoint
    return [apply_op1("AvgPool3D", [g], _pool_attrs(op))] + [None] * (len(op.inputs) - 1)


# Depthwise and 3-D convolutions: each op of a family (forward, input gradient, filter
# gradient) is bilinear, and the gradients of each are the other two, as for Conv2D above.

_CONV_FAMILIES = {
    "DepthwiseConv2dNative": ("DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
                              "DepthwiseConv2dNativeBackpropFilter"),
    "Conv3D": ("Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2"),
}


def _family(op):
    for ops in _CONV_FAMILIES.values():
        if op.type in ops:
            return ops
    raise CompileError(f"no convolution family for {op.type}")


def _family_attrs(op):
    return {k: v for k, v in op.attrs.items() if k not in ("input_shape", "filter_shape")}


@register_gradient("DepthwiseConv2dNative")
@register_gradient("Conv3D")
def _conv_forward(op, g):
    forward, backprop_input, backprop_filter = _family(op)
    x, w = op.inputs
    attrs = _family_attrs(op)
    dx = apply_op1(backprop_input, [w, g, x], {"input_shape": x.shape, **attrs})
    dw = apply_op1(backprop_filter, [x, g], {"filter_shape": w.shape, **attrs})
    return [dx, dw]


@register_gradient("DepthwiseConv2dNativeBackpropInput")
@register_gradient("Conv3DBackpropInputV2")
def _conv_backprop_input(op, g):
    forward, _, backprop_filter = _family(op)
    w, dy = op.inputs[:2]
    attrs = _family_attrs(op)
    dw = apply_op1(backprop_filter, [g, dy], {"filter_shape": w.shape, **attrs})
    ddy = apply_op1(forward, [g, w], attrs)
    return [dw, ddy] + [None] * (len(op.inputs) - 2)


@register_gradient("DepthwiseConv2dNativeBackpropFilter")
@register_gradient("Conv3DBackpropFilterV2")
def _conv_backprop_filter(op, g):
    forward, backprop_input, _ = _family(op)
    x, dy = op.inputs
    attrs = _family_attrs(op)
    dx = apply_op1(backprop_input, [g, dy, x], {"input_shape": x.shape, **attrs})
    ddy = apply_op1(forward, [x, g], attrs)
    return [dx, ddy]


@register_gradient("BiasAdd")
def _bias_add(op, g):
    return [g, apply_op1("BiasAddGrad", [g])]


@register_gradient("BiasAddGrad")
def _bias_add_grad(op, g):
    x = op.inputs[0]
    return [g + a.zeros_like(x)]


@register_gradient("L2Loss")
def _l2_loss(op, g):
    return [op.inputs[0] * g]


@register_gradient("TopK")
def _top_k(op, g_values, g_indices):
    # scatter each selected entry's gradient back to its position in the row
    x = op.inputs[0]
    n = x.shape[-1]
    if n is None:
        raise CompileError("the gradient of top_k needs the input's last dim known when "
                           "the graph is built")
    hot = a.one_hot(op.outputs[1], n, dtype=x.dtype)  # [..., k, n]
    return [m.reduce_sum(hot * a.expand_dims(g_values, -1), axis=-2)]
