"""Gradients of the neural-network ops, after TensorFlow's nn_grad.py."""

from __future__ import annotations

from ...compiler.registry import not_differentiable, register_gradient
from ..building import apply_op1
from ..ops import array as a
from ..ops import math as m

not_differentiable("RandomUniform", "RandomNormal", "TruncatedNormal", "RandomUniformInt")


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


@register_gradient("SoftmaxCrossEntropyWithLogits")
def _softmax_xent(op, g_loss, g_backprop):
    # TensorFlow ignores the gradient of the backprop output; so do we (it is an
    # implementation detail of this op, not a value users differentiate).
    logits, labels = op.inputs
    backprop = op.outputs[1]
    g = a.expand_dims(g_loss, -1)
    log_p = apply_op1("LogSoftmax", [logits], {"axis": -1})
    return [g * backprop, -g * log_p]


@register_gradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_softmax_xent(op, g_loss, g_backprop):
    return [a.expand_dims(g_loss, -1) * op.outputs[1], None]


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


@register_gradient("AvgPool")
def _avg_pool(op, g):
    x = op.inputs[0]
    return [apply_op1("AvgPoolGrad", [g, x], {"orig_input_shape": x.shape, **_pool_attrs(op)})]


@register_gradient("AvgPoolGrad")
def _avg_pool_grad(op, g):
    # AvgPoolGrad is linear in its gradient input; its adjoint is AvgPool itself.
    return [apply_op1("AvgPool", [g], _pool_attrs(op))] + [None] * (len(op.inputs) - 1)


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


not_differentiable("MaxPoolGrad")
