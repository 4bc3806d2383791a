"""The placement pass: explicit device scopes, colocation, soft placement, the cost model
that simulates execution, nodes inside regions, and `tw.debugging.placement_report`."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.compiler import Graph, TensorType
from tensorweave.compiler.pipeline import run_pipeline
from tensorweave.compiler.registry import all_ops, def_op, get_op
from tensorweave.compiler.verifier import verify
from tensorweave.errors import InvalidArgumentError
from tensorweave.passes.placement import REASON_ATTR, CostModel, has_kernel, place, register_flops
from tensorweave.runtime.devices import Device, DeviceSpec

F32 = np.float32
LOCAL = "/job:localhost/replica:0/task:0"
CPUS = [f"{LOCAL}/device:CPU:{i}" for i in range(4)]
GPU0 = f"{LOCAL}/device:GPU:0"


def _op(name, **kwargs):
    return get_op(name) if name in all_ops() else def_op(name, **kwargs)


def _declare_test_ops():
    """A heavy op with a (never run) cuda kernel, and a call-like op with one region."""
    gpu_op = _op("PlacementTestGpuOp", inputs=["x"])
    if gpu_op.infer_fn is None:
        gpu_op.infer(lambda x: x)
        gpu_op.kernel("reference")(lambda x: x)
        gpu_op.kernel("cuda")(lambda x: x)
        register_flops("PlacementTestGpuOp")(lambda node, cm: 1e4 * cm.elements(node.outputs[0].type))
    call = _op("PlacementTestCall", inputs=["*args"], num_regions=1)
    if call.infer_fn is None:
        call.infer(lambda *args, regions: [v.type for v in regions[0].results])


_declare_test_ops()


def f32(*shape):
    return TensorType("f32", shape)


def optimized(fn, *specs):
    return run_pipeline(tw.compile(fn).get_concrete_function(*specs).graph, "optimized")


def placed(fn, *specs, devices=2, **kwargs):
    g = optimized(fn, *specs)
    place(g, CPUS[:devices] if isinstance(devices, int) else devices, **kwargs)
    verify(g)
    return g


def where(g, name):
    """``CPU:1``-style device of node `name`."""
    spec = DeviceSpec.from_string(g.node_by_name(name).assigned_device)
    return f"{spec.device_type}:{spec.device_index}"


def reason(g, name):
    return g.node_by_name(name).attrs[REASON_ATTR]


def spec(*shape):
    return tw.TensorSpec(list(shape), tw.float32)


@pytest.fixture
def restore_config():
    before = len(tw.config.list_logical_devices("CPU"))
    soft = tw.config.get_soft_device_placement()
    yield
    tw.config.set_logical_devices("CPU", before)
    tw.config.set_soft_device_placement(soft)


# ------------------------------------------------------------------ explicit scopes

def test_every_node_gets_a_canonical_device_and_a_reason():
    def f(x):
        return tw.nn.relu(x * 2.0 + 1.0)

    g = placed(f, spec(3), devices=1)
    for n in g.walk():
        assert n.assigned_device == CPUS[0]
        assert isinstance(n.attrs[REASON_ATTR], str) and n.attrs[REASON_ATTR]


def test_explicit_scopes_short_full_nested_and_partial():
    def f(x):
        with tw.device("/cpu:1"):
            a = tw.exp(x, name="a")
        with tw.device(f"{LOCAL}/device:CPU:2"):
            b = tw.sin(a, name="b")
        with tw.device("/job:localhost"):
            with tw.device("/device:CPU:3"):
                c = tw.cos(b, name="c")
        with tw.device("/device:CPU:1"):
            with tw.device(None):
                d = tw.tanh(c, name="d")
        return d

    g = placed(f, spec(3), devices=4)
    assert [where(g, n) for n in "abc"] == ["CPU:1", "CPU:2", "CPU:3"]
    assert [reason(g, n) for n in "abc"] == ["requested"] * 3
    assert reason(g, "d") == "cost model"


def test_a_partial_spec_lets_the_cost_model_choose_among_matching_devices():
    def f(a, b, c, d):
        with tw.device("/device:CPU:*"):
            x = tw.matmul(a, b, name="x")
            y = tw.matmul(c, d, name="y")
        return x, y

    g = placed(f, *[spec(256, 256)] * 4, devices=2)
    assert {where(g, "x"), where(g, "y")} == {"CPU:0", "CPU:1"}
    assert reason(g, "y") == "requested (cost model among 2 devices)"


# ----------------------------------------------------------------------- colocation

def test_variable_reads_and_updates_sit_with_the_variable():
    v = tw.Variable(np.zeros((8, 4), F32), name="place_table")

    def f(ids):
        with tw.device("/cpu:1"):
            v.assign_add(tw.ones((8, 4)), read_value=False)  # the handle is made here
        with tw.device("/cpu:0"):
            rows = tw.gather(v, ids, name="rows")
        return rows, v.read_value() * 2.0

    g = placed(f, tw.TensorSpec([3], tw.int32), devices=2)
    handle = g.node_by_name("place_table")
    assert where(g, "place_table") == "CPU:1" and reason(g, "place_table") == "requested"
    users = [n for n in g.nodes if n.op in ("ReadVariable", "AssignAddVariable", "Gather",
                                            "ResourceGather")]
    assert len(users) >= 3
    for n in users:
        assert n.assigned_device == handle.assigned_device
        assert n.attrs[REASON_ATTR].startswith("colocated with place_table")
    assert reason(g, "rows") == "colocated with place_table; requested '/cpu:0' ignored"
    with pytest.raises(InvalidArgumentError, match="cannot honour the requested device '/cpu:0'"):
        place(optimized(f, tw.TensorSpec([3], tw.int32)), CPUS[:2], soft_placement=False)


def test_a_variable_without_a_request_lives_on_the_default_device():
    v = tw.Variable(np.ones(4, F32), name="place_default")

    def f(x):
        with tw.device("/cpu:1"):
            y = x * 3.0
        return y + v, tw.identity(v.read_value(), name="plain")

    g = placed(f, spec(4), devices=2)
    assert where(g, "place_default") == "CPU:0"
    assert reason(g, "place_default") == "resource on the default device"


def test_colocate_with_a_tensor_and_with_a_variable():
    v = tw.Variable(np.ones(4, F32), name="place_coloc")

    def f(x):
        value = v.read_value()  # makes the handle here, outside any device scope
        with tw.device("/cpu:1"):
            a = tw.negative(x, name="a")
        with tw.colocate_with(a):
            b = tw.square(x, name="b")
        with tw.device("/cpu:1"):
            with tw.colocate_with(v):
                c = tw.abs(x, name="c")
        return a, b, c, value

    g = placed(f, spec(4), devices=2)
    assert where(g, "b") == "CPU:1" and reason(g, "b") == "colocated with a"
    assert g.node_by_name("b").attrs["_colocate_with"] == ("a",)
    assert where(g, "c") == where(g, "place_coloc") == "CPU:0"
    # As in TensorFlow, colocate_with shadows the device scopes around it.
    assert g.node_by_name("c").device is None
    assert reason(g, "c") == "colocated with place_coloc"


def test_colocate_with_rejects_what_is_not_made_by_an_op():
    def f(x):
        with tw.colocate_with(x):
            return x + 1.0

    with pytest.raises(TypeError, match="colocate_with expects"):
        tw.compile(f).get_concrete_function(spec(2))


# -------------------------------------------------------------------- soft placement

@pytest.mark.parametrize("request_, why", [("/gpu:0", "no such device"),
                                           ("/cpu:3", "no such device"),
                                           ("/job:worker/cpu:0", "no such device")])
def test_soft_placement_falls_back_to_cpu0(request_, why):
    def f(x):
        with tw.device(request_):
            return tw.negative(x, name="n")

    g = placed(f, spec(2), devices=2)
    assert where(g, "n") == "CPU:0"
    assert reason(g, "n").startswith(f"soft placement (requested device '{request_}': {why}")


def test_without_soft_placement_an_impossible_request_is_a_clear_error():
    def f(x):
        with tw.device("/gpu:0"):
            return tw.negative(x, name="n")

    with pytest.raises(InvalidArgumentError) as err:
        placed(f, spec(2), devices=2, soft_placement=False)
    message = str(err.value)
    assert "Neg 'n'" in message and "test_placement.py" in message
    assert "'/gpu:0': no such device" in message and CPUS[1] in message


def test_a_device_without_a_kernel_for_the_op_falls_back_or_fails():
    def f(x):
        with tw.device("/gpu:0"):  # the gpu target has no Cumsum kernel
            return tw.cumsum(x, name="n"), _gpu_op(x)

    devices = [*CPUS[:2], GPU0]
    g = placed(f, spec(2), devices=devices)
    assert where(g, "n") == "CPU:0" and "no GPU kernel for Cumsum" in reason(g, "n")
    assert where(g, "gpu_op") == "GPU:0" and reason(g, "gpu_op") == "requested"
    with pytest.raises(InvalidArgumentError, match="no GPU kernel for Cumsum"):
        placed(f, spec(2), devices=devices, soft_placement=False)


def _gpu_op(x):
    from tensorweave.frontend.building import apply_op1
    return apply_op1("PlacementTestGpuOp", [x], name="gpu_op")


def test_has_kernel_per_device_type():
    g = Graph("g")
    x = g.add_arg(f32(2))
    neg = g.add_node("Neg", [x])
    cumsum = g.add_node("Cumsum", [x], {"axis": 0})
    gpu = g.add_node("PlacementTestGpuOp", [x])
    assert has_kernel(neg, "CPU") and has_kernel(gpu, "CPU") and has_kernel(cumsum, "CPU")
    # the gpu target's kernels (Neg fuses into a GPU kernel) or a registered cuda kernel
    assert has_kernel(gpu, "GPU") and has_kernel(neg, "GPU") and not has_kernel(cumsum, "GPU")
    assert not has_kernel(gpu, "TPU")


def test_the_pipeline_stage_uses_the_config(restore_config):
    def f(x):
        with tw.device("/cpu:1"):
            return tw.negative(x, name="n")

    graph = tw.compile(f).get_concrete_function(spec(2)).graph
    tw.config.set_logical_devices("CPU", 2)
    assert where(run_pipeline(graph, "placed"), "n") == "CPU:1"
    tw.config.set_logical_devices("CPU", 1)
    assert where(run_pipeline(graph, "placed"), "n") == "CPU:0"
    tw.config.set_soft_device_placement(False)
    with pytest.raises(InvalidArgumentError, match="soft placement is off"):
        run_pipeline(graph, "placed")


# ----------------------------------------------------------------------- cost model

def _two_heavy_branches(a, b, c, d):
    x = tw.matmul(a, b, name="left")
    y = tw.matmul(c, d, name="right")
    return tw.add(x, y, name="join")


def test_independent_heavy_branches_go_to_different_devices():
    g = placed(_two_heavy_branches, *[spec(256, 256)] * 4, devices=2)
    assert {where(g, "left"), where(g, "right")} == {"CPU:0", "CPU:1"}
    assert reason(g, "left") == reason(g, "right") == "cost model"
    one = placed(_two_heavy_branches, *[spec(256, 256)] * 4, devices=1)
    assert {n.assigned_device for n in one.nodes} == {CPUS[0]}


def test_a_chain_of_cheap_ops_stays_on_one_device():
    def f(x):
        y = x
        for i in range(12):
            y = tw.nn.relu(y * 1.5 - 0.25, name=f"step{i}")
        return y

    g = placed(f, spec(16), devices=4)
    assert {n.assigned_device for n in g.nodes} == {CPUS[0]}


def test_heavy_branches_fed_by_a_cheap_chain_still_spread_and_the_chain_stays():
    def f(a, b):
        base = tw.nn.relu(a * 2.0, name="base")
        left = tw.matmul(base, b, name="left")
        right = tw.matmul(tw.transpose(base), b, name="right")
        return tw.tanh(left, name="l2"), tw.tanh(right, name="r2")

    g = placed(f, spec(256, 256), spec(256, 256), devices=2)
    assert where(g, "left") != where(g, "right")
    assert where(g, "l2") == where(g, "left") and where(g, "r2") == where(g, "right")


def test_a_heavy_op_with_a_gpu_kernel_goes_to_the_faster_gpu():
    def f(x):
        return _gpu_op(tw.negative(x, name="n"))

    # nodes without a request may go to GPUs only when allowed (set_auto_gpu_placement)
    g = placed(f, spec(512, 512), devices=[CPUS[0], GPU0], auto_device_types=("CPU", "GPU"))
    assert where(g, "gpu_op") == "GPU:0" and where(g, "n") == "CPU:0"
    g = placed(f, spec(512, 512), devices=[CPUS[0], GPU0])
    assert where(g, "gpu_op") == "CPU:0"


def test_placement_is_deterministic_and_idempotent():
    g1 = placed(_two_heavy_branches, *[spec(128, 128)] * 4, devices=3)
    g2 = placed(_two_heavy_branches, *[spec(128, 128)] * 4, devices=3)
    first = [(n.name, n.assigned_device, n.attrs[REASON_ATTR]) for n in g1.nodes]
    assert first == [(n.name, n.assigned_device, n.attrs[REASON_ATTR]) for n in g2.nodes]
    place(g1, CPUS[:3])
    assert first == [(n.name, n.assigned_device, n.attrs[REASON_ATTR]) for n in g1.nodes]


def _matmul_node(a_shape, b_shape, **attrs):
    g = Graph("g")
    a, b = g.add_arg(f32(*a_shape)), g.add_arg(f32(*b_shape))
    return g.add_node("MatMul", [a, b], attrs)


@given(st.integers(1, 64), st.integers(1, 64), st.integers(1, 64), st.integers(1, 3))
def test_matmul_flops_are_2mnk(m, k, n, batch):
    cm = CostModel()
    assert cm.flops(_matmul_node((m, k), (k, n))) == 2 * m * n * k
    assert cm.flops(_matmul_node((batch, m, k), (k, n))) == 2 * batch * m * n * k
    assert cm.flops(_matmul_node((k, m), (k, n), transpose_a=True)) == 2 * m * n * k


def test_flop_estimates_for_unknown_dims_convolution_and_elementwise():
    cm = CostModel(default_dim=32)
    assert cm.flops(_matmul_node((None, 10), (10, 5))) == 2 * 32 * 5 * 10
    g = Graph("g")
    x, w = g.add_arg(f32(2, 8, 8, 3)), g.add_arg(f32(3, 3, 3, 16))
    conv = g.add_node("Conv2D", [x, w], {"strides": (1, 1, 1, 1), "padding": "SAME"})
    assert cm.flops(conv) == 2 * (2 * 8 * 8 * 16) * (3 * 3 * 3)
    add = g.add_node("Add", [x, x])
    assert cm.flops(add) == 2 * 8 * 8 * 3
    const = g.add_node("Const", [], {"value": np.zeros((100,), F32)})
    assert cm.flops(const) == 0


def test_transfer_costs_grow_with_bytes_and_distance():
    cm = CostModel()
    cpu0, cpu1 = Device(DeviceSpec.from_string(CPUS[0])), Device(DeviceSpec.from_string(CPUS[1]))
    remote = Device(DeviceSpec.from_string("/job:worker/replica:0/task:1/device:CPU:0"))
    assert cm.transfer_time(10**6, cpu0, cpu0) == 0
    assert 0 < cm.transfer_time(10, cpu0, cpu1) < cm.transfer_time(10**6, cpu0, cpu1)
    assert cm.transfer_time(10**6, cpu0, cpu1) < cm.transfer_time(10**6, cpu0, remote)
    assert cm.nbytes(f32(None, 4)) == 32 * 4 * 4


# -------------------------------------------------------------------------- regions

def _region_graph():
    """``call`` (requested on CPU:1) runs a body that captures ``a`` (from CPU:0) and
    reads a variable handle made outside it."""
    g = Graph("g")
    x = g.add_arg(f32(4), "x")
    a = g.add_node("Neg", [x], name="a", device="/cpu:0")
    h = g.add_node("VarHandle", [], {"shared_name": "region_var", "dtype": "f32", "shape": (4,)},
                   name="h")
    body = Graph("body")
    read = body.add_node("ReadVariable", [h.outputs[0]], name="read")
    mul = body.add_node("Mul", [a.outputs[0], read.outputs[0]], name="mul")
    body.set_results([mul.outputs[0]])
    call = g.add_node("PlacementTestCall", [], regions=[body], name="call", device="/cpu:1")
    g.set_results([call.outputs[0]])
    verify(g)
    return g


def test_region_nodes_run_where_their_parent_runs_and_captured_resources_colocate():
    g = _region_graph()
    place(g, CPUS[:2])
    call = g.node_by_name("call")
    # the region reads the variable, so the call sits with the handle (default device)
    assert where(g, "call") == where(g, "h") == "CPU:0"
    assert reason(g, "call") == "colocated with h; requested '/cpu:1' ignored"
    for inner in call.regions[0].nodes:
        assert inner.assigned_device == call.assigned_device
        assert inner.attrs[REASON_ATTR] == "in a region of call"


# ---------------------------------------------------------------------------- report

def test_placement_report_lists_every_op_with_devices_and_reasons(restore_config):
    tw.config.set_logical_devices("CPU", 2)
    v = tw.Variable(np.ones((4, 4), F32), name="report_w")

    @tw.compile
    def step(a, b):
        with tw.device("/cpu:1"):
            x = tw.matmul(a, b, name="x")
        with tw.device("/gpu:3"):
            y = tw.negative(x, name="y")
        return y + v

    report = tw.debugging.placement_report(step, spec(4, 4), spec(4, 4))
    lines = report.splitlines()
    assert lines[0].split() == ["node", "op", "requested", "assigned", "reason"]
    assert set(lines[1]) == {"-", " "}
    rows = {line.split()[0]: line for line in lines[2:]}
    assert "MatMul" in rows["x"] and "/cpu:1" in rows["x"] and CPUS[1] in rows["x"]
    assert "requested" in rows["x"]
    assert "soft placement" in rows["y"] and CPUS[0] in rows["y"]
    assert "report_w" in rows and "ReadVariable" in report and "colocated with report_w" in report
    graph = tw.debugging.placed_graph(step, spec(4, 4), spec(4, 4))
    assert len(rows) == len(list(graph.walk()))
