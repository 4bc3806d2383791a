"""The NumPy reference target: the oracle every other target is tested against."""

from .executor import PreparedKernel, ReferenceExecutable, check_arguments, evaluate, run_kernel

__all__ = ["PreparedKernel", "ReferenceExecutable", "check_arguments", "evaluate", "run_kernel"]
