"""Small real datasets for examples and tests (no network access needed)."""

from . import mnist

__all__ = ["mnist"]


def __dir__() -> list[str]:
    return sorted(__all__)
