"""Adversarial checks of the session's riskiest cpu-target changes (each test names the
commit it exercises): epilogue fusion (92eabef), step records (ccdcea4) and the aligned
result pool with non-temporal stores (ec24905, on the pool of e713ae1). Each test is a
case that would give a silent wrong answer if the change were wrong."""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.targets.cpu import allocator

ROOT = Path(__file__).resolve().parents[1]

BIG = allocator.MIN_BYTES // 4 + 1000  # float32 elements: results from the block pool


# ------------------------------------------------------------------ result pool (ec24905)

def test_a_view_of_a_pooled_result_survives_the_next_calls():
    """ec24905 / e713ae1: a result of 1 MiB or more is a view of a pool block. NumPy
    collapses a view's ``base`` to the memory's owner, so a view the caller keeps of a
    result (``y = f(x)[:10]``, ``f(x).reshape(...)``) did not count as a reference to the
    result: the next call reused the result's buffer (the step's spare results, the
    native dispatcher's refcount-1 check) and overwrote what the view shows."""
    f = tw.compile(lambda x, s: x * s, target="cpu")
    x = np.ones(BIG, np.float32)
    head = f(x, np.float32(2.0))[:10]
    square = f(x, np.float32(3.0))[:1024 * 256].reshape(512, 512)
    strided = f(x, np.float32(4.0))[::3]
    for s in (5.0, 6.0, 7.0, 8.0):
        assert f(x, np.float32(s))[0] == s  # (results dropped at once: reusable)
    gc.collect()
    np.testing.assert_array_equal(head, np.full(10, 2.0, np.float32))
    np.testing.assert_array_equal(square, np.full((512, 512), 3.0, np.float32))
    np.testing.assert_array_equal(strided, np.full(strided.shape, 4.0, np.float32))
    # once nothing shows a result any more, its buffer is reused (the fix keeps that)
    del head, square, strided
    y = f(x, np.float32(1.0))
    address = y.ctypes.data
    view = y[1:]
    del y
    z = f(x, np.float32(9.0))
    assert z.ctypes.data != address and view[0] == 1.0  # (held through its view)
    del view, z
    gc.collect()
    y = f(x, np.float32(1.0))
    address = y.ctypes.data
    del y
    assert f(x, np.float32(2.0)).ctypes.data == address


# ------------------------------------------------------- epilogues x step records (92eabef)

FUSED_ONLY = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tensorweave as tw
    from tensorweave.targets.cpu import jit

    rng = np.random.default_rng(0)
    if sys.argv[1] == "matmul":
        fn = lambda x, w, b: tw.nn.relu(tw.matmul(x, w) + b)
        shapes = [(8, 512), (512, 4096), (4096,)]
    else:  # a 1x1 convolution: one GEMM
        fn = lambda x, k, b: tw.nn.relu(tw.nn.conv2d(x, k, 1, "SAME") + b)
        shapes = [(1, 32, 32, 256), (1, 1, 256, 256), (256,)]
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    f = tw.compile(fn, target="cpu")
    got = f(*args)
    ex = f.get_concrete_function(*args).executable
    step = ex.native_step(args)
    ops = [a.node.op for a in step.plan.actions if a.node is not None] if step else []
    want = tw.compile(fn, target="reference")(*args)
    json.dump({"native": step is not None, "reason": ex.native_reason, "ops": ops,
               "close": bool(np.allclose(got, want, rtol=1e-4, atol=1e-4)),
               "compiles": jit.STATS.llvm_compiles}, sys.stdout)
