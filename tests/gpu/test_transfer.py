"""Host <-> device copies of dtypes Python's buffer protocol cannot describe: numba-cuda
copies through that protocol, and a bfloat16 copy failed on an H200 ("cannot include
dtype 'E' in a buffer"). Checked on a stand-in device array that copies as numba-cuda
does (through ``memoryview``)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tensorweave.targets.gpu import transfer


class _DeviceArray:
    """Device memory as numba-cuda copies it: through the host array's buffer."""

    def __init__(self, shape, dtype, raw=None):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self._raw = raw if raw is not None else bytearray(
            int(np.prod(shape)) * self.dtype.itemsize)

    def view(self, dtype):
        assert np.dtype(dtype).itemsize == self.dtype.itemsize
        return _DeviceArray(self.shape, dtype, self._raw)

    def copy_to_device(self, host):
        self._raw[:] = memoryview(np.ascontiguousarray(host)).cast("B")

    def copy_to_host(self, out=None):
        out = np.empty(self.shape, self.dtype) if out is None else out
        memoryview(out).cast("B")[:] = self._raw
        return out


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16, np.float32, np.int64,
                                   np.bool_])
def test_every_dtype_round_trips_with_its_bytes(dtype):
    host = (np.arange(-3, 3).reshape(2, 3) * 1.5).astype(dtype)
    dev = _DeviceArray(host.shape, host.dtype)
    transfer.to_device(dev, host)
    back = transfer.to_host(dev)
    assert back.dtype == host.dtype and back.tobytes() == host.tobytes()
    out = np.empty_like(host)
    assert transfer.to_host(dev, out) is out and out.tobytes() == host.tobytes()


def test_the_stand_in_fails_as_numba_cuda_did_without_the_helpers():
    host = np.ones(3, ml_dtypes.bfloat16)
    with pytest.raises(ValueError, match="cannot include dtype"):
        _DeviceArray(host.shape, host.dtype).copy_to_device(host)
