"""GPU target tests.

Kernels run in numba's CUDA simulator, which numba selects when it is first imported
(``NUMBA_ENABLE_CUDASIM=1``): the simulator tests live in tests/gpu/sim and run in their
own process (`test_simulator.py` starts it), so this process, and the rest of the suite
in it, keeps the real numba.cuda (which compiles PTX with no GPU: `test_ptx.py`).
Running ``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/gpu/sim`` directly also works.

On a real GPU, ``TW_GPU_TESTS_ON_DEVICE=1`` collects sim/ as well, so its numerics, steps,
memory and placement tests run on the device (`tools/gpu_device_check.sh` sets it);
sim/test_interop.py stays out there: it inspects the simulator's own arrays, and
test_torch_interop.py checks interop on a GPU.
"""

import os

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM", "") not in ("", "0")
ON_DEVICE = os.environ.get("TW_GPU_TESTS_ON_DEVICE") == "1" and not SIMULATOR

# sim/ only in a simulator process; the PTX tests only outside one (compile_ptx needs
# the real numba.cuda)
collect_ignore = [] if SIMULATOR else ["sim/test_interop.py"] if ON_DEVICE else ["sim"]
if SIMULATOR:
    collect_ignore += ["test_ptx.py", "test_simulator.py", "test_cli_kernels.py",
                       "test_unavailable.py"]
