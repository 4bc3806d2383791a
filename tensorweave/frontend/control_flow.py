"""Dynamic control flow: `cond`, `while_loop`, `case`, `scan` and `foldl`.

While tracing, branch and loop bodies are traced into the regions of functional ``If``
and ``While`` nodes (see `tensorweave.compiler.ops.control`); outside any graph they run
eagerly, as plain Python control flow on computed values.

How a body becomes a region
- A `RegionBuilder` (a `GraphBuilder` whose graph is the region) is current while the
  Python body runs. A tensor of an enclosing graph that the body uses is *captured*: it
  becomes an argument of the region and an explicit input of the node (for a loop, an
  extra loop variable that the body passes through unchanged). Regions therefore read
  nothing but their arguments, which keeps lowering, placement and partitioning simple.
- Variables: a body that only *reads* a variable (no assignment anywhere in the region)
  gets the value read once in the enclosing graph, just before the node, as a captured
  input: the value is the same in every iteration, and gradients with respect to the
  variable flow through the node like any other input. A body that assigns a variable
  keeps its reads and updates inside the region (through its own ``VarHandle``), so each
  iteration sees the previous one's update; those reads carry no gradient (a gradient
  with respect to the variable through them is a CompileError:
  `check_no_region_reads_reach`, called by tapes and `tw.gradients`). A cond whose
  predicate tests a variable's initialization (``VarIsInitialized``) keeps that
  variable's reads in its branches, so only the branch taken reads it.
- The node is stateful; with automatic control dependencies it is ordered after earlier
  stateful ops on the variables and resources its regions touch, and later ones after it.

`scan` keeps its per-element outputs in a buffer of one row per element, written with
``DynamicUpdateRow``: a fixed-shape loop variable whose gradient needs only the row
index, so differentiating a scan saves no copies of the buffer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..compiler.dtypes import bool_, int32
from ..compiler.ir import Graph, Node, Value
from ..compiler.registry import get_op
from ..compiler.types import TensorType, format_shape
from ..errors import CompileError, DTypeError, ShapeError, TracingError
from . import nest
from .building import _as_value, _resource_keys, apply_op, apply_op1, convert_to_tensor, user_location
from .context import GraphBuilder, building, control_dependencies, current_builder
from .tensor import EagerTensor, Tensor
from .tf1_names import default_node_name

# ------------------------------------------------------------------------ region builders


class RegionBuilder(GraphBuilder):
    """Builds a control-flow region while a Python body runs. Values of enclosing graphs
    become region arguments (`captured`: outer value -> argument, in capture order)."""

    def __init__(self, graph: Graph, parent: GraphBuilder) -> None:
        super().__init__(graph, auto_control_deps=True, kind=parent.kind)
        self.parent = parent
        if parent.tf1_naming:
            # TensorFlow 1 builds a body in the graph itself: its ops are named under the
            # enclosing name scope (``while/add``), unique among the graph's names, and
            # the body's default graph is the enclosing one (get_variable in a body uses
            # its variable scopes and store)
            self.name_scopes = list(parent.name_scopes)
            self.names_in_use = parent.names_in_use
            self.v1_graph = getattr(parent, "v1_graph", None)
        if parent.device:
            self.device_stack.append(parent.device)
        self.captured: dict[Value, Value] = {}
        # Ops of enclosing graphs that ops of the body must run after: the If/While node
        # runs after them instead.
        self.outer_control: list[Node] = []

    def control_inputs(self) -> list[Node]:
        local = []
        for n in super().control_inputs():
            if n.graph is self.graph:
                local.append(n)
            elif n not in self.outer_control:
                self.outer_control.append(n)
        return local

    def capture(self, value: Value) -> Value | None:
        """`value` as a value of this region: itself, or the argument standing for it
        (made on first use); None when no enclosing graph defines it."""
        if value.graph is self.graph:
            return value
        outer = _resolve(self.parent, value)
        if outer is None:
            return None
        arg = self.captured.get(outer)
        if arg is None:
            arg = self.graph.add_arg(outer.type, outer.name)
            self.captured[outer] = arg
        return arg


class GradRegionBuilder(GraphBuilder):
    """Builds the gradient of a region (`source`) into a new region: every value of
    `source` that the gradient reads becomes an argument (`saved`: (source value,
    argument) pairs, in order); constants are copied instead."""

    _COPIED_OPS = frozenset({"Const", "VarHandle"})

    def __init__(self, graph: Graph, source: Graph, parent: GraphBuilder | None) -> None:
        super().__init__(graph, auto_control_deps=True,
                         kind=parent.kind if parent is not None else "function")
        self.source = source
        self.saved: list[tuple[Value, Value]] = []
        self._map: dict[Value, Value] = {}

    def capture(self, value: Value) -> Value | None:
        if value.graph is self.graph:
            return value
        if value.graph is not self.source:
            return None
        got = self._map.get(value)
        if got is None:
            p = value.producer
            if p is not None and p.op in self._COPIED_OPS and not p.inputs:
                copy = self.graph.add_node(p.op, [], p.attrs, name=p.name,
                                           output_types=[v.type for v in p.outputs])
                got = copy.outputs[value.index]
            else:
                got = self.graph.add_arg(value.type, value.name)
                self.saved.append((value, got))
            self._map[value] = got
        return got


def _resolve(builder: GraphBuilder | None, value: Value) -> Value | None:
    """`value` as a value of `builder`'s graph (capturing it there if need be)."""
    if builder is None:
        return None
    if value.graph is builder.graph:
        return value
    capture = getattr(builder, "capture", None)
    return capture(value) if capture is not None else None


def set_args(graph: Graph, args: Sequence[Value]) -> None:
    """Make `args` (existing arguments of `graph`, reordered, possibly fewer) its
    argument list; dropped arguments must be unused."""
    names = {id(a): n for a, n in zip(graph.args, graph.arg_names)}
    graph.args = list(args)
    graph.arg_names = [names[id(a)] for a in args]
    for i, a in enumerate(graph.args):
        a.index = i


