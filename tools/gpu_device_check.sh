#!/usr/bin/env bash
# The prepared GPU check (issue 12; docs/gpu.md "On a lent GPU"): tests without the
# simulator, the op suite on the gpu target, PyTorch interop, benchmarks/gpu.py and the
# MNIST examples on a real GPU, in one device-tool call, every result under $OUT.
#
#   bash tools/gpu_device_check.sh --prepare     # here first: wheels the image may lack
#   device tool: run(command="bash tools/gpu_device_check.sh",
#                    carry=["build/gpu_wheels"], timeout_s=580)
#   bash tools/gpu_device_check.sh --simulate    # a tiny dry run under numba's simulator
#   bash tools/gpu_device_check.sh --plan        # the steps, run nothing
#
# The work is in tools/gpu_device_check.py; this wrapper only finds Python and the
# repository root, so it runs the same from any directory.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY="${PYTHON:-$(command -v python3 || command -v python)}"
if [ "${1:-}" = "--simulate" ] && [ -z "${OUT:-}" ]; then
  export OUT="build/gpu_check_sim"
fi
exec "$PY" tools/gpu_device_check.py "$@"
