"""Epilogue fusion: a product (Conv2D, MatMul) and the elementwise cluster that reads it
become one node, so the cpu target computes the cluster on the product's output tiles
while they are in registers (direct convolutions) or in cache (right after each BLAS
call on a thread's chunk) instead of in a second pass over memory.

Stage ``epilogue`` (after ``fused``; cpu and gpu targets; ``TW_EPILOGUE_FUSION=0`` turns
it off when compiling): `fuse_epilogues`, in place. Compiling for the gpu target, "native
code" below means the gpu target's (`targets/gpu/epilogue.py`: the product's kernel
applies the cluster in its store), and the lone-Mul rule does not apply.

A ``Conv2D`` (NHWC) or ``MatMul`` P and a ``Fusion`` F become one ``FusedConv2D`` /
``FusedMatMul`` (`compiler/ops/fusion.py`) whose region holds a copy of P followed by
F's ops, when
- P's output is read by F only (no other node, no result of the graph: so the
  pre-bias and pre-activation tensors are not needed elsewhere; a gradient that needs
  one, such as Relu's ``x > 0`` on the bias-added value, is computed in F, the forward
  cluster, and becomes one more output of the fused node);
- P computes f32 or f64, has a native lowering for its static shapes (when they are
  known), and no node waits on P through a control edge;
- F is elementwise only (no reductions), every op of it has native code and none can
  fail (integer division, integer powers);
- each other tensor F reads is a scalar, a vector over the product's last (channel)
  axis (``[C]``, ``[1, 1, 1, C]``: a bias), or has the product's full static shape (a
  residual), so an output tile needs only its own elements of it;
- every output of F has the product's shape (it depends on the product);
- P and F are on the same device, and the graph has no dataflow control flow (the
  ``lowered`` stage: per-node deadness, as in the fusion pass);
- in a While body, F does not compute a loop variable from its own argument (an
  accumulator: the cpu step updates those in place, and sums one outer product per
  iteration as one GEMM after the loop, `targets/cpu/step._in_place`; the gpu target
  keeps apart only the ``argument + other`` sums its loops update in place);
- F is not a lone Mul read only by variable updates (``var -= lr * grad``: the cpu step
  multiplies in the update's own pass, `targets/cpu/step._scaled_updates`).

Nothing else changes: the fused node reads P's inputs and then F's other inputs, and
returns F's outputs; a target without an epilogue runs the region as it is.
"""

from __future__ import annotations

import os

from ..compiler.dtypes import float32, float64
from ..compiler.ir import Graph, Node, Value
from ..compiler.pipeline import register_stage
from ..compiler.types import TensorType
from ..errors import TensorWeaveError
from .fusion import CONTROL_FLOW_OPS

PRODUCTS = {"Conv2D": "FusedConv2D", "MatMul": "FusedMatMul"}
ENV = "TW_EPILOGUE_FUSION"


def enabled(target: str | None = None) -> bool:
    """Whether compiling runs stage ``epilogue`` now (``TW_EPILOGUE_FUSION`` is not 0)."""
    return os.environ.get(ENV, "1").strip() not in ("0", "false", "off")


# -------------------------------------------------------------------- what can be fused

def operand_kind(t: TensorType, product: TensorType) -> str | None:
    """How an epilogue reads a tensor of type `t` next to a product of type `product`:
    ``"scalar"`` (one element), ``"channel"`` (a vector over the last axis: every other
    dim 1), ``"full"`` (the product's own static shape), or None (it cannot)."""
    if not isinstance(t, TensorType) or not isinstance(product, TensorType):
        return None
    if t.rank is None or product.rank is None or t.rank > product.rank:
        return None
    shape, want = tuple(t.shape), tuple(product.shape)
    if product.is_fully_defined and shape == want:
        return "full"
    if any(d != 1 for d in shape[:-1]):
        return None
    if not shape or shape[-1] == 1:
        return "scalar"
    last, channels = shape[-1], want[-1] if want else 1
    # an unknown size broadcasts against the channels (so it is C or 1): decided when
    # the shapes are known
    if last is None or channels is None or last == channels:
        return "channel"
    return None


def _uses(graph: Graph) -> dict[Value, int]:
    """How many times each value is read: by nodes (nested regions included) and as a
    result of `graph` or of a nested region."""
    count: dict[Value, int] = {}
    for g in graph._self_and_regions():
        for n in g.nodes:
            for v in n.inputs:
                count[v] = count.get(v, 0) + 1
        for v in g.results:
            count[v] = count.get(v, 0) + 1
    return count


