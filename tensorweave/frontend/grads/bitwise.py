"""Gradients of the bitwise ops: none (integer results, as in TensorFlow)."""

from ...compiler.registry import not_differentiable

not_differentiable("BitwiseAnd", "BitwiseOr", "BitwiseXor", "Invert", "LeftShift",
                   "RightShift")
