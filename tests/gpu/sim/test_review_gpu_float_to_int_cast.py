"""Float to integer Cast on the gpu target: NaN, values out of the integer's range and
values that wrap in a narrow integer give the reference's (NumPy's on x86, the cpu
target's) results on a GPU too.

The simulator converts with NumPy, so it computes x86's answers whatever the kernel
does. Here its conversions of floats to integers follow the PTX numba-cuda emits
instead (`_ptx_float_to_int`): PTX's cvt.rzi saturates to the destination and gives 0
for NaN, and int8/uint8 go through cvt.rzi.s16/u16. A kernel that converts an
unguarded float gives, on a GPU, uint8(-1.0) = 0 (reference 255), int16(70000.0) =
32767 (4464), int32(NaN) = 0 (-2147483648)."""

from __future__ import annotations

import numpy as np
import pytest
from numba.core.types import scalars

import tensorweave as tw

# the integer each float conversion of numba-cuda saturates to (PTX for sm_80/sm_90)
_PTX_VIA = {"int8": np.int16, "uint8": np.uint16, "int16": np.int16, "uint16": np.uint16,
            "int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64}


def _ptx_float_to_int(name: str, value: float):
    via = _PTX_VIA[name]
    if np.isnan(value):
        return getattr(np, name)(0)
    info = np.iinfo(via)
    t = np.trunc(np.float64(value))
    clamped = via(info.min if t <= info.min else info.max if t >= info.max else int(t))
    return getattr(np, name)(clamped)  # the narrowing from 16 bits wraps


@pytest.fixture
def gpu_conversions(monkeypatch):
    """The simulator's ``int8(x)`` ... of a float converts as the GPU does."""
    ordinary = scalars.Integer.cast_python_value

    def cast(self, value):
        if isinstance(value, (float, np.floating)):
            return _ptx_float_to_int(self.name, value)
        return ordinary(self, value)
    monkeypatch.setattr(scalars.Integer, "cast_python_value", cast)


VALUES = [0.0, -0.0, 2.9, -2.9, 127.5, -128.7, 255.9, 300.0, -1.0, -129.0, 70000.0,
          -70000.0, 2.0 ** 31, -(2.0 ** 31), 3e9, -3e9, 2.0 ** 63, -(2.0 ** 63), 1e20,
          np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("src", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("dst", [tw.int8, tw.uint8, tw.int16, tw.int32, tw.int64], ids=str)
def test_float_to_int_cast_as_the_reference(gpu_conversions, src, dst):
    x = np.array(VALUES, src)
    fn = lambda a: tw.cast(a * 1.0, dst)  # noqa: E731 - a cluster, not a bare Cast
    want = np.asarray(tw.compile(fn, target="reference")(x))
    got = np.asarray(tw.compile(fn, target="gpu")(x))
    np.testing.assert_array_equal(got, want)


def test_the_model_is_what_an_unguarded_conversion_gives(gpu_conversions):
    # the model itself (a check that cannot pass vacuously): PTX's answers, not NumPy's
    from numba import int8, int32, uint8
    assert uint8(np.float32(-1.0)) == 0 and int8(np.float32(300.0)) == 44
    assert int32(np.float64(np.nan)) == 0 and int32(np.float64(3e9)) == 2 ** 31 - 1
