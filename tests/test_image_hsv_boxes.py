"""tw.image.rgb_to_hsv / hsv_to_rgb, draw_bounding_boxes, non_max_suppression (and its
_with_scores, _padded, _overlaps versions) and sample_distorted_bounding_box.

Oracles: TensorFlow 2.21's results (tests/data/tf_fixtures/image_boxes.npz, recorded by
record_image_boxes.py next to it), Python's colorsys, and NumPy transcriptions of
TensorFlow's kernels (loops over pixels, boxes and attempts, written from the C++)
run on hypothesis-drawn inputs; every function eagerly and traced on each target."""

import colorsys
import heapq
import math
import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import tensorweave as tw
from tests.helpers import TARGETS, check_against_numpy, check_gradients

FIXTURES = np.load(os.path.join(os.path.dirname(__file__), "data", "tf_fixtures",
                                "image_boxes.npz"))
DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32,
          "float64": np.float64}


def everywhere(fn, *args):
    """{where: result} of fn(*args) eagerly and traced on each target."""
    out = {"eager": fn(*[tw.constant(x) for x in args])}
    for target in TARGETS:
        out[target] = tw.compile(fn, target=target)(*args)
    return {k: (tuple(np.asarray(x) for x in v) if isinstance(v, tuple) else np.asarray(v))
            for k, v in out.items()}


def fixture(key, dtype_name):
    x = FIXTURES[key]
    if x.dtype == np.uint8:  # 16-bit floats are stored as their bytes
        x = x.view(DTYPES[dtype_name]).reshape(x.shape[:-1])
    return x


# ---------------------------------------------------------------------- HSV conversions

@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("fn", ["rgb_to_hsv", "hsv_to_rgb"])
def test_hsv_conversions_are_tensorflows_bit_for_bit(fn, dtype):
    x = fixture(f"{fn}/{dtype}/in", dtype)
    want = fixture(f"{fn}/{dtype}/out", dtype)
    for where, got in everywhere(getattr(tw.image, fn), x).items():
        assert got.dtype == want.dtype and got.shape == want.shape
        if where == "cpu" and dtype in ("float32", "float64"):
            # the cpu target contracts a * b + c into one rounding (FMA): one ulp
            np.testing.assert_allclose(got, want, rtol=2 * np.finfo(want.dtype).eps, atol=0)
        else:
            assert got.tobytes() == want.tobytes(), where


def colorsys_each(fn):
    def apply(x):
        flat = x.reshape(-1, 3).astype(np.float64)
        return np.array([fn(*p) for p in flat]).reshape(x.shape).astype(x.dtype)
    return apply


pixels = st.integers(0, 2**32 - 1).flatmap(
    lambda seed: st.sampled_from([(1, 3), (4, 3), (2, 3, 3), (1, 2, 2, 3)]).map(
        lambda shape: np.random.default_rng(seed).random(shape)))


@settings(max_examples=15, deadline=None)
@given(x=pixels)
def test_hsv_conversions_match_colorsys(x):
    # colorsys computes in float64 from the same formulas (hue in [0, 1))
    check_against_numpy(tw.image.rgb_to_hsv, colorsys_each(colorsys.rgb_to_hsv), x,
                        rtol=1e-12, atol=1e-12)
    check_against_numpy(tw.image.hsv_to_rgb, colorsys_each(colorsys.hsv_to_rgb), x,
                        rtol=1e-12, atol=1e-12)
    back = np.asarray(tw.image.hsv_to_rgb(tw.image.rgb_to_hsv(x.astype(np.float32))))
    np.testing.assert_allclose(back, x, atol=2e-6)


