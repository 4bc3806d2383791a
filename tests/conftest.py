"""Test-suite set-up: verify the IR after every pass, and size hypothesis for 2 cores."""

import os

os.environ.setdefault("TW_VERIFY", "1")
# Functions that name no target run on the reference target here. The library's default
# is the cpu target, whose code is specialized per shape: each new shape of the
# thousands of tiny graphs the suite traces would be an LLVM compile (50-300 ms), a
# 25-minute suite instead of 3. Tests about the cpu target name it, every op test runs on
# both targets (`tests.helpers.TARGETS`), and the examples run on the library's default
# (`tests/test_examples.py`). TW_DEFAULT_TARGET=cpu runs everything on the cpu target.
os.environ.setdefault("TW_DEFAULT_TARGET", "reference")

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", max_examples=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


import pytest  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def _private_compile_cache(tmp_path_factory: pytest.TempPathFactory):
    """Point the cpu JIT's disk cache (and that of subprocesses, which inherit the
    environment) at a temporary directory: tests never read or fill ~/.cache."""
    old = os.environ.get("TW_CACHE_DIR")
    os.environ["TW_CACHE_DIR"] = str(tmp_path_factory.mktemp("tw-compile-cache"))
    yield
    if old is None:
        os.environ.pop("TW_CACHE_DIR", None)
    else:
        os.environ["TW_CACHE_DIR"] = old
