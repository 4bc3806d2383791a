"""The partition pass: one Send/Recv pair per (tensor, destination device), control edges
across devices, captured values of regions, `split_by_device`, the Send/Recv kernels and
``tensorweave dump --stage partitioned``.

The multi-device executor is tested elsewhere; here a small sequential interpreter
(`run_partitioned`) checks that the rewritten graph still computes the same results."""

import types
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.cli import main
from tensorweave.compiler import Graph, TensorType
from tensorweave.compiler.equality import graph_diff
from tensorweave.compiler.parser import parse_graph
from tensorweave.compiler.registry import all_ops, def_op, get_op
from tensorweave.compiler.verifier import verify
from tensorweave.errors import CompileError, OpError
from tensorweave.passes.partition import partition, split_by_device, transfer_key
from tensorweave.passes.placement import place
from tensorweave.runtime.kernel_context import CallCounters
from tensorweave.runtime.resources import ResourceManager
from tensorweave.targets.reference.executor import ReferenceExecutable, run_kernel

F32 = np.float32
LOCAL = "/job:localhost/replica:0/task:0"
CPUS = [f"{LOCAL}/device:CPU:{i}" for i in range(4)]


def f32(*shape):
    return TensorType("f32", shape)


def _call_op():
    op = get_op("PlacementTestCall") if "PlacementTestCall" in all_ops() else def_op(
        "PlacementTestCall", inputs=["*args"], num_regions=1)
    if op.infer_fn is None:
        op.infer(lambda *args, regions: [v.type for v in regions[0].results])


_call_op()


def ops(g):
    return Counter(n.op for n in g.nodes)


def short(device):
    return device.rsplit("/device:", 1)[1]


def cross_edges(g):
    """(value, destination) data pairs and (node, destination) control pairs that cross
    devices in a placed graph."""
    data, control = set(), set()
    for n in g.nodes:
        for v in n.inputs:
            if v.producer is not None and v.producer.assigned_device != n.assigned_device:
                data.add((v.name, n.assigned_device))
        for c in n.control_inputs:
            if c.assigned_device != n.assigned_device:
                control.add((c.name, n.assigned_device))
    return data, control


class Mailbox:
    """A rendezvous for one thread: send stores, recv takes."""

    def __init__(self):
        self.table = {}

    def send(self, key, value):
        assert key not in self.table, f"two sends under {key}"
        self.table[key] = value

    def recv(self, key):
        return self.table.pop(key)


def run_partitioned(g, *args, step_id=3):
    """Evaluate a partitioned graph one node at a time, a Recv only once its Send ran."""
    ctx = types.SimpleNamespace(rendezvous=Mailbox(), step_id=step_id)
    env = dict(zip(g.args, [np.asarray(a) for a in args]))
    done, pending = set(), list(g.topological_order())
    while pending:
        ready = [n for n in pending if all(v in env for v in n.inputs)
                 and all(c in done for c in n.control_inputs)
                 and (n.op != "Recv" or f"{n.attrs['key']};{step_id}" in ctx.rendezvous.table)]
        assert ready, f"stuck before {[n.name for n in pending]}"
        for n in ready:
            attrs = {k: v for k, v in n.attrs.items() if not k.startswith("_")}
            if n.op in ("Send", "Recv"):
                outs = n.opdef.kernels["reference"].fn(ctx, *[env[v] for v in n.inputs], **attrs)
                outs = [outs] if n.op == "Recv" else []
            else:
                outs = run_kernel(n, [env[v] for v in n.inputs], ResourceManager(), CallCounters())
            env.update(zip(n.outputs, outs))
            done.add(n)
            pending.remove(n)
    assert not ctx.rendezvous.table, "a Send nobody received"
    return [env[v] for v in g.results]


# --------------------------------------------------------------- one pair per edge

def _fanout_graph():
    """``p`` on CPU:0 read by five nodes on CPU:1, three on CPU:2 and one on CPU:0."""
    g = Graph("fanout")
    x = g.add_arg(f32(3), "x")
    p = g.add_node("Neg", [x], name="p", device="/cpu:0").outputs[0]
    outs = []
    for dev, count in (("/cpu:1", 5), ("/cpu:2", 3), ("/cpu:0", 1)):
        for i in range(count):
            op = ("Abs", "Exp", "Sin")[i % 3]
            outs.append(g.add_node(op, [p], name=f"use_{dev[-1]}_{i}", device=dev).outputs[0])
    g.set_results(outs)
    return g


