"""Graph export for people: TensorBoard GraphDefs (read back from the event file with
TensorBoard's reader and checked node by node against the IR) and Graphviz DOT."""

import re

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.cli import concrete_function, load_function, main
from tensorweave.compiler.ir import Graph
from tensorweave.compiler.pipeline import run_pipeline, stage_names
from tensorweave.compiler.types import TensorType

ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
from tensorweave.graph_export import as_ir_graph, graph_def, to_dot  # noqa: E402

TF_DTYPES = {"f32": 1, "f64": 2, "i32": 3, "u8": 4, "i64": 9, "i1": 10}


def read_graph(logdir):
    acc = ea.EventAccumulator(str(logdir))
    acc.Reload()
    assert acc.Tags()["graph"]
    return acc.Graph()


def value_names(graph: Graph, prefix: str = "") -> dict:
    names = {v: prefix + n for v, n in zip(graph.args, graph.arg_names)}
    for node in graph.nodes:
        for v in node.outputs:
            base = prefix + node.name
            names[v] = base if len(node.outputs) == 1 else f"{base}:{v.index}"
    return names


def check_against_ir(gd, graph: Graph, prefix: str = "") -> None:
    """Every IR node (and argument, and result) is a NodeDef with the IR's op, inputs
    (control inputs as ^name), device and output shapes; nothing else is there."""
    nodes = {n.name: n for n in gd.node}
    names = value_names(graph, prefix)
    for v, name in zip(graph.args, graph.arg_names):
        nd = nodes[prefix + name]
        assert nd.op in ("Placeholder", "_Arg")
        assert nd.attr["dtype"].type == TF_DTYPES[v.type.dtype.ir_name]
    for node in graph.nodes:
        nd = nodes[prefix + node.name]
        assert nd.op == node.op
        want = [names[v] for v in node.inputs] + [f"^{prefix}{c.name}" for c in node.control_inputs]
        assert list(nd.input) == want, node
        assert nd.device == (node.assigned_device or node.device or "")
        shapes = nd.attr["_output_shapes"].list.shape
        assert len(shapes) == len(node.outputs)
        for s, v in zip(shapes, node.outputs):
            if isinstance(v.type, TensorType) and v.type.shape is not None:
                assert [d.size for d in s.dim] == [-1 if d is None else d for d in v.type.shape]
        if node.loc is not None:
            assert nd.attr["_source"].s.decode() == str(node.loc)
        for k, region in enumerate(node.regions):
            check_against_ir(gd, region, f"{prefix}{node.name}/{region.name}/")
    if not prefix:
        inner = sum(len(list(n.regions)) and sum(len(r.nodes) + len(r.args) + len(r.results)
                                                 for r in n.regions) for n in graph.walk())
        expected = len(graph.args) + len(graph.nodes) + len(graph.results) + inner
        assert len(gd.node) == expected
        retvals = [n for n in gd.node if n.op == "_Retval" and "/" not in n.name]
        assert [list(n.input) for n in retvals] == [[names[v]] for v in graph.results]


def _model():
    w = tw.Variable(np.ones([3, 2], np.float32), name="dense/kernel")
    step = tw.Variable(np.int64(0), name="step")

    @tw.compile(input_signature=[tw.TensorSpec([None, 3], tw.float32)])
    def f(x):
        with tw.name_scope("dense"):
            y = tw.nn.relu(tw.matmul(x, w))
        z = tw.cond(tw.reduce_sum(y) > 0, lambda: y * 2.0, lambda: y - 1.0)
        _, z = tw.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, v * 0.5), [tw.constant(0), z])
        loss = tw.reduce_mean(z)
        step.assign_add(1)
        with tw.control_dependencies([loss]):
            w.assign_sub(tw.ones_like(w) * 0.1)
        return loss, step.read_value()

    return f


@pytest.mark.parametrize("stage", [s for s in stage_names() if s != "fused"] + ["fused"])
def test_graph_def_matches_the_ir_at_every_stage(stage):
    f = _model()
    graph = run_pipeline(f.get_concrete_function().graph, stage)
    gd = graph_def(graph)
    check_against_ir(gd, graph)
    names = {n.name for n in gd.node}
    if stage == "traced":
        assert {"dense/mat_mul", "dense/relu", "cond/cond_true/mul", "cond/cond_false/sub"} <= names
        assert any(n.op == "While" for n in gd.node)
        assert {"while/while_body/mul", "while/while_cond/less"} <= names
        assert any(i.startswith("^") for n in gd.node for i in n.input)  # control edges
    if stage == "placed":
        assert all(n.device.endswith("CPU:0") for n in gd.node if n.op not in
                   ("Placeholder", "_Retval", "_Arg"))