def _depends_on(region: Graph, arg: Value) -> set[Value]:
    """The values of `region` computed from `arg` (itself included)."""
    out = {arg}
    for n in region.topological_order():
        if any(v in out for v in n.inputs):
            out.update(n.outputs)
    return out


def _scales_an_update(fusion: Node, readers: dict[Value, list[tuple[Node, int]]]) -> bool:
    """Whether `fusion` is a lone Mul read only by variable updates (``var -= lr * g``):
    the cpu step multiplies in the update's own pass already (`step._scaled_updates`)."""
    region = fusion.regions[0]
    if len(region.nodes) != 1 or region.nodes[0].op != "Mul":
        return False
    users = [n for out in fusion.outputs for n, _ in readers.get(out, [(None, 0)]) if n]
    # (no reader at all: a result, which the update pass does not scale)
    return bool(users) and all(n.op in ("AssignAddVariable", "AssignSubVariable")
                               for n in users)


def _cluster_ok(product: Node, fusion: Node) -> bool:
    """F's side of the rules in the module docstring."""
    try:  # the cpu target's code generators (no llvmlite: nothing could lower it anyway)
        from ..targets.cpu.epilogue import MAY_FAIL
        from ..targets.cpu.fused import try_fused_kernel
    except ImportError:
        return False
    v = product.outputs[0]
    region = fusion.regions[0]
    if list(fusion.inputs).count(v) != 1:
        return False
    arg = region.args[list(fusion.inputs).index(v)]
    for n in region.nodes:
        if n.op in ("Sum", "Mean", "Max", "Min", "Prod", "All", "Any") or n.regions:
            return False
        if n.op in MAY_FAIL and any(isinstance(x.type, TensorType) and x.type.dtype.kind
                                     != "float" for x in n.inputs):
            return False
    for x in fusion.inputs:
        if x is not v and operand_kind(x.type, v.type) is None:
            return False
    computed = _depends_on(region, arg)
    for r, out in zip(region.results, fusion.outputs):
        t = out.type
        if r not in computed or not isinstance(t, TensorType) or t.rank != v.type.rank:
            return False
        if not all(a is None or b is None or a == b for a, b in zip(t.shape, v.type.shape)):
            return False
    # the lowering writes the product's tile into an output of its dtype (a cluster of
    # only masks or casts would run its reference kernel instead)
    if not any(out.type.dtype is v.type.dtype for out in fusion.outputs):
        return False
    if _for_gpu():
        from ..targets.gpu.epilogue import cluster_native
        return cluster_native(fusion)
    return try_fused_kernel(fusion) is not None  # every op has native code (no compiling)


def _for_gpu() -> bool:
    """Whether the running pipeline compiles for the gpu target."""
    from ..compiler.pipeline import pipeline_target
    return pipeline_target() == "gpu"


def _product_ok(product: Node, uses: dict[Value, int], waits: set[Node],
                readers: dict[Value, list[tuple[Node, int]]]) -> Node | None:
    """The Fusion that may absorb `product`, or None."""
    if product.op not in PRODUCTS or len(product.outputs) != 1 or product in waits:
        return None
    v = product.outputs[0]
    t = v.type
    if not isinstance(t, TensorType) or t.dtype not in (float32, float64) or uses.get(v) != 1:
        return None
    fusion = readers.get(v, [(None, 0)])[0][0]
    gpu = _for_gpu()
    if fusion is None or fusion.op != "Fusion" or \
            (not gpu and _scales_an_update(fusion, readers)):
        return None
    if (fusion.device, fusion.assigned_device) != (product.device, product.assigned_device):
        return None
    if gpu:
        from ..targets.gpu.epilogue import product_native
        if not product_native(product):
            return None
    elif all(isinstance(x.type, TensorType) and x.type.is_fully_defined
             for x in list(product.inputs) + [v]):
        from ..targets.cpu.lowering import find_lowering
        if find_lowering(product) is None:
            return None  # (it would run its reference kernel: keep the cluster native)
    return fusion if _cluster_ok(product, fusion) else None


# ---------------------------------------------------------------------------- rewriting

