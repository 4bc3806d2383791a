"""GPU target tests.

Kernels run in numba's CUDA simulator, which numba selects when it is first imported
(``NUMBA_ENABLE_CUDASIM=1``): the simulator tests live in tests/gpu/sim and run in their
own process (`test_simulator.py` starts it), so this process, and the rest of the suite
in it, keeps the real numba.cuda (which compiles PTX with no GPU: `test_ptx.py`).
Running ``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/gpu/sim`` directly also works.
"""

import os

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM", "") not in ("", "0")

# sim/ only in a simulator process; the PTX tests only outside one (compile_ptx needs
# the real numba.cuda)
collect_ignore = [] if SIMULATOR else ["sim"]
if SIMULATOR:
    collect_ignore += ["test_ptx.py", "test_simulator.py", "test_cli_kernels.py",
                       "test_unavailable.py"]
