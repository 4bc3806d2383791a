"""Test-suite set-up: verify the IR after every pass, and size hypothesis for 2 cores."""

import os
from collections.abc import Iterator

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

# pytest-xdist workers for the whole suite (`python -m pytest`, the README's command)
SUITE_WORKERS = 2


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The whole suite (no paths on the command line: `testpaths`) runs on
    `SUITE_WORKERS` pytest-xdist processes when pytest-xdist is installed (the [test]
    extra) and no ``-n`` was given: on 2 cores, half the time of one process. A run of
    chosen files or tests stays in one process (``-n 2`` asks for workers there, ``-n 0``
    for none in a whole-suite run). Not pyproject's addopts: a ``-n`` there would be an
    unknown option where pytest-xdist is missing (tools/gpu_device_check.py's device
    image), and it would split the simulator's inner pytest runs too.

    Runs before pytest-xdist's own hook (conftests register after plugins), which turns
    the count into workers."""
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    if (config.option.numprocesses is None
            and config.args_source == pytest.Config.ArgsSource.TESTPATHS
            and not config.option.usepdb and not config.option.collectonly):
        config.option.numprocesses = SUITE_WORKERS


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


@pytest.fixture
def fresh_default_graph() -> Iterator[None]:
    """A new global default graph (``tf.compat.v1``'s) before the test and again after it,
    so no test sees another's ops, variables or collections and leaves none behind. Not
    autouse: a file opts in with ``pytestmark = pytest.mark.usefixtures("fresh_default_graph")``
    (a fixture that builds into the fresh graph requests it by name, to run after the reset)."""
    # Imported here, not at the top: the conftest stays importable without loading the
    # library (the GPU device check's bare image runs pytest before it has a numba stack).
    from tensorweave.compat.v1 import reset_default_graph

    reset_default_graph()
    yield
    reset_default_graph()
