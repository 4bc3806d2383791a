"""Graphs for people to look at: TensorBoard's ``GraphDef`` and Graphviz DOT.

`graph_def(graph)` turns an IR graph (any pipeline stage) into the ``GraphDef`` proto that
TensorBoard's graphs dashboard reads: one ``NodeDef`` per node, named with its name-scope
path (``layer1/matmul``: TensorBoard groups by ``/``), its op, its inputs as TensorFlow
spells them (``node``, ``node:1``, ``^node`` for control inputs), its device, and
attributes: the op's own (small tensors only), ``T``/``dtype``, ``_output_shapes`` and
``_source`` (the user's file:line). Graph arguments are ``Placeholder`` nodes and results
``_Retval`` nodes; the nodes of an If/While region are nested under the region's op
(``cond/then/...``), their arguments fed by the op's inputs.

`to_dot(graph)` writes Graphviz DOT text with one cluster per name scope (no dependency:
render it with ``dot -Tsvg``).

    tensorweave dump model.py:train_step --format tensorboard --logdir logs [--stage placed]
    tensorweave dump model.py:train_step --format dot -o step.dot
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .compiler.dtypes import DType
from .compiler.ir import Graph, Node, Value
from .compiler.types import ResourceType, TensorType
from .runtime import summary_io

_TF_TYPES = {"float16": "DT_HALF", "bfloat16": "DT_BFLOAT16", "float32": "DT_FLOAT",
             "float64": "DT_DOUBLE", "int8": "DT_INT8", "int16": "DT_INT16",
             "int32": "DT_INT32", "int64": "DT_INT64", "uint8": "DT_UINT8", "bool": "DT_BOOL"}
_SMALL_TENSOR = 64  # Const values up to this many elements go into the GraphDef


def _tb(what: str = "exporting a graph for TensorBoard") -> Any:
    return summary_io.require_tensorboard(what)


def as_ir_graph(obj: Any, stage: str | None = None) -> Graph:
    """The IR graph of `obj` after pipeline stage `stage` (default: as traced): a
    ``@tw.compile`` function (traced for its input signature), a ConcreteFunction, a v1
    ``Graph`` or an IR graph."""
    from .compiler.pipeline import run_pipeline
    from .frontend.function import ConcreteFunction, Function

    if isinstance(obj, Function):
        obj = obj.get_concrete_function()
    if isinstance(obj, ConcreteFunction):
        obj = obj.graph
    if not isinstance(obj, Graph) and isinstance(getattr(obj, "ir", None), Graph):
        obj = obj.ir  # a compat.v1 Graph
    if not isinstance(obj, Graph):
        raise TypeError(f"expected a compiled function, ConcreteFunction, tf.Graph or IR "
                        f"graph, got {type(obj).__name__}")
    return run_pipeline(obj, stage) if stage not in (None, "traced") else obj


def as_graph_def(obj: Any, stage: str | None = None) -> Any:
    """`obj` as a ``GraphDef``: a GraphDef is returned as it is, anything `as_ir_graph`
    takes is exported."""
    graph_pb2 = _tb().graph_pb2
    if isinstance(obj, graph_pb2.GraphDef):
        return obj
    return graph_def(as_ir_graph(obj, stage))


# ------------------------------------------------------------------ GraphDef

class _Names:
    """TensorFlow names for values, nested regions prefixed with their op's path."""

    def __init__(self) -> None:
        self.values: dict[Value, str] = {}
        self.nodes: dict[Node, str] = {}

    def value(self, v: Value) -> str:
        return self.values[v]