def _fused_node(graph: Graph, product: Node, fusion: Node) -> Node:
    """The new node computing `fusion`'s outputs from `product`'s inputs and `fusion`'s
    other inputs; it takes `fusion`'s place in `graph`'s node list."""
    v = product.outputs[0]
    cluster = fusion.regions[0]
    others = [(x, a) for x, a in zip(fusion.inputs, cluster.args) if x is not v]
    inputs = list(product.inputs) + [x for x, _ in others]
    region = Graph("epilogue")
    args = [region.add_arg(x.type, x.name.replace(":", "_") if x.name else f"in{i}")
            for i, x in enumerate(inputs)]
    head = Node(region, product.op, args[:len(product.inputs)], product.attrs,
                [v.type], region.unique_name(product.name), loc=product.loc)
    region.nodes.append(head)
    vmap: dict[Value, Value] = {cluster.args[list(fusion.inputs).index(v)]: head.outputs[0]}
    vmap.update((a, args[len(product.inputs) + k]) for k, (_, a) in enumerate(others))
    for n in cluster.nodes:
        copy = Node(region, n.op, [vmap[x] for x in n.inputs], n.attrs,
                    [x.type for x in n.outputs], region.unique_name(n.name), loc=n.loc)
        region.nodes.append(copy)
        vmap.update(zip(n.outputs, copy.outputs))
    region.set_results([vmap[r] for r in cluster.results], list(cluster.result_names))
    controls = dict.fromkeys(c for c in list(product.control_inputs)
                             + list(fusion.control_inputs) if c is not product)
    # (the product's name: profiles and errors show the layer the user wrote)
    node = Node(graph, PRODUCTS[product.op], inputs, {}, [o.type for o in fusion.outputs],
                product.name, control_inputs=list(controls), device=product.device,
                loc=product.loc, regions=[region])
    node.assigned_device = product.assigned_device
    # in the cluster's place (everything it reads comes before it), not at the end: the
    # order is the step's schedule, and a product moved after a variable's update would
    # make the step snapshot the variable it reads
    graph.nodes[graph.nodes.index(fusion)] = node
    return node


def _accumulators(graph: Graph) -> set[Node]:
    """In a While body, the nodes computing a loop variable from its own argument."""
    loop = graph.parent
    if loop is None or loop.op != "While" or len(loop.regions) < 2 or loop.regions[1] is not graph:
        return set()
    out = set()
    for arg, res in zip(graph.args, graph.results):
        n = res.producer
        if n is not None and any(v is arg for v in n.inputs):
            out.add(n)
    return out


def fuse_epilogues(graph: Graph) -> None:
    """Merge each product with the elementwise cluster that reads it (see the module
    docstring), in `graph` and in the regions of its If/While nodes, in place."""
    for node in graph.nodes:
        if node.op in ("If", "While"):
            for region in node.regions:
                fuse_epilogues(region)
    if any(n.op in CONTROL_FLOW_OPS for n in graph.nodes):
        return
    accumulators = _accumulators(graph)
    if _for_gpu():  # (its other loop variables are double-buffered: fusing them is fine)
        from ..targets.gpu.epilogue import in_place_sums
        accumulators = in_place_sums(graph, accumulators)
    uses = _uses(graph)
    waits = {c for n in graph.nodes for c in n.control_inputs}
    readers = graph.consumers()
    pairs = []
    taken: set[Node] = set()  # (a cluster reading two products absorbs the first)
    for node in list(graph.nodes):
        try:
            fusion = _product_ok(node, uses, waits, readers)
        except TensorWeaveError:
            fusion = None
        if fusion is not None and fusion not in taken and fusion not in accumulators:
            taken.add(fusion)
            pairs.append((node, fusion))
    if not pairs:
        return
    replaced: dict[Value, Value] = {}
    gone: dict[Node, Node] = {}
    for product, fusion in pairs:
        fused = _fused_node(graph, product, fusion)
        replaced.update(zip(fusion.outputs, fused.outputs))
        gone[product] = gone[fusion] = fused
    graph.replace_all_uses(replaced)
    for g in graph._self_and_regions():
        for n in g.nodes:
            if any(c in gone for c in n.control_inputs):
                n.control_inputs = list(dict.fromkeys(gone.get(c, c) for c in n.control_inputs
                                                      if gone.get(c, c) is not n))
    graph.remove_nodes(list(gone))
    graph.sort()


def _register() -> None:
    """Register stage ``epilogue`` (cpu and gpu targets, when `enabled`) after
    ``fused``; a second import (`importlib.reload`) keeps the stage already there."""
    try:
        register_stage("epilogue", [fuse_epilogues], after="fused", targets=("cpu", "gpu"),
                       when=enabled)
    except ValueError:  # "stage 'epilogue' exists"
        pass


_register()

__all__ = ["ENV", "PRODUCTS", "enabled", "fuse_epilogues", "operand_kind"]
