"""TensorFlow 1's ``tf.image`` (``tf.compat.v1.image``): the names and defaults that
differ from TensorFlow 2's: ``resize`` is ``resize_images`` (legacy sampling, method
numbers), the raw resize ops (``resize_bilinear``, ...), ``ResizeMethod`` numbers. The
rest of ``tw.image`` is shared."""

from __future__ import annotations

from typing import Any

from . import box_crops as _box_crops
from . import crops as _crops
from . import distorted_box as _distorted_box
from . import draw_boxes as _draw_boxes
from . import patches as _patches
from . import resizing as _resize


def _v1_names() -> dict[str, Any]:
    return {
        "ResizeMethod": _resize.ResizeMethodV1,
        "resize": _resize.resize_images,
        "resize_images": _resize.resize_images,
        "resize_bilinear": _resize.resize_bilinear,
        "resize_nearest_neighbor": _resize.resize_nearest_neighbor,
        "resize_bicubic": _resize.resize_bicubic,
        "resize_area": _resize.resize_area,
        "resize_image_with_crop_or_pad": _crops.resize_with_crop_or_pad,
        "resize_image_with_pad": _crops.resize_image_with_pad_v1,
        "extract_image_patches": _patches.extract_image_patches,
        "crop_and_resize": _box_crops.crop_and_resize_v1,
        "draw_bounding_boxes": _draw_boxes.draw_bounding_boxes_v1,
        "sample_distorted_bounding_box": _distorted_box.sample_distorted_bounding_box_v1,
    }


def graph_mode_names() -> dict[str, Any]:
    """The TensorFlow 1 names of ``tf.compat.v1.image``, functions wrapped to build into
    the default graph (classes as they are)."""
    from ..compat.v1.graph import in_default_graph
    return {name: obj if isinstance(obj, type) else in_default_graph(obj)
            for name, obj in _v1_names().items()}
