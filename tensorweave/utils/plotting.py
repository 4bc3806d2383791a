"""A PNG of a training curve (loss against step) with matplotlib, an optional dependency:
``pip install tensorweave[plot]`` (or ``pip install matplotlib``).

The figure is drawn with matplotlib's Agg canvas directly, not through ``pyplot``, so it
needs no display and changes no global matplotlib state of the program."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

INSTALL_HINT = "pip install 'tensorweave[plot]' (or: pip install matplotlib)"


class MissingPlotDependency(ImportError):
    """Plotting was asked for and matplotlib is not installed."""


def require_matplotlib(what: str = "plotting") -> None:
    """Raise `MissingPlotDependency` with the install command unless matplotlib imports
    (call it before a long run, so that a missing package is known at once)."""
    try:
        import matplotlib  # noqa: F401
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401
    except ImportError as e:
        raise MissingPlotDependency(f"{what} needs matplotlib, which is not installed "
                                    f"({e}): {INSTALL_HINT}") from None


def save_training_curve(path: str | os.PathLike, steps: Sequence[float],
                        values: Sequence[float], *, title: str = "training loss",
                        ylabel: str = "loss", log_scale: bool = False) -> str:
    """Write a PNG of `values` against `steps` (plus a moving average when there are many
    points) to `path`; returns the path. Raises `MissingPlotDependency` without
    matplotlib, ValueError when there is nothing to plot."""
    require_matplotlib("save_training_curve")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if len(steps) != len(values):
        raise ValueError(f"save_training_curve: {len(steps)} steps but {len(values)} values")
    if not len(values):
        raise ValueError("save_training_curve: no values to plot")
    fig = Figure(figsize=(6.4, 4.0), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot(steps, values, linewidth=0.8, alpha=0.5 if len(values) >= 50 else 1.0,
            label=ylabel)
    if len(values) >= 50:
        # raw per-step losses are noisy: a moving average shows the trend
        k = max(5, len(values) // 50)
        sums = np.cumsum(np.concatenate([[0.0], np.asarray(values, np.float64)]))
        ends = np.arange(1, len(values) + 1)
        starts = np.maximum(0, ends - k)
        smooth = (sums[ends] - sums[starts]) / (ends - starts)
        ax.plot(steps, smooth, linewidth=1.6, label=f"mean of {k} steps")
        ax.legend()
    if log_scale:
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fig.savefig(path, format="png")
    return path


__all__ = ["INSTALL_HINT", "MissingPlotDependency", "require_matplotlib",
           "save_training_curve"]
