"""A library returns its results flat, in the order the Python function's structure
flattens them. The header labelled them only 'output0', 'output1', ...: for a function
returning ``{"probs": p, "logits": l}`` a C caller could not tell which buffer is which
(tensorweave keeps a dict's insertion order where TensorFlow sorts its keys, so assuming
TensorFlow's order read the logits as the probabilities). Each result now says where
the function returned it; a key with ``*/`` in it does not end the comment."""

from __future__ import annotations

import collections
import subprocess

import numpy as np

import tensorweave as tw
from tensorweave.targets.cpu.aot import build_library, c_compiler
from tests.helpers import needs_c_compiler
from tests.test_review_aot_differential import call_library

S = tw.TensorSpec
Pair = collections.namedtuple("Pair", ["low", "high"])


@needs_c_compiler
def test_each_result_says_where_the_function_returned_it(tmp_path):
    def model(x):
        return {"probs": tw.nn.softmax(x), "logits": x * 2.0,
                "rest*/": (7, Pair(tw.reduce_min(x), tw.reduce_max(x)))}

    f = tw.compile(model, input_signature=[S([3], tw.float32)])
    lib = build_library(f.get_concrete_function(), str(tmp_path), name="paths")
    header = open(lib.header).read()
    assert "/* result 0 'output0', returned as ['probs']: f32[3] (float) */" in header
    assert "/* result 1 'output1', returned as ['logits']: f32[3] (float) */" in header
    assert "/* result 2 'output3', returned as ['rest*\\/'][1].low: f32[] (float) */" in header
    assert "/* result 3 'output4', returned as ['rest*\\/'][1].high: f32[] (float) */" in header
    x = np.array([1.0, -2.0, 0.5], np.float32)
    want = f(x)
    status, got = call_library(lib, [x])
    assert status == 0
    np.testing.assert_allclose(got[0], want["probs"], rtol=1e-6)
    np.testing.assert_array_equal(got[1], want["logits"])
    assert got[2] == want["rest*/"][1].low and got[3] == want["rest*/"][1].high
    # the header is still valid C
    src = tmp_path / "use.c"
    src.write_text('#include "paths.h"\nint main(void) { return PATHS_NUM_RESULTS != 4; }\n')
    subprocess.run([*c_compiler().split(), "-fsyntax-only", f"-I{tmp_path}", str(src)],
                   check=True, capture_output=True)


@needs_c_compiler
def test_a_single_result_has_no_path(tmp_path):
    f = tw.compile(lambda x: x + 1.0, input_signature=[S([2], tw.float32)])
    header = open(build_library(f.get_concrete_function(), str(tmp_path), name="one").header
                  ).read()
    assert "/* result 0 'output0': f32[2] (float) */" in header
