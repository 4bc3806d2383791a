"""Adversarial review of `tw.compile`'s cache keys: a call whose static (Python)
arguments differ from an earlier call's must not run the earlier call's trace."""

import dataclasses
import gc

import numpy as np
import pytest

import tensorweave as tw

pytestmark = pytest.mark.filterwarnings("ignore::tensorweave.errors.RetracingWarning")


@dataclasses.dataclass
class _Config:  # eq=True, not frozen: unhashable, as most users' config classes are
    scale: float


def test_unhashable_static_argument_is_not_confused_with_a_dead_one():
    # Keyed by id() alone, a temporary config's trace was reused by the next config
    # allocated at the same address: Cfg(3.0) gave x * 2.
    @tw.compile
    def f(x, cfg):
        return x * cfg.scale

    x = np.array([1.0, 2.0], np.float32)
    scales = [2.0, 3.0, 4.0, 5.0, 6.0]
    # each config dies right after its call, so the next one may take its address
    results = [f(x, _Config(scale)) for scale in scales]
    for scale, result in zip(scales, results):
        np.testing.assert_array_equal(result, x * scale)
    gc.collect()
    np.testing.assert_array_equal(f(x, _Config(7.0)), x * 7.0)


def test_unhashable_static_argument_reused_hits_its_trace():
    @tw.compile
    def f(x, cfg):
        return x * cfg.scale

    x = np.array([1.0, 2.0], np.float32)
    cfg = _Config(2.0)
    f(x, cfg)
    f(x, cfg)
    assert f.experimental_get_tracing_count() == 1


def test_negative_zero_static_argument_traces_separately():
    # 0.0 == -0.0 (and hash alike): x / -0.0 ran the trace of x / 0.0 (+inf, not -inf)
    @tw.compile
    def f(x, z):
        return x / z

    x = np.array([1.0, -2.0], np.float32)
    np.testing.assert_array_equal(f(x, 0.0), [np.inf, -np.inf])
    np.testing.assert_array_equal(f(x, -0.0), [-np.inf, np.inf])
    np.testing.assert_array_equal(f(x, 0.0), [np.inf, -np.inf])
    np.testing.assert_array_equal(f(x, complex(1.0, -0.0).imag), [-np.inf, np.inf])


def test_nan_static_argument_reuses_its_trace():
    # nan != nan: keyed by value, every call with a Python nan traced again
    @tw.compile
    def f(x, s):
        return x + s

    x = np.array([1.0], np.float32)
    for _ in range(3):
        assert np.isnan(f(x, float("nan"))).all()
    assert f.experimental_get_tracing_count() == 1
    np.testing.assert_array_equal(f(x, 1.0), [2.0])
    assert f.experimental_get_tracing_count() == 2


def test_dict_argument_in_another_key_order_than_the_input_signature():
    # the signature's specs were matched to the dict's leaves in the caller's key order:
    # {"b": ..., "a": ...} was refused ("must match f32[?], got int32[]")
    @tw.compile(input_signature=[{"a": tw.TensorSpec([None], tw.float32),
                                  "b": tw.TensorSpec([], tw.int32)}])
    def f(d):
        return d["a"] * tw.cast(d["b"], tw.float32)

    np.testing.assert_array_equal(f({"b": np.int32(2), "a": np.ones(2, np.float32)}), [2, 2])
    np.testing.assert_array_equal(f({"a": np.ones(3, np.float32), "b": np.int32(4)}), [4] * 3)
    assert f.experimental_get_tracing_count() == 1
