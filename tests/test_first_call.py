"""What a first call costs besides compiling (issue 13): the BLAS probe that every step
with products keys its code by is answered from the disk cache in a later process (and
only for the same BLAS library, CPU and settings); BLAS thread limits are not asked of
threadpoolctl again while nothing new is loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tensorweave.runtime import threads
from tensorweave.targets.cpu import disk_cache, executable
from tensorweave.targets.cpu.blas import register_blas

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import json
import numpy as np
import tensorweave as tw
from tensorweave.targets.cpu import lowering
f = tw.compile(lambda a, b: tw.matmul(a, b), target="cpu")
a = np.arange(12, dtype=np.float32).reshape(3, 4)
out = f(a, a.T)
print(json.dumps({"probes": lowering.blas_row_align.cache_info().misses,
                  "ok": bool(np.allclose(out, a @ a.T)),
                  "key": __import__("tensorweave.targets.cpu.executable",
                                    fromlist=["_"])._blas_settings("")}))
"""

needs_blas = pytest.mark.skipif(not register_blas(), reason="no BLAS (SciPy) here")


def _run(tmp_path: Path, **env: str) -> dict:
    script = tmp_path / "first.py"
    script.write_text(SCRIPT)
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    full.pop("TW_BLAS_THREADS", None)
    out = subprocess.run([sys.executable, str(script)], env=full, capture_output=True,
                         text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@needs_blas
def test_blas_probe_is_answered_from_disk_in_a_later_process(tmp_path):
    cache = tmp_path / "cache"
    cold = _run(tmp_path, TW_CACHE_DIR=str(cache))
    assert cold["ok"] and cold["probes"] == 2  # f32 and f64, measured
    warm = _run(tmp_path, TW_CACHE_DIR=str(cache))
    assert warm["ok"] and warm["probes"] == 0  # nothing measured: the step came from disk
    assert warm["key"] == cold["key"]
    # another OpenBLAS kernel choice is another key: measured again
    other = _run(tmp_path, TW_CACHE_DIR=str(cache), OPENBLAS_CORETYPE="Haswell")
    assert other["ok"] and other["probes"] == 2
    # a damaged entry is deleted and measured again, never believed
    for entry in cache.rglob("*" + disk_cache.NOTE_SUFFIX):
        data = bytearray(entry.read_bytes())
        data[-1] ^= 0xFF
        entry.write_bytes(bytes(data))
    again = _run(tmp_path, TW_CACHE_DIR=str(cache))
    assert again["ok"] and again["probes"] == 2 and again["key"] == cold["key"]


@needs_blas
def test_blas_probe_key_follows_the_library_cpu_and_settings(monkeypatch, tmp_path):
    monkeypatch.setenv("TW_CACHE_DIR", str(tmp_path))
    base = executable._blas_probe_key("")
    assert base is not None and base == executable._blas_probe_key("")
    assert executable._blas_probe_key("2") != base
    monkeypatch.setenv("OPENBLAS_CORETYPE", "SkylakeX")
    assert executable._blas_probe_key("") != base
    monkeypatch.setenv("TW_CACHE_DIR", "off")
    assert executable._blas_probe_key("") is None  # no cache: always measured


def test_blas_thread_limits_are_applied_again_only_when_something_changed(monkeypatch):
    import threadpoolctl
    calls = []
    real = threadpoolctl.threadpool_info
    monkeypatch.setattr(threadpoolctl, "threadpool_info",
                        lambda: calls.append(1) or real())
    monkeypatch.setattr(threads, "_seen", None)
    threads.limit_blas_threads()
    assert len(calls) == 1
    threads.limit_blas_threads()
    threads.limit_blas_threads()
    assert len(calls) == 1  # same libraries, same setting: not asked again
    loaded = threads._loaded_libraries()
    assert loaded and any("python" in n or n == "" for n in loaded)
    monkeypatch.setattr(threads, "_loaded_libraries", lambda: (*loaded, "/new/libblas.so"))
    threads.limit_blas_threads()  # a library was loaded since: asked again
    assert len(calls) == 2
    monkeypatch.setenv("TW_BLAS_THREADS", "2")
    threads.limit_blas_threads()  # another setting: asked again
    assert len(calls) == 3


def test_llvm_pipeline_level_defaults_to_o2_and_keys_the_cache(monkeypatch):
    import ctypes

    from tensorweave.targets.cpu import jit
    ir_text = """
    define double @tw_test_opt_level(double %x) {
      %a = fmul double %x, 3.0
      %b = fadd double %a, 0.25
      ret double %b
    }
    """
    monkeypatch.delenv("TW_LLVM_OPT", raising=False)
    assert jit.opt_level() == 3
    keys, compiled = {}, {}
    for level in ("1", "2", "3"):
        monkeypatch.setenv("TW_LLVM_OPT", level)
        assert jit.opt_level() == int(level)
        keys[level] = jit.cache_key(ir_text)
        module = jit.compile_module(ir_text, ["tw_test_opt_level"])
        assert module is not compiled.get(str(int(level) - 1))  # not the other level's
        compiled[level] = module
        fn = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(
            module.address("tw_test_opt_level"))
        assert fn(1.5) == 1.5 * 3.0 + 0.25  # every level computes the same
    assert len(set(keys.values())) == 3  # code of one level is never loaded for another
    for bad, want in (("9", 3), ("0", 1), ("fast", 3)):
        monkeypatch.setenv("TW_LLVM_OPT", bad)
        assert jit.opt_level() == want
