"""tw.image's flips, rotations, crops, pads, color and dtype conversions, standardization,
total variation, image gradients and patches: values against NumPy written here, eagerly
and traced on every target; random versions by their properties; errors; TensorFlow 1
graphs.

(The deterministic functions were also compared with TensorFlow 2.21 on 313 cases, all
dtypes of convert_image_dtype with boundary values, saturate on and off: equal, except
adjust_gamma on int32/int64 images, 1 float32 ulp of pow scaled by the dtype's maximum,
and the refusals documented in docs/api.md.)"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tests.helpers import assert_same, check_against_numpy, check_gradients, line_of


def images(seed, shape, dtype=np.float32):
    r = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return r.integers(max(info.min, -1000), min(info.max, 1000), size=shape,
                          endpoint=True).astype(dtype)
    return r.normal(size=shape).astype(dtype)


# --------------------------------------------------------------- flips and rotations

@pytest.mark.parametrize("shape", [(4, 5, 3), (2, 4, 5, 1)])
def test_flips_transpose_rot90(shape):
    x = images(0, shape)
    h, w = len(shape) - 3, len(shape) - 2
    check_against_numpy(tw.image.flip_left_right, lambda a: np.flip(a, w), x)
    check_against_numpy(tw.image.flip_up_down, lambda a: np.flip(a, h), x)
    check_against_numpy(tw.image.transpose, lambda a: np.swapaxes(a, h, w), x)
    for k in (0, 1, 2, 3, 4, -1, 7):
        # counter-clockwise, as np.rot90 over (height, width)
        check_against_numpy(lambda a, k=k: tw.image.rot90(a, k), lambda a, k=k: np.rot90(a, k, (h, w)),
                            x)


def test_rot90_by_a_computed_k_on_square_images():
    # a random rotation: k drawn in the graph; the four rotations selected by where
    x = images(14, (2, 3, 3, 2))
    check_against_numpy(lambda a, k: tw.image.rot90(a, k),
                        lambda a, k: np.rot90(a, int(k), (1, 2)), x, np.int32(3))
    f = tw.compile(lambda a, k: tw.image.rot90(a, k), target="cpu")
    for k in (-1, 0, 1, 2, 5):
        assert_same(np.asarray(f(x[0], np.int64(k))), np.rot90(x[0], k))
    check_gradients(lambda a, k: tw.image.rot90(a, k) * a, x.astype(np.float64), np.int32(1),
                    argnums=(0,))


def test_flip_gradient_float64():
    check_gradients(lambda a: tw.image.rot90(tw.image.flip_left_right(a), 1) * a,
                    images(1, (3, 3, 2), np.float64))


@pytest.mark.parametrize("fn,axis", [(tw.image.random_flip_left_right, 2),
                                     (tw.image.random_flip_up_down, 1)])
def test_random_flips_flip_each_image_or_leave_it(fn, axis):
    x = images(2, (64, 3, 4, 1))
    x[:, 0, 0, 0] = np.inf  # a where-choice never spreads it into the other orientation
    got = np.asarray(tw.compile(lambda a: fn(a, seed=5))(x))
    flipped = np.array([np.array_equal(g, np.flip(i, axis - 1)) for g, i in zip(got, x)])
    same = np.array([np.array_equal(g, i) for g, i in zip(got, x)])
    assert np.all(flipped | same) and 10 < flipped.sum() < 54  # each image on its own draw
    again = np.asarray(tw.compile(lambda a: fn(a, seed=5))(x))
    assert_same(again, got)  # the same seed, the same draws
    single = [np.asarray(fn(tw.constant(x[0]), seed=s)) for s in range(20)]
    kinds = {np.array_equal(s, x[0]) for s in single}
    assert kinds == {True, False}


def test_stateless_random_flip_is_a_function_of_the_seed():
    x = images(3, (16, 2, 3, 1))
    a = np.asarray(tw.image.stateless_random_flip_left_right(x, seed=[1, 2]))
    b = np.asarray(tw.image.stateless_random_flip_left_right(x, seed=[1, 2]))
    c = np.asarray(tw.compile(lambda v: tw.image.stateless_random_flip_left_right(v, [1, 2]),
                              target="cpu")(x))
    assert_same(a, b)
    assert_same(c, a)
    assert any(np.array_equal(g, np.flip(i, 1)) and not np.array_equal(g, i)
               for g, i in zip(a, x))


# ---------------------------------------------------------------------- crops and pads

@pytest.mark.parametrize("shape", [(5, 7, 3), (2, 6, 5, 2)])
def test_crop_and_pad_to_bounding_box(shape):
    x = images(4, shape)
    check_against_numpy(lambda a: tw.image.crop_to_bounding_box(a, 1, 2, 3, 2),
                        lambda a: a[..., 1:4, 2:4, :], x)
    h, w = shape[-3], shape[-2]

    def np_pad(a):
        widths = [(0, 0)] * (a.ndim - 3) + [(2, 9 - 2 - h), (1, 8 - 1 - w), (0, 0)]
        return np.pad(a, widths)
    check_against_numpy(lambda a: tw.image.pad_to_bounding_box(a, 2, 1, 9, 8), np_pad, x)


@settings(max_examples=10)
@given(h=st.integers(1, 7), w=st.integers(1, 7), th=st.integers(1, 9), tw_=st.integers(1, 9))
def test_resize_with_crop_or_pad_centres(h, w, th, tw_):
    x = images(5, (h, w, 2))

    def np_crop_or_pad(a):
        def axis(size, target):
            if target <= size:  # crop: the extra pixel of an odd difference goes first
                start = (size - target) // 2
                return slice(start, start + target), (0, 0)
            before = (target - size) // 2
            return slice(0, size), (before, target - size - before)
        (sy, py), (sx, px) = axis(h, th), axis(w, tw_)
        return np.pad(a[sy, sx], [py, px, (0, 0)])
    check_against_numpy(lambda a: tw.image.resize_with_crop_or_pad(a, th, tw_), np_crop_or_pad,
                        x)


@pytest.mark.parametrize("fraction,box", [(0.5, (1, 2, 3, 4)), (0.33, (1, 2, 3, 4)),
                                          (0.1, (2, 3, 1, 2)), (1.0, (0, 0, 5, 8)),
                                          (0.8, (0, 0, 5, 8))])
def test_central_crop(fraction, box):
    # start = int((size - size * fraction) / 2), size - 2 * start kept: 5 x 8 at 0.1
    # starts at int(2.25), int(3.6) and keeps 1 x 2
    x = images(6, (2, 5, 8, 1))
    top, left, hh, ww = box
    check_against_numpy(lambda a: tw.image.central_crop(a, fraction),
                        lambda a: a[:, top:top + hh, left:left + ww], x)


def test_resize_with_pad_keeps_the_aspect_ratio():
    # 4 x 8 into 6 x 6: ratio 8/6, resized to floor(3.0) x floor(6.0) = 3 x 6, padded
    # floor((6 - 3.0) / 2) = 1 row above
    x = np.ones((4, 8, 1), np.float32)
    got = np.asarray(tw.image.resize_with_pad(x, 6, 6))
    want = np.zeros((6, 6, 1), np.float32)
    want[1:4] = 1
    assert_same(got, want)


def test_random_crop_picks_a_block_at_a_uniform_offset():
    x = np.arange(5 * 6 * 2, dtype=np.int32).reshape(5, 6, 2)
    seen = set()
    fn = tw.compile(lambda a: tw.image.random_crop(a, [3, 4, 2], seed=7), target="cpu")
    for _ in range(40):  # each run draws again
        got = np.asarray(fn(x))
        assert got.shape == (3, 4, 2)
        top, left = divmod(int(got[0, 0, 0]) // 2, 6)
        assert_same(got, x[top:top + 3, left:left + 4])
        seen.add((top, left))
    assert len(seen) > 6 and all(t <= 2 and le <= 2 for t, le in seen)
    a = np.asarray(tw.image.stateless_random_crop(x, [2, 2, 1], seed=[3, 4]))
    assert_same(a, np.asarray(tw.image.stateless_random_crop(x, [2, 2, 1], seed=[3, 4])))


def test_crop_gradient_float64():
    check_gradients(lambda a: tw.image.resize_with_crop_or_pad(a, 2, 5) ** 2,
                    images(7, (4, 3, 1), np.float64))


# ------------------------------------------------------------------ values of pixels

def np_convert(x, dtype, saturate=False):
    """TensorFlow's convert_image_dtype, written out with NumPy."""
    src, dst = np.dtype(x.dtype), np.dtype(dtype)
    if src == dst:
        return x.copy()
    if src.kind in "iu" and dst.kind in "iu":
        smax, dmax = int(np.iinfo(src).max), int(np.iinfo(dst).max)
        if smax > dmax:
            scaled = np.floor_divide(x, (smax + 1) // (dmax + 1))
            if saturate:
                scaled = np.clip(scaled, max(np.iinfo(src).min, np.iinfo(dst).min), dmax)
            return scaled.astype(dst)
        v = np.clip(x, max(np.iinfo(src).min, np.iinfo(dst).min), dmax) if saturate else x
        return v.astype(dst) * dst.type((dmax + 1) // (smax + 1))
    if src.kind == "f" and dst.kind == "f":
        return x.astype(dst)
    if src.kind in "iu":
        return x.astype(dst) * dst.type(1.0 / np.iinfo(src).max)
    scaled = x * src.type(np.iinfo(dst).max + 0.5)
    if saturate:
        scaled = np.clip(scaled, np.iinfo(dst).min, np.float64(np.iinfo(dst).max))
    return scaled.astype(dst)


@pytest.mark.parametrize("src,dst", [
    (np.uint8, np.float32), (np.uint8, np.int32), (np.int32, np.uint8), (np.int16, np.int8),
    (np.int8, np.int64), (np.float32, np.uint8), (np.float64, np.int16), (np.float32, np.float16),
    (np.int64, np.float64), (np.uint8, np.uint8)])
@pytest.mark.parametrize("saturate", [False, True])
def test_convert_image_dtype(src, dst, saturate):
    if np.dtype(src).kind == "f":
        # past [0, 1] only with saturate: an out-of-range float-to-int cast is undefined
        x = np.array([0, 0.25, 0.5, 0.999, 1.0] + ([1.5, -0.5] if saturate else []), src)
    else:
        info = np.iinfo(src)
        x = np.array(sorted({0, 1, int(info.max), int(info.max) // 2, int(info.min),
                             int(info.min) + 1}), src)
    check_against_numpy(lambda a: tw.image.convert_image_dtype(a, tw.as_dtype(dst), saturate),
                        lambda a: np_convert(a, dst, saturate), x)


def test_convert_image_dtype_known_values():
    u8 = np.array([0, 128, 255], np.uint8)
    assert_same(np.asarray(tw.image.convert_image_dtype(u8, tw.float32)),
                np.array([0, 128, 255], np.float32) * np.float32(1 / 255))
    f = np.array([0.0, 0.5, 1.0, 1.2, -0.1], np.float32)
    assert_same(np.asarray(tw.image.convert_image_dtype(f, tw.uint8, saturate=True)),
                np.array([0, 127, 255, 255, 0], np.uint8))
    # float32 cannot hold 2**31 - 1: saturating to int32 clamps at 2147483520 (TF 2.21)
    assert_same(np.asarray(tw.image.convert_image_dtype(np.float32([1.0, 2.0]), tw.int32, True)),
                np.array([2147483520, 2147483520], np.int32))


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.int32])
def test_brightness_contrast_gamma(dtype):
    x = images(8, (2, 3, 4, 3), dtype) if dtype != np.uint8 else \
        np.random.default_rng(8).integers(0, 256, (2, 3, 4, 3)).astype(np.uint8)
    if dtype == np.float32:
        x = np.abs(x)

    def to_float(a):
        return a if a.dtype == np.float32 else np_convert(a, np.float32)

    def back(a):
        return np_convert(a, dtype, saturate=True)

    check_against_numpy(lambda a: tw.image.adjust_brightness(a, 0.1),
                        lambda a: back(to_float(a) + np.float32(0.1)), x)

    def np_contrast(a):
        f = to_float(a)
        m = f.mean(axis=(-3, -2), keepdims=True, dtype=np.float64).astype(np.float32)
        return back((f - m) * np.float32(1.7) + m)
    check_against_numpy(lambda a: tw.image.adjust_contrast(a, 1.7), np_contrast, x,
                        **({} if dtype == np.float32 else {"atol": 1}))
    if dtype != np.int32:  # int32 rescales float32 rounding by 2**31
        check_against_numpy(lambda a: tw.image.adjust_gamma(a, 0.5, 1.2),
                            lambda a: back(np.float32(1.2) * to_float(a) ** np.float32(0.5)), x,
                            **({} if dtype == np.float32 else {"atol": 1}))


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.int32, np.float64])
def test_per_image_standardization(dtype):
    x = images(9, (2, 3, 4, 3), dtype)

    def ref(a):
        f = a.astype(np.float32)  # a cast, not convert_image_dtype, as TensorFlow
        m = f.mean(axis=(-1, -2, -3), keepdims=True, dtype=np.float64)
        s = f.std(axis=(-1, -2, -3), keepdims=True, dtype=np.float64)
        return ((f - m) / np.maximum(s, 1 / np.sqrt(36.0))).astype(np.float32)
    check_against_numpy(tw.image.per_image_standardization, ref, x, rtol=2e-5, atol=2e-6)
    flat = np.asarray(tw.image.per_image_standardization(np.full((3, 3, 1), 7, np.float32)))
    assert_same(flat, np.zeros((3, 3, 1), np.float32))  # stddev capped at 1/sqrt(N)