def test_hsv_gradients_match_finite_differences():
    # pixels away from the branches' edges (distinct channels, no zero value)
    rgb = np.array([[0.2, 0.5, 0.9], [0.8, 0.3, 0.4], [0.35, 0.7, 0.1], [0.6, 0.65, 0.3]])
    check_gradients(tw.image.rgb_to_hsv, rgb)
    hsv = np.array([[0.1, 0.5, 0.8], [0.4, 0.9, 0.3], [0.75, 0.2, 0.6], [0.93, 0.6, 0.5]])
    check_gradients(tw.image.hsv_to_rgb, hsv)
    # a gray and a black pixel: finite (the discarded branches divide by zero)
    g = tw.grad(lambda x: tw.reduce_sum(tw.image.rgb_to_hsv(x)))(
        np.array([[0.5, 0.5, 0.5], [0.0, 0.0, 0.0]]))
    assert np.isfinite(np.asarray(g)).all()


def test_hsv_bad_input_names_the_function():
    with pytest.raises(tw.errors.DTypeError, match=r"tw\.image\.rgb_to_hsv.*float16"):
        tw.image.rgb_to_hsv(np.zeros((2, 2, 3), np.uint8))
    with pytest.raises(tw.errors.ShapeError, match=r"tw\.image\.hsv_to_rgb.*must be 3"):
        tw.image.hsv_to_rgb(np.zeros((2, 2, 4), np.float32))


def test_adjust_hue_and_saturation_are_tensorflows_bit_for_bit():
    # (tw.image.adjust_hue / adjust_saturation predate this file; checked here on 240
    # more pixels than tests/test_image_hsv.py's)
    x = FIXTURES["adjust_hue/in"]
    for i in range(8):
        delta = float(FIXTURES[f"adjust_hue/{i}/delta"])
        got = np.asarray(tw.image.adjust_hue(x, delta))
        assert got.tobytes() == FIXTURES[f"adjust_hue/{i}/out"].tobytes(), delta
    for factor in (0.0, 0.4, 1.9):
        got = np.asarray(tw.image.adjust_saturation(x, factor))
        assert got.tobytes() == FIXTURES[f"adjust_saturation/{factor}/out"].tobytes()


# ---------------------------------------------------------------- draw_bounding_boxes

DEFAULT_COLORS = np.array([[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1],
                           [0.5, 0, 0.5, 1], [0.5, 0.5, 0, 1], [0.5, 0, 0, 1], [0, 0, 0.5, 1],
                           [0, 1, 1, 1], [1, 0, 1, 1]], np.float32)


def numpy_draw(images, boxes, colors=None):
    """DrawBoundingBoxesOp::Compute, loop for loop."""
    out = images.copy()
    batch, height, width, depth = images.shape
    if colors is None or colors.size == 0:
        table = DEFAULT_COLORS[:, :depth].copy()
        if depth == 1:
            table[:, 0] = 1
    else:
        table = colors[:, :depth]
    for b in range(batch):
        for k in range(boxes.shape[1]):
            color = table[k % len(table)].astype(images.dtype)
            if not np.isfinite(boxes[b, k]).all():
                continue
            y0, x0, y1, x1 = (int(np.float32(c) * np.float32(s - 1)) for c, s in
                              zip(boxes[b, k], (height, width, height, width)))
            if y0 > y1 or x0 > x1 or y0 >= height or y1 < 0 or x0 >= width or x1 < 0:
                continue
            c0, c1 = max(x0, 0), min(x1, width - 1)
            r0, r1 = max(y0, 0), min(y1, height - 1)
            if y0 >= 0:
                out[b, y0, c0:c1 + 1] = color
            if y1 < height:
                out[b, y1, c0:c1 + 1] = color
            if x0 >= 0:
                out[b, r0:r1 + 1, x0] = color
            if x1 < width:
                out[b, r0:r1 + 1, x1] = color
    return out


@pytest.mark.parametrize("depth", [1, 3, 4])
def test_draw_bounding_boxes_is_tensorflows(depth):
    boxes = FIXTURES["draw/boxes"]
    img = FIXTURES[f"draw/{depth}/in"]
    colors = FIXTURES[f"draw/{depth}/colors"]
    for key, images, table in (("default", img, None), ("custom", img, colors),
                               ("half", img.astype(np.float16), colors)):
        want = FIXTURES[f"draw/{depth}/{key}"]
        np.testing.assert_array_equal(numpy_draw(images, boxes, table), want)
        for where, got in everywhere(lambda i, b: tw.image.draw_bounding_boxes(i, b, table),
                                     images, boxes).items():
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (key, where)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), depth=st.sampled_from([1, 3, 4]),
       hw=st.tuples(st.integers(1, 6), st.integers(1, 6)), n=st.integers(0, 5),
       n_colors=st.sampled_from([None, 0, 1, 3]))