MODEL = """
import tensorweave as tw

@tw.compile(input_signature=[tw.TensorSpec([None, 4], tw.float32), tw.TensorSpec([4, 3], tw.float32),
                             tw.TensorSpec([None, 3], tw.float32)])
def train_step(x, w, y):
    with tw.name_scope("dense"):
        logits = tw.matmul(x, w)
    loss = tw.reduce_mean(tw.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
    (grad,) = tw.gradients(loss, [w])
    with tw.control_dependencies([loss]):
        new_w = w - 0.1 * grad
    return loss, new_w
"""


@pytest.fixture
def model_file(tmp_path):
    """A model without variables: loading it twice gives the same node names."""
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    return f"{path}:train_step"


def test_dump_format_tensorboard_writes_the_graph_of_a_stage(tmp_path, capsys, model_file):
    code = main(["dump", model_file, "--format", "tensorboard", "--logdir",
                 str(tmp_path / "logs"), "--stage", "placed"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "wrote " in out and str(tmp_path / "logs") in out
    gd = read_graph(tmp_path / "logs")
    cf = concrete_function(load_function(model_file), [])
    check_against_ir(gd, run_pipeline(cf.graph, "placed"))
    assert {"MatMul", "Placeholder", "_Retval"} <= {n.op for n in gd.node}
    assert any(n.name.startswith("dense/") for n in gd.node)
    assert main(["dump", model_file, "--format", "tensorboard"]) == 2
    assert "--logdir" in capsys.readouterr().err


@pytest.mark.parametrize("stage", ["traced", "optimized"])
def test_dump_format_dot_has_every_edge_of_the_ir(capsys, model_file, stage):
    assert main(["dump", model_file, "--format", "dot", "--stage", stage]) == 0
    dot = capsys.readouterr().out
    assert dot.startswith('digraph "train_step" {') and dot.rstrip().endswith("}")
    cf = concrete_function(load_function(model_file), [])
    graph = run_pipeline(cf.graph, stage)
    data = re.findall(r'^\s*"([^"]+)" -> "([^"]+)" \[label=', dot, re.M)
    control = re.findall(r'^\s*"([^"]+)" -> "([^"]+)" \[style=dashed\]', dot, re.M)
    names = {v: (v.producer.name if v.producer else graph.arg_names[v.index])
             for v in value_names(graph)}
    want_data = [(names[v], n.name) for n in graph.nodes for v in n.inputs]
    want_data += [(names[v], f"return:{r}") for v, r in zip(graph.results, graph.result_names)]
    assert sorted(data) == sorted(want_data)
    want_control = [(c.name, n.name) for n in graph.nodes for c in n.control_inputs]
    assert sorted(control) == sorted(want_control)
    if stage == "traced":
        assert want_control  # the control_dependencies edge is drawn
    declared = set(re.findall(r'^\s*"([^"]+)" \[label=', dot, re.M))
    assert {n.name for n in graph.nodes} | set(graph.arg_names) <= declared


def test_dot_groups_name_scopes_into_clusters():
    dot = to_dot(_model())
    assert re.search(r'subgraph cluster_\d+ \{\n\s*label="dense/";', dot)
    assert '"dense/relu" [label="relu\\nRelu"];' in dot


def test_file_writer_and_summary_graph_write_graphs(tmp_path):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        with tf.name_scope("layer"):
            w = tf.Variable(np.zeros([4, 2], np.float32), name="w")
            y = tf.nn.softmax(tf.matmul(x, w))
        with tf.Session() as sess:
            tf.summary.FileWriter(str(tmp_path / "v1"), sess.graph).close()
            ir = sess.graph.ir
            gd = read_graph(tmp_path / "v1")
            check_against_ir(gd, ir)
            assert y.value.producer.name.startswith("layer/")
    f = _model()
    writer = tw.summary.create_file_writer(str(tmp_path / "v2"))
    with writer.as_default():
        assert tw.summary.graph(f)
    writer.close()
    check_against_ir(read_graph(tmp_path / "v2"), f.get_concrete_function().graph)
    assert not tw.summary.graph(f)  # no default writer
    with pytest.raises(TypeError, match="expected a compiled function"):
        as_ir_graph(42)
