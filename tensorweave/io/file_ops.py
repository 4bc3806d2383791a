"""``tw.io.read_file``, ``write_file`` and ``matching_files``: file-system ops in a graph.

Each takes string tensors (paths, contents) and runs on the host (reference kernels
only). They are stateful: a file read when the graph is compiled could change before it
runs, so none is ever folded into a constant or merged with another call, and
``WriteFile`` (a side effect) runs even when nothing uses it.
"""

from __future__ import annotations

import glob as _glob
import os
from typing import Any

import numpy as np

from ..compiler.dtypes import string
from ..compiler.registry import def_op, not_differentiable
from ..compiler.types import TensorType
from ..errors import DTypeError, ShapeError
from ..frontend.building import apply_op, apply_op1, convert_to_tensor
from ..frontend.context import current_builder
from .gfile import local_path, os_error

ReadFile = def_op("ReadFile", ["filename"], stateful=True, side_effects=False,
                  doc="The whole content of file `filename` (a string scalar), as a string.")
WriteFile = def_op("WriteFile", ["filename", "contents"], stateful=True,
                   doc="Write string `contents` to file `filename`, creating its directory.")
MatchingFiles = def_op("MatchingFiles", ["pattern"], stateful=True, side_effects=False,
                       doc="The sorted paths matching the glob `pattern` (a string scalar "
                           "or vector of patterns).")
not_differentiable("ReadFile", "WriteFile", "MatchingFiles")


def _string_scalar(t: Any, role: str) -> TensorType:
    if not isinstance(t, TensorType) or not t.dtype.is_string:
        raise DTypeError(f"{role} must be a string tensor, got {t}")
    if t.rank != 0:
        raise ShapeError(f"{role} must be a scalar, got {t}")
    return t


@ReadFile.infer
def _read_infer(filename: TensorType) -> TensorType:
    _string_scalar(filename, "filename")
    return TensorType(string, ())


@ReadFile.kernel("reference")
def _read_kernel(filename: np.ndarray) -> np.ndarray:
    path = local_path(filename[()], "tw.io.read_file")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise os_error(e, path) from None
    out = np.empty((), object)
    out[()] = data
    return out


@WriteFile.infer
def _write_infer(filename: TensorType, contents: TensorType) -> list:
    _string_scalar(filename, "filename")
    _string_scalar(contents, "contents")
    return []


@WriteFile.kernel("reference")
def _write_kernel(filename: np.ndarray, contents: np.ndarray) -> tuple:
    path = local_path(filename[()], "tw.io.write_file")
    try:
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        with open(path, "wb") as f:
            f.write(contents[()])
    except OSError as e:
        raise os_error(e, path) from None
    return ()


@MatchingFiles.infer
def _matching_infer(pattern: TensorType) -> TensorType:
    if not isinstance(pattern, TensorType) or not pattern.dtype.is_string or pattern.rank > 1:
        raise DTypeError(f"pattern must be a string scalar or vector, got {pattern}")
    return TensorType(string, (None,))


@MatchingFiles.kernel("reference")
def _matching_kernel(pattern: np.ndarray) -> np.ndarray:
    found: list[str] = []
    for p in pattern.reshape(-1):
        found += _glob.glob(local_path(p, "tw.io.matching_files"), include_hidden=True)
    out = np.empty(len(found), object)
    out[:] = [f.encode("utf-8") for f in sorted(found)]
    return out


def _string(value: Any, api: str, role: str) -> Any:
    t = convert_to_tensor(value, dtype_hint=string)
    if not t.dtype.is_string:
        raise DTypeError(f"{role} must be a string tensor, got {t.dtype.name}", op=api)
    return t


def read_file(filename: Any, name: str | None = None) -> Any:
    """The content of file `filename` as a string scalar (`NotFoundError` when missing)."""
    return apply_op1("ReadFile", [_string(filename, "tw.io.read_file", "filename")], name=name,
                     default_name="ReadFile")


def write_file(filename: Any, contents: Any, name: str | None = None) -> Any:
    """Write string scalar `contents` to file `filename` (its directory is created). In a
    compiled function it runs in program order with the other side effects; returns the
    op (None when run eagerly)."""
    apply_op("WriteFile", [_string(filename, "tw.io.write_file", "filename"),
                           _string(contents, "tw.io.write_file", "contents")],
             name=name, default_name="WriteFile")
    builder = current_builder()
    return builder.graph.nodes[-1] if builder is not None else None


def matching_files(pattern: Any, name: str | None = None) -> Any:
    """The paths matching glob `pattern` (a string scalar, or a vector of patterns), as
    a sorted string vector (empty when nothing matches)."""
    return apply_op1("MatchingFiles", [_string(pattern, "tw.io.matching_files", "pattern")],
                     name=name, default_name="MatchingFiles")


__all__ = ["matching_files", "read_file", "write_file"]
