"""Where the user called in: the user's source line and the public function or operator
they called there, so that an error can say ``tw.multiply (the * operator) (model.py:12)``
instead of pointing into tensorweave's own code."""

from __future__ import annotations

import os
import sys
from types import FrameType

from ..compiler.ir import SourceLoc

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Python operators on tensors -> how a user wrote them
_OPERATORS = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
    "pow": "**", "matmul": "@", "neg": "unary -", "abs": "abs()", "lt": "<", "le": "<=",
    "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "and": "&", "or": "|", "invert": "~",
    "getitem": "[]",
}

# modules whose functions users reach under another name
_PUBLIC_PREFIX = {
    "tensorweave.frontend.ops.math": "tw.",
    "tensorweave.frontend.ops.array": "tw.",
    "tensorweave.frontend.building": "tw.",
    "tensorweave.frontend.autodiff": "tw.",
    "tensorweave.frontend.control_flow": "tw.",
    "tensorweave.frontend.ops.nn": "tw.nn.",
    "tensorweave.nn": "tw.nn.",
    "tensorweave.frontend.ops.random": "tw.random.",
    "tensorweave.frontend.ops.linalg": "tw.linalg.",
    "tensorweave.frontend.ops.indexing": "tw.",
    "tensorweave.frontend.ops.einsum": "tw.",
    "tensorweave.frontend.ops.segments": "tw.math.",
    "tensorweave.frontend.ops.activations": "tw.nn.",
    "tensorweave.frontend.ops.normalization": "tw.nn.",
    "tensorweave.frontend.ops.dropout": "tw.nn.",
    "tensorweave.frontend.ops.embedding": "tw.nn.",
    "tensorweave.frontend.ops.sampled": "tw.nn.",
    "tensorweave.frontend.ops.ranking": "tw.math.",
}

# frames of decorators that only forward to the function the user named
_FORWARDERS = frozenset({"wrapper", "<lambda>", "<listcomp>", "<genexpr>"})


def _in_package(frame: FrameType) -> bool:
    return frame.f_code.co_filename.startswith(_PACKAGE_DIR)


def user_location(depth: int = 1) -> SourceLoc | None:
    """The innermost stack frame outside the tensorweave package: the user's line."""
    frame = sys._getframe(depth)
    while frame is not None and _in_package(frame):
        frame = frame.f_back
    if frame is None:
        return None
    return SourceLoc(frame.f_code.co_filename, frame.f_lineno)


def api_name() -> str | None:
    """The public function (``tw.matmul``) or operator (``the * operator``) that the user's
    code called and that is running now; None when nothing of the package is on the stack
    between here and the user's code."""
    frame = sys._getframe(1)
    outer: FrameType | None = None
    while frame is not None and _in_package(frame):
        if frame.f_code.co_name not in _FORWARDERS:
            outer = frame
        frame = frame.f_back
    if outer is None:
        return None
    return _describe(outer)


def describe_frame(frame: FrameType) -> str:
    """How users name the function (or operator) running in `frame`: ``tw.nn.softmax``,
    ``the * operator``."""
    return _describe(frame)


def _describe(frame: FrameType) -> str:
    code = frame.f_code
    name = code.co_name
    if name.startswith("__") and name.endswith("__"):
        bare = name[2:-2]
        bare = bare[1:] if bare.startswith("r") and bare[1:] in _OPERATORS else bare
        if bare in _OPERATORS:
            return f"the {_OPERATORS[bare]} operator"
    qualname = getattr(code, "co_qualname", name)
    prefix = _PUBLIC_PREFIX.get(frame.f_globals.get("__name__", ""), "")
    return f"{prefix}{qualname}" if "." not in qualname else qualname


__all__ = ["api_name", "describe_frame", "user_location"]
