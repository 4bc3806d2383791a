"""``tw.nn``: neural-network functions with TensorFlow's names.

The activations (`relu`, `sigmoid`, `tanh`, ...) live in the math family and are
re-exported here on first use, so this module imports whether or not that family is
loaded yet.
"""

from __future__ import annotations

import importlib
from typing import Any

from .frontend.ops.nn import (
    avg_pool,
    avg_pool2d,
    avg_pool_grad,
    bias_add,
    bias_add_grad,
    conv2d,
    conv2d_backprop_filter,
    conv2d_backprop_input,
    conv2d_transpose,
    l2_loss,
    log_softmax,
    max_pool,
    max_pool2d,
    max_pool_grad,
    softmax,
    softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
)

# math-family functions that TensorFlow also exposes as tf.nn.*
_FROM_MATH = ("relu", "relu6", "sigmoid", "tanh", "elu", "selu", "softplus", "softsign",
              "leaky_relu", "gelu", "silu", "swish", "sigmoid_cross_entropy_with_logits")


def __getattr__(name: str) -> Any:
    if name in _FROM_MATH:
        math = importlib.import_module("tensorweave.frontend.ops.math")
        if hasattr(math, name):
            value = getattr(math, name)
            globals()[name] = value  # cache: later lookups skip this hook
            return value
    raise AttributeError(f"module 'tensorweave.nn' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FROM_MATH))


__all__ = ["avg_pool", "avg_pool2d", "avg_pool_grad", "bias_add", "bias_add_grad", "conv2d",
           "conv2d_backprop_filter", "conv2d_backprop_input", "conv2d_transpose", "l2_loss",
           "log_softmax", "max_pool", "max_pool2d", "max_pool_grad", "softmax",
           "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
           "sparse_softmax_cross_entropy_with_logits"]
# plus the math activations (relu, sigmoid, tanh, ...), resolved lazily by __getattr__
