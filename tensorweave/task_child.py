"""Run a task's program so that it dies with the process that started it.

    python -m tensorweave.task_child SCRIPT ARGS...
    python -m tensorweave.task_child -m MODULE ARGS...

asks the kernel for SIGTERM when the parent dies (Linux ``PR_SET_PDEATHSIG``), then runs
the script or module as ``__main__``. Doing this in the child itself, not in a
``preexec_fn`` between fork and exec, keeps the launcher free to fork while its gRPC
threads run (forking a threaded process and running Python before exec is unsafe).
"""

from __future__ import annotations

import ctypes
import os
import runpy
import signal
import sys

PARENT_ENV = "TW_PARENT_PID"


def die_with_parent() -> None:
    """SIGTERM this process when its parent exits; exit now if it already has."""
    parent = int(os.environ.pop(PARENT_ENV, "0") or 0)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the launcher's teardown still applies
        return
    if parent and os.getppid() != parent:  # the parent died before the prctl
        sys.exit(1)


def main(argv: list[str]) -> None:
    die_with_parent()
    if len(argv) >= 2 and argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv:
        sys.argv = list(argv)
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name="__main__")
    else:
        sys.exit("usage: python -m tensorweave.task_child SCRIPT|-m MODULE [ARGS...]")


if __name__ == "__main__":
    main(sys.argv[1:])