def _walk(graph: Graph, prefix: str, names: _Names, outer_inputs: list[str] | None
          ) -> Iterator[tuple[str, str, list[str], Node | None, Value | None, str | None]]:
    """(name, op, inputs, node, arg value, device) for every node to export, in order."""
    for i, (v, arg_name) in enumerate(zip(graph.args, graph.arg_names)):
        name = prefix + arg_name
        names.values[v] = name
        ins = [outer_inputs[i]] if outer_inputs is not None and i < len(outer_inputs) else []
        yield name, "Placeholder" if outer_inputs is None else "_Arg", ins, None, v, None
    for node in graph.nodes:
        name = prefix + node.name
        names.nodes[node] = name
        for v in node.outputs:
            names.values[v] = name if len(node.outputs) == 1 else f"{name}:{v.index}"
        ins = [names.value(v) for v in node.inputs]
        ins += [f"^{names.nodes[c]}" for c in node.control_inputs if c in names.nodes]
        yield name, node.op, ins, node, None, node.assigned_device or node.device
        for k, region in enumerate(node.regions):
            sub = f"{name}/{region.name or f'region{k}'}/"
            region_ins = ins[:len(node.inputs)]
            # a region's arguments are the op's last inputs (the If's predicate comes first)
            region_ins = region_ins[len(region_ins) - len(region.args):] if region.args else []
            yield from _walk(region, sub, names, region_ins)
            taken = {sub + n.name for n in region.nodes} | {sub + a for a in region.arg_names}
            for j, r in enumerate(region.results):
                yield (_result_name(region, j, sub, taken), "_Retval", [names.value(r)], None,
                       None, None)


def _result_name(graph: Graph, j: int, prefix: str, taken: set[str]) -> str:
    """A name for result `j` of `graph` that no node of it has."""
    name = prefix + (graph.result_names[j] if j < len(graph.result_names) else f"result{j}")
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def graph_def(graph: Graph) -> Any:
    """`graph` as a TensorBoard ``GraphDef`` (see the module docstring)."""
    tb = _tb()
    out = tb.graph_pb2.GraphDef()
    names = _Names()
    for name, op, inputs, node, arg, device in _walk(graph, "", names, None):
        nd = out.node.add(name=name, op=op, input=inputs, device=device or "")
        if node is not None:
            _node_attrs(tb, nd, node)
            types = [v.type for v in node.outputs]
        elif arg is not None:
            types = [arg.type]
            if isinstance(arg.type, TensorType):
                nd.attr["dtype"].type = _dtype_enum(tb, arg.type.dtype)
                nd.attr["shape"].shape.CopyFrom(_shape_proto(tb, arg.type))
        else:
            types = []
        if types:
            nd.attr["_output_shapes"].list.shape.extend(_shape_proto(tb, t) for t in types)
    taken = {n.name for n in out.node}
    for i, v in enumerate(graph.results):
        out.node.add(name=_result_name(graph, i, "", taken), op="_Retval", input=[names.value(v)])
    out.versions.producer = 27  # a GraphDef version TensorBoard accepts without warnings
    return out


def _dtype_enum(tb: Any, dtype: DType) -> int:
    return tb.types_pb2.DataType.Value(_TF_TYPES[dtype.tf_name])


def _shape_proto(tb: Any, t: Any) -> Any:
    shape = tb.tensor_shape_pb2.TensorShapeProto()
    if isinstance(t, TensorType):
        if t.shape is None:
            shape.unknown_rank = True
        else:
            shape.dim.extend(tb.tensor_shape_pb2.TensorShapeProto.Dim(size=-1 if d is None else d)
                             for d in t.shape)
    return shape


def _node_attrs(tb: Any, nd: Any, node: Node) -> None:
    first = node.outputs[0].type if node.outputs else None
    if isinstance(first, TensorType):
        nd.attr["T"].type = _dtype_enum(tb, first.dtype)
    elif isinstance(first, ResourceType):
        nd.attr["T"].type = tb.types_pb2.DT_RESOURCE
    if node.loc is not None:
        nd.attr["_source"].s = str(node.loc).encode()
    for key, value in node.attrs.items():
        if key.startswith("_"):
            continue
        a = _attr_value(tb, value)
        if a is not None:
            nd.attr[key].CopyFrom(a)


