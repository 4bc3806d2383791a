"""With no GPU and no simulator, the gpu target says so instead of failing obscurely."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.errors import UnavailableError


def test_gpu_target_without_a_gpu_raises_unavailable():
    pytest.importorskip("numba.cuda")
    if tw.config.list_physical_devices("GPU"):
        pytest.skip("this machine has a GPU")
    f = tw.compile(lambda x: x + 1, target="gpu")
    with pytest.raises(UnavailableError, match="NUMBA_ENABLE_CUDASIM"):
        f(np.ones(2, np.float32))
    assert tw.config.list_physical_devices("GPU") == []
