"""Lowerings of core ops: fused clusters, copies (Identity, Reshape and friends), MatMul
and FusedMatMul (a MatMul with an epilogue, `epilogue.Epilogue`)."""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from .. import parallel
from ..epilogue import Epilogue, GemmEpilogue, epilogue_of
from ..fused import FusedKernel, try_fused_kernel
from ..lowering import I64, LoweringContext, lowering


def _fused(node) -> FusedKernel | None:
    # Cheap (no compilation): the cluster's program, made from its region.
    return try_fused_kernel(node)


def _fusion_supported(node) -> bool:
    k = _fused(node)
    if k is None:
        return False
    layout = k.static_layout()
    # An empty loop space computes nothing, not even the checks of ops whose operands
    # are not empty (an integer division by a zero scalar): the reference kernels raise
    # there, so such a cluster runs them instead.
    return layout is not None and layout[0] is not None


def _fusion_status(node, status: int):
    return _fused(node).status_error(status)


def _fusion_threads(program, layout, sizes, width: int) -> tuple[int, int]:
    """Threads (and chunk alignment) for a cluster's loop nest: its outermost loop is cut
    into chunks when the nest is large (`parallel.MIN_FUSED_WORK`: elements times their
    cost in simple ops) and that loop is over a kept dim (a reduction's rows are
    independent; a full reduction is not cut). A lone dim is the vectorized one: its
    chunks start at multiples of the vector width, so each element is computed by the
    same (vector or scalar) code as in one pass."""
    from ..codegen import work_per_element
    threads = parallel.num_threads()
    work = int(np.prod(sizes, dtype=np.int64)) * work_per_element(program)
    if threads == 1 or layout.n_outer == 0 or work < parallel.MIN_FUSED_WORK:
        return 1, 1
    align = width if layout.rank == 1 else 1
    chunks = parallel.chunk_count(int(sizes[0]), threads, align)
    return (chunks, align) if chunks > 1 else (1, 1)


@lowering("Fusion", supports=_fusion_supported, describe=_fusion_status)
def _fusion(cx: LoweringContext) -> None:
    """The cluster's loop nest (`codegen.KernelBuilder`) with its loop sizes as a constant."""
    k = _fused(cx.node)
    layout, sizes = k.static_layout()  # (not None: `_fusion_supported` declines that)
    from ..codegen import KernelBuilder
    threads, align = _fusion_threads(k.program, layout, sizes, k.width)
    kernel = KernelBuilder(k.program, layout, k.width, name=f"{cx.fn.name}.loops",
                           module=cx.module, threads=threads, align=align).emit()
    table = ir.GlobalVariable(cx.module, ir.ArrayType(I64, len(sizes)), f"{cx.fn.name}.sizes")
    table.global_constant = True
    table.linkage = "internal"
    table.initializer = ir.Constant(ir.ArrayType(I64, len(sizes)), [int(s) for s in sizes])
    sizes_ptr = cx.b.gep(table, [I64(0), I64(0)])
    cx.b.ret(cx.b.call(kernel, [cx.fn.args[0], cx.fn.args[1], sizes_ptr]))


def _nbytes(cx: LoweringContext, k: int = 0) -> int:
    t = cx.out_types[k]
    return int(t.num_elements) * t.dtype.np.itemsize


@lowering("Identity", "StopGradient", "Reshape", "ExpandDims", "Squeeze", "ReshapeLike")
def _copy(cx: LoweringContext) -> None:
    """Same bytes, another shape: a copy (the step compiler aliases these instead)."""
    cx.memcpy(cx.output(0), cx.input(0), _nbytes(cx))
    cx.ret_ok()


def _matmul_supported(node) -> bool:
    return node.outputs[0].type.dtype.ir_name in ("f32", "f64")


@lowering("MatMul", supports=_matmul_supported)
def _matmul(cx: LoweringContext) -> None:
    """Batched (with broadcasting over batch dims) products through `cx.gemm`."""
    _emit_matmul(cx, cx.node, cx.output(0), None)


