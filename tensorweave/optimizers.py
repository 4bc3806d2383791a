"""``tw.optimizers``: SGD, Momentum, Adagrad, Adadelta, RMSProp, Adam, Ftrl."""

from .frontend.optimizers import SGD, Adadelta, Adagrad, Adam, Ftrl, Momentum, Optimizer, RMSProp

__all__ = ["Optimizer", "SGD", "Momentum", "Adagrad", "Adadelta", "RMSProp", "Adam", "Ftrl"]


def __dir__() -> list[str]:
    return sorted(__all__)
