"""A gpu step that runs node by node (a host op like ``tw.size`` of a value with a dim
known only at run time) specializes each node to the call's shapes. A fused node's outer
types can be static while its region still holds the traced unknown dim: the region was
not specialized and the FusedMatMul of the gradient failed to lower ("int() argument
must be ... not 'NoneType'", seen training tw.keras models on the gpu target, in the
simulator and on an H200)."""

from __future__ import annotations

import numpy as np

import tensorweave as tw


def test_a_step_with_a_run_time_size_trains_on_the_gpu_target_as_on_the_reference():
    spec = [tw.TensorSpec([None, 8], tw.float32), tw.TensorSpec([None, 4], tw.float32)]
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((8, 4)).astype(np.float32)
    x = rng.standard_normal((6, 8)).astype(np.float32)
    y = rng.standard_normal((6, 4)).astype(np.float32)
    results = {}
    for target in ("reference", "gpu"):
        w = tw.Variable(w0)

        def step(x, y, w=w):
            with tw.GradientTape() as tape:
                d = tw.matmul(x, w) - y
                loss = tw.reduce_sum(tw.square(d)) / tw.cast(tw.size(d), tw.float32)
            w.assign_sub(0.1 * tape.gradient(loss, w), read_value=False)
            return loss
        f = tw.compile(step, input_signature=spec, target=target)
        losses = [float(f(x[:n], y[:n])) for n in (6, 3, 6)]  # two batch sizes
        results[target] = (losses, w.numpy())
    np.testing.assert_allclose(results["gpu"][0], results["reference"][0], rtol=1e-5)
    np.testing.assert_allclose(results["gpu"][1], results["reference"][1], rtol=1e-5,
                               atol=1e-6)
