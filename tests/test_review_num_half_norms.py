"""Adversarial review: norms and norm clipping of float16 tensors. Their sums of squares
were taken in float16, where the squares of ordinary values leave the format, so the
result was silently wrong although representable: clip_by_norm([300, 400], 1.0) gave
[0, 0] (the norm overflowed to inf) and with clip_norm 1000 NaN (300 * 1000 overflowed
too), clip_by_global_norm gave NaN for every gradient, tw.linalg.norm([300, 400]) inf,
and clip_by_norm([3e-4, 4e-4], 1e-5) [0, 0] (squares below the smallest subnormal). As
the normalization functions do, half precision is now computed in float32 and rounded
back (mixed-precision gradient clipping is where this bites)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tensorweave as tw
from tests.helpers import TARGETS

F16, BF16 = np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
VECTORS = {"large": [300.0, 400.0], "small": [3e-4, -4e-4], "mixed": [-6e4, 1e-3]}


def _run(fn, target, *args):
    if target == "eager":
        out = fn(*[tw.constant(a) for a in args])
        if isinstance(out, (list, tuple)):  # clip_by_global_norm: ([clipped...], norm)
            return [np.asarray(o) for o in out[0]], np.asarray(out[1])
        return np.asarray(out)
    return tw.compile(fn, target=target)(*args)


def _f32(x):
    return np.asarray(x).astype(np.float32)


def _clip(x: np.ndarray, c: float) -> np.ndarray:
    x32 = x.astype(np.float64)
    return (x32 * c / max(np.sqrt(np.sum(x32 * x32)), c)).astype(x.dtype)


@pytest.mark.parametrize("target", ["eager", *TARGETS])
@pytest.mark.parametrize("vector", VECTORS)
@pytest.mark.parametrize("clip_norm", [1e-5, 1.0, 1000.0, 1e5])
def test_clip_by_norm_of_float16(target, vector, clip_norm):
    x = np.array(VECTORS[vector], F16)
    got = _run(lambda t: tw.clip_by_norm(t, clip_norm), target, x)
    assert got.dtype == F16
    np.testing.assert_allclose(_f32(got), _f32(_clip(x, clip_norm)), rtol=2e-3, atol=1e-7)


@pytest.mark.parametrize("target", ["eager", *TARGETS])
@pytest.mark.parametrize("clip_norm", [1.0, 1000.0])
def test_clip_by_global_norm_of_float16(target, clip_norm):
    a, b = np.array([300.0, 400.0], F16), np.array([[0.0], [1200.0]], F16)
    got, norm = _run(lambda s, t: tw.clip_by_global_norm([s, t], clip_norm), target, a, b)
    total = np.sqrt(300.0 ** 2 + 400.0 ** 2 + 1200.0 ** 2)  # 1300
    scale = clip_norm / max(total, clip_norm)
    assert norm.dtype == F16 and got[0].dtype == F16 and got[1].dtype == F16
    np.testing.assert_allclose(_f32(norm), total, rtol=1e-3)
    np.testing.assert_allclose(_f32(got[0]), _f32(a) * scale, rtol=2e-3)
    np.testing.assert_allclose(_f32(got[1]), _f32(b) * scale, rtol=2e-3)


@pytest.mark.parametrize("target", ["eager", *TARGETS])
@pytest.mark.parametrize("dtype", [F16, BF16], ids=str)
@pytest.mark.parametrize("ord_", ["euclidean", 3])
def test_linalg_norm_of_half_precision(target, dtype, ord_):
    x = np.array([[300.0, 400.0], [3e-4, 4e-4]], np.float32).astype(dtype)
    got = _run(lambda t: tw.linalg.norm(t, ord=ord_, axis=1), target, x)
    p = 2.0 if ord_ == "euclidean" else float(ord_)
    x64 = _f32(x).astype(np.float64)
    want = np.sum(np.abs(x64) ** p, axis=1) ** (1 / p)
    assert got.dtype == dtype
    np.testing.assert_allclose(_f32(got), want, rtol=1e-2)


@pytest.mark.parametrize("target", TARGETS)
def test_clip_by_norm_gradient_of_float16(target):
    x = np.array([300.0, 400.0], np.float32)
    w = np.array([1.0, -2.0], np.float32)

    def loss(t):
        return tw.reduce_sum(tw.cast(tw.clip_by_norm(t, 100.0), tw.float32) * w)

    got = tw.compile(tw.grad(loss), target=target)(x.astype(F16))
    want = tw.compile(tw.grad(lambda t: tw.reduce_sum(tw.clip_by_norm(t, 100.0) * w)),
                      target=target)(x)
    assert got.dtype == F16
    np.testing.assert_allclose(_f32(got), want, rtol=2e-2, atol=1e-4)


@pytest.mark.parametrize("clipping", [{"clipnorm": 1000.0}, {"global_clipnorm": 1000.0},
                                      {"clipnorm": 1.0}, {"global_clipnorm": 1.0}],
                         ids=lambda c: f"{next(iter(c))}={next(iter(c.values()))}")
def test_optimizer_gradient_clipping_of_a_float16_variable(clipping):
    """The optimizers' clipnorm/global_clipnorm (their own copies of the clipping
    functions) zeroed or NaN'd a float16 gradient [300, 400] the same way."""
    w = tw.Variable(np.zeros(2, F16), name="review_half_clip")
    opt = tw.optimizers.SGD(1.0, **clipping)
    g = np.array([300.0, 400.0], F16)
    opt.apply_gradients([(tw.constant(g), w)])
    c = next(iter(clipping.values()))
    np.testing.assert_allclose(_f32(w.numpy()), -_f32(_clip(g, c)), rtol=2e-3)


@pytest.mark.parametrize("target", ["eager", *TARGETS])
def test_clip_by_global_norm_of_float16_beside_float32(target):
    """Mixed precision: float16 gradients beside float32 ones. The norm was computed in
    the widest dtype, but each float16 tensor was squared in float16 before the cast."""
    a, b = np.array([300.0, 400.0], F16), np.array([1200.0], np.float32)
    got, norm = _run(lambda s, t: tw.clip_by_global_norm([s, t], 1.0), target, a, b)
    assert norm.dtype == np.float32
    np.testing.assert_allclose(norm, 1300.0, rtol=1e-6)
    np.testing.assert_allclose(_f32(got[0]), _f32(a) / 1300.0, rtol=2e-3)
    np.testing.assert_allclose(got[1], b / 1300.0, rtol=1e-6)