# ------------------------------------------------------------------ adding region nodes

def add_control_node(op: str, inputs: Sequence[Any], attrs: dict[str, Any],
                     regions: Sequence[Graph], name: str | None = None,
                     after: Sequence[Node] = ()) -> list[Any]:
    """Append an op with regions (If, While) to the graph being built, like `apply_op`
    does for other ops: inputs converted (and captured inside regions), name and device
    scopes, control dependencies (plus the nodes `after`), automatic ordering after
    earlier stateful ops on the variables and resources it (or its regions) touches.
    Returns its outputs."""
    builder = current_builder()
    values = [_as_value(x) for x in inputs]
    opdef = get_op(op)
    keys = _resource_keys(values) + region_resource_keys(regions)
    control = builder.control_inputs()
    for n in after:
        if n.graph is not builder.graph:
            if isinstance(builder, RegionBuilder) and n not in builder.outer_control:
                builder.outer_control.append(n)  # nested: the enclosing node waits for it
        elif n not in control:
            control.append(n)
    if builder.auto_control_deps:
        for key in keys:
            prev = builder.last_stateful.get(key)
            if prev is not None and prev not in control:
                control.append(prev)
    node = builder.graph.add_node(op, values, attrs,
                                  name=builder.unique_name(name or default_node_name(
                                      op, opdef.default_name, builder.tf1_naming)),
                                  control_inputs=control, device=builder.device,
                                  loc=user_location(), regions=regions)
    for key in keys:
        builder.last_stateful[key] = node
    from ..passes._rewrite import has_side_effects  # the passes load lazily
    if has_side_effects(node):
        builder.side_effect_nodes.append(node)
    return [Tensor(v, builder) if isinstance(v.type, TensorType) else v for v in node.outputs]


def region_resource_keys(regions: Sequence[Graph]) -> list[Any]:
    """The automatic-control-dependency keys of the variables used inside `regions`."""
    keys: list[Any] = []
    for region in regions:
        for n in region.walk():
            if n.op == "VarHandle":
                key = ("var", n.attrs["shared_name"])
                if key not in keys:
                    keys.append(key)
    return keys



# ------------------------------------------------- gradients of variables read in regions

def check_no_region_reads_reach(graph: Graph, names: Sequence[str], targets: Sequence[Value],
                                only: set[int] | None = None) -> None:
    """Raise CompileError if a value of `targets` (in `graph`) depends on a read of one
    of the variables `names` that sits inside a region (see the module docstring: a
    region that assigns a variable keeps its reads, which carry no gradient), so that a
    gradient with respect to the variable is never a silent None or a partial sum.
    `only`: the ids of the nodes to consider (a tape's recorded nodes), default all."""
    wanted = set(names)
    if not wanted:
        return
    ancestors: set[Value] = set()
    stack = list(targets)
    while stack:
        v = stack.pop()
        if v in ancestors or v.graph is not graph:
            continue
        ancestors.add(v)
        if v.producer is not None:
            stack.extend(v.producer.inputs)
    for node in graph.nodes:
        if not node.regions or (only is not None and id(node) not in only) or \
                not any(v in ancestors for v in node.outputs):
            continue
        read = {n.attrs["shared_name"] for r in node.regions for n in r.walk()
                if n.op == "VarHandle"} & wanted
        for name in sorted(read):
            if any(node.outputs[k] in ancestors for k in _outputs_reading(node, name)):
                where = "branches" if node.op == "If" else "cond or body"
                api = "tw.cond" if node.op == "If" else "tw.while_loop"
                raise CompileError(
                    f"cannot differentiate with respect to variable '{name}' through "
                    f"{node.op} '{node.name}': its {where} assign the variable and read "
                    f"it, and those reads carry no gradient (they stay inside so that each "
                    f"sees the assignments before it); read the variable outside the {api} "
                    f"and pass the value in, or take the gradient inside it",
                    **node.error_context())


def _outputs_reading(node: Node, name: str) -> set[int]:
    """Indices of `node`'s float outputs that depend on a read of variable `name` inside
    its regions (for a loop, through any number of iterations)."""
    if node.op == "While":
        body = node.regions[1]
        carried: set[int] = set()
        while True:  # a read in one iteration reaches the next through loop variables
            more = _results_reading(body, name, carried) - carried
            if not more:
                break
            carried |= more
        found = carried
    else:
        found = set()
        for region in node.regions:
            found |= _results_reading(region, name, set())
    return {k for k in found if k < len(node.outputs) and _is_float_value(node.outputs[k])}


def _results_reading(region: Graph, name: str, args: set[int]) -> set[int]:
    """Indices of `region`'s results that depend on a read of variable `name` in it (or
    in regions nested in it), or on the arguments numbered `args`."""
    dep = {region.args[i] for i in args if i < len(region.args)}
    for n in region.topological_order():
        if n.op == "StopGradient":
            continue
        if n.op == "ReadVariable":
            h = n.inputs[0].producer
            if h is not None and h.op == "VarHandle" and h.attrs.get("shared_name") == name:
                dep.update(n.outputs)
        elif any(v in dep for v in n.inputs):
            dep.update(n.outputs)
        elif n.regions:
            dep.update(n.outputs[k] for k in _outputs_reading(n, name))
    return {k for k, v in enumerate(region.results) if v in dep}


def _is_float_value(v: Value) -> bool:
    return isinstance(v.type, TensorType) and v.type.dtype.is_floating


# ---------------------------------------------------------------------- tracing regions

class _Traced:
    """A traced region: its graph, builder, and the structure of what the body returned."""

    def __init__(self, graph: Graph, builder: RegionBuilder, tree: Any) -> None:
        self.graph = graph
        self.builder = builder
        self.tree = tree


