"""Crash-safe file writes: a temporary file, fsync, rename, fsync of the directory; and
the sweeping of temporaries that killed writers left behind.

Every file the project writes goes through `atomic_open` (or `write_bytes`):

* The data goes to ``.tmp-<pid>-<random>-<final name>`` in the target's directory, which
  the writer holds an exclusive ``flock`` on from creation until it is renamed.
* Before the rename the file is fsynced, after it the directory, so once the call
  returns the new file survives a power loss, and a crash at any moment leaves either
  the old file or the whole new one under the final name (``rename(2)`` is atomic).
* A writer that is killed (SIGKILL, power loss) leaves its temporary behind. The kernel
  drops a dead process's locks, so `sweep_temporaries` can tell orphans (lock free)
  from files a live writer in any process is still writing (lock held), without
  trusting pids that may have been reused. The pid in the name is for people only.

Stdlib only: every layer (runtime, targets, frontend) may use it.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

try:
    import fcntl
except ImportError:  # no flock (Windows): temporaries are then never swept (see below)
    fcntl = None  # type: ignore[assignment]

_log = logging.getLogger(__name__)

TEMP_PREFIX = ".tmp-"
_MAX_NAME_TAIL = 120  # keeps temporary names under NAME_MAX (255) for long final names
_OUR_TEMPORARY = re.compile(r"^\.tmp-\d+-[0-9a-f]{8}-(.+)$")  # group 1: the final name's tail

_swept: set[str] = set()  # directories this process already swept (`sweep_once`)
_swept_lock = threading.Lock()


def is_temporary(name: str) -> bool:
    """Whether a directory entry is a temporary: ours, or one of the ``.tmp-XXXXXXXX``
    that earlier versions made with mkstemp in checkpoint and cache directories."""
    return name.startswith(TEMP_PREFIX)


def fsync_directory(directory: str) -> None:
    """Make the entries of `directory` (a rename, a new or removed file) durable."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_directory(directory: str, mode: int = 0o777) -> None:
    """Create `directory` and missing parents (the last one with `mode`), durably: the
    parent of every directory created is fsynced, so files later renamed into it do
    not vanish with it after a power loss."""
    created = []
    path = os.path.abspath(directory)
    while not os.path.isdir(path):
        created.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    if not created:
        return
    os.makedirs(directory, mode=mode, exist_ok=True)
    for path in reversed(created):
        fsync_directory(os.path.dirname(path))


def _lock(fd: int, blocking: bool) -> bool | None:
    """Take the exclusive flock of `fd`: True when taken, False when another open file
    holds it, None when the file system has no locks (a writer then goes on unguarded,
    and a sweeper, unable to tell, deletes nothing)."""
    if fcntl is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        return True
    except BlockingIOError:
        return False
    except OSError:  # ENOLCK, EOPNOTSUPP: e.g. an NFS mount without a lock manager
        return None


def _same_file(path: str, fd: int) -> bool:
    try:
        on_disk = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (opened.st_dev, opened.st_ino)


def _create_temporary(directory: str, final_name: str, mode: int) -> tuple[int, str]:
    """A new temporary next to `final_name`, open for writing and locked by us."""
    while True:
        name = f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}-{final_name[-_MAX_NAME_TAIL:]}"
        path = os.path.join(directory, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
        try:
            # Blocking: a sweeper that locked the file between its creation and now is
            # deleting it, and lets go right after; then the check below makes a new one.
            _lock(fd, blocking=True)
            if _same_file(path, fd):
                return fd, path
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


@contextmanager
def atomic_open(path: str, mode: int = 0o666, durable: bool = True) -> Iterator[BinaryIO]:
    """Open a temporary file for writing in `path`'s directory; when the block exits
    normally it is fsynced and renamed over `path`, and the directory fsynced. When the
    block raises, the temporary is removed and `path` is untouched. `mode` is the new
    file's permissions (less the umask), as for `os.open`.

    ``durable=False`` skips the fsyncs: readers still see the old file or the whole new
    one, but after a power loss the new one may be gone or hold garbage. Only for files
    whose readers verify them and can do without them (the compile cache, whose entries
    carry a checksum and are rebuilt when missing): each fsync costs milliseconds, and a
    cold compile writes dozens of entries."""
    directory = os.path.dirname(os.path.abspath(path))
    make_directory(directory)
    fd, tmp = _create_temporary(directory, os.path.basename(path), mode)
    f = os.fdopen(fd, "wb")
    try:
        yield f
        f.flush()
        if durable:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    finally:
        f.close()  # releases the lock; after a rename it is on the final file, harmless
    if durable:
        fsync_directory(directory)


def write_bytes(path: str, data: bytes | memoryview, mode: int = 0o666,
                durable: bool = True) -> None:
    """Replace `path` with `data` atomically, and durably unless told (`atomic_open`)."""
    with atomic_open(path, mode=mode, durable=durable) as f:
        f.write(data)


def _temporary_for(name: str, finals: Iterable[str]) -> bool:
    m = _OUR_TEMPORARY.match(name)
    return bool(m) and m.group(1) in {f[-_MAX_NAME_TAIL:] for f in finals}


def sweep_temporaries(directory: str, only_for: Iterable[str] | None = None) -> int:
    """Delete the temporaries in `directory` that no live writer holds (left by writers
    that were killed); returns the bytes reclaimed, which are logged at debug level.
    Temporaries being written, by this process or any other, are left alone.

    In a directory the project owns (checkpoints, compile cache) every ``.tmp-*`` file
    is a candidate. In one the user chose for other files too, pass the final names the
    project writes there as `only_for`: only our temporaries of those names are."""
    with _swept_lock:
        _swept.add(os.path.abspath(directory))
    if fcntl is None:
        return 0  # without flock a live writer cannot be told from a dead one
    try:
        names = [n for n in os.listdir(directory) if is_temporary(n)
                 and (only_for is None or _temporary_for(n, only_for))]
    except OSError:
        return 0  # no directory yet, or not ours to read: nothing to sweep
    count = reclaimed = 0
    for name in names:
        path = os.path.join(directory, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue  # renamed or removed meanwhile
        try:
            # Not taken: a live writer holds it (or there are no locks to tell). Taken:
            # the name must still be this file, not renamed into place since listing.
            if _lock(fd, blocking=False) is not True or not _same_file(path, fd):
                continue
            size = os.fstat(fd).st_size
            os.unlink(path)
            count += 1
            reclaimed += size
        except OSError as e:
            _log.debug("cannot remove temporary %s: %s", path, e)
        finally:
            os.close(fd)
    if count:
        _log.debug("removed %d orphaned temporar%s in %s: %d bytes reclaimed", count,
                   "y" if count == 1 else "ies", directory, reclaimed)
    return reclaimed


def sweep_once(directory: str) -> int:
    """`sweep_temporaries` unless this process already swept `directory`; 0 then."""
    with _swept_lock:
        if os.path.abspath(directory) in _swept:
            return 0
    return sweep_temporaries(directory)