def test_draw_bounding_boxes_matches_the_kernel_transcription(seed, depth, hw, n, n_colors):
    rng = np.random.default_rng(seed)
    images = rng.random((2, *hw, depth)).astype(np.float32)
    boxes = (rng.random((2, n, 4)) * 1.6 - 0.3).astype(np.float32)
    colors = None if n_colors is None else rng.random((n_colors, depth + 1)).astype(np.float32)
    check_against_numpy(lambda i, b: tw.image.draw_bounding_boxes(i, b, colors),
                        lambda i, b: numpy_draw(i, b, colors), images, boxes, rtol=0, atol=0)


def test_draw_bounding_boxes_gradient_passes_undrawn_pixels():
    images = np.random.default_rng(1).random((1, 5, 6, 3)).astype(np.float32)
    boxes = np.array([[[0.2, 0.2, 0.8, 0.8], [np.nan, 0, 1, 1]]], np.float32)
    weights = np.random.default_rng(2).random(images.shape).astype(np.float32)
    g = tw.grad(lambda x: tw.reduce_sum(tw.image.draw_bounding_boxes(x, boxes) * weights))(
        images)
    drawn = numpy_draw(images, boxes) != images
    np.testing.assert_array_equal(np.asarray(g), np.where(drawn, 0, weights))


def test_draw_bounding_boxes_bad_input():
    img, box = np.zeros((1, 4, 4, 3), np.float32), np.zeros((1, 1, 4), np.float32)
    cases = [(np.zeros((4, 4, 3), np.float32), box, None, "rank 4"),
             (np.zeros((1, 4, 4, 2), np.float32), box, None, "depth must be 1"),
             (img, np.zeros((2, 1, 4), np.float32), None, "same batch size"),
             (img, np.zeros((1, 3), np.float32), None, "shape \\[batch, num_boxes, 4\\]"),
             (img, box, np.zeros((2, 2), np.float32), "at least as many channels"),
             (img, box, np.zeros(3, np.float32), "2-D matrix")]
    for images, boxes, colors, text in cases:
        with pytest.raises(tw.errors.ShapeError, match=r"tw\.image\.draw_bounding_boxes.*"
                                                       + text):
            tw.image.draw_bounding_boxes(images, boxes, colors)
    with pytest.raises(tw.errors.DTypeError, match="float32 or float16"):
        tw.image.draw_bounding_boxes(img.astype(np.float64), box)


# ----------------------------------------------------------------------------- NMS

def numpy_iou(b, i, j):
    f = np.float32
    yi0, yi1 = sorted(map(f, (b[i, 0], b[i, 2])))
    xi0, xi1 = sorted(map(f, (b[i, 1], b[i, 3])))
    yj0, yj1 = sorted(map(f, (b[j, 0], b[j, 2])))
    xj0, xj1 = sorted(map(f, (b[j, 1], b[j, 3])))
    ai, aj = (yi1 - yi0) * (xi1 - xi0), (yj1 - yj0) * (xj1 - xj0)
    if ai <= 0 or aj <= 0:
        return f(0)
    inter = max(min(yi1, yj1) - max(yi0, yj0), f(0)) * max(min(xi1, xj1) - max(xi0, xj0), f(0))
    return inter / (ai + aj - inter)