def test_one_send_recv_pair_per_tensor_and_destination_device():
    g = _fanout_graph()
    place(g, CPUS[:3])
    partition(g)
    verify(g)
    assert ops(g)["Send"] == 2 and ops(g)["Recv"] == 2
    sends = {short(n.attrs["recv_device"]): n for n in g.nodes if n.op == "Send"}
    recvs = {short(n.assigned_device): n for n in g.nodes if n.op == "Recv"}
    for dev in ("CPU:1", "CPU:2"):
        send, recv = sends[dev], recvs[dev]
        assert send.inputs[0].name == "p" and short(send.assigned_device) == "CPU:0"
        assert send.attrs["key"] == recv.attrs["key"] == transfer_key(CPUS[0], "p", recv.assigned_device)
        assert (recv.attrs["send_device"], recv.attrs["recv_device"]) == (CPUS[0], recv.assigned_device)
        assert (recv.attrs["dtype"].ir_name, recv.attrs["shape"]) == ("f32", (3,))
        users = [n for n in g.nodes if n.name.startswith(f"use_{dev[-1]}_")]
        assert users and all(n.inputs == [recv.outputs[0]] for n in users)
    assert g.node_by_name("use_0_0").inputs[0].name == "p"
    x = np.array([1.0, -2.0, 0.5], F32)
    assert all(np.array_equal(a, b) for a, b in zip(run_partitioned(g, x),
                                                    ReferenceExecutable(_fanout_graph())(x)))


def test_partitioning_twice_changes_nothing():
    g = _fanout_graph()
    place(g, CPUS[:3])
    partition(g)
    before = str(g)
    partition(g)
    assert str(g) == before


def test_a_graph_on_one_device_gets_no_transfers():
    g = _fanout_graph()
    place(g, CPUS[:1])
    partition(g)
    assert "Send" not in ops(g) and "Recv" not in ops(g)


# -------------------------------------------------------------------- random graphs

UNARY, BINARY = ("Neg", "Abs", "Exp", "Sin"), ("Add", "Mul", "Sub")


@st.composite
def placed_graphs(draw):
    """Random DAGs over f32[2] values with random device requests and control edges."""
    g = Graph("random")
    values = [g.add_arg(f32(2), f"x{i}") for i in range(draw(st.integers(1, 3)))]
    nodes = []
    for i in range(draw(st.integers(1, 12))):
        binary = draw(st.booleans())
        op = draw(st.sampled_from(BINARY if binary else UNARY))
        inputs = [draw(st.sampled_from(values)) for _ in range(2 if binary else 1)]
        controls = draw(st.lists(st.sampled_from(nodes), max_size=2, unique=True)) if nodes else []
        device = draw(st.none() | st.sampled_from(["/cpu:0", "/cpu:1", "/cpu:2"]))
        node = g.add_node(op, inputs, name=f"n{i}", control_inputs=controls, device=device)
        nodes.append(node)
        values.append(node.outputs[0])
    g.set_results(draw(st.lists(st.sampled_from(values), min_size=1, max_size=4)))
    return g


@given(placed_graphs(), st.integers(0, 2**16))
def test_random_graphs_partition_into_verified_subgraphs_with_one_pair_per_edge(g, seed):
    original = g.copy()
    place(g, CPUS[:3])
    data, control = cross_edges(g)
    names = {n.name for n in g.nodes}
    partition(g)
    verify(g)
    assert cross_edges(g) == (set(), set())
    assert ops(g)["Send"] == ops(g)["Recv"] == len(data) + len(control)
    assert ops(g)["Const"] == len(control)  # one dummy token per (node, destination)
    keys = [n.attrs["key"] for n in g.nodes if n.op == "Send"]
    assert len(set(keys)) == len(keys)
    assert sorted(keys) == sorted(n.attrs["key"] for n in g.nodes if n.op == "Recv")
    assert {k.split(";")[1] for k in keys} == {v for v, _ in data} | {f"^{c}" for c, _ in control}

    parts = split_by_device(g)
    seen = []
    for device, part in parts.items():
        verify(part.graph)
        assert all(n.assigned_device == device for n in part.graph.nodes)
        assert part.arg_indices == sorted(part.arg_indices)
        assert part.graph.arg_names == [g.arg_names[i] for i in part.arg_indices]
        for r, i in zip(part.graph.results, part.result_indices):
            assert r.name == g.results[i].name and part.graph.result_names[part.result_indices.index(i)] \
                == g.result_names[i]
        seen += [n.name for n in part.graph.nodes]
    assert sorted(seen) == sorted(n.name for n in g.nodes) and names <= set(seen)
    assert sorted(i for p in parts.values() for i in p.result_indices) == list(range(len(g.results)))

    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(2).astype(F32) for _ in g.args]
    expected = ReferenceExecutable(original)(*args)
    for got, want in zip(run_partitioned(g, *args), expected):
        assert np.array_equal(got, want, equal_nan=True)


