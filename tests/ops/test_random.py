"""The random family: Philox4x32-10 known answers, the documented bit recipe, statistics,
seeding rules (TensorFlow's), and behaviour across calls, traces and eager execution."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.compiler.ops.random import philox4x32, random_words
from tensorweave.frontend.ops import random as tw_random_ops

N = 100_000


@pytest.fixture(autouse=True)
def no_global_seed():
    """Each test starts (and leaves) without a global seed."""
    tw.random.set_seed(None)
    yield
    tw.random.set_seed(None)


# ------------------------------------------------------------------------------ Philox

# Random123's kat_vectors, "philox4x32 10": counter[4] key[2] -> output[4]
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter,key,expected", KAT)
def test_philox_known_answers(counter, key, expected):
    out = philox4x32(np.array(counter, np.uint32), key)
    assert out.dtype == np.uint32
    assert [int(v) for v in out] == list(expected)


def philox_scalar(counter, key):
    """Philox4x32-10 on Python ints, key schedule written as upstream: bump before rounds 2..10."""
    c, k = list(counter), list(key)
    for r in range(10):
        if r:
            k = [(k[0] + 0x9E3779B9) & 0xFFFFFFFF, (k[1] + 0xBB67AE85) & 0xFFFFFFFF]
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & 0xFFFFFFFF, (p0 >> 32) ^ c[3] ^ k[1], p0 & 0xFFFFFFFF]
    return c


@given(st.lists(st.integers(0, 2**32 - 1), min_size=6, max_size=6))
def test_vectorized_philox_matches_scalar_implementation(words):
    counters = np.array([words[:4], words[2:6]], np.uint32)
    out = philox4x32(counters, words[4:6])
    for row, ctr in zip(out, counters):
        assert [int(v) for v in row] == philox_scalar([int(v) for v in ctr], words[4:6])


def words_by_recipe(count, seed, seed2, call):
    """The documented word stream, from the scalar Philox."""
    key = (seed & 0xFFFFFFFF, seed >> 32)
    out = []
    for j in range(-(-count // 4)):
        out += philox_scalar([j, call, seed2 & 0xFFFFFFFF, seed2 >> 32], key)
    return out[:count]


def test_word_stream_layout_follows_the_documented_recipe():
    seed, seed2 = 0x0123456789ABCDEF, 0xFEDCBA9876543210
    for call in (0, 1, 7):
        assert random_words(10, seed, seed2, call).tolist() == words_by_recipe(10, seed, seed2, call)


def test_uniform_bits_are_reproducible_by_the_recipe_across_calls():
    @tw.compile
    def draw():
        return (tw.random.uniform([5], seed=11),
                tw.random.uniform([3], dtype=tw.float64, seed=12))

    node32, node64 = [n for n in draw.get_concrete_function().graph.nodes
                      if n.op == "RandomUniform"]
    for call in range(2):
        f32, f64 = draw()
        w = words_by_recipe(5, node32.attrs["seed"], node32.attrs["seed2"], call)
        assert f32.tolist() == [np.float32((v >> 9) * 2.0**-23) for v in w]
        w = words_by_recipe(6, node64.attrs["seed"], node64.attrs["seed2"], call)
        assert f64.tolist() == [(((w[2 * i] << 32) | w[2 * i + 1]) >> 12) * 2.0**-52
                                for i in range(3)]


# ---------------------------------------------------------------------------- statistics

def assert_moments(x, mean, std, sigmas=5):
    x = x.astype(np.float64)
    n = x.size
    assert abs(x.mean() - mean) < sigmas * std / math.sqrt(n), x.mean()
    assert abs(x.std() - std) < sigmas * std / math.sqrt(2 * n) * 1.5, x.std()


def test_uniform_statistics_and_range():
    x = tw.random.uniform([N], seed=1).numpy()
    assert x.dtype == np.float32 and x.min() >= 0 and x.max() < 1
    assert_moments(x, 0.5, math.sqrt(1 / 12))
    y = tw.random.uniform([200, 500], minval=-3.0, maxval=5.0, seed=2).numpy()
    assert y.shape == (200, 500) and y.min() >= -3 and y.max() < 5
    assert_moments(y, 1.0, 8 / math.sqrt(12))


def test_normal_statistics():
    x = tw.random.normal([N], seed=3).numpy()
    assert x.dtype == np.float32
    assert_moments(x, 0.0, 1.0)
    y = tw.random.normal([N], mean=2.0, stddev=0.5, dtype=tw.float64, seed=4).numpy()
    assert y.dtype == np.float64
    assert_moments(y, 2.0, 0.5)


def test_truncated_normal_statistics_and_bounds():
    # variance of a standard normal truncated to [-2, 2]: 1 - 2 * 2 * phi(2) / (Phi(2) - Phi(-2))
    phi2 = math.exp(-2) / math.sqrt(2 * math.pi)
    std = math.sqrt(1 - 4 * phi2 / math.erf(math.sqrt(2)))
    x = tw.random.truncated_normal([N], seed=5).numpy()
    assert x.min() >= -2 and x.max() <= 2
    assert_moments(x, 0.0, std)
    y = tw.random.truncated_normal([N], mean=1.0, stddev=3.0, seed=6).numpy()
    assert y.min() >= 1 - 6 and y.max() <= 1 + 6
    assert_moments(y, 1.0, 3 * std)
    assert np.mean(np.abs(y - 1) > 5.4) > 0.001  # the tails are really populated


@pytest.mark.parametrize("fn", [tw.random.uniform, tw.random.normal, tw.random.truncated_normal])
@pytest.mark.parametrize("dtype", [tw.float16, tw.bfloat16, tw.float32, tw.float64])
def test_dtypes_shapes_and_empty_tensors(fn, dtype):
    x = fn([3, 0, 2], dtype=dtype, seed=1)
    assert x.dtype is dtype and x.shape == (3, 0, 2)
    y = fn([7, 3], dtype=dtype, seed=1).numpy().astype(np.float64)
    assert y.shape == (7, 3) and np.all(np.isfinite(y)) and len(np.unique(y)) > 10
    if fn is tw.random.uniform:
        assert y.min() >= 0 and y.max() < 1
    if fn is tw.random.truncated_normal:
        assert np.abs(y).max() <= 2


def test_uniform_integers():
    x = tw.random.uniform([N], minval=-3, maxval=4, dtype=tw.int32, seed=9).numpy()
    assert x.dtype == np.int32 and x.min() == -3 and x.max() == 3
    counts = np.bincount(x + 3)
    assert np.all(np.abs(counts - N / 7) < 5 * math.sqrt(N / 7))
    big = tw.random.uniform([1000], minval=-2**62, maxval=2**62, dtype=tw.int64, seed=9).numpy()
    assert big.dtype == np.int64 and np.abs(big).max() > 2**60
    small = tw.random.uniform([100], maxval=3, dtype=tw.uint8, seed=1).numpy()
    assert small.dtype == np.uint8 and set(small.tolist()) == {0, 1, 2}
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"test_random\.py.*maxval"):
        tw.random.uniform([2], dtype=tw.int32)
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"RandomUniformInt.*test_random\.py"):
        tw.random.uniform([2], minval=5, maxval=5, dtype=tw.int32)


# ----------------------------------------------------------------------------- seeding

def test_same_seed_same_numbers_and_successive_calls_differ():
    @tw.compile
    def f():
        return tw.random.normal([4], seed=7)

    @tw.compile
    def g():
        return tw.random.normal([4], seed=7)

    @tw.compile
    def h():
        return tw.random.normal([4], seed=8)

    first = f()
    np.testing.assert_array_equal(first, g())
    assert not np.array_equal(first, h())
    second = f()
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(second, g())  # g's second call: same counter, same numbers


def test_global_seed_derives_op_seeds_per_graph():
    def body():
        return tw.random.uniform([3]), tw.random.uniform([3])

    tw.random.set_seed(1234)
    a1, a2 = tw.compile(body)()
    b1, b2 = tw.compile(body)()
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_array_equal(a2, b2)
    assert not np.array_equal(a1, a2)
    tw.random.set_seed(4321)
    c1, _ = tw.compile(body)()
    assert not np.array_equal(a1, c1)


def test_op_seed_without_global_seed_uses_the_default_graph_seed():
    x = tw.compile(lambda: tw.random.uniform([2], seed=3))
    node = [n for n in x.get_concrete_function().graph.nodes if n.op == "RandomUniform"][0]
    assert (node.attrs["seed"], node.attrs["seed2"]) == (tw_random_ops.DEFAULT_GRAPH_SEED, 3)
    tw.random.set_seed(5)
    assert tw.random.get_seed(3) == (5, 3)


def test_no_seed_at_all_gives_different_numbers_per_trace():
    a = tw.compile(lambda: tw.random.uniform([8]))()
    b = tw.compile(lambda: tw.random.uniform([8]))()
    assert not np.array_equal(a, b)


def test_eager_set_seed_replays_the_sequence():
    tw.random.set_seed(99)
    a = [tw.random.normal([3]).numpy(), tw.random.normal([3], seed=1).numpy(),
         tw.random.normal([3], seed=1).numpy()]
    tw.random.set_seed(99)
    b = [tw.random.normal([3]).numpy(), tw.random.normal([3], seed=1).numpy(),
         tw.random.normal([3], seed=1).numpy()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[1], a[2])  # same op seed, next call


def test_v1_spellings_and_tensor_bounds():
    assert tw_random_ops.random_uniform is tw.random.uniform
    assert tw_random_ops.random_normal is tw.random.normal
    assert tw_random_ops.truncated_normal is tw.random.truncated_normal

    @tw.compile
    def f(lo, hi):
        return tw.random.uniform([1000], minval=lo, maxval=hi, seed=1)

    x = f(np.float32(10), np.float32(11))
    assert x.min() >= 10 and x.max() < 11


def test_random_values_feed_variables_and_shapes_from_tensors():
    v = tw.Variable(tw.random.truncated_normal([3, 2], stddev=0.1, seed=1))
    assert v.numpy().shape == (3, 2) and np.abs(v.numpy()).max() <= 0.2
    assert tw.random.uniform(tw.constant([2, 3]), seed=1).shape == (2, 3)


def test_errors_name_the_op_and_line():
    with pytest.raises(tw.errors.DTypeError) as err:
        tw.random.normal([2], dtype=tw.int32)
    assert "RandomNormal" in str(err.value) and "test_random.py" in str(err.value)
    with pytest.raises(tw.errors.DTypeError, match=r"test_random\.py.*bool"):
        tw.random.uniform([2], dtype=tw.bool)

    @tw.compile
    def computed_shape(n):
        return tw.random.uniform(n, seed=1)

    with pytest.raises(tw.errors.UnimplementedError, match=r"test_random\.py.*known"):
        computed_shape(np.array([2, 3], np.int32))
