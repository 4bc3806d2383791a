"""tw.nn.dropout (TensorFlow 2) and tf.nn.dropout (TensorFlow 1, keep_prob): values by the
documented counter-based recipe on every target, unknown batch sizes, noise_shape
broadcasting, rates fed at run time, statistics, the gradient's mask, and errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.compiler.ops.random import uniform_values
from tensorweave.frontend.ops.random import DEFAULT_GRAPH_SEED

from ..helpers import TARGETS, assert_same


@pytest.fixture(autouse=True)
def no_global_seed():
    tw.random.set_seed(None)
    yield
    tw.random.set_seed(None)


def expected_dropout(x, rate, seed, noise_shape=None, call=0):
    """The recipe: RandomUniform's numbers for the mask's shape, kept where >= rate."""
    shape = x.shape if noise_shape is None else tuple(
        d if n is None else n for n, d in zip(noise_shape, x.shape))
    dt = tw.as_dtype(x.dtype)
    u = uniform_values(int(np.prod(shape)), dt.np, dt.ir_name, DEFAULT_GRAPH_SEED, seed,
                       call).reshape(shape)
    rate = x.dtype.type(rate)
    keep = (u >= rate).astype(x.dtype)
    return x * (x.dtype.type(1) / (x.dtype.type(1) - rate)) * keep


@settings(max_examples=15, deadline=None)
@given(rows=st.integers(1, 5), cols=st.integers(1, 7), rate=st.floats(0.05, 0.95),
       seed=st.integers(0, 2**31), dtype=st.sampled_from([np.float32, np.float64]))
def test_values_follow_the_counter_based_recipe_on_every_target(rows, cols, rate, seed, dtype):
    x = np.random.default_rng(seed).normal(size=(rows, cols)).astype(dtype)
    want = expected_dropout(x, rate, seed)
    got = {}
    for target in TARGETS:
        got[target] = tw.compile(lambda x: tw.nn.dropout(x, rate=rate, seed=seed),
                                 target=target)(x)
        assert_same(got[target], want)
    for target in TARGETS[1:]:  # every target draws the reference's numbers, bitwise
        assert got["reference"].tobytes() == got[target].tobytes()
    tw.random.set_seed(None)  # eager ops count their calls since the last set_seed
    assert_same(tw.nn.dropout(tw.constant(x), rate=rate, seed=seed).numpy(), want)


@pytest.mark.parametrize("target", TARGETS)
def test_unknown_batch_size_draws_a_mask_of_the_run_time_shape(target):
    f = tw.compile(lambda x: tw.nn.dropout(x, rate=0.5, seed=7), target=target,
                   input_signature=[tw.TensorSpec([None, 6])])
    for batch in (3, 5, 1):
        x = np.ones((batch, 6), np.float32)
        out = f(x)
        assert out.shape == (batch, 6)
        assert set(np.unique(out)) <= {0.0, 2.0}
    # a later call draws new numbers (the node's call index advances)
    a, b = f(np.ones((64, 6), np.float32)), f(np.ones((64, 6), np.float32))
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("noise_shape", [[4, 1], [None, 1], [1, 6], [1, None], [4, 6]])
def test_noise_shape_broadcasts_the_mask(target, noise_shape):
    x = np.arange(1, 25, dtype=np.float32).reshape(4, 6)
    f = tw.compile(lambda x: tw.nn.dropout(x, rate=0.4, noise_shape=noise_shape, seed=11),
                   target=target, input_signature=[tw.TensorSpec([None, 6])])
    assert_same(f(x), expected_dropout(x, 0.4, 11, noise_shape))


def test_noise_shape_with_channels_on_an_image():
    x = np.ones((2, 3, 3, 5), np.float32)
    out = tw.nn.dropout(tw.constant(x), rate=0.5, noise_shape=[None, 1, 1, 5], seed=2).numpy()
    # whole channels are kept or dropped
    assert np.all(out == out[:, :1, :1, :])


@pytest.mark.parametrize("target", TARGETS)
def test_rate_fed_at_run_time(target):
    f = tw.compile(lambda x, r: tw.nn.dropout(x, rate=r, seed=5), target=target)
    x = np.ones((50, 40), np.float32)
    assert_same(f(x, np.float32(0.0)), x)
    out = f(x, np.float32(0.75))
    assert set(np.unique(out)) <= {0.0, 4.0}


def test_rate_zero_returns_x_and_statistics_hold():
    x = tw.constant(np.ones((10,), np.float32))
    assert tw.nn.dropout(x, rate=0) is x
    out = tw.compile(lambda x: tw.nn.dropout(x, rate=0.3, seed=1), target="cpu")(
        np.ones((200_000,), np.float32))
    kept = np.mean(out != 0)
    assert abs(kept - 0.7) < 0.005
    assert abs(out.mean() - 1.0) < 0.01


@pytest.mark.parametrize("target", TARGETS)
def test_gradient_uses_the_forward_mask(target):
    x = np.random.default_rng(0).normal(size=(8, 9)).astype(np.float64) + 3.0

    def fwd_and_grad(x):
        y = tw.nn.dropout(x, rate=0.5, seed=9)
        (g,) = tw.gradients(tw.reduce_sum(y * 3.0), [x])
        return y, g

    y, g = tw.compile(fwd_and_grad, target=target)(x)
    mask = y != 0
    assert 0 < mask.sum() < mask.size
    np.testing.assert_array_equal(g, np.where(mask, 6.0, 0.0))


def test_seed_rules_make_programs_reproducible():
    tw.random.set_seed(42)
    a = tw.compile(lambda x: tw.nn.dropout(x, rate=0.5))(np.ones(100, np.float32))
    tw.random.set_seed(42)
    b = tw.compile(lambda x: tw.nn.dropout(x, rate=0.5))(np.ones(100, np.float32))
    np.testing.assert_array_equal(a, b)


def test_errors():
    x = tw.constant(np.ones((2, 3), np.float32))
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"\[0, 1\)"):
        tw.nn.dropout(x, rate=1.0)
    with pytest.raises(tw.errors.InvalidArgumentError, match="rate="):
        tw.nn.dropout(x)
    with pytest.raises(tw.errors.DTypeError, match="floating"):
        tw.nn.dropout(tw.constant([1, 2]), rate=0.5)
    with pytest.raises(tw.errors.ShapeError, match="broadcast"):
        tw.nn.dropout(x, rate=0.5, noise_shape=[2, 2])
    with pytest.raises(tw.errors.ShapeError, match="rank"):
        tw.nn.dropout(x, rate=0.5, noise_shape=[2])


# ------------------------------------------------------------------------- TensorFlow 1

def test_v1_keep_prob_placeholder_with_unknown_batch():
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [None, 8])
    keep_prob = tf.placeholder(tf.float32)
    y = tf.nn.dropout(x, keep_prob, seed=3)
    ones = np.ones((30, 8), np.float32)
    with tf.Session() as sess:
        out = sess.run(y, {x: ones, keep_prob: 0.5})
        assert out.shape == (30, 8) and set(np.unique(out)) == {0.0, 2.0}
        np.testing.assert_array_equal(sess.run(y, {x: ones[:4], keep_prob: 1.0}), ones[:4])


def test_v1_float_keep_prob_and_rate():
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [None, 8])
    y1 = tf.nn.dropout(x, 0.25, seed=4)
    y2 = tf.nn.dropout(x, rate=0.75, seed=4)
    with tf.Session() as sess:
        a, b = sess.run([y1, y2], {x: np.ones((5, 8), np.float32)})
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(a)) <= {0.0, 4.0}
    with pytest.raises(tw.errors.InvalidArgumentError, match="keep_prob"):
        tf.nn.dropout(x, 0.0)
    with pytest.raises(tw.errors.InvalidArgumentError, match="exactly one"):
        tf.nn.dropout(x)
