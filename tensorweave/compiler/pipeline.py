"""The pipeline driver: named stages of passes between a traced graph and a target.

Each stage is a list of passes applied, in order, to a copy of the previous stage's
graph; ``tensorweave dump --stage NAME`` prints the graph after that stage. In debug mode
(`TW_VERIFY=1`, always on in the test suite) the verifier runs after every pass.

A stage may belong to some targets only (``register_stage(..., targets=("cpu",))``, e.g.
``fused``): compiling for another target skips it, while `run_pipeline` without a target
(what ``tensorweave dump`` does) runs every stage, so any stage can be printed. A stage
may also be optional (``when=predicate``, e.g. ``lowered``): compiling runs it only when
``predicate(target)`` is true at that moment.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable
from typing import Any

from ..errors import CompileError
from .ir import Graph
from .verifier import verify

Pass = Callable[[Graph], Graph | None]

# stage name -> passes run to reach it from the previous stage
_STAGES: dict[str, list[Pass]] = {"traced": []}
# stage name -> the targets that run it (absent: every target)
_STAGE_TARGETS: dict[str, frozenset[str]] = {}
# stage name -> predicate(target) deciding whether compiling runs it (absent: always)
_STAGE_WHEN: dict[str, Callable[[str], bool]] = {}
# the target `run_pipeline` is running the stages for (None: no target, every stage)
_TARGET: contextvars.ContextVar[str | None] = contextvars.ContextVar("tw_pipeline_target",
                                                                    default=None)


def pipeline_target() -> str | None:
    """The target the running pipeline compiles for (``run_pipeline(..., target=...)``),
    or None: a pass whose result depends on the target (the gpu target's placement) asks
    this."""
    return _TARGET.get()


def register_stage(name: str, passes: list[Pass], *, after: str | None = None,
                   targets: tuple[str, ...] | None = None,
                   when: Callable[[str], bool] | None = None) -> None:
    """Add a stage (after `after`, default: last) made of `passes`; with `targets`, only
    compiling for one of those targets runs it; with `when`, only compiling while
    ``when(target)`` is true does."""
    if name in _STAGES:
        raise ValueError(f"stage {name!r} exists")
    if targets is not None:
        _STAGE_TARGETS[name] = frozenset(targets)
    if when is not None:
        _STAGE_WHEN[name] = when
    items = list(_STAGES.items())
    idx = len(items) if after is None else [k for k, _ in items].index(after) + 1
    items.insert(idx, (name, passes))
    _STAGES.clear()
    _STAGES.update(items)


def stage_names() -> list[str]:
    """The pipeline's stages, in order."""
    _load_passes()
    return list(_STAGES)


def stage_targets(name: str) -> frozenset[str] | None:
    """The targets that run stage `name`, or None when every target runs it."""
    return _STAGE_TARGETS.get(name)


def verify_enabled() -> bool:
    return os.environ.get("TW_VERIFY", "") not in ("", "0")


def run_pipeline(graph: Graph, until: str | None = None, target: str | None = None) -> Graph:
    """Return a copy of `graph` transformed through every stage up to `until` (default:
    the last stage); with `target`, stages that belong to other targets are skipped."""
    names = stage_names()
    until = until or names[-1]
    if until not in _STAGES:
        raise CompileError(f"unknown stage {until!r}; stages are: {', '.join(names)}")
    run = []
    for name in names:
        if target is None or _runs_for(name, target):
            run.append(name)
        if name == until:
            break
    token = _TARGET.set(target)
    try:
        return run_stages(graph, run)
    finally:
        _TARGET.reset(token)


def compile_stages(target: str) -> list[str]:
    """The stages that compiling for `target` runs now (the `when` predicates are read
    at this moment: `lower_control_flow` contexts)."""
    return [name for name in stage_names() if _runs_for(name, target)]


def stage_passes(names: list[str]) -> list[Pass]:
    """The passes that the stages `names` run, in order."""
    return [p for name in names for p in _STAGES[name]]


def run_stages(graph: Graph, names: list[str]) -> Graph:
    """A copy of `graph` through the stages `names`, in that order (verified after every
    pass when `verify_enabled`)."""
    g = graph.copy()
    check = verify_enabled()
    if check:
        verify(g)
    for name in names:
        for p in _STAGES[name]:
            result = p(g)
            if result is not None:
                g = result
            if check:
                verify(g, after=getattr(p, "__name__", str(p)))
    return g


def _runs_for(stage: str, target: str) -> bool:
    """Whether compiling for `target` runs `stage`."""
    wanted = _STAGE_TARGETS.get(stage)
    if wanted is not None and target not in wanted:
        return False
    when = _STAGE_WHEN.get(stage)
    return when is None or when(target)


def compile_graph(graph: Graph, target: str = "reference", resources: Any = None) -> Any:
    """Optimize `graph` through the whole pipeline and compile it for `target`.

    The cpu target gets the traced graph and runs the pipeline itself when a call needs
    it: a step whose plan and code a disk cache entry holds (keyed by a fingerprint of
    this graph, `targets/cpu/plan_cache.py`) never does. The stages, the context
    variables and the verify switch are fixed now, as if the pipeline ran here."""
    if target == "cpu":
        import contextvars

        from ..targets.cpu.executable import CpuExecutable
        stages = compile_stages(target)
        context = contextvars.copy_context()
        return CpuExecutable.deferred(
            graph, stages, lambda: context.run(run_stages, graph, stages), resources)
    from ..targets import compile_for_target
    return compile_for_target(run_pipeline(graph, target=target), target, resources)


_passes_loaded = False


def _load_passes() -> None:
    """Import the pass package, whose modules register the stages they belong to."""
    global _passes_loaded
    if not _passes_loaded:
        _passes_loaded = True
        from .. import passes  # noqa: F401
