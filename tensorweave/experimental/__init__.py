"""`tw.experimental`: APIs whose shape may still change (TensorFlow's
``tf.experimental``): `dlpack` exchanges tensors with other libraries."""

from . import dlpack

__all__ = ["dlpack"]


def __dir__() -> list[str]:
    return sorted(__all__)
