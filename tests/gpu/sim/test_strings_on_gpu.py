"""String tensors with the gpu target: the ops that read strings (ParseExample,
DecodeRaw) are placed on the CPU, their numeric results cross to the GPU and the math
runs there; a string never reaches a GPU kernel (`docs/io.md`)."""

from __future__ import annotations

import numpy as np

import tensorweave as tw
from tensorweave.compiler.pipeline import run_pipeline
from tensorweave.targets.gpu.runtime import gpu_runtime


def _parse_and_compute(serialized, raw):
    d = tw.io.parse_example(serialized, {"x": tw.io.FixedLenFeature([3], tw.float32)})
    v = tw.io.decode_raw(raw, tw.float32)
    return tw.reduce_sum(d["x"] * 2.0, axis=1), tw.matmul(v, tw.transpose(v))


def test_string_ops_run_on_the_host_and_the_math_on_the_gpu():
    ex = tw.train.Example()
    ex.features.feature["x"].float_list.value.extend([1.0, 2.0, 3.5])
    serialized = np.array([ex.SerializeToString()] * 4, object)
    values = np.arange(6, dtype=np.float32)
    raw = np.array([values.tobytes()] * 3, object)
    f = tw.compile(_parse_and_compute, target="gpu")
    rt = gpu_runtime()
    before = rt.stats()
    sums, gram = f(serialized, raw)
    assert np.asarray(sums).tolist() == [13.0] * 4
    np.testing.assert_array_equal(np.asarray(gram), np.full((3, 3), values @ values))
    assert rt.stats()["uploads"] > before["uploads"]
    placed = run_pipeline(f.get_concrete_function(serialized, raw).graph, "placed",
                          target="gpu")
    where = {n.op: n.assigned_device for n in placed.nodes if n.op != "Const"}
    assert where["ParseExample"].endswith("CPU:0") and where["DecodeRaw"].endswith("CPU:0")
    assert where["MatMul"].endswith("GPU:0") and where["Mul"].endswith("GPU:0")