def test_random_brightness_and_contrast_stay_in_range():
    x = np.linspace(0, 1, 24, dtype=np.float32).reshape(2, 3, 4, 1)
    for seed in range(5):
        b = np.asarray(tw.image.random_brightness(x, 0.2, seed=seed)) - x
        assert np.allclose(b, b.flat[0], atol=1e-6) and -0.2 <= b.flat[0] < 0.2
        c = np.asarray(tw.image.random_contrast(x, 0.5, 1.5, seed=seed))
        m = x.mean(axis=(1, 2), keepdims=True)
        factor = ((c - m) / (x - m + 1e-12))[0, 0, 0, 0]
        assert 0.5 <= factor < 1.5
        np.testing.assert_allclose(c, (x - m) * factor + m, atol=1e-5)
    s1 = np.asarray(tw.image.stateless_random_brightness(x, 0.3, seed=[1, 1]))
    assert_same(s1, np.asarray(tw.image.stateless_random_brightness(x, 0.3, seed=[1, 1])))
    with pytest.raises(ValueError, match="upper must be > lower"):
        tw.image.random_contrast(x, 1.0, 0.5)
    with pytest.raises(ValueError, match="max_delta must be non-negative"):
        tw.image.random_brightness(x, -0.1)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.int16])
def test_grayscale(dtype):
    x = images(10, (2, 2, 3, 3), dtype) if dtype != np.uint8 else \
        np.random.default_rng(10).integers(0, 256, (2, 2, 3, 3)).astype(np.uint8)

    def ref(a):
        f = a if a.dtype == np.float32 else np_convert(a, np.float32)
        g = (f.astype(np.float64) @ np.float32([0.2989, 0.5870, 0.1140]).astype(np.float64))
        return np_convert(g.astype(np.float32)[..., None], dtype)
    check_against_numpy(tw.image.rgb_to_grayscale, ref, x, **({} if dtype == np.float32 else
                                                               {"atol": 1}))
    check_against_numpy(tw.image.grayscale_to_rgb, lambda a: np.repeat(a, 3, -1), x[..., :1])


