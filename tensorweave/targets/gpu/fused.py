"""Kernels for Fusion nodes (the ``fused`` stage's clusters of elementwise ops and the
trailing-axis reductions they feed).

The cluster's program and its loop layout for the node's static shapes come from the cpu
target (`cpu.fused.FusedKernel`: `program_of` and `collapse`), so both targets agree on
what a cluster computes and on how broadcasting collapses into loop dims; only the code
differs:

- without reductions, one thread per element of the loop space (grid-stride), each
  computing every op of the cluster in registers and storing the outputs;
- with reductions, one block per row of kept dims: the block's threads stride over the
  row's reduced elements (consecutive threads read consecutive elements), accumulate
  locally, then combine in shared memory (`reductions.block_tree`); elementwise outputs
  of the cluster are stored on the way.
"""

from __future__ import annotations

from ...compiler.ir import Node
from ..cpu.fused import FusedKernel
from . import exprs
from .reductions import REDUCTIONS, accumulator, block_tree, shared_decl
from .source import (
    Kernel,
    Unsupported,
    Writer,
    decompose,
    has_gpu_type,
    launch_1d,
    module,
    numba_type,
    offset_expr,
    pow2_block,
)


def _operand_strides(sizes: list[int], mask: tuple[bool, ...]) -> list[int]:
    """Element strides of an operand that spans the loop dims where `mask` is true (it is
    contiguous over those, row-major) and is broadcast along the others."""
    strides, acc = [0] * len(sizes), 1
    for d in range(len(sizes) - 1, -1, -1):
        if mask[d]:
            strides[d] = acc
            acc *= sizes[d]
    return strides


def fused_kernel(node: Node, name: str) -> Kernel:
    """The kernel of Fusion node `node` (static shapes). Raises `Unsupported`."""
    try:
        fk = FusedKernel(node)
    except Exception as e:  # noqa: BLE001 - any reason the cpu planner gives
        raise Unsupported(f"cluster not supported: {e}") from None
    program = fk.program
    dtypes = list(program.input_dtypes) + [i.out_dtype for i in program.instrs]
    if not all(has_gpu_type(d) for d in dtypes):
        raise Unsupported("a dtype without GPU code (float16/bfloat16)")
    for ins in program.instrs:
        if not ins.is_reduction and not exprs.supports(ins.op):
            raise Unsupported(f"op {ins.op} has no GPU code")
    static = fk.static_layout()
    if static is None:
        raise Unsupported("shapes the cluster cannot run natively (empty reduction or "
                          "run-time check)")
    layout, sizes_arr = static
    if layout is None:
        raise Unsupported("nothing to compute (empty output)")
    sizes = [int(s) for s in sizes_arr]
    return _generate(fk, layout, sizes, name)


def _generate(fk: FusedKernel, layout, sizes: list[int], name: str) -> Kernel:
    program = fk.program
    n_in = len(program.input_dtypes)
    full = program.full_outputs()
    outputs = program.outputs
    rank = layout.rank
    n_outer = layout.n_outer
    strides = [_operand_strides(sizes, m) for m in layout.masks]  # inputs, full outputs
    rows = 1
    for s in sizes[:n_outer]:
        rows *= s
    inner = 1
    for s in sizes[n_outer:]:
        inner *= s
    reducing = program.has_reductions
    can_fail = any(i.op in ("Div", "FloorDiv", "FloorMod", "Pow")
                   and i.in_dtypes[0].kind != "float" for i in program.instrs)

    params_in = [f"in{j}" for j in range(n_in)]
    params_out = [f"out{k}" for k in range(len(outputs))]
    params = params_in + params_out + (["status"] if can_fail else [])
    types = [numba_type(d) for d in program.input_dtypes] + \
        [numba_type(program.dtype(s)) for s in outputs] + (["int32"] if can_fail else [])

    w = Writer()
    w("@cuda.jit")
    w(f"def {name}({', '.join(params)}):")
    cx = exprs.Scope(w, "status" if can_fail else None)
    block = pow2_block(inner) if reducing else 0
    with w.indent():
        red = [(k, program.instrs[k]) for k in range(len(program.instrs))
               if program.instrs[k].is_reduction]
        accs = {k: accumulator(ins.op, ins.in_dtypes[0]) for k, ins in red}
        if reducing:
            for k, _ in red:
                w(shared_decl(f"sh{k}", accs[k], block))
            w("tid = cuda.threadIdx.x")
            w(f"for row in range(cuda.blockIdx.x, {rows}, cuda.gridDim.x):")
            body = w.indent()
            body.__enter__()
            for k, _ in red:
                w(f"a{k} = {accs[k].init()}")
            w(f"for j in range(tid, {inner}, {block}):")
            w.depth += 1
            w(f"lin = row * {inner} + j")
        else:
            w(f"for lin in range(cuda.grid(1), {rows * inner}, cuda.gridsize(1)):")
            w.depth += 1
        coords = decompose(w, "lin", sizes, "c") if rank > 1 else ["lin"]
        # operand offsets (inputs, then full outputs) from the coordinates
        offs = [offset_expr(coords, st) for st in strides]
        slot = {}
        for j in range(n_in):
            v = f"v{j}"
            w(f"{v} = in{j}[{offs[j]}]")
            slot[j] = v
        for k, ins in enumerate(program.instrs):
            s = n_in + k
            if ins.is_reduction:
                x = accs[k].convert(slot[ins.args[0]])
                w(f"a{k} = {accs[k].combine(f'a{k}', x)}")
                continue
            op = exprs.Op(ins.op, dict(ins.attrs), ins.in_dtypes, ins.out_dtype, k)
            expr = exprs.emit_op(cx, op, [slot[a] for a in ins.args])
            w(f"v{s} = {expr}")
            slot[s] = f"v{s}"
        for pos, k in enumerate(full):
            w(f"out{k}[{offs[n_in + pos]}] = {slot[outputs[k]]}")
        w.depth -= 1
        if reducing:
            block_tree(w, [(accs[k], f"a{k}", f"sh{k}") for k, _ in red], block)
            w("if tid == 0:")
            with w.indent():
                for k, s in enumerate(outputs):
                    ins = program.instr(s)
                    if ins is not None and ins.is_reduction:
                        kk = s - n_in
                        w(f"out{k}[row] = {accs[kk].finish(f'sh{kk}[0]', inner, ins.out_dtype)}")
            w("cuda.syncthreads()")  # the shared arrays are reused by the next row
            body.__exit__()
    if reducing:
        grid, blk = (max(1, min(rows, 65535)),), (block,)
        shared = sum(block * accs[k].acc.np.itemsize for k, _ in red)
    else:
        grid, blk = launch_1d(rows * inner)
        shared = 0
    return Kernel(name, module(w), types, grid, blk, can_fail,
                  shared)


__all__ = ["REDUCTIONS", "Unsupported", "fused_kernel"]
