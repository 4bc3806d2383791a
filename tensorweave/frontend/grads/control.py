"""Gradients of functional control flow (`If`, `While`) as functional control flow.

Differentiating a region
    The gradient of a region graph is traced, with the autodiff pass, into a new region
    by a `GradRegionBuilder`: it takes one argument per differentiated result (the
    incoming gradient) and returns one gradient per differentiated argument (zeros where
    the region does not depend on it). Every forward value the gradient functions read
    (an operand, an output, an argument) becomes one more argument of the new region,
    *saved*; constants are copied instead.

If
    The gradient is an ``If`` on the same condition over the two branches' gradient
    regions. Each branch's saved values must reach the gradient ``If``: a branch
    argument is the forward ``If``'s input; any other value is added, in place, as an
    extra output of the forward ``If`` (its branch returns it, the other branch returns
    zeros of a matching type, or an empty stack for a stack handle). Both gradient
    branches take all saved values of both branches (each ignores the other's) and
    return gradients of identical types.

While: the history accumulator
    The backward loop needs, for each forward iteration, the values that iteration's
    gradient reads. The forward ``While`` is augmented in place (as TensorFlow 2 does):
    two more loop variables, a stack handle (made by a ``Stack`` op just before the loop,
    so each run of the loop gets a fresh stack) and an iteration counter; its body
    pushes one entry per iteration, ``StackPush(handle, *saved)``, which returns the
    handle that the body passes on, so pushes are ordered by data dependencies. The
    backward ``While`` carries ``(iterations left, handle, one gradient per float loop
    variable, loop invariants)``, runs exactly as many iterations as the forward loop
    (counting down), pops the entries in reverse with ``StackPop`` (also threading the
    handle) and runs the body's gradient region on them.

    This is TensorFlow 1's design (stacks), chosen over loop-carried history tensors
    because it needs no bound on the iteration count and costs O(1) per iteration
    (entries hold references to the forward values; nothing is copied). The history is
    exactly the saved values of the iterations that ran: ``maximum_iterations`` bounds it
    (it is also the stack's capacity). Loop invariants (loop variables the body passes
    through unchanged: captured tensors, weights) are not pushed but given to the
    backward loop once. The ops are plain dataflow, so the Switch/Merge lowering treats
    the stack like any resource threaded through a loop.

    Nested loops and conditionals need nothing more: a loop nested in a body is augmented
    inside that body (its stack is made once per outer iteration), and its outputs (the
    inner stack handle and count) are saved values of the outer body like any other, so
    the outer loop pushes the inner stack itself.

Gradients of the gradient (through ``StackPop``) are not supported: a clear CompileError.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...compiler.dtypes import int32
from ...compiler.ir import Graph, Node, Value
from ...compiler.ops.control import merge_branch_types
from ...compiler.registry import not_differentiable, register_gradient
from ...compiler.types import RESOURCE, ResourceType, TensorType, Type
from ...errors import CompileError
from ...passes.autodiff import add_gradients
from ..building import apply_op1, convert_to_tensor
from ..context import building, current_builder
from ..control_flow import GradRegionBuilder, add_control_node, set_args
from ..tensor import Tensor

not_differentiable("Stack", "StackPush", "Assert")

_COUNTER = TensorType(int32, ())


def _array():
    from ..ops import array
    return array


def _is_float(t: Type) -> bool:
    return isinstance(t, TensorType) and t.dtype.is_floating


# ------------------------------------------------------------------ region differentiation

class RegionGradient:
    """The gradient region of a forward region: its incoming-gradient arguments, and the
    (forward value, argument) pairs of the values it saved."""

    def __init__(self, region: Graph, grad_args: list[Value],
                 saved: list[tuple[Value, Value]]) -> None:
        self.region = region
        self.grad_args = grad_args
        self.saved = saved


def differentiate_region(source: Graph, ys: Sequence[int], xs: Sequence[int],
                         grad_types: Sequence[Type], name: str) -> RegionGradient:
    """Trace the gradient of ``source.results[ys]`` with respect to ``source.args[xs]``
    into a new region (see the module docstring)."""
    region = Graph(name)
    builder = GradRegionBuilder(region, source, current_builder())
    with building(builder):
        grad_args = [region.add_arg(t, f"grad_{i}") for i, t in zip(ys, grad_types)]
        x_values = [source.args[j] for j in xs]
        grads = add_gradients([source.results[i] for i in ys], x_values, grad_args,
                              graph=source)
        outs = [g if g is not None else _zeros_for(x, builder) for g, x in zip(grads, x_values)]
        region.set_results([convert_to_tensor(o).value for o in outs],
                           [f"grad_{source.arg_names[j]}" for j in xs])
    return RegionGradient(region, grad_args, builder.saved)


def _zeros_for(x: Value, builder: GradRegionBuilder) -> Tensor:
    """Zeros of x's type: a constant when its shape is static (nothing to save)."""
    t = x.type
    if t.is_fully_defined:
        return _array().zeros(t.shape, dtype=t.dtype)
    return _array().zeros_like(Tensor(x, builder))