# --------------------------------------------------------- differences and patches

def ref_ssim(a, b, max_val, size=11, sigma=1.5, k1=0.01, k2=0.03):
    """SSIM by its definition (Wang et al. 2004) in float64: Gaussian-weighted local
    means over every valid window, luminance x contrast-structure, averaged."""
    d = np.arange(size) - (size - 1) / 2
    win = np.exp(-(d[:, None] ** 2 + d[None, :] ** 2) / (2 * sigma ** 2))
    win /= win.sum()
    a, b = a.astype(np.float64), b.astype(np.float64)
    h, w = a.shape[-3] - size + 1, a.shape[-2] - size + 1

    def mean(v):
        return np.stack([np.stack([np.einsum("...yxc,yx->...c", v[..., i:i + size, j:j + size, :],
                                             win) for j in range(w)], -2) for i in range(h)], -3)
    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    ma, mb = mean(a), mean(b)
    lum = (2 * ma * mb + c1) / (ma ** 2 + mb ** 2 + c1)
    cs = (2 * (mean(a * b) - ma * mb) + c2) / (mean(a * a + b * b) - ma ** 2 - mb ** 2 + c2)
    return (lum * cs).mean(axis=(-3, -2, -1)).astype(np.float32)


def test_ssim():
    r = np.random.default_rng(18)
    a = r.random((2, 13, 12, 3)).astype(np.float32)
    b = np.clip(a + r.normal(size=a.shape).astype(np.float32) * 0.1, 0, 1)
    check_against_numpy(lambda x, y: tw.image.ssim(x, y, 1.0), lambda x, y: ref_ssim(x, y, 1.0),
                        a, b, rtol=1e-5, atol=1e-6)
    check_against_numpy(lambda x, y: tw.image.ssim(x, y, 2.0, filter_size=5, filter_sigma=0.8),
                        lambda x, y: ref_ssim(x, y, 2.0, 5, 0.8), a[0], b[0], rtol=1e-5,
                        atol=1e-6)
    np.testing.assert_allclose(np.asarray(tw.image.ssim(a, a, 1.0)), [1, 1], rtol=1e-6)
    assert tw.image.ssim(a, b, 1.0, return_index_map=True).shape == (2, 3, 2)
    # a loss: its gradient is finite
    g = tw.grad(lambda x: 1.0 - tw.reduce_mean(tw.image.ssim(x, b, 1.0)))(a)
    assert np.all(np.isfinite(np.asarray(g))) and np.abs(np.asarray(g)).max() > 0
    with pytest.raises(ValueError, match="at least filter_size"):
        tw.image.ssim(a[:, :8], b[:, :8], 1.0)


