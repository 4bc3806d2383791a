"""Epilogues: the elementwise ops after a product, computed where the product's values
are, so the product is never written out and read back by a second pass.

A ``FusedConv2D`` / ``FusedMatMul`` node (stage ``epilogue``, `passes/epilogue.py`) holds
in its region a ``Conv2D`` or ``MatMul`` of its first two inputs and then the
elementwise ops of a fused cluster that read the product. `Epilogue(node)` turns those
ops into a `codegen.Program` whose slot 0 is the product and whose other inputs are the
node's remaining operands, each read as a scalar, a vector over the channel (last) axis
or a tensor of the product's shape (`passes.epilogue.operand_kind`).

`Epilogue.apply` emits the program on one vector of product values (any number of
lanes, all in one row of channels) and stores every output there: the direct
convolution calls it on each accumulator of its register tile. For products computed
by BLAS, `Epilogue.gemm_epilogue` gives the function that applies it to a block of rows
and columns of C in memory, which `LoweringContext.gemm` calls on each thread's chunk
right after the GEMM call that computed it (while the chunk is in cache).

Each op is emitted by the same emitter (`elementwise.emit_op`) as in the cluster's own
loop nest, on the same value, so an output has the bits the unfused step gives it: the
lanes of a vector are independent, and a lane's code is the same whatever the vector's
width. `carrier` is the output that holds the product until the epilogue runs (a
block of a GEMM, the partial sums of a long direct convolution): one of the product's
dtype, overwritten in place by the epilogue's own value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import llvmlite.ir as ir

from ...compiler.dtypes import bool_
from ...compiler.ir import Node
from ...compiler.types import TensorType
from ...errors import UnimplementedError
from .elementwise import I8, I32, I64, Lanes, OpInfo, emit_op, memory_type, scalar_type
from .loops import counted_loop

PRODUCT_OPS = frozenset({"Conv2D", "MatMul"})
# ops whose native code may set a failure status (on integers), which an epilogue
# cannot report
MAY_FAIL = frozenset({"Div", "FloorDiv", "FloorMod", "Pow", "TruncateDiv", "TruncateMod"})
_I8PP = ir.PointerType(ir.PointerType(I8))
# i32 (i8** inputs, i8** outputs, i64 base, i64 row0, i64 row1, i64 col0, i64 col1)
GEMM_EPILOGUE_TYPE = ir.FunctionType(I32, [_I8PP, _I8PP, I64, I64, I64, I64, I64])


@dataclass(frozen=True)
class GemmEpilogue:
    """An epilogue as `LoweringContext.gemm` runs it on the elements of C it computed:
    ``fn(ins, outs, base + row * n ..., row0, row1, col0, col1)`` (see `Epilogue`)."""

    fn: ir.Function
    ins: ir.Value
    outs: ir.Value
    base: ir.Value | int = 0


class Epilogue:
    """The elementwise tail of a FusedConv2D / FusedMatMul node (static shapes); raises
    UnimplementedError for a region it cannot compute (then the node runs its
    reference kernel)."""

    def __init__(self, node: Node) -> None:
        from ...passes.epilogue import operand_kind
        from .fused import program_of
        region = node.regions[0]
        order = region.topological_order()
        head = order[0] if order else None
        if head is None or head.op not in PRODUCT_OPS or len(head.outputs) != 1 or \
                list(head.inputs) != list(region.args[:2]):
            raise UnimplementedError(f"{node.op}: the region does not start with a product "
                                     f"of its first two arguments")
        product = head.outputs[0].type
        if not isinstance(product, TensorType) or not product.is_fully_defined or \
                product.rank < 1 or product.dtype.ir_name not in ("f32", "f64"):
            raise UnimplementedError(f"{node.op}: the product is {product}")
        self.node = node
        self.head = head
        self.product = product
        self.channels = int(product.shape[-1])
        self.n_extra = len(region.args) - 2
        self.program, self.nodes, reduced = program_of(
            region, [head.outputs[0], *region.args[2:]], order[1:])
        if reduced or self.program.has_reductions:
            raise UnimplementedError(f"{node.op}: an epilogue has no reductions")
        if any(i.op in MAY_FAIL and i.in_dtypes[0].kind != "float" for i in self.program.instrs):
            raise UnimplementedError(f"{node.op}: an epilogue op that may fail")
        kinds = ["product"]
        for a in region.args[2:]:
            kind = operand_kind(a.type, product)
            if kind is None or not a.type.is_fully_defined:
                raise UnimplementedError(f"{node.op}: operand {a.type} is not a scalar, a "
                                         f"channel vector or of the product's shape {product}")
            kinds.append(kind)
        self.kinds = kinds
        shape = tuple(product.shape)
        for v in node.outputs:
            if not isinstance(v.type, TensorType) or tuple(v.type.shape) != shape:
                raise UnimplementedError(f"{node.op}: output {v.type} is not of the "
                                         f"product's shape {product}")
        self.out_dtypes = [v.type.dtype for v in node.outputs]
        carriers = [k for k, d in enumerate(self.out_dtypes) if d is product.dtype]
        if not carriers:
            raise UnimplementedError(f"{node.op}: no output of the product's dtype")
        self.carrier = carriers[0]

    # ------------------------------------------------------------------ pointers
    def pointers(self, cx) -> list[ir.Value]:
        """Typed pointers to the extra operands (node inputs 2..) then the outputs, in
        the node function of `cx` (a `LoweringContext`)."""
        return ([cx.input(2 + k) for k in range(self.n_extra)]
                + [cx.output(k) for k in range(len(self.out_dtypes))])

    def _table_pointers(self, b: ir.IRBuilder, ins: ir.Value, outs: ir.Value) -> list[ir.Value]:
        """`pointers` from the node's pointer tables (`ins`, `outs`: i8**)."""
        out = []
        for k in range(self.n_extra):
            raw = b.load(b.gep(ins, [I64(2 + k)]))
            dt = self.program.input_dtypes[1 + k]
            out.append(b.bitcast(raw, ir.PointerType(memory_type(dt))))
        for k, dt in enumerate(self.out_dtypes):
            raw = b.load(b.gep(outs, [I64(k)]))
            out.append(b.bitcast(raw, ir.PointerType(memory_type(dt))))
        return out

    # ------------------------------------------------------------------ emission
    def apply(self, b: ir.IRBuilder, module: ir.Module, ptrs: Sequence[ir.Value],
              value: ir.Value, offset: ir.Value, channel: ir.Value, lanes: int) -> None:
        """Compute the program on `value` (the product at element `offset`, channels
        ``channel .. channel + lanes - 1`` of one row: a vector of `lanes`, or a scalar
        for one lane) and store every output at `offset`; `ptrs` as from `pointers`."""
        cx = Lanes(module, b, lanes, None)  # (no op here can fail: no status)
        values: dict[int, ir.Value] = {0: value}

        def slot(s: int) -> ir.Value:
            if s not in values:
                values[s] = self._load(cx, ptrs[s - 1], s, offset, channel)
            return values[s]

        n_in = len(self.program.input_dtypes)
        for k, ins in enumerate(self.program.instrs):
            args = [] if ins.op in ("ZerosLike", "OnesLike") else [slot(a) for a in ins.args]
            info = OpInfo(ins.op, dict(ins.attrs), ins.in_dtypes, ins.out_dtype, k)
            values[n_in + k] = emit_op(cx, info, args)
        for k, s in enumerate(self.program.outputs):
            v = slot(s)
            dt = self.out_dtypes[k]
            if dt is bool_:
                v = b.zext(v, cx.wrap(I8))
            ptr = b.gep(ptrs[self.n_extra + k], [offset])
            if lanes > 1:
                ptr = b.bitcast(ptr, ir.PointerType(v.type))
            b.store(v, ptr, align=dt.itemsize)

    def _load(self, cx: Lanes, ptr: ir.Value, s: int, offset: ir.Value,
              channel: ir.Value) -> ir.Value:
        b = cx.b
        dt = self.program.input_dtypes[s]
        kind = self.kinds[s]
        if kind == "scalar":
            v = cx.splat(b.load(ptr))
        else:
            at = b.gep(ptr, [offset if kind == "full" else channel])
            if cx.width > 1:
                vt = ir.VectorType(memory_type(dt), cx.width)
                v = b.load(b.bitcast(at, ir.PointerType(vt)), align=dt.itemsize)
            else:
                v = b.load(at)
        if dt is bool_:
            v = b.icmp_unsigned("!=", v, cx.const(I8, 0))
        return v

    def lanes(self) -> int:
        """Lanes of the vectors the GEMM epilogue works in: a register of the host."""
        from .jit import host_info
        return max(1, host_info().vector_bits // 8 // self.product.dtype.itemsize)

    def gemm_function(self, module: ir.Module, name: str) -> ir.Function:
        """``i32 @name(i8** ins, i8** outs, i64 base, i64 r0, i64 r1, i64 c0, i64 c1)``
        (defined once per module): the epilogue on rows [r0, r1) and columns [c0, c1)
        of the [rows, channels] matrix whose element (0, 0) is element `base` of the
        carrier output (and of every output and full operand), reading the product
        from the carrier; rows go `lanes` channels at a time, then one by one."""
        fn = module.globals.get(name)
        if fn is not None:
            return fn
        fn = ir.Function(module, GEMM_EPILOGUE_TYPE, name)
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        ins, outs, base, r0, r1, c0, c1 = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ptrs = self._table_pointers(b, ins, outs)
        carrier = ptrs[self.n_extra + self.carrier]
        w = self.lanes()
        t = scalar_type(self.product.dtype)
        size = self.product.dtype.itemsize
        length = b.sub(c1, c0)
        vec_stop = b.add(c0, b.sub(length, b.srem(length, I64(w))))
        with counted_loop(b, r0, r1, 1, "row") as r:
            row = b.add(base, b.mul(r, I64(self.channels)))

            def run(c: ir.Value, width: int) -> None:
                off = b.add(row, c)
                at = b.gep(carrier, [off])
                if width > 1:
                    vt = ir.VectorType(t, width)
                    v = b.load(b.bitcast(at, ir.PointerType(vt)), align=size)
                else:
                    v = b.load(at)
                self.apply(b, module, ptrs, v, off, c, width)
            with counted_loop(b, c0, vec_stop, w, "vec") as c:
                run(c, w)
            with counted_loop(b, vec_stop, c1, 1, "rem") as c:
                run(c, 1)
        b.ret(I32(0))
        return fn

    def gemm_epilogue(self, cx, base: ir.Value | int = 0) -> GemmEpilogue:
        """The `GemmEpilogue` for a GEMM emitted in the node function of `cx` whose C
        starts at element `base` of the carrier."""
        fn = self.gemm_function(cx.module, f"{cx.fn.name}.epilogue")
        return GemmEpilogue(fn, cx.fn.args[0], cx.fn.args[1], base)

    def run_all(self, cx, rows: int) -> None:
        """Emit, in `cx`'s node function, the epilogue over the whole carrier seen as
        `rows` rows of channels (its product already there)."""
        e = self.gemm_epilogue(cx)
        cx.b.call(e.fn, [e.ins, e.outs, I64(0), I64(0), I64(rows), I64(0), I64(self.channels)])


def epilogue_of(node: Node) -> Epilogue | None:
    """`Epilogue(node)`, or None when it cannot be computed natively."""
    try:
        return Epilogue(node)
    except UnimplementedError:
        return None


__all__ = ["GEMM_EPILOGUE_TYPE", "MAY_FAIL", "PRODUCT_OPS", "Epilogue", "GemmEpilogue",
           "epilogue_of"]
