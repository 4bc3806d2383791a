"""The gpu target's own path honours placement, with no GPU: ``target="gpu"`` places
nodes without a request on GPU:0 when it has a kernel for them, on the CPU with the
reason when not, honours ``tw.device("/CPU:0")``, and `plan_step` runs exactly the nodes
placed on the CPU as host calls (what ``tensorweave dump --stage placed --target gpu``
prints is what runs). Placement and planning need no GPU: the gpu target adds its GPU:0
to the devices when there is none. Numerics are checked in ``sim/test_placement.py``."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.cli import main
from tensorweave.compiler.ir import Graph, Node
from tensorweave.compiler.pipeline import run_pipeline
from tensorweave.passes.placement import REASON_ATTR
from tensorweave.runtime.devices import DeviceSpec
from tensorweave.targets.gpu.step import Copy, HostCall, Ineligible, Launch, walk_actions

from .plans import plan_of

X = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
W = np.linspace(-0.5, 0.5, 20, dtype=np.float32).reshape(4, 5)


def _mixed(x, w):
    h = tw.matmul(x, w, name="mm")                   # a kernel: GPU:0
    with tw.device("/CPU:0"):
        a = tw.tanh(h, name="asked_cpu") * 2.0       # requested: the CPU
    c = tw.cumsum(a, axis=1, name="scan")            # no GPU kernel: the CPU, with why
    return tw.nn.relu(c + h, name="out")             # kernels again: GPU:0


def _placed(fn, *args) -> Graph:
    cf = tw.compile(fn, target="gpu").get_concrete_function(*args)
    return run_pipeline(cf.graph, "placed", target="gpu")


def _kind(node: Node) -> str:
    return DeviceSpec.from_string(node.assigned_device).device_type


def _names(node: Node) -> set[str]:
    """The original ops an action's node stands for (a Fusion: its members)."""
    if node.op == "Fusion":
        return {m.name for r in node.regions for m in r.nodes if m.op != "Const"}
    return {node.name}


def _split(plan) -> tuple[set[str], set[str]]:
    """(ops run by GPU launches and copies, ops run as host calls) of a plan."""
    gpu: set[str] = set()
    host: set[str] = set()
    for a in walk_actions(plan.actions):
        if isinstance(a, HostCall):
            host |= _names(a.node)
        elif isinstance(a, (Launch, Copy)):
            gpu |= _names(a.node)
    return gpu, host


def test_the_placed_stage_and_the_plan_agree():
    g = _placed(_mixed, X, W)
    where = {n.name: _kind(n) for n in g.nodes if n.op != "Const"}
    assert where["mm"] == where["out"] == "GPU"
    assert where["asked_cpu"] == where["scan"] == "CPU"
    node = g.node_by_name("scan")
    assert node.attrs[REASON_ATTR] == \
        "soft placement (gpu target: no GPU kernel for Cumsum), default device"
    assert g.node_by_name("asked_cpu").attrs[REASON_ATTR] == "requested"
    assert g.node_by_name("mm").attrs[REASON_ATTR] == "gpu target: on its GPU"
    gpu, host = _split(plan_of(_mixed, [X, W]))
    assert host == {n for n, k in where.items() if k == "CPU"}
    assert gpu == {n for n, k in where.items() if k == "GPU"}
    assert not gpu & host


def test_host_calls_carry_the_placement_reason():
    plan = plan_of(_mixed, [X, W])
    reasons = {a.node.name: a.reason for a in walk_actions(plan.actions)
               if isinstance(a, HostCall)}
    assert reasons.pop("scan") == "no GPU kernel for Cumsum"  # as where nothing is placed
    assert plan.fallbacks["scan"] == "Cumsum: no GPU kernel for Cumsum"
    (asked,) = reasons.values()  # the Fusion of tanh and its product
    assert asked == "placed on /job:localhost/replica:0/task:0/device:CPU:0 (requested)"


