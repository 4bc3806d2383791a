"""What calling a compiled step needs from `step` without importing the code generator:
the JIT entry's name, the workspace header's size, the callback's C type, NumPy's data
offset and the planner's refusal. `step` re-exports them; `executable` imports them from
here so that a step loaded from the disk cache (`plan_cache`) does not import llvmlite's
IR builder, the lowerings or the planner."""

from __future__ import annotations

import ctypes

import numpy as np

from ...errors import UnimplementedError

ALIGN = 64  # workspace offsets: a cache line (and an AVX-512 vector)
OBJECTS_STEP_NAME = "tw_step_objects"
WORKSPACE_HEADER = ALIGN  # bytes before the workspace proper (the failing position)

CallbackFn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32,
                              ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p))


class Ineligible(Exception):
    """This graph cannot run as one native step (the message says why)."""


def numpy_data_offset() -> int:
    """Where a NumPy array object keeps its data pointer (found, not assumed: it is
    the first field after the object header, whose size depends on the Python build)."""
    arrays = [np.empty(8, np.uint8), np.empty(3, np.float64)]
    for off in range(8, 129, 8):
        if all(ctypes.c_void_p.from_address(id(a) + off).value == a.ctypes.data
               for a in arrays):
            return off
    raise UnimplementedError("cannot find the data pointer in NumPy's array objects")


__all__ = ["ALIGN", "OBJECTS_STEP_NAME", "WORKSPACE_HEADER", "CallbackFn", "Ineligible",
           "numpy_data_offset"]
