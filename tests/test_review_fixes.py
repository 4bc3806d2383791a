"""Regression tests for problems found reviewing the work landed since 8887adb: each test
failed before its fix (the fix's commit names what users saw)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.experimental import dlpack


class ReadOnlyDLPack:
    """A producer that exports its buffer read-only (as JAX, and NumPy for a read-only
    array, do) while its owner may still write to it."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __dlpack__(self, **kwargs):
        view = self._array.view()
        view.flags.writeable = False
        return view.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


@pytest.mark.parametrize("export", [
    pytest.param(lambda a: a.__dlpack__(), id="capsule"),
    pytest.param(lambda a: dlpack.to_dlpack(a), id="to_dlpack"),
    pytest.param(ReadOnlyDLPack, id="read-only producer"),
    pytest.param(lambda a: a, id="ndarray"),
])
def test_from_dlpack_owns_a_copy_whatever_the_producer(export):
    # from_dlpack promises a tensor that owns its values; a capsule (or a producer that
    # exports read-only) used to give a tensor sharing the producer's memory, so writing
    # to the producer afterwards changed the "immutable" tensor
    a = np.arange(4.0)
    t = dlpack.from_dlpack(export(a))
    a[0] = 100.0
    np.testing.assert_array_equal(t.numpy(), [0.0, 1.0, 2.0, 3.0])
    assert t.dtype == tw.float64 and t.shape == (4,)
