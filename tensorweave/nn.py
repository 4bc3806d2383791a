"""``tw.nn``: neural-network functions with TensorFlow's names: activations, softmax and
cross entropies, 1-D/2-D/3-D and depthwise convolution, pooling, batch and layer
normalization (``tf.nn``)."""

from .frontend.ops.activations import (
    elu,
    gelu,
    leaky_relu,
    relu6,
    selu,
    sigmoid_cross_entropy_with_logits,
    silu,
    softplus,
    softsign,
    swish,
)
from .frontend.ops.dropout import dropout
from .frontend.ops.embedding import embedding_lookup
from .frontend.ops.math import relu, sigmoid, tanh
from .frontend.ops.nn import (
    avg_pool,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    avg_pool3d_grad,
    avg_pool_grad,
    bias_add,
    bias_add_grad,
    conv1d,
    conv1d_transpose,
    conv2d,
    conv2d_backprop_filter,
    conv2d_backprop_input,
    conv2d_transpose,
    conv3d,
    conv3d_backprop_filter,
    conv3d_backprop_input,
    conv3d_transpose,
    convolution,
    depthwise_conv2d,
    depthwise_conv2d_backprop_filter,
    depthwise_conv2d_backprop_input,
    l2_loss,
    log_softmax,
    max_pool,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    max_pool3d_grad,
    max_pool_grad,
    pool,
    separable_conv2d,
    softmax,
    softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
)
from .frontend.ops.normalization import (
    batch_normalization,
    fused_batch_norm,
    l2_normalize,
    layer_normalization,
    moments,
)
from .frontend.ops.ranking import in_top_k, top_k
from .frontend.ops.sampled import nce_loss, sampled_softmax_loss
from .sparse.embedding import embedding_lookup_sparse_v2 as embedding_lookup_sparse
from .sparse.embedding import safe_embedding_lookup_sparse

__all__ = ["nce_loss", "sampled_softmax_loss",
           "relu", "relu6", "sigmoid", "tanh", "elu", "selu", "softplus", "softsign",
           "leaky_relu", "gelu", "silu", "swish", "sigmoid_cross_entropy_with_logits",
           "avg_pool", "avg_pool2d", "avg_pool_grad", "bias_add", "bias_add_grad", "conv2d",
           "conv2d_backprop_filter", "conv2d_backprop_input", "conv2d_transpose", "l2_loss",
           "log_softmax", "max_pool", "max_pool2d", "max_pool_grad", "softmax",
           "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
           "sparse_softmax_cross_entropy_with_logits", "embedding_lookup", "dropout",
           "embedding_lookup_sparse", "safe_embedding_lookup_sparse",
           "moments", "batch_normalization", "l2_normalize", "top_k", "in_top_k",
           "fused_batch_norm", "layer_normalization", "conv1d", "conv1d_transpose",
           "depthwise_conv2d", "depthwise_conv2d_backprop_input",
           "depthwise_conv2d_backprop_filter", "conv3d", "conv3d_backprop_input",
           "conv3d_backprop_filter", "conv3d_transpose", "max_pool1d", "avg_pool1d",
           "max_pool3d", "avg_pool3d", "max_pool3d_grad", "avg_pool3d_grad", "pool",
           "separable_conv2d", "convolution"]


def __dir__() -> list[str]:
    return sorted(__all__)
