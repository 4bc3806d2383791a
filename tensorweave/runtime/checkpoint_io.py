"""Checkpoint data files: the tensors of checkpoint ``PREFIX`` in ``PREFIX.safetensors``.

The file's metadata holds a CRC32 of each tensor, over its dtype, shape and bytes, so
flipped bits are caught in the data and in the header (a header whose dtype or shape was
changed would otherwise reinterpret intact bytes), and safetensors' own header catches
truncation. Files are written with
`atomic_files.write_bytes` (temporary, fsync, rename, fsync of the directory), so a
crash mid-save leaves the previous file intact and a finished save survives a power
loss. No pickle. The index of a directory's checkpoints is `checkpoint_index`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import sys
import zlib
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import safetensors
import safetensors.numpy

from ..errors import DataLossError, NotFoundError
from . import atomic_files
from .checkpoint_index import SUFFIX, latest_checkpoint, read_index, record_checkpoint

# The index functions live in `checkpoint_index`; they stay importable from here for the
# callers that treat checkpoint_io as the one checkpoint module (compat.v1's Saver).
__all__ = ["SUFFIX", "data_path", "write_tensors", "read_tensors", "latest_checkpoint",
           "new_save_id", "shard_prefix", "write_manifest", "shard_files",
           "read_index", "record_checkpoint", "has_tensor", "read_slice"]


def data_path(prefix: str) -> str:
    """The file that holds checkpoint `prefix`."""
    return prefix + SUFFIX


FORMAT = "tensorweave-checkpoint-2"
# format 1 (before 2026-11-28) checksummed only the bytes; its files still verify that way
_BYTES_ONLY_FORMAT = "tensorweave-checkpoint-1"


def _crc(a: np.ndarray, typed: bool = True) -> str:
    # of the bytes as stored, little-endian (safetensors swaps a big-endian array's bytes
    # when writing it); a view of the array's bytes otherwise, not a copy (a 200 MB
    # checkpoint would double in memory)
    if a.dtype.byteorder == ">" or (a.dtype.byteorder == "=" and sys.byteorder == "big"):
        a = a.astype(a.dtype.newbyteorder("<"))
    data = np.require(a, requirements="C").reshape(-1).view(np.uint8)
    start = 0
    if typed:
        # dtype and shape first: the same bytes read as another dtype or shape must fail
        start = zlib.crc32(f"{a.dtype.newbyteorder('<').str}{list(a.shape)}".encode())
    return format(zlib.crc32(data, start) & 0xFFFFFFFF, "08x")


SLICES_KEY = "tw_slices"  # metadata: tensor -> the part of a larger variable it holds


def write_tensors(prefix: str, tensors: Mapping[str, np.ndarray],
                  slices: Mapping[str, dict] | None = None) -> str:
    """Save named arrays as checkpoint `prefix`; returns the file written. `slices` maps
    the names of tensors that are shards of a partitioned variable to
    ``{"full": name, "shape": full shape, "offset": offset of the shard}``, so a model
    partitioned differently can restore them (`read_slice`)."""
    arrays = {k: np.require(v, requirements="C") for k, v in tensors.items()}
    meta = {"format": FORMAT,
            "crc32": json.dumps({k: _crc(v) for k, v in arrays.items()})}
    if slices:
        meta[SLICES_KEY] = json.dumps(dict(slices))
    path = data_path(prefix)
    atomic_files.write_bytes(path, safetensors.numpy.save(arrays, metadata=meta))
    return path


SHARDS_KEY = "tw_shards"  # metadata of a sharded checkpoint's manifest: tensor -> shard


def new_save_id() -> str:
    """A name part that no earlier save of a sharded checkpoint used (`shard_prefix`)."""
    return secrets.token_hex(4)


def shard_prefix(prefix: str, index: int, count: int, save_id: str = "") -> str:
    """The prefix of shard `index` of `count` of checkpoint `prefix`, written by the save
    `save_id` (`new_save_id`). Each save writes shards of its own names: a save to a
    prefix that already holds a checkpoint must not overwrite the shards its manifest
    names, or a save cut off between shards would leave that manifest naming shards of
    two saves, a checkpoint that loads without error but mixes two states."""
    tail = f".{save_id}" if save_id else ""
    return f"{prefix}.shard-{index:05d}-of-{count:05d}{tail}"


def _shards_of_prefix(prefix: str) -> list[str]:
    """The shard files in `prefix`'s directory named after `prefix` (`shard_prefix`),
    whichever save wrote them."""
    directory, base = os.path.split(prefix)
    pattern = re.compile(re.escape(base) + r"\.shard-\d{5}-of-\d{5}(\.[0-9a-f]+)?"
                         + re.escape(SUFFIX) + "$")
    try:
        names = os.listdir(directory or ".")
    except FileNotFoundError:
        return []
    return [os.path.join(directory, n) for n in names if pattern.match(n)]


def write_manifest(prefix: str, shard_of: Mapping[str, str]) -> str:
    """Make the shards already written a checkpoint: `prefix`'s file becomes a manifest
    naming, for every tensor, the shard prefix that holds it. Written after every shard
    (atomically), so a sharded checkpoint is either complete or absent. Then the shards
    of `prefix` that the manifest does not name are deleted: those of the checkpoint it
    replaced, and any a save cut off before its manifest left behind."""
    relative = {k: os.path.basename(v) for k, v in shard_of.items()}
    meta = {"format": FORMAT, SHARDS_KEY: json.dumps(relative)}
    path = data_path(prefix)
    atomic_files.write_bytes(path, safetensors.numpy.save({}, metadata=meta))
    kept = set(shard_files(prefix))
    for stale in _shards_of_prefix(prefix):
        if stale not in kept:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(stale)
    return path


def shard_files(prefix: str) -> list[str]:
    """The shard files a sharded checkpoint's manifest names ([] for a plain one, or one
    that cannot be read)."""
    try:
        with safetensors.safe_open(data_path(prefix), framework="numpy") as f:
            shards = json.loads((f.metadata() or {}).get(SHARDS_KEY, "{}"))
    except (safetensors.SafetensorError, json.JSONDecodeError, OSError):
        return []
    directory = os.path.dirname(prefix)
    return sorted({data_path(os.path.join(directory, s)) for s in shards.values()})


@contextlib.contextmanager
def _opened(prefix: str) -> Iterator[Any]:
    """Checkpoint `prefix`'s file, open for reading; a missing file is NotFoundError, an
    unreadable one DataLossError."""
    path = data_path(prefix)
    if not os.path.exists(path):
        raise NotFoundError(f"checkpoint file '{path}' does not exist")
    try:
        with safetensors.safe_open(path, framework="numpy") as f:
            yield f
    except (safetensors.SafetensorError, json.JSONDecodeError, OSError) as e:
        raise DataLossError(f"checkpoint '{path}' is truncated or corrupt: {e}") from None


def read_tensors(prefix: str, names: list[str] | None = None) -> dict[str, np.ndarray]:
    """Load (some of) the arrays of checkpoint `prefix`, verifying their checksums; a
    sharded checkpoint's tensors are read from the shards its manifest names."""
    path = data_path(prefix)
    with _opened(prefix) as f:
        meta = f.metadata() or {}
        if SHARDS_KEY in meta:
            return _read_sharded(prefix, json.loads(meta[SHARDS_KEY]), names)
        crcs = json.loads(meta.get("crc32", "{}"))
        typed = meta.get("format") != _BYTES_ONLY_FORMAT
        keys = list(f.keys())
        wanted = keys if names is None else names
        out = {}
        for name in wanted:
            if name not in keys:
                raise NotFoundError(f"checkpoint '{path}' has no tensor '{name}' (it has: "
                                    f"{', '.join(sorted(keys)[:10])})")
            arr = f.get_tensor(name)
            if crcs.get(name) != _crc(arr, typed):
                raise DataLossError(f"checkpoint '{path}': tensor '{name}' fails its "
                                    f"checksum (the file is corrupt)")
            out[name] = arr
        return out


