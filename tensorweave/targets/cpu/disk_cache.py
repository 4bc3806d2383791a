"""The on-disk compile cache of the cpu target: optimized object code, one file per key.

A second process that needs a kernel it compiled before loads the object code from here
instead of running LLVM (`jit.compile_module` decides what to cache; this module only
stores and checks files).

Where: ``$TW_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/tensorweave``, else
``~/.cache/tensorweave``, in a subdirectory per cache-format version. ``TW_CACHE_DIR=off``
or ``TW_DISABLE_CACHE=1`` turns the cache off (nothing is read or written). The settings
are read on every lookup, so tests can change them at run time.

An entry is ``<key>.twjit``: a header (magic, format version, payload length, SHA-256 of
key and payload) and the payload. Entries are written with `atomic_files` (a locked
temporary in the same directory, renamed over the final name), so readers see a whole
entry or none, in any number of processes writing the same entries at once. They are
not fsynced (``durable=False``): a cache needs no durability, and a cold compile writes
dozens of entries at milliseconds per fsync. An entry that a power loss left truncated
or zeroed, or that was altered or is otherwise unreadable, fails its checks, is deleted
and is reported as absent, and is compiled again. The first use of the directory in a
process deletes the temporaries of writers that were killed. A directory that cannot be
written only turns writing off.
``<key>.twnote`` entries (same format and checks) hold small answers that keys of code
depend on and that are slow to measure, e.g. how this process's BLAS may split products;
``<key>.twplan`` entries are step records (`plan_cache`): what the pipeline and the
planner derived from a traced graph, so that a warm first call skips them.

The files hold native code that the process runs: the directory is created private
(mode 0700), and nothing in it should be writable by anyone the user does not trust.
"""

from __future__ import annotations

import hashlib
import logging
import os
import struct
from collections.abc import Callable
from pathlib import Path

from ...runtime import atomic_files

_log = logging.getLogger(__name__)

# Bump when the entry layout, or what an entry's code depends on beyond its key (the
# optimization pipeline, target-machine options), changes: old entries are then ignored.
FORMAT_VERSION = 1
MAGIC = b"TWJITOBJ"
_HEADER = struct.Struct("<8sIQ32s")  # magic, format version, payload length, sha256
SUFFIX = ".twjit"
# small answers that code keys depend on (the BLAS probe of `executable._blas_settings`):
# same format and checks, another suffix, so that only object code is a ``.twjit``
NOTE_SUFFIX = ".twnote"
OFF_VALUES = ("off", "none", "disabled")

class InvalidEntry(Exception):
    """An entry that failed its checks or could not be read (it has been deleted)."""


_unwritable: set[Path] = set()  # directories a write already failed in (this process)


def cache_root() -> Path | None:
    """The cache's base directory from the environment, or None when it is turned off."""
    if os.environ.get("TW_DISABLE_CACHE", "") not in ("", "0"):
        return None
    explicit = os.environ.get("TW_CACHE_DIR", "")
    if explicit:
        return None if explicit.strip().lower() in OFF_VALUES else Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "tensorweave"


def cache_dir() -> Path | None:
    """The directory entries of the current format live in, or None when turned off."""
    root = cache_root()
    return None if root is None else root / f"cpu-jit-v{FORMAT_VERSION}"


def entry_path(directory: Path, key: str, suffix: str = SUFFIX) -> Path:
    """The file of entry `key` in `directory`."""
    return directory / (key + suffix)


def _checksum(key: str, payload: bytes) -> bytes:
    # the key is part of the checksum: a file renamed to another key does not verify
    return hashlib.sha256(key.encode() + b"\0" + payload).digest()


def encode(key: str, payload: bytes) -> bytes:
    """The bytes of an entry: header, then payload."""
    return _HEADER.pack(MAGIC, FORMAT_VERSION, len(payload), _checksum(key, payload)) + payload


def decode(key: str, data: bytes) -> bytes:
    """The payload of an entry's bytes; ValueError says why the entry is not valid."""
    if len(data) < _HEADER.size:
        raise ValueError(f"truncated header ({len(data)} bytes)")
    magic, version, length, digest = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise ValueError("bad magic")
    if version != FORMAT_VERSION:
        raise ValueError(f"format version {version}, expected {FORMAT_VERSION}")
    payload = data[_HEADER.size:]
    if len(payload) != length:
        raise ValueError(f"payload is {len(payload)} bytes, header says {length}")
    if _checksum(key, payload) != digest:
        raise ValueError("checksum mismatch")
    return payload


def _directory() -> Path | None:
    """`cache_dir()`, swept of orphaned temporaries the first time this process uses it."""
    directory = cache_dir()
    if directory is not None:
        atomic_files.sweep_once(str(directory))
    return directory


def load(key: str, suffix: str = SUFFIX) -> bytes | None:
    """The payload stored under `key`, or None (no entry, or the cache is off).
    InvalidEntry when the entry is unreadable or fails its checks: it is deleted."""
    directory = _directory()
    if directory is None:
        return None
    path = entry_path(directory, key, suffix)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        _log.debug("compile cache: cannot read %s: %s", path, e)
        discard(key, suffix)
        raise InvalidEntry(str(e)) from None
    try:
        return decode(key, data)
    except ValueError as e:
        _log.debug("compile cache: dropping invalid entry %s: %s", path, e)
        discard(key, suffix)
        raise InvalidEntry(str(e)) from None


def store(key: str, payload: bytes, suffix: str = SUFFIX) -> bool:
    """Write `payload` under `key` atomically (not durably: see above); False (and no
    exception) when the cache is off or its directory cannot be written, after which
    this process stops trying."""
    directory = _directory()
    if directory is None or directory in _unwritable:
        return False
    try:
        atomic_files.make_directory(str(directory), mode=0o700)
        atomic_files.write_bytes(str(entry_path(directory, key, suffix)), encode(key, payload),
                                 mode=0o600, durable=False)
        return True
    except OSError as e:
        _log.debug("compile cache: cannot write in %s (%s); not writing there any more",
                   directory, e)
        _unwritable.add(directory)
        return False


def note(key: str | None, compute: Callable[[], bytes],
         valid: Callable[[bytes], bool] = lambda payload: True) -> bytes:
    """A small answer kept under `key` (a probe's): the stored one when there is one and
    it is `valid`, else `compute()`, stored for the next process. `key` None: computed
    and not kept."""
    if key is not None:
        try:
            cached = load(key, NOTE_SUFFIX)
        except InvalidEntry:  # (logged and deleted)
            cached = None
        if cached is not None and valid(cached):
            return cached
    payload = compute()
    if key is not None:
        store(key, payload, NOTE_SUFFIX)
    return payload


def discard(key: str, suffix: str = SUFFIX) -> None:
    """Delete the entry `key` if there is one (errors are logged and ignored)."""
    directory = cache_dir()
    if directory is None:
        return
    try:
        entry_path(directory, key, suffix).unlink()
    except FileNotFoundError:
        pass
    except OSError as e:
        _log.debug("compile cache: cannot delete entry %s: %s", key, e)
