"""The generated header names each buffer's C type. Its table was keyed by "bool" while
a bool's IR name is "i1", so bool arguments and results were described as ``(?)``, and
float16/bfloat16 buffers (a library may pass them through or gather them) as ``(?)``
too: a C programmer had to guess the element size and encoding."""

from __future__ import annotations

import numpy as np

import tensorweave as tw
from tensorweave.targets.cpu.aot import build_library
from tests.helpers import needs_c_compiler
from tests.test_review_aot_differential import call_library

S = tw.TensorSpec


@needs_c_compiler
def test_every_buffer_is_described_with_its_c_type(tmp_path):
    f = tw.compile(lambda b, h, g: (tw.logical_not(b), tw.identity(h), tw.identity(g)),
                   input_signature=[S([3], tw.bool), S([2], tw.float16), S([2], tw.bfloat16)])
    lib = build_library(f.get_concrete_function(), str(tmp_path), name="types")
    header = open(lib.header).read()
    assert "(?)" not in header
    assert "/* arg 0 'b': i1[3] (uint8_t, 0 or 1) */" in header
    assert "/* arg 1 'h': f16[2] (uint16_t, float16 bits) */" in header
    assert "/* arg 2 'g': bf16[2] (uint16_t, bfloat16 bits) */" in header
    assert "/* result 0 'output0', returned as [0]: i1[3] (uint8_t, 0 or 1) */" in header
    # the library reads and writes them so: one byte per bool, two per half
    args = [np.array([True, False, True]), np.array([1.5, -2], np.float16),
            np.array([3, -0.5], tw.bfloat16.np)]
    status, got = call_library(lib, args)
    assert status == 0
    assert got[0].view(np.uint8).tolist() == [0, 1, 0]
    assert got[1].tobytes() == args[1].tobytes() and got[2].tobytes() == args[2].tobytes()