def numpy_nms(similarity, scores, max_out, threshold, score_threshold, sigma=0.0):
    """DoNonMaxSuppressionOp: its priority queue, lazy soft suppression and all."""
    t = scores.dtype.type
    queue = [(-s, i, 0) for i, s in enumerate(scores) if s > score_threshold]
    heapq.heapify(queue)   # (smallest -score, then smallest index) first: TensorFlow's order
    scale = t(-0.5) / t(sigma) if sigma > 0 else t(0)
    selected, selected_scores = [], []
    while len(selected) < max_out and queue:
        neg, i, begin = heapq.heappop(queue)
        score = original = t(-neg)
        hard = False
        for j in range(len(selected) - 1, begin - 1, -1):
            sim = t(similarity(i, selected[j]))
            weight = np.exp(scale * sim * sim) if sigma > 0 or sim <= t(threshold) else t(0)
            score = t(score * weight)
            if sigma == 0 and sim > t(threshold):
                hard = True
                break
            if score <= score_threshold:
                break
        if hard:
            continue
        if score == original:
            selected.append(i)
            selected_scores.append(score)
        elif score > score_threshold:
            heapq.heappush(queue, (-score, i, len(selected)))
    return np.array(selected, np.int32), np.array(selected_scores, scores.dtype)


@pytest.mark.parametrize("k", range(6))
def test_nms_family_is_tensorflows(k):
    boxes, scores = FIXTURES[f"nms/{k}/boxes"], FIXTURES[f"nms/{k}/scores"]
    m, iou, st_ = (float(v) for v in FIXTURES[f"nms/{k}/params"])
    m = int(m)
    nms = tw.image
    for where, got in everywhere(lambda b, s: nms.non_max_suppression(b, s, m, iou, st_),
                                 boxes, scores).items():
        np.testing.assert_array_equal(got, FIXTURES[f"nms/{k}/selected"], err_msg=where)
        assert got.dtype == np.int32
    for sigma in (0.0, 0.5):
        want_i = FIXTURES[f"nms/{k}/soft{sigma}/indices"]
        want_s = FIXTURES[f"nms/{k}/soft{sigma}/scores"]
        for where, (gi, gs) in everywhere(
                lambda b, s: nms.non_max_suppression_with_scores(b, s, m, iou, st_, sigma),
                boxes, scores).items():
            np.testing.assert_array_equal(gi, want_i, err_msg=where)
            # (soft scores: the decay factors multiply in another order than TensorFlow's)
            np.testing.assert_allclose(gs, want_s, rtol=2e-7, err_msg=where)
    m1 = max(m, 1)
    for key, b in (("v4", boxes), ("padded", FIXTURES[f"nms/{k}/canonical"])):
        if f"nms/{k}/{key}" not in FIXTURES:
            continue
        for where, (pi, pn) in everywhere(
                lambda b_, s: nms.non_max_suppression_padded(b_, s, m1, iou, st_,
                                                             pad_to_max_output_size=True),
                b, scores).items():
            np.testing.assert_array_equal(pi, FIXTURES[f"nms/{k}/{key}"], err_msg=where)
            assert int(pn) == int(FIXTURES[f"nms/{k}/{key}_valid"])
    ov = FIXTURES[f"nms/{k}/overlaps"]
    for where, got in everywhere(lambda o, s: nms.non_max_suppression_overlaps(o, s, m, iou,
                                                                               st_),
                                 ov, scores).items():
        np.testing.assert_array_equal(got, FIXTURES[f"nms/{k}/by_overlaps"], err_msg=where)


nms_inputs = st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 12), st.integers(0, 8),
                       st.sampled_from([0.0, 0.3, 0.5, 1.0]),
                       st.sampled_from([-np.inf, 0.0, 0.4]))


def random_nms_case(seed, n):
    rng = np.random.default_rng(seed)
    c = rng.random((n, 2))
    s = rng.random((n, 2)) * 0.4
    boxes = np.concatenate([c - s, c + s], 1).astype(np.float32)
    flip = rng.random(n) < 0.3
    boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]
    scores = rng.choice([0.1, 0.5, 0.7, 0.9], n).astype(np.float32)  # many ties
    if n > 2:
        boxes[1] = boxes[0]
    return boxes, scores


