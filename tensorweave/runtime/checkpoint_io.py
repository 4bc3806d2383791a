"""Checkpoint files: safetensors tensors plus a JSON index of the checkpoints in a
directory.

A checkpoint ``PREFIX`` is the file ``PREFIX.safetensors``; its metadata holds a CRC32 of
each tensor so flipped bits are caught, and safetensors' own header catches truncation.
Every write goes to a temporary file in the same directory, is fsynced, then renamed
over the target, so a crash mid-save leaves the previous checkpoint intact. No pickle.
"""

from __future__ import annotations

import json
import os
import tempfile
import zlib
from collections.abc import Mapping

import numpy as np
import safetensors
import safetensors.numpy

from ..errors import DataLossError, NotFoundError

SUFFIX = ".safetensors"
INDEX = "checkpoint.json"


def data_path(prefix: str) -> str:
    return prefix + SUFFIX


def atomic_write(path: str, data: bytes) -> None:
    """Write `data` to `path` so readers see either the old file or the whole new one."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _crc(a: np.ndarray) -> str:
    return format(zlib.crc32(np.require(a, requirements="C").tobytes()) & 0xFFFFFFFF, "08x")


def write_tensors(prefix: str, tensors: Mapping[str, np.ndarray]) -> str:
    """Save named arrays as checkpoint `prefix`; returns the file written."""
    arrays = {k: np.require(v, requirements="C") for k, v in tensors.items()}
    meta = {"format": "tensorweave-checkpoint-1",
            "crc32": json.dumps({k: _crc(v) for k, v in arrays.items()})}
    path = data_path(prefix)
    atomic_write(path, safetensors.numpy.save(arrays, metadata=meta))
    return path


def read_tensors(prefix: str, names: list[str] | None = None) -> dict[str, np.ndarray]:
    """Load (some of) the arrays of checkpoint `prefix`, verifying their checksums."""
    path = data_path(prefix)
    if not os.path.exists(path):
        raise NotFoundError(f"checkpoint file '{path}' does not exist")
    try:
        with safetensors.safe_open(path, framework="numpy") as f:
            meta = f.metadata() or {}
            crcs = json.loads(meta.get("crc32", "{}"))
            keys = list(f.keys())
            wanted = keys if names is None else names
            out = {}
            for name in wanted:
                if name not in keys:
                    raise NotFoundError(f"checkpoint '{path}' has no tensor '{name}' (it has: "
                                        f"{', '.join(sorted(keys)[:10])})")
                arr = f.get_tensor(name)
                if crcs.get(name) != _crc(arr):
                    raise DataLossError(f"checkpoint '{path}': tensor '{name}' fails its "
                                        f"checksum (the file is corrupt)")
                out[name] = arr
            return out
    except (safetensors.SafetensorError, json.JSONDecodeError, OSError) as e:
        raise DataLossError(f"checkpoint '{path}' is truncated or corrupt: {e}") from None


def read_index(directory: str) -> dict:
    """The JSON index of a checkpoint directory (empty if there is none)."""
    path = os.path.join(directory, INDEX)
    if not os.path.exists(path):
        return {"latest": None, "all": []}
    try:
        with open(path) as f:
            index = json.load(f)
        if not isinstance(index, dict) or not isinstance(index.get("all"), list):
            raise ValueError("unexpected layout")
        return index
    except (ValueError, OSError) as e:
        raise DataLossError(f"checkpoint index '{path}' is corrupt: {e}") from None


def record_checkpoint(prefix: str, max_to_keep: int | None) -> list[str]:
    """Add `prefix` to its directory's index as the latest, drop checkpoints beyond
    `max_to_keep` (deleting their files), and return the kept prefixes."""
    directory = os.path.dirname(os.path.abspath(prefix))
    index = read_index(directory)
    name = os.path.basename(prefix)
    kept = [p for p in index["all"] if p != name] + [name]
    removed: list[str] = []
    if max_to_keep is not None and max_to_keep > 0 and len(kept) > max_to_keep:
        removed, kept = kept[:-max_to_keep], kept[-max_to_keep:]
    atomic_write(os.path.join(directory, INDEX),
                 json.dumps({"latest": name, "all": kept}, indent=1).encode())
    for old in removed:
        try:
            os.unlink(data_path(os.path.join(directory, old)))
        except FileNotFoundError:
            pass
    return [os.path.join(directory, p) for p in kept]


def latest_checkpoint(directory: str) -> str | None:
    """The prefix of the newest checkpoint recorded in `directory`, or None."""
    index = read_index(directory)
    latest = index.get("latest")
    return os.path.join(directory, latest) if latest else None
