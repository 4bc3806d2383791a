"""Gradient functions, one module per op family; importing registers them.

A gradient function receives a `GradOp` (the forward node's inputs, outputs and
attributes as tensors) and one gradient per output, and returns one gradient per input
(None where the input has none). It builds the gradient with the public op functions,
so gradient graphs are ordinary IR.
"""

import importlib

from . import core  # noqa: F401

for _family in ("math", "array", "nn", "control"):
    try:
        importlib.import_module(f"{__name__}.{_family}")
    except ModuleNotFoundError as _e:  # a family not written yet
        if _e.name != f"{__name__}.{_family}":
            raise
