"""Epilogues on the gpu target: the elementwise cluster that reads a product (MatMul,
Conv2D) computed in the product kernel's store, so the product never goes through
global memory and the cluster costs no launch of its own.

Stage ``epilogue`` (`passes/epilogue.py`, the cpu target's pass: one matcher for both
targets) turns a product and the Fusion that alone reads it into one ``FusedMatMul`` /
``FusedConv2D`` node; compiling for the gpu target it asks this module whether the gpu
target has code for both halves (`product_native`, `cluster_native`) and which loop
accumulators must stay apart (`in_place_sums`). The region's analysis (the cluster as a
`codegen.Program` whose slot 0 is the product, how each other operand is read, the output
dtypes) is the cpu target's (`cpu.epilogue.Epilogue`); `GpuEpilogue.store` emits it as
kernel source for one element of the product: each op through `exprs.emit_op`, the
emitter the Fusion kernel (`fused.py`) uses, on the product rounded to its dtype as the
unfused step stores it, so a fused output has the bits of the unfused one.
"""

from __future__ import annotations

from ...compiler.ir import Graph, Node
from ...compiler.types import TensorType
from ...errors import UnimplementedError
from . import exprs
from .source import Unsupported, Writer, has_gpu_type, numba_type

PRODUCTS = frozenset({"MatMul", "Conv2D"})


def product_native(product: Node) -> bool:
    """Whether the gpu target has a kernel for `product` that can take an epilogue
    (shape-dependent refusals, empty results, are the planner's: the fused node then
    runs on the host, as the product alone would)."""
    t = product.outputs[0].type
    return product.op in PRODUCTS and isinstance(t, TensorType) and t.dtype.kind == "float" \
        and has_gpu_type(t.dtype)


def cluster_native(fusion: Node) -> bool:
    """Whether every op of Fusion `fusion` has GPU code, in dtypes with GPU code."""
    from .support import gpu_kernel_reason
    region = fusion.regions[0]
    for v in (*fusion.inputs, *fusion.outputs):
        if not isinstance(v.type, TensorType) or not has_gpu_type(v.type.dtype):
            return False
    return all(n.op == "Const" or gpu_kernel_reason(n) is None for n in region.nodes)


def in_place_sums(body: Graph, accumulators: set[Node]) -> set[Node]:
    """Of `accumulators` (Fusions computing a loop variable of While body `body` from its
    own argument), those the gpu target's loops may update in place (``argument + other``:
    row_add, outer_acc, `loops.py`): an epilogue must not absorb their product. The
    others are double-buffered like any loop variable."""
    from ..cpu.step import _fused_sum_of
    sums = {_fused_sum_of(res, arg) for arg, res in zip(body.args, body.results)}
    return {n for n in accumulators if n in sums}


class GpuEpilogue:
    """The elementwise tail of a FusedMatMul / FusedConv2D node (static shapes), as
    kernel source. Raises `Unsupported` for a region it cannot compute (the node then runs
    its reference kernel on the host)."""

    def __init__(self, node: Node) -> None:
        from ..cpu.epilogue import Epilogue
        try:
            self.analysis = Epilogue(node)
        except UnimplementedError as e:
            raise Unsupported(str(e)) from None
        program = self.analysis.program
        dtypes = list(program.input_dtypes) + [i.out_dtype for i in program.instrs]
        if not all(has_gpu_type(d) for d in dtypes):
            raise Unsupported("a dtype without GPU code (float16/bfloat16)")
        for ins in program.instrs:
            if not exprs.supports(ins.op):
                raise Unsupported(f"op {ins.op} has no GPU code")
        self.node = node
        self.head: Node = self.analysis.head

    @property
    def params(self) -> list[str]:
        """The kernel's parameters after the product's two operands: the other operands,
        then the node's outputs (names no `Writer.tmp` of an emitter can take: a letter
        and digits)."""
        n_extra = self.analysis.n_extra
        return [f"epi{k}" for k in range(n_extra)] + \
            [f"out{k}" for k in range(len(self.analysis.out_dtypes))]

    @property
    def types(self) -> list[str]:
        """The numba types of `params`."""
        a = self.analysis
        return [numba_type(d) for d in a.program.input_dtypes[1:]] + \
            [numba_type(d) for d in a.out_dtypes]

    def store(self, w: Writer, value: str, offset: str, channel: str) -> None:
        """Emit the cluster on the product's element `value` (already of its dtype) at
        linear `offset` of the product, in channel (last-axis index) `channel`, storing
        every output at `offset`."""
        a = self.analysis
        program = a.program
        n_in = len(program.input_dtypes)
        cx = exprs.Scope(w, None)  # (no op can fail: the matcher refuses those)
        slots: dict[int, str] = {0: value}

        def slot(s: int) -> str:
            if s not in slots:  # an operand, loaded where first used
                kind = a.kinds[s]
                at = "0" if kind == "scalar" else offset if kind == "full" else channel
                w(f"epv{s} = epi{s - 1}[{at}]")
                slots[s] = f"epv{s}"
            return slots[s]

        for k, ins in enumerate(program.instrs):
            op = exprs.Op(ins.op, dict(ins.attrs), ins.in_dtypes, ins.out_dtype, k)
            expr = exprs.emit_op(cx, op, [slot(x) for x in ins.args])
            w(f"epv{n_in + k} = {expr}")
            slots[n_in + k] = f"epv{n_in + k}"
        for k, s in enumerate(program.outputs):
            w(f"out{k}[{offset}] = {slot(s)}")


def epilogue_of(node: Node) -> GpuEpilogue:
    """`GpuEpilogue(node)` (raises `Unsupported`)."""
    return GpuEpilogue(node)


__all__ = ["GpuEpilogue", "cluster_native", "epilogue_of", "in_place_sums", "product_native"]