# ------------------------------------------------------------------ control edges

def test_control_edges_across_devices_go_through_a_token_pair():
    g = Graph("ctrl")
    x = g.add_arg(f32(2), "x")
    a = g.add_node("Neg", [x], name="a", device="/cpu:0")
    b = g.add_node("Abs", [x], name="b", device="/cpu:1", control_inputs=[a])
    c = g.add_node("Exp", [x], name="c", device="/cpu:1", control_inputs=[a])
    d = g.add_node("Sin", [x], name="d", device="/cpu:2", control_inputs=[a])
    same = g.add_node("Cos", [x], name="same", device="/cpu:0", control_inputs=[a])
    g.set_results([a.outputs[0], b.outputs[0], c.outputs[0], d.outputs[0], same.outputs[0]])
    place(g, CPUS[:3])
    partition(g)
    verify(g)
    tokens = [n for n in g.nodes if n.op == "Const"]
    assert len(tokens) == 2 and all(t.control_inputs == [a] and t.assigned_device == CPUS[0]
                                    for t in tokens)
    assert all(t.attrs["value"].dtype == np.bool_ and t.attrs["value"].shape == () for t in tokens)
    (recv_b,), (recv_c,), (recv_d,) = b.control_inputs, c.control_inputs, d.control_inputs
    assert recv_b is recv_c and recv_b.op == "Recv" and recv_b.assigned_device == CPUS[1]
    assert recv_d.op == "Recv" and recv_d.assigned_device == CPUS[2]
    assert recv_b.attrs["key"] == transfer_key(CPUS[0], "^a", CPUS[1])
    assert (recv_b.attrs["dtype"].ir_name, recv_b.attrs["shape"]) == ("i1", ())
    assert same.control_inputs == [a]
    assert ops(g)["Send"] == 2
    run_partitioned(g, np.ones(2, F32))


# ------------------------------------------------------------------------- regions

def test_a_value_captured_by_a_region_is_received_once_outside_it():
    g = Graph("g")
    x = g.add_arg(f32(4), "x")
    a = g.add_node("Neg", [x], name="a", device="/cpu:0")
    body = Graph("body")
    m1 = body.add_node("Mul", [a.outputs[0], a.outputs[0]], name="m1")
    m2 = body.add_node("Add", [m1.outputs[0], a.outputs[0]], name="m2")
    body.set_results([m2.outputs[0]])
    call = g.add_node("PlacementTestCall", [], regions=[body], name="call", device="/cpu:1")
    g.set_results([call.outputs[0], a.outputs[0]])
    place(g, CPUS[:2])
    partition(g)
    verify(g)
    (recv,) = [n for n in g.nodes if n.op == "Recv"]
    assert recv.assigned_device == CPUS[1] and ops(g)["Send"] == 1
    assert m1.inputs == [recv.outputs[0]] * 2 and m2.inputs[1] is recv.outputs[0]
    parts = split_by_device(g)
    for part in parts.values():
        verify(part.graph)
    (inner,) = [n for n in parts[CPUS[1]].graph.nodes if n.op == "PlacementTestCall"]
    recv_copy = parts[CPUS[1]].graph.node_by_name(recv.name)
    assert inner.regions[0].nodes[0].inputs == [recv_copy.outputs[0]] * 2


# ------------------------------------------------------------------ split_by_device

def test_split_by_device_args_results_and_pass_through_arguments():
    g = Graph("s")
    x, y, z = (g.add_arg(f32(2), n) for n in "xyz")
    a = g.add_node("Neg", [z], name="a", device="/cpu:1")
    b = g.add_node("Add", [x, a.outputs[0]], name="b", device="/cpu:0")
    g.set_results([b.outputs[0], y, a.outputs[0], z], ["b", "y", "a", "z"])
    place(g, CPUS[:2])
    partition(g)
    parts = split_by_device(g)
    assert list(parts) == CPUS[:2]
    p0, p1 = parts[CPUS[0]], parts[CPUS[1]]
    assert (p0.arg_indices, p0.result_indices, p0.graph.result_names) == ([0, 1], [0, 1], ["b", "y"])
    assert (p1.arg_indices, p1.result_indices, p1.graph.result_names) == ([2], [2, 3], ["a", "z"])
    assert p0.graph.arg_names == ["x", "y"] and p1.graph.arg_names == ["z"]
    assert p1.graph.results[1] is p1.graph.args[0]


