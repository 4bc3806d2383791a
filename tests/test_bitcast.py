"""tw.bitcast: NumPy's byte views as the oracle on hypothesis-drawn shapes and bytes for
every pair of number dtypes, TensorFlow 2.21's results (tests/data/tf_fixtures/
bitcast_random.npz), eagerly and on every target, TF1 graphs, and the refusals."""

import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tests.helpers import TARGETS

FIXTURES = np.load(os.path.join(os.path.dirname(__file__), "data", "tf_fixtures",
                                "bitcast_random.npz"))
NUMBER_DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
                 "float32": np.float32, "float64": np.float64, "int8": np.int8,
                 "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8}


def numpy_bitcast(x, dst):
    """TensorFlow's shape rule on NumPy's byte view."""
    src_size, dst_size = x.dtype.itemsize, np.dtype(dst).itemsize
    if src_size == dst_size:
        shape = x.shape
    elif src_size > dst_size:
        shape = x.shape + (src_size // dst_size,)
    else:
        shape = x.shape[:-1]
    return np.ascontiguousarray(x).reshape(-1).view(dst).reshape(shape)


def everywhere(fn, x):
    yield "eager", np.asarray(fn(tw.constant(x)))
    for target in TARGETS:
        yield target, np.asarray(tw.compile(fn, target=target)(x))


def same_bytes(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()  # (NaN payloads and signed zeros included)


@settings(max_examples=30, deadline=None)
@given(src=st.sampled_from(list(NUMBER_DTYPES)), dst=st.sampled_from(list(NUMBER_DTYPES)),
       lead=st.lists(st.integers(0, 3), max_size=2), seed=st.integers(0, 2**32 - 1))
def test_bitcast_is_numpys_byte_view(src, dst, lead, seed):
    s, d = np.dtype(NUMBER_DTYPES[src]).itemsize, np.dtype(NUMBER_DTYPES[dst]).itemsize
    shape = tuple(lead) + ((d // s,) if d > s else ())
    raw = np.random.default_rng(seed).integers(0, 256, int(np.prod(shape)) * s, np.uint8)
    x = raw.view(NUMBER_DTYPES[src]).reshape(shape)
    want = numpy_bitcast(x, NUMBER_DTYPES[dst])
    for where, got in everywhere(lambda t: tw.bitcast(t, dst), x):
        same_bytes(got, want)


def test_bitcast_is_tensorflows_for_every_pair():
    for src, s_np in NUMBER_DTYPES.items():
        for dst, d_np in NUMBER_DTYPES.items():
            key = f"bitcast/{src}/{dst}"
            x = FIXTURES[f"{key}/in"].view(s_np).reshape(FIXTURES[f"{key}/in_shape"])
            want = FIXTURES[f"{key}/out"].view(d_np).reshape(FIXTURES[f"{key}/out_shape"])
            same_bytes(np.asarray(tw.bitcast(x, dst)), want)


def test_bitcast_round_trips_and_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -3.5], np.float32)
    bits = np.asarray(tw.bitcast(x, tw.int32))
    np.testing.assert_array_equal(bits, x.view(np.int32))
    same_bytes(np.asarray(tw.bitcast(tw.bitcast(x, tw.uint8), tw.float32)), x)
    # the traced shape is known when the graph is built
    shapes = []

    def traced(t):
        y = tw.bitcast(t, tw.uint8)
        shapes.append(tuple(y.shape))
        return y

    same_bytes(np.asarray(tw.compile(traced, target="cpu")(x)), x.view(np.uint8).reshape(7, 4))
    assert shapes == [(7, 4)]


def test_bitcast_in_a_tensorflow1_graph():
    import tensorweave.compat.v1 as tf
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float64, [None, 2])
        y = tf.bitcast(p, tf.int16)
        assert list(y.shape) == [None, 2, 4]
        with tf.Session() as sess:
            x = np.array([[1.5, -2.0], [np.pi, 0.0]])
            same_bytes(sess.run(y, {p: x}), x.view(np.int16).reshape(2, 2, 4))


def test_bitcast_has_no_gradient():
    x = tw.constant(np.array([1.0, 2.0], np.float32))
    with tw.GradientTape() as tape:
        tape.watch(x)
        y = tw.cast(tw.bitcast(x, tw.int32), tw.float32)
    assert tape.gradient(y, x) is None


def test_bitcast_refusals_name_the_op_and_line():
    cases = [
        (np.ones(3, np.bool_), tw.uint8, tw.errors.DTypeError, "bool cannot be bitcast"),
        (np.ones(3, np.uint8), tw.bool, tw.errors.DTypeError, "bool cannot be bitcast"),
        (np.ones((2, 3), np.float32), tw.float64, tw.errors.ShapeError,
         "last dimension of the input must be 2"),
        (np.float32(1), tw.float64, tw.errors.ShapeError, "a scalar cannot be bitcast"),
        (np.ones(3, np.float32), "uint32", tw.errors.DTypeError, "unknown dtype 'uint32'"),
        (np.ones(3, np.float32), "complex64", tw.errors.DTypeError, "no unsigned"),
    ]
    for x, dst, error, text in cases:
        with pytest.raises(error, match=text) as info:
            tw.bitcast(x, dst)
        assert "itcast" in str(info.value).split(":")[0]
        assert "test_bitcast.py" in str(info.value)
