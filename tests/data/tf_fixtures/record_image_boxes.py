"""Record TensorFlow 2.21's results for tests/test_image_hsv_boxes.py (CI has no
TensorFlow): run with a TensorFlow interpreter from the repository root,

    python tests/data/tf_fixtures/record_image_boxes.py

and it rewrites tests/data/tf_fixtures/image_boxes.npz."""

import os

import numpy as np
import tensorflow as tf

OUT = os.path.join(os.path.dirname(__file__), "image_boxes.npz")
rng = np.random.default_rng(20260102)
arrays = {}

# ------------------------------------------------------------------- HSV conversions
SPECIAL = np.array([[0, 0, 0], [1, 1, 1], [0.5, 0.5, 0.5], [1, 0, 0], [0, 1, 0], [0, 0, 1],
                    [1, 1, 0], [0, 1, 1], [1, 0, 1], [0.2, 0.2, 0.7], [0.7, 0.2, 0.2],
                    [0.7, 0.7, 0.2], [0.2, 0.7, 0.7], [0.25, 0.5, 0.75], [0.75, 0.5, 0.25],
                    [0.3, 0.3, 0.1], [0.1, 0.3, 0.3], [0.3, 0.1, 0.3], [1e-30, 0, 0],
                    [0.6, 0.6000001, 0.6]], np.float64)
rgb = np.concatenate([rng.random((120, 3)), SPECIAL]).reshape(2, 7, 10, 3)
hsv = np.concatenate([rng.random((100, 3)), [[h / 6, s, v] for h in range(7)
                                            for s, v in ((1, 1), (0.5, 0.25))],
                      [[1.2, 0.5, 0.5], [-0.3, 0.5, 0.5], [0.999999, 1, 1]]]).reshape(1, -1, 1, 3)
for name in ("float16", "bfloat16", "float32", "float64"):
    dt = tf.as_dtype(name)
    x = tf.cast(rgb, dt)
    arrays[f"rgb_to_hsv/{name}/in"] = tf.bitcast(x, tf.uint8).numpy() if dt.size == 2 else x.numpy()
    arrays[f"rgb_to_hsv/{name}/out"] = (tf.bitcast(tf.image.rgb_to_hsv(x), tf.uint8).numpy()
                                        if dt.size == 2 else tf.image.rgb_to_hsv(x).numpy())
    y = tf.cast(hsv, dt)
    arrays[f"hsv_to_rgb/{name}/in"] = tf.bitcast(y, tf.uint8).numpy() if dt.size == 2 else y.numpy()
    arrays[f"hsv_to_rgb/{name}/out"] = (tf.bitcast(tf.image.hsv_to_rgb(y), tf.uint8).numpy()
                                        if dt.size == 2 else tf.image.hsv_to_rgb(y).numpy())

# adjust_hue (already in tw): many more pixels than tests/test_image_hsv.py's cases
hue_in = rng.random((1, 12, 20, 3)).astype(np.float32)
hue_in[0, 0, :20] = SPECIAL.astype(np.float32)
arrays["adjust_hue/in"] = hue_in
for i, delta in enumerate([-1.0, -0.61, -0.2, 0.0, 0.13, 0.5, 0.77, 1.0]):
    arrays[f"adjust_hue/{i}/delta"] = np.float32(delta)
    arrays[f"adjust_hue/{i}/out"] = tf.image.adjust_hue(hue_in, delta).numpy()
for sf in (0.0, 0.4, 1.9):
    arrays[f"adjust_saturation/{sf}/out"] = tf.image.adjust_saturation(hue_in, sf).numpy()

# ---------------------------------------------------------------- draw_bounding_boxes
boxes = np.array([[[0.1, 0.1, 0.8, 0.7], [0.5, 0.6, 0.4, 0.9], [-0.2, -0.5, 0.5, 0.3],
                   [0.3, 0.2, 1.4, 1.2], [1.2, 0.1, 1.5, 0.3], [0.0, 0.0, 1.0, 1.0],
                   [0.45, 0.45, 0.46, 0.46], [0.2, 0.9, 0.9, 1.0], [-3.0, -2.0, -1.0, -0.5],
                   [0.6, 0.05, 0.61, 0.95], [0.33, 0.33, 0.66, 0.66]],
                  [[0.25, 0.0, 0.75, 0.5], [0.9, 0.9, 0.1, 0.1], [0.0, 0.5, 0.95, 0.55],
                   [0.5, -1.0, 0.55, 2.0], [0.12, 0.12, 0.88, 0.88], [0.0, 0.0, 0.0, 0.0],
                   [0.999, 0.999, 1.0, 1.0], [-0.01, 0.3, 0.2, 0.31], [0.7, 0.7, 0.7, 0.7],
                   [0.4, 0.1, 0.6, 0.3], [0.5, 0.5, 0.5, 1.5]]], np.float32)
arrays["draw/boxes"] = boxes
for depth in (1, 3, 4):
    img = rng.random((2, 7, 9, depth)).astype(np.float32)
    arrays[f"draw/{depth}/in"] = img
    arrays[f"draw/{depth}/default"] = tf.image.draw_bounding_boxes(img, boxes, None).numpy()
    colors = rng.random((3, 5)).astype(np.float32)
    arrays[f"draw/{depth}/colors"] = colors
    arrays[f"draw/{depth}/custom"] = tf.image.draw_bounding_boxes(img, boxes, colors).numpy()
    # (a tensor: a NumPy float16 array passed with colors is converted to float32)
    arrays[f"draw/{depth}/half"] = tf.image.draw_bounding_boxes(
        tf.constant(img.astype(np.float16)), boxes, colors).numpy()

