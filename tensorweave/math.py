"""``tw.math``: elementwise math, comparisons, reductions and matmul with TensorFlow's
names (``tf.math``). The same functions are also top-level (``tw.add`` is
``tw.math.add``), and ``softplus``/``softsign`` are also in `tw.nn`."""

from .frontend.ops.activations import softplus, softsign
from .frontend.ops.math import *  # noqa: F403
from .frontend.ops.math import __all__ as _math_all
from .frontend.ops.nn import log_softmax
from .frontend.ops.normalization import l2_normalize
from .frontend.ops.ranking import in_top_k, top_k

__all__ = [*_math_all, "softplus", "softsign", "log_softmax", "l2_normalize", "top_k",
           "in_top_k"]


def __dir__() -> list[str]:
    return sorted(__all__)
