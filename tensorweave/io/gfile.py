"""``tw.io.gfile`` (TensorFlow's ``tf.io.gfile``): files and directories on the local
file system, with TensorFlow's errors (`tw.errors.NotFoundError` for a missing file,
`AlreadyExistsError` for a rename or copy onto one, ...).

Only local paths: a path with a scheme (``gs://``, ``s3://``, ``hdfs://``) is an
`UnimplementedError` that says so; ``file://`` paths are local. A `GFile` opened in a
text mode reads and writes `str` without newline translation (``\\r\\n`` stays), as
TensorFlow's; ``readline`` drops carriage returns, as TensorFlow's line reader does.
"""

from __future__ import annotations

import errno
import glob as _glob
import os
import shutil
from collections.abc import Iterator
from typing import Any

from ..errors import (
    AlreadyExistsError,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    UnimplementedError,
    UnknownError,
)


def local_path(path: Any, api: str) -> str:
    """`path` (str, bytes, os.PathLike, a string tensor's bytes) as a local path; a URL
    of another file system is an `UnimplementedError` naming `api`."""
    if hasattr(path, "numpy"):
        path = path.numpy()
    if isinstance(path, bytes):
        path = path.decode("utf-8")
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = path.decode("utf-8")
    if not isinstance(path, str):
        raise TypeError(f"{api}: a path is a str, got {type(path).__name__}")
    if path.startswith("file://"):
        return path[len("file://"):]
    scheme, sep, _ = path.partition("://")
    if sep and scheme.isidentifier():
        raise UnimplementedError(f"{api}: '{path}' is on the '{scheme}' file system; "
                                 f"tensorweave reads and writes local files only")
    return path


def os_error(e: OSError, path: str, api: str | None = None) -> Exception:
    """The TensorFlow error class for an `OSError` on `path` (TensorFlow's messages:
    ``'<path>; No such file or directory'``)."""
    message = f"{path}; {e.strerror or e}"
    cls = {errno.ENOENT: NotFoundError, errno.EEXIST: AlreadyExistsError,
           errno.EACCES: PermissionDeniedError, errno.EPERM: PermissionDeniedError,
           errno.EISDIR: FailedPreconditionError, errno.ENOTDIR: FailedPreconditionError,
           errno.ENOTEMPTY: FailedPreconditionError}.get(e.errno, UnknownError)
    return cls(message, op=api)


