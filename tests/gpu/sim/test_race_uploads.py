"""A GPU node of the dataflow executor given host arrays keeps their uploads until its
step has read them: an upload's block goes back to the caching allocator's pool when
its `DeviceTensor` dies, where the next input's upload (or another thread's allocation)
takes it and overwrites it (before: a @ b came out 19.5 off, every call)."""

from __future__ import annotations

import numpy as np

import tensorweave as tw
from tensorweave.runtime.kernel_context import CallCounters
from tensorweave.runtime.resources import default_resource_manager
from tensorweave.targets.gpu import runner
from tensorweave.targets.gpu.runtime import gpu_runtime


def test_host_inputs_of_a_gpu_node_stay_uploaded_while_another_thread_allocates(monkeypatch):
    a = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    b = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    f = tw.compile(lambda x, y: tw.matmul(x, y), target="reference")
    node = next(n for n in f.get_concrete_function(a, b).graph.nodes if n.op == "MatMul")
    rt = gpu_runtime()
    kernel = rt.prepare(node)
    args = (default_resource_manager(), CallCounters())
    np.testing.assert_allclose(np.asarray(kernel([a, b], *args)[0]), a @ b, rtol=1e-6)

    run_step = runner.GpuStep.__call__

    def with_another_thread_allocating(step, arrays, keep_on_device=False):
        # what another thread may do between the uploads and the step's reads: take
        # blocks of the uploads' sizes from the pool and fill them
        taken = [rt.allocator.allocate(max(1, x.size * x.dtype.itemsize)) for x in arrays]
        for blk in taken:
            blk.data.copy_to_device(np.full(blk.nbytes, 0x7F, np.uint8))
        try:
            return run_step(step, arrays, keep_on_device)
        finally:
            for blk in taken:
                rt.allocator.free(blk)

    monkeypatch.setattr(runner.GpuStep, "__call__", with_another_thread_allocating)
    got = kernel([a, b], *args)[0]
    np.testing.assert_allclose(np.asarray(got), a @ b, rtol=1e-6)
