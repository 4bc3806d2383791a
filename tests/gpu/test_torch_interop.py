"""DLPack and CUDA Array Interface interop with PyTorch on a real GPU (skipped, with the
reason, where there is none: the simulator's "device memory" is host memory, which a
CUDA build of PyTorch cannot take)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw


def _torch_cuda():
    if not tw.config.list_physical_devices("GPU"):  # cheap: before importing torch
        pytest.skip("no CUDA GPU here: interop with PyTorch runs on a GPU only")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip(f"PyTorch {torch.__version__} is not a CUDA build: no interop to check")
    return torch


def test_torch_reads_device_results_without_a_copy():
    torch = _torch_cuda()
    f = tw.compile(lambda x: x * 2.0 + 1.0, target="gpu", keep_on_device=True)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = f(x)
    via_dlpack = torch.from_dlpack(out)
    via_cai = torch.as_tensor(out, device="cuda")
    assert via_dlpack.is_cuda and via_dlpack.data_ptr() == out.__cuda_array_interface__["data"][0]
    assert via_cai.data_ptr() == via_dlpack.data_ptr()
    np.testing.assert_array_equal(via_dlpack.cpu().numpy(), x * 2 + 1)


def test_torch_cuda_tensors_as_arguments():
    torch = _torch_cuda()
    f = tw.compile(lambda a, b: tw.matmul(a, b), target="gpu", keep_on_device=True)
    a = torch.randn(8, 5, device="cuda")
    b = torch.randn(5, 3, device="cuda")
    out = torch.from_dlpack(f(a, b))
    torch.testing.assert_close(out, a @ b, rtol=1e-5, atol=1e-5)
    host = tw.compile(lambda a: a + 1.0, target="gpu")(a)  # NumPy result from a CUDA tensor
    np.testing.assert_allclose(host, (a + 1).cpu().numpy(), rtol=1e-6)