class GFile:
    """A file (TensorFlow's ``tf.io.gfile.GFile``): ``mode`` ``'r'``/``'w'``/``'a'`` for
    str, with ``'b'`` for bytes; ``'w'`` creates or truncates, missing files to read are
    `NotFoundError` (when first read, as TensorFlow's). A context manager and an
    iterator over lines."""

    def __init__(self, name: Any, mode: str = "r") -> None:
        if mode not in ("r", "rb", "w", "wb", "a", "ab", "r+", "rb+", "w+", "wb+", "a+",
                        "ab+"):
            raise InvalidArgumentError(f"tw.io.gfile.GFile: mode must be one of r, w, a "
                                       f"(with b for bytes, + to update), got {mode!r}")
        self.name = local_path(name, "tw.io.gfile.GFile")
        self.mode = mode
        self._binary = "b" in mode
        self._file: Any = None
        if "w" in mode or "a" in mode:
            self._open()

    def _open(self) -> Any:
        if self._file is None:
            try:
                self._file = open(self.name, self.mode.replace("b", "") + "b")
            except OSError as e:
                raise os_error(e, self.name, "tw.io.gfile.GFile") from None
        return self._file

    def _out(self, data: bytes) -> Any:
        return data if self._binary else data.decode("utf-8")

    def size(self) -> int:
        """The file's size in bytes."""
        return stat(self.name).length

    def read(self, n: int = -1) -> Any:
        """`n` bytes (all with -1) as bytes, or str in a text mode."""
        return self._out(self._open().read(n))

    def readline(self) -> Any:
        """The next line, its newline kept and carriage returns dropped."""
        line = self._open().readline()
        return self._out(line.replace(b"\r", b""))

    def readlines(self) -> list[Any]:
        """Every remaining line (as `readline`)."""
        return list(iter(self.readline, self._out(b"")))

    def __iter__(self) -> Iterator[Any]:
        return iter(self.readline, self._out(b""))

    def __next__(self) -> Any:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def write(self, data: Any) -> None:
        """Write str (UTF-8) or bytes."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        self._open().write(bytes(data))

    def seek(self, offset: int | None = None, whence: int = 0, position: int | None = None) -> None:
        """Move to `offset` (TensorFlow also calls it `position`)."""
        self._open().seek(position if position is not None else (offset or 0), whence)

    def tell(self) -> int:
        """The current position in bytes."""
        return self._open().tell()

    def seekable(self) -> bool:
        return True

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> GFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def exists(path: Any) -> bool:
    """Whether `path` exists (a file or a directory)."""
    return os.path.exists(local_path(path, "tw.io.gfile.exists"))


def isdir(path: Any) -> bool:
    """Whether `path` is a directory."""
    return os.path.isdir(local_path(path, "tw.io.gfile.isdir"))


def glob(pattern: Any) -> list[str]:
    """The paths that match `pattern` (``*``, ``?``, ``[...]``; dot files too, as
    TensorFlow's), sorted; a list of patterns gives every match of each."""
    patterns = [pattern] if isinstance(pattern, (str, bytes, os.PathLike)) else list(pattern)
    out: list[str] = []
    for p in patterns:
        p = local_path(p, "tw.io.gfile.glob")
        out += sorted(_glob.glob(p, include_hidden=True))
    return out


def listdir(path: Any) -> list[str]:
    """The names in directory `path` (not . and ..)."""
    p = local_path(path, "tw.io.gfile.listdir")
    if not os.path.isdir(p):
        raise NotFoundError(f"Could not find directory {p}", op="tw.io.gfile.listdir")
    try:
        return os.listdir(p)
    except OSError as e:
        raise os_error(e, p, "tw.io.gfile.listdir") from None


def mkdir(path: Any) -> None:
    """Create directory `path` (its parent must exist; an existing one is fine)."""
    p = local_path(path, "tw.io.gfile.mkdir")
    try:
        os.mkdir(p)
    except FileExistsError:
        if not os.path.isdir(p):
            raise AlreadyExistsError(f"{p}; File exists", op="tw.io.gfile.mkdir") from None
    except OSError as e:
        raise os_error(e, p, "tw.io.gfile.mkdir") from None


def makedirs(path: Any) -> None:
    """Create directory `path` and its missing parents (an existing one is fine)."""
    p = local_path(path, "tw.io.gfile.makedirs")
    try:
        os.makedirs(p, exist_ok=True)
    except OSError as e:
        raise os_error(e, p, "tw.io.gfile.makedirs") from None


def remove(path: Any) -> None:
    """Delete file `path` (a directory is `FailedPreconditionError`: use `rmtree`)."""
    p = local_path(path, "tw.io.gfile.remove")
    try:
        if os.path.isdir(p) and not os.path.islink(p):
            raise IsADirectoryError(errno.EISDIR, "Is a directory")
        os.remove(p)
    except OSError as e:
        raise os_error(e, p, "tw.io.gfile.remove") from None


def rmtree(path: Any) -> None:
    """Delete directory `path` and everything in it."""
    p = local_path(path, "tw.io.gfile.rmtree")
    if not os.path.exists(p):
        raise NotFoundError(f"{p}; No such file or directory", op="tw.io.gfile.rmtree")
    try:
        shutil.rmtree(p)
    except OSError as e:
        raise os_error(e, p, "tw.io.gfile.rmtree") from None


def rename(src: Any, dst: Any, overwrite: bool = False) -> None:
    """Rename `src` to `dst`; an existing `dst` is `AlreadyExistsError` unless
    `overwrite`."""
    s, d = local_path(src, "tw.io.gfile.rename"), local_path(dst, "tw.io.gfile.rename")
    if not overwrite and os.path.exists(d):
        raise AlreadyExistsError("file already exists", op="tw.io.gfile.rename")
    try:
        os.replace(s, d)
    except OSError as e:
        raise os_error(e, s, "tw.io.gfile.rename") from None


def copy(src: Any, dst: Any, overwrite: bool = False) -> None:
    """Copy file `src` to `dst`; an existing `dst` is `AlreadyExistsError` unless
    `overwrite`."""
    s, d = local_path(src, "tw.io.gfile.copy"), local_path(dst, "tw.io.gfile.copy")
    if not overwrite and os.path.exists(d):
        raise AlreadyExistsError("file already exists", op="tw.io.gfile.copy")
    try:
        shutil.copyfile(s, d)
    except OSError as e:
        raise os_error(e, s, "tw.io.gfile.copy") from None


class StatResult:
    """What `stat` tells: ``length`` in bytes, ``mtime_nsec``, ``is_directory``."""

    def __init__(self, length: int, mtime_nsec: int, is_directory: bool) -> None:
        self.length = length
        self.mtime_nsec = mtime_nsec
        self.is_directory = is_directory


def stat(path: Any) -> StatResult:
    """The size, modification time and kind of `path`."""
    p = local_path(path, "tw.io.gfile.stat")
    try:
        st = os.stat(p)
    except OSError as e:
        raise os_error(e, p, "tw.io.gfile.stat") from None
    return StatResult(st.st_size, st.st_mtime_ns, os.path.isdir(p))


def walk(top: Any, topdown: bool = True, onerror: Any = None) -> Iterator[tuple]:
    """``(dirname, subdirectories, files)`` for `top` and each directory below it."""
    return os.walk(local_path(top, "tw.io.gfile.walk"), topdown=topdown, onerror=onerror)


__all__ = ["GFile", "copy", "exists", "glob", "isdir", "listdir", "makedirs", "mkdir",
           "remove", "rename", "rmtree", "stat", "walk"]


def __dir__() -> list[str]:
    return sorted(__all__)
