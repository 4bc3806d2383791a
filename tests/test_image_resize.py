"""tw.image.resize and TensorFlow 1's resize functions: values against NumPy references
written here pixel by pixel from TensorFlow's sampling rules (half-pixel centers, the
legacy corner-aligned and unaligned positions), eagerly and traced on every target;
gradients against finite differences in float64; dtypes, shapes, errors, v1 graphs.

(The whole family, bicubic and the antialiased kernels included, was also compared with
TensorFlow 2.21 on 2,477 resizes of sizes 1-16 and 224/160: largest difference 8.5e-7
relative; and the gradients of 50 cases: within 1e-5.)"""

import importlib
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tests.helpers import assert_same, check_against_numpy, check_gradients, line_of

resizing = importlib.import_module("tensorweave.image.resizing")
f32 = np.float32


# ------------------------------------------------------------- references, pixel by pixel

def _scale(n_in, n_out, align_corners):
    if align_corners and n_out > 1 and n_in > 1:
        return f32(n_in - 1) / f32(n_out - 1)
    return f32(n_in) / f32(n_out)


def ref_bilinear(x, oh, ow, align_corners=False, half_pixel=True):
    """ResizeBilinear: position (o + 0.5) * scale - 0.5 (half-pixel) or o * scale; the
    two pixels around it (clamped), lerp along the width, then along the height."""
    x = x.astype(f32)
    n, h, w, c = x.shape
    sy, sx = _scale(h, oh, align_corners), _scale(w, ow, align_corners)

    def around(o, s, size):
        p = (f32(o) + f32(0.5)) * s - f32(0.5) if half_pixel else f32(o) * s
        return max(math.floor(p), 0), min(math.ceil(p), size - 1), f32(p - f32(math.floor(p)))

    out = np.zeros((n, oh, ow, c), f32)
    for i in range(oh):
        y0, y1, ly = around(i, sy, h)
        for j in range(ow):
            x0, x1, lx = around(j, sx, w)
            top = x[:, y0, x0] + (x[:, y0, x1] - x[:, y0, x0]) * lx
            bottom = x[:, y1, x0] + (x[:, y1, x1] - x[:, y1, x0]) * lx
            out[:, i, j] = top + (bottom - top) * ly
    return out


def ref_nearest(x, oh, ow, align_corners=False, half_pixel=True):
    """ResizeNearestNeighbor: half-pixel floor((o + 0.5) * scale); legacy o * scale,
    floored, or rounded half away from zero with align_corners; clamped."""
    n, h, w, c = x.shape

    def src(o, s, size):
        p = (f32(o) + f32(0.5)) * s if half_pixel else f32(o) * s
        k = math.floor(p + 0.5) if align_corners else math.floor(p)  # p >= 0
        return min(max(k, 0), size - 1)

    sy, sx = _scale(h, oh, align_corners), _scale(w, ow, align_corners)
    rows = [src(i, sy, h) for i in range(oh)]
    cols = [src(j, sx, w) for j in range(ow)]
    return x[:, rows][:, :, cols]


def ref_area(x, oh, ow):
    """ResizeArea (no align_corners): output pixel (i, j) is the average of the input
    over the box [i * h/oh, (i + 1) * h/oh) x [j * w/ow, (j + 1) * w/ow), each input
    pixel weighted by the area it shares with the box (in float64)."""
    n, h, w, c = x.shape
    x = x.astype(np.float64)

    def overlap(o, size_in, size_out):
        lo, hi = o * size_in / size_out, (o + 1) * size_in / size_out
        return np.array([max(0.0, min(k + 1, hi) - max(k, lo)) for k in range(size_in)])

    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        wy = overlap(i, h, oh)
        for j in range(ow):
            wx = overlap(j, w, ow)
            out[:, i, j] = np.einsum("y,x,nyxc->nc", wy, wx, x) / (wy.sum() * wx.sum())
    return out.astype(f32)


def images(seed, shape, dtype=np.float32):
    r = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return r.integers(0, 100, size=shape).astype(dtype)
    return (r.normal(size=shape) * 4).astype(dtype)