def test_sobel_edges():
    x = images(16, (2, 5, 4, 3))

    def ref(a):
        p = np.pad(a, [(0, 0), (1, 1), (1, 1), (0, 0)], mode="reflect")  # no edge repeat
        ky = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float64)
        out = np.zeros(a.shape + (2,))
        for i in range(a.shape[1]):
            for j in range(a.shape[2]):
                win = p[:, i:i + 3, j:j + 3].astype(np.float64)
                out[:, i, j, :, 0] = np.einsum("nyxc,yx->nc", win, ky)
                out[:, i, j, :, 1] = np.einsum("nyxc,yx->nc", win, ky.T)
        return out.astype(a.dtype)
    check_against_numpy(tw.image.sobel_edges, ref, x)


@pytest.mark.parametrize("forward,back", [("rgb_to_yiq", "yiq_to_rgb"), ("rgb_to_yuv", "yuv_to_rgb")])
def test_color_spaces(forward, back):
    x = np.random.default_rng(17).random((2, 3, 4, 3)).astype(np.float32)
    # TensorFlow's matrices: Y is the luma 0.299 R + 0.587 G + 0.114 B
    y = np.asarray(getattr(tw.image, forward)(x))
    np.testing.assert_allclose(y[..., 0], x @ np.float32([0.299, 0.587, 0.114]), rtol=1e-6)
    # a round trip (TensorFlow's 8-digit matrices are inverses to about 1e-5)
    check_against_numpy(getattr(tw.image, back), lambda a: x, y, atol=2e-4)
    with pytest.raises(TypeError, match="floating-point"):
        getattr(tw.image, forward)(x.astype(np.int32))