def test_a_graph_without_nodes_is_one_partition_on_the_default_device():
    g = Graph("ident")
    x = g.add_arg(f32(2), "x")
    g.set_results([x])
    partition(g)
    (part,) = split_by_device(g).values()
    assert part.device == CPUS[0] and part.arg_indices == [0] and part.result_indices == [0]


def test_split_and_partition_errors():
    g = _fanout_graph()
    with pytest.raises(CompileError, match="needs a placed graph"):
        partition(g)
    place(g, CPUS[:3])
    with pytest.raises(CompileError, match="crosses devices: run the partition pass first"):
        split_by_device(g)
    h = Graph("r")
    handle = h.add_node("VarHandle", [], {"shared_name": "pv", "dtype": "f32", "shape": (2,)})
    read = h.add_node("ReadVariable", [handle.outputs[0]])
    h.set_results([read.outputs[0]])
    handle.assigned_device, read.assigned_device = CPUS[0], CPUS[1]
    with pytest.raises(CompileError, match="resources cannot be sent"):
        partition(h)


# ------------------------------------------------------------------ Send/Recv ops

def test_send_and_recv_kernels_meet_under_the_step_key():
    ctx = types.SimpleNamespace(rendezvous=Mailbox(), step_id=41)
    endpoints = {"key": "k", "send_device": CPUS[0], "recv_device": CPUS[1]}
    get_op("Send").kernels["reference"].fn(ctx, np.arange(3, dtype=F32), **endpoints)
    assert list(ctx.rendezvous.table) == ["k;41"]
    got = get_op("Recv").kernels["reference"].fn(ctx, dtype=tw.float32, shape=(3,), **endpoints)
    assert np.array_equal(got, np.arange(3, dtype=F32))
    g = Graph("g")
    recv = g.add_node("Recv", [], {**endpoints, "dtype": "f32", "shape": (3,)})
    with pytest.raises(OpError) as err:  # outside a step there is nobody to receive from
        run_kernel(recv, [], ResourceManager(), CallCounters())
    assert "Recv" in str(err.value) and "k;0" in str(err.value) or "executor" in str(err.value)
    assert get_op("Send").stateful and get_op("Recv").stateful


# ---------------------------------------------------------------------------- CLI

MODULE = '''import tensorweave as tw


@tw.compile
def f(x, w):
    with tw.device("/cpu:0"):
        h = tw.matmul(x, w)
    with tw.device("/cpu:1"):
        a = tw.nn.relu(h)
        b = tw.tanh(h)
    with tw.control_dependencies([a]):
        c = tw.identity(h, name="after_a")
    return a + b, c
'''


@pytest.fixture
def two_cpus():
    before = len(tw.config.list_logical_devices("CPU"))
    tw.config.set_logical_devices("CPU", 2)
    yield
    tw.config.set_logical_devices("CPU", before)


def test_dump_shows_devices_and_send_recv(tmp_path, capsys, two_cpus):
    src = tmp_path / "model.py"
    src.write_text(MODULE)
    signature = ["--signature", "x:f32[?,8]", "w:f32[8,4]"]
    assert main(["dump", f"{src}:f", *signature, "--stage", "placed"]) == 0
    placed = capsys.readouterr().out
    assert f'tw.assigned_device = "{CPUS[1]}"' in placed and "tw.Send" not in placed
    assert main(["dump", f"{src}:f", *signature, "--stage", "partitioned"]) == 0
    out = capsys.readouterr().out
    assert out.count('"tw.Send"') == out.count('"tw.Recv"') >= 2
    assert f'key = "{transfer_key(CPUS[0], "mat_mul", CPUS[1])}"' in out
    graph = parse_graph(out)
    verify(graph)
    (path := tmp_path / "p.mlir").write_text(out)
    assert main(["dump", str(path), "--stage", "traced"]) == 0
    assert graph_diff(graph, parse_graph(capsys.readouterr().out)) is None