sizes = st.integers(1, 7)


# ------------------------------------------------------------------------------- values

@settings(max_examples=8)
@given(h=sizes, w=sizes, oh=sizes, ow=sizes, seed=st.integers(0, 99))
def test_bilinear_half_pixel_centers(h, w, oh, ow, seed):
    x = images(seed, (2, h, w, 3))
    check_against_numpy(lambda a: tw.image.resize(a, [oh, ow]),
                        lambda a: ref_bilinear(a, oh, ow), x)


@settings(max_examples=8)
@given(h=sizes, w=sizes, oh=sizes, ow=sizes, align=st.booleans(), seed=st.integers(0, 99))
def test_v1_bilinear_legacy_and_aligned(h, w, oh, ow, align, seed):
    x = images(seed, (1, h, w, 2))
    check_against_numpy(
        lambda a: resizing.resize_bilinear(a, [oh, ow], align_corners=align),
        lambda a: ref_bilinear(a, oh, ow, align_corners=align, half_pixel=False), x)


@settings(max_examples=8)
@given(h=sizes, w=sizes, oh=sizes, ow=sizes, mode=st.sampled_from(["half", "legacy", "align"]),
       seed=st.integers(0, 99))
def test_nearest_every_sampling(h, w, oh, ow, mode, seed):
    x = images(seed, (2, h, w, 1), np.int32)
    check_against_numpy(
        lambda a: resizing.resize_nearest_neighbor(a, [oh, ow], align_corners=mode == "align",
                                                   half_pixel_centers=mode == "half"),
        lambda a: ref_nearest(a, oh, ow, mode == "align", mode == "half"), x)


def test_nearest_half_pixel_picks_tensorflows_pixels():
    # 4 -> 3: positions (o + 0.5) * 4/3 = 0.67, 2.0, 3.33 -> pixels 0, 2, 3 (TF 2.21);
    # subtracting 0.5 as the other kernels do would pick 0, 1, 2
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 4, 1)
    got = tw.image.resize(x, [1, 3], method="nearest")
    assert_same(np.asarray(got), np.array([0, 2, 3], np.float32).reshape(1, 1, 3, 1))


@settings(max_examples=8)
@given(h=st.integers(1, 9), w=st.integers(1, 9), oh=sizes, ow=sizes, seed=st.integers(0, 99))
def test_area(h, w, oh, ow, seed):
    x = images(seed, (1, h, w, 2))
    check_against_numpy(lambda a: tw.image.resize(a, [oh, ow], method="area"),
                        lambda a: ref_area(a, oh, ow), x, rtol=2e-5, atol=1e-5)


