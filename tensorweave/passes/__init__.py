"""Graph-to-graph passes; each module registers the pipeline stage it belongs to.

Stage ``optimized`` (right after ``traced``): `shape_inference.infer_shapes`,
`constant_folding.fold_constants`, `cse.cse`, `dce.dce`.
Stage ``placed`` (after ``optimized``): `placement.place_with_config` (every node gets a
device). Stage ``partitioned`` (after ``placed``): `partition.partition` (Send/Recv at
every cross-device edge).
Stage ``fused`` (last; compiling for the cpu target only): `fusion.fuse` (clusters of
elementwise ops and reductions become Fusion nodes).
"""

from ..compiler.pipeline import register_stage
from . import constant_folding, cse, dce, partition, placement, shape_inference

OPTIMIZED = [shape_inference.infer_shapes, constant_folding.fold_constants, cse.cse, dce.dce]
PLACED = [placement.place_with_config]
PARTITIONED = [partition.partition]


def _register_stages() -> None:
    """Register this package's stages. The package is imported once, but a second run of
    this code (`importlib.reload`) must keep the stage that is already there."""
    for name, passes, after in (("optimized", OPTIMIZED, "traced"), ("placed", PLACED, "optimized"),
                                ("partitioned", PARTITIONED, "placed")):
        try:
            register_stage(name, passes, after=after)
        except ValueError:  # "stage ... exists"
            pass


_register_stages()

# Registers stage "fused" (the cpu target's clustering) last, after the stages above.
from . import fusion  # noqa: E402, F401

__all__ = ["OPTIMIZED", "PARTITIONED", "PLACED", "constant_folding", "cse", "dce", "partition",
           "placement", "shape_inference"]
