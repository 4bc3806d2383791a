"""The object-code cache key of the cpu target (`jit.codegen_fingerprint`).

The fingerprint hashes the code generator's files when a process first compiles. A
process whose package files were edited after it imported them runs the old code: it
must not store its object code under the new files' key (a later process would load the
old code's output as the new code's, e.g. without a fix made in the code generator).
"""

from __future__ import annotations

import pytest

from tensorweave import _source
from tensorweave.targets.cpu import jit


@pytest.fixture
def fresh_fingerprint(monkeypatch):
    """`codegen_fingerprint` recomputed under a controlled view of the package files."""
    jit.codegen_fingerprint.cache_clear()
    yield monkeypatch
    jit.codegen_fingerprint.cache_clear()


def fingerprint_when(monkeypatch, at_import: str, on_disk: str) -> str:
    monkeypatch.setattr(_source, "AT_IMPORT", at_import)
    monkeypatch.setattr(_source, "files_digest", lambda root: on_disk)
    jit.codegen_fingerprint.cache_clear()
    return jit.codegen_fingerprint()


def test_unchanged_files_give_a_stable_content_key(fresh_fingerprint):
    a = fingerprint_when(fresh_fingerprint, "same", "same")
    b = fingerprint_when(fresh_fingerprint, "same", "same")
    assert a == b


def test_files_edited_after_import_give_a_key_no_other_process_shares(fresh_fingerprint):
    clean = fingerprint_when(fresh_fingerprint, "same", "same")
    edited = fingerprint_when(fresh_fingerprint, "at import", "edited since")
    again = fingerprint_when(fresh_fingerprint, "at import", "edited since")
    assert edited != clean
    assert again != edited and again != clean