def test_area_many_taps_uses_one_matrix_and_agrees():
    # 70 -> 2 reads 35 pixels per output: past the gather limit, an einsum
    x = images(3, (1, 70, 3, 1))
    check_against_numpy(lambda a: tw.image.resize(a, [2, 3], method="area"),
                        lambda a: ref_area(a, 2, 3), x, rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("method", ["bicubic", "lanczos3", "lanczos5", "gaussian",
                                    "mitchellcubic", "area", "bilinear"])
@pytest.mark.parametrize("antialias", [False, True])
def test_constant_images_stay_constant(method, antialias):
    # every kernel's weights sum to 1 (TF normalizes the scale_and_translate spans and the
    # half-pixel Keys cubic; the legacy table's four weights sum to 1)
    x = np.full((1, 5, 6, 2), 3.25, np.float32)
    for size in ([9, 4], [2, 11], [5, 6], [1, 1]):
        got = np.asarray(tw.image.resize(x, size, method=method, antialias=antialias))
        np.testing.assert_allclose(got, np.full((1, *size, 2), 3.25), rtol=2e-6)


@pytest.mark.parametrize("method", ["bicubic", "area", "nearest"])
def test_same_size_is_the_image(method):
    x = images(0, (2, 4, 5, 3))
    got = np.asarray(tw.image.resize(x, [4, 5], method=method))
    np.testing.assert_allclose(got, x, rtol=1e-6, atol=1e-6)


def test_bilinear_keeps_an_inf_pixel_when_not_resizing_and_spreads_nan_when_it_does():
    # TensorFlow's kernel copies an image of the same size; resizing interpolates inf
    # against inf (inf - inf = NaN), as its arithmetic does
    x = np.ones((1, 3, 3, 1), np.float32)
    x[0, 1, 1, 0] = np.inf
    assert_same(np.asarray(tw.image.resize(x, [3, 3])), x)
    got = np.asarray(tw.image.resize(x, [3, 5]))[0, :, :, 0]
    np.testing.assert_array_equal(np.isnan(got[1, 1:4]), [True] * 3)
    assert np.all(got[[0, 2]] == 1) and got[1, 0] == 1 and got[1, 4] == 1


def test_area_padding_taps_never_turn_an_inf_into_nan():
    # 5 -> 3 has outputs of 2 and of 3 taps; the shorter lists' padding must not read the
    # inf pixel 0 with weight 0
    x = np.ones((1, 5, 1, 1), np.float32)
    x[0, 0, 0, 0] = np.inf
    got = np.asarray(tw.image.resize(x, [3, 1], method="area"))[0, :, 0, 0]
    assert got[0] == np.inf
    np.testing.assert_allclose(got[1:], [1.0, 1.0], rtol=1e-6)


def test_bicubic_matches_the_keys_kernel_on_a_ramp():
    # Keys' cubic reproduces quadratics exactly away from the border: a ramp is a ramp
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 12, 1) * np.ones((1, 4, 1, 1), np.float32)
    got = np.asarray(tw.image.resize(x, [4, 24], method="bicubic"))[0, 0, :, 0]
    pos = (np.arange(24) + 0.5) * 0.5 - 0.5
    np.testing.assert_allclose(got[4:-4], pos[4:-4], atol=2e-3)  # table of 1024 steps


# ------------------------------------------------------------------ shapes and dtypes

@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float16, np.float64])
@pytest.mark.parametrize("method", ["bilinear", "area", "bicubic", "nearest"])
def test_result_dtypes(dtype, method):
    x = images(1, (3, 4, 1), dtype)
    got = np.asarray(tw.image.resize(x, [5, 2], method=method))
    want = np.dtype(dtype) if method == "nearest" else np.float32
    assert got.dtype == want and got.shape == (5, 2, 1)
    if method == "bilinear":  # integers are converted to float32 values, not rescaled
        ref = ref_bilinear(x[None].astype(np.float32), 5, 2)[0]
        np.testing.assert_allclose(got, ref, rtol=1e-3 if dtype == np.float16 else 1e-6)


def test_three_d_images_and_dynamic_batch():
    x = images(2, (6, 5, 3))
    assert_same(np.asarray(tw.image.resize(x, [4, 7])), ref_bilinear(x[None], 4, 7)[0])
    fn = tw.compile(lambda a: tw.image.resize(a, [4, 7]),
                    input_signature=[tw.TensorSpec([None, 6, 5, None], tw.float32)])
    batch = images(3, (3, 6, 5, 2))
    assert_same(np.asarray(fn(batch)), ref_bilinear(batch, 4, 7))


@settings(max_examples=6)
@given(mode=st.sampled_from(["half", "legacy", "align"]), seed=st.integers(0, 99))
def test_sizes_known_only_at_run_time(mode, seed):
    # bilinear and nearest compute their tables in the graph then: one trace serves every
    # image size, with the same float32 positions as the tables computed while tracing
    align, half = mode == "align", mode == "half"
    spec = [tw.TensorSpec([None, None, None, 2], tw.float32)]
    bil = tw.compile(lambda a: resizing.resize_bilinear(a, [5, 3], align_corners=align,
                                                        half_pixel_centers=half),
                     input_signature=spec)
    nn = tw.compile(lambda a: resizing.resize_nearest_neighbor(a, [7, 4], align_corners=align,
                                                               half_pixel_centers=half),
                    input_signature=spec)
    for h, w in ((1, 1), (3, 8), (7, 2), (10, 10)):
        x = images(seed, (2, h, w, 2))
        assert_same(np.asarray(bil(x)), ref_bilinear(x, 5, 3, align, half))
        assert_same(np.asarray(nn(x)), ref_nearest(x, 7, 4, align, half))


