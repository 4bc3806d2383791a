"""A graph that placement puts entirely on the (simulated) GPU, compiled for the cpu
target: it runs on the GPU runtime through the dataflow executor, as TensorFlow runs
what placement put on a GPU, not as the cpu target's native CPU step (which ignored the
placement: the graph has one device, so no Send/Recv told it apart)."""

from __future__ import annotations

import numpy as np

import tensorweave as tw
from tensorweave.targets.gpu.runtime import gpu_runtime


def _on_gpu(x, w):
    with tw.device("/GPU:0"):
        return tw.tanh(tw.matmul(x, w) + 1.0)


def test_a_graph_placed_on_the_gpu_runs_there_on_the_cpu_target():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 3)).astype(np.float32)
    w = rng.normal(size=(3, 5)).astype(np.float32)
    f = tw.compile(_on_gpu, target="cpu")
    rt = gpu_runtime()
    before = rt.stats()
    got = f(x, w)
    np.testing.assert_allclose(got, np.tanh(x @ w + 1.0), rtol=2e-5, atol=1e-6)
    after = rt.stats()
    assert after["uploads"] > before["uploads"] and after["downloads"] > before["downloads"]
    exe = f.get_concrete_function(x, w).executable
    assert "placed on /job:localhost/replica:0/task:0/device:GPU:0" in exe.native_reason


def test_a_graph_on_the_cpu_stays_a_native_step():
    f = tw.compile(lambda x: tw.tanh(x) + 1.0, target="cpu")
    x = np.ones(3, np.float32)
    np.testing.assert_allclose(f(x), np.tanh(x) + 1.0, rtol=1e-6)
    assert f.get_concrete_function(x).executable.native_reason is None
