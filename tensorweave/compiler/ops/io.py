"""Checkpoint ops, as in the paper: ``Save`` writes named tensors to a file, ``Restore``
reads one back (an ``AssignVariable`` then stores it).

The file name is a tensor (UTF-8 bytes as ``u8[?]``), so one compiled save step serves
every checkpoint path, as TensorFlow's string-valued filename tensor does.
"""

from __future__ import annotations

import json

import numpy as np

from ...errors import DataLossError, DTypeError, ShapeError
from ...runtime import checkpoint_io
from ..dtypes import uint8
from ..registry import attr, def_op
from ..types import TensorType
from .common import expect_tensor


def decode_path(path_bytes: np.ndarray) -> str:
    return bytes(np.asarray(path_bytes, dtype=np.uint8)).decode("utf-8")


def encode_path(path: str) -> np.ndarray:
    """A path as the ``u8[?]`` tensor that Save and Restore take."""
    return np.frombuffer(path.encode("utf-8"), dtype=np.uint8).copy()


def _check_path(t) -> None:
    t = expect_tensor(t, "filename")
    if t.dtype is not uint8 or t.rank != 1:
        raise DTypeError(f"filename must be u8[?] (UTF-8 bytes), got {t}")


Save = def_op("Save", ["filename", "*tensors"], {"names": attr("strs"),
                                                 "slices": attr("strs", ())},
              stateful=True,
              doc="Write `tensors` under `names` to the checkpoint file `filename`; "
                  "`slices` (JSON, or '' for a whole variable) records, per tensor, the "
                  "part of a partitioned variable it is.")


@Save.infer
def _save_infer(filename, *tensors, names, slices):
    _check_path(filename)
    if len(names) != len(tensors):
        raise ShapeError(f"{len(tensors)} tensors but {len(names)} names")
    if slices and len(slices) != len(names):
        raise ShapeError(f"{len(names)} names but {len(slices)} slice specs")
    if len(set(names)) != len(names):
        raise ShapeError("checkpoint names must be unique")
    return []


@Save.kernel("reference")
def _save_kernel(filename, *tensors, names, slices):
    table = {n: json.loads(spec) for n, spec in zip(names, slices) if spec}
    checkpoint_io.write_tensors(decode_path(filename), dict(zip(names, tensors)), table)
    return ()


Restore = def_op("Restore", ["filename"], {"name": attr("str"), "dtype": attr("dtype"),
                                           "shape": attr("shape"), "slice": attr("str", "")},
                 stateful=True, side_effects=False,
                 doc="Read tensor `name` from the checkpoint file `filename`; with `slice` "
                     "(JSON: the full variable's name and shape and this part's offset), "
                     "assemble it from whatever the checkpoint holds of that variable when "
                     "`name` itself is not there (another partitioning).")


@Restore.infer
def _restore_infer(filename, *, name, dtype, shape, slice):  # noqa: A002
    _check_path(filename)
    return TensorType(dtype, shape)


@Restore.kernel("reference")
def _restore_kernel(filename, *, name, dtype, shape, slice):  # noqa: A002
    prefix = decode_path(filename)
    info = json.loads(slice) if slice else None
    if info is not None and not checkpoint_io.has_tensor(prefix, name, shape, info):
        return checkpoint_io.read_slice(prefix, info["full"], tuple(info["shape"]),
                                        tuple(info["offset"]), tuple(shape), dtype.np)
    arr = checkpoint_io.read_tensors(prefix, [name])[name]
    t = TensorType(dtype, shape)
    if arr.dtype != dtype.np or not t.accepts(dtype, arr.shape):
        raise DataLossError(f"checkpoint '{prefix}' holds '{name}' as {arr.dtype}{list(arr.shape)},"
                            f" expected {t}")
    return arr
