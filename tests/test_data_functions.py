"""tw.data transformations that run user functions (map, filter, reduce), traced once
with tw.compile; and the TensorFlow 2 training loop over a dataset."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.data import AUTOTUNE, Dataset


def items(ds):
    return list(ds.as_numpy_iterator())


def test_map_unpacks_tuples_and_passes_dicts_whole():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    y = np.array([1, 2, 3], np.int32)
    ds = Dataset.from_tensor_slices((x, y)).map(lambda a, b: {"s": tw.reduce_sum(a), "b": b * 2})
    assert ds.element_spec == {"s": tw.TensorSpec([], tw.float32), "b": tw.TensorSpec([], tw.int32)}
    out = items(ds)
    np.testing.assert_array_equal([o["s"] for o in out], x.sum(1))
    np.testing.assert_array_equal([o["b"] for o in out], y * 2)
    back = ds.map(lambda d: (d["b"], d["s"]))
    assert [(int(b), float(s)) for b, s in items(back)] == [(2, 1.0), (4, 5.0), (6, 9.0)]


def test_map_is_traced_once_for_the_element_spec():
    traces = []

    def f(v):
        traces.append(v.shape)
        return v * 2
    gen = Dataset.from_generator(lambda: (np.ones(n, np.float32) for n in (1, 2, 3)),
                                 output_signature=tw.TensorSpec([None], tw.float32))
    ds = gen.map(f)
    assert ds.element_spec == tw.TensorSpec([None], tw.float32)
    assert [v.tolist() for v in items(ds)] == [[2.0], [2.0, 2.0], [2.0, 2.0, 2.0]]
    assert len(traces) == 1 and list(traces[0]) == [None]


def test_map_list_results_come_back_as_tuples_and_python_constants_as_tensors():
    ds = Dataset.range(2).map(lambda x: [x, 3])
    assert ds.element_spec == (tw.TensorSpec([], tw.int64), tw.TensorSpec([], tw.int32))
    assert [tuple(int(v) for v in e) for e in items(ds)] == [(0, 3), (1, 3)]


@settings(max_examples=10)
@given(st.integers(0, 40), st.sampled_from([2, 3, AUTOTUNE]))
def test_parallel_map_keeps_the_order_of_a_sequential_map(n, calls):
    x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
    src = Dataset.from_tensor_slices(x)

    def f(v):
        return tw.tanh(v) * 2.0 + tw.reduce_sum(v)
    expected = np.tanh(x) * 2.0 + x.sum(1, keepdims=True)
    out = items(src.map(f, num_parallel_calls=calls))
    assert len(out) == n
    np.testing.assert_allclose(np.array(out).reshape(n, 4), expected, rtol=1e-5, atol=1e-5)


def test_parallel_map_on_the_cpu_target():
    x = np.arange(24, dtype=np.float32).reshape(12, 2)
    ds = Dataset.from_tensor_slices(x).map(lambda v: v * v + 1.0, num_parallel_calls=AUTOTUNE,
                                           target="cpu")
    np.testing.assert_array_equal(np.array(items(ds)), x * x + 1.0)


def test_map_errors_are_raised_at_the_call_that_failed():
    ds = Dataset.range(3).map(lambda x: tw.debugging.check_numerics(
        tw.cast(1, tw.float32) / tw.cast(x, tw.float32), "inverse"))
    with pytest.raises(tw.errors.InvalidArgumentError, match="inverse"):
        items(ds)
    with pytest.raises(tw.errors.InvalidArgumentError, match="num_parallel_calls"):
        Dataset.range(3).map(lambda x: x, num_parallel_calls=0)


def test_filter_keeps_elements_whose_predicate_is_true():
    ds = Dataset.from_tensor_slices((np.arange(6), np.arange(6) * 10)).filter(lambda a, b: a % 3 == 0)
    assert [(int(a), int(b)) for a, b in items(ds)] == [(0, 0), (3, 30)]
    with pytest.raises(tw.errors.DTypeError, match="filter.*bool scalar.*i64"):
        Dataset.range(3).filter(lambda x: x)


def test_reduce_folds_with_the_state_structure():
    ds = Dataset.from_tensor_slices(np.arange(1.0, 5.0))
    total, count = ds.reduce((np.float64(0), np.int32(0)), lambda s, x: (s[0] + x, s[1] + 1))
    assert float(total) == 10.0 and int(count) == 4
    with pytest.raises(tw.errors.InvalidArgumentError, match="structured as the initial state"):
        ds.reduce((np.float64(0), np.int32(0)), lambda s, x: s[0] + x)
    with pytest.raises(tw.errors.DTypeError, match="state component 0"):
        ds.reduce(np.float32(0), lambda s, x: x)


def test_reduce_relaxes_a_growing_state_shape():
    ds = Dataset.range(1, 4)
    out = ds.reduce(np.zeros(0, np.int64), lambda s, x: tw.concat([s, tw.reshape(x, [1])], 0))
    assert out.numpy().tolist() == [1, 2, 3]


def test_training_loop_feeds_a_compiled_step_without_retracing():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    true_w = np.array([[1.0], [-2.0], [0.5]], np.float32)
    y = x @ true_w
    w = tw.Variable(np.zeros((3, 1), np.float32))
    opt = tw.optimizers.SGD(0.1)

    @tw.compile
    def step(xb, yb):
        with tw.GradientTape() as tape:
            loss = tw.reduce_mean((xb @ w - yb) ** 2)
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        return loss

    ds = (Dataset.from_tensor_slices((x, y)).shuffle(64, seed=0).batch(16, drop_remainder=True)
          .prefetch(AUTOTUNE))
    losses = [float(step(xb, yb)) for _ in range(20) for xb, yb in ds]
    assert step.experimental_get_tracing_count() == 1
    assert losses[-1] < 1e-3 * losses[0]
    np.testing.assert_allclose(w.numpy(), true_w, atol=1e-2)


def test_parallel_map_delivers_the_elements_before_a_failing_call_then_raises():
    x = np.array([1.0, 2.0, 0.0, 4.0, 5.0], np.float32)
    ds = Dataset.from_tensor_slices(x).map(
        lambda v: tw.debugging.check_numerics(1.0 / v, "inverse"), num_parallel_calls=3)
    it = ds.as_numpy_iterator()
    assert [float(next(it)), float(next(it))] == [1.0, 0.5]
    with pytest.raises(tw.errors.InvalidArgumentError, match="inverse"):
        next(it)
    # the failing pass shut its pool down (and waited for the calls in flight)
    assert not [t for t in threading.enumerate() if t.name.startswith("tw.data.map")]
