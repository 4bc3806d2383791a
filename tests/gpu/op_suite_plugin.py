"""A pytest plugin that runs tests/ops on the gpu target (with the reference target as
the oracle), used by test_simulator.py in a process with numba's CUDA simulator:

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/ops -p tests.gpu.op_suite_plugin

Every op test that checks its op traced on each target (`tests.helpers.TARGETS`) then
checks the gpu target's kernels, and its host calls for what has no kernel (float16,
convolutions ...). The simulator runs one Python thread per GPU thread, so hypothesis
draws few examples here (`SIM_EXAMPLES` per test, in the simulator also where a test asks
for more with its own ``@settings``); the cpu target is covered by the ordinary run. So an op test
should compare targets through `TARGETS` (e.g. each against "reference"), never index
one by name.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# hypothesis examples per op test in the simulator: each runs the op's kernels (and, for
# gradient tests, every finite-difference evaluation) one Python thread per GPU thread
SIM_EXAMPLES = 4


def pytest_configure(config) -> None:
    # after tests/conftest.py (which loads the "ci" profile and sets the default target)
    settings.register_profile("gpu-sim-ops", max_examples=SIM_EXAMPLES, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("gpu-sim-ops")
    import tests.helpers as helpers
    helpers.TARGETS = ("reference", "gpu")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """In the simulator, cap each hypothesis test at `SIM_EXAMPLES`: a test's own
    ``@settings(max_examples=30)`` sizes the ordinary run (reference and cpu targets,
    which draw that many there); here it drew 30 examples of in_top_k, moments ... one
    Python thread per GPU thread: the op suite took 77 CPU seconds, 48 with the cap (the
    same tests and kernels). On a real GPU (tools/gpu_device_check.py) examples are cheap
    and such tests keep their own count."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "") in ("", "0"):
        return
    for item in items:
        test = getattr(item, "obj", None)
        own = getattr(test, "_hypothesis_internal_use_settings", None)
        if own is not None and own.max_examples > SIM_EXAMPLES:
            # hypothesis reads this attribute when the test runs (parametrized items share
            # the function: the first one caps it for all)
            test._hypothesis_internal_use_settings = settings(own, max_examples=SIM_EXAMPLES)
