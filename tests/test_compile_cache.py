"""The cpu JIT's on-disk compile cache.

A second process that runs the same function loads the object code from disk and runs no
LLVM compile, with the same results (a step that calls BLAS and libm, so external symbols
are resolved on load); entries that are truncated, altered, not object code, or that do
not load (missing function, undefined symbol) are dropped and rebuilt, never trusted; a
turned-off cache writes nothing; an unwritable directory only turns writing off."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import llvmlite.binding as llvm
import pytest

from tensorweave.targets.cpu import disk_cache, jit

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import tensorweave as tw
    from tensorweave.targets.cpu import jit

    @tw.compile(target="cpu")
    def f(x, w):
        return tw.tanh(tw.matmul(x, w)) + tw.reduce_sum(tw.exp(x), axis=1, keepdims=True)

    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    w = np.linspace(0, 2, 20, dtype=np.float32).reshape(4, 5)
    start = time.perf_counter()
    y = f(x, w)
    first_call = time.perf_counter() - start
    json.dump({"stats": vars(jit.STATS), "result": y.tolist(), "first_call": first_call},
              sys.stdout)
""")


def run_script(tmp_path: Path, **env: str) -> dict:
    """Run SCRIPT in a fresh interpreter with `env` on top of ours; its JSON report."""
    script = tmp_path / "cached_fn.py"
    script.write_text(SCRIPT)
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    out = subprocess.run([sys.executable, str(script)], env=full_env, capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def entries(directory: Path) -> list[Path]:
    """The cache entries under `directory` (any depth)."""
    return sorted(directory.rglob("*" + disk_cache.SUFFIX))


def all_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file())


# ------------------------------------------------------------------ across processes

def test_second_process_loads_from_disk_without_llvm(tmp_path):
    cache = tmp_path / "cache"
    cold = run_script(tmp_path, TW_CACHE_DIR=str(cache))
    assert cold["stats"]["llvm_compiles"] >= 1
    assert cold["stats"]["disk_writes"] == cold["stats"]["llvm_compiles"]
    assert cold["stats"]["disk_hits"] == 0
    stored = entries(cache)
    assert len(stored) == cold["stats"]["disk_writes"]
    # the step calls BLAS (registered with llvm.add_symbol) and libm: resolved on load
    needed = {s for p in stored for s in jit.undefined_symbols(disk_cache.decode(
        p.name[:-len(disk_cache.SUFFIX)], p.read_bytes())) or ()}
    assert "tw_blas_sgemm" in needed, needed

    warm = run_script(tmp_path, TW_CACHE_DIR=str(cache))
    assert warm["stats"]["llvm_compiles"] == 0
    assert warm["stats"]["disk_hits"] == cold["stats"]["misses"]
    assert warm["stats"]["disk_misses"] == warm["stats"]["disk_errors"] == 0
    assert warm["result"] == cold["result"]  # bit for bit: the same object code
    assert entries(cache) == stored


def test_truncated_entries_in_a_later_process_are_rebuilt(tmp_path):
    cache = tmp_path / "cache"
    cold = run_script(tmp_path, TW_CACHE_DIR=str(cache))
    for p in entries(cache):
        data = p.read_bytes()
        p.write_bytes(data[:len(data) // 2])
    again = run_script(tmp_path, TW_CACHE_DIR=str(cache))
    assert again["result"] == cold["result"]
    assert again["stats"]["disk_errors"] == again["stats"]["llvm_compiles"] == len(entries(cache))
    assert again["stats"]["disk_hits"] == 0
    warm = run_script(tmp_path, TW_CACHE_DIR=str(cache))  # the rebuilt entries are good
    assert warm["stats"]["llvm_compiles"] == 0 and warm["stats"]["disk_errors"] == 0
    assert warm["result"] == cold["result"]


@pytest.mark.parametrize("env", [{"TW_CACHE_DIR": "off"}, {"TW_CACHE_DIR": "OFF"},
                                 {"TW_DISABLE_CACHE": "1"}])
def test_disabled_cache_writes_nothing(tmp_path, env):
    home = tmp_path / "home"
    home.mkdir()
    base = {"HOME": str(home), "XDG_CACHE_HOME": str(home / "xdg"),
            "TW_CACHE_DIR": str(home / "explicit")}
    out = run_script(tmp_path, **{**base, **env})
    assert out["stats"]["llvm_compiles"] >= 1
    assert out["stats"]["disk_writes"] == out["stats"]["disk_hits"] == 0
    assert out["stats"]["disk_misses"] == 0  # not even looked up
    assert all_files(home) == []


# ------------------------------------------------------------------ in this process

EXTERNAL = "tw_test_cache_external"
IR = """
declare float @expf(float)
declare void @{ext}(i32*)

define float @cached_fn_{tag}(float %x, i32* %p) {{
  call void @{ext}(i32* %p)
  %y = call float @expf(float %x)
  %z = fadd float %y, {tag}.0
  ret float %z
}}
"""

CallbackType = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_int32))
FnType = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float, ctypes.POINTER(ctypes.c_int32))


