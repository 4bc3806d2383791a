"""Every client in these tests carries the test cluster's token (as TW_CONFIG would), and
calls in-process servers through gRPC (the transport is what is tested) unless a test
asks for direct calls with the ``local_calls`` fixture."""

import pytest

from tensorweave.runtime.distributed import server

from .cluster_helpers import TOKEN


@pytest.fixture(autouse=True)
def _cluster_token(monkeypatch):
    monkeypatch.setenv("TW_TOKEN", TOKEN)
    monkeypatch.delenv("TW_CONFIG", raising=False)
    monkeypatch.setattr(server, "LOCAL_CALLS", False)


@pytest.fixture
def local_calls(monkeypatch):
    """Tasks served by the test process are called directly, as a worker calls its own."""
    monkeypatch.setattr(server, "LOCAL_CALLS", True)