""")


@pytest.mark.parametrize("product", ["matmul", "conv"])
def test_a_step_whose_only_blas_products_are_fused_runs_natively(tmp_path, product):
    """92eabef with ccdcea4: a FusedMatMul / FusedConv2D calls BLAS (`cx.gemm`) but
    `executable._MAY_CALL_BLAS` names only the unfused products, so the step record says
    ``uses_blas=False``: in a process where nothing registered the BLAS symbols yet, the
    step's code does not load (``undefined symbols: tw_blas_sgemm``) and the whole step
    falls back to the dataflow executor, cold or warm; the object code's key also holds
    ``no-blas`` instead of the BLAS probe's answer the GEMM splits depend on."""
    script = tmp_path / "fused_only.py"
    script.write_text(FUSED_ONLY)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TW_CACHE_DIR": str(tmp_path / "cache"),
           "TW_NUM_THREADS": "1"}
    for _ in range(2):  # a cold process, then a warm one (from the step record)
        out = subprocess.run([sys.executable, str(script), product], env=env, text=True,
                             capture_output=True, timeout=180, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        res = json.loads(out.stdout)
        assert res["close"]
        assert res["native"], res["reason"]
        assert any(op.startswith("Fused") for op in res["ops"]), res["ops"]


# ------------------------------------------- epilogues next to variable updates (92eabef)

def _variable_step(name: str, target: str, fusion: bool, monkeypatch) -> np.ndarray:
    """Three calls of a step that reads a variable `v` as the epilogue's residual and
    writes the fused result back into it, and of one whose product reads `w` before an
    assignment to `w` that the epilogue's bias reads after it; every value, joined."""
    from tensorweave.passes.epilogue import ENV
    monkeypatch.setenv(ENV, "1" if fusion else "0")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 48)).astype(np.float32)
    v = tw.Variable(rng.standard_normal((64, 48)).astype(np.float32), name=f"{name}_v")
    w = tw.Variable(rng.standard_normal((48, 48)).astype(np.float32), name=f"{name}_w")

    @tw.compile(target=target)
    def residual_into_itself(x):
        v.assign(tw.nn.relu(tw.matmul(x, w) + v))  # (v: a full operand and the target)
        return v.read_value() * 1.0

    @tw.compile(target=target)
    def product_before_update(x):
        p = tw.matmul(x, w)  # reads w as it was...
        w.assign(w * 2.0 + 1.0)
        return tw.nn.relu(p + tw.reduce_sum(w, axis=0))  # ... the bias, as it is now

    outs = [f(x) for _ in range(3) for f in (residual_into_itself, product_before_update)]
    if target == "cpu" and fusion:
        for f in (residual_into_itself, product_before_update):
            step = f.get_concrete_function(x).executable.native_step([x])
            assert "FusedMatMul" in [a.node.op for a in step.plan.actions if a.node]
    return np.concatenate([o.ravel() for o in outs])


