"""``tw.optimizers``: SGD, Momentum, Adagrad, Adadelta, RMSProp, Adam, AdamW, Nadam, Ftrl,
Adamax, Lion, Adafactor, and learning-rate ``schedules``. Each works inside
``@tw.compile`` and eagerly, in TensorFlow 2's ``GradientTape`` loop (``apply_gradients`` / ``minimize`` update the
variables at once)."""

from .frontend import schedules
from .frontend.optimizers import (
    SGD,
    Adadelta,
    Adafactor,
    Adagrad,
    Adam,
    Adamax,
    AdamW,
    Ftrl,
    Lion,
    Momentum,
    Nadam,
    Optimizer,
    RMSProp,
)

__all__ = ["Optimizer", "SGD", "Momentum", "Adagrad", "Adadelta", "RMSProp", "Adam", "AdamW",
           "Nadam", "Ftrl", "Adamax", "Lion", "Adafactor",
           "schedules"]


def __dir__() -> list[str]:
    return sorted(__all__)
