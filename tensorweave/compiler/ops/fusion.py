"""The `Fusion` op: a cluster of ops that a target compiles into one kernel (loop nest).

The fusion pass (`tensorweave.passes.fusion`) replaces a connected set of elementwise ops
(and reductions fed by them) with one ``Fusion`` node. The node's single region holds the
cluster: its block arguments correspond, in order, to the node's inputs (the tensors the
cluster reads from outside) and its results to the node's outputs (the cluster's values
that are used outside). The region is isolated from above: it reads nothing but its own
arguments.

The reference kernel simply evaluates the region op by op, so a fused graph still runs
on every target; the cpu target compiles the region to native code.

`FusedConv2D` and `FusedMatMul` are the same kind of node for a product and the
elementwise cluster after it (stage ``epilogue``, cpu target only,
`tensorweave.passes.epilogue`): the region's first node is the ``Conv2D`` or ``MatMul`` of
the region's first two arguments, and the ops after it read its output. The cpu target
computes those ops on each output tile of the product while it is still in registers
or cache (an *epilogue*) instead of in a second pass over memory; every other target
would run the region as it is.
"""

from __future__ import annotations

from ...errors import ShapeError, VerificationError
from ..registry import def_op
from ..types import TensorType

Fusion = def_op("Fusion", ["*inputs"], num_regions=1, tags=["fusion"],
                doc="A fused cluster of ops; its region computes the outputs from the inputs.")


@Fusion.infer
def _fusion_infer(*inputs, regions):
    if len(regions) != 1:
        raise VerificationError(f"needs exactly one region, got {len(regions)}")
    body = regions[0]
    if len(body.args) != len(inputs):
        raise VerificationError(f"has {len(inputs)} inputs but its region takes "
                                f"{len(body.args)} arguments")
    for i, (t, arg) in enumerate(zip(inputs, body.args)):
        if isinstance(t, TensorType) and isinstance(arg.type, TensorType) \
                and not t.is_compatible_with(arg.type):
            raise ShapeError(f"input {i} is {t}, the region's argument {i} is {arg.type}")
    return [r.type for r in body.results]


@Fusion.kernel("reference", context=True)
def _fusion_kernel(ctx, *inputs):
    return tuple(ctx.run_region(ctx.node.regions[0], inputs))


FusedConv2D = def_op("FusedConv2D", ["input", "filter", "*operands"], num_regions=1,
                     tags=["fusion"],
                     doc="A Conv2D of `input` and `filter` and the elementwise ops after it, "
                         "which also read `operands`; its region computes the outputs.")
FusedMatMul = def_op("FusedMatMul", ["a", "b", "*operands"], num_regions=1, tags=["fusion"],
                     doc="A MatMul of `a` and `b` and the elementwise ops after it, which "
                         "also read `operands`; its region computes the outputs.")
for _op in (FusedConv2D, FusedMatMul):
    _op.infer(_fusion_infer)
    _op.kernel("reference", context=True)(_fusion_kernel)