def _trace_region(name: str, fn: Callable[[list[Tensor]], Any], arg_types: Sequence[TensorType],
                  arg_names: Sequence[str]) -> _Traced:
    """Run `fn` on the region's arguments with a `RegionBuilder` current; the flat
    leaves it returns (tensors or values convertible to tensors) are the results."""
    parent = current_builder()
    graph = Graph(name)
    builder = RegionBuilder(graph, parent)
    with building(builder):
        args = [Tensor(graph.add_arg(t, n), builder) for t, n in zip(arg_types, arg_names)]
        out = fn(args)
        leaves, tree = nest.flatten(out) if out is not None else ([], None)
        graph.set_results([convert_to_tensor(x).value for x in leaves])
    parent.variables.update(builder.variables)
    return _Traced(graph, builder, tree)


def _hoist_reads(traced: Sequence[_Traced], together: bool,
                 keep: frozenset[str] = frozenset()) -> None:
    """Hoist the reads of variables that a region never assigns (see the module
    docstring). With `together` (a loop's cond and body), a variable that either region
    assigns stays inside both; branches are judged one by one. Reads of the variables
    named in `keep` stay where they are."""
    reads: dict = {}
    if together:
        graphs = [t.graph for t in traced]
        pure = set.intersection(*[_read_only_variables(g) | _unused(g, graphs) for g in graphs])
        for t in traced:
            _hoist_variable_reads(t.builder, pure - keep, reads)
    else:
        for t in traced:
            _hoist_variable_reads(t.builder, _read_only_variables(t.graph) - keep, reads)


def _initialization_tested(pred: Value) -> frozenset[str]:
    """Shared names of the variables whose ``VarIsInitialized`` `pred` is computed from.

    A branch of ``cond(is_variable_initialized(v), v.read_value, ...)`` must read `v`
    only when taken: hoisted before the ``If``, the read would run, and fail on an
    uninitialized `v`, whichever branch the predicate picks (TensorFlow reads inside
    the branch). Such reads stay in their region (and carry no gradient)."""
    names: set[str] = set()
    seen: set[int] = set()
    stack = [pred.producer] if pred.producer is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.op == "VarIsInitialized":
            handle = node.inputs[0].producer
            if handle is not None and handle.op == "VarHandle":
                names.add(handle.attrs["shared_name"])
            continue
        stack += [v.producer for v in node.inputs if v.producer is not None]
    return frozenset(names)


def _unused(graph: Graph, graphs: Sequence[Graph]) -> set[str]:
    """Variables that the other `graphs` use and `graph` does not."""
    mine = {n.attrs["shared_name"] for g in _graphs(graph) for n in g.nodes if n.op == "VarHandle"}
    every = {n.attrs["shared_name"] for g0 in graphs for g in _graphs(g0) for n in g.nodes
             if n.op == "VarHandle"}
    return every - mine


def _hoist_variable_reads(builder: RegionBuilder, pure: set[str], reads: dict) -> None:
    """Replace the reads of the variables named in `pure` by one read in the enclosing
    graph, captured (`reads` caches those reads per enclosing builder)."""
    graph = builder.graph
    replace: dict[Value, Value] = {}
    dead: list[Node] = []
    users = graph.consumers()
    for n in list(graph.nodes):
        name = n.attrs.get("shared_name") if n.op == "VarHandle" else None
        if name not in pure or name not in builder.variables:
            continue
        key = (id(builder.parent), name)
        outer = reads.get(key)
        if outer is None:
            with building(builder.parent):
                outer = reads[key] = builder.variables[name].read_value().value
        arg = builder.capture(outer)
        for reader, _ in users.get(n.outputs[0], []):
            replace[reader.outputs[0]] = arg
            dead.append(reader)
        dead.append(n)
        builder.var_handles.pop(name, None)
    graph.replace_all_uses(replace)
    graph.remove_nodes(dead)


def _read_only_variables(graph: Graph) -> set[str]:
    """Shared names of the variables that `graph` (regions included) only reads."""
    seen: set[str] = set()
    written: set[str] = set()
    for g in _graphs(graph):
        users = g.consumers()
        results = set(g.results)
        for n in g.nodes:
            if n.op != "VarHandle":
                continue
            name = n.attrs["shared_name"]
            seen.add(name)
            h = n.outputs[0]
            if h in results or any(u.op != "ReadVariable" for u, _ in users.get(h, [])):
                written.add(name)
    return seen - written


def _graphs(graph: Graph) -> list[Graph]:
    out = [graph]
    for n in graph.nodes:
        for r in n.regions:
            out += _graphs(r)
    return out


def _outer_control(traced: Sequence[_Traced]) -> list[Node]:
    return [n for t in traced for n in t.builder.outer_control]


def _extra_args(traced: Sequence[_Traced], fixed: int) -> list[Value]:
    """The union of the values the regions captured, in first-capture order; each
    region's arguments become its `fixed` own ones followed by one per captured value
    (unused where that region did not capture it)."""
    outer: list[Value] = []
    for t in traced:
        outer += [v for v in t.builder.captured if v not in outer]
    for t in traced:
        g = t.graph
        extra = [t.builder.captured.get(v) or g.add_arg(v.type, v.name) for v in outer]
        set_args(g, g.args[:fixed] + extra)
    return outer


# --------------------------------------------------------------------------------- cond