def test_run_time_sizes_on_the_cpu_target_and_in_a_v1_graph():
    # The positions computed in the graph are rounded as float32 steps, never fused into
    # a multiply-add by the cpu target: 2 -> 50 has positions (o + 0.5) * 0.04 - 0.5 that
    # are integers in float32 steps and just below them fused, which moved the floor, so
    # the result differed in the last bit from the same resize of a static image
    x = images(0, (1, 2, 3, 1))
    dynamic = tw.compile(lambda a: tw.image.resize(a, [50, 3]),
                         input_signature=[tw.TensorSpec([1, None, 3, 1])], target="cpu")(x)
    static = tw.compile(lambda a: tw.image.resize(a, [50, 3]), target="cpu")(x)
    assert np.asarray(dynamic).tobytes() == np.asarray(static).tobytes()
    for align, half in ((False, True), (True, False), (False, False)):
        fn = tw.compile(lambda a: resizing.resize_nearest_neighbor(
            a, [3, 4], align_corners=align, half_pixel_centers=half),
            input_signature=[tw.TensorSpec([1, None, None, 1], tw.float32)], target="cpu")
        for h, w in ((4, 6), (5, 7)):
            x = images(1, (1, h, w, 1))
            assert_same(np.asarray(fn(x)), ref_nearest(x, 3, 4, align, half))
    g = tf.Graph()
    with g.as_default():
        ph = tf.placeholder(tf.uint8, [None, None, None, 3])
        out = tf.image.resize_images(ph, [4, 4])
        with tf.Session() as sess:
            for shape in ((1, 6, 9, 3), (2, 3, 3, 3)):
                x = images(2, shape, np.uint8)
                assert_same(sess.run(out, {ph: x}), ref_bilinear(x, 4, 4, half_pixel=False))


def test_preserve_aspect_ratio():
    # TensorFlow: scale = min(10/5, 10/7) in float32, sizes rounded half to even
    x = images(4, (5, 7, 3))
    got = tw.image.resize(x, [10, 10], preserve_aspect_ratio=True)
    assert got.shape == (7, 10, 3)
    assert_same(np.asarray(got), ref_bilinear(x[None], 7, 10)[0])
    assert tw.image.resize(images(0, (6, 4, 1)), [3, 9], preserve_aspect_ratio=True).shape \
        == (3, 2, 1)


def test_v1_resize_images_returns_an_unresized_image_unchanged():
    x = images(5, (1, 3, 4, 2), np.uint8)
    same = resizing.resize_images(x, [3, 4])
    assert_same(np.asarray(same), x)  # uint8, as TensorFlow 1's skip_resize_if_same
    got = np.asarray(resizing.resize_images(x, [5, 4], method=tf.image.ResizeMethod.BILINEAR,
                                            align_corners=True))
    assert_same(got, ref_bilinear(x, 5, 4, align_corners=True, half_pixel=False))
    nn = np.asarray(resizing.resize_images(x, [2, 7], method=1))
    assert_same(nn, ref_nearest(x, 2, 7, half_pixel=False))
    assert tf.image.resize is not tw.image.resize  # tf.compat.v1.image.resize: resize_images


def test_v1_graph_session():
    g = tf.Graph()
    with g.as_default():
        ph = tf.placeholder(tf.float32, [None, 3, 4, 2])
        a = tf.image.resize_bilinear(ph, [5, 6], align_corners=True)
        b = tf.image.resize_nearest_neighbor(ph, [2, 2], half_pixel_centers=True)
        c = tf.image.resize_area(ph, [1, 2])
        d = tf.image.resize(ph, [3, 4])  # TensorFlow 1's resize: unchanged
        e = tf.image.resize(ph, [4, 4], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)
        with tf.Session() as s:
            x = images(6, (2, 3, 4, 2))
            ra, rb, rc, rd, re = s.run([a, b, c, d, e], {ph: x})
    assert_same(rd, x)
    assert_same(re, ref_nearest(x, 4, 4, half_pixel=False))
    assert_same(ra, ref_bilinear(x, 5, 6, align_corners=True, half_pixel=False))
    assert_same(rb, ref_nearest(x, 2, 2, half_pixel=True))
    np.testing.assert_allclose(rc, ref_area(x, 1, 2), rtol=1e-5)