def _placeholder(graph: Graph, t: Type) -> Value:
    """A value of the kind of `t` (empty zeros of its rank; an empty stack) for a branch
    to return where the other branch returns a saved value. Nothing reads it: the
    gradient runs the same branch as the forward pass."""
    if isinstance(t, TensorType):
        zeros = np.zeros([0] * t.rank, dtype=t.dtype.np)
        zeros.flags.writeable = False
        return graph.add_node("Const", [], {"value": zeros}, name="unused_saved").outputs[0]
    if isinstance(t, ResourceType) and t.value_type is None:
        return graph.add_node("Stack", [], {"stack_name": "unused"}, name="unused_stack").outputs[0]
    raise CompileError(f"cannot differentiate this tw.cond: its gradient needs a value of "
                       f"type {t} from one branch only")


def _check_first_order(node: Node) -> None:
    """Refuse to differentiate a gradient loop (or a cond holding one): the values it
    pops depend on the forward inputs through a stack, which carries no gradient, so
    the result would silently miss those terms."""
    if any(n.op == "StackPop" for r in node.regions for n in r.walk()):
        raise CompileError("cannot differentiate a loop's gradient (second-order gradients "
                           "through tw.while_loop are not supported)")


def _add_output(node: Node, t: Type) -> Value:
    value = Value(t, node, len(node.outputs), node.graph)
    node.outputs.append(value)
    return value


# ------------------------------------------------------------------------------------ If

@register_gradient("If")
def _if_grad(op, *grads):
    node = op.node
    outs = [i for i, g in enumerate(grads) if g is not None]
    xs = [j for j, v in enumerate(node.inputs[1:]) if _is_float(v.type)]
    if not outs or not xs:
        return [None] * len(node.inputs)
    _check_first_order(node)
    gtypes = [node.outputs[i].type for i in outs]
    then_g, else_g = node.regions
    d_then = differentiate_region(then_g, outs, xs, gtypes, f"{node.name}_grad_true")
    d_else = differentiate_region(else_g, outs, xs, gtypes, f"{node.name}_grad_false")
    then_in = _expose_saved(node, 0, d_then.saved)
    else_in = _expose_saved(node, 1, d_else.saved)
    # Both gradient branches take [incoming grads, then's saved, else's saved].
    t, e = d_then.region, d_else.region
    set_args(t, [*d_then.grad_args, *(a for _, a in d_then.saved),
                 *(t.add_arg(v.type, "unused") for v in else_in)])
    set_args(e, [*d_else.grad_args, *(e.add_arg(v.type, "unused") for v in then_in),
                 *(a for _, a in d_else.saved)])
    results = add_control_node("If", [op.inputs[0], *(grads[i] for i in outs), *then_in,
                                      *else_in], {}, [t, e], f"{node.name}_grad")
    in_grads: list = [None] * len(node.inputs)
    for j, r in zip(xs, results):
        in_grads[1 + j] = r
    return in_grads


def _expose_saved(node: Node, branch: int, saved: list[tuple[Value, Value]]) -> list[Value]:
    """The values, in the If's graph, that give the gradient the saved values of one
    branch: the If's inputs for branch arguments, new outputs of the If for the rest."""
    region, other = node.regions[branch], node.regions[1 - branch]
    out = []
    for v, _ in saved:
        if v.producer is None:  # an argument of the branch: the If's input
            out.append(node.inputs[1 + v.index])
            continue
        stand_in = _placeholder(other, v.type)
        region.results.append(v)
        other.results.append(stand_in)
        for g in (region, other):
            g.result_names.append(f"saved{len(g.results) - 1}")
        pair = (v.type, stand_in.type) if branch == 0 else (stand_in.type, v.type)
        out.append(_add_output(node, merge_branch_types(*pair, len(node.outputs))))
    return out


# --------------------------------------------------------------------------------- While

@register_gradient("While")
def _while_grad(op, *grads):
    node = op.node
    cond_g, body_g = node.regions
    n = len(node.inputs)
    fl = [i for i in range(n) if _is_float(body_g.args[i].type)]
    if not fl or all(grads[i] is None for i in fl):
        return [None] * n
    _check_first_order(node)
    d = differentiate_region(body_g, fl, fl, [body_g.args[i].type for i in fl],
                             f"{node.name}_grad_body")
    invariant = [(v, a) for v, a in d.saved if v.producer is None and v.graph is body_g
                 and body_g.results[v.index] is v]
    pushed = [(v, a) for v, a in d.saved if (v, a) not in invariant]
    handle, count = _save_history(node, [v for v, _ in pushed])
    start = [grads[i] if grads[i] is not None else _array().zeros_like(op.outputs[i]) for i in fl]
    inv_outer = [node.inputs[v.index] for v, _ in invariant]
    body = _backward_body(d, pushed, invariant)
    cond = _countdown_cond(body)
    attrs = {"parallel_iterations": node.attrs["parallel_iterations"],
             "maximum_iterations": node.attrs["maximum_iterations"]}
    outs = add_control_node("While", [count, handle, *start, *inv_outer], attrs, [cond, body],
                            f"{node.name}_grad")
    in_grads: list = [None] * len(node.inputs)  # includes the two inputs just added
    for k, i in enumerate(fl):
        in_grads[i] = outs[2 + k]
    return in_grads


