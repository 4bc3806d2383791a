"""The index of a checkpoint directory (``checkpoint.json``) and which checkpoints to keep.

The index (TensorFlow's ``checkpoint`` state file, as JSON) names the latest checkpoint,
all kept ones in the order they were saved, when each was saved, and when the last
checkpoint was preserved by ``keep_checkpoint_every_n_hours``::

    {"latest": "ckpt-9", "all": ["ckpt-7", "ckpt-8", "ckpt-9"],
     "timestamps": {"ckpt-7": 1700000000.5, ...}, "last_preserved_timestamp": 1699990000.0}

A save writes its data file, then the index (listing under ``"deleting"`` the
checkpoints it drops), then deletes those, then rewrites the index without the list;
each write is atomic and durable (`atomic_files`). A crash therefore leaves an index
whose checkpoints all exist, perhaps a newer data file it does not list yet, and perhaps
deletions still to do; `recover` (run when a `CheckpointManager` starts) lists the
former and finishes the latter, so the latest listed checkpoint is always whole and
nothing leaks.

Retention keeps TensorFlow's rules (the newest `max_to_keep` in save order; one dropped
checkpoint every `keep_checkpoint_every_n_hours` is left on disk, unlisted) with one
addition: a checkpoint numbered after the one being recorded (``ckpt-9`` when recording
``ckpt-4``) is never dropped, so a process that restarts its numbering cannot delete the
previous run's newest checkpoints.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import time

from ..errors import DataLossError
from . import atomic_files

SUFFIX = ".safetensors"  # a checkpoint PREFIX's data file is PREFIX + SUFFIX
INDEX = "checkpoint.json"
_NUMBERED = re.compile(r"^(.*)-(\d+)$")
_log = logging.getLogger(__name__)


def now() -> float:
    """The clock of checkpoint timestamps (seconds since the epoch; tests replace it)."""
    return time.time()


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


def _write_index(directory: str, index: dict) -> None:
    atomic_files.write_bytes(os.path.join(directory, INDEX),
                             json.dumps(index, indent=1).encode())


def latest_checkpoint(directory: str) -> str | None:
    """The prefix of the newest checkpoint recorded in `directory`, or None."""
    latest = read_index(directory).get("latest")
    return os.path.join(directory, latest) if latest else None


def checkpoint_number(name: str, base: str) -> int | None:
    """N for a checkpoint named ``{base}-N``, else None."""
    m = _NUMBERED.match(name)
    return int(m.group(2)) if m and m.group(1) == base else None


def _is_newer(name: str, than: str) -> bool:
    """Whether `name` is the same series as `than` with a higher number."""
    m = _NUMBERED.match(than)
    if not m:
        return False
    number = checkpoint_number(name, m.group(1))
    return number is not None and number > int(m.group(2))


def _unlink_data(directory: str, name: str) -> None:
    """Delete a checkpoint's file, and the shard files its manifest names (the manifest
    goes first: a checkpoint is gone as soon as it is, never half there)."""
    from .checkpoint_io import shard_files
    shards = shard_files(os.path.join(directory, name))
    for path in [os.path.join(directory, name + SUFFIX), *shards]:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def record(prefix: str, max_to_keep: int | None, keep_every_n_hours: float | None = None,
           last_preserved: float | None = None) -> tuple[list[str], float | None]:
    """Record the just-written checkpoint `prefix` as its directory's latest and apply
    retention (module docstring); returns the kept prefixes, oldest first, and the new
    last-preserved timestamp."""
    directory = os.path.dirname(os.path.abspath(prefix))
    atomic_files.sweep_once(directory)
    index = read_index(directory)
    name = os.path.basename(prefix)
    now_ = now()
    stamps = {k: v for k, v in index.get("timestamps", {}).items() if k in index["all"]}
    stamps[name] = now_
    if last_preserved is None:
        last_preserved = index.get("last_preserved_timestamp")
    if last_preserved is None and keep_every_n_hours:
        last_preserved = now_
    kept = [p for p in index["all"] if p != name] + [name]
    excess = len(kept) - max_to_keep if max_to_keep else 0
    dropped: list[str] = []
    # a crash after an earlier save's index left these to delete (never what is kept now)
    deleting = [p for p in index.get("deleting", []) if p not in kept]
    for old in kept[:-1]:
        if excess <= 0:
            break
        if _is_newer(old, name):
            continue  # a restarted numbering must not cost the previous run its newest
        dropped.append(old)
        excess -= 1
        stamp = stamps.get(old, now_)
        if keep_every_n_hours and stamp - keep_every_n_hours * 3600.0 >= last_preserved:
            last_preserved = stamp  # TensorFlow: left on disk, no longer managed
        else:
            deleting.append(old)
    kept = [p for p in kept if p not in dropped]
    new_index = {"latest": name, "all": kept, "timestamps": {k: stamps[k] for k in kept}}
    if last_preserved is not None:
        new_index["last_preserved_timestamp"] = last_preserved
    _commit(directory, new_index, deleting)
    return [os.path.join(directory, p) for p in kept], last_preserved


def _commit(directory: str, index: dict, deleting: list[str]) -> None:
    """Write `index`, then delete the data files of `deleting`. The deletions are listed
    in the index until they are done, so a crash in between leaves no file behind for
    good (the next save or manager start finishes them) and the index never names a
    deleted checkpoint."""
    if deleting:
        _write_index(directory, dict(index, deleting=deleting))
        for old in deleting:
            _unlink_data(directory, old)
    _write_index(directory, index)


def record_checkpoint(prefix: str, max_to_keep: int | None) -> list[str]:
    """Add `prefix` to its directory's index as the latest, drop checkpoints beyond
    `max_to_keep` (deleting their files; never one numbered after `prefix`), and return
    the kept prefixes."""
    return record(prefix, max_to_keep)[0]


def _numbered_files(directory: str, base: str) -> dict[str, int]:
    """``{base}-N`` checkpoints with a data file in `directory`: name -> N."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return {}
    out = {}
    for entry in names:
        if entry.endswith(SUFFIX) and not atomic_files.is_temporary(entry):
            name = entry[:-len(SUFFIX)]
            number = checkpoint_number(name, base)
            if number is not None:
                out[name] = number
    return out


