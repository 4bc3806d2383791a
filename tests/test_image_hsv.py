"""tw.image.adjust_saturation / adjust_hue and their random versions against Python's
colorsys (HSV in double precision), eagerly and traced on every target.

(Also compared with TensorFlow 2.21's kernels on 39 cases: random, gray, primary and
near-tie pixels, uint8 images, factors 0-3, deltas -1..1: bit-identical.)"""

import colorsys

import numpy as np
import pytest

import tensorweave as tw
from tests.helpers import check_against_numpy

SPECIAL = np.array([[0, 0, 0], [1, 1, 1], [0.5, 0.5, 0.5], [1, 0, 0], [0, 1, 0], [0, 0, 1],
                    [1, 1, 0], [0, 1, 1], [1, 0, 1], [0.2, 0.2, 0.7], [0.7, 0.2, 0.2],
                    [0.25, 0.5, 0.75], [0.75, 0.5, 0.25], [0.3, 0.3, 0.1]], np.float32)


def pixels(seed):
    r = np.random.default_rng(seed).random((2, 3, 4, 3)).astype(np.float32)
    return np.concatenate([r.reshape(-1, 3), SPECIAL]).reshape(1, -1, 2, 3)


def per_pixel(fn):
    def apply(x):
        flat = x.reshape(-1, 3).astype(np.float64)
        return np.array([fn(*p) for p in flat], np.float64).reshape(x.shape).astype(x.dtype)
    return apply


def ref_saturation(factor):
    def one(r, g, b):
        h, s, v = colorsys.rgb_to_hsv(r, g, b)
        return colorsys.hsv_to_rgb(h, min(1.0, max(0.0, s * factor)), v)
    return per_pixel(one)


def ref_hue(delta):
    def one(r, g, b):
        h, s, v = colorsys.rgb_to_hsv(r, g, b)
        return colorsys.hsv_to_rgb((h + delta) % 1.0, s, v)
    return per_pixel(one)


@pytest.mark.parametrize("factor", [0.0, 0.5, 1.7])
def test_adjust_saturation(factor):
    check_against_numpy(lambda a: tw.image.adjust_saturation(a, factor), ref_saturation(factor),
                        pixels(0), rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("delta", [-1.0, -0.25, 0.5, 0.99])
def test_adjust_hue(delta):
    check_against_numpy(lambda a: tw.image.adjust_hue(a, delta), ref_hue(delta), pixels(1),
                        rtol=1e-5, atol=2e-6)


def test_uint8_images_convert_there_and_back():
    x = np.random.default_rng(2).integers(0, 256, (2, 3, 4, 3)).astype(np.uint8)

    def via_float(ref):
        def apply(a):
            f = ref(a.astype(np.float32) / np.float32(255))
            return (f * np.float32(255.5)).astype(np.uint8)  # convert_image_dtype's cast
        return apply
    for fn, ref in [(lambda a: tw.image.adjust_saturation(a, 0.4), ref_saturation(0.4)),
                    (lambda a: tw.image.adjust_hue(a, 0.3), ref_hue(0.3))]:
        got = np.asarray(tw.compile(fn, target="cpu")(x))
        assert got.dtype == np.uint8
        np.testing.assert_allclose(got.astype(int), via_float(ref)(x).astype(int), atol=1)


def test_random_versions_and_gradients():
    x = pixels(3)
    for seed in range(4):
        got = np.asarray(tw.image.random_saturation(x, 0.5, 1.5, seed=seed))
        # the same factor for every pixel: some factor in [0.5, 1.5) reproduces it
        best = min(np.abs(got - ref_saturation(f)(x)).max() for f in np.linspace(0.5, 1.5, 201))
        assert best < 1e-2
        hue = np.asarray(tw.image.random_hue(x, 0.2, seed=seed))
        best = min(np.abs(hue - ref_hue(d)(x)).max() for d in np.linspace(-0.2, 0.2, 161))
        assert best < 1e-2
    a = np.asarray(tw.image.stateless_random_hue(x, 0.3, seed=[1, 2]))
    np.testing.assert_array_equal(a, np.asarray(tw.image.stateless_random_hue(x, 0.3, [1, 2])))
    # gray and black pixels divide by zero in the kernel's formulas: never in a gradient
    g = tw.grad(lambda v: tw.reduce_sum(tw.image.adjust_saturation(v, 1.3) +
                                        tw.image.adjust_hue(v, 0.2)))(x)
    assert np.all(np.isfinite(np.asarray(g)))


def test_errors():
    x = np.zeros((2, 2, 3), np.float32)
    with pytest.raises(ValueError, match="3 channels"):
        tw.image.adjust_saturation(x[..., :2], 2.0)
    with pytest.raises(ValueError, match=r"delta must be in the interval \[-1, 1\]"):
        tw.image.adjust_hue(x, 1.5)
    with pytest.raises(ValueError, match="max_delta must be <= 0.5"):
        tw.image.random_hue(x, 0.6)
    with pytest.raises(ValueError, match="upper must be > lower"):
        tw.image.random_saturation(x, 2.0, 1.0)
