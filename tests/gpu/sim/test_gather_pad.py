"""GatherNd with batch_dims (the gather with batch dims of the op set: Gather itself takes
batch_dims=0 only) and PadGrad in every mode on the gpu target, against the reference:
random shapes, batch dims, index depths, paddings; out-of-range indices name the op and
the user's line; both run as kernels, not host calls."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tensorweave.errors import InvalidArgumentError
from tests.gpu.sim.test_cases import assert_close


def _no_host_calls(fn, *arrays) -> None:
    exe = tw.compile(fn, target="gpu").get_concrete_function(*arrays).executable
    exe(*arrays)
    assert exe.native_reason is None and exe.fallbacks == {}


@settings(settings.get_profile("gpu-sim"))
@given(data=st.data())
def test_gather_nd_with_batch_dims_matches_the_reference(data):
    bd = data.draw(st.integers(0, 2), label="batch_dims")
    depth = data.draw(st.integers(0 if bd else 1, 2), label="depth")
    batch = data.draw(st.lists(st.integers(1, 3), min_size=bd, max_size=bd))
    indexed = data.draw(st.lists(st.integers(1, 4), min_size=depth, max_size=depth))
    rest = data.draw(st.lists(st.integers(1, 3), max_size=2))
    lead = data.draw(st.lists(st.integers(1, 3), max_size=2), label="index dims")
    dtype = data.draw(st.sampled_from([np.float32, np.float64, np.int32, np.int8]))
    idt = data.draw(st.sampled_from([np.int32, np.int64]))
    params = data.draw(hnp.arrays(dtype, batch + indexed + rest,
                                  elements=st.integers(-100, 100).map(float)
                                  if np.dtype(dtype).kind == "f" else st.integers(-100, 100)))
    cols = [data.draw(hnp.arrays(idt, batch + lead, elements=st.integers(0, n - 1)))
            for n in indexed]
    indices = np.stack(cols, axis=-1) if cols else np.zeros(batch + lead + [0], idt)

    def f(p, i):
        return tw.gather_nd(p, i, batch_dims=bd)
    assert_close(tw.compile(f, target="gpu")(params, indices),
                 tw.compile(f, target="reference")(params, indices))
    if params.size and indices.size:
        _no_host_calls(f, params, indices)


def test_a_gather_nd_index_out_of_range_names_the_op_line_and_index():
    def f(p, i):
        return tw.gather_nd(p, i, batch_dims=1)
    g = tw.compile(f, target="gpu")
    p = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    ok = np.array([[[2], [0]], [[1], [1]]], np.int32)
    np.testing.assert_array_equal(g(p, ok), tw.compile(f, target="reference")(p, ok))
    # the reference's wording, the bad index's coordinates quoted
    with pytest.raises(InvalidArgumentError,
                       match=r"GatherNd 'gather_nd' \(.*test_gather_pad.py:\d+\): "
                             r"indices\[0,1\] = \[3\] does not index into param shape "
                             r"\[2,3,2\] \(after batch_dims=1\)"):
        g(p, np.array([[[2], [3]], [[1], [1]]], np.int32))
    with pytest.raises(InvalidArgumentError, match=r"indices\[1,0\] = \[-7\] does not index"):
        g(p, np.array([[[2], [0]], [[-7], [1]]], np.int32))  # negative: out of range too


@settings(settings.get_profile("gpu-sim"))
@given(data=st.data())
def test_pad_gradients_match_the_reference_in_every_mode(data):
    mode = data.draw(st.sampled_from(["CONSTANT", "REFLECT", "SYMMETRIC"]))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4))
    slack = 1 if mode == "REFLECT" else 0  # REFLECT pads at most size - 1
    paddings = [[data.draw(st.integers(0, n - slack)), data.draw(st.integers(0, n - slack))]
                for n in shape]
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    x = data.draw(hnp.arrays(dtype, shape, elements=st.floats(-4, 4, width=32)))

    padded = np.pad(np.zeros(shape), paddings).shape
    weights = (np.arange(np.prod(padded)) % 7 - 3).reshape(padded).astype(dtype)

    def f(x):  # weights differ by position, so a misplaced mirror image shows
        return tw.gradients(tw.reduce_sum(tw.pad(x, paddings, mode=mode) * weights), [x])[0]
    assert_close(tw.compile(f, target="gpu")(x), tw.compile(f, target="reference")(x))
    _no_host_calls(f, x)


def test_integer_pad_grad_wraps_like_the_reference():
    from tensorweave.frontend.building import apply_op1
    g = (np.arange(30, dtype=np.int64).reshape(5, 6) * 37 % 251 - 125).astype(np.int8)

    def f(g):
        return apply_op1("PadGrad", [g], {"paddings": [2, 1, 1, 2], "mode": "SYMMETRIC"})
    np.testing.assert_array_equal(tw.compile(f, target="gpu")(g),
                                  tw.compile(f, target="reference")(g))
    _no_host_calls(f, g)
