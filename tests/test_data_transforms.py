"""tw.data transformations without user functions: batch, padded_batch, unbatch, shuffle,
repeat, take, skip, enumerate, cache; elements against a NumPy/Python-list reference,
element_spec and cardinality as TensorFlow gives them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.data import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset


def items(ds):
    return list(ds.as_numpy_iterator())


def ints(ds):
    return [int(v) for v in items(ds)]


def card(ds):
    return int(ds.cardinality())


def unknown_length(n):
    """A dataset of 0..n-1 whose length is not known statically."""
    return Dataset.from_generator(lambda: iter(range(n)),
                                  output_signature=tw.TensorSpec([], tw.int64))


@given(st.integers(0, 12), st.integers(1, 5), st.booleans())
def test_batch_matches_numpy_chunks(n, size, drop):
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    ds = Dataset.from_tensor_slices((x, np.arange(n))).batch(size, drop_remainder=drop)
    stop = n - n % size if drop else n
    expected = [(x[i:i + size], np.arange(n)[i:i + size]) for i in range(0, stop, size)]
    out = items(ds)
    assert len(out) == len(expected) == card(ds)
    for (a, b), (ea, eb) in zip(out, expected):
        np.testing.assert_array_equal(a, ea)
        np.testing.assert_array_equal(b, eb)
    assert ds.element_spec[0] == tw.TensorSpec([size if drop else None, 2], tw.float32)


def test_batch_of_different_shapes_names_the_op_and_both_shapes():
    ds = Dataset.from_generator(lambda: iter([[1, 2], [1, 2], [1, 2, 3]]),
                                output_signature=tw.TensorSpec([None], tw.int32)).batch(3)
    with pytest.raises(tw.errors.InvalidArgumentError,
                       match=r"Dataset.batch \(.*test_data_transforms.py:\d+\).*\[2\] in element "
                             r"0.*\[3\] in element 2"):
        items(ds)


def test_padded_batch_pads_to_the_largest_and_to_given_shapes():
    def gen():
        for n in (1, 3, 2):
            yield np.full(n, n, np.int32), np.int64(n)
    src = Dataset.from_generator(gen, output_signature=(tw.TensorSpec([None], tw.int32),
                                                        tw.TensorSpec([], tw.int64)))
    a, b = items(src.padded_batch(2))[0]
    np.testing.assert_array_equal(a, [[1, 0, 0], [3, 3, 3]])
    np.testing.assert_array_equal(b, [1, 3])
    ds = src.padded_batch(3, padded_shapes=([5], []), padding_values=(np.int32(-1), np.int64(0)),
                          drop_remainder=True)
    assert ds.element_spec == (tw.TensorSpec([3, 5], tw.int32), tw.TensorSpec([3], tw.int64))
    (a, _), = items(ds)
    np.testing.assert_array_equal(a, [[1, -1, -1, -1, -1], [3, 3, 3, -1, -1], [2, 2, -1, -1, -1]])
    with pytest.raises(tw.errors.InvalidArgumentError, match="larger than its padded shape"):
        items(src.padded_batch(2, padded_shapes=([2], [])))
    with pytest.raises(tw.errors.ShapeError, match="padded shape"):
        src.padded_batch(2, padded_shapes=([2, 2], []))


@given(st.integers(0, 4), st.integers(0, 3))
def test_unbatch_inverts_batch(rows, cols):
    x = np.arange(rows * cols * 2).reshape(rows, cols, 2)
    ds = Dataset.from_tensor_slices(x).unbatch()
    assert ds.element_spec == tw.TensorSpec([2], tw.int64)
    out = items(ds)
    np.testing.assert_array_equal(np.array(out).reshape(-1, 2), x.reshape(-1, 2))
    assert card(ds) == rows * cols


def test_unbatch_of_a_scalar_is_an_error():
    with pytest.raises(tw.errors.ShapeError, match="unbatch.*scalar"):
        Dataset.range(3).unbatch()


@given(st.integers(0, 30), st.integers(1, 40), st.integers(0, 2**31))
def test_shuffle_is_a_permutation_within_the_buffer_window(n, buffer, seed):
    out = ints(Dataset.range(n).shuffle(buffer, seed=seed))
    assert sorted(out) == list(range(n))
    # TensorFlow's buffer: the i-th output is one of the first i + buffer inputs
    assert all(v < i + buffer for i, v in enumerate(out))


def test_shuffle_with_a_buffer_of_one_keeps_the_order():
    assert ints(Dataset.range(7).shuffle(1)) == list(range(7))


def test_shuffle_is_reproducible_with_set_seed_and_reshuffles_each_iteration():
    tw.random.set_seed(5)
    a = Dataset.range(20).shuffle(20)
    first, second = ints(a), ints(a)
    assert first != second  # a new order each pass (20! orders: equal by chance ~1e-18)
    tw.random.set_seed(5)
    b = Dataset.range(20).shuffle(20)
    assert (ints(b), ints(b)) == (first, second)
    fixed = Dataset.range(20).shuffle(20, seed=3, reshuffle_each_iteration=False)
    assert ints(fixed) == ints(fixed)
    assert ints(Dataset.range(20).shuffle(20, seed=3)) == ints(Dataset.range(20).shuffle(20, seed=3))
    tw.random.set_seed(None)


@given(st.integers(0, 5), st.integers(0, 4))
def test_repeat_take_skip_match_list_slicing(n, k):
    base = list(range(n))
    assert ints(Dataset.range(n).repeat(k)) == base * k
    assert ints(Dataset.range(n).take(k)) == base[:k]
    assert ints(Dataset.range(n).skip(k)) == base[k:]
    assert ints(Dataset.range(n).repeat().take(k)) == (base * k)[:k]
    assert card(Dataset.range(n).repeat(k)) == n * k
    assert card(Dataset.range(n).take(k)) == min(n, k)
    assert card(Dataset.range(n).skip(k)) == max(0, n - k)


def test_minus_one_counts_and_empty_infinite_repeat():
    assert ints(Dataset.range(3).take(-1)) == [0, 1, 2]
    assert ints(Dataset.range(3).skip(-1)) == []
    assert ints(Dataset.range(0).repeat()) == []  # ends instead of looping forever
    assert ints(Dataset.range(2).repeat(-1).take(5)) == [0, 1, 0, 1, 0]


def test_cardinality_constants_as_tensorflow_gives_them():
    # values checked against TensorFlow 2.21
    assert card(Dataset.range(3).repeat()) == INFINITE_CARDINALITY
    assert card(Dataset.range(0).repeat()) == 0
    assert card(unknown_length(2)) == UNKNOWN_CARDINALITY
    assert card(unknown_length(2).repeat()) == INFINITE_CARDINALITY
    assert card(unknown_length(2).take(3)) == UNKNOWN_CARDINALITY
    assert card(Dataset.range(10).repeat().take(3)) == 3
    assert card(Dataset.range(10).repeat().skip(3)) == INFINITE_CARDINALITY
    assert card(Dataset.range(5).filter(lambda x: x > 2)) == UNKNOWN_CARDINALITY
    assert card(Dataset.range(3).repeat().filter(lambda x: True)) == UNKNOWN_CARDINALITY
    assert card(Dataset.range(0).filter(lambda x: True)) == UNKNOWN_CARDINALITY
    assert card(Dataset.range(3).repeat().enumerate()) == INFINITE_CARDINALITY
    assert card(Dataset.range(3).enumerate()) == 3
    assert card(Dataset.range(3).batch(2).unbatch()) == UNKNOWN_CARDINALITY
    assert card(Dataset.range(3).batch(2, drop_remainder=True).unbatch()) == 2
    assert card(Dataset.range(3).concatenate(unknown_length(1))) == UNKNOWN_CARDINALITY
    assert card(unknown_length(1).concatenate(Dataset.range(3).repeat())) == INFINITE_CARDINALITY
    assert card(Dataset.range(3).repeat().skip(-1)) == INFINITE_CARDINALITY
    assert card(unknown_length(1).repeat(0)) == 0
    assert card(Dataset.range(10).batch(3)) == 4 and card(Dataset.range(10).batch(3, True)) == 3
    with pytest.raises(TypeError, match="infinite"):
        len(Dataset.range(1).repeat())


def test_enumerate_counts_from_start_as_int64():
    ds = Dataset.from_tensor_slices(np.array([10.0, 20.0])).enumerate(start=3)
    assert ds.element_spec == (tw.TensorSpec([], tw.int64), tw.TensorSpec([], tw.float64))
    assert [(int(i), float(v)) for i, v in items(ds)] == [(3, 10.0), (4, 20.0)]


def test_cache_replays_the_first_complete_pass():
    calls = []

    def gen():
        calls.append(1)
        yield from range(3)
    ds = Dataset.from_generator(gen, output_signature=tw.TensorSpec([], tw.int32)).cache()
    it = iter(ds)
    next(it)
    it.close()  # a pass stopped early is not kept
    assert ints(ds) == [0, 1, 2] and ints(ds) == [0, 1, 2]
    assert len(calls) == 2
    with pytest.raises(tw.errors.InvalidArgumentError, match="in memory only"):
        Dataset.range(2).cache("/tmp/x")


def test_iterator_get_next_raises_out_of_range_at_the_end():
    it = iter(Dataset.range(1))
    assert int(it.get_next()) == 0
    with pytest.raises(tw.errors.OutOfRangeError):
        it.get_next()


# -- random pipelines against a list model -------------------------------------------------

def _apply_model(elements, op, arg):
    """What `op` does to a list of (tuples of) ints, written out with Python lists."""
    if op == "take":
        return elements if arg < 0 else elements[:arg]
    if op == "skip":
        return [] if arg < 0 else elements[arg:]
    if op == "repeat":
        return elements * arg
    if op == "batch":
        return [tuple(elements[i:i + arg]) for i in range(0, len(elements), arg)]
    if op == "batch_drop":
        return [tuple(elements[i:i + arg]) for i in range(0, len(elements) - arg + 1, arg)]
    if op == "concat_range":
        return elements + list(range(arg))
    if op == "enumerate_first":  # enumerate, then keep the index
        return list(range(len(elements)))
    raise AssertionError(op)


def _apply_dataset(ds, op, arg):
    if op == "take":
        return ds.take(arg)
    if op == "skip":
        return ds.skip(arg)
    if op == "repeat":
        return ds.repeat(arg)
    if op in ("batch", "batch_drop"):
        return ds.batch(arg, drop_remainder=op == "batch_drop")
    if op == "concat_range":
        return ds.concatenate(Dataset.range(arg))
    if op == "enumerate_first":
        return ds.enumerate().map(lambda i, _: i)
    raise AssertionError(op)


_OPS = st.sampled_from(["take", "skip", "repeat", "batch", "batch_drop", "concat_range",
                        "enumerate_first"])


@given(st.integers(0, 7), st.lists(st.tuples(_OPS, st.integers(-1, 3)), max_size=4))
def test_random_pipelines_match_a_list_model(n, ops):
    ds, model = Dataset.range(n), list(range(n))
    for op, arg in ops:
        if op in ("batch", "batch_drop", "repeat", "concat_range") and arg < 1:
            arg = 1 if op.startswith("batch") else 2
        if op.startswith("batch"):
            model = [sum(b) for b in _apply_model(model, op, arg)]
            ds = _apply_dataset(ds, op, arg).map(lambda b: tw.reduce_sum(b))
        else:
            model = _apply_model(model, op, arg)
            ds = _apply_dataset(ds, op, arg)
    assert ints(ds) == model
    assert card(ds) == len(model)  # every op here has a static length


@given(st.integers(0, 12), st.integers(1, 4), st.data())
def test_shard_takes_every_nth_from_index(n, shards, data):
    index = data.draw(st.integers(0, shards - 1))
    ds = Dataset.range(n).shard(shards, index)
    assert ints(ds) == list(range(n))[index::shards]
    assert card(ds) == len(range(n)[index::shards])
    with pytest.raises(tw.errors.InvalidArgumentError, match="shard"):
        Dataset.range(n).shard(shards, shards)