def cond(pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any],
         name: str | None = None) -> Any:
    """``true_fn()`` if `pred` is true, else ``false_fn()`` (TensorFlow's ``tf.cond``).

    While tracing, both functions are traced into the branches of one ``If`` node and
    only the taken branch runs; they must return the same structure of tensors with the
    same dtypes and ranks (a dim that differs is unknown in the result). A Python bool
    `pred` just calls the chosen function; outside any graph the call is eager."""
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("tw.cond: true_fn and false_fn must be callables taking no argument")
    if isinstance(pred, (bool, np.bool_)):
        return true_fn() if pred else false_fn()
    if current_builder() is None:
        v1 = _v1_builder([pred])
        if v1 is not None:  # TensorFlow 1 semantics: build into the tensor's graph
            with building(v1):
                return cond(pred, true_fn, false_fn, name)
        return true_fn() if bool(convert_to_tensor(pred)) else false_fn()
    p = convert_to_tensor(pred)
    if p.dtype is not bool_ or not p.shape.is_compatible_with(()):  # (or of unknown rank)
        raise TracingError(f"tw.cond: pred must be a bool scalar, got {p.type}",
                           location=_where())
    shapes: list[tuple] = []  # per branch (see _branch_tensors)
    then = _trace_region("cond_true", lambda _: _branch_tensors(true_fn(), shapes), [], [])
    other = _trace_region("cond_false", lambda _: _branch_tensors(false_fn(), shapes), [], [])
    _hoist_reads([then, other], together=False, keep=_initialization_tested(p.value))
    (then_tree, then_nones, returned), (else_tree, else_nones, _) = shapes
    if _plain(then_tree) != _plain(else_tree):
        raise TracingError(f"tw.cond: true_fn and false_fn must return the same structure; "
                           f"true_fn returns {_describe(then_tree)}, false_fn returns "
                           f"{_describe(else_tree)}", location=_where())
    if then_nones != else_nones:
        paths = _leaf_paths(nest.unflatten(then_tree, then_nones))
        raise TracingError(f"tw.cond: true_fn and false_fn must return None at the same "
                           f"places; true_fn returns None at "
                           f"{[q for q, n in zip(paths, then_nones) if n]}, false_fn at "
                           f"{[q for q, n in zip(paths, else_nones) if n]}",
                           location=_where())
    inputs = _extra_args([then, other], 0)
    outs = add_control_node("If", [p, *inputs], {}, [then.graph, other.graph], name or "cond",
                            after=_outer_control([then, other]))
    if then_tree is None:
        return None
    it = iter(outs)
    leaves = [None if none else next(it) for none in then_nones]
    return _in_key_order(nest.unflatten(then_tree, leaves), returned)


def _branch_tensors(out: Any, shapes: list[tuple]) -> list[Any] | None:
    """The leaves a cond branch returned that are not None, in TensorFlow's order (dict
    keys sorted, so branches building dicts in different orders agree). Appends to
    `shapes` what it returned: its structure with dict keys sorted, which of its leaves
    are None, and its structure as returned (all None when the branch returned None)."""
    if out is None:
        shapes.append((None, (), None))
        return None
    leaves, tree = nest.flatten(_sorted_dicts(out))
    shapes.append((tree, tuple(x is None for x in leaves), nest.flatten(out)[1]))
    return [x for x in leaves if x is not None]


def _sorted_dicts(x: Any) -> Any:
    """`x` with the keys of its dicts sorted (as TensorFlow's nest orders them; keys
    that do not sort keep their order)."""
    if isinstance(x, dict):
        try:
            keys = sorted(x)
        except TypeError:
            keys = list(x)
        return {k: _sorted_dicts(x[k]) for k in keys}
    if isinstance(x, (tuple, list)) and not _is_tensor_array(x):
        items = [_sorted_dicts(v) for v in x]
        if all(a is b for a, b in zip(items, x)):
            return x
        if hasattr(type(x), "_fields"):
            return type(x)(*items)
        return type(x)(items)
    return x


def _in_key_order(value: Any, tree: Any) -> Any:
    """`value` with its dicts' keys in the order of structure `tree` (nest.flatten's)."""
    kind = tree[0]
    if kind == "leaf":
        return value
    if kind == "dict":
        return {k: _in_key_order(value[k], t) for k, t in zip(tree[1], tree[2])}
    if nest._is_composite(value):  # (a SparseTensor: its components, rebuilt by its class)
        cls, components = value._tw_components()
        items = [_in_key_order(v, t) for v, t in zip(components, _children(tree))]
        return value if all(a is b for a, b in zip(items, components)) else cls(*items)
    items = [_in_key_order(v, t) for v, t in zip(value, _children(tree))]
    if all(a is b for a, b in zip(items, value)):
        return value
    return type(value)(*items) if kind == "namedtuple" else type(value)(items)


def _v1_builder(values: Sequence[Any]) -> GraphBuilder | None:
    """The builder of the TensorFlow 1 graph that one of `values` belongs to, if any."""
    return next((x.builder for x in values if isinstance(x, Tensor) and x.builder.kind == "v1"),
                None)


def _where() -> str | None:
    loc = user_location()
    return str(loc) if loc else None


def _plain(tree: Any) -> Any:
    """A structure description where lists and tuples compare equal."""
    if tree is None or tree[0] == "leaf":
        return tree
    if tree[0] in ("list", "tuple"):
        return ("seq", tuple(_plain(t) for t in tree[1]))
    if tree[0] == "namedtuple":
        return ("seq", tuple(_plain(t) for t in tree[2]))
    return (tree[0], tree[1], tuple(_plain(t) for t in tree[2]))


def _describe(tree: Any) -> str:
    if tree is None:
        return "None"
    kind = tree[0]
    if kind == "leaf":
        return "a tensor"
    if kind in ("list", "tuple"):
        return f"a {kind} of {len(tree[1])}"
    if kind == "namedtuple":
        return f"a {tree[1].__name__}"
    return f"a dict with keys {list(tree[1])}"


# ---------------------------------------------------------------------------------- case

def case(pred_fn_pairs: Any, default: Callable[[], Any] | None = None, exclusive: bool = False,
         strict: bool = False, name: str = "case") -> Any:
    """The result of the first function whose predicate is true, else ``default()``
    (TensorFlow's ``tf.case``), built from nested `cond`s.

    `pred_fn_pairs` is a list of ``(pred, fn)`` pairs (or a dict). Without `default`, the
    last pair's function is the default, and running it when its own predicate is false
    fails with InvalidArgumentError. With ``exclusive=True``, more than one true
    predicate fails with InvalidArgumentError."""
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) else list(pred_fn_pairs)
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2 and callable(pair[1])):
            raise TypeError(f"tw.case: pred_fn_pairs must hold (pred, callable) pairs, got {pair!r}")
    if default is None:
        if not pairs:
            raise ValueError("tw.case needs at least one (pred, fn) pair or a default")
        pairs, (last_pred, last_fn) = pairs[:-1], pairs[-1]

        def default() -> Any:
            _assert(last_pred, f"tw.case: no predicate is true and no default was given "
                               f"({name})")
            return last_fn()

        preds = [p for p, _ in pairs] + [last_pred]
    else:
        preds = [p for p, _ in pairs]

    def chain(k: int) -> Any:
        if k == len(pairs):
            return default()
        return cond(pairs[k][0], pairs[k][1], lambda: chain(k + 1), name=f"{name}_{k}")

    if not exclusive or len(preds) < 2:
        return chain(0)
    from .ops import math
    count = math.add_n([math.cast(convert_to_tensor(p, dtype=bool_), int32) for p in preds])
    check = _assert(math.less_equal(count, 1), f"tw.case: more than one predicate is true "
                                               f"with exclusive=True ({name})")
    with control_dependencies([check] if check is not None else None):
        return chain(0)


