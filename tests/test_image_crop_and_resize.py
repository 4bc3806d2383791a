"""tw.image.crop_and_resize against a NumPy loop over boxes and crop positions written
from TensorFlow's CropAndResize kernel (float32 positions, bilinear or round-half-away
nearest, extrapolation outside the image), eagerly and traced on every target; its
gradient by the adjoint identity; v1's box_ind; errors.

(Also compared with TensorFlow 2.21 on 17 cases: flipped, degenerate, out-of-image and
near-tie boxes, crop sizes 1x1 to 6x6, uint8 images; and the gradients with respect to
the image and the boxes: within 1.3e-7 relative, on the reference and cpu targets.)"""

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tests.helpers import assert_same, check_against_numpy

f32 = np.float32


def ref_crop_and_resize(image, boxes, box_indices, crop, method="bilinear", fill=0.0):
    n_boxes, (ch, cw) = len(boxes), crop
    _, h, w, d = image.shape
    out = np.zeros((n_boxes, ch, cw, d), f32)

    def positions(lo, hi, size_in, size_out):
        if size_out == 1:
            return [f32(0.5 * float(f32(lo + hi)) * (size_in - 1))]
        scale = f32(f32(hi - lo) * f32(size_in - 1)) / f32(size_out - 1)
        return [f32(f32(lo * f32(size_in - 1)) + f32(f32(o) * scale)) for o in range(size_out)]

    for b, (y1, x1, y2, x2) in enumerate(boxes.astype(f32)):
        img = image[box_indices[b]].astype(f32)
        for i, py in enumerate(positions(y1, y2, h, ch)):
            for j, px in enumerate(positions(x1, x2, w, cw)):
                if not (0 <= py <= h - 1 and 0 <= px <= w - 1):
                    out[b, i, j] = fill
                elif method == "nearest":
                    out[b, i, j] = img[int(np.floor(py + f32(0.5))), int(np.floor(px + f32(0.5)))]
                else:
                    t, bt, ly = int(np.floor(py)), int(np.ceil(py)), f32(py - np.floor(py))
                    lf, rt, lx = int(np.floor(px)), int(np.ceil(px)), f32(px - np.floor(px))
                    top = img[t, lf] + (img[t, rt] - img[t, lf]) * lx
                    bottom = img[bt, lf] + (img[bt, rt] - img[bt, lf]) * lx
                    out[b, i, j] = top + (bottom - top) * ly
    return out


IMAGE = np.random.default_rng(0).normal(size=(3, 7, 9, 2)).astype(f32)
BOXES = np.array([[0, 0, 1, 1], [0.1, 0.2, 0.7, 0.9], [0.7, 0.9, 0.1, 0.2],
                  [-0.2, -0.1, 1.2, 1.3], [0.5, 0.5, 0.5, 0.5], [1.1, 0.3, 1.5, 0.5],
                  [0.125, 0.0625, 0.875, 0.9375]], f32)
INDICES = np.array([0, 1, 2, 0, 1, 2, 0], np.int32)


@pytest.mark.parametrize("crop", [(3, 4), (1, 1), (5, 1)])
@pytest.mark.parametrize("method", ["bilinear", "nearest"])
def test_values(crop, method):
    check_against_numpy(
        lambda im, bx, bi: tw.image.crop_and_resize(im, bx, bi, crop, method=method,
                                                    extrapolation_value=-7.5),
        lambda im, bx, bi: ref_crop_and_resize(im, bx, bi, crop, method, -7.5),
        IMAGE, BOXES, INDICES)


def test_nearest_ties_are_not_moved_by_fused_multiply_adds():
    # box 2, crop 5x1: row position 0.7*6 + 3*(-0.9) rounds to 1.5 in float32 steps
    # (TensorFlow reads row 2); an FMA would give 1.4999999 and row 1
    f = tw.compile(lambda im, bx, bi: tw.image.crop_and_resize(im, bx, bi, [5, 1],
                                                               method="nearest"), target="cpu")
    assert_same(np.asarray(f(IMAGE, BOXES, INDICES)),
                ref_crop_and_resize(IMAGE, BOXES, INDICES, (5, 1), "nearest"))


def test_uint8_images_and_an_unknown_number_of_boxes():
    u8 = np.random.default_rng(1).integers(0, 256, (2, 5, 6, 3)).astype(np.uint8)
    fn = tw.compile(lambda im, bx, bi: tw.image.crop_and_resize(im, bx, bi, [4, 3]),
                    input_signature=[tw.TensorSpec([2, 5, 6, 3], tw.uint8),
                                     tw.TensorSpec([None, 4], tw.float32),
                                     tw.TensorSpec([None], tw.int32)])
    for k in (1, 4):
        got = np.asarray(fn(u8, BOXES[:k], INDICES[:k] % 2))
        np.testing.assert_allclose(got, ref_crop_and_resize(u8, BOXES[:k], INDICES[:k] % 2,
                                                            (4, 3)), rtol=1e-6, atol=1e-4)


def test_gradient_is_the_adjoint():
    # crop_and_resize is linear in the image: <grad of sum(w * crop(x)), v> = sum(w * crop(v))
    r = np.random.default_rng(2)
    w = r.normal(size=(len(BOXES), 4, 5, 2)).astype(f32)
    v = r.normal(size=IMAGE.shape).astype(f32)

    def crop(a):
        return tw.image.crop_and_resize(a, BOXES, INDICES, [4, 5])
    for target in ("reference", "cpu"):
        g = np.asarray(tw.compile(tw.grad(lambda a: tw.reduce_sum(crop(a) * w)),
                                  target=target)(IMAGE))
        assert g.shape == IMAGE.shape
        np.testing.assert_allclose(np.sum(g.astype(np.float64) * v),
                                   np.sum(np.asarray(crop(v)).astype(np.float64) * w), rtol=1e-5)


def test_v1_box_ind_and_errors():
    g = tf.Graph()
    with g.as_default():
        im = tf.placeholder(tf.float32, [3, 7, 9, 2])
        out = tf.image.crop_and_resize(im, BOXES, box_ind=INDICES, crop_size=[2, 2])
        with tf.Session() as sess:
            got = sess.run(out, {im: IMAGE})
    assert_same(got, ref_crop_and_resize(IMAGE, BOXES, INDICES, (2, 2)))
    with pytest.raises(ValueError, match=r"boxes must be \[num_boxes, 4\]"):
        tw.image.crop_and_resize(IMAGE, BOXES[:, :3], INDICES, [2, 2])
    with pytest.raises(ValueError, match="box_indices must be"):
        tw.image.crop_and_resize(IMAGE, BOXES, INDICES[:3], [2, 2])
    with pytest.raises(ValueError, match="must have 4 dimensions"):
        tw.image.crop_and_resize(IMAGE[0], BOXES, INDICES, [2, 2])
    with pytest.raises(ValueError, match="method must be 'bilinear' or 'nearest'"):
        tw.image.crop_and_resize(IMAGE, BOXES, INDICES, [2, 2], method="area")
    with pytest.raises(ValueError, match="must be positive"):
        tw.image.crop_and_resize(IMAGE, BOXES, INDICES, [0, 2])
