"""The public op functions, by family. Each module lists its public names in ``__all__``;
the math and array families are also the top-level ``tw.`` namespace."""

from . import array, math, nn, random  # noqa: F401
from .array import *  # noqa: F403
from .array import __all__ as _array_all
from .math import *  # noqa: F403
from .math import __all__ as _math_all

__all__: list[str] = [*_math_all, *_array_all]
