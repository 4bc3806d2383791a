"""Simulator tests: this process must have numba's CUDA simulator (see ../conftest.py)."""

import os

from hypothesis import HealthCheck, settings

assert (os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
        or os.environ.get("TW_GPU_TESTS_ON_DEVICE") == "1"), \
    ("tests/gpu/sim runs under NUMBA_ENABLE_CUDASIM=1 (tests/gpu/test_simulator.py starts it) "
     "or on a real GPU with TW_GPU_TESTS_ON_DEVICE=1 (tools/gpu_device_check.sh)")

# the simulator runs one Python thread per GPU thread: few, small examples
settings.register_profile("gpu-sim", max_examples=6, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
