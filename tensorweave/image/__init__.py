"""``tw.image``: TensorFlow's ``tf.image`` functions that image pipelines and CNN
training use: resizing, flips and rotations, crops and pads, color and dtype
conversions, brightness/contrast, standardization.

Each is a composition of existing ops (gather, slicing, reverse, arithmetic), so it runs
on every target, eagerly, under ``@tw.compile`` and in TensorFlow 1 graphs, and
differentiates through those ops' gradients. Sizes that decide which pixels are read
(image height and width for a resize, crop boxes) must be known when the graph is built.
"""

from .resizing import (
    ResizeMethod,
    resize,
)

__all__ = ["ResizeMethod", "resize"]


def __dir__() -> list[str]:
    # the public names only, not the modules the package is built from
    return sorted(__all__)
