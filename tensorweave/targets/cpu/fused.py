"""Running a Fusion node natively: from the region to a `Program`, from input shapes to a
`Layout` and a compiled kernel, and the call itself.

`FusedKernel(node)` prepares once what does not depend on shapes (the program). Each
call looks the input shapes up in a small table of plans; a plan holds the compiled
function for the layout of those shapes, the loop sizes and the output shapes. A
layout is compiled once per process (`jit` caches by IR text), however many nodes or
shapes use it.

Whenever the native path cannot serve a call (a layout the kernel does not handle,
such as reductions whose inputs turn out to differ in shape at run time), the call runs
the region with the reference kernels instead: slower, never wrong.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...compiler.ir import Graph, Node, Value
from ...compiler.types import TensorType
from ...errors import InvalidArgumentError, TensorWeaveError, UnimplementedError
from . import jit
from .codegen import REDUCTIONS, Instr, Layout, Program, build_kernel, check_supported, vector_width
from .elementwise import STATUS_MESSAGES

MAX_PLANS = 256  # input-shape tuples remembered per kernel
_NO_PLAN: Any = object()

KernelFn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)

# attributes that change the generated code (others, like names, do not)
_CODE_ATTRS = {"Cast": ("dtype",), "Sum": ("keepdims",), "Mean": ("keepdims",),
               "Max": ("keepdims",), "Min": ("keepdims",), "Prod": ("keepdims",),
               "All": ("keepdims",), "Any": ("keepdims",), "ZerosLike": ("dtype",),
               "OnesLike": ("dtype",), "BroadcastTo": ("shape",)}


def contiguous(a: Any) -> np.ndarray:
    """`a` as a C-contiguous array (copied only if it is not one; 0-d stays 0-d, which
    np.ascontiguousarray does not do)."""
    a = np.asarray(a)
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


class _Fallback(Exception):
    """This call cannot run natively: use the reference kernels."""


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    try:
        return len(shape) <= len(target) and np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


def _normalized_axes(node: Node) -> tuple[int, ...]:
    rank = node.inputs[0].type.rank
    axes = node.attrs.get("axes")
    return tuple(range(rank)) if axes is None else tuple(sorted(a % rank for a in axes))


def program_of(region: Graph, args: Sequence[Value] | None = None,
               ops: Sequence[Node] | None = None) -> tuple[Program, list[Node], dict[int, int]]:
    """The program of a Fusion region, its nodes (by instruction index) and, for each
    reduction instruction, how many trailing axes it reduces. `args` and `ops` (default:
    the region's arguments and all its nodes) give the program's inputs and instructions
    when only part of the region is a program (an epilogue after a product)."""
    args = region.args if args is None else list(args)
    slots = {v: i for i, v in enumerate(args)}
    instrs, nodes, reduced = [], [], {}
    for node in region.topological_order() if ops is None else ops:
        if len(node.outputs) != 1 or node.regions or any(v not in slots for v in node.inputs):
            raise UnimplementedError(f"op {node.op} cannot be fused natively")
        types = [v.type for v in node.inputs] + [node.outputs[0].type]
        if not all(isinstance(t, TensorType) for t in types):
            raise UnimplementedError("a fused op reads or writes a non-tensor")
        if node.op in REDUCTIONS:
            rank = node.inputs[0].type.rank
            axes = _normalized_axes(node)
            if not axes or axes != tuple(range(rank - len(axes), rank)):
                raise UnimplementedError(f"{node.op} over axes {list(axes)} is not over "
                                         f"trailing axes")
            reduced[len(instrs)] = len(axes)
        attrs = tuple((k, node.attrs.get(k)) for k in _CODE_ATTRS.get(node.op, ()))
        instrs.append(Instr(node.op, attrs, tuple(slots[v] for v in node.inputs),
                            tuple(v.type.dtype for v in node.inputs), node.outputs[0].type.dtype))
        slots[node.outputs[0]] = len(args) + len(instrs) - 1
        nodes.append(node)
    if any(r not in slots for r in region.results):
        raise UnimplementedError("a fused region returns a value it does not compute")
    program = Program(tuple(a.type.dtype for a in args), tuple(instrs),
                      tuple(slots[r] for r in region.results))
    check_supported(program)
    return program, nodes, reduced


@dataclass
class Plan:
    """Everything a call with one tuple of input shapes needs."""

    fn: Any                      # the compiled kernel (None: nothing to compute)
    sizes: np.ndarray            # int64 loop sizes
    out_shapes: list[tuple]
    checks: list[tuple[Node, str]]  # errors to raise if this plan runs (empty reductions)

    def __post_init__(self) -> None:
        self.sizes_address = self.sizes.ctypes.data  # the plan keeps `sizes` alive


class FusedKernel:
    """The native kernel of one Fusion node (the executor's per-node kernel protocol:
    ``kernel(inputs, resources, counters, step=None, step_id=0) -> outputs``)."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.region = node.regions[0]
        self.program, self.nodes, self.reduced = program_of(self.region)
        self.width = vector_width(self.program, jit.host_info().vector_bits)
        self.out_dtypes = [self.program.dtype(s).np for s in self.program.outputs]
        self._plans: dict[tuple, Plan | None] = {}
        self._compiled: dict[Layout, Any] = {}
        self._modules: list[jit.CompiledModule] = []  # keeps the machine code alive

    # ------------------------------------------------------------------ calling
    def __call__(self, inputs: Sequence[Any], resources: Any = None, counters: Any = None,
                 step: Any = None, step_id: int = 0) -> list[np.ndarray]:
        arrays = [contiguous(a) for a in inputs]
        key = tuple(a.shape for a in arrays)
        plan = self._plans.get(key, _NO_PLAN)
        if plan is _NO_PLAN:
            if len(self._plans) >= MAX_PLANS:  # many shapes (unknown dims): start over
                self._plans.clear()
            plan = self._plans[key] = self._plan(key)
        if plan is None:
            return self._reference(arrays, resources, counters, step, step_id)
        for node, message in plan.checks:
            raise InvalidArgumentError(message, **node.error_context())
        outs = [np.empty(s, d) for s, d in zip(plan.out_shapes, self.out_dtypes)]
        if plan.fn is not None:
            ins = (ctypes.c_void_p * max(1, len(arrays)))(*[a.ctypes.data for a in arrays])
            outp = (ctypes.c_void_p * max(1, len(outs)))(*[o.ctypes.data for o in outs])
            status = plan.fn(ins, outp, plan.sizes_address)
            if status:
                self._raise(status)
        return outs

    def _raise(self, status: int) -> None:
        message, node = self.status_error(status)
        raise InvalidArgumentError(message, **node.error_context())

    def _reference(self, arrays, resources, counters, step, step_id) -> list[np.ndarray]:
        from ..reference.executor import PreparedKernel
        with np.errstate(all="ignore"):
            return PreparedKernel(self.node)(arrays, resources, counters, step, step_id)

    # ----------------------------------------------------------------- planning
    def _plan(self, shapes: tuple[tuple[int, ...], ...]) -> Plan | None:
        try:
            slot_shapes = self._slot_shapes(shapes)
            return self._make_plan(slot_shapes)
        except _Fallback:
            return None

    def _slot_shapes(self, shapes: tuple[tuple[int, ...], ...]) -> list[tuple[int, ...]]:
        """The run-time shape of every slot; errors like the reference kernels'."""
        out = list(shapes)
        for k, (ins, node) in enumerate(zip(self.program.instrs, self.nodes)):
            args = [out[a] for a in ins.args]
            if ins.is_reduction:
                n = self.reduced[k]
                keep = dict(ins.attrs).get("keepdims")
                s = args[0]
                out.append(s[:len(s) - n] + ((1,) * n if keep else ()))
            elif ins.op == "AddN":
                if len(set(args)) > 1:
                    raise InvalidArgumentError(
                        "operands must have the same shape, got "
                        + ", ".join(str(list(s)) for s in args), **node.error_context())
                out.append(args[0])
            elif ins.op == "BroadcastTo":
                shape = tuple(dict(ins.attrs)["shape"])
                if not _broadcasts_to(args[0], shape):
                    raise InvalidArgumentError(f"cannot broadcast input of shape "
                                               f"{list(args[0])} to shape {list(shape)}",
                                               **node.error_context())
                out.append(shape)
            elif ins.op in ("ZerosLike", "OnesLike") or len(args) == 1:
                out.append(args[0])
            else:
                try:
                    out.append(tuple(np.broadcast_shapes(*args)))
                except ValueError:
                    desc = " vs ".join(str(list(s)) for s in args)
                    raise InvalidArgumentError(f"shapes cannot be broadcast together: {desc}",
                                               **node.error_context()) from None
        return out

    def _loop_shape(self, slot_shapes: list[tuple]) -> tuple[tuple, int]:
        """The loop shape and the number of trailing reduced dims."""
        n_in = len(self.program.input_dtypes)
        ew_slots = [s for s in range(len(slot_shapes))
                    if s < n_in or not self.program.instrs[s - n_in].is_reduction]
        red = [k for k, ins in enumerate(self.program.instrs) if ins.is_reduction]
        if not red:
            try:
                return tuple(np.broadcast_shapes(*[slot_shapes[s] for s in ew_slots])), 0
            except ValueError:
                # a cluster whose outputs have shapes with no common loop (a scalar
                # scaling a [2, 2] and a [3] tensor): no single loop nest computes it
                raise _Fallback from None
        loops = {slot_shapes[self.program.instrs[k].args[0]] for k in red}
        counts = {self.reduced[k] for k in red}
        if len(loops) != 1 or len(counts) != 1:
            raise _Fallback
        loop = loops.pop()
        for s in ew_slots:
            if len(slot_shapes[s]) > len(loop) or \
                    tuple(np.broadcast_shapes(slot_shapes[s], loop)) != loop:
                raise _Fallback
        return loop, counts.pop()

    def _make_plan(self, slot_shapes: list[tuple]) -> Plan:
        layout, sizes, out_shapes, checks = self.layout_of(slot_shapes)
        return Plan(None if layout is None else self._function(layout), sizes, out_shapes,
                    checks)

    def layout_of(self, slot_shapes: list[tuple]
                  ) -> tuple[Layout | None, np.ndarray, list[tuple], list[tuple[Node, str]]]:
        """For the run-time shapes of every slot: the loop layout (None: nothing to
        compute), the loop sizes, the output shapes and the errors a call must raise.
        Raises `_Fallback` when the native kernel cannot handle these shapes."""
        loop, n_red = self._loop_shape(slot_shapes)
        n_in = len(self.program.input_dtypes)
        outputs = self.program.outputs
        full = self.program.full_outputs()
        operand_shapes = [slot_shapes[s] for s in range(n_in)] + \
            [slot_shapes[outputs[k]] for k in full]
        out_shapes = [slot_shapes[s] for s in outputs]
        if 0 in loop and any(0 not in slot_shapes[outputs[k]] for k in full):
            # an output smaller than the (empty) loop space would never be written
            raise _Fallback
        checks = self._empty_reduction_checks(slot_shapes, loop, n_red)
        layout, sizes = collapse(loop, n_red, operand_shapes)
        if int(np.prod(loop[:len(loop) - n_red], dtype=np.int64)) == 0 or \
                (not n_red and 0 in loop):
            return None, sizes, out_shapes, checks
        return layout, sizes, out_shapes, checks

    def static_layout(self) -> tuple[Layout | None, np.ndarray] | None:
        """The layout and loop sizes for the node's static input shapes, or None when
        the native kernel cannot run them (or they must raise)."""
        try:
            shapes = tuple(tuple(v.type.shape) for v in self.node.inputs)
            layout, sizes, _, checks = self.layout_of(self._slot_shapes(shapes))
        except (_Fallback, InvalidArgumentError):
            return None
        return None if checks else (layout, sizes)

    def status_error(self, status: int) -> tuple[str, Node]:
        """The message of a failing kernel status and the op of the cluster it names."""
        return (STATUS_MESSAGES.get(status % 4, f"kernel status {status}"),
                self.nodes[status // 4])

    def _empty_reduction_checks(self, slot_shapes, loop, n_red) -> list[tuple[Node, str]]:
        """Reductions that the reference kernels reject: Max/Min, and integer Mean, over
        axes with no elements while the output is not empty."""
        if not n_red:
            return []
        rows = int(np.prod(loop[:len(loop) - n_red], dtype=np.int64))
        count = int(np.prod(loop[len(loop) - n_red:], dtype=np.int64))
        if rows == 0 or count:
            return []
        checks = []
        for ins, node in zip(self.program.instrs, self.nodes):
            shape = list(slot_shapes[ins.args[0]]) if ins.is_reduction else None
            axes = list(_normalized_axes(node)) if ins.is_reduction else None
            if ins.op in ("Max", "Min"):
                checks.append((node, f"{ins.op} over axes with no elements is undefined "
                                     f"(input shape {shape}, axes {axes})"))
            elif ins.op == "Mean" and ins.in_dtypes[0].kind != "float":
                checks.append((node, f"Mean of an integer tensor over axes with no elements "
                                     f"(input shape {shape}, axes {axes})"))
        return checks

    def _function(self, layout: Layout) -> Any:
        fn = self._compiled.get(layout)
        if fn is None:
            text = build_kernel(self.program, layout, self.width)
            module = jit.compile_module(text, ["tw_fused"])
            self._modules.append(module)
            fn = self._compiled[layout] = KernelFn(module.address("tw_fused"))
        return fn


def collapse(loop: Sequence[int], n_red: int, operand_shapes: Sequence[Sequence[int]]
             ) -> tuple[Layout, np.ndarray]:
    """Drop size-1 loop dims and merge neighbours that every operand spans alike (on the
    same side of the reduction); returns the layout and the loop sizes."""
    rank = len(loop)
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in operand_shapes]
    dims: list[tuple[int, tuple[bool, ...], bool]] = []  # (size, masks, reduced)
    for d in range(rank):
        if loop[d] == 1:
            continue
        masks = tuple(p[d] == loop[d] for p in padded)
        reduced = d >= rank - n_red
        if dims and dims[-1][1] == masks and dims[-1][2] == reduced:
            size, _, _ = dims[-1]
            dims[-1] = (size * loop[d], masks, reduced)
        else:
            dims.append((loop[d], masks, reduced))
    n_ops = len(operand_shapes)
    if n_red and not any(r for _, _, r in dims):
        dims.append((1, (False,) * n_ops, True))  # a reduction needs an inner loop
    if not dims:
        dims.append((1, (False,) * n_ops, False))
    n_inner = sum(1 for _, _, r in dims if r)
    masks = tuple(tuple(m[j] for _, m, _ in dims) for j in range(n_ops))
    layout = Layout(len(dims) - n_inner, n_inner, masks)
    return layout, np.array([s for s, _, _ in dims], dtype=np.int64)


def try_fused_kernel(node: Node) -> FusedKernel | None:
    """The native kernel of a Fusion node, or None if its region has ops or dtypes the
    cpu target has no code for."""
    try:
        return FusedKernel(node)
    except (UnimplementedError, TensorWeaveError):
        return None