def _assert(condition: Any, message: str) -> Node | None:
    """An ``Assert`` op (run now when eager); returns its node while tracing."""
    apply_op("Assert", [convert_to_tensor(condition, dtype=bool_)], {"message": message})
    builder = current_builder()
    return builder.graph.nodes[-1] if builder is not None else None


# ---------------------------------------------------------------------------- while_loop

def while_loop(cond: Callable[..., Any], body: Callable[..., Any], loop_vars: Any,
               shape_invariants: Any = None, parallel_iterations: int = 10,
               back_prop: bool = True, swap_memory: bool = False,
               maximum_iterations: Any = None, name: str | None = None) -> Any:
    """Repeat ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)`` is true
    (TensorFlow's ``tf.while_loop``, its parameters in its order); returns the final loop
    variables. ``back_prop=False`` stops the gradient at the results (TensorFlow 2's
    reading of the deprecated flag); `swap_memory` is accepted and ignored.

    `loop_vars` is a tensor or any nest of tuples, lists and dicts of tensors (a tuple or
    list is unpacked into the arguments of `cond` and `body`); `body` returns the same
    structure with the same dtypes. A loop variable keeps its shape from one iteration to
    the next unless `shape_invariants` (the same structure, a shape per tensor) leaves
    the changing dims as None. `maximum_iterations` (an int or an integer scalar tensor)
    bounds the number of iterations (a bound past 2**31 - 1 counts as 2**31 - 1). While
    tracing, the loop becomes one ``While`` node; outside any graph it runs eagerly."""
    if not callable(cond) or not callable(body):
        raise TypeError("tw.while_loop: cond and body must be callables")
    leaves, tree = nest.flatten(loop_vars)
    if not leaves:
        raise ValueError("tw.while_loop: loop_vars must hold at least one tensor")
    if parallel_iterations < 1:
        raise ValueError(f"tw.while_loop: parallel_iterations must be >= 1, got "
                         f"{parallel_iterations}")
    if current_builder() is None and _v1_builder(leaves) is not None:
        with building(_v1_builder(leaves)):  # TensorFlow 1 semantics
            return while_loop(cond, body, loop_vars, shape_invariants, parallel_iterations,
                              back_prop, swap_memory, maximum_iterations, name)
    if not back_prop:
        from .autodiff import stop_gradient
        out_leaves, out_tree = nest.flatten(while_loop(
            cond, body, loop_vars, shape_invariants, parallel_iterations,
            maximum_iterations=maximum_iterations, name=name))
        return nest.unflatten(out_tree, [stop_gradient(x) if _is_float_tensor(x) else x
                                         for x in out_leaves])
    loop = _Loop(cond, body, loop_vars, tree, _leaf_paths(loop_vars))
    tensors = [convert_to_tensor(x) for x in leaves]
    loop.types = _invariant_types(tensors, shape_invariants, loop)
    if current_builder() is None:
        return loop.run_eagerly(tensors, maximum_iterations)
    return loop.trace(tensors, maximum_iterations, parallel_iterations, name or "while")