def test_psnr():
    r = np.random.default_rng(15)
    a = r.random((2, 4, 5, 3)).astype(np.float32)
    b = np.clip(a + r.normal(size=a.shape).astype(np.float32) * 0.05, 0, 1)

    def ref(x, y, peak=1.0):
        mse = ((x.astype(np.float64) - y) ** 2).mean(axis=(-3, -2, -1))
        return (20 * np.log10(peak) - 10 * np.log10(mse)).astype(np.float32)
    check_against_numpy(lambda x, y: tw.image.psnr(x, y, 1.0), ref, a, b, rtol=1e-5)
    u = (a * 255).astype(np.uint8)
    v = (b * 255).astype(np.uint8)
    np.testing.assert_allclose(np.asarray(tw.image.psnr(u, v, 255)),
                               ref(u / 255.0, v / 255.0), rtol=1e-5)
    assert np.all(np.asarray(tw.image.psnr(a, a, 1.0)) == np.inf)


@pytest.mark.parametrize("shape", [(4, 5, 2), (2, 4, 5, 2)])
def test_total_variation_and_image_gradients(shape):
    x = images(11, shape)

    def tv(a):
        axes = None if a.ndim == 3 else (1, 2, 3)
        return (np.abs(np.diff(a, axis=-3)).sum(axis=axes, dtype=np.float64) +
                np.abs(np.diff(a, axis=-2)).sum(axis=axes, dtype=np.float64)).astype(np.float32)
    check_against_numpy(tw.image.total_variation, tv, x, rtol=2e-6)
    if len(shape) == 4:
        def grads(a):
            dy, dx = np.zeros_like(a), np.zeros_like(a)
            dy[:, :-1] = a[:, 1:] - a[:, :-1]
            dx[:, :, :-1] = a[:, :, 1:] - a[:, :, :-1]
            return dy, dx
        check_against_numpy(tw.image.image_gradients, grads, x)
    check_gradients(lambda a: tw.image.total_variation(a * a), x.astype(np.float64))


