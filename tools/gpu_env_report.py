"""What the GPU device check runs on: the card and driver (`nvidia-smi`), the versions of
the packages tensorweave and its checks use (`pip list`), and numba's view of the device.
Each part is printed even when another fails (a missing tool is a line, not the end)."""

from __future__ import annotations

import re
import subprocess
import sys

PACKAGES = re.compile(r"numba|llvmlite|numpy|scipy|torch|cupy|jax|hypothesis|pytest|networkx|"
                      r"grpcio|safetensors|ml.dtypes|threadpoolctl|scikit|cuda|nvidia",
                      re.IGNORECASE)


def _section(title: str, argv: list[str], keep=None) -> None:
    print(f"== {title}: {' '.join(argv)}", flush=True)
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"   failed: {type(e).__name__}: {e}")
        return
    lines = (proc.stdout + proc.stderr).splitlines()
    for line in lines:
        if keep is None or keep(line):
            print(line)
    if proc.returncode:
        print(f"   (exit status {proc.returncode})")


def main() -> int:
    """Print the report (always exits 0: it describes, it does not check)."""
    print(f"python {sys.version.split()[0]} at {sys.executable}")
    _section("card and driver", ["nvidia-smi"])
    _section("packages", [sys.executable, "-m", "pip", "list"],
             lambda line: bool(PACKAGES.search(line)))
    _section("numba's devices", [sys.executable, "-c",
                                 "from numba import cuda; print(cuda.is_available()); "
                                 "cuda.detect()"])
    _section("tensorweave's GPUs", [sys.executable, "-c",
                                    "import tensorweave as tw; "
                                    "print(tw.config.list_physical_devices('GPU'))"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