@CallbackType
def _external(p):  # the external symbol the test modules call
    p[0] = 42


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A private cache directory for this test, and the external symbol registered."""
    monkeypatch.setenv("TW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TW_DISABLE_CACHE", raising=False)
    jit.host_info()
    llvm.add_symbol(EXTERNAL, ctypes.cast(_external, ctypes.c_void_p).value)
    return tmp_path / "cache"


_tags = iter(range(1, 10**6))


def fresh_ir(ext: str = EXTERNAL) -> tuple[str, str]:
    """A module no other test compiled (so never in memory yet) and its function name."""
    tag = next(_tags) + os.getpid() % 1000 * 1000
    return IR.format(ext=ext, tag=tag), f"cached_fn_{tag}"


def run(ir_text: str, name: str) -> tuple[float, int]:
    """Compile (from memory, disk or LLVM) and call: (exp(1) + tag, what the callback
    wrote)."""
    module = jit.compile_module(ir_text, [name])
    out = ctypes.c_int32(0)
    return FnType(module.address(name))(1.0, ctypes.byref(out)), out.value


def expected(name: str) -> tuple[float, int]:
    tag = float(name.rsplit("_", 1)[1])
    return pytest.approx(2.7182817 + tag, rel=1e-6), 42


def forget(ir_text: str) -> None:
    """Drop `ir_text` from the in-memory cache so the next compile goes to disk."""
    jit.forget(ir_text)


def stats() -> dict:
    return dict(vars(jit.STATS))


def delta(before: dict) -> dict:
    return {k: v - before[k] for k, v in stats().items() if isinstance(v, int)}


def test_the_test_suite_uses_a_temporary_cache():
    assert Path.home() not in disk_cache.cache_dir().parents


def test_external_symbol_module_loads_from_disk(cache):
    ir_text, name = fresh_ir()
    before = stats()
    assert run(ir_text, name) == expected(name)
    assert delta(before)["llvm_compiles"] == 1 and delta(before)["disk_writes"] == 1
    forget(ir_text)
    before = stats()
    assert run(ir_text, name) == expected(name)
    assert delta(before) == {**{k: 0 for k in delta(before)},
                             "misses": 1, "disk_hits": 1}
    assert jit.compile_module(ir_text, [name]).module is None  # from memory, from disk


def corrupt_truncate(data: bytes, key: str) -> bytes:
    return data[:-7]


def corrupt_header_only(data: bytes, key: str) -> bytes:
    return data[:10]


def corrupt_empty(data: bytes, key: str) -> bytes:
    return b""


def corrupt_flip_payload(data: bytes, key: str) -> bytes:
    i = len(data) * 3 // 4
    return data[:i] + bytes([data[i] ^ 0x10]) + data[i + 1:]


def corrupt_flip_magic(data: bytes, key: str) -> bytes:
    return bytes([data[0] ^ 1]) + data[1:]


def corrupt_longer(data: bytes, key: str) -> bytes:
    return data + b"\0"


def corrupt_other_version(data: bytes, key: str) -> bytes:
    return data[:8] + (disk_cache.FORMAT_VERSION + 1).to_bytes(4, "little") + data[12:]


def valid_garbage(data: bytes, key: str) -> bytes:
    """Checksums right, payload not an object file (LLVM would crash on it)."""
    return disk_cache.encode(key, b"\x7fELF\x02\x01" + b"garbage" * 50)


def valid_but_wrong_function(data: bytes, key: str) -> bytes:
    """A real object file that lacks the function asked for."""
    other, _ = fresh_ir()
    module = jit.parse_and_optimize(other)
    return disk_cache.encode(key, jit.target_machine().emit_object(module))


def valid_but_undefined_symbol(data: bytes, key: str) -> bytes:
    """A real object file whose code calls a symbol this process does not define (LLVM
    would abort the process)."""
    payload = disk_cache.decode(key, data)
    unknown = b"tw_test_cache_missing_"  # as long as EXTERNAL: the layout stays the same
    assert len(unknown) == len(EXTERNAL) and EXTERNAL.encode() in payload
    return disk_cache.encode(key, payload.replace(EXTERNAL.encode(), unknown))


CORRUPTIONS = [corrupt_truncate, corrupt_header_only, corrupt_empty, corrupt_flip_payload,
               corrupt_flip_magic, corrupt_longer, corrupt_other_version, valid_garbage,
               valid_but_wrong_function, valid_but_undefined_symbol]


@pytest.mark.parametrize("corrupt", CORRUPTIONS, ids=lambda f: f.__name__)
def test_bad_entry_is_detected_deleted_and_rebuilt(cache, corrupt, caplog):
    ir_text, name = fresh_ir()
    run(ir_text, name)
    (path,) = entries(cache)
    key = path.name[:-len(disk_cache.SUFFIX)]
    good = path.read_bytes()
    bad = corrupt(good, key)
    assert bad != good
    path.write_bytes(bad)
    forget(ir_text)
    before = stats()
    with caplog.at_level("DEBUG", logger="tensorweave.targets.cpu"):
        assert run(ir_text, name) == expected(name)
    d = delta(before)
    assert (d["disk_hits"], d["disk_misses"], d["llvm_compiles"], d["disk_writes"]) == (0, 1, 1, 1)
    assert any(key in r.getMessage() for r in caplog.records if r.levelname == "DEBUG")
    assert path.read_bytes() == good  # rebuilt: the same code as before
    forget(ir_text)
    before = stats()
    assert run(ir_text, name) == expected(name)
    assert delta(before)["disk_hits"] == 1


def test_unreadable_entry_is_a_miss(cache):
    ir_text, name = fresh_ir()
    run(ir_text, name)
    (path,) = entries(cache)
    path.unlink()
    path.mkdir()  # reading it fails with an OSError other than "not found"
    forget(ir_text)
    assert run(ir_text, name) == expected(name)


def test_undefined_symbol_in_a_fresh_compile_is_an_error_not_an_abort(cache):
    from tensorweave.errors import CompileError
    ir_text, name = fresh_ir("tw_test_cache_never_defined")
    with pytest.raises(CompileError, match="tw_test_cache_never_defined"):
        run(ir_text, name)
    assert entries(cache) == []


def test_unwritable_directory_only_turns_writing_off(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("TW_CACHE_DIR", str(blocker / "cache"))
    jit.host_info()
    llvm.add_symbol(EXTERNAL, ctypes.cast(_external, ctypes.c_void_p).value)
    for _ in range(2):
        ir_text, name = fresh_ir()
        before = stats()
        assert run(ir_text, name) == expected(name)
        assert delta(before)["disk_writes"] == 0 and delta(before)["llvm_compiles"] == 1


def test_entries_are_written_atomically(cache, monkeypatch):
    ir_text, name = fresh_ir()
    run(ir_text, name)
    assert [p.name for p in all_files(cache)] == [p.name for p in entries(cache)]  # no temps
    assert (os.stat(disk_cache.cache_dir()).st_mode & 0o777) == 0o700

    def crash(*args):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", crash)
    disk_cache._unwritable.clear()
    assert not disk_cache.store("0" * 64, b"payload")
    assert len(all_files(cache)) == 1  # the temporary file was removed
    disk_cache._unwritable.clear()


def test_cache_directory_from_the_environment(monkeypatch, tmp_path):
    for var in ("TW_CACHE_DIR", "TW_DISABLE_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert disk_cache.cache_root() == tmp_path / ".cache" / "tensorweave"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert disk_cache.cache_root() == tmp_path / "xdg" / "tensorweave"
    monkeypatch.setenv("TW_CACHE_DIR", str(tmp_path / "mine"))
    assert disk_cache.cache_root() == tmp_path / "mine"
    assert disk_cache.cache_dir().parent == tmp_path / "mine"
    monkeypatch.setenv("TW_DISABLE_CACHE", "0")
    assert disk_cache.cache_root() == tmp_path / "mine"
    monkeypatch.setenv("TW_DISABLE_CACHE", "1")
    assert disk_cache.cache_root() is None
    monkeypatch.delenv("TW_DISABLE_CACHE")
    monkeypatch.setenv("TW_CACHE_DIR", "off")
    assert disk_cache.cache_root() is None and disk_cache.cache_dir() is None


def test_key_covers_flag_and_text():
    ir_text, _ = fresh_ir()
    keys = {jit.cache_key(ir_text), jit.cache_key(ir_text, loop_vectorize=True),
            jit.cache_key(ir_text + "\n")}
    assert len(keys) == 3
    assert jit.cache_key(ir_text) == jit.cache_key(ir_text)


def test_keyed_modules_skip_generating_ir_when_cached(cache):
    """`compile_keyed` (what native steps use) looks up the cache by a cheap key, so a
    hit neither generates the LLVM IR nor runs LLVM; the key covers the code generator's
    own source."""
    ir_text, name = fresh_ir()
    key = f"test step {name}"
    built = []

    def build() -> str:
        built.append(1)
        return ir_text

    module = jit.compile_keyed(key, build, [name])
    assert len(built) == 1
    out = ctypes.c_int32(0)
    assert FnType(module.address(name))(1.0, ctypes.byref(out)) == expected(name)[0]
    jit.clear_cache()  # forget it in memory: the next lookup goes to disk
    before = stats()
    module = jit.compile_keyed(key, build, [name])
    assert len(built) == 1, "a disk hit must not build the IR"
    assert delta(before)["disk_hits"] == 1 and delta(before)["llvm_compiles"] == 0
    assert FnType(module.address(name))(1.0, ctypes.byref(out)) == expected(name)[0]
    assert len(jit.codegen_fingerprint()) == 64
