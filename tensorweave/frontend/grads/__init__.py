"""Gradient functions, one module per op family; importing registers them.

A gradient function receives a `GradOp` (the forward node's inputs, outputs and
attributes as tensors) and one gradient per output, and returns one gradient per input
(None where the input has none). It builds the gradient with the public op functions,
so gradient graphs are ordinary IR.
"""

from . import (  # noqa: F401
    array,
    bitwise,
    control,
    core,
    indexing,
    linalg,
    math,
    nn,
    partition,
    special,
)