def _fused_matmul_supported(node) -> bool:
    epi = epilogue_of(node)
    return epi is not None and epi.head.op == "MatMul"


@lowering("FusedMatMul", supports=_fused_matmul_supported)
def _fused_matmul(cx: LoweringContext) -> None:
    """The product into the epilogue's carrier output, then the epilogue on each GEMM
    call's part of it (`Epilogue`, `LoweringContext.gemm`)."""
    epi = Epilogue(cx.node)
    _emit_matmul(cx, epi.head, cx.output(epi.carrier), epi)


def _emit_matmul(cx: LoweringContext, node, c: ir.Value, epi: Epilogue | None) -> None:
    """`node`'s product (a MatMul; inputs 0 and 1 of `cx`'s node) into `c`, with `epi`
    run on each product's rows as they are computed."""
    ta, tb = bool(node.attrs.get("transpose_a")), bool(node.attrs.get("transpose_b"))
    at, bt, ct = (v.type for v in (node.inputs[0], node.inputs[1], node.outputs[0]))
    (ar, ac), (br, bc) = at.shape[-2:], bt.shape[-2:]
    m, n = ct.shape[-2:]
    k = ar if ta else ac
    a, b = cx.input(0), cx.input(1)
    batch = tuple(ct.shape[:-2])
    count = int(np.prod(batch, dtype=np.int64))
    if m * n == 0:
        cx.ret_ok()
        return
    if k == 0:
        cx.memset(c, 0, int(ct.num_elements) * ct.dtype.np.itemsize)
        if epi is not None:
            epi.run_all(cx, count * m)
        cx.ret_ok()
        return

    def then(base) -> GemmEpilogue | None:
        return None if epi is None else epi.gemm_epilogue(cx, base)
    a_batch = (1,) * (len(batch) - at.rank + 2) + tuple(at.shape[:-2])
    b_batch = (1,) * (len(batch) - bt.rank + 2) + tuple(bt.shape[:-2])
    if a_batch == batch and b_batch == batch or count == 1:
        # no broadcasting over the batch: one loop over the products
        with cx.loop(0, count, name="batch") as i:
            pa = cx.b.gep(a, [cx.b.mul(i, I64(ar * ac if a_batch == batch else 0))])
            pb = cx.b.gep(b, [cx.b.mul(i, I64(br * bc if b_batch == batch else 0))])
            off = cx.b.mul(i, I64(m * n))
            pc = cx.b.gep(c, [off])
            cx.gemm(ct.dtype, ta, tb, m, n, k, 1.0, pa, ac, pb, bc, 0.0, pc, n, then(off))
        cx.ret_ok()
        return
    # broadcast batch dims: one call per product, offsets computed here
    a_off = np.broadcast_to(np.arange(int(np.prod(a_batch))).reshape(a_batch), batch).ravel()
    b_off = np.broadcast_to(np.arange(int(np.prod(b_batch))).reshape(b_batch), batch).ravel()
    for ic, (ia, ib) in enumerate(zip(a_off.tolist(), b_off.tolist())):
        pa = cx.b.gep(a, [I64(ia * ar * ac)])
        pb = cx.b.gep(b, [I64(ib * br * bc)])
        pc = cx.b.gep(c, [I64(ic * m * n)])
        cx.gemm(ct.dtype, ta, tb, m, n, k, 1.0, pa, ac, pb, bc, 0.0, pc, n, then(ic * m * n))
    cx.ret_ok()


def _assert_message(node, status: int):
    return str(node.attrs.get("message", "assertion failed")), node


@lowering("Assert", messages={1: "assertion failed"}, describe=_assert_message)
def _assert(cx: LoweringContext) -> None:
    """Fail the step with the node's message unless the bool scalar holds."""
    from ....compiler.dtypes import bool_
    holds = cx.load(cx.input(0), 0, bool_)
    cx.fail_if(cx.b.not_(holds), 1)
    cx.ret_ok()
