"""Host <-> device copies of arrays of any dtype.

numba-cuda copies a host array through Python's buffer protocol, which has no format for
ml_dtypes' types: a bfloat16 copy failed on an H200 with "cannot include dtype 'E' in a
buffer" (the simulator copies without the protocol, so its tests did not see it). Such
arrays are copied as unsigned integers of their size: the same bytes.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np


@cache
def _bits(dtype: np.dtype) -> np.dtype | None:
    """The unsigned integer dtype to copy `dtype` as, or None when its own buffer works."""
    try:
        memoryview(np.empty(0, dtype))
        return None
    except (ValueError, TypeError):
        return np.dtype(f"u{dtype.itemsize}")


def upload_source(value: Any) -> np.ndarray:
    """Host array `value` laid out as a copy to the device reads it: C-contiguous with no
    zero strides. NumPy calls a view such as ``np.ones(6)[:, None]`` (strides (8, 0))
    contiguous, but numba's device copy drops its stride-0 axes first and then finds
    shapes (6,) and (6, 1) that differ."""
    value = np.asarray(value)
    if value.flags.c_contiguous and 0 not in value.strides:
        return value
    return np.array(value, order="C", copy=True)


def to_device(dev: Any, host: Any) -> None:
    """``dev.copy_to_device(host)`` for a host array of any dtype and layout (shapes
    must match): laid out by `upload_source` first."""
    host = upload_source(host)
    bits = _bits(np.dtype(host.dtype))
    if bits is None:
        dev.copy_to_device(host)
    else:
        dev.view(bits).copy_to_device(host.view(bits))


def to_host(dev: Any, out: np.ndarray | None = None) -> np.ndarray:
    """``dev.copy_to_host(out)`` for a device array of any dtype; returns the host array."""
    dtype = np.dtype(dev.dtype)
    bits = _bits(dtype)
    if bits is None:
        return dev.copy_to_host() if out is None else dev.copy_to_host(out)
    if out is None:
        return dev.view(bits).copy_to_host().view(dtype)
    dev.view(bits).copy_to_host(out.view(bits))
    return out