@settings(max_examples=20, deadline=None)
@given(case=nms_inputs)
def test_nms_matches_the_kernel_transcription(case):
    seed, n, m, iou, st_ = case
    boxes, scores = random_nms_case(seed, n)
    want, want_scores = numpy_nms(lambda i, j: numpy_iou(boxes, i, j), scores, m, iou, st_)
    for where, got in everywhere(lambda b, s: tw.image.non_max_suppression(b, s, m, iou, st_),
                                 boxes, scores).items():
        np.testing.assert_array_equal(got, want, err_msg=where)
    soft_i, soft_s = numpy_nms(lambda i, j: numpy_iou(boxes, i, j), scores, m, iou, st_, 0.3)
    gi, gs = tw.image.non_max_suppression_with_scores(boxes, scores, m, iou, st_, 0.3)
    np.testing.assert_array_equal(np.asarray(gi), soft_i)
    np.testing.assert_allclose(np.asarray(gs), soft_s, rtol=5e-7)
    pi, pn = tw.image.non_max_suppression_padded(boxes, scores, m, iou, st_,
                                                 pad_to_max_output_size=True)
    np.testing.assert_array_equal(np.asarray(pi), np.pad(want, (0, m - len(want))))
    assert int(pn) == len(want)
    ov = np.random.default_rng(seed + 1).random((n, n)).astype(np.float32)
    want_ov, _ = numpy_nms(lambda i, j: ov[i, j], scores, m, iou, st_)
    np.testing.assert_array_equal(
        np.asarray(tw.image.non_max_suppression_overlaps(ov, scores, m, iou, st_)), want_ov)


def test_padded_nms_with_batch_dimensions_and_run_time_max_output():
    rng = np.random.default_rng(5)
    boxes = rng.random((2, 3, 7, 4)).astype(np.float32)
    scores = rng.random((2, 3, 7)).astype(np.float32)
    for where, (pi, pn) in everywhere(
            lambda b, s: tw.image.non_max_suppression_padded(b, s, 4, 0.2,
                                                             pad_to_max_output_size=True),
            boxes, scores).items():
        assert pi.shape == (2, 3, 4) and pn.shape == (2, 3)
        for i in range(2):
            for j in range(3):
                want, _ = numpy_nms(lambda p, q: numpy_iou(boxes[i, j], p, q), scores[i, j],
                                    4, 0.2, -np.inf)
                np.testing.assert_array_equal(pi[i, j], np.pad(want, (0, 4 - len(want))))
                assert pn[i, j] == len(want)
    # max_output_size computed at run time
    f = tw.compile(lambda b, s, k: tw.image.non_max_suppression(b, s, k, 0.2), target="cpu")
    for k in (0, 2, 7):
        want, _ = numpy_nms(lambda p, q: numpy_iou(boxes[0, 0], p, q), scores[0, 0], k, 0.2,
                            -np.inf)
        np.testing.assert_array_equal(f(boxes[0, 0], scores[0, 0], np.int32(k)), want)
    with pytest.raises(tw.errors.InvalidArgumentError, match="max_output_size must be non-neg"):
        f(boxes[0, 0], scores[0, 0], np.int32(-1))


def test_nms_bad_input():
    b, s = np.zeros((3, 4), np.float32), np.zeros(3, np.float32)
    nms = tw.image.non_max_suppression
    with pytest.raises(tw.errors.InvalidArgumentError, match="iou_threshold must be in"):
        nms(b, s, 2, iou_threshold=1.5)
    with pytest.raises(tw.errors.InvalidArgumentError, match="max_output_size must be non-neg"):
        nms(b, s, -1)
    with pytest.raises(tw.errors.ShapeError, match="scores must have shape \\[3\\]"):
        nms(b, np.zeros(4, np.float32), 2)
    with pytest.raises(tw.errors.ShapeError, match="boxes must have shape"):
        nms(np.zeros((3, 5), np.float32), s, 2)
    with pytest.raises(tw.errors.InvalidArgumentError, match="soft_nms_sigma must be non-neg"):
        tw.image.non_max_suppression_with_scores(b, s, 2, soft_nms_sigma=-1.0)
    with pytest.raises(tw.errors.InvalidArgumentError, match="pad_to_max_output_size"):
        tw.image.non_max_suppression_padded(np.zeros((2, 3, 4), np.float32),
                                            np.zeros((2, 3), np.float32), 2)
    # a threshold computed at run time is checked at run time
    f = tw.compile(lambda t: nms(b, s, 2, iou_threshold=t), target="reference")
    with pytest.raises(tw.errors.InvalidArgumentError, match="iou_threshold must be in"):
        f(np.float32(-0.1))