# ------------------------------------------------------------------------------- NMS
def random_boxes(n):
    c = rng.random((n, 2))
    s = rng.random((n, 2)) * 0.3
    b = np.concatenate([c - s, c + s], 1)
    flip = rng.random(n) < 0.3          # some boxes given as (y_max, x_max, y_min, x_min)
    b[flip] = b[flip][:, [2, 3, 0, 1]]
    return b.astype(np.float32)


cases = []
for k in range(6):
    n = [1, 5, 30, 30, 60, 0][k]
    b = random_boxes(n)
    sc = rng.random(n).astype(np.float32)
    if n >= 30:
        sc[::7] = sc[0]                          # ties
        b[3] = b[2]                              # a duplicate box
        b[4] = [0.5, 0.5, 0.5, 0.9]              # zero area
    cases.append((b, sc))
params = [(10, 0.5, -np.inf), (3, 0.0, -np.inf), (100, 0.3, 0.4), (0, 0.5, -np.inf),
          (7, 1.0, 0.2), (5, 0.5, -np.inf)]
for k, ((b, sc), (m, iou, st)) in enumerate(zip(cases, params)):
    arrays[f"nms/{k}/boxes"] = b
    arrays[f"nms/{k}/scores"] = sc
    arrays[f"nms/{k}/params"] = np.array([m, iou, st], np.float32)
    arrays[f"nms/{k}/selected"] = tf.image.non_max_suppression(b, sc, m, iou, st).numpy()
    # TensorFlow 2's padded NMS (a tiled Python algorithm) orients every box as the
    # first one is oriented, so it is recorded on canonical boxes; the kernel of
    # TensorFlow 1's (NonMaxSuppressionV4) on the boxes as they are
    canon = np.concatenate([np.minimum(b[:, :2], b[:, 2:]), np.maximum(b[:, :2], b[:, 2:])], 1)
    arrays[f"nms/{k}/canonical"] = canon
    if len(sc):  # (TensorFlow 2's padded version fails on zero boxes: a slice out of bounds)
        pi, pn = tf.image.non_max_suppression_padded(canon, sc, max(m, 1), iou, st,
                                                     pad_to_max_output_size=True)
        arrays[f"nms/{k}/padded"] = pi.numpy()
        arrays[f"nms/{k}/padded_valid"] = pn.numpy()
    vi, vn = tf.raw_ops.NonMaxSuppressionV4(boxes=b, scores=sc, max_output_size=max(m, 1),
                                            iou_threshold=iou, score_threshold=st,
                                            pad_to_max_output_size=True)
    arrays[f"nms/{k}/v4"] = vi.numpy()
    arrays[f"nms/{k}/v4_valid"] = vn.numpy()
    for sigma in (0.0, 0.5):
        si, ss = tf.image.non_max_suppression_with_scores(b, sc, m, iou, st, sigma)
        arrays[f"nms/{k}/soft{sigma}/indices"] = si.numpy()
        arrays[f"nms/{k}/soft{sigma}/scores"] = ss.numpy()
    ov = rng.random((len(sc), len(sc))).astype(np.float32)
    arrays[f"nms/{k}/overlaps"] = ov
    arrays[f"nms/{k}/by_overlaps"] = tf.image.non_max_suppression_overlaps(
        ov, sc, m, iou, st).numpy()

np.savez_compressed(OUT, **arrays)
print(f"wrote {OUT}: {len(arrays)} arrays, TensorFlow {tf.__version__}")

# ------------------------------------------------ sample_distorted_bounding_box, in bulk
# (TensorFlow's random numbers cannot be reproduced; the distribution of its crops can
# be compared: 400 seeds of each configuration)
SDBB = [  # (image_size, boxes, min_object_covered, aspect_ratio_range, area_range)
    ([120, 90, 3], [[[0.1, 0.2, 0.6, 0.9]]], 0.5, (0.75, 1.33), (0.05, 1.0)),
    ([64, 256, 3], [[[0.0, 0.0, 1.0, 1.0], [0.4, 0.4, 0.45, 0.5]]], 0.1, (0.5, 2.0),
     (0.2, 0.6)),
    ([300, 200, 1], np.zeros((1, 0, 4)), 0.0, (1.0, 1.0), (0.3, 0.3)),
]
for k, (size, bxs, cov, ar, area) in enumerate(SDBB):
    got = []
    for s in range(400):
        begin, extent, _ = tf.image.stateless_sample_distorted_bounding_box(
            np.array(size, np.int32), np.array(bxs, np.float32), seed=[s, 7],
            min_object_covered=cov, aspect_ratio_range=ar, area_range=area,
            use_image_if_no_bounding_boxes=True)
        got.append(np.concatenate([begin.numpy()[:2], extent.numpy()[:2]]))
    arrays[f"sdbb/{k}/crops"] = np.array(got, np.int32)   # [400, (y, x, h, w)]
np.savez_compressed(OUT, **arrays)
print(f"rewrote {OUT} with the crops: {len(arrays)} arrays")
