"""Every client in these tests carries the test cluster's token (as TW_CONFIG would)."""

import pytest

from .cluster_helpers import TOKEN


@pytest.fixture(autouse=True)
def _cluster_token(monkeypatch):
    monkeypatch.setenv("TW_TOKEN", TOKEN)
    monkeypatch.delenv("TW_CONFIG", raising=False)