def _save_history(node: Node, values: list[Value]) -> tuple[Value, Value]:
    """Augment the forward loop in place: a fresh stack and an iteration counter as two
    more loop variables, and one push of `values` per iteration. Returns the loop's
    final stack handle and iteration count."""
    cond_g, body_g = node.regions
    stack = _insert_before(node, "Stack", {"max_size": node.attrs["maximum_iterations"],
                                           "stack_name": f"{node.name}/history"}, "history")
    zero = _insert_before(node, "Const", {"value": _int32(0)}, "iterations")
    node.inputs += [stack, zero]
    cond_g.add_arg(RESOURCE, "history")
    cond_g.add_arg(_COUNTER, "iterations")
    h = body_g.add_arg(RESOURCE, "history")
    c = body_g.add_arg(_COUNTER, "iterations")
    push = body_g.add_node("StackPush", [h, *values], name="push_history")
    one = body_g.add_node("Const", [], {"value": _int32(1)}, name="one")
    nxt = body_g.add_node("Add", [c, one.outputs[0]], name="next_iteration")
    body_g.results += [push.outputs[0], nxt.outputs[0]]
    body_g.result_names += ["history", "iterations"]
    return _add_output(node, RESOURCE), _add_output(node, _COUNTER)


def _insert_before(node: Node, op: str, attrs: dict, name: str) -> Value:
    """A new input-less node just before `node` in its graph (keeps the node order
    topological)."""
    graph = node.graph
    new = graph.add_node(op, [], attrs, name=f"{node.name}/{name}", device=node.device,
                         loc=node.loc)
    graph.nodes.pop()
    graph.nodes.insert(graph.nodes.index(node), new)
    return new.outputs[0]


def _int32(x: int) -> np.ndarray:
    arr = np.array(x, dtype=np.int32)
    arr.flags.writeable = False
    return arr


def _backward_body(d: RegionGradient, pushed: list[tuple[Value, Value]],
                   invariant: list[tuple[Value, Value]]) -> Graph:
    """The body gradient region made into the backward loop's body: arguments
    ``(iterations left, handle, grads..., invariants...)``; it pops one entry, feeds it
    to the gradient, and returns the next loop variables."""
    body = d.region
    left = body.add_arg(_COUNTER, "iterations_left")
    handle = body.add_arg(RESOURCE, "history")
    pop = body.add_node("StackPop", [handle], {"elem_types": tuple(v.type for v, _ in pushed)},
                        name="pop_history")
    body.nodes.insert(0, body.nodes.pop())
    body.replace_all_uses({a: pop.outputs[1 + k] for k, (_, a) in enumerate(pushed)})
    one = body.add_node("Const", [], {"value": _int32(1)}, name="one")
    nxt = body.add_node("Sub", [left, one.outputs[0]], name="iterations_left_next")
    inv_args = [a for _, a in invariant]
    grads, grad_names = list(body.results), list(body.result_names)
    set_args(body, [left, handle, *d.grad_args, *inv_args])
    body.set_results([nxt.outputs[0], pop.outputs[0], *grads, *inv_args],
                     ["iterations_left", "history", *grad_names,
                      *(f"invariant{k}" for k in range(len(inv_args)))])
    return body


def _countdown_cond(body: Graph) -> Graph:
    """``iterations_left > 0`` over the backward loop's variables."""
    cond = Graph(f"{body.name}_cond")
    args = [cond.add_arg(a.type, name) for a, name in zip(body.args, body.arg_names)]
    zero = cond.add_node("Const", [], {"value": _int32(0)}, name="zero")
    more = cond.add_node("Greater", [args[0], zero.outputs[0]], name="more")
    cond.set_results([more.outputs[0]], ["more"])
    return cond


# --------------------------------------------------------------------------- the others

@register_gradient("StackPop")
def _stack_pop_grad(op, *grads):
    raise CompileError("cannot differentiate a loop's gradient (second-order gradients "
                       "through tw.while_loop are not supported)")


@register_gradient("DynamicUpdateRow")
def _dynamic_update_row_grad(op, g):
    _, index, _ = op.inputs
    row = _array().gather(g, index)
    return [apply_op1("DynamicUpdateRow", [g, index, _array().zeros_like(row)]), None, row]
