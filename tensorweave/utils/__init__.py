"""Small helpers for programs built on tensorweave: a training-loop progress bar
(`progress.Progress`) and a training-curve plot (`plotting.save_training_curve`, needs
the optional ``plot`` extra: ``pip install tensorweave[plot]``)."""

from . import plotting, progress
from .plotting import MissingPlotDependency, require_matplotlib, save_training_curve
from .progress import Progress

__all__ = ["MissingPlotDependency", "Progress", "plotting", "progress", "require_matplotlib",
           "save_training_curve"]


def __dir__() -> list[str]:
    return sorted(__all__)
