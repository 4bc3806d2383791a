"""Random ops on the gpu target draw the reference target's numbers (the Philox4x32-10
recipe of compiler/ops/random.py): stateless ops for any seed, shape and dtype; stateful
ops call after call (the call index), also beside a host call of the same step; and
`tw.random.Generator` draws. Uniform and integer results must be bitwise equal on any
device; in the simulator the normal ones are too (Python's libm on both sides), so the
comparison is exact here. On a GPU (TW_GPU_TESTS_ON_DEVICE=1) float64 normals may differ
in the last place (libdevice's log/cos/sin, fused multiply-adds), hence `_same`."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.frontend.building import apply_op1
from tests.gpu.cases import stateful_draws

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
FLOAT_OPS = ["StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal"]
INT_DTYPES = [tw.int8, tw.uint8, tw.int16, tw.int32, tw.int64]


def _same(op: str, actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if SIMULATOR or "Uniform" in op or expected.dtype != np.float64:
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual, expected, rtol=1e-14, atol=1e-15)


def _both(fn, *args):
    """`fn` compiled for the gpu and reference targets; the gpu one has no host call."""
    gpu, ref = tw.compile(fn, target="gpu"), tw.compile(fn, target="reference")
    exe = gpu.get_concrete_function(*args).executable
    return gpu, ref, exe


def _seeds():
    int64 = st.integers(-2**63, 2**63 - 1)
    return st.one_of(
        st.tuples(st.integers(-2**31, 2**31 - 1), st.integers(-2**31, 2**31 - 1)).map(
            lambda p: np.array(p, np.int32)),
        st.tuples(int64, int64).map(lambda p: np.array(p, np.int64)))


SHAPES = st.lists(st.integers(0, 5), min_size=0, max_size=3).map(tuple)


@given(op=st.sampled_from(FLOAT_OPS), dtype=st.sampled_from([tw.float32, tw.float64]),
       shape=SHAPES, seed=_seeds())
def test_stateless_floats_match_the_reference(op, dtype, shape, seed):
    def f(s):
        return apply_op1(op, [s], {"shape": shape, "dtype": dtype})
    gpu, ref, exe = _both(f, seed)
    _same(op, gpu(seed), ref(seed))
    if int(np.prod(shape)):  # an empty draw has nothing to launch: a host call
        assert exe.fallbacks == {} and exe.native_reason is None


@given(dtype=st.sampled_from(INT_DTYPES), shape=SHAPES, seed=_seeds(), data=st.data())
def test_stateless_integers_match_the_reference(dtype, shape, seed, data):
    info = np.iinfo(dtype.np)
    lo = data.draw(st.integers(int(info.min), int(info.max)), label="minval")
    hi = data.draw(st.integers(lo + 1, int(info.max) + 1), label="maxval")
    full = data.draw(st.booleans(), label="full range")

    def f(s):
        if full:
            return apply_op1("StatelessRandomUniformFullInt", [s],
                             {"shape": shape, "dtype": dtype})
        return apply_op1("StatelessRandomUniformInt", [s],
                         {"shape": shape, "dtype": dtype, "minval": lo, "maxval": hi})
    gpu, ref, exe = _both(f, seed)
    _same("Uniform", gpu(seed), ref(seed))
    if int(np.prod(shape)):
        assert exe.fallbacks == {} and exe.native_reason is None


def test_the_int64_extremes_and_widest_spans():
    seed = np.array([7, -9], np.int64)
    for lo, hi in [(-2**63, 2**63 - 1), (-2**63, -2**63 + 3), (2**63 - 5, 2**63 - 1),
                   (-1, 2**63 - 1), (-2**62, 2**63 - 2)]:
        def f(s, lo=lo, hi=hi):
            return apply_op1("StatelessRandomUniformInt", [s],
                             {"shape": (9,), "dtype": tw.int64, "minval": lo, "maxval": hi})
        gpu, ref, _ = _both(f, seed)
        out = gpu(seed)
        np.testing.assert_array_equal(out, ref(seed))
        assert ((out >= lo) & (out < hi)).all()


@pytest.mark.parametrize("dtype", [tw.float32, tw.float64])
def test_stateful_ops_draw_the_reference_stream_call_after_call(dtype):
    f = stateful_draws(dtype, tw.int32, -3, 40, seed2=2**63 + 1)
    gpu, ref, exe = _both(f)
    draws = []
    for _ in range(3):  # the call index advances: three different draws, each matching
        got, want = gpu(), ref()
        for op, a, b in zip(["Uniform", "Normal", "Truncated", "Uniform"], got, want):
            _same(op, a, b)
        draws.append(got[0])
    assert not np.array_equal(draws[0], draws[1]) and not np.array_equal(draws[1], draws[2])
    assert exe.fallbacks == {} and exe.native_reason is None


def test_a_host_call_and_a_kernel_share_the_call_counters():
    # float16 has no GPU code: that op runs on the host in the same step, its call index
    # from the same counters as the kernel's
    def f(x):
        like = apply_op1("RandomUniformLike", [x], {"seed": 3, "seed2": 4})
        half = apply_op1("RandomNormal", [], {"shape": (4,), "dtype": tw.float16, "seed": 3,
                                              "seed2": 5})
        return like, half
    x = np.zeros((2, 3), np.float32)
    gpu, ref, exe = _both(f, x)
    for _ in range(2):
        for a, b in zip(gpu(x), ref(x)):
            np.testing.assert_array_equal(a, b)
    assert list(exe.fallbacks.values()) == ["RandomNormal: no GPU code for float16 (RandomNormal)"]


def test_generator_draws_match_the_reference():
    gens = [tw.random.Generator.from_seed(1234) for _ in range(2)]

    def make(g):
        def f():
            return (g.normal([3, 4]), g.uniform([5], 0, 100, dtype=tw.int64),
                    g.truncated_normal([2, 2], dtype=tw.float64), g.make_seeds(2))
        return f
    gpu = tw.compile(make(gens[0]), target="gpu")
    ref = tw.compile(make(gens[1]), target="reference")
    for _ in range(3):
        for op, a, b in zip(["Normal", "Uniform", "Truncated", "Uniform"], gpu(), ref()):
            _same(op, a, b)
    np.testing.assert_array_equal(np.asarray(gens[0].state.read_value()),
                                  np.asarray(gens[1].state.read_value()))
    assert gpu.get_concrete_function().executable.fallbacks == {}


def test_the_call_index_counts_calls_of_every_argument_shape():
    # one GPU step per shape, one call counter per node: calls of other shapes in
    # between advance it, as on the reference target
    def f(x):
        return apply_op1("RandomUniformLike", [x], {"seed": 3, "seed2": 4}) + x
    spec = [tw.TensorSpec([None, 3], tw.float32)]
    gpu = tw.compile(f, target="gpu", input_signature=spec)
    ref = tw.compile(f, target="reference", input_signature=spec)
    for n in (2, 4, 2, 5):
        x = np.full((n, 3), n, np.float32)
        np.testing.assert_array_equal(gpu(x), ref(x))
    assert gpu.get_concrete_function(np.zeros((2, 3), np.float32)).executable.fallbacks == {}
