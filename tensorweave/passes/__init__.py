"""Graph-to-graph passes; each module registers the pipeline stage it belongs to.

Stage ``optimized`` (right after ``traced``): `shape_inference.infer_shapes`,
`constant_folding.fold_constants`, `cse.cse`, `resource_gather.gather_from_variables`,
`dce.dce`.
Stage ``placed`` (after ``optimized``): `placement.place_with_config` (every node gets a
device). Stage ``partitioned`` (after ``placed``): `partition.partition` (Send/Recv at
every cross-device edge).
Stage ``lowered`` (after ``partitioned``; compiling runs it only when asked to, see
`lower_control_flow`): `lower_control_flow.lower_control_flow` (If and While become
Switch, Merge, Enter, Exit, NextIteration and LoopCond).
Stage ``fused`` (compiling for the cpu and gpu targets only): `fusion.fuse` (clusters of
elementwise ops and reductions become Fusion nodes).
Stage ``epilogue`` (last; cpu target only, unless ``TW_EPILOGUE_FUSION=0``):
`epilogue.fuse_epilogues` (a Conv2D or MatMul and the cluster reading it become one
FusedConv2D / FusedMatMul node).
"""

from ..compiler.pipeline import register_stage
from . import (
    constant_folding,
    cse,
    dce,
    lower_control_flow,
    partition,
    placement,
    resource_gather,
    shape_inference,
)

OPTIMIZED = [shape_inference.infer_shapes, constant_folding.fold_constants, cse.cse,
             resource_gather.gather_from_variables, dce.dce]
PLACED = [placement.place_with_config]
PARTITIONED = [partition.partition]
LOWERED = [lower_control_flow.lower_control_flow]


def _register_stages() -> None:
    """Register this package's stages. The package is imported once, but a second run of
    this code (`importlib.reload`) must keep the stage that is already there."""
    for name, passes, after, when in (
            ("optimized", OPTIMIZED, "traced", None), ("placed", PLACED, "optimized", None),
            ("partitioned", PARTITIONED, "placed", None),
            ("lowered", LOWERED, "partitioned", lower_control_flow.stage_wanted)):
        try:
            register_stage(name, passes, after=after, when=when)
        except ValueError:  # "stage ... exists"
            pass


_register_stages()

# Registers stage "fused" (the cpu target's clustering) last, after the stages above,
# then stage "epilogue" after it.
from . import epilogue, fusion  # noqa: E402, F401

__all__ = ["LOWERED", "OPTIMIZED", "PARTITIONED", "PLACED", "constant_folding", "cse", "dce",
           "lower_control_flow", "partition", "placement", "shape_inference"]
