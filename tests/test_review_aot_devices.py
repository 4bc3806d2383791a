"""An ahead-of-time library runs the whole function on one CPU. With several logical
CPU devices, a function whose nodes were placed on two of them (by ``tw.device`` or by
the cost model) was cut to the first device's partition: the library of ``f`` below had
ONE result, the second one's values (exp(a) * 2), where the caller expects ``c`` first,
with status 0."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.targets.cpu.aot import build_library
from tests.helpers import call_library, needs_c_compiler

pytestmark = needs_c_compiler
S = tw.TensorSpec


@pytest.fixture
def two_cpus():
    before = len(tw.config.list_logical_devices("CPU"))
    tw.config.set_logical_devices("CPU", 2)
    yield
    tw.config.set_logical_devices("CPU", before)


def test_a_function_placed_on_two_cpus_is_compiled_whole(two_cpus, tmp_path):
    @tw.compile(input_signature=[S([3, 3], tw.float32), S([3, 3], tw.float32)])
    def f(a, b):
        with tw.device("/CPU:1"):
            c = tw.matmul(a, b) + 1.0
        with tw.device("/CPU:0"):
            d = tw.exp(a) * 2.0
        return c, d

    a = np.arange(9, dtype=np.float32).reshape(3, 3) / 8
    b = np.eye(3, dtype=np.float32) * 2
    lib = build_library(f.get_concrete_function(), str(tmp_path), name="f")
    assert len(lib.plan.graph.results) == 2
    status, got = call_library(lib, [a, b])
    assert status == 0
    want = f(a, b)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)


def test_a_request_for_a_device_this_process_lacks_does_not_matter(tmp_path):
    @tw.compile(input_signature=[S([3], tw.float32)])
    def g(x):
        with tw.device("/GPU:0"):
            y = x * 3.0
        return y + 1.0

    lib = build_library(g.get_concrete_function(), str(tmp_path), name="g")
    status, (got,) = call_library(lib, [np.array([1, 2, 3], np.float32)])
    assert status == 0
    np.testing.assert_array_equal(got, [4, 7, 10])