# ----------------------------------------------------- sample_distorted_bounding_box

def draws(seed, attempts):
    """The uniforms the sampler's attempts use: (aspect f32, height, y, x f64)."""
    base = np.asarray(tw.random.stateless_uniform([2], seed, minval=None, maxval=None,
                                                  dtype=tw.int64))

    def stream(k, dtype):
        return np.asarray(tw.random.stateless_uniform(
            [attempts], np.array([base[0], base[1] + k], np.int64), dtype=dtype))

    return (stream(2, tw.float32), stream(3, tw.float64), stream(4, tw.float64),
            stream(5, tw.float64))


def lrintf(x):
    return int(np.rint(np.float32(x)))


def numpy_random_crop(width, height, min_rel, max_rel, ar, u_h, u_y, u_x):
    """GenerateRandomCrop, its float/double/int arithmetic, one attempt."""
    f = np.float32
    if not (max_rel > 0 and ar > 0 and width > 0 and height > 0 and min_rel <= max_rel):
        return None
    min_area = f(f(f(min_rel) * f(width)) * f(height))
    max_area = f(f(f(max_rel) * f(width)) * f(height))
    h = lrintf(np.sqrt(f(min_area / ar)))
    max_h = lrintf(np.sqrt(f(max_area / ar)))
    if lrintf(f(max_h) * ar) > width:
        max_h = int((width + 0.5 - float(f(1e-7))) / float(ar))
        if lrintf(f(max_h) * ar) > width:
            max_h -= 1
    max_h = min(max_h, height)
    h = min(h, max_h)
    if h < max_h:
        h += int(math.floor(u_h * (max_h - h + 1)))
    w = lrintf(f(h) * ar)
    area = f(w * h)
    if area < min_area:
        h += 1
        w = lrintf(f(h) * ar)
        area = f(w * h)
    if area > max_area:
        h -= 1
        w = lrintf(f(h) * ar)
        area = f(w * h)
    if area < min_area or area > max_area or w > width or h > height or w <= 0 or h <= 0:
        return None
    y = int(math.floor(u_y * (height - h))) if h < height else 0
    x = int(math.floor(u_x * (width - w))) if w < width else 0
    return x, y, x + w, y + h


def rect_area(r):
    return np.float32((r[2] - r[0]) * (r[3] - r[1]))


def numpy_covers(crop, rects, min_covered):
    if rect_area(crop) < 1:
        return False
    for r in rects:
        obj = rect_area(r)
        if obj < 1:
            continue
        p = (max(crop[0], r[0]), max(crop[1], r[1]), min(crop[2], r[2]), min(crop[3], r[3]))
        inter = np.float32(0) if p[0] > p[2] or p[1] > p[3] else rect_area(p)
        if inter / obj >= np.float32(min_covered):
            return True
    return False


def numpy_sdbb(size, boxes, seed, min_covered, ar_range, area_range, attempts):
    height, width = int(size[0]), int(size[1])
    f = np.float32
    flat = np.asarray(boxes, np.float32).reshape(-1, 4)
    rects = [(int(b[1] * f(width)), int(b[0] * f(height)), int(b[3] * f(width)),
              int(b[2] * f(height))) for b in flat] or [(0, 0, width, height)]
    u_ar, u_h, u_y, u_x = draws(seed, attempts)
    crop = (0, 0, width, height)
    for i in range(attempts):
        ar = f(u_ar[i] * f(f(ar_range[1]) - f(ar_range[0])) + f(ar_range[0]))
        c = numpy_random_crop(width, height, area_range[0], area_range[1], ar, u_h[i],
                              u_y[i], u_x[i])
        if c is not None and numpy_covers(c, rects, min_covered):
            crop = c
            break
    x0, y0, x1, y1 = crop
    return (np.array([y0, x0, 0]), np.array([y1 - y0, x1 - x0, -1]),
            np.array([[[y0 / f(height), x0 / f(width), y1 / f(height), x1 / f(width)]]],
                     np.float32))


