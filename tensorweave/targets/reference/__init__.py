"""The NumPy reference target: the oracle every other target is tested against."""

from .executor import ReferenceExecutable, evaluate, run_kernel

__all__ = ["ReferenceExecutable", "evaluate", "run_kernel"]