def _read_sharded(prefix: str, shard_of: dict[str, str],
                  names: list[str] | None) -> dict[str, np.ndarray]:
    directory = os.path.dirname(prefix)
    wanted = list(shard_of) if names is None else names
    missing = [n for n in wanted if n not in shard_of]
    if missing:
        raise NotFoundError(f"checkpoint '{prefix}' has no tensor '{missing[0]}' (it has: "
                            f"{', '.join(sorted(shard_of)[:10])})")
    by_shard: dict[str, list[str]] = {}
    for n in wanted:
        by_shard.setdefault(shard_of[n], []).append(n)
    out: dict[str, np.ndarray] = {}
    for shard, shard_names in by_shard.items():
        out.update(read_tensors(os.path.join(directory, shard), shard_names))
    return out


def _contents(prefix: str) -> tuple[dict[str, tuple], dict[str, dict]]:
    """The tensors of checkpoint `prefix` as {name: shape} and its slice table."""
    with _opened(prefix) as f:
        meta = f.metadata() or {}
        slices = json.loads(meta.get(SLICES_KEY, "{}"))
        if SHARDS_KEY not in meta:
            return {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}, slices
        shard_of = json.loads(meta[SHARDS_KEY])
    shapes: dict[str, tuple] = {}
    directory = os.path.dirname(prefix)
    for shard in sorted(set(shard_of.values())):
        shard_shapes, shard_slices = _contents(os.path.join(directory, shard))
        shapes.update({k: v for k, v in shard_shapes.items() if shard_of.get(k) == shard})
        slices.update(shard_slices)
    return shapes, slices


