"""GPU devices in placement and partitioning, with no GPU: the cost model's GPU terms
(kernels fast but launched one by one, host<->GPU copies over PCIe), which ops have a
GPU kernel, requests, soft placement with its reason, auto placement on GPUs, and the
Send/Recv pairs partitioning adds on CPU<->GPU edges. Placement works on device names,
so a GPU device needs no GPU here."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.compiler import Graph, TensorType
from tensorweave.compiler.pipeline import run_pipeline
from tensorweave.compiler.verifier import verify
from tensorweave.errors import InvalidArgumentError
from tensorweave.passes.partition import partition
from tensorweave.passes.placement import REASON_ATTR, CostModel, kernel_reason, place
from tensorweave.runtime.devices import Device, DeviceSpec

LOCAL = "/job:localhost/replica:0/task:0"
CPU0, CPU1, GPU0, GPU1 = (f"{LOCAL}/device:{d}" for d in ("CPU:0", "CPU:1", "GPU:0", "GPU:1"))


def _device(name: str) -> Device:
    return Device(DeviceSpec.from_string(name))


def _spec(*shape, dtype=tw.float32):
    return tw.TensorSpec(list(shape), dtype)


def _placed(fn, *specs, devices=(CPU0, GPU0), **kwargs) -> Graph:
    g = run_pipeline(tw.compile(fn).get_concrete_function(*specs).graph, "optimized")
    place(g, list(devices), **kwargs)
    verify(g)
    return g


def _where(g: Graph, name: str) -> str:
    spec = DeviceSpec.from_string(g.node_by_name(name).assigned_device)
    return f"{spec.device_type}:{spec.device_index}"


def _matmul(g: Graph, m: int, k: int, n: int):
    a = g.add_arg(TensorType("f32", (m, k)))
    b = g.add_arg(TensorType("f32", (k, n)))
    return g.add_node("MatMul", [a, b])


# ------------------------------------------------------------------------ cost model

def test_host_gpu_copies_cost_pcie_and_are_symmetric():
    cm = CostModel()
    cpu, gpu, gpu1, cpu1 = map(_device, (CPU0, GPU0, GPU1, CPU1))
    nbytes = 64 << 20
    pcie = cm.pcie_latency + nbytes / cm.pcie_bytes_per_second
    assert cm.transfer_time(nbytes, cpu, gpu) == pytest.approx(pcie)
    assert cm.transfer_time(nbytes, gpu, cpu) == pytest.approx(pcie)
    assert cm.transfer_time(nbytes, gpu, gpu1) == pytest.approx(pcie)  # peer copy, same bus
    assert cm.transfer_time(nbytes, gpu, gpu) == 0.0
    # logical CPUs share the host's memory: no PCIe there
    assert cm.transfer_time(nbytes, cpu, cpu1) == pytest.approx(
        cm.transfer_latency + nbytes / cm.bytes_per_second)
    other_task = _device("/job:worker/replica:0/task:1/device:GPU:0")
    assert cm.transfer_time(nbytes, gpu, other_task) == pytest.approx(
        cm.remote_latency + nbytes / cm.remote_bytes_per_second)


def test_gpu_kernels_are_fast_but_each_pays_a_launch():
    cm = CostModel()
    cpu, gpu = _device(CPU0), _device(GPU0)
    big = _matmul(Graph("g"), 1024, 1024, 1024)
    flops = 2.0 * 1024 ** 3
    assert cm.compute_time(big, gpu) == pytest.approx(
        cm.op_overhead + cm.launch_overhead["GPU"] + flops / cm.flops_per_second["GPU"])
    assert cm.compute_time(big, cpu) == pytest.approx(
        cm.op_overhead + flops / cm.flops_per_second["CPU"])
    assert cm.compute_time(big, gpu) < cm.compute_time(big, cpu) / 50
    tiny = _matmul(Graph("g"), 2, 2, 2)
    assert cm.compute_time(tiny, gpu) > cm.compute_time(tiny, cpu)  # the launch dominates
    g = Graph("g")
    view = g.add_node("Reshape", [g.add_arg(TensorType("f32", (4, 4)))], {"shape": (16,)})
    assert cm.compute_time(view, gpu) == cm.op_overhead  # views launch no kernel


def test_moving_work_to_the_gpu_pays_only_when_compute_outweighs_the_copies():
    cm = CostModel()
    cpu, gpu = _device(CPU0), _device(GPU0)
    for n, gpu_wins in ((16, False), (2048, True)):
        node = _matmul(Graph("g"), n, n, n)
        copies = sum(cm.transfer_time(4 * n * n, cpu, gpu) for _ in range(3))
        on_gpu = copies + cm.compute_time(node, gpu)
        assert (on_gpu < cm.compute_time(node, cpu)) == gpu_wins


# ------------------------------------------------------------------ GPU kernels

@pytest.mark.parametrize("op, inputs, attrs, why", [
    ("Neg", [("f32", (4,))], {}, None),                       # fused into a GPU kernel
    ("MatMul", [("f32", (2, 3)), ("f32", (3, 4))], {}, None),  # a generator
    ("Reshape", [("f32", (4,))], {"shape": (2, 2)}, None),     # a view of its input
    ("Cumsum", [("f32", (4,))], {"axis": 0}, "no GPU kernel for Cumsum"),
    ("Neg", [("f16", (4,))], {}, "no GPU code for float16"),
    ("UnsortedSegmentSum", [("i8", (4,)), ("i32", (4,))], {"num_segments": 2},
     "no atomic add for UnsortedSegmentSum of int8"),
])
def test_kernel_reason_on_a_gpu(op, inputs, attrs, why):
    g = Graph("g")
    args = [g.add_arg(TensorType(dt, shape)) for dt, shape in inputs]
    node = g.add_node(op, args, attrs)
    assert kernel_reason(node, "CPU") is None
    reason = kernel_reason(node, "GPU")
    assert reason == why if why is None else why in reason


# -------------------------------------------------------------------- placement

def _mlp(x, w):
    h = tw.nn.relu(tw.matmul(x, w, name="mm"), name="act")
    return tw.reduce_sum(h, name="total")


def test_nodes_without_a_request_stay_on_the_cpus_by_default():
    g = _placed(_mlp, _spec(1024, 1024), _spec(1024, 1024))
    assert {_where(g, n.name) for n in g.nodes} == {"CPU:0"}


def test_auto_gpu_placement_moves_big_work_and_keeps_small_work_near_its_data():
    g = _placed(_mlp, _spec(1024, 1024), _spec(1024, 1024), auto_device_types=("CPU", "GPU"))
    # the matmul wins more than its copies cost; the elementwise op and the sum that
    # follow stay with its result rather than pay PCIe back
    assert [_where(g, n) for n in ("mm", "act", "total")] == ["GPU:0"] * 3
    small = _placed(_mlp, _spec(4, 4), _spec(4, 4), auto_device_types=("CPU", "GPU"))
    assert {_where(small, n.name) for n in small.nodes} == {"CPU:0"}


def test_the_config_switch_enables_auto_gpu_placement():
    assert not tw.config.get_auto_gpu_placement()
    try:
        tw.config.set_auto_gpu_placement(True)
        assert tw.config.get_auto_gpu_placement()
        g = _placed(_mlp, _spec(1024, 1024), _spec(1024, 1024))
        assert _where(g, "mm") == "GPU:0"
    finally:
        tw.config.set_auto_gpu_placement(False)


def _requests(x):
    with tw.device("/GPU:0"):
        y = tw.matmul(x, x, name="mm")
        noise = tw.cumsum(y, name="scan")  # no GPU kernel: soft placement
    return tw.reduce_sum(noise, name="total")


def test_requests_go_to_the_gpu_and_soft_placement_says_why_not():
    g = _placed(_requests, _spec(8, 8))
    assert _where(g, "mm") == "GPU:0" and g.node_by_name("mm").attrs[REASON_ATTR] == "requested"
    assert _where(g, "scan") == "CPU:0" and _where(g, "total") == "CPU:0"
    why = g.node_by_name("scan").attrs[REASON_ATTR]
    assert why == ("soft placement (requested device '/GPU:0': no GPU kernel for Cumsum), "
                   "default device")
    assert "\n" not in why


def test_without_soft_placement_the_error_names_the_op_and_line():
    with pytest.raises(InvalidArgumentError) as info:
        _placed(_requests, _spec(8, 8), soft_placement=False)
    message = str(info.value)
    assert "Cumsum" in message and "no GPU kernel for Cumsum" in message
    assert "test_placement_costs.py" in message  # the user's line


# ----------------------------------------------------------------- partitioning

def test_every_cpu_gpu_edge_gets_one_send_recv_pair_per_tensor_and_direction():
    def f(x):
        a = tw.exp(x, name="a")                     # CPU
        with tw.device("/GPU:0"):
            b = tw.matmul(a, a, name="b")           # reads a twice: one transfer
            c = tw.tanh(a, name="c")                # reads a again: still the same one
            d = tw.add(b, c, name="d")
        return tw.reduce_sum(d, name="s1"), tw.reduce_max(d, name="s2"), b
    g = _placed(f, _spec(16, 16))
    partition(g)
    verify(g)
    sends = [n for n in g.nodes if n.op == "Send"]
    recvs = [n for n in g.nodes if n.op == "Recv"]
    pairs = sorted((n.attrs["send_device"][-5:], n.inputs[0].producer.name) for n in sends)
    # a: CPU -> GPU once; d: GPU -> CPU once for both reductions (b is a result: the GPU
    # partition returns it, no transfer)
    assert pairs == [("CPU:0", "a"), ("GPU:0", "d")]
    assert len(recvs) == 2
    assert {n.attrs["key"] for n in sends} == {n.attrs["key"] for n in recvs}
    assert np.all([n.assigned_device == n.attrs["recv_device"] for n in recvs])


def test_a_request_without_a_device_type_keeps_to_the_cpus_unless_gpus_are_allowed():
    def f(x):
        with tw.device("/job:localhost"):
            return tw.matmul(x, x, name="mm")
    assert _where(_placed(f, _spec(1024, 1024)), "mm") == "CPU:0"
    g = _placed(f, _spec(1024, 1024), auto_device_types=("CPU", "GPU"))
    assert _where(g, "mm") == "GPU:0"
    assert g.node_by_name("mm").attrs[REASON_ATTR] == "requested (cost model among 2 devices)"
