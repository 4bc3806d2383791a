"""``tw.image``: TensorFlow's ``tf.image`` functions that image pipelines and CNN
training use: resizing, flips and rotations, crops and pads, color and dtype
conversions, brightness/contrast, standardization.

Each is a composition of existing ops (gather, slicing, reverse, arithmetic), so it runs
on every target, eagerly, under ``@tw.compile`` and in TensorFlow 1 graphs, and
differentiates through those ops' gradients. Sizes that decide which pixels are read
(image height and width for a resize, crop boxes) must be known when the graph is built.
"""

from .box_crops import crop_and_resize
from .color import (
    adjust_brightness,
    adjust_contrast,
    adjust_gamma,
    grayscale_to_rgb,
    per_image_standardization,
    random_brightness,
    random_contrast,
    rgb_to_grayscale,
    rgb_to_yiq,
    rgb_to_yuv,
    stateless_random_brightness,
    stateless_random_contrast,
    yiq_to_rgb,
    yuv_to_rgb,
)
from .convert import convert_image_dtype
from .crops import (
    central_crop,
    crop_to_bounding_box,
    pad_to_bounding_box,
    random_crop,
    resize_with_crop_or_pad,
    resize_with_pad,
    stateless_random_crop,
)
from .distorted_box import sample_distorted_bounding_box, stateless_sample_distorted_bounding_box
from .draw_boxes import draw_bounding_boxes
from .geometry import (
    flip_left_right,
    flip_up_down,
    random_flip_left_right,
    random_flip_up_down,
    rot90,
    stateless_random_flip_left_right,
    stateless_random_flip_up_down,
    transpose,
)
from .hsv import (
    adjust_hue,
    adjust_saturation,
    random_hue,
    random_saturation,
    stateless_random_hue,
    stateless_random_saturation,
)
from .hsv_convert import hsv_to_rgb, rgb_to_hsv
from .measures import image_gradients, psnr, sobel_edges, total_variation
from .nms import (
    non_max_suppression,
    non_max_suppression_overlaps,
    non_max_suppression_padded,
    non_max_suppression_with_scores,
)
from .patches import extract_patches
from .quality import ssim
from .resizing import ResizeMethod, resize

__all__ = ["ResizeMethod", "resize", "flip_left_right", "flip_up_down",
           "random_flip_left_right", "random_flip_up_down", "stateless_random_flip_left_right",
           "stateless_random_flip_up_down", "rot90", "transpose", "central_crop",
           "crop_to_bounding_box", "pad_to_bounding_box", "resize_with_crop_or_pad",
           "resize_with_pad", "random_crop", "stateless_random_crop", "adjust_brightness",
           "adjust_contrast", "adjust_gamma", "per_image_standardization", "random_brightness",
           "random_contrast", "stateless_random_brightness", "stateless_random_contrast",
           "rgb_to_grayscale", "grayscale_to_rgb", "convert_image_dtype", "total_variation",
           "image_gradients", "extract_patches", "adjust_hue", "adjust_saturation",
           "random_hue", "random_saturation", "stateless_random_hue",
           "stateless_random_saturation", "psnr", "sobel_edges", "rgb_to_yiq", "yiq_to_rgb",
           "rgb_to_yuv", "yuv_to_rgb", "crop_and_resize", "ssim", "rgb_to_hsv", "hsv_to_rgb",
           "draw_bounding_boxes", "sample_distorted_bounding_box",
           "stateless_sample_distorted_bounding_box", "non_max_suppression",
           "non_max_suppression_with_scores", "non_max_suppression_padded",
           "non_max_suppression_overlaps"]


def __dir__() -> list[str]:
    # the public names only, not the modules the package is built from
    return sorted(__all__)
