"""Step records (`targets/cpu/plan_cache.py`): a warm first call skips the pipeline, the
planner and printing the graph, and is never stale.

A later process (or a new trace of the same graph) builds its native step from the
record and the object code alone, with bitwise the same results; the record's key
changes with the graph (ops, attributes, constants, shapes, dtypes, source lines), the
compile's stages, placement settings, ``TW_*`` switches, the package's source and the
object code's own inputs; a truncated or altered record is deleted and rebuilt; graphs
with user-registered ops get no record; what needs the plan (errors naming the op and
line, reference-kernel callbacks) rebuilds it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.compiler.printer import graph_fingerprint
from tensorweave.targets.cpu import executable, plan_cache

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tensorweave as tw
    from tensorweave.compiler import pipeline, printer
    from tensorweave.targets.cpu import executable, jit, plan_cache

    calls = {"pipeline": 0, "plan": 0, "print": 0}

    def counting(module, name, what):
        real = getattr(module, name)
        def wrapper(*a, **k):
            calls[what] += 1
            return real(*a, **k)
        setattr(module, name, wrapper)

    counting(pipeline, "run_stages", "pipeline")
    counting(executable, "plan_step", "plan")
    counting(printer, "print_graph", "print")

    w = tw.Variable(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), name="w")

    @tw.compile(target="cpu")
    def train(x, y):
        logits = tw.matmul(x, w)
        loss = tw.reduce_mean(tw.nn.softmax_cross_entropy_with_logits(labels=y,
                                                                      logits=logits))
        w.assign_sub(0.5 * tw.gradients(loss, [w])[0])
        return loss, tw.exp(logits) * 2.0

    x = np.linspace(0, 1, 20, dtype=np.float32).reshape(5, 4)
    y = np.eye(3, dtype=np.float32)[[0, 1, 2, 0, 1]]
    first = train(x, y)
    second = train(x, y)
    json.dump({"calls": calls, "stats": vars(jit.STATS),
               "results": [[r.tolist() for r in first], [r.tolist() for r in second]],
               "w": w.numpy().tolist(),
               "codegen": sorted(m for m in ("step", "lowering", "lowerings", "fused",
                                             "codegen", "kernels")
                                  if "tensorweave.targets.cpu." + m in sys.modules),
               "source": plan_cache.source_fingerprint()},
              sys.stdout)
""")


