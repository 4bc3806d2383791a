"""tf.reverse_sequence: every seq_axis/batch_axis pair, lengths 0 and the full length, int32
and int64 lengths, values and gradients against a NumPy loop (float64), and its errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave.compat.v1 as tf
from tensorweave.errors import InvalidArgumentError

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def reference(x, lengths, seq_axis, batch_axis):
    out = x.copy()
    for b in range(x.shape[batch_axis]):
        for t in range(int(lengths[b])):
            src = [slice(None)] * x.ndim
            dst = [slice(None)] * x.ndim
            src[batch_axis] = dst[batch_axis] = b
            src[seq_axis], dst[seq_axis] = t, int(lengths[b]) - 1 - t
            out[tuple(dst)] = x[tuple(src)]
    return out


AXES = [(s, b) for s, b in itertools.permutations(range(3), 2)] + [(-1, 0), (1, -3)]


@settings(max_examples=12, deadline=None)
@given(axes=st.sampled_from(AXES), ldtype=st.sampled_from([np.int32, np.int64]),
       shape=st.tuples(*[st.integers(1, 3)] * 3), seed=st.integers(0, 2**16),
       target=st.sampled_from(["reference", "cpu"]))
def test_values_and_gradients_match_numpy(axes, ldtype, shape, seed, target):
    seq_axis, batch_axis = axes
    s, b = seq_axis % 3, batch_axis % 3
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    w = rng.standard_normal(shape)
    lengths = rng.integers(0, shape[s] + 1, shape[b]).astype(ldtype)
    lengths[0] = shape[s]  # the full length and (with two rows or more) an empty one
    lengths[-1] = 0 if shape[b] > 1 else lengths[-1]
    tf.reset_default_graph()
    xp = tf.placeholder(tf.float64, [None] * 3)
    lp = tf.placeholder(tf.as_dtype(ldtype), [None])
    y = tf.reverse_sequence(xp, lp, seq_axis=seq_axis, batch_axis=batch_axis)
    (g,) = tf.gradients(tf.reduce_sum(y * w), xp)
    with tf.Session(compile_target=target) as sess:
        yv, gv = sess.run([y, g], {xp: x, lp: lengths})
    np.testing.assert_array_equal(yv, reference(x, lengths, s, b))
    np.testing.assert_array_equal(gv, reference(w, lengths, s, b))  # its own adjoint


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_an_int64_length_past_int32_is_an_error_not_wrapped(target):
    x = tf.constant(np.arange(6.0).reshape(2, 3))
    # 2**32 + 2 wrapped to 2 in int32 and reversed two entries: [[1, 0, 2], ...]
    lengths = tf.constant(np.int64([2**32 + 2, 1]))
    with tf.Session(compile_target=target) as sess:
        with pytest.raises(InvalidArgumentError, match="past the length of seq_axis"):
            sess.run(tf.reverse_sequence(x, lengths, seq_axis=1, batch_axis=0))


@pytest.mark.parametrize("target", ["reference", "cpu"])
@pytest.mark.parametrize("ldtype", [np.int32, np.int64])
def test_lengths_out_of_range_are_errors(target, ldtype):
    x = tf.placeholder(tf.float64, [2, 3])
    lengths = tf.placeholder(tf.as_dtype(ldtype), [2])
    y = tf.reverse_sequence(x, lengths, seq_axis=1, batch_axis=0)
    with tf.Session(compile_target=target) as sess:
        for bad, words in [([4, 1], "past the length"), ([-1, 1], "negative")]:
            with pytest.raises(InvalidArgumentError, match=words):
                sess.run(y, {x: np.zeros((2, 3)), lengths: np.array(bad, ldtype)})
