"""The public op functions, by family. Each module lists its public names in ``__all__``;
the math, array and indexing families are also the top-level ``tw.`` namespace."""

from . import array, indexing, math, nn, random, segments  # noqa: F401
from .array import *  # noqa: F403
from .array import __all__ as _array_all
from .indexing import *  # noqa: F403
from .indexing import __all__ as _indexing_all
from .math import *  # noqa: F403
from .math import __all__ as _math_all

__all__: list[str] = [*_math_all, *_array_all, *_indexing_all]
