"""Graphs split between the CPU and a (simulated) GPU: ``with tw.device("/GPU:0")`` in
functions of any target and in a v1 Session, soft placement for ops without a GPU
kernel (with its reason in ``tensorweave dump --stage placed``), and the host<->device
copies behind Send/Recv: one per tensor per device per step, through pinned buffers."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.cli import main
from tensorweave.errors import InvalidArgumentError
from tensorweave.targets.gpu.runtime import gpu_runtime

GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"


def test_the_simulator_is_a_gpu_device():
    assert [d.device_type for d in tw.config.list_physical_devices("GPU")] == ["GPU"]
    assert [d.name for d in tw.config.list_logical_devices("GPU")] == [GPU0]


def _split(x, w, b):
    h = tw.nn.relu(x * 2.0 - 0.5)                # CPU
    with tw.device("/GPU:0"):
        y = tw.matmul(h, w)                        # h: CPU -> GPU
        z = tw.tanh(y + b) * tw.sigmoid(h[:, :3])  # h again: the same transfer
    return tw.reduce_sum(z, axis=1), tw.reduce_max(z), y  # z: GPU -> CPU once


def _one_device(x, w, b):
    h = tw.nn.relu(x * 2.0 - 0.5)
    y = tw.matmul(h, w)
    z = tw.tanh(y + b) * tw.sigmoid(h[:, :3])
    return tw.reduce_sum(z, axis=1), tw.reduce_max(z), y


def _args(seed):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(5, 4)).astype(np.float32), rng.normal(size=(4, 3)).astype(np.float32),
            rng.normal(size=3).astype(np.float32))


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_a_split_graph_matches_one_device_with_one_copy_per_tensor_and_direction(target):
    f = tw.compile(_split, target=target)
    ref = tw.compile(_one_device, target="reference")
    args = _args(0)
    known_fallbacks = dict(gpu_runtime().fallbacks)
    for got, want in zip(f(*args), ref(*args)):  # first call: compiles, uploads constants
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
    placed = run_placed(f, args)
    assert {GPU0} < {n.assigned_device for n in placed.nodes}
    rt = gpu_runtime()
    for seed in (1, 2):
        before = rt.stats()
        args = _args(seed)
        for got, want in zip(f(*args), ref(*args)):
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
        after = rt.stats()
        # up: w and b (arguments the GPU partition reads) and h (one Recv);
        # down: z (one Send for both reductions) and y (a result of the GPU partition)
        assert after["uploads"] - before["uploads"] == 3
        assert after["downloads"] - before["downloads"] == 2
    assert rt.fallbacks == known_fallbacks  # every GPU node ran a GPU kernel


def test_on_the_gpu_target_unrequested_nodes_join_the_gpu_in_one_step():
    f = tw.compile(_split, target="gpu")
    ref = tw.compile(_one_device, target="reference")
    rt = gpu_runtime()
    for seed in (0, 1):
        before = rt.stats()
        args = _args(seed)
        for got, want in zip(f(*args), ref(*args)):
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
        assert rt.stats() == before  # no partition ran on the dataflow executor
    exe = f.get_concrete_function(*_args(0)).executable
    assert exe.native_reason is None and not exe.fallbacks


def _cpu_and_gpu(x, w):
    h = tw.matmul(x, w)
    with tw.device("/CPU:0"):
        a = tw.tanh(h) * 2.0                 # requested: a host call
    c = tw.cumsum(a, axis=1, name="scan")    # no GPU kernel: a host call
    return tw.nn.relu(c + h), a


def test_on_the_gpu_target_cpu_nodes_are_host_calls_of_one_step_with_the_references_results():
    f = tw.compile(_cpu_and_gpu, target="gpu")
    ref = tw.compile(_cpu_and_gpu, target="reference")
    for seed in (2, 3):
        x, w, _ = _args(seed)
        for got, want in zip(f(x, w), ref(x, w)):
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
    exe = f.get_concrete_function(x, w).executable
    assert exe.native_reason is None
    assert exe.fallbacks["scan"] == "Cumsum: no GPU kernel for Cumsum"
    assert any(r.startswith("Fusion: placed on ") for r in exe.fallbacks.values())


def test_on_the_gpu_target_a_variable_requested_on_the_cpu_runs_on_the_dataflow_executor():
    def run(target):
        v = tw.Variable(np.eye(3, dtype=np.float32), name=f"gpu2_cpu_var_{target}")

        @tw.compile(target=target)
        def step(x):
            with tw.device("/CPU:0"):
                v.assign_add(x * 0.5)
                r = v.read_value()
            return tw.matmul(x, r)
        x = np.arange(9, dtype=np.float32).reshape(3, 3) / 10
        return [step(x) for _ in range(2)], v.numpy(), step.get_concrete_function(x)

    got, value, cf = run("gpu")
    want, want_value, _ = run("reference")
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(value, want_value, rtol=1e-6)
    assert "is placed on /job:localhost/replica:0/task:0/device:CPU:0 and uses a resource" \
        in cf.executable.native_reason


def run_placed(f, args):
    """The partitioned graph of `f` (a function and its arguments, or a trace)."""
    from tensorweave.compiler.pipeline import run_pipeline
    cf = f.get_concrete_function(*args) if hasattr(f, "get_concrete_function") else f
    return run_pipeline(cf.graph, "partitioned")


def test_the_partitioned_graph_has_one_pair_per_tensor_and_direction():
    f = tw.compile(_split, target="reference")
    g = run_placed(f, _args(0))
    sends = [n for n in g.nodes if n.op == "Send"]
    directions = sorted((n.attrs["send_device"].rsplit("/", 1)[-1],
                         n.attrs["recv_device"].rsplit("/", 1)[-1]) for n in sends)
    assert directions == [("device:CPU:0", "device:GPU:0"), ("device:GPU:0", "device:CPU:0")]


def _noisy(x):
    with tw.device("/GPU:0"):
        y = tw.matmul(x, x, name="mm")
        return tw.cumsum(y, axis=1, name="scan")  # no GPU kernel


def test_soft_placement_runs_ops_without_a_gpu_kernel_on_the_cpu():
    f = tw.compile(_noisy, target="reference")
    x = np.arange(9, dtype=np.float32).reshape(3, 3) / 9
    np.testing.assert_allclose(f(x), np.cumsum(x @ x, axis=1), rtol=1e-5)
    assert "scan" not in gpu_runtime().fallbacks  # placed on the CPU, not run on the host
    text = f.get_concrete_function(x).ir("placed")
    scan = next(line for line in text.splitlines() if '"tw.Cumsum"' in line)
    assert "soft placement (requested device '/GPU:0': no GPU kernel for Cumsum)" in scan
    assert "device:CPU:0" in scan
    mm = next(line for line in text.splitlines() if '"tw.MatMul"' in line)
    assert "device:GPU:0" in mm


def test_dump_stage_placed_prints_the_reason(tmp_path, capsys):
    src = tmp_path / "model.py"
    src.write_text("import tensorweave as tw\n\n"
                   "def f(x):\n"
                   "    with tw.device('/GPU:0'):\n"
                   "        return tw.cumsum(tw.matmul(x, x), axis=0, name='scan')\n")
    assert main(["dump", f"{src}:f", "--stage", "placed", "--signature", "x:f32[4,4]"]) in (0, None)
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if '"tw.Cumsum"' in ln)
    assert "no GPU kernel for Cumsum" in line and "device:CPU:0" in line


def test_without_soft_placement_an_op_without_a_gpu_kernel_is_an_error():
    tw.config.set_soft_device_placement(False)
    try:
        f = tw.compile(_noisy, target="reference")
        with pytest.raises(InvalidArgumentError, match=r"Cumsum.*no GPU kernel for Cumsum"):
            f(np.ones((2, 2), np.float32))
    finally:
        tw.config.set_soft_device_placement(True)


def test_kernel_errors_on_the_gpu_name_the_op_and_line():
    def f(params, idx):
        with tw.device("/GPU:0"):
            return tw.gather(params, idx)

    g = tw.compile(f, target="reference")
    params = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(g(params, np.array([2, 0], np.int32)), params[[2, 0]])
    with pytest.raises(InvalidArgumentError, match=r"Gather.*test_placement.py"):
        g(params, np.array([3], np.int32))


def test_a_v1_session_runs_ops_on_the_gpu():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 4])
        w = tf.Variable(np.eye(4, dtype=np.float32) * 2, name="w")
        with tf.device("/GPU:0"):
            y = tf.nn.softmax(tf.matmul(x, w))
        loss = tf.reduce_sum(y * y)
        init = tf.global_variables_initializer()
    placed_on = {op.name: op.device for op in graph.get_operations()}
    assert any("GPU" in (d or "") for d in placed_on.values())
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        x_val = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
        before = gpu_runtime().stats()
        got_y, got_loss = sess.run([y, loss], {x: x_val})
        after = gpu_runtime().stats()
    logits = x_val @ (np.eye(4, dtype=np.float32) * 2)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got_y, want, rtol=1e-5)
    np.testing.assert_allclose(got_loss, (want * want).sum(), rtol=1e-5)
    assert after["uploads"] > before["uploads"] and after["downloads"] > before["downloads"]


def test_a_training_step_with_its_forward_pass_on_the_gpu_matches_the_reference():
    def train(target, device):
        rng = np.random.default_rng(4)
        w = tw.Variable(rng.normal(size=(6, 3)).astype(np.float32) * 0.3, name="gpu_split/w")
        opt = tw.optimizers.SGD(0.1)

        @tw.compile(target=target)
        def step(x, y):
            with tw.device(device):
                logits = tw.matmul(x, w)
                loss = tw.reduce_mean(tw.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=y, logits=logits))
            opt.minimize(loss, var_list=[w])
            return loss

        x = rng.normal(size=(4, 6)).astype(np.float32)
        y = rng.integers(0, 3, 4).astype(np.int64)
        return [float(step(x, y)) for _ in range(3)], w.numpy()

    before = gpu_runtime().stats()
    losses, w = train("reference", "/GPU:0")
    assert gpu_runtime().stats()["uploads"] >= before["uploads"] + 3  # it ran on the GPU
    ref_losses, ref_w = train("reference", "/CPU:0")
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    np.testing.assert_allclose(w, ref_w, rtol=1e-5, atol=1e-6)
    assert losses[-1] < losses[0]


def test_a_variable_placed_on_the_gpu_is_read_and_updated_there():
    def run(device):
        with tw.device(device):
            v = tw.Variable(np.eye(3, dtype=np.float32), name=f"gpu_var_{device[1:4]}")

        @tw.compile(target="reference")
        def step(x):
            with tw.device(device):
                v.assign_add(tw.matmul(x, v))
                return tw.reduce_sum(v)
        x = np.arange(9, dtype=np.float32).reshape(3, 3) / 10
        totals = [float(step(x)) for _ in range(3)]
        return totals, v.numpy(), step.get_concrete_function(x)

    totals, value, cf = run("/GPU:0")
    want_totals, want_value, _ = run("/CPU:0")
    np.testing.assert_allclose(totals, want_totals, rtol=1e-6)
    np.testing.assert_allclose(value, want_value, rtol=1e-6)
    placed = run_placed(cf, ())
    handle = next(n for n in placed.nodes if n.op == "VarHandle")
    assert handle.assigned_device == GPU0


def test_a_gpu_product_fused_with_its_epilogue_runs_on_the_gpu():
    """The cpu target's epilogue stage makes tanh(x @ w + b) on GPU:0 one FusedMatMul:
    its product and cluster have GPU code, so the GPU partition runs it there (it ran
    on the host: 'FusedMatMul runs its regions on the host')."""
    def f(x, w, b):
        with tw.device("/GPU:0"):
            z = tw.tanh(tw.matmul(x, w) + b)
        return tw.reduce_sum(z, axis=1)

    args = _args(3)
    known_fallbacks = dict(gpu_runtime().fallbacks)
    fn = tw.compile(f, target="cpu")
    np.testing.assert_allclose(fn(*args), np.tanh(args[0] @ args[1] + args[2]).sum(1),
                               rtol=2e-5, atol=1e-6)
    from tensorweave.compiler.pipeline import run_pipeline
    graph = run_pipeline(fn.get_concrete_function(*args).graph, "epilogue", target="cpu")
    assert [n.assigned_device for n in graph.nodes if n.op == "FusedMatMul"] == [GPU0]
    assert gpu_runtime().fallbacks == known_fallbacks
