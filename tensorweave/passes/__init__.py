"""Graph-to-graph passes; each module registers the pipeline stage it belongs to.

Stage ``optimized`` (right after ``traced``): `shape_inference.infer_shapes`,
`constant_folding.fold_constants`, `cse.cse`, `dce.dce`.
"""

from ..compiler.pipeline import register_stage
from . import constant_folding, cse, dce, shape_inference

OPTIMIZED = [shape_inference.infer_shapes, constant_folding.fold_constants, cse.cse, dce.dce]


def _register_stages() -> None:
    """Register this package's stages. The package is imported once, but a second run of
    this code (`importlib.reload`) must keep the stage that is already there."""
    try:
        register_stage("optimized", OPTIMIZED, after="traced")
    except ValueError:  # "stage 'optimized' exists"
        pass


_register_stages()

__all__ = ["OPTIMIZED", "constant_folding", "cse", "dce", "shape_inference"]