def run_script(tmp_path: Path, cache: Path, **env: str) -> dict:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "TW_CACHE_DIR": str(cache), **env}
    out = subprocess.run([sys.executable, str(script)], env=full_env, capture_output=True,
                         text=True, timeout=180, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def run_warm(tmp_path: Path, cache: Path, cold: dict, **env: str) -> dict:
    """`run_script` again; rerun (up to twice) when a source file of the package changed
    in between (the record's key covers the source: in a checkout others edit, a miss)."""
    for _ in range(3):
        out = run_script(tmp_path, cache, **env)
        if out["source"] == cold["source"]:
            return out
        cold = out
    pytest.skip("the package's source kept changing during the test")


def records(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*" + plan_cache.RECORD_SUFFIX))


# ------------------------------------------------------------------ across processes

def test_warm_process_skips_pipeline_planner_and_printing(tmp_path):
    cache = tmp_path / "cache"
    cold = run_script(tmp_path, cache)
    assert cold["calls"]["pipeline"] >= 1 and cold["calls"]["plan"] >= 1
    assert len(records(cache)) == 1
    warm = run_warm(tmp_path, cache, cold)
    assert warm["calls"] == {"pipeline": 0, "plan": 0, "print": 0}
    assert warm["stats"]["llvm_compiles"] == 0 and warm["stats"]["disk_hits"] >= 1
    assert warm["codegen"] == []  # nothing imported that only planning or codegen needs
    assert "step" in cold["codegen"]
    # bitwise the same losses, products and variable updates
    assert warm["results"] == cold["results"] and warm["w"] == cold["w"]


def test_warm_process_with_other_switches_misses(tmp_path):
    cache = tmp_path / "cache"
    run_script(tmp_path, cache)
    for env in ({"TW_LLVM_OPT": "3"}, {"TW_NUM_THREADS": "1"}, {"TW_BLAS_THREADS": "2"}):
        before = len(records(cache))
        out = run_script(tmp_path, cache, **env)
        assert out["calls"]["plan"] >= 1, env
        assert len(records(cache)) == before + 1, env


def test_truncated_record_in_a_later_process_is_rebuilt(tmp_path):
    cache = tmp_path / "cache"
    cold = run_script(tmp_path, cache)
    (rec,) = records(cache)
    good = rec.read_bytes()
    rec.write_bytes(good[:-7])
    again = run_script(tmp_path, cache)
    if again["source"] != cold["source"]:
        pytest.skip("the package's source changed during the test")
    assert again["calls"]["plan"] >= 1 and again["results"] == cold["results"]
    assert records(cache) == [rec] and rec.read_bytes() == good  # deleted, written again
    warm = run_warm(tmp_path, cache, again)
    assert warm["calls"]["plan"] == 0 and warm["results"] == cold["results"]


# ------------------------------------------------------------------ in one process

def _f(x, y):
    return tw.tanh(tw.matmul(x, y) * 1.5) + tw.reduce_sum(x, axis=1, keepdims=True)


def _count_plans(monkeypatch) -> list[int]:
    count = [0]
    real = executable.plan_step

    def counting(graph):
        count[0] += 1
        return real(graph)
    monkeypatch.setattr(executable, "plan_step", counting)
    return count


def test_new_trace_of_the_same_graph_uses_the_record(monkeypatch):
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    y = np.linspace(0, 2, 20, dtype=np.float32).reshape(4, 5)
    plans = _count_plans(monkeypatch)
    expected = tw.compile(_f, target="cpu")(x, y)
    assert plans[0] == 1
    again = tw.compile(_f, target="cpu")(x, y)
    assert plans[0] == 1  # from the record
    np.testing.assert_array_equal(again, expected)
    ref = tw.compile(_f, target="reference")(x, y)
    np.testing.assert_allclose(again, ref, rtol=1e-5, atol=1e-6)


def _key(fn, *arrays, stages=None, target_graph=None):
    """The record key of `fn`'s trace for `arrays` (as `CpuExecutable` computes it)."""
    g = tw.compile(fn, target="cpu").get_concrete_function(*arrays).graph
    from tensorweave.compiler.pipeline import compile_stages
    return plan_cache.record_key(target_graph or g, stages or compile_stages("cpu"), arrays,
                                 executable._code_prefix())


X = np.ones((3, 4), np.float32)
Y = np.ones((4, 5), np.float32)


def test_key_follows_the_graph_shapes_and_dtypes():
    base = _key(_f, X, Y)
    assert base is not None and base == _key(_f, X, Y)
    # another attribute value, another constant, another op, another shape, dtype
    assert _key(lambda x, y: tw.tanh(tw.matmul(x, y) * 1.5)
                + tw.reduce_sum(x, axis=0, keepdims=True)[:, :1], X, Y) != base
    assert _key(lambda x, y: tw.tanh(tw.matmul(x, y) * 1.25)
                + tw.reduce_sum(x, axis=1, keepdims=True), X, Y) != base
    assert _key(lambda x, y: tw.sigmoid(tw.matmul(x, y) * 1.5)
                + tw.reduce_sum(x, axis=1, keepdims=True), X, Y) != base
    assert _key(_f, np.ones((2, 4), np.float32), Y) != base
    assert _key(_f, X.astype(np.float64), Y.astype(np.float64)) != base


def test_key_follows_source_lines():
    def a(x, y):
        return tw.matmul(x, y)

    def b(x, y):

        return tw.matmul(x, y)
    b.__name__ = a.__name__ = "same"
    ga = tw.compile(a, target="cpu").get_concrete_function(X, Y).graph
    gb = tw.compile(b, target="cpu").get_concrete_function(X, Y).graph
    assert graph_fingerprint(ga) != graph_fingerprint(gb)


def test_key_follows_stages_placement_env_source_and_code_inputs(monkeypatch):
    base = _key(_f, X, Y)
    assert _key(_f, X, Y, stages=["traced", "optimized"]) != base
    tw.config.set_soft_device_placement(False)
    try:
        assert _key(_f, X, Y) != base
    finally:
        tw.config.set_soft_device_placement(True)
    assert _key(_f, X, Y) == base
    for var, value in (("TW_LLVM_OPT", "3"), ("TW_NUM_THREADS", "1"),
                       ("TW_LOWER_CONTROL_FLOW", "1"), ("OPENBLAS_CORETYPE", "Haswell")):
        monkeypatch.setenv(var, value)
        assert _key(_f, X, Y) != base, var
        monkeypatch.delenv(var)
    monkeypatch.setenv("TW_CACHE_DIR", os.environ["TW_CACHE_DIR"])  # where, not what
    assert _key(_f, X, Y) == base
    monkeypatch.setattr(plan_cache, "source_fingerprint", lambda: "edited")
    assert _key(_f, X, Y) != base
    monkeypatch.undo()
    monkeypatch.setattr(executable, "_code_prefix", lambda: "data_offset=0 threads=99")
    assert _key(_f, X, Y) != base


def test_key_follows_each_stages_passes(monkeypatch):
    from tensorweave.compiler import pipeline
    base = _key(_f, X, Y)
    optimized = pipeline._STAGES["optimized"]
    monkeypatch.setitem(pipeline._STAGES, "optimized", optimized[:-1])  # a pass left out
    assert _key(_f, X, Y) not in (None, base)
    monkeypatch.setitem(pipeline._STAGES, "optimized", optimized + [lambda g: None])
    assert _key(_f, X, Y) is None  # a pass from outside tensorweave: no record
    monkeypatch.undo()
    assert _key(_f, X, Y) == base


def test_source_fingerprint_follows_every_file(tmp_path):
    (tmp_path / "sub").mkdir()
    f = tmp_path / "sub" / "m.py"
    f.write_text("x = 1\n")
    first = plan_cache.source_fingerprint(str(tmp_path))
    plan_cache.source_fingerprint.cache_clear()
    f.write_text("x = 22\n")  # size
    second = plan_cache.source_fingerprint(str(tmp_path))
    assert second != first
    plan_cache.source_fingerprint.cache_clear()
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # modification time
    assert plan_cache.source_fingerprint(str(tmp_path)) != second
    plan_cache.source_fingerprint.cache_clear()


def test_no_key_when_the_cache_is_off_or_an_attribute_has_no_canonical_form(monkeypatch):
    g = tw.compile(_f, target="cpu").get_concrete_function(X, Y).graph
    node = next(n for n in g.nodes if n.op == "MatMul")
    node.attrs["_opaque"] = object()
    assert graph_fingerprint(g) is None
    del node.attrs["_opaque"]
    assert graph_fingerprint(g) is not None
    monkeypatch.setenv("TW_CACHE_DIR", "off")
    assert _key(_f, X, Y) is None


def test_fingerprint_is_canonical_for_attribute_types():
    g = tw.compile(_f, target="cpu").get_concrete_function(X, Y).graph
    node = next(n for n in g.nodes if n.op == "MatMul")
    seen = set()
    for value in (1, True, 1.0, -0.0, 0.0, "1", (1,), [1], np.float32(1), np.float64(1),
                  np.array([1], np.int32), np.array([1], np.int64), np.array([[1]], np.int32),
                  None):
        node.attrs["_probe"] = value
        seen.add(graph_fingerprint(g))
    # all distinct but np.float64(1) and 1.0 (a float subclass, printed alike too)
    assert len(seen) == 13


def test_user_registered_op_gets_no_record():
    from tensorweave.compiler.registry import def_op, get_op
    from tensorweave.frontend.building import apply_op
    name = "FirstCallCacheUserOp"
    try:
        get_op(name)
    except Exception:  # noqa: BLE001 -- not registered yet
        op = def_op(name, ["x"], {})
        op.infer(lambda t: t)
        op.kernel("reference")(lambda x: x * 3)
    g = tw.compile(lambda x: apply_op(name, [x])[0] + 1.0, target="cpu").get_concrete_function(
        X).graph
    from tensorweave.compiler.pipeline import compile_stages
    assert plan_cache.record_key(g, compile_stages("cpu"), [X], executable._code_prefix()) \
        is None


def test_truncated_or_altered_record_is_deleted_and_rebuilt(monkeypatch):
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4) + 0.125
    y = np.linspace(0, 2, 20, dtype=np.float32).reshape(4, 5)
    key = _key(_f, x, y)
    expected = tw.compile(_f, target="cpu")(x, y)
    path = next(Path(os.environ["TW_CACHE_DIR"]).rglob(key + plan_cache.RECORD_SUFFIX))
    good = path.read_bytes()
    plans = _count_plans(monkeypatch)
    for bad in (good[:-3], good[:40], good[:-1] + bytes([good[-1] ^ 1])):
        path.write_bytes(bad)
        np.testing.assert_array_equal(tw.compile(_f, target="cpu")(x, y), expected)
        assert path.read_bytes() == good  # deleted, then written again
    assert plans[0] == 3


def test_record_payload_checks():
    rec = plan_cache.StepRecord("k", [(np.dtype("f4"), (2,))], [((2,), np.dtype("f4"))],
                                [np.arange(3, dtype=np.float64)], ["v"],
                                [(np.dtype("f4"), (2,))], ["read"], 64, False, False, True,
                                "no-blas", False)
    payload = plan_cache.encode(rec)
    back = plan_cache.decode(payload)
    np.testing.assert_array_equal(back.consts[0], rec.consts[0])
    assert back.arg_specs == rec.arg_specs and back.var_names == ["v"]
    for bad in (payload[:-1], payload + b"\0", payload[:3], b"{}"):
        with pytest.raises(ValueError):
            plan_cache.decode(bad)


def test_errors_from_a_step_made_from_a_record_name_the_op_and_line(monkeypatch):
    def gather(params, idx):
        return tw.gather(params, idx) * 2.0

    params = np.arange(6, dtype=np.float32)
    good = np.array([1, 2], np.int32)
    tw.compile(gather, target="cpu")(params, good)
    plans = _count_plans(monkeypatch)
    fresh = tw.compile(gather, target="cpu")
    np.testing.assert_array_equal(fresh(params, good), params[good] * 2)
    assert plans[0] == 0
    with pytest.raises(tw.errors.InvalidArgumentError) as e:
        fresh(params, np.array([1, 9], np.int32))
    assert "Gather" in str(e.value) and "test_first_call_cache.py" in str(e.value)
    assert plans[0] == 1  # the plan was rebuilt to name the op


def test_reference_kernel_callbacks_from_a_record(monkeypatch):
    def noisy(x):
        return x + tw.random.uniform([3, 4], seed=7)

    expected = tw.compile(noisy, target="cpu")(X)
    plans = _count_plans(monkeypatch)
    fresh = tw.compile(noisy, target="cpu")
    np.testing.assert_array_equal(fresh(X), expected)
    assert plans[0] == 1  # rebuilt for the node that runs its reference kernel


def test_record_whose_object_code_is_gone_is_planned_again(monkeypatch):
    from tensorweave.targets.cpu import disk_cache, jit
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4) - 0.25
    y = np.linspace(0, 2, 20, dtype=np.float32).reshape(4, 5)
    expected = tw.compile(_f, target="cpu")(x, y)
    jit.clear_cache()
    for entry in Path(os.environ["TW_CACHE_DIR"]).rglob("*" + disk_cache.SUFFIX):
        entry.unlink()
    plans = _count_plans(monkeypatch)
    np.testing.assert_array_equal(tw.compile(_f, target="cpu")(x, y), expected)
    assert plans[0] == 1  # the record alone is not trusted to pair with new code
