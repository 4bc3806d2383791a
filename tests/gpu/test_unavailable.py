"""With no GPU and no simulator, the gpu target says so instead of failing obscurely."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.errors import InvalidArgumentError, UnavailableError


def test_gpu_target_without_a_gpu_raises_unavailable():
    pytest.importorskip("numba.cuda")
    if tw.config.list_physical_devices("GPU"):
        pytest.skip("this machine has a GPU")
    f = tw.compile(lambda x: x + 1, target="gpu")
    with pytest.raises(UnavailableError, match="NUMBA_ENABLE_CUDASIM"):
        f(np.ones(2, np.float32))
    assert tw.config.list_physical_devices("GPU") == []


def test_keep_on_device_needs_the_gpu_target():
    with pytest.raises(InvalidArgumentError, match="keep_on_device=True .* target='gpu'"):
        tw.compile(lambda x: x, target="cpu", keep_on_device=True)


class _Interface:
    """A GPU array as CuPy or PyTorch would describe it (the pointer is never read)."""

    __cuda_array_interface__ = {"shape": (2,), "typestr": "<f4", "data": (1 << 40, False),
                                "version": 3, "strides": None}


def test_a_gpu_array_argument_without_a_gpu_raises_unavailable():
    pytest.importorskip("numba.cuda")
    if tw.config.list_physical_devices("GPU"):
        pytest.skip("this machine has a GPU")
    for target in ("reference", "gpu"):
        f = tw.compile(lambda x: x + 1, target=target)
        with pytest.raises(UnavailableError, match="no CUDA GPU"):
            f(_Interface())
