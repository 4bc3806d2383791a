"""Functional control flow (`If`, `While`), the stack that saves a loop's per-iteration
values for its gradient, and two helpers of the control-flow frontend (`Assert`,
`DynamicUpdateRow`).

Conventions every pass and the lowering rely on
- ``If(cond, *inputs)`` holds two regions, then and else. Each is a graph whose
  arguments match ``inputs`` one for one and whose results are the node's outputs; both
  branches return the same number of results with the same dtypes and ranks (a dim on
  which they disagree is unknown, ``?``, in the output type).
- ``While(*loop_vars)`` holds two regions, cond and body. Both take the loop variables as
  arguments; cond returns one ``i1`` scalar, body returns the next loop variables. The
  body's argument types are the loop's *shape invariants* and the node's output types.
  ``maximum_iterations`` (-1: none) bounds the iterations; ``parallel_iterations`` is
  the number of iterations the dataflow lowering may run at once.
- Regions are isolated from above: they read nothing but their own arguments. A value
  of an enclosing graph that a body uses is an explicit input: an extra input of the
  ``If``, an extra loop variable that the body passes through unchanged for ``While``
  (TensorFlow 2's convention). Lowering, placement and partitioning never have to look
  for captured values.
- Both ops are stateful (their regions may assign variables, draw random numbers...);
  whether they have side effects is decided by what their regions hold.

Loop gradients save per-iteration values on a stack (see `frontend/grads/control.py`):
``Stack`` makes an empty stack each time it runs, ``StackPush(handle, *elems)`` pushes
one entry (a tuple of arrays) and ``StackPop(handle)`` pops the last one. Both return the
handle again, so the order of pushes (and of pops) is a data dependency that a lowering
with several iterations in flight keeps without extra control edges.

Notes for the lowering to Switch/Merge/Enter/Exit/NextIteration: every value a region
uses is a region argument, so an ``If`` lowers to one Switch per input and one Merge per
output, and a ``While`` to one Enter/Merge/Switch/Exit/NextIteration chain per loop
variable (captured tensors included) plus LoopCond on the cond's result;
``maximum_iterations`` becomes one more counter chain. Stack handles are ordinary
loop variables of resource type and StackPush/StackPop ordinary stateful ops inside the
frame; nothing else in a region refers to the outside.

The reference kernels of `If` and `While` run their regions with the reference kernels,
in the calling kernel's thread and step (same resources, counters, rendezvous and
cancellation); a loop is a Python ``while`` over its body, so any number of iterations
runs in constant stack depth and memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import DTypeError, InvalidArgumentError, ShapeError, VerificationError
from ..dtypes import bool_, int32, int64
from ..ir import Graph
from ..registry import attr, def_op
from ..types import RESOURCE, TensorType, Type
from .common import expect_resource, expect_tensor

# ------------------------------------------------------------------------- type helpers


def _check_args(region: Graph, inputs: Sequence[Type], what: str) -> None:
    """The region takes one argument per input, each of a type the input fits."""
    if len(region.args) != len(inputs):
        raise VerificationError(f"{what} takes {len(region.args)} arguments but the op has "
                                f"{len(inputs)} inputs for it")
    for i, (t, arg) in enumerate(zip(inputs, region.args)):
        if not _fits(t, arg.type):
            err = DTypeError if _dtype_of(t) != _dtype_of(arg.type) else ShapeError
            raise err(f"input {i} is {t}, but argument {i} of {what} is {arg.type}")


def _dtype_of(t: Type) -> Any:
    return t.dtype if isinstance(t, TensorType) else t


def _fits(value: Type, declared: Type) -> bool:
    if isinstance(value, TensorType) and isinstance(declared, TensorType):
        return value.is_compatible_with(declared)
    return value == declared


def merge_branch_types(a: Type, b: Type, index: int) -> Type:
    """The output type of an `If` whose then branch returns `a` and else branch `b`:
    same dtype and rank required; a dim on which they disagree becomes unknown."""
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        if a.dtype is not b.dtype:
            raise DTypeError(f"the branches return different dtypes for result {index}: the "
                             f"then branch gives {a}, the else branch gives {b}; use tw.cast")
        if a.rank is None or b.rank is None:  # (a v1 graph's value of unknown rank)
            return TensorType(a.dtype, None)
        if a.rank != b.rank:
            raise ShapeError(f"the branches return different ranks for result {index}: the "
                             f"then branch gives {a}, the else branch gives {b}")
        return TensorType(a.dtype, [x if x == y else None for x, y in zip(a.shape, b.shape)])
    if a != b:
        raise DTypeError(f"the branches return different types for result {index}: the then "
                         f"branch gives {a}, the else branch gives {b}")
    return a


def _regions(regions: Sequence[Graph], names: tuple[str, str]) -> tuple[Graph, Graph]:
    if len(regions) != 2:
        raise VerificationError(f"needs two regions ({' and '.join(names)}), got {len(regions)}")
    return regions[0], regions[1]


def _is_bool_scalar(t: Type) -> bool:
    # (an unknown rank, a v1 graph's, is checked when a Session specializes the graph)
    return isinstance(t, TensorType) and t.dtype is bool_ and t.rank in (0, None)


# ------------------------------------------------------------------------ region runner

class RegionRunner:
    """Runs one region graph many times with the reference kernels: the node order and
    the prepared kernels are computed once, then each call evaluates the nodes in order.

    Runs in the calling kernel's step: same resources, counters, rendezvous and
    cancellation, so variables, random ops and Send/Recv behave inside a body as outside.
    """

    __slots__ = ("graph", "order", "kernels", "reads_outer", "resources", "counters", "step",
                 "outer")

    def __init__(self, ctx: Any, graph: Graph) -> None:
        # Imported here: the reference target sits above the op registry in the layering.
        from ...runtime.kernel_context import StepContext
        from ...targets.reference.executor import PreparedKernel
        self.graph = graph
        self.order = graph.topological_order()
        self.kernels = [PreparedKernel(n) for n in self.order]
        self.reads_outer = [bool(n.regions) and _reads_enclosing(n) for n in self.order]
        self.resources = ctx.resources
        self.counters = ctx.counters
        self.step = StepContext(ctx.step_id, ctx.rendezvous, ctx.cancellation)
        # The frontend never makes regions that read enclosing graphs, but IR written by
        # hand may: those values come with the context.
        self.outer = getattr(ctx, "captures", None) or {}

    def __call__(self, args: Sequence[Any]) -> list[Any]:
        env = dict(self.outer)
        env.update(zip(self.graph.args, args))
        for node, kernel, reads_outer in zip(self.order, self.kernels, self.reads_outer):
            inputs = [env[v] for v in node.inputs]
            if reads_outer:
                outs = kernel(inputs, self.resources, self.counters, self.step, captures=env)
            else:
                outs = kernel(inputs, self.resources, self.counters, self.step)
            env.update(zip(node.outputs, outs))
        return [env[v] for v in self.graph.results]

    def check_args(self, args: Sequence[Any], what: str) -> None:
        """Raise InvalidArgumentError unless each tensor argument fits its declared type
        (a loop variable whose shape left its shape invariant at run time)."""
        for i, (value, arg) in enumerate(zip(args, self.graph.args)):
            t = arg.type
            if isinstance(t, TensorType) and not t.accepts(t.dtype, np.shape(value)):
                raise InvalidArgumentError(
                    f"{what} {i} ('{self.graph.arg_names[i]}') has shape {np.shape(value)} at "
                    f"run time, which does not fit its shape invariant {t}")


def _reads_enclosing(node: Any) -> bool:
    """True when a region of `node` reads a value its own regions do not define."""
    def defined(g: Graph) -> set:
        out = set(g.args)
        for n in g.nodes:
            out.update(n.outputs)
            for r in n.regions:
                out |= defined(r)
        return out

    for region in node.regions:
        inside = defined(region)
        for g in [region, *(r for n in region.walk() for r in n.regions)]:
            if any(v not in inside for n in g.nodes for v in n.inputs) or \
                    any(v not in inside for v in g.results):
                return True
    return False


# ----------------------------------------------------------------------------------- If

If = def_op("If", ["cond", "*inputs"], num_regions=2, stateful=True, side_effects=False,
            doc="Runs the then region (cond true) or the else region on `inputs`; returns "
                "the results of the region that ran.")


@If.infer
def _if_infer(cond, *inputs, regions):
    if not _is_bool_scalar(cond):
        raise DTypeError(f"cond must be a bool scalar, got {cond}")
    then_g, else_g = _regions(regions, ("then", "else"))
    _check_args(then_g, inputs, "the then branch")
    _check_args(else_g, inputs, "the else branch")
    if len(then_g.results) != len(else_g.results):
        raise ShapeError(f"the then branch returns {len(then_g.results)} values, the else "
                         f"branch {len(else_g.results)}")
    return [merge_branch_types(a.type, b.type, i)
            for i, (a, b) in enumerate(zip(then_g.results, else_g.results))]


@If.kernel("reference", context=True)
def _if_kernel(ctx, cond, *inputs):
    branch = ctx.node.regions[0 if bool(cond) else 1]
    return tuple(RegionRunner(ctx, branch)(inputs))


# -------------------------------------------------------------------------------- While

While = def_op("While", ["*loop_vars"], {"parallel_iterations": attr("int", 10),
                                         "maximum_iterations": attr("int", -1)},
               num_regions=2, stateful=True, side_effects=False,
               doc="Runs the body region on the loop variables while the cond region "
                   "returns true (at most `maximum_iterations` times unless -1); returns "
                   "the final loop variables.")


@While.infer
def _while_infer(*loop_vars, regions, parallel_iterations, maximum_iterations):
    if parallel_iterations < 1:
        raise VerificationError(f"parallel_iterations must be >= 1, got {parallel_iterations}")
    if maximum_iterations < -1:
        raise VerificationError(f"maximum_iterations must be >= 0 (or -1 for none), got "
                                f"{maximum_iterations}")
    cond_g, body_g = _regions(regions, ("cond", "body"))
    _check_args(body_g, loop_vars, "the body")
    _check_args(cond_g, [a.type for a in body_g.args], "the cond")
    if len(cond_g.results) != 1 or not _is_bool_scalar(cond_g.results[0].type):
        got = ", ".join(str(r.type) for r in cond_g.results) or "nothing"
        raise DTypeError(f"the cond must return one bool scalar, it returns {got}")
    if len(body_g.results) != len(loop_vars):
        raise ShapeError(f"the body returns {len(body_g.results)} values for "
                         f"{len(loop_vars)} loop variables")
    for i, (arg, res) in enumerate(zip(body_g.args, body_g.results)):
        if not _fits(res.type, arg.type):
            err = DTypeError if _dtype_of(res.type) != _dtype_of(arg.type) else ShapeError
            raise err(f"loop variable {i} enters the body as {arg.type} but the body returns "
                      f"{res.type} for it")
    return [a.type for a in body_g.args]


@While.kernel("reference", context=True)
def _while_kernel(ctx, *loop_vars, parallel_iterations, maximum_iterations):
    cond_g, body_g = ctx.node.regions
    cond = RegionRunner(ctx, cond_g)
    body = RegionRunner(ctx, body_g)
    cancellation = ctx.cancellation
    values = list(loop_vars)
    body.check_args(values, "loop variable")
    iteration = 0
    while maximum_iterations < 0 or iteration < maximum_iterations:
        if cancellation.is_cancelled:
            raise cancellation.cancelled_error()
        if not bool(cond(values)[0]):
            break
        values = body(values)
        iteration += 1
        body.check_args(values, "loop variable")
    return tuple(values)


# -------------------------------------------------------------------------------- stacks

class StackState:
    """A last-in first-out list of entries (tuples of arrays), made by one run of a
    ``Stack`` node. Never shared between steps: each run of the node makes a new one."""

    __slots__ = ("name", "max_size", "items")

    def __init__(self, name: str, max_size: int) -> None:
        self.name = name
        self.max_size = max_size
        self.items: list[tuple] = []

    def push(self, entry: tuple) -> None:
        if 0 <= self.max_size <= len(self.items):
            raise InvalidArgumentError(f"stack '{self.name}' is full ({self.max_size} entries)")
        self.items.append(entry)

    def pop(self) -> tuple:
        if not self.items:
            raise InvalidArgumentError(f"pop from the empty stack '{self.name}': it was "
                                       f"popped more often than pushed")
        return self.items.pop()

    def __repr__(self) -> str:
        return f"<StackState {self.name}: {len(self.items)} entries>"


Stack = def_op("Stack", [], {"max_size": attr("int", -1), "stack_name": attr("str", "")},
               stateful=True, side_effects=False,
               doc="A new, empty stack each time it runs (at most `max_size` entries "
                   "unless -1); used to save a loop's per-iteration values.")


@Stack.infer
def _stack_infer(*, max_size, stack_name):
    return RESOURCE


@Stack.kernel("reference", context=True)
def _stack_kernel(ctx, *, max_size, stack_name):
    return StackState(stack_name or ctx.node.name, max_size)


def _expect_stack(handle: Any, op: str) -> StackState:
    if not isinstance(handle, StackState):
        raise InvalidArgumentError(f"{op} needs a stack made by a Stack op, got {handle!r}")
    return handle


StackPush = def_op("StackPush", ["handle", "*elems"], stateful=True, side_effects=False,
                   doc="Push one entry (the elems) on the stack; returns the handle.")


@StackPush.infer
def _push_infer(handle, *elems):
    expect_resource(handle, "handle")
    return RESOURCE


@StackPush.kernel("reference")
def _push_kernel(handle, *elems):
    _expect_stack(handle, "StackPush").push(tuple(elems))
    return (handle,)


StackPop = def_op("StackPop", ["handle"], {"elem_types": attr("any", ())},
                  stateful=True, side_effects=False,
                  doc="Pop the last entry of the stack; returns the handle, then the "
                      "entry's elements (of types `elem_types`).")


def _elem_types(elem_types: Any) -> list[Type]:
    types = list(elem_types)
    for t in types:
        if not isinstance(t, Type):
            raise VerificationError(f"elem_types must hold types, got {t!r}")
    return types


@StackPop.infer
def _pop_infer(handle, *, elem_types):
    expect_resource(handle, "handle")
    return [RESOURCE, *_elem_types(elem_types)]


@StackPop.kernel("reference")
def _pop_kernel(handle, *, elem_types):
    entry = _expect_stack(handle, "StackPop").pop()
    if len(entry) != len(elem_types):
        raise InvalidArgumentError(f"the popped entry has {len(entry)} elements, StackPop "
                                   f"expects {len(elem_types)}")
    return (handle, *entry)


# ------------------------------------------------------------------------------- Assert

Assert = def_op("Assert", ["condition", "*data"],
                {"message": attr("str", "assertion failed"), "summarize": attr("int", 3),
                 "data_names": attr("strs", ())},
                stateful=True,
                doc="Fails the step with InvalidArgumentError(message) unless the bool "
                    "scalar condition is true; the message then shows the first "
                    "`summarize` values of each data tensor (named by `data_names`), as "
                    "TensorFlow's Assert does.")


@Assert.infer
def _assert_infer(condition, *data, message, summarize, data_names):
    if not _is_bool_scalar(condition):
        raise DTypeError(f"condition must be a bool scalar, got {condition}")
    for k, d in enumerate(data):
        expect_tensor(d, f"data[{k}]")
    if data_names and len(data_names) != len(data):
        raise VerificationError(f"{len(data_names)} data_names for {len(data)} data tensors")
    return []


def format_assert_data(data: Sequence[np.ndarray], names: Sequence[str], summarize: int) -> str:
    """What a failed Assert adds to its message: each data tensor's name, shape and
    dtype and its first `summarize` values (all of them when `summarize` < 0)."""
    parts = []
    for k, value in enumerate(data):
        value = np.asarray(value)
        name = names[k] if k < len(names) else f"data[{k}]"
        flat = value.reshape(-1)
        shown = flat if summarize < 0 else flat[:summarize]
        text = np.array2string(shown, separator=" ", threshold=shown.size + 1)
        if value.ndim == 0:
            text = str(value[()])
        elif shown.size < flat.size:
            text = text[:-1] + " ...]"
        parts.append(f"\n{name} (shape={list(value.shape)}, dtype={value.dtype}) = {text}")
    return "".join(parts)


@Assert.kernel("reference")
def _assert_kernel(condition, *data, message, summarize, data_names):
    if not bool(condition):
        raise InvalidArgumentError(message + format_assert_data(data, data_names, summarize))
    return ()


# --------------------------------------------------------------------- DynamicUpdateRow

DynamicUpdateRow = def_op(
    "DynamicUpdateRow", ["tensor", "index", "row"],
    doc="A copy of `tensor` whose row `index` (along axis 0) is `row`: the accumulator of "
        "tw.scan, whose gradient needs only the index (not the whole buffer).")


@DynamicUpdateRow.infer
def _update_row_infer(tensor, index, row):
    t = expect_tensor(tensor, "tensor")
    i = expect_tensor(index, "index")
    r = expect_tensor(row, "row")
    if i.rank != 0 or i.dtype not in (int32, int64):
        raise DTypeError(f"index must be an int32 or int64 scalar, got {i}")
    if t.rank < 1:
        raise ShapeError(f"tensor must have rank >= 1, got {t}")
    if r.dtype is not t.dtype:
        raise DTypeError(f"row has dtype {r.dtype.ir_name}, tensor is {t}")
    if not TensorType(t.dtype, t.shape[1:]).is_compatible_with(r):
        raise ShapeError(f"row {r} is not a row of tensor {t}")
    return TensorType(t.dtype, [t.shape[0], *(a if a is not None else b
                                              for a, b in zip(t.shape[1:], r.shape))])


@DynamicUpdateRow.kernel("reference")
def _update_row_kernel(tensor, index, row):
    n = tensor.shape[0]
    k = int(index)
    if not 0 <= k < n:
        raise InvalidArgumentError(f"index {k} is not in [0, {n}) (rows of the tensor)")
    if row.shape != tensor.shape[1:]:
        raise InvalidArgumentError(f"row has shape {row.shape}, the tensor's rows have "
                                   f"shape {tensor.shape[1:]}")
    out = tensor.copy()
    out[k] = row
    return out


__all__ = ["Assert", "format_assert_data", "DynamicUpdateRow", "If", "RegionRunner", "Stack", "StackPop",
           "StackPush", "StackState", "While", "merge_branch_types"]