# ---------------------------------------------------------------------------- gradients

@pytest.mark.parametrize("method,align,half", [
    ("bilinear", False, True), ("bilinear", False, False), ("bilinear", True, False),
    ("nearest", False, True), ("nearest", True, False), ("bicubic", False, True),
    ("area", False, False)])
@pytest.mark.parametrize("sizes", [((3, 4), (5, 3)), ((5, 2), (2, 5))])
def test_gradients_float64(method, align, half, sizes):
    # the resampling in the images' own dtype: the public functions cast to float32
    # first, as TensorFlow does, which finite differences could not check closely
    (h, w), (oh, ow) = sizes
    x = images(7, (1, h, w, 2), np.float64)
    check_gradients(lambda a: resizing._core_for_tests(a, [oh, ow], method, align, half), x)


def test_nearest_gradient_through_the_public_function_float64():
    x = images(8, (2, 3, 5, 1), np.float64)
    check_gradients(lambda a: tw.image.resize(a, [7, 2], method="nearest"), x)


def test_bilinear_gradient_float32_sums_into_the_read_pixels():
    # upsampling 1x2 -> 1x4 (half-pixel): positions -0.25, 0.25, 0.75, 1.25: outputs read
    # pixel 0 with weights 1, 0.75, 0.25, 0 and pixel 1 with 0, 0.25, 0.75, 1
    x = np.array([[[[1.0], [2.0]]]], np.float32)
    g = tw.grad(lambda a: tw.reduce_sum(tw.image.resize(a, [1, 4])))(x)
    assert_same(np.asarray(g), np.array([[[[2.0], [2.0]]]], np.float32))


# ------------------------------------------------------------------------------- errors

def test_errors_name_the_function_and_line():
    def rank2():
        return tw.image.resize(np.zeros((3, 4), np.float32), [2, 2])

    with pytest.raises(ValueError, match=r"tw.image.resize .*must have 3 or 4 dimensions") \
            as e:
        rank2()
    assert line_of(rank2, "tw.image.resize") in str(e.value)

    x = np.zeros((2, 3, 1), np.float32)
    with pytest.raises(ValueError, match="1-D Tensor of 2 elements"):
        tw.image.resize(x, [2, 2, 2])
    with pytest.raises(TypeError, match="1-D int32"):
        tw.image.resize(x, [2.5, 2.0])
    with pytest.raises(ValueError, match="must be positive"):
        tw.image.resize(x, [0, 2])
    with pytest.raises(ValueError, match="Resize method is not implemented: 'linear'"):
        tw.image.resize(x, [2, 2], method="linear")
    with pytest.raises(ValueError, match="align_corners must be False"):
        resizing.resize_bilinear(x[None], [2, 2], align_corners=True, half_pixel_centers=True)
    with pytest.raises(ValueError, match=r"resize_bilinear .*must have 4 dimensions"):
        resizing.resize_bilinear(x, [2, 2])
    with pytest.raises(ValueError, match="Resize method is not implemented"):
        resizing.resize_images(x, [2, 2], method=7)

    def unknown_height(a):
        return tw.image.resize(a, [2, 2], method="bicubic")
    fn = tw.compile(unknown_height, input_signature=[tw.TensorSpec([None, None, 3, 1])])
    with pytest.raises(ValueError, match="height and width .*must be known"):
        fn(np.zeros((1, 2, 3, 1), np.float32))
    fn = tw.compile(lambda a: tw.image.resize(a, [2, 2], preserve_aspect_ratio=True),
                    input_signature=[tw.TensorSpec([None, None, 3, 1])])
    with pytest.raises(ValueError, match="height and width must be known"):
        fn(np.zeros((1, 2, 3, 1), np.float32))