def highest_number(directory: str, base: str) -> int:
    """The highest N of a ``{base}-N`` checkpoint in `directory`, listed or only on disk
    (a preserved one, or one whose save was cut off before the index); 0 if none."""
    numbers = list(_numbered_files(directory, base).values())
    numbers += [n for n in (checkpoint_number(p, base)
                            for p in read_index(directory)["all"]) if n is not None]
    return max(numbers, default=0)


def recover(directory: str, base: str) -> dict:
    """Bring `directory` back to a consistent state after a crash, for the manager of the
    ``{base}-N`` series starting there: delete orphaned temporaries, finish deletions
    a killed save left listed under ``"deleting"``, forget listed checkpoints whose data
    file is gone (deleted by hand), and list ``{base}-N`` data files newer than every
    listed checkpoint of the series (a save killed between its data file and the index;
    the data file is complete, or it would not have its name). Returns the index,
    rewritten only when it changed."""
    atomic_files.sweep_temporaries(directory)
    index = read_index(directory)
    deleting = [p for p in index.get("deleting", []) if p not in index["all"]]
    on_disk = _numbered_files(directory, base)
    listed = [p for p in index["all"] if os.path.exists(os.path.join(directory, p + SUFFIX))]
    top = max((on_disk[p] for p in listed if p in on_disk), default=0)
    adopted = sorted((n, p) for p, n in on_disk.items()
                     if n > top and p not in listed and p not in deleting)
    if listed == index["all"] and not adopted and "deleting" not in index:
        return index
    stamps = index.get("timestamps", {})
    for _, p in adopted:
        stamps[p] = os.path.getmtime(os.path.join(directory, p + SUFFIX))
        listed.append(p)
    latest = index.get("latest")
    if adopted or latest not in listed:
        latest = listed[-1] if listed else None
    new_index = {k: v for k, v in index.items() if k != "deleting"}
    new_index.update(latest=latest, all=listed,
                     timestamps={p: stamps[p] for p in listed if p in stamps})
    try:
        _commit(directory, new_index, deleting)
    except OSError as e:
        # a reader (an evaluator watching a training job's directory) may not write it
        if e.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise
        _log.debug("checkpoint directory %s is read-only; not recovered: %s", directory, e)
    return new_index
