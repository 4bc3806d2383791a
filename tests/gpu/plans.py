"""The GPU step plan of a traced function, without running it (no GPU needed)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import tensorweave as tw
from tensorweave.compiler.pipeline import run_pipeline
from tensorweave.targets.gpu.listing import plan_for_listing
from tensorweave.targets.gpu.step import StepPlan


def plan_of(fn: Callable, arrays: list[np.ndarray]) -> StepPlan:
    """Trace `fn` for `arrays` and plan it for the gpu target."""
    cf = tw.compile(fn, target="gpu").get_concrete_function(*arrays)
    return plan_for_listing(run_pipeline(cf.graph, target="gpu"))
