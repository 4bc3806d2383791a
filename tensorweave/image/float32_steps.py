"""Float32 arithmetic rounded operation by operation, as TensorFlow's C++ kernels round
it, on every target: the sampling positions of `graph_sampling` and `box_crops` are
computed in the graph, and one rounding more or less can move a nearest-neighbor tie."""

from __future__ import annotations

from typing import Any

from ..compiler.dtypes import float32, float64
from ..frontend.ops.math import cast


def f32_product(a: Any, b: Any) -> Any:
    """``a * b`` rounded once to float32, computed so that no target can contract it
    with a following addition into a fused multiply-add (the cpu target contracts; a
    position one rounding off can move a nearest-neighbor tie to the other pixel): the
    float64 product of two float32 values is exact, and its rounding to float32 is an
    explicit conversion."""
    return cast(cast(a, float64) * cast(b, float64), float32)


def f32_sum(a: Any, b: Any) -> Any:
    """``a + b`` of two float32 values rounded to float32 (through float64, as
    `f32_product`)."""
    return cast(cast(a, float64) + cast(b, float64), float32)