def test_epilogue_operands_that_are_variables_being_updated(monkeypatch):
    """92eabef (and 894303b, the fused node in its cluster's place): the GEMM writes the
    product into the epilogue's carrier output before the epilogue reads its other
    operands, so a carrier that shared memory with one (the variable the step assigns,
    read as the residual; a variable snapshot the planner skipped because the product
    moved after the update) would lose it. Fused, unfused and the reference agree."""
    fused = _variable_step("fused", "cpu", True, monkeypatch)
    plain = _variable_step("plain", "cpu", False, monkeypatch)
    want = _variable_step("ref", "reference", False, monkeypatch)
    assert fused.tobytes() == plain.tobytes()
    np.testing.assert_allclose(fused, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("tail", ["mask", "cast_f64", "cast_i32"])
def test_an_epilogue_without_an_output_of_the_products_dtype_stays_native(tail):
    """92eabef: the pass fuses a MatMul with any elementwise cluster, but the lowering
    needs an output of the product's dtype to hold the product until the epilogue runs
    (its carrier). With only a mask (``x @ w > 0``) or a cast to another dtype after the
    product, the FusedMatMul has no lowering: the native step calls back into Python for
    its reference kernel on every call (slower than the unfused step) and `tensorweave
    aot` refuses the function ("no native lowering for FusedMatMul"), which it compiled
    before the stage existed."""
    tails = {"mask": lambda p: p > 0.0,
             "cast_f64": lambda p: tw.cast(p, tw.float64) + 1.0,
             "cast_i32": lambda p: tw.cast(tw.nn.relu(p), tw.int32)}
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w = rng.standard_normal((16, 12)).astype(np.float32)

    def fn(x, w):
        return tails[tail](tw.matmul(x, w))
    f = tw.compile(fn, target="cpu")
    got = f(x, w)
    np.testing.assert_array_equal(got, tw.compile(fn, target="reference")(x, w))
    step = f.get_concrete_function(x, w).executable.native_step([x, w])
    assert step is not None and not step.plan.callback_nodes, {
        k: n.op for k, n in step.plan.callback_nodes.items()}


def test_a_scaled_product_returned_as_a_result_is_fused():
    """92eabef: the pass leaves alone "a lone Mul read only by variable updates" (the
    step scales those in the update's own pass), but `_scales_an_update` checks
    ``all(...)`` over the Mul's readers, which is true when no node reads it: a scaled
    product that is a result of the function (``x @ w * 2``) is never fused."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w = rng.standard_normal((16, 12)).astype(np.float32)

    def fn(x, w):
        return tw.matmul(x, w) * 2.0
    f = tw.compile(fn, target="cpu")
    np.testing.assert_allclose(f(x, w), (x @ w) * 2, rtol=1e-5, atol=1e-5)
    step = f.get_concrete_function(x, w).executable.native_step([x, w])
    assert "FusedMatMul" in [a.node.op for a in step.plan.actions if a.node is not None]


# ------------------------------------------------------------------ step records (c1d2ce3)

ARENA_STEP = textwrap.dedent("""
    import numpy as np
    import tensorweave as tw

    @tw.compile(target="cpu")
    def f(h0, xs, w):
        hs = tw.scan(lambda h, x: tw.tanh(tw.matmul(h, w) + x), xs, initializer=h0)
        return tw.gradients(tw.reduce_sum(hs), [w])[0]

    f(np.ones((2, 4), np.float32), np.ones((3, 2, 4), np.float32),
      np.full((4, 4), 0.1, np.float32))
""")


def test_a_step_with_loop_stacks_exits_quietly(tmp_path):
    """c1d2ce3 (a step loaded from its record imports no code generator) moved
    ``from .stacks import ARENA_OFFSET`` into `NativeStep.__del__`; a step whose loops
    keep gradient stacks in its workspaces' arenas (any `tw.scan` gradient) is often
    collected at interpreter exit, when imports fail: every such program ends with
    ``Exception ignored in: NativeStep.__del__ ... ImportError`` on stderr."""
    script = tmp_path / "arena.py"
    script.write_text(ARENA_STEP)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TW_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, str(script)], env=env, text=True,
                         capture_output=True, timeout=180, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "Exception ignored" not in out.stderr, out.stderr


EDITED_MIDWAY = textwrap.dedent("""
    import json, pathlib, sys
    import numpy as np
    import tensorweave as tw

    @tw.compile(target="cpu")
    def f(x, w, b):
        return tw.nn.relu(tw.matmul(x, w) + b)

    args = [np.ones((4, 8), np.float32), np.ones((8, 6), np.float32),
            np.ones(6, np.float32)]
    if sys.argv[1] == "edit":
        # the package's source changes while this process runs its old code (a
        # developer's edit, a checkout): the epilogue pass fuses no product from now on
        path = pathlib.Path(tw.__file__).parent / "passes" / "epilogue.py"
        text = path.read_text()
        edited = text.replace('PRODUCTS = {"Conv2D": "FusedConv2D", "MatMul": "FusedMatMul"}',
                              "PRODUCTS = {}")
        assert edited != text, "the line this test edits is gone"
        path.write_text(edited)
    f(*args)
    step = f.get_concrete_function(*args).executable.native_step(args)
    try:
        ops = [a.node.op for a in step.plan.actions if a.node is not None]
    except Exception as e:  # noqa: BLE001
        ops = [type(e).__name__ + ": " + str(e)]
    print(json.dumps({"ops": ops}))
""")


def test_a_record_made_by_code_older_than_the_source_is_not_reused(tmp_path):
    """ccdcea4: the record key holds `source_fingerprint()` (every file's size and
    mtime), computed on first use and then cached. A process that imported the package,
    then saw its source edited before its first call, stores records made by its old
    code under the *new* source's key; the next process, running the new code, loads
    them (here: a FusedMatMul step although the edited pass fuses nothing)
    and meets a plan that does not match its record. Python's own ``.pyc`` check, which
    the docstring cites, compares at import time."""
    pkg = tmp_path / "pkg"
    shutil.copytree(ROOT / "tensorweave", pkg / "tensorweave",
                    ignore=shutil.ignore_patterns("__pycache__"))
    script = tmp_path / "edited.py"
    script.write_text(EDITED_MIDWAY)
    env = {k: v for k, v in os.environ.items() if k != "TW_EPILOGUE_FUSION"}
    env.update(PYTHONPATH=str(pkg), TW_CACHE_DIR=str(tmp_path / "cache"))
    runs = []
    for mode in ("edit", "after"):
        out = subprocess.run([sys.executable, str(script), mode], env=env, text=True,
                             capture_output=True, timeout=180, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        runs.append(json.loads(out.stdout)["ops"])
    assert "FusedMatMul" in runs[0]  # (the old code, which fuses)
    assert runs[1] == ["MatMul", "Fusion"], runs[1]  # the new code's own plan