def has_tensor(prefix: str, name: str, shape: tuple, part: Mapping | None = None) -> bool:
    """Whether checkpoint `prefix` holds tensor `name` with exactly `shape`; with `part`
    (``{"full": ..., "shape": full shape, "offset": ...}``, the place of a shard in its
    partitioned variable), a stored shard of that name must also sit at that place in
    a variable of that shape. (Two [2, 3] shards of a [4, 3] variable are not the two
    [2, 3] shards of a [2, 6] one: their values would land side by side.)"""
    shapes, slices = _contents(prefix)
    if tuple(shapes.get(name, (None,))) != tuple(shape):
        return False
    stored = slices.get(name)
    if part is None or stored is None:
        return True
    return (tuple(stored["shape"]) == tuple(part["shape"])
            and tuple(stored["offset"]) == tuple(part["offset"]))


def read_slice(prefix: str, full_name: str, full_shape: tuple, offset: tuple,
               shape: tuple, dtype: np.dtype) -> np.ndarray:
    """The part ``[offset, offset + shape)`` of variable `full_name` (of `full_shape`),
    assembled from whatever checkpoint `prefix` holds of it: the whole variable, or
    shards of it saved from a model partitioned differently (TensorFlow restores
    partitioned variables across partitionings the same way)."""
    shapes, slices = _contents(prefix)
    pieces = []  # (name, its offset)
    if tuple(shapes.get(full_name, (None,))) == tuple(full_shape):
        pieces.append((full_name, (0,) * len(full_shape)))
    for name, info in slices.items():
        if info.get("full") == full_name:
            if tuple(info["shape"]) != tuple(full_shape):
                raise DataLossError(
                    f"checkpoint '{prefix}' holds '{full_name}' with shape "
                    f"{list(info['shape'])}, the model's has shape {list(full_shape)}")
            pieces.append((name, tuple(info["offset"])))
    if not pieces:
        raise NotFoundError(f"checkpoint '{prefix}' has no tensor '{full_name}' nor any "
                            f"slice of it (it has: {', '.join(sorted(shapes)[:10])})")
    out = np.zeros(shape, dtype)
    covered = np.zeros(shape, np.bool_)
    want_lo, want_hi = np.array(offset), np.array(offset) + np.array(shape)
    for name, piece_offset in pieces:
        lo = np.array(piece_offset)
        hi = lo + np.array(shapes[name])
        a, b = np.maximum(lo, want_lo), np.minimum(hi, want_hi)
        if np.any(a >= b) and len(shape):
            continue
        arr = read_tensors(prefix, [name])[name]
        if arr.dtype != np.dtype(dtype):  # (assigning into `out` would convert it)
            raise DataLossError(f"checkpoint '{prefix}' holds '{name}' (part of "
                                f"'{full_name}') as {arr.dtype}, the model's variable is "
                                f"{np.dtype(dtype)}")
        src = tuple(slice(int(x - y), int(z - y)) for x, z, y in zip(a, b, lo))
        dst = tuple(slice(int(x - y), int(z - y)) for x, z, y in zip(a, b, want_lo))
        out[dst] = arr[src]
        covered[dst] = True
    if not covered.all():
        raise NotFoundError(f"checkpoint '{prefix}' holds only part of '{full_name}' rows "
                            f"{list(offset)}..: {int(covered.sum())} of {covered.size} "
                            f"elements")
    return out