def np_patches(x, k, s, r, padding):
    """extract_patches by its definition: window (i, j) of output pixel (p, q) reads input
    (p*s + i*r - pad_top, q*s + j*r - pad_left), zero outside."""
    n, h, w, c = x.shape

    def geo(size, k, s, r):
        eff = (k - 1) * r + 1
        if padding == "VALID":
            return -(-(size - eff + 1) // s), 0
        out = -(-size // s)
        return out, max((out - 1) * s + eff - size, 0) // 2
    (oh, top), (ow, left) = geo(h, k[0], s[0], r[0]), geo(w, k[1], s[1], r[1])
    out = np.zeros((n, oh, ow, k[0] * k[1] * c), x.dtype)
    for p in range(oh):
        for q in range(ow):
            vals = []
            for i in range(k[0]):
                for j in range(k[1]):
                    y, xx = p * s[0] + i * r[0] - top, q * s[1] + j * r[1] - left
                    inside = 0 <= y < h and 0 <= xx < w
                    vals.append(x[:, y, xx] if inside else np.zeros((n, c), x.dtype))
            out[:, p, q] = np.concatenate(vals, axis=-1)
    return out


@pytest.mark.parametrize("k,s,r,padding", [((2, 2), (1, 1), (1, 1), "VALID"),
                                           ((3, 2), (2, 3), (1, 1), "SAME"),
                                           ((2, 3), (3, 2), (2, 2), "SAME"),
                                           ((2, 2), (2, 2), (2, 1), "VALID")])
def test_extract_patches(k, s, r, padding):
    x = images(12, (2, 7, 6, 2))
    check_against_numpy(
        lambda a: tw.image.extract_patches(a, [1, *k, 1], [1, *s, 1], [1, *r, 1], padding),
        lambda a: np_patches(a, k, s, r, padding), x)


# ------------------------------------------------------------------ v1 graphs, names

def test_v1_graph_pipeline():
    g = tf.Graph()
    with g.as_default():
        ph = tf.placeholder(tf.uint8, [2, 6, 5, 3])
        f = tf.image.convert_image_dtype(ph, tf.float32)
        f = tf.image.resize_image_with_crop_or_pad(tf.image.flip_left_right(f), 4, 4)
        f = tf.image.per_image_standardization(tf.image.rgb_to_grayscale(f))
        p = tf.image.extract_image_patches(f, ksizes=[1, 2, 2, 1], strides=[1, 2, 2, 1],
                                           rates=[1, 1, 1, 1], padding="VALID")
        with tf.Session() as sess:
            x = np.random.default_rng(13).integers(0, 256, (2, 6, 5, 3)).astype(np.uint8)
            got_f, got_p = sess.run([f, p], {ph: x})
    eager = tw.image.per_image_standardization(tw.image.rgb_to_grayscale(
        tw.image.resize_with_crop_or_pad(tw.image.flip_left_right(
            tw.image.convert_image_dtype(x, tw.float32)), 4, 4)))
    assert_same(got_f, np.asarray(eager))
    assert_same(got_p, np_patches(got_f, (2, 2), (2, 2), (1, 1), "VALID"))


def test_namespaces():
    for mod in (tw.image, tf.image):
        assert mod.__doc__ and mod.__all__
        assert {n for n in dir(mod) if not n.startswith("__")} == set(mod.__all__)
        for name in mod.__all__:
            assert (getattr(mod, name).__doc__ or "").strip(), name
    assert tf.image.ResizeMethod.BILINEAR == 0 and tw.image.ResizeMethod.BILINEAR == "bilinear"


# ------------------------------------------------------------------------------ errors

def test_errors_name_the_function_and_line():
    x = np.zeros((4, 5, 3), np.float32)

    def crop():
        return tw.image.crop_to_bounding_box(x, 2, 0, 3, 5)
    with pytest.raises(ValueError, match="height must be >= target \\+ offset") as e:
        crop()
    assert "tw.image.crop_to_bounding_box" in str(e.value)
    assert line_of(crop, "crop_to_bounding_box") in str(e.value)
    with pytest.raises(ValueError, match="width must be <= target - offset"):
        tw.image.pad_to_bounding_box(x, 0, 2, 4, 6)
    with pytest.raises(ValueError, match="offset_height must be >= 0"):
        tw.image.pad_to_bounding_box(x, -1, 0, 6, 6)
    with pytest.raises(ValueError, match="target_width must be > 0"):
        tw.image.crop_to_bounding_box(x, 0, 0, 1, 0)
    with pytest.raises(ValueError, match=r"central_fraction must be within \(0, 1\]"):
        tw.image.central_crop(x, 0.0)
    with pytest.raises(ValueError, match="must have 3 or 4 dimensions"):
        tw.image.flip_left_right(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="inner 3 dims"):
        tw.image.flip_up_down(np.zeros((0, 3, 1), np.float32))
    with pytest.raises(ValueError, match="Need value.shape >= size"):
        tw.image.random_crop(x, [5, 5, 3])
    with pytest.raises(ValueError, match="one entry per dimension"):
        tw.image.random_crop(x, [2, 2])
    with pytest.raises(ValueError, match="Last dimension of a grayscale image"):
        tw.image.grayscale_to_rgb(x)
    with pytest.raises(ValueError, match="last dimension of RGB images must be 3"):
        tw.image.rgb_to_grayscale(x[..., :2])
    with pytest.raises(TypeError, match="signed differences"):
        tw.image.total_variation(x.astype(np.uint8))
    with pytest.raises(TypeError, match="float16 cannot hold the scale"):
        tw.image.convert_image_dtype(x.astype(np.float16), tw.int32)
    with pytest.raises(ValueError, match="needs square images"):
        tw.compile(lambda a, k: tw.image.rot90(a, k))(x, np.int32(1))
    with pytest.raises(TypeError, match="integer or floating-point dtype"):
        tw.image.resize(x > 0, [2, 2])
    with pytest.raises(ValueError, match="last three dimensions of a and b must match"):
        tw.image.psnr(x, x[:3], 1.0)
    with pytest.raises(ValueError, match="batch size must be known"):
        tw.compile(lambda a: tw.image.random_flip_left_right(a),
                   input_signature=[tw.TensorSpec([None, 4, 5, 3])])(x[None])
    with pytest.raises(ValueError, match="padding must be 'VALID' or 'SAME'"):
        tw.image.extract_patches(x[None], [1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "FULL")
