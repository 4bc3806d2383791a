"""The package's source as ``import tensorweave`` found it (for cache keys).

Step records (`targets/cpu/plan_cache.py`) are keyed by the source that made them. The
source is read when the package is imported, as Python's own ``.pyc`` check compares
at import time: a process whose files are edited after it imported the package keeps
running its old code, and must key what that code makes by the old source, not by the
files on disk at its first call (a later process would otherwise load the old code's
records as the new code's).
"""

from __future__ import annotations

import hashlib
import os


def files_digest(root: str) -> str:
    """A hash of every ``.py`` file under `root` by path, size and modification time."""
    h = hashlib.sha256()
    for dirpath, dirnames, files in os.walk(root):
        dirnames.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                st = os.stat(path)
                h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()


PACKAGE_ROOT = os.path.dirname(os.path.abspath(__file__))
AT_IMPORT = files_digest(PACKAGE_ROOT)