def _attr_value(tb: Any, value: Any) -> Any:
    """An ``AttrValue`` for an IR attribute, or None for kinds TensorBoard cannot show."""
    av = tb.attr_value_pb2.AttrValue()
    if isinstance(value, (bool, np.bool_)):
        av.b = bool(value)
    elif isinstance(value, (int, np.integer)):
        av.i = int(value)
    elif isinstance(value, (float, np.floating)):
        av.f = float(value)
    elif isinstance(value, str):
        av.s = value.encode()
    elif isinstance(value, DType):
        av.type = _dtype_enum(tb, value)
    elif isinstance(value, np.ndarray):
        av.tensor.CopyFrom(_tensor_proto(tb, value))
    elif isinstance(value, TensorType):
        av.shape.CopyFrom(_shape_proto(tb, value))
    elif isinstance(value, tuple) and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool)
                                          for x in value):
        av.list.i.extend(int(x) for x in value)
    elif isinstance(value, tuple) and all(isinstance(x, float) for x in value):
        av.list.f.extend(value)
    elif isinstance(value, tuple) and all(isinstance(x, str) for x in value):
        av.list.s.extend(x.encode() for x in value)
    elif value is None:
        return None
    else:
        av.s = repr(value)[:200].encode()
    return av


def _tensor_proto(tb: Any, arr: np.ndarray) -> Any:
    from .compiler.dtypes import as_dtype
    tp = tb.tensor_pb2.TensorProto(dtype=_dtype_enum(tb, as_dtype(arr.dtype)))
    tp.tensor_shape.dim.extend(tb.tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in arr.shape)
    if arr.size <= _SMALL_TENSOR:
        tp.tensor_content = np.ascontiguousarray(arr).tobytes()
    return tp


def write_graph(logdir: str, obj: Any, stage: str | None = None) -> str:
    """Write `obj`'s graph (see `as_graph_def`) as a new event file in `logdir` for
    TensorBoard; returns the file's path."""
    import os
    writer = summary_io.EventWriter(logdir, filename_suffix=".graph")
    writer.add_graph_def(as_graph_def(obj, stage), step=0)
    writer.close()
    files = [os.path.join(logdir, f) for f in os.listdir(logdir) if f.endswith(".graph")]
    return max(files, key=os.path.getmtime)


# ------------------------------------------------------------------ DOT

def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(obj: Any, stage: str | None = None) -> str:
    """Graphviz DOT text of `obj`'s graph (anything `as_ir_graph` takes): a box per node
    labelled name and op, a cluster per name scope, data edges labelled with the value's
    type, control edges dashed."""
    graph = as_ir_graph(obj, stage)
    names = _Names()
    nodes = list(_walk(graph, "", names, None))
    lines = [f"digraph {_quote(graph.name)} {{", "  rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fillcolor="#f5f5f5", fontsize=10];',
             "  edge [fontsize=8];"]
    tree: dict[str, Any] = {}
    for name, op, *_ in nodes:
        parts = name.split("/")
        t = tree
        for p in parts[:-1]:
            t = t.setdefault(p + "/", {})
        t[name] = op
    counter = iter(range(1 << 30))

    def emit(t: dict[str, Any], indent: str, path: str) -> None:
        for key, sub in t.items():
            if isinstance(sub, dict):
                lines.append(f"{indent}subgraph cluster_{next(counter)} {{")
                lines.append(f"{indent}  label={_quote(path + key)};")
                emit(sub, indent + "  ", path + key)
                lines.append(f"{indent}}}")
            else:
                short = key.rsplit("/", 1)[-1]
                lines.append(f"{indent}{_quote(key)} [label={_quote(short + chr(10) + sub)}];")

    emit(tree, "  ", "")
    types = {name: v.type for v, name in names.values.items()}
    for name, _op, inputs, *_ in nodes:
        for inp in inputs:
            if inp.startswith("^"):
                lines.append(f"  {_quote(inp[1:])} -> {_quote(name)} [style=dashed];")
            else:
                src = inp.rsplit(":", 1)[0] if inp not in {n for n, *_ in nodes} else inp
                label = str(types[inp]) if inp in types else ""
                lines.append(f"  {_quote(src)} -> {_quote(name)} [label={_quote(label)}];")
    for i, v in enumerate(graph.results):
        rname = graph.result_names[i] if i < len(graph.result_names) else f"result{i}"
        lines.append(f"  {_quote('return:' + rname)} [shape=ellipse, label={_quote(rname)}];")
        src = names.value(v)
        src = src.rsplit(":", 1)[0] if src not in {n for n, *_ in nodes} else src
        lines.append(f"  {_quote(src)} -> {_quote('return:' + rname)} "
                     f"[label={_quote(str(v.type))}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


__all__ = ["as_graph_def", "as_ir_graph", "graph_def", "to_dot", "write_graph"]