sdbb_cases = st.tuples(
    st.integers(0, 2**31 - 1), st.tuples(st.integers(1, 300), st.integers(1, 300)),
    st.integers(0, 3), st.floats(0.0, 1.0),
    st.tuples(st.floats(0.3, 3.0), st.floats(0.3, 3.0)).map(sorted),
    st.tuples(st.floats(0.01, 1.0), st.floats(0.01, 1.0)).map(sorted),
    st.sampled_from([1, 5, 40]))


@settings(max_examples=25, deadline=None)
@given(case=sdbb_cases)
def test_sample_distorted_bounding_box_matches_the_kernel_transcription(case):
    seed, (h, w), n, covered, ar, area, attempts = case
    rng = np.random.default_rng(seed)
    corners = np.sort(rng.random((1, n, 2, 2)), axis=2)
    boxes = corners.transpose(0, 1, 3, 2).reshape(1, n, 4)[..., [0, 2, 1, 3]].astype(np.float32)
    size = np.array([h, w, 3], np.int32)
    kwargs = dict(min_object_covered=covered, aspect_ratio_range=ar, area_range=area,
                  max_attempts=attempts, use_image_if_no_bounding_boxes=True)
    begin, extent, bbox = (np.asarray(t) for t in tw.image.stateless_sample_distorted_bounding_box(
        size, boxes, [seed, 5], **kwargs))
    want = numpy_sdbb(size, boxes, [seed, 5], covered, ar, area, attempts)
    np.testing.assert_array_equal(begin, want[0])
    np.testing.assert_array_equal(extent, want[1])
    np.testing.assert_array_equal(bbox, want[2])
    # the constraints, read off the result: inside the image; unless it is the whole
    # image (no attempt succeeded) its area is in the range (after lrintf rounding)
    y, x, ch, cw = begin[0], begin[1], extent[0], extent[1]
    assert 0 <= y and 0 <= x and y + ch <= h and x + cw <= w and ch > 0 and cw > 0
    if (ch, cw) != (h, w):
        assert area[0] * h * w * (1 - 1e-6) <= ch * cw <= area[1] * h * w * (1 + 1e-6)


def test_sample_distorted_bounding_box_on_every_target_and_seeds():
    size = np.array([90, 160, 3], np.int64)
    boxes = np.array([[[0.2, 0.1, 0.6, 0.5], [0.5, 0.5, 0.9, 0.95]]], np.float32)

    def fn(s, b):
        return tw.image.stateless_sample_distorted_bounding_box(s, b, [4, 2],
                                                                min_object_covered=0.6)

    results = everywhere(fn, size, boxes)
    want = numpy_sdbb(size, boxes, [4, 2], 0.6, (0.75, 1.33), (0.05, 1.0), 100)
    for where, (b, e, bb) in results.items():
        assert b.dtype == np.int64 and e.dtype == np.int64 and bb.shape == (1, 1, 4)
        np.testing.assert_array_equal(b, want[0], err_msg=where)
        np.testing.assert_array_equal(e, want[1], err_msg=where)
    # the crop and the image: tw.slice takes begin and size as they are
    image = np.arange(90 * 160 * 3, dtype=np.float32).reshape(90, 160, 3)
    crop = np.asarray(tw.slice(image, results["eager"][0], results["eager"][1]))
    b, e = want[0], want[1]
    np.testing.assert_array_equal(crop, image[b[0]:b[0] + e[0], b[1]:b[1] + e[1]])
    # stateful: a fresh crop per run; TensorFlow 1's seed and seed2 fix the stream
    f = tw.compile(lambda: tw.image.sample_distorted_bounding_box(size, boxes, seed=3)[1],
                   target="cpu")
    assert len({tuple(f()) for _ in range(6)}) > 1
    import tensorweave.compat.v1 as tf1
    crops = []
    for _ in range(2):
        with tf1.Graph().as_default():
            out = tf1.image.sample_distorted_bounding_box(size, boxes, seed=5, seed2=9)
            with tf1.Session() as sess:
                crops.append([sess.run(out[1]) for _ in range(3)])
    np.testing.assert_array_equal(crops[0], crops[1])
    assert len({tuple(c) for c in crops[0]}) > 1


