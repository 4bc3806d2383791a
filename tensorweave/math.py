"""``tw.math``: elementwise math, comparisons, reductions and matmul with TensorFlow's
names (``tf.math``). The same functions are also top-level (``tw.add`` is
``tw.math.add``), and ``softplus``/``softsign`` are also in `tw.nn`."""

from .frontend.ops.activations import softplus, softsign
from .frontend.ops.array import unsorted_segment_sum
from .frontend.ops.bitwise import logical_xor
from .frontend.ops.math import *  # noqa: F403
from .frontend.ops.math import __all__ as _math_all
from .frontend.ops.nn import log_softmax
from .frontend.ops.normalization import l2_normalize
from .frontend.ops.ranking import in_top_k, top_k
from .frontend.ops.segments import *  # noqa: F403
from .frontend.ops.segments import __all__ as _segments_all
from .frontend.ops.special import *  # noqa: F403
from .frontend.ops.special import __all__ as _special_all

__all__ = [*_math_all, "softplus", "softsign", "log_softmax", "l2_normalize", "top_k",
           "in_top_k", "unsorted_segment_sum", "logical_xor", *_segments_all, *_special_all]


def __dir__() -> list[str]:
    return sorted(__all__)
