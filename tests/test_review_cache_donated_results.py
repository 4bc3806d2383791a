"""Review: a result buffer given up through ``donate_argnums`` is never handed out again
read-only.

Donation makes the donated array read-only (its memory now holds the donating call's
result). When that array was a result of another compiled function, that function
still kept it as a spare result buffer (the native dispatcher's pool, or the Python
path's spares) and reused it, read-only flag and all, once the caller let go of it:
``out = f(x); out += 1`` then raised "output array is read-only", depending on which
buffers happened to be reused. Spare buffers are now reused only while writeable.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw


@pytest.mark.parametrize("native", ["1", "0"])
def test_a_result_donated_elsewhere_does_not_come_back_read_only(monkeypatch, native):
    monkeypatch.setenv("TW_NATIVE_DISPATCH", native)
    f = tw.compile(lambda x: x * 2.0, target="cpu")
    g = tw.compile(lambda x: x + 1.0, target="cpu", donate_argnums=0)
    x = np.ones(4, np.float32)
    for _ in range(3):
        f(x)
    r = f(x)
    y = g(r)  # r is given up: g's result may take its memory, and r becomes read-only
    np.testing.assert_array_equal(y, [3.0] * 4)
    del r, y
    for _ in range(3):
        out = f(x)
        assert out.flags.writeable
        out += 1.0  # (raised ValueError: output array is read-only)
        np.testing.assert_array_equal(out, [3.0] * 4)
    if native == "1":  # (the native dispatcher answered those calls)
        assert sum(f._dispatcher.hit_counts().values()) >= 3