def test_dump_stage_placed_for_the_gpu_target_prints_what_runs(tmp_path, capsys):
    src = tmp_path / "model.py"
    src.write_text("import tensorweave as tw\n\n"
                   "def f(x):\n"
                   "    return tw.cumsum(tw.matmul(x, x, name='mm'), axis=0, name='scan')\n")
    assert main(["dump", f"{src}:f", "--stage", "placed", "--target", "gpu",
                 "--signature", "x:f32[4,4]"]) in (0, None)
    out = capsys.readouterr().out
    scan = next(ln for ln in out.splitlines() if '"tw.Cumsum"' in ln)
    mm = next(ln for ln in out.splitlines() if '"tw.MatMul"' in ln)
    assert "device:CPU:0" in scan and "no GPU kernel for Cumsum" in scan
    assert "device:GPU:0" in mm and "gpu target: on its GPU" in mm
    # other targets keep unrequested nodes on the CPUs
    assert main(["dump", f"{src}:f", "--stage", "placed", "--target", "cpu",
                 "--signature", "x:f32[4,4]"]) in (0, None)
    mm = next(ln for ln in capsys.readouterr().out.splitlines() if '"tw.MatMul"' in ln)
    assert "device:CPU:0" in mm


def test_a_gpu_request_beside_unrequested_nodes_is_one_step_without_host_calls():
    def f(x, w):
        h = tw.nn.relu(x * 2.0 - 0.5)
        with tw.device("/GPU:0"):
            y = tw.matmul(h, w)
        return tw.reduce_sum(tw.tanh(y), axis=1), y

    g = _placed(f, X, W)
    assert {_kind(n) for n in g.nodes} == {"GPU"}
    plan = plan_of(f, [X, W])
    assert not [a for a in walk_actions(plan.actions) if isinstance(a, HostCall)]


def test_variables_go_to_the_gpu_unless_requested_on_the_cpu():
    v = tw.Variable(np.ones((3, 5), np.float32), name="gpu2_place/v")

    def f(x):
        v.assign_add(tw.matmul(x, tw.ones((4, 5))))
        return v.read_value() * 2.0

    g = _placed(f, X)
    assert {_kind(n) for n in g.nodes if n.op in ("VarHandle", "ReadVariable",
                                                   "AssignAddVariable")} == {"GPU"}
    assert not [a for a in walk_actions(plan_of(f, [X]).actions) if isinstance(a, HostCall)]

    u = tw.Variable(np.ones((4, 5), np.float32), name="gpu2_place/u")

    def h(x):
        with tw.device("/CPU:0"):  # the handle is made (and placed) at its first use
            w = u.read_value()
        return tw.matmul(x, w)

    with pytest.raises(Ineligible, match="ReadVariable .* is placed on .*CPU:0 and uses a "
                                         "resource"):
        plan_of(h, [X])


def test_a_graph_placed_wholly_on_the_cpu_is_declined():
    def f(x):
        with tw.device("/CPU:0"):
            return tw.tanh(x) + 1.0

    with pytest.raises(Ineligible, match="every node is placed on .*CPU:0"):
        plan_of(f, [X])


def test_loops_go_to_the_gpu_when_their_body_has_kernels():
    def scan(x):
        return tw.scan(lambda acc, r: acc * 0.5 + r, x, initializer=tw.zeros((4,)))

    def scan_cumsum(x):
        return tw.tanh(tw.scan(lambda acc, r: acc + tw.cumsum(r, axis=0), x,
                               initializer=tw.zeros((4,))))

    loop = next(n for n in _placed(scan, X).nodes if n.op == "While")
    assert _kind(loop) == "GPU"
    loop = next(n for n in _placed(scan_cumsum, X).nodes if n.op == "While")
    assert _kind(loop) == "CPU"
    assert "While: no GPU kernel for Cumsum in its body" in loop.attrs[REASON_ATTR]
    gpu, host = _split(plan_of(scan_cumsum, [X]))
    assert loop.name in host and "tanh" in gpu