class _Loop:
    """One `while_loop` call: the user's functions and the loop variables' structure."""

    def __init__(self, cond: Callable, body: Callable, loop_vars: Any, tree: Any,
                 paths: list[str]) -> None:
        self.cond = cond
        self.body = body
        self.tree = tree
        self.paths = paths
        self.unpack = isinstance(loop_vars, (tuple, list))
        self.types: list[TensorType] = []
        self.body_tree: Any = tree  # the structure the body returned last

    # -- calling the user's functions on flat lists ----------------------------------
    def _call(self, fn: Callable, flat: Sequence[Any]) -> Any:
        structure = nest.unflatten(self.tree, list(flat))
        return fn(*structure) if self.unpack else fn(structure)

    def call_cond(self, flat: Sequence[Any]) -> Any:
        out = convert_to_tensor(self._call(self.cond, flat))
        if out.dtype is not bool_ or not out.shape.is_compatible_with(()):  # (or unknown)
            raise TracingError(f"tw.while_loop: cond must return a bool scalar, it returns "
                               f"{out.type}", location=_where())
        return out

    def call_body(self, flat: Sequence[Any]) -> list[Any]:
        out = self._call(self.body, flat)
        if self.unpack and len(flat) == 1 and (not isinstance(out, (tuple, list, dict)) or
                                               _is_tensor_array(out)):
            out = [out]  # body returned the single loop variable itself
        leaves, tree = nest.flatten(out)
        if _plain(tree) != _plain(self.tree):
            raise TracingError(f"tw.while_loop: body must return the structure of loop_vars "
                               f"({_describe(self.tree)}), it returns {_describe(tree)}",
                               location=_where())
        self.body_tree = tree
        return [self._check_next(i, x) for i, x in enumerate(leaves)]

    def _check_next(self, i: int, x: Any) -> Any:
        t = self.types[i]
        x = convert_to_tensor(x, dtype_hint=t.dtype)
        if x.dtype is not t.dtype:
            raise DTypeError(f"tw.while_loop: loop variable {self.paths[i]} enters the loop as "
                             f"{t.dtype.ir_name} but the body returns {x.dtype.ir_name} for it; "
                             f"use tw.cast", location=_where())
        if not _fits_invariant(x.shape, t.shape):
            raise ShapeError(f"tw.while_loop: loop variable {self.paths[i]} has shape "
                             f"{format_shape(t.shape)} when it enters the loop but shape "
                             f"{format_shape(x.shape)} after an iteration; to let it change, "
                             f"pass shape_invariants with None for the dims that change",
                             location=_where())
        return x

    # -- eager -----------------------------------------------------------------------
    def run_eagerly(self, values: list[Any], maximum_iterations: Any) -> Any:
        limit = None if maximum_iterations is None else int(maximum_iterations)
        done = 0
        # the cond runs before the bound is checked, also on the last test (TensorFlow
        # ANDs the two): a cond with an effect runs once more than the body
        while bool(self.call_cond(values)) and (limit is None or done < limit):
            values = self.call_body(values)
            # a TensorArray that learned its element shape in the body keeps it (its
            # class holds the shape; rebuilt with the old one, it would forget its rows)
            self.tree = _arrays_from(self.body_tree, self.tree)
            done += 1
        return nest.unflatten(self.tree, values)

    # -- traced ----------------------------------------------------------------------
    def trace(self, tensors: list[Any], maximum_iterations: Any, parallel_iterations: int,
              name: str) -> Any:
        n = len(tensors)
        types, names = list(self.types), [_arg_name(p, i) for i, p in enumerate(self.paths)]
        cond_fn: Callable = self.call_cond
        body_fn: Callable = self.call_body
        limit = -1
        if maximum_iterations is not None:
            limit_or_tensor = _static_int(maximum_iterations)
            if limit_or_tensor is None:  # a tensor: count the iterations in a loop variable
                cond_fn, body_fn = self._bounded(convert_to_tensor(maximum_iterations))
                tensors = [*tensors, convert_to_tensor(np.int32(0))]
                types.append(TensorType(int32, ()))
                names.append("iteration")
            else:
                limit = limit_or_tensor
        cond_r = _trace_region("while_cond", cond_fn, types, names)
        if limit >= 0 and _has_effects(cond_r.graph):
            # TensorFlow evaluates the cond and then ANDs it with the bound, so a cond with
            # an effect runs once more than the body (3 times for a bound of 2, eagerly and
            # in graphs alike); the node's static bound would stop before that last run
            body_fn = self._count_in_cond(cond_r, limit)
            tensors = [*tensors, convert_to_tensor(np.int32(0))]
            types.append(TensorType(int32, ()))
            names.append("iteration")
            limit = -1
        body_r = _trace_region("while_body", body_fn, types, names)
        _hoist_reads([cond_r, body_r], together=True)
        outer = _extra_args([cond_r, body_r], len(types))
        body_r.graph.results = body_r.graph.results + body_r.graph.args[len(types):]
        body_r.graph.result_names = [f"result{i}" for i in range(len(body_r.graph.results))]
        attrs = {"parallel_iterations": parallel_iterations, "maximum_iterations": limit}
        outs = add_control_node("While", [*tensors, *outer], attrs, [cond_r.graph, body_r.graph],
                                name, after=_outer_control([cond_r, body_r]))
        return nest.unflatten(self.tree, outs[:n])

    def _count_in_cond(self, cond_r: _Traced, limit: int) -> Callable:
        """Give the traced cond region an iteration argument (after the loop variables)
        and the result ``iteration < limit and cond``; the body to trace with it."""
        from .ops import math
        graph, builder = cond_r.graph, cond_r.builder
        n = len(self.types)
        counter = graph.add_arg(TensorType(int32, ()), "iteration")
        set_args(graph, [*graph.args[:n], counter, *graph.args[n:-1]])
        with building(builder):
            within = math.less(Tensor(counter, builder), np.int32(limit))
            result = math.logical_and(within, Tensor(graph.results[0], builder))
        graph.set_results([result.value])

        def body_fn(flat: list[Any]) -> list[Any]:
            return [*self.call_body(flat[:-1]), flat[-1] + 1]

        return body_fn

    def _bounded(self, limit: Any) -> tuple[Callable, Callable]:
        """cond and body over the loop variables plus an iteration counter that stops the
        loop after `limit` (a tensor) iterations."""
        if limit.dtype.ir_name not in ("i32", "i64") or tuple(limit.shape) != ():
            raise TracingError(f"tw.while_loop: maximum_iterations must be an integer scalar, "
                               f"got {limit.type}", location=_where())
        from .ops import math
        if limit.dtype.ir_name == "i64":  # clamp first: a cast would wrap 2**32 + 2 to 2
            limit = math.minimum(limit, np.int64(_MAX_ITERATIONS))
        limit = math.cast(limit, int32)

        def cond_fn(flat: list[Any]) -> Any:
            return math.logical_and(math.less(flat[-1], limit), self.call_cond(flat[:-1]))

        def body_fn(flat: list[Any]) -> list[Any]:
            return [*self.call_body(flat[:-1]), flat[-1] + 1]

        return cond_fn, body_fn


# ops whose runs cannot be observed (reads), and the region ops judged by their regions
_UNOBSERVABLE = frozenset({"ReadVariable", "VarIsInitialized", "QueueSize", "QueueIsClosed",
                           "AccumulatorNumAccumulated", "NoOp", "If", "While"})


def _has_effects(graph: Graph) -> bool:
    """Whether running `graph` (regions included) can be observed afterwards: it
    updates state, prints, asserts or draws random numbers."""
    return any(get_op(n.op).stateful and n.op not in _UNOBSERVABLE
               for g in _graphs(graph) for n in g.nodes)


def _arrays_from(new: Any, old: Any) -> Any:
    """Structure `old` with the TensorArray classes of `new` (same plain structure)."""
    from .tensor_array import TensorArray
    kind = old[0]
    if kind == "leaf":
        return old
    children = tuple(_arrays_from(n, o) for n, o in zip(_children(new), _children(old)))
    if kind == "namedtuple":
        cls = new[1] if new[0] == "namedtuple" and issubclass(new[1], TensorArray) and \
            issubclass(old[1], TensorArray) else old[1]
        return ("namedtuple", cls, children)
    if kind == "dict":
        return ("dict", old[1], children)
    return (kind, children)


