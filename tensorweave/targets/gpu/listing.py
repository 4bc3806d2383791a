"""What ``tensorweave dump --target gpu --stage kernels`` prints and ``--ptx-dir`` writes:
a step's kernels (their generated source, launch configuration and the node each one
computes), the nodes that run on the host with the reason, and each kernel's PTX."""

from __future__ import annotations

import os

from ...compiler.ir import Graph
from ...compiler.types import TensorType
from ...errors import CompileError
from ...runtime import atomic_files
from .step import Action, Branch, HostCall, Launch, Loop, StepPlan, plan_step


def plan_for_listing(graph: Graph) -> StepPlan:
    """The step plan of `graph` (through the pipeline for the gpu target), which must
    have fixed argument shapes."""
    if not all(isinstance(v.type, TensorType) and v.type.is_fully_defined for v in graph.args):
        raise CompileError("GPU kernels are generated for fixed shapes: give every "
                           "dimension, e.g. --signature 'x:f32[64,784]'")
    from .executable import specialized
    return plan_step(specialized(graph, [tuple(v.type.shape) for v in graph.args]))


def _where(node) -> str:
    loc = node.loc
    return f" ({loc})" if loc is not None else ""


def kernel_listing(plan: StepPlan) -> str:
    """Every kernel's source in launch order, and the host calls with their reason (a
    device loop's body once, after a line saying how often it runs)."""
    return "\n".join(_listing(plan.actions))


def _listing(actions: list[Action]) -> list[str]:
    parts = []
    for action in actions:
        node = action.node
        if isinstance(action, Loop) and action.trips is None:
            limit = f", at most {action.limit} times" if action.limit >= 0 else ""
            parts.append(f"# loop: While '{node.name}'{_where(node)} runs its body on the "
                         f"device while its cond is true (one flag downloaded per "
                         f"iteration{limit})\n# cond:\n")
            parts.extend(_listing(action.cond))
            parts.append("# body:\n")
            parts.extend(_listing(action.body))
            parts.append(f"# end of loop '{node.name}'\n")
        elif isinstance(action, Branch):
            parts.append(f"# if: If '{node.name}'{_where(node)} downloads its predicate "
                         f"and runs one branch on the device\n# then:\n")
            parts.extend(_listing(action.then))
            parts.append("# else:\n")
            parts.extend(_listing(action.orelse))
            parts.append(f"# end of if '{node.name}'\n")
        elif isinstance(action, Loop):
            parts.append(f"# loop: While '{node.name}'{_where(node)} runs its body "
                         f"{action.trips} times on the device\n")
            parts.extend(_listing(action.body))
            parts.append(f"# end of loop '{node.name}'\n")
        elif isinstance(action, Launch):
            k = action.kernel
            parts.append(f"# kernel {k.name}: {node.op} '{node.name}'{_where(node)}\n"
                         f"# launch grid={k.grid} block={k.block} shared={k.shared_bytes}B "
                         f"signature={k.signature}\n{k.source}")
        elif isinstance(action, HostCall):
            parts.append(f"# host: {node.op} '{node.name}'{_where(node)}: {action.reason}\n")
    return parts


def write_ptx(plan: StepPlan, directory: str, cc: tuple[int, int]) -> list[str]:
    """Write each kernel's PTX for compute capability `cc` to ``directory/NAME.ptx``,
    each file atomically and durably (`runtime.atomic_files`); returns the paths."""
    from .ptx import compile_ptx
    names = [f"{kernel.name}.ptx" for kernel in plan.kernels]
    atomic_files.make_directory(directory)
    # the directory is the user's: sweep only temporaries of the names written here
    atomic_files.sweep_temporaries(directory, only_for=names)
    paths = []
    for kernel, name in zip(plan.kernels, names):
        path = os.path.join(directory, name)
        atomic_files.write_bytes(path, compile_ptx(kernel, cc).encode())
        paths.append(path)
    return paths


__all__ = ["kernel_listing", "plan_for_listing", "write_ptx"]
