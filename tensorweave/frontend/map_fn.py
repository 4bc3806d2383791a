"""Mapping a function over the leading axis: `tw.map_fn`, `tw.vectorized_map`, `tw.vmap`.

`map_fn` is a loop (TensorFlow's ``tf.map_fn``): eagerly a Python loop, traced a
`tw.while_loop` writing one row of each output buffer per element with
``DynamicUpdateRow`` (as `tw.scan` does), so it is differentiable like any loop.

`vectorized_map` batches instead (TensorFlow's pfor): `fn` is traced once, on one
element, into a scratch graph, and every node of it is re-emitted once for the whole
batch. A value that depends on the elements is *batched* (a leading batch axis); one
that does not (constants, captured tensors, variable reads) stays as it is. Each op with
a batched operand needs a batching rule (`_RULES`: elementwise ops broadcast, axes
shift by one, MatMul broadcasts its batch dims ...); if some op has none, or is
stateful, the whole call falls back to `map_fn` and logs why. The emitted ops are
ordinary op calls, so gradients (and eager tapes) see them like any other.

`vmap` is JAX's interface over `vectorized_map`: ``in_axes``/``out_axes`` choose which
axis of each argument and result is the batch axis (None: not batched).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..compiler.dtypes import as_dtype, int32
from ..compiler.ir import Graph, Node, Value
from ..compiler.types import TensorType
from ..errors import DTypeError, InvalidArgumentError, ShapeError, TracingError
from . import nest
from .building import apply_op, apply_op1, convert_to_tensor, user_location
from .context import GraphBuilder, building, current_builder
from .control_flow import _elements, _empty_rows, while_loop
from .tensor import EagerTensor, Tensor
from .variables import Variable

_log = logging.getLogger("tensorweave")


# -------------------------------------------------------------------------------- map_fn

def _signature_leaves(signature: Any) -> list[tuple[Any, tuple | None]] | None:
    """(dtype, shape or None) per output leaf from `fn_output_signature`, or None."""
    if signature is None:
        return None
    from .function import TensorSpec
    leaves, _ = nest.flatten(signature)
    out = []
    for s in leaves:
        if isinstance(s, TensorSpec):
            shape = None if s.shape is None else tuple(s.shape)
            out.append((as_dtype(s.dtype), shape))
        else:
            out.append((as_dtype(s), None))
    return out


def map_fn(fn: Callable[[Any], Any], elems: Any, dtype: Any = None,
           parallel_iterations: int | None = None, back_prop: bool = True,
           swap_memory: bool = False, infer_shape: bool = True, name: str | None = None,
           fn_output_signature: Any = None) -> Any:
    """``fn`` applied to each slice of `elems` along axis 0, the results stacked along a
    new axis 0 (TensorFlow's ``tf.map_fn``).

    `elems` may be a nest of tensors with the same first dim; `fn` takes one element of
    that structure. Its results may be another structure, described (when it differs in
    dtype from `elems`, or `elems` may be empty) by `fn_output_signature` (or the older
    `dtype`): dtypes or `tw.TensorSpec`s. Differentiable: traced, it is a `tw.while_loop`
    (``back_prop=False`` stops the gradient at the results)."""
    del swap_memory, infer_shape  # no host swapping; shapes are always inferred
    if not callable(fn):
        raise DTypeError(f"tw.map_fn: fn must be callable, got {type(fn).__name__}",
                         location=_where())
    if not back_prop:  # TensorFlow's deprecated spelling of stop_gradient on the results
        from .autodiff import stop_gradient
        out = map_fn(fn, elems, dtype, parallel_iterations, True, name=name,
                     fn_output_signature=fn_output_signature)
        leaves, tree = nest.flatten(out)
        return nest.unflatten(tree, [stop_gradient(x) for x in leaves])
    signature = fn_output_signature if fn_output_signature is not None else dtype
    e_flat, e_tree, n, n_static = _elements(elems, "map_fn")
    sig = _signature_leaves(signature)
    if current_builder() is None:
        return _map_eagerly(fn, e_flat, e_tree, n_static, sig, signature)
    from .ops import array

    def element(i: Any) -> Any:
        return nest.unflatten(e_tree, [array.gather(e, i) for e in e_flat])

    if sig is not None and all(s is not None and None not in s for _, s in sig):
        outs, o_tree, start = [], nest.flatten(signature)[1], 0
        # (a count known only at run time makes the rows from a tensor of the row's shape)
        bufs = [_empty_rows(TensorType(d, s) if n_static is not None
                            else array.zeros(list(s), dtype=d), n_static, e_flat[0])
                for d, s in sig]
    else:
        if n_static == 0:
            raise ShapeError("tw.map_fn: elems are empty, so fn_output_signature must give "
                             "the full shape of every output (tw.TensorSpec)",
                             location=_where())
        # the first element's results fix the outputs' structure and shapes
        if n_static is None:
            bufs, o_tree = _first_row_if_any(fn, element, n, e_flat[0], sig)
        else:
            outs, o_tree = _outputs(fn(element(np.int32(0))), sig)
            bufs = [apply_op1("DynamicUpdateRow", [_empty_rows(o, n_static, e_flat[0]),
                                                   np.int32(0), o]) for o in outs]
        start = 1

    def body(i: Any, b: list[Any]) -> tuple:
        got, tree = _outputs(fn(element(i)), sig)
        if _plain(tree) != _plain(o_tree):
            raise TracingError("tw.map_fn: fn must return the same structure for every "
                               "element", location=_where())
        return i + 1, [apply_op1("DynamicUpdateRow", [buf, i, _as(v, buf)])
                       for buf, v in zip(b, got)]

    _, bufs = while_loop(lambda i, b: i < n, body, (np.int32(start), bufs),
                         maximum_iterations=n_static,
                         parallel_iterations=parallel_iterations or 10, name=name or "map")
    return nest.unflatten(o_tree, bufs)


def _first_row_if_any(fn: Callable, element: Callable, n: Any, first: Any,
                      sig: list | None) -> tuple[list[Any], Any]:
    """With a count `n` known only at run time: the output buffers with `fn` of element 0
    in row 0, and the outputs' structure. The first element is mapped inside a
    ``tw.cond(n > 0)``, so an empty batch maps nothing (no gather of a missing row, no
    side effect of `fn`) and gives empty outputs of the shapes `fn`'s trace fixed."""
    from .control_flow import cond
    from .ops import array, math
    from .ops.debugging import assert_equal
    traced: dict[str, Any] = {}

    def some() -> list[Any]:
        outs, traced["tree"] = _outputs(fn(element(np.int32(0))), sig)
        traced["types"] = [o.type for o in outs]
        return [apply_op1("DynamicUpdateRow", [_empty_rows(o, None, first), np.int32(0), o])
                for o in outs]

    def none() -> list[Any]:  # (traced after `some`: tw.cond traces true_fn first)
        types = traced["types"]
        unknown = [k for k, t in enumerate(types) if None in t.shape]
        if unknown:
            # no element gives no shape for dims fn's trace left unknown (TensorFlow:
            # "TensorArray has size zero, but element shape <unknown>")
            assert_equal(n, 1, message=f"tw.map_fn: elems are empty, and the shape of "
                                       f"fn's output {unknown[0]} is known only from an "
                                       f"element; give fn_output_signature with its full "
                                       f"shape (tw.TensorSpec)")
        return [array.zeros([0, *[d or 0 for d in t.shape]], dtype=t.dtype) for t in types]

    bufs = cond(math.greater(n, np.zeros((), convert_to_tensor(n).dtype.np)), some, none,
                name="map_first")
    return list(bufs), traced["tree"]


def _plain(tree: Any) -> Any:
    from .control_flow import _plain as plain
    return plain(tree)


def _as(v: Any, buf: Any) -> Any:
    return convert_to_tensor(v, dtype_hint=buf.dtype)


def _outputs(out: Any, sig: list | None) -> tuple[list[Any], Any]:
    leaves, tree = nest.flatten(out)
    if sig is not None and len(sig) != len(leaves):
        raise TracingError(f"tw.map_fn: fn returns {len(leaves)} tensors but "
                           f"fn_output_signature describes {len(sig)}", location=_where())
    tensors = []
    for k, x in enumerate(leaves):
        want = sig[k][0] if sig is not None else None
        t = convert_to_tensor(x, dtype_hint=want)
        if want is not None and t.dtype is not want:
            raise TracingError(f"tw.map_fn: output {k} of fn is {t.dtype.ir_name}, "
                               f"fn_output_signature says {want.ir_name}", location=_where())
        shape = sig[k][1] if sig is not None else None
        if shape is not None and not (len(shape) == len(t.shape) and all(
                a is None or b is None or a == b for a, b in zip(t.shape, shape))):
            raise ShapeError(f"tw.map_fn: output {k} of fn has shape {list(t.shape)}, "
                             f"fn_output_signature says {list(shape)}", location=_where())
        tensors.append(t)
    return tensors, tree


def _map_eagerly(fn: Callable, e_flat: list[Any], e_tree: Any, n: int, sig: list | None,
                 signature: Any) -> Any:
    from .ops import array
    results: list[list[Any]] = []
    tree = None
    for i in range(n):
        x = nest.unflatten(e_tree, [array.gather(e, np.int32(i)) for e in e_flat])
        got, t = _outputs(fn(x), sig)
        if tree is not None and _plain(t) != _plain(tree):
            raise TracingError("tw.map_fn: fn must return the same structure for every "
                               "element", location=_where())
        tree = t
        results.append(got)
    if n == 0:
        if sig is None or any(s is None or None in s for _, s in sig):
            raise ShapeError("tw.map_fn: elems are empty, so fn_output_signature must give "
                             "the full shape of every output (tw.TensorSpec)",
                             location=_where())
        return nest.unflatten(nest.flatten(signature)[1],
                              [array.zeros([0, *s], dtype=d) for d, s in sig])
    return nest.unflatten(tree, [array.stack([r[k] for r in results])
                                 for k in range(len(results[0]))])


def _where() -> str | None:
    loc = user_location()
    return str(loc) if loc else None


# ------------------------------------------------------------------------ vectorized_map

class _Unbatchable(Exception):
    """Why `fn` cannot be batched (vectorized_map falls back to map_fn)."""


class _ScratchBuilder(GraphBuilder):
    """Traces `fn` on one element: values of enclosing graphs and eager tensors it uses
    become unbatched arguments (`outer`: argument -> the tensor it stands for)."""

    def __init__(self, graph: Graph, parent: GraphBuilder | None) -> None:
        super().__init__(graph, auto_control_deps=True,
                         kind=parent.kind if parent is not None else "function")
        self.parent = parent
        self.outer: dict[Value, Any] = {}
        self._seen: dict[int, Value] = {}

    def _arg_for(self, key: int, t: Any, type_: TensorType) -> Value:
        arg = self._seen.get(key)
        if arg is None:
            arg = self._seen[key] = self.graph.add_arg(type_)
            self.outer[arg] = t
        return arg

    def capture(self, value: Value) -> Value | None:
        if value.graph is self.graph:
            return value
        if self.parent is None or not isinstance(value.type, TensorType):
            return None
        return self._arg_for(id(value), Tensor(value, self.parent), value.type)

    def lift_eager(self, t: EagerTensor) -> Tensor:
        # an eager tensor fn closes over: an argument, so tapes keep tracking it
        return Tensor(self._arg_for(id(t), t, t.type), self)


def vectorized_map(fn: Callable[[Any], Any], elems: Any, fallback_to_while_loop: bool = True,
                   warn: bool = True) -> Any:
    """``fn`` applied to each slice of `elems` along axis 0, computed for all slices at
    once (TensorFlow's ``tf.vectorized_map``): `fn` is traced on one element and each of
    its ops is run once on the whole batch. Ops without a batching rule (or stateful
    ones) make it fall back to `map_fn`, logging the reason (a warning with `warn`);
    with ``fallback_to_while_loop=False`` that is a ValueError instead."""
    if not callable(fn):
        raise DTypeError(f"tw.vectorized_map: fn must be callable, got {type(fn).__name__}",
                         location=_where())
    e_flat, e_tree, _, n_static = _elements(elems, "vectorized_map")
    try:
        return _vectorize(fn, e_flat, e_tree, n_static)
    except _Unbatchable as why:
        message = f"tw.vectorized_map: falling back to tw.map_fn: {why}"
        if not fallback_to_while_loop:
            raise ValueError(message) from None
        _log.log(logging.WARNING if warn else logging.DEBUG, message)
    return map_fn(fn, nest.unflatten(e_tree, e_flat))


def _vectorize(fn: Callable, e_flat: list[Any], e_tree: Any, n_static: int | None) -> Any:
    parent = current_builder()
    graph = Graph("vectorized_map_fn")
    scratch = _ScratchBuilder(graph, parent)
    with building(scratch):
        args = [graph.add_arg(TensorType(e.dtype, tuple(e.shape[1:]))) for e in e_flat]
        try:
            out = fn(nest.unflatten(e_tree, [Tensor(a, scratch) for a in args]))
        except TracingError as e:
            raise _Unbatchable(f"fn could not be traced on one element ({e})") from None
        leaves, o_tree = nest.flatten(out)
        results = [convert_to_tensor(x).value for x in leaves]
    # plan every node first, so that a fallback leaves nothing behind
    batched: dict[Value, bool] = {a: True for a in args}
    for a in scratch.outer:
        batched[a] = False
    plans: list[tuple[Node, Callable | None]] = []
    for node in graph.topological_order():
        flags = [batched.get(v, False) for v in node.inputs]
        plans.append((node, _plan(node, flags, n_static)))
        for v in node.outputs:
            batched[v] = any(flags)
    env: dict[Value, Any] = dict(zip(args, e_flat))
    env.update(scratch.outer)
    for node, emit in plans:
        ins = [env[v] for v in node.inputs]
        if node.op == "VarHandle":
            env[node.outputs[0]] = scratch.variables[node.attrs["shared_name"]]
            continue
        if node.op == "ReadVariable" and isinstance(ins[0], Variable):
            env[node.outputs[0]] = convert_to_tensor(ins[0])
            continue
        if emit is None:
            outs = apply_op(node.op, ins, dict(node.attrs))
        else:
            outs = emit(ins)
        for v, o in zip(node.outputs, outs):
            env[v] = o
    final = []
    for v in results:
        t = env[v]
        final.append(t if batched.get(v, False) else _tile(t, n_static, e_flat[0]))
    return nest.unflatten(o_tree, final)


def _tile(t: Any, n_static: int | None, first: Any) -> Any:
    """An unbatched result repeated for every element."""
    from .ops import array, math
    t = convert_to_tensor(t)
    if n_static is not None and None not in t.shape:
        return array.broadcast_to(array.expand_dims(t, 0), [n_static, *t.shape])
    # the batch size is known only at run time: row 0 of [t], gathered once per element
    index = array.zeros_like(first, dtype=int32)
    if len(first.shape) > 1:
        index = math.reduce_sum(index, axis=list(range(1, len(first.shape))))
    return array.gather(array.expand_dims(t, 0), index)


# ------------------------------------------------------------------------ batching rules

def _rank(v: Value) -> int:
    return len(v.type.shape)


def _axis(a: int, rank: int, what: str) -> int:
    if not -rank <= a < max(rank, 1):
        raise _Unbatchable(f"{what} axis {a} is out of range for rank {rank}")
    return a + rank if a < 0 else a


def _align(x: Any, rank: int, target: int) -> Any:
    """Batched `x` (per-element rank `rank`) with 1s after the batch axis so that its
    per-element rank is `target`: it then broadcasts against unbatched operands."""
    from .ops import array
    for _ in range(target - rank):
        x = array.expand_dims(x, 1)
    return x


def _broadcast_batch(x: Any, n_static: int | None) -> Any:
    """Unbatched `x` repeated along a new batch axis (a static batch size needed)."""
    from .ops import array
    x = convert_to_tensor(x)
    if n_static is None or None in x.shape:
        raise _Unbatchable("an unbatched operand would need repeating for a batch of "
                           "unknown size")
    return array.broadcast_to(array.expand_dims(x, 0), [n_static, *x.shape])


def _plan(node: Node, flags: list[bool], n_static: int | None) -> Callable | None:
    """How to emit `node` for the batch: None (no batched operand: as it is) or a
    function of the emitted operands returning the outputs."""
    op, opdef = node.op, node.opdef
    where = f"op {op}" + (f" ({node.loc})" if node.loc is not None else "")
    if opdef.stateful and op not in ("VarHandle", "ReadVariable"):
        raise _Unbatchable(f"{where} is stateful (it must run once per element)")
    if node.regions:
        raise _Unbatchable(f"{where} has regions (control flow); no batching rule")
    if not any(flags):
        return None
    rule = _RULES.get(op)
    if rule is None:
        if "elementwise" in opdef.tags:
            rule = _elementwise
        elif "reduction" in opdef.tags and "axes" in node.attrs:
            rule = _reduction
        else:
            raise _Unbatchable(f"{where} has no batching rule")
    try:
        return rule(node, flags, n_static)
    except _Unbatchable as e:
        raise _Unbatchable(f"{where}: {e}") from None


def _with(node: Node, **changes: Any) -> dict[str, Any]:
    attrs = {k: v for k, v in node.attrs.items() if not k.startswith("_")}
    attrs.update(changes)
    return attrs


def _elementwise(node: Node, flags: list[bool], n_static: int | None) -> Callable:
    ranks = [_rank(v) for v in node.inputs]
    target = max(ranks)

    def emit(ins: list[Any]) -> list[Any]:
        ins = [_align(x, r, target) if b else x for x, r, b in zip(ins, ranks, flags)]
        return apply_op(node.op, ins, _with(node))
    return emit


def _reduction(node: Node, flags: list[bool], n_static: int | None) -> Callable:
    r = _rank(node.inputs[0])
    axes = node.attrs.get("axes")
    axes = list(range(r)) if axes is None else [_axis(a, r, "reduction") for a in axes]
    attrs = _with(node, axes=tuple(a + 1 for a in axes))
    return lambda ins: apply_op(node.op, ins, attrs)


def _shift_axis(name: str, rank_of: Callable[[Node], int]) -> Callable:
    def rule(node: Node, flags: list[bool], n_static: int | None) -> Callable:
        if not all(flags[:1]) or any(flags[1:]):
            raise _Unbatchable("only its first operand may be batched")
        a = _axis(node.attrs[name], rank_of(node), name)
        attrs = _with(node, **{name: a + 1})
        return lambda ins: apply_op(node.op, ins, attrs)
    return rule


def _matmul(node: Node, flags: list[bool], n_static: int | None) -> Callable:
    ranks = [_rank(v) for v in node.inputs]
    target = max(ranks)

    def emit(ins: list[Any]) -> list[Any]:
        ins = [_align(x, r, target) if b else x for x, r, b in zip(ins, ranks, flags)]
        return apply_op("MatMul", ins, _with(node))
    return emit


def _transpose(node: Node, flags: list[bool], n_static: int | None) -> Callable:
    attrs = _with(node, perm=(0, *(p + 1 for p in node.attrs["perm"])))
    return lambda ins: apply_op("Transpose", ins, attrs)


def _reshape(node: Node, flags: list[bool], n_static: int | None) -> Callable:
    shape = tuple(node.attrs["shape"])
    if -1 in shape:
        if n_static is None:
            raise _Unbatchable("a -1 in the shape needs a static batch size")
        lead = n_static
    else:
        lead = -1
    attrs = _with(node, shape=(lead, *shape))
    return lambda ins: apply_op("Reshape", ins, attrs)


def _squeeze(node: Node, flags: list[bool], n_static: int | None) -> Callable:
    shape = node.inputs[0].type.shape
    axes = node.attrs.get("axes") or ()
    if not axes:
        if None in shape:
            raise _Unbatchable("squeezing every size-1 dim of a shape not known statically")
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    attrs = _with(node, axes=tuple(_axis(a, len(shape), "squeeze") + 1 for a in axes))
    return lambda ins: apply_op("Squeeze", ins, attrs)


def _concat_like(name: str, extra: int) -> Callable:
    def rule(node: Node, flags: list[bool], n_static: int | None) -> Callable:
        r = _rank(node.inputs[0]) + extra
        attrs = _with(node, axis=_axis(node.attrs[name], r, name) + 1)

        def emit(ins: list[Any]) -> list[Any]:
            ins = [x if b else _broadcast_batch(x, n_static) for x, b in zip(ins, flags)]
            return apply_op(node.op, ins, attrs)
        return emit
    return rule


def _gather(node: Node, flags: list[bool], n_static: int | None) -> Callable:
    if node.attrs.get("batch_dims", 0) != 0:
        raise _Unbatchable("batch_dims != 0")
    axis = _axis(node.attrs.get("axis", 0), _rank(node.inputs[0]), "gather")
    params_b, indices_b = flags
    if params_b and not indices_b:
        attrs = _with(node, axis=axis + 1)
        return lambda ins: apply_op("Gather", ins, attrs)
    if indices_b and not params_b and axis == 0:
        return lambda ins: apply_op("Gather", ins, _with(node))
    raise _Unbatchable("batched indices (with batched params or axis != 0)")


def _strided_slice(node: Node, flags: list[bool], n_static: int | None) -> Callable:
    a = node.attrs
    attrs = _with(node, begin=(0, *a["begin"]), end=(0, *a["end"]), strides=(1, *a["strides"]),
                  begin_mask=(a["begin_mask"] << 1) | 1, end_mask=(a["end_mask"] << 1) | 1,
                  ellipsis_mask=a["ellipsis_mask"] << 1, new_axis_mask=a["new_axis_mask"] << 1,
                  shrink_axis_mask=a["shrink_axis_mask"] << 1)
    return lambda ins: apply_op("StridedSlice", ins, attrs)


def _slice(node: Node, flags: list[bool], n_static: int | None) -> Callable:
    attrs = _with(node, begin=(0, *node.attrs["begin"]), size=(-1, *node.attrs["size"]))
    return lambda ins: apply_op("Slice", ins, attrs)


def _tile_rule(node: Node, flags: list[bool], n_static: int | None) -> Callable:
    attrs = _with(node, multiples=(1, *node.attrs["multiples"]))
    return lambda ins: apply_op("Tile", ins, attrs)


def _pad(node: Node, flags: list[bool], n_static: int | None) -> Callable:
    attrs = _with(node, paddings=(0, 0, *node.attrs["paddings"]))
    return lambda ins: apply_op("Pad", ins, attrs)


def _broadcast_to(node: Node, flags: list[bool], n_static: int | None) -> Callable:
    if n_static is None:
        raise _Unbatchable("broadcasting needs a static batch size")
    shape = tuple(node.attrs["shape"])
    r = _rank(node.inputs[0])
    attrs = _with(node, shape=(n_static, *shape))
    return lambda ins: apply_op("BroadcastTo", [_align(ins[0], r, len(shape))], attrs)


def _one_hot(node: Node, flags: list[bool], n_static: int | None) -> Callable:
    a = node.attrs["axis"]
    if a != -1:
        a = _axis(a, _rank(node.inputs[0]) + 1, "one_hot") + 1
    attrs = _with(node, axis=a)
    return lambda ins: apply_op("OneHot", ins, attrs)


def _roll(node: Node, flags: list[bool], n_static: int | None) -> Callable:
    r = _rank(node.inputs[0])
    attrs = _with(node, axis=tuple(_axis(a, r, "roll") + 1 for a in node.attrs["axis"]))
    return lambda ins: apply_op("Roll", ins, attrs)


def _shape(node: Node, flags: list[bool], n_static: int | None) -> Callable:
    def emit(ins: list[Any]) -> list[Any]:
        from .ops import array
        return [array.shape(ins[0], out_type=node.attrs["out_type"])[1:]]
    return emit


def _bias_add(node: Node, flags: list[bool], n_static: int | None) -> Callable:
    if flags[1] or _rank(node.inputs[0]) < 2:
        raise _Unbatchable("a batched bias (or a rank-1 value)")
    return lambda ins: apply_op("BiasAdd", ins, _with(node))


_RULES: dict[str, Callable] = {
    "MatMul": _matmul,
    "Transpose": _transpose,
    "Reshape": _reshape,
    "Squeeze": _squeeze,
    "ExpandDims": _shift_axis("axis", lambda n: _rank(n.inputs[0]) + 1),
    "Softmax": _shift_axis("axis", lambda n: _rank(n.inputs[0])),
    "LogSoftmax": _shift_axis("axis", lambda n: _rank(n.inputs[0])),
    "ArgMax": _shift_axis("axis", lambda n: _rank(n.inputs[0])),
    "ArgMin": _shift_axis("axis", lambda n: _rank(n.inputs[0])),
    "ArgSort": _shift_axis("axis", lambda n: _rank(n.inputs[0])),
    "Cumsum": _shift_axis("axis", lambda n: _rank(n.inputs[0])),
    "Cumprod": _shift_axis("axis", lambda n: _rank(n.inputs[0])),
    "Split": _shift_axis("axis", lambda n: _rank(n.inputs[0])),
    "Unpack": _shift_axis("axis", lambda n: _rank(n.inputs[0])),
    "Roll": _roll,
    "Concat": _concat_like("axis", 0),
    "Pack": _concat_like("axis", 1),
    "Gather": _gather,
    "StridedSlice": _strided_slice,
    "Slice": _slice,
    "Tile": _tile_rule,
    "Pad": _pad,
    "BroadcastTo": _broadcast_to,
    "OneHot": _one_hot,
    "Shape": _shape,
    "BiasAdd": _bias_add,
}


# -------------------------------------------------------------------------------- vmap

def vmap(fn: Callable, in_axes: Any = 0, out_axes: Any = 0) -> Callable:
    """JAX's ``vmap``: a function that maps `fn` over an axis of its arguments, batched
    with `vectorized_map`. `in_axes` is an int (every argument), or one int or None per
    positional argument (None: the argument is not mapped; an int applies to every
    tensor of a nested argument); `out_axes` an int or one per result leaf."""
    if not callable(fn):
        raise DTypeError(f"tw.vmap: fn must be callable, got {type(fn).__name__}",
                         location=_where())

    def mapped(*args: Any) -> Any:
        axes = list(in_axes) if isinstance(in_axes, (list, tuple)) else [in_axes] * len(args)
        if len(axes) != len(args):
            raise ShapeError(f"tw.vmap: in_axes has {len(axes)} entries for {len(args)} "
                             f"arguments", location=_where())
        mapped_leaves: list[Any] = []
        trees: list[Any] = []
        for x, ax in zip(args, axes):
            if ax is None:
                trees.append(None)
                continue
            leaves, tree = nest.flatten(x)
            trees.append(tree)
            for leaf in leaves:
                t = convert_to_tensor(leaf)
                mapped_leaves.append(_move_axis(t, _vmap_axis(ax, len(t.shape)), 0))
        if not mapped_leaves:
            raise InvalidArgumentError(f"tw.vmap: in_axes maps no argument (in_axes="
                                       f"{in_axes!r})", location=_where())
        sizes = {t.shape[0] for t in mapped_leaves if t.shape[0] is not None}
        if len(sizes) > 1:
            raise ShapeError(f"tw.vmap: the mapped axes have different sizes {sorted(sizes)}",
                             location=_where())

        def one(flat: Sequence[Any]) -> Any:
            it = iter(flat)
            call = []
            for x, tree in zip(args, trees):
                if tree is None:
                    call.append(x)
                else:
                    n = len(nest.flatten(x)[0])
                    call.append(nest.unflatten(tree, [next(it) for _ in range(n)]))
            return fn(*call)

        out = vectorized_map(one, mapped_leaves)
        leaves, tree = nest.flatten(out)
        o_axes = list(out_axes) if isinstance(out_axes, (list, tuple)) else \
            [out_axes] * len(leaves)
        if len(o_axes) != len(leaves):
            raise ShapeError(f"tw.vmap: out_axes has {len(o_axes)} entries for "
                             f"{len(leaves)} results", location=_where())
        moved = []
        for t, ax in zip(leaves, o_axes):
            t = convert_to_tensor(t)
            moved.append(_move_axis(t, 0, _vmap_axis(ax, len(t.shape))))
        return nest.unflatten(tree, moved)

    return mapped


def _vmap_axis(ax: Any, rank: int) -> int:
    if not isinstance(ax, (int, np.integer)) or isinstance(ax, bool):
        raise DTypeError(f"tw.vmap: an axis must be an int or None, got {ax!r}", location=_where())
    if not -rank <= ax < rank:
        raise ShapeError(f"tw.vmap: axis {ax} is out of range for rank {rank}", location=_where())
    return int(ax) + rank if ax < 0 else int(ax)


def _move_axis(t: Any, src: int, dst: int) -> Any:
    if src == dst:
        return t
    from .ops import array
    perm = [i for i in range(len(t.shape)) if i != src]
    perm.insert(dst, src)
    return array.transpose(t, perm)


__all__ = ["map_fn", "vectorized_map", "vmap"]
