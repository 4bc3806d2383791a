"""The built-in op families; importing this package registers every op."""

from . import control, core, dataflow_control, fusion, grad_support, io, queue, state, transfer  # noqa: F401

for _family in ("math", "array", "nn", "random"):
    try:
        __import__(f"{__name__}.{_family}")
    except ModuleNotFoundError as _e:  # a family not written yet
        if _e.name != f"{__name__}.{_family}":
            raise