def _children(tree: Any) -> tuple:
    return tree[2] if tree[0] in ("namedtuple", "dict") else tree[1]


def _is_tensor_array(x: Any) -> bool:
    from .tensor_array import TensorArray  # (a tuple subclass: nest sees a namedtuple)
    return isinstance(x, TensorArray)


def _is_float_tensor(x: Any) -> bool:
    return isinstance(x, (Tensor, EagerTensor)) and x.dtype.is_floating


def _arg_name(path: str, index: int) -> str:
    """A region argument name for the loop variable at `path` (its dict key if any)."""
    last = path.rsplit("[", 1)[-1].rstrip("]").strip("'\"")
    return last if last and not last.isdigit() and path != "loop_vars" else f"loop_var{index}"


# The largest iteration bound: loop counters (the bound's own, the gradient's) are int32,
# so a bigger one bounds nothing more and is clamped to this.
_MAX_ITERATIONS = np.iinfo(np.int32).max


def _static_int(value: Any) -> int | None:
    """`value` as a Python int in [0, 2**31 - 1] when it is one (or a concrete array);
    None for a tensor."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return min(max(int(value), 0), _MAX_ITERATIONS)
    if isinstance(value, (np.ndarray, EagerTensor)) and np.ndim(value) == 0:
        return min(max(int(value), 0), _MAX_ITERATIONS)
    return None


def _fits_invariant(shape: tuple, invariant: tuple | None) -> bool:
    if invariant is None or shape.rank is None:
        return True  # (a v1 graph's unknown rank: checked when a Session specializes it)
    return len(shape) == len(invariant) and all(
        i is None or s == i for s, i in zip(shape, invariant))


def _invariant_types(tensors: list[Any], shape_invariants: Any, loop: _Loop) -> list[TensorType]:
    """The loop variables' types: their dtypes with the given (or their own) shapes."""
    if shape_invariants is None:
        shapes = [None] * len(tensors)
    else:
        shapes = _flatten_like(loop.tree, shape_invariants, "shape_invariants")
    types = []
    for t, s, path in zip(tensors, shapes, loop.paths):
        if t.shape.rank is None:  # a v1 graph's tensor of unknown rank: its invariant, if any
            unknown = s is None or getattr(s, "rank", 0) is None
            types.append(TensorType(t.dtype, None if unknown else tuple(
                None if d in (None, -1) else int(d) for d in s)))
            continue
        s = tuple(t.shape) if s is None else tuple(None if d in (None, -1) else int(d) for d in s)
        ok = len(s) == len(t.shape) and all(i is None or i == d for d, i in zip(t.shape, s))
        if not ok:
            raise ShapeError(f"tw.while_loop: the shape invariant {format_shape(s)} of loop "
                             f"variable {path} does not fit its initial shape "
                             f"{format_shape(t.shape)}", location=_where())
        types.append(TensorType(t.dtype, s))
    return types


def _flatten_like(tree: Any, structure: Any, what: str) -> list[Any]:
    """The parts of `structure` at the leaf positions of `tree` (so a shape, itself a
    list, stays whole)."""
    kind = tree[0]
    if kind == "leaf":
        return [structure]
    if kind in ("list", "tuple", "namedtuple"):
        children = tree[1] if kind != "namedtuple" else tree[2]
        if not isinstance(structure, (list, tuple)) or len(structure) != len(children):
            raise TracingError(f"tw.while_loop: {what} must have the structure of loop_vars")
        return [x for c, s in zip(children, structure) for x in _flatten_like(c, s, what)]
    if not isinstance(structure, dict) or set(structure) != set(tree[1]):
        raise TracingError(f"tw.while_loop: {what} must have the structure of loop_vars")
    return [x for k, c in zip(tree[1], tree[2]) for x in _flatten_like(c, structure[k], what)]


def _leaf_paths(structure: Any) -> list[str]:
    """A readable name for each leaf, in `nest.flatten` order: ``loop_vars[1]['h']``."""
    out: list[str] = []

    def go(x: Any, path: str) -> None:
        if nest._is_composite(x):  # (a SparseTensor: one leaf per component, as flatten)
            cls, components = x._tw_components()
            fields = getattr(cls, "_fields", None) or [str(i) for i in range(len(components))]
            for f, v in zip(fields, components):
                go(v, f"{path}.{f}")
        elif isinstance(x, (tuple, list)):
            for i, v in enumerate(x):
                go(v, f"{path}[{i}]")
        elif isinstance(x, dict):
            for k, v in x.items():
                go(v, f"{path}[{k!r}]")
        else:
            out.append(path)

    go(structure, "loop_vars")
    return out


# --------------------------------------------------------------------------- scan, foldl

def scan(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None,
         parallel_iterations: int = 10, back_prop: bool = True, swap_memory: bool = False,
         infer_shape: bool = True, reverse: bool = False, name: str | None = None) -> Any:
    """``a = fn(a, x)`` for each slice ``x`` of `elems` along axis 0, returning every ``a``
    stacked along a new axis 0 (TensorFlow's ``tf.scan``). `elems` may be a nest of
    tensors with the same first dim; `initializer` (default: the first slice, which is
    then also the first output) gives ``a``'s structure, dtypes and shapes. The parameters
    are TensorFlow's, in its order: ``back_prop=False`` stops the gradient at the results;
    `swap_memory` and `infer_shape` (shapes are always inferred) are ignored.

    ``reverse=True`` visits the slices from the last to the first (the default
    initializer is then the last slice); output ``k`` is still the ``a`` computed from
    slice ``k``, so the outputs stay in the order of `elems`, as in TensorFlow."""
    del swap_memory, infer_shape  # no host swapping; shapes are always inferred
    e_flat, e_tree, n, n_static = _elements(elems, "scan")
    a_flat, a_tree, start = _initial(initializer, e_flat, e_tree, n - 1 if reverse else 0)
    from .ops import array
    bufs = [_empty_rows(a, n_static, e_flat[0]) for a in a_flat]

    def row(i: Any) -> Any:
        # the slice visited at step i: i itself, or counted from the end
        return n - 1 - i if reverse else i

    if start:
        bufs = [apply_op1("DynamicUpdateRow", [b, row(np.int32(0)), a])
                for b, a in zip(bufs, a_flat)]

    def body(i: Any, a: list[Any], b: list[Any]) -> tuple:
        k = row(i)
        x = nest.unflatten(e_tree, [array.gather(e, k) for e in e_flat])
        new = _step(fn, a, a_tree, x)
        return i + 1, new, [apply_op1("DynamicUpdateRow", [buf, k, v]) for buf, v in zip(b, new)]

    _, _, bufs = while_loop(lambda i, a, b: i < n, body, (np.int32(start), a_flat, bufs),
                            maximum_iterations=n_static, parallel_iterations=parallel_iterations,
                            back_prop=back_prop, name=name or "scan")
    return nest.unflatten(a_tree, bufs)


