"""A pytest plugin that runs tests/ops on the gpu target (with the reference target as
the oracle), used by test_simulator.py in a process with numba's CUDA simulator:

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/ops -p tests.gpu.op_suite_plugin

Every op test that checks its op traced on each target (`tests.helpers.TARGETS`) then
checks the gpu target's kernels, and its host calls for what has no kernel (float16,
convolutions ...). The simulator runs one Python thread per GPU thread, so hypothesis
draws few examples here; the cpu target is covered by the ordinary run. So an op test
should compare targets through `TARGETS` (e.g. each against "reference"), never index
one by name.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings


def pytest_configure(config) -> None:
    # after tests/conftest.py (which loads the "ci" profile and sets the default target)
    settings.register_profile("gpu-sim-ops", max_examples=4, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("gpu-sim-ops")
    import tests.helpers as helpers
    helpers.TARGETS = ("reference", "gpu")