SDBB = [([120, 90, 3], [[[0.1, 0.2, 0.6, 0.9]]], 0.5, (0.75, 1.33), (0.05, 1.0)),
        ([64, 256, 3], [[[0.0, 0.0, 1.0, 1.0], [0.4, 0.4, 0.45, 0.5]]], 0.1, (0.5, 2.0),
         (0.2, 0.6)),
        ([300, 200, 1], np.zeros((1, 0, 4)), 0.0, (1.0, 1.0), (0.3, 0.3))]


@pytest.mark.parametrize("k", range(3))
def test_sample_distorted_bounding_box_crops_are_distributed_as_tensorflows(k):
    size, boxes, covered, ar, area = SDBB[k]
    tf_crops = FIXTURES[f"sdbb/{k}/crops"]
    fn = tw.compile(lambda s: tw.image.stateless_sample_distorted_bounding_box(
        np.array(size, np.int32), np.array(boxes, np.float32), s, min_object_covered=covered,
        aspect_ratio_range=ar, area_range=area, use_image_if_no_bounding_boxes=True)[:2])
    ours = np.array([np.concatenate([b[:2], e[:2]]) for b, e in
                     (fn(np.array([s, 11], np.int64)) for s in range(400))])
    for j, what in enumerate(["y", "x", "height", "width"]):
        if np.ptp(tf_crops[:, j]) == 0:   # (a configuration no attempt can satisfy)
            assert (ours[:, j] == tf_crops[0, j]).all(), what
            continue
        # two-sample Kolmogorov-Smirnov: different with probability < 1e-4 by chance
        assert stats.ks_2samp(ours[:, j], tf_crops[:, j]).pvalue > 1e-4, what


def test_sample_distorted_bounding_box_bad_input():
    size, boxes = np.array([10, 10, 3], np.int32), np.array([[[0.1, 0.1, 0.5, 0.5]]], np.float32)
    sdbb = tw.image.stateless_sample_distorted_bounding_box
    with pytest.raises(tw.errors.InvalidArgumentError, match="use_image_if_no_bounding_boxes"):
        sdbb(size, np.zeros((1, 0, 4), np.float32), [1, 1])
    with pytest.raises(tw.errors.InvalidArgumentError, match="area_range must be at most 1"):
        sdbb(size, boxes, [1, 1], area_range=(0.1, 1.5))
    with pytest.raises(tw.errors.InvalidArgumentError, match="aspect_ratio_range must be pos"):
        sdbb(size, boxes, [1, 1], aspect_ratio_range=(0.0, 1.0))
    with pytest.raises(tw.errors.InvalidArgumentError, match="max_attempts must be positive"):
        sdbb(size, boxes, [1, 1], max_attempts=0)
    with pytest.raises(tw.errors.ShapeError, match="image_size must be a vector of 3"):
        sdbb(np.array([10, 10], np.int32), boxes, [1, 1])
    with pytest.raises(tw.errors.DTypeError, match="image_size must be an integer"):
        sdbb(np.array([10.0, 10, 3], np.float32), boxes, [1, 1])
    with pytest.raises(tw.errors.InvalidArgumentError, match="must be in \\[0.0, 1.0\\]"):
        sdbb(size, boxes * 3, [1, 1])
    with pytest.raises(tw.errors.InvalidArgumentError, match="min_object_covered must be non"):
        sdbb(size, boxes, [1, 1], min_object_covered=-0.5)