def foldl(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None,
          parallel_iterations: int = 10, back_prop: bool = True, swap_memory: bool = False,
          name: str | None = None) -> Any:
    """``a = fn(a, x)`` for each slice ``x`` of `elems` along axis 0, left to right;
    returns the last ``a`` (TensorFlow's ``tf.foldl``, its parameters in its order:
    ``back_prop=False`` stops the gradient, `swap_memory` is ignored). Without
    `initializer` the first slice is the initial ``a``."""
    e_flat, e_tree, n, n_static = _elements(elems, "foldl")
    a_flat, a_tree, start = _initial(initializer, e_flat, e_tree)
    from .ops import array

    def body(i: Any, a: list[Any]) -> tuple:
        x = nest.unflatten(e_tree, [array.gather(e, i) for e in e_flat])
        return i + 1, _step(fn, a, a_tree, x)

    _, a_flat = while_loop(lambda i, a: i < n, body, (np.int32(start), a_flat),
                           maximum_iterations=n_static, parallel_iterations=parallel_iterations,
                           back_prop=back_prop, name=name or "foldl")
    return nest.unflatten(a_tree, a_flat)


def _elements(elems: Any, fn: str) -> tuple[list[Any], Any, Any, int | None]:
    """The flat element tensors, their structure, their count (int or tensor) and the
    count when it is static."""
    leaves, tree = nest.flatten(elems)
    if not leaves:
        raise ValueError(f"tw.{fn}: elems must hold at least one tensor")
    flat = [convert_to_tensor(x) for x in leaves]
    for t in flat:
        if len(t.shape) < 1:
            raise ShapeError(f"tw.{fn}: elems must have rank >= 1 (they are sliced along "
                             f"axis 0), got a scalar", location=_where())
    counts = [t.shape[0] for t in flat]
    known = sorted({c for c in counts if c is not None})
    what = (f"tw.{fn}: the tensors of elems must have the same first dim (the number of "
            f"elements), got shapes {', '.join(format_shape(t.shape) for t in flat)}")
    if len(known) > 1:
        raise ShapeError(what, location=_where())
    if None in counts and len(flat) > 1:
        # a count known only at run time (the loop would drop the other tensors' extra
        # rows without a word): checked before any element is read
        flat = _checked_counts(flat, what)
    if not known:
        from .ops import array
        return flat, tree, array.shape(flat[0])[0], None
    return flat, tree, known[0], known[0]


def _checked_counts(flat: list[Any], message: str) -> list[Any]:
    """`flat` through identities that run after asserting that every tensor has the
    first one's number of rows (built into a TensorFlow 1 graph if they belong to one)."""
    from .ops import array
    from .ops.debugging import assert_equal
    v1 = _v1_builder(flat) if current_builder() is None else None
    with building(v1) if v1 is not None else contextlib.nullcontext():
        first = array.shape(flat[0])[0]
        checks = [assert_equal(array.shape(t)[0], first, message=message) for t in flat[1:]]
        with control_dependencies([c for c in checks if c is not None]):
            return [array.identity(t) for t in flat]


def _initial(initializer: Any, e_flat: list[Any], e_tree: Any,
             first_row: Any = 0) -> tuple[list[Any], Any, int]:
    """The flat initial accumulator (slice `first_row` of the elements when there is no
    `initializer`), its structure and the number of slices it used up (0 or 1)."""
    if initializer is None:
        from .ops import array
        if isinstance(first_row, int):
            first_row = np.int32(first_row)
        first = [array.gather(e, first_row) for e in e_flat]
        return first, e_tree, 1
    leaves, tree = nest.flatten(initializer)
    return [convert_to_tensor(x) for x in leaves], tree, 0


def _step(fn: Callable, a_flat: list[Any], a_tree: Any, x: Any) -> list[Any]:
    """One application of the user's function; checks it keeps the accumulator's structure."""
    out = fn(nest.unflatten(a_tree, list(a_flat)), x)
    leaves, tree = nest.flatten(out)
    if _plain(tree) != _plain(a_tree):
        raise TracingError(f"the function must return the structure of the accumulator "
                           f"({_describe(a_tree)}), it returns {_describe(tree)}",
                           location=_where())
    return [convert_to_tensor(v, dtype_hint=a.dtype) for v, a in zip(leaves, a_flat)]


def _empty_rows(a: Any, n_static: int | None, first: Any) -> Any:
    """Zeros of shape ``[n] + a.shape`` (n: the number of elements, i.e. first.shape[0])."""
    from .ops import array, math
    if n_static is not None and all(d is not None for d in a.shape):
        return array.zeros([n_static, *a.shape], dtype=a.dtype)
    # n or a's shape known only at run time: gather row 0 of [zeros_like(a)] n times.
    index = array.zeros_like(first, dtype=int32)
    if len(first.shape) > 1:
        index = math.reduce_sum(index, axis=list(range(1, len(first.shape))))
    return array.gather(array.expand_dims(array.zeros_like(a), 0), index)


__all__ = ["case", "cond", "foldl", "scan", "while_loop"]
