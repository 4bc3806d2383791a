"""TensorFlow 1's variance-scaling family, orthogonal, identity and uniform unit scaling
initializers (``tf.variance_scaling_initializer``, ``tf.glorot_normal_initializer``,
``tf.orthogonal_initializer``, ``tf.initializers.he_normal``, ...), which tensorweave
lacked. Not bit-equality with TensorFlow: the right distribution, from seeded samples
(statistics with tolerances far wider than their sampling error, so no flakiness): the
fans (``fan_in``/``fan_out``/``fan_avg``, a convolution kernel's receptive field, a
partitioned variable's full shape), the truncated normal's 0.87962566 widening, the
uniform limits, orthogonality. The same file passes when ``tensorweave.compat.v1`` is
TensorFlow 2.21's ``tf.compat.v1``, which is how the expected formulas were checked."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

CONV = [3, 3, 40, 60]  # fan_in 360, fan_out 540
MATRIX = [200, 300]


pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def _sample(shape, initializer, partitioner=None, dtype=None):
    kwargs = {"dtype": dtype} if dtype is not None else {}
    v = tf.get_variable("v", shape, initializer=initializer, partitioner=partitioner, **kwargs)
    parts = list(v) if partitioner is not None else [v]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values = sess.run(parts)
    return np.concatenate(values, axis=0) if len(values) > 1 else values[0]


def _fans(shape):
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


@pytest.mark.parametrize("shape", [CONV, MATRIX])
@pytest.mark.parametrize("mode", ["fan_in", "fan_out", "fan_avg"])
@pytest.mark.parametrize("distribution", ["truncated_normal", "normal", "untruncated_normal",
                                          "uniform"])
def test_variance_scaling(shape, mode, distribution):
    fan_in, fan_out = _fans(shape)
    n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
    scale = 3.0
    x = _sample(shape, tf.variance_scaling_initializer(scale, mode, distribution, seed=7))
    std = math.sqrt(scale / n)
    assert abs(x.mean()) < 0.05 * std
    assert x.std() == pytest.approx(std, rel=0.03)
    if distribution in ("truncated_normal", "normal"):
        # the normal is truncated to two of its (widened) standard deviations
        assert np.abs(x).max() <= 2 * std / 0.87962566103423978 * (1 + 1e-6)
        assert np.abs(x).max() > 1.9 * std / 0.87962566103423978
    elif distribution == "untruncated_normal":
        assert 0.03 < np.mean(np.abs(x) > 2 * std) < 0.06  # 4.55% beyond 2 sigma
    else:
        limit = math.sqrt(3 * scale / n)
        assert np.abs(x).max() <= limit * (1 + 1e-6)
        assert np.abs(x).max() > 0.99 * limit


@pytest.mark.parametrize("make, scale, mode, uniform", [
    (lambda: tf.glorot_normal_initializer(seed=1), 1.0, "fan_avg", False),
    (lambda: tf.glorot_uniform_initializer(seed=1), 1.0, "fan_avg", True),
    (lambda: tf.initializers.he_normal(seed=1), 2.0, "fan_in", False),
    (lambda: tf.initializers.he_uniform(seed=1), 2.0, "fan_in", True),
    (lambda: tf.initializers.lecun_normal(seed=1), 1.0, "fan_in", False),
    (lambda: tf.initializers.lecun_uniform(seed=1), 1.0, "fan_in", True),
])
def test_named_variance_scalings(make, scale, mode, uniform):
    fan_in, fan_out = _fans(CONV)
    n = fan_in if mode == "fan_in" else (fan_in + fan_out) / 2
    x = _sample(CONV, make())
    assert x.std() == pytest.approx(math.sqrt(scale / n), rel=0.03)
    bound = math.sqrt(3 * scale / n) if uniform else 2 * math.sqrt(scale / n) / 0.87962566103423978
    assert np.abs(x).max() <= bound * (1 + 1e-6)


def test_partitioned_variable_uses_the_full_shape_for_its_fans():
    x = _sample([400, 30], tf.variance_scaling_initializer(1.0, "fan_in", "uniform", seed=2),
                partitioner=tf.fixed_size_partitioner(4))
    limit = math.sqrt(3.0 / 400)  # not the shard's 100 rows
    assert np.abs(x).max() <= limit * (1 + 1e-6)
    assert np.abs(x).max() > 0.99 * limit


def test_small_fans_are_at_least_one():
    x = _sample([5000], tf.variance_scaling_initializer(2.0, "fan_in", "uniform", seed=3))
    # a vector's fans are its length
    assert np.abs(x).max() == pytest.approx(math.sqrt(6.0 / 5000), rel=0.01)
    tf.reset_default_graph()
    x = _sample([], tf.variance_scaling_initializer(2.0, "fan_in", "uniform", seed=3))
    assert abs(float(x)) <= math.sqrt(6.0)


def test_variance_scaling_arguments_are_checked():
    with pytest.raises(ValueError):
        tf.variance_scaling_initializer(0.0)
    with pytest.raises(ValueError):
        tf.variance_scaling_initializer(mode="fan_sum")
    with pytest.raises(ValueError):
        tf.variance_scaling_initializer(distribution="cauchy")


@pytest.mark.parametrize("shape", [[30, 20], [20, 30], [3, 3, 4, 8]])
def test_orthogonal(shape):
    x = _sample(shape, tf.orthogonal_initializer(gain=2.0, seed=4))
    assert list(x.shape) == shape
    flat = x.reshape(-1, shape[-1])
    gram = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
    np.testing.assert_allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-4)


def test_orthogonal_needs_two_dims():
    with pytest.raises(ValueError):
        _sample([5], tf.orthogonal_initializer())


def test_identity_and_its_shards():
    np.testing.assert_array_equal(_sample([3, 5], tf.initializers.identity(gain=3.0)),
                                  3.0 * np.eye(3, 5))
    tf.reset_default_graph()
    np.testing.assert_array_equal(
        _sample([5, 3], tf.initializers.identity(), partitioner=tf.fixed_size_partitioner(2)),
        np.eye(5, 3))


def test_uniform_unit_scaling():
    x = _sample(CONV, tf.uniform_unit_scaling_initializer(factor=1.5, seed=5))
    limit = 1.5 * math.sqrt(3.0 / (3 * 3 * 40))
    assert np.abs(x).max() <= limit * (1 + 1e-6)
    assert np.abs(x).max() > 0.99 * limit


def test_float64_variables():
    x = _sample(MATRIX, tf.initializers.he_normal(seed=6), dtype=tf.float64)
    assert x.dtype == np.float64
    assert x.std() == pytest.approx(math.sqrt(2.0 / 200), rel=0.03)


def test_short_names():
    assert tf.initializers.zeros is tf.zeros_initializer
    assert tf.initializers.glorot_uniform is tf.glorot_uniform_initializer
    assert tf.initializers.variance_scaling is tf.variance_scaling_initializer
    assert tf.initializers.truncated_normal is tf.truncated_normal_initializer
