"""A step's module compiled in parts on several threads (`jit.compile_threads`,
`ir_split.split_module`, `jit._compile_parts`) computes what the whole module computes,
bit for bit; its object files link in one engine and go to the disk cache as one entry;
a part that fails is a clear error with every thread joined; ``TW_COMPILE_THREADS=1``
compiles modules whole, under keys of their own."""

from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.errors import CompileError
from tensorweave.targets.cpu import disk_cache, ir_split, jit, plan_cache
from tests.test_cold_compile import _cnn_run, _mlp_run

pytestmark = pytest.mark.skipif(not jit._threads_supported(),
                                reason="this llvmlite's calls cannot run without its lock")


def _w2_run() -> list[np.ndarray]:
    """The peers' W2 (MLP 784-1024-1024-10, batch 256, sparse softmax cross-entropy, SGD):
    three steps' losses and the variables after them."""
    rng = np.random.default_rng(11)
    x = rng.random((256, 784), dtype=np.float32)
    y = rng.integers(0, 10, 256).astype(np.int32)
    shapes = [(784, 1024), (1024,), (1024, 1024), (1024,), (1024, 10), (10,)]
    vs = [tw.Variable((rng.standard_normal(s) * 0.05).astype(np.float32)) for s in shapes]

    @tw.compile(target="cpu")
    def step(x, y):
        h = tw.nn.relu(tw.matmul(x, vs[0]) + vs[1])
        h = tw.nn.relu(tw.matmul(h, vs[2]) + vs[3])
        logits = tw.matmul(h, vs[4]) + vs[5]
        loss = tw.reduce_mean(tw.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                              logits=logits))
        for v, g in zip(vs, tw.gradients(loss, vs)):
            v.assign_sub(0.01 * g)
        return loss

    return [np.asarray(step(x, y)) for _ in range(3)] + [v.numpy() for v in vs]


def _w3_run() -> list[np.ndarray]:
    """The peers' W3 (two 5x5 convolutions with max pooling, 3136-1024-10, batch 64)."""
    rng = np.random.default_rng(12)
    x = rng.random((64, 28, 28, 1), dtype=np.float32)
    y = rng.integers(0, 10, 64).astype(np.int32)
    shapes = [(5, 5, 1, 32), (32,), (5, 5, 32, 64), (64,), (3136, 1024), (1024,),
              (1024, 10), (10,)]
    vs = [tw.Variable((rng.standard_normal(s) * 0.05).astype(np.float32)) for s in shapes]

    def conv(h, k, b):
        return tw.nn.max_pool2d(tw.nn.relu(tw.nn.conv2d(h, k, strides=1, padding="SAME") + b),
                                2, 2, "VALID")

    @tw.compile(target="cpu")
    def step(x, y):
        h = conv(conv(x, vs[0], vs[1]), vs[2], vs[3])
        h = tw.nn.relu(tw.matmul(tw.reshape(h, [64, 3136]), vs[4]) + vs[5])
        logits = tw.matmul(h, vs[6]) + vs[7]
        loss = tw.reduce_mean(tw.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                              logits=logits))
        for v, g in zip(vs, tw.gradients(loss, vs)):
            v.assign_sub(0.01 * g)
        return loss

    return [np.asarray(step(x, y)) for _ in range(3)] + [v.numpy() for v in vs]


def _same_bits(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


@pytest.mark.parametrize("run", [_mlp_run, _cnn_run, _w2_run, _w3_run],
                         ids=["mlp", "cnn", "w2", "w3"])
def test_parts_on_threads_keep_every_bit(run, monkeypatch):
    """The module compiled whole (one thread) and in two parts on two threads: the
    losses and every variable after three steps are the same bits."""
    monkeypatch.setenv("TW_COMPILE_THREADS", "1")
    whole = run()
    monkeypatch.setenv("TW_COMPILE_THREADS", "2")
    before = jit.STATS.split_compiles
    parts = run()
    assert jit.STATS.split_compiles > before  # (it was cut, not compiled whole)
    _same_bits(whole, parts)


def _layers(x, w1, b1, w2):
    h = tw.nn.relu(tw.matmul(x, w1) + b1)
    return tw.reduce_sum(tw.nn.softmax(tw.matmul(h, w2)), axis=0), tw.reduce_max(h, axis=1)


def test_split_entries_load_from_disk_with_the_same_bits(monkeypatch, tmp_path):
    """A module compiled in parts is stored as one entry (a pack of objects) and loads
    from it in place of LLVM, computing the same bits; its key is not the one-thread key."""
    monkeypatch.setenv("TW_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TW_COMPILE_THREADS", "2")
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((32, 24), (24, 40), (40,),
                                                                (40, 12))]
    jit.clear_cache()
    compiled, splits = jit.STATS.llvm_compiles, jit.STATS.split_compiles
    first = [np.asarray(r) for r in tw.compile(_layers, target="cpu")(*args)]
    assert jit.STATS.llvm_compiles > compiled and jit.STATS.split_compiles > splits
    packs = [p for p in tmp_path.rglob("*" + disk_cache.SUFFIX)
             if disk_cache.decode(p.name[:-len(disk_cache.SUFFIX)], p.read_bytes())
             .startswith(jit._OBJECTS_MAGIC)]
    assert packs
    jit.clear_cache()
    compiled, hits = jit.STATS.llvm_compiles, jit.STATS.disk_hits
    again = [np.asarray(r) for r in tw.compile(_layers, target="cpu")(*args)]
    assert jit.STATS.llvm_compiles == compiled and jit.STATS.disk_hits > hits
    _same_bits(first, again)
    assert jit.keyed_digest("k", True) != _with_threads(monkeypatch, "1", jit.keyed_digest,
                                                        "k", True)


def _with_threads(monkeypatch, n: str, fn, *args):
    monkeypatch.setenv("TW_COMPILE_THREADS", n)
    return fn(*args)


def test_step_records_are_keyed_by_the_compile_threads(monkeypatch, tmp_path):
    """A step record names its code's key, which depends on the compile threads: a
    process with another setting must not find it (its plan would not match the code)."""
    monkeypatch.setenv("TW_CACHE_DIR", str(tmp_path))
    x = np.ones((2, 3), np.float32)
    f = tw.compile(lambda x: x * 2.0, target="cpu")
    traced = f.get_concrete_function(x).graph
    keys = set()
    for n in ("1", "2"):
        monkeypatch.setenv("TW_COMPILE_THREADS", n)
        monkeypatch.setattr(plan_cache, "_placement_settings", lambda: "placement")
        keys.add(plan_cache.record_key(traced, ["traced"], [x], "code"))
    assert None not in keys and len(keys) == 2


# ------------------------------------------------------------------- the splitter

_MODULE = r'''; ModuleID = "t"
target triple = "unknown-unknown-unknown"
target datalayout = ""

@"counter" = internal global i64 0
@"table" = internal constant [2 x i64] [i64 10, i64 20]
define internal i64 @"small"(i64 %".1")
{
entry:
  %".3" = add i64 %".1", 1
  ret i64 %".3"
}

define internal i64 @"big"(i64 %".1") noinline
{
entry:
BIG
  ret i64 %"v"
}

define i64 @"f"(i64 %".1")
{
entry:
PADF
  %".3" = call i64 @"small"(i64 %"fpad")
  %".4" = call i64 @"big"(i64 %".3")
  %".5" = getelementptr [2 x i64], [2 x i64]* @"table", i64 0, i64 0
  %".6" = load i64, i64* %".5"
  %".7" = add i64 %".4", %".6"
  %".8" = load i64, i64* @"counter"
  %".9" = add i64 %".8", 1
  store i64 %".9", i64* @"counter"
  ret i64 %".7"
}

define i64 @"g"(i64 %".1")
{
entry:
PADG
  %".3" = call i64 @"small"(i64 %"gpad")
  %".4" = call i64 @"big"(i64 %".3")
  %".5" = getelementptr [2 x i64], [2 x i64]* @"table", i64 0, i64 1
  %".6" = load i64, i64* %".5"
  %".7" = add i64 %".4", %".6"
  %".8" = call i64 @"f"(i64 0)
  %".9" = load i64, i64* @"counter"
  %".10" = mul i64 %".9", 1000
  %".11" = add i64 %".7", %".10"
  ret i64 %".11"
}

define i64 @"h"(i64 %".1")
{
entry:
  %".3" = mul i64 %".1", 3
  ret i64 %".3"
}

define i64 @"h2"(i64 %".1")
{
entry:
  %".3" = mul i64 %".1", 3
  ret i64 %".3"
}
'''


def _module() -> str:
    # `big`: x + 0 + 1 + ... + 59, long enough to be compiled once and shared
    body = ['  %"v0" = add i64 %".1", 0'] + [
        f'  %"v{i}" = add i64 %"v{i - 1}", {i}' for i in range(1, 60)]
    body.append('  %"v" = add i64 %"v59", 0')
    return (_MODULE.replace("BIG", "\n".join(body)).replace("PADF", _padding("f"))
            .replace("PADG", _padding("g")))


def _padding(tag: str) -> str:
    """x + 0 + 0 + ...: lines that make `f` and `g` weigh as much as `big`, so that the
    splitter puts them in different parts (and the counter is shared)."""
    lines = [f'  %"{tag}0" = add i64 %".1", 0'] + [
        f'  %"{tag}{i}" = add i64 %"{tag}{i - 1}", 0' for i in range(1, 60)]
    return "\n".join(lines + [f'  %"{tag}pad" = add i64 %"{tag}59", 0'])


def _expected(x: int) -> tuple[int, int]:
    big = sum(range(60))
    return x + 1 + big + 10, x + 1 + big + 20


def test_split_module_links_and_shares_state():
    """Two parts: a small local helper and a constant are copied into each, the large
    helper both use is compiled once and called across objects, the mutable global
    exists once (both functions see one counter), g calls f in the other object, the two
    identical functions stay together."""
    text = _module()
    parts = ir_split.split_module(text, 2)
    assert len(parts) == 2
    owners = [[n for n in ("f", "g", "h", "h2") if f'define i64 @"{n}"' in p] for p in parts]
    assert sorted(sum(owners, [])) == ["f", "g", "h", "h2"]
    assert any({"h", "h2"} <= set(o) for o in owners)  # (MergeFunctions folds them)
    assert not any({"f", "g"} <= set(o) for o in owners)
    assert sum('define i64 @"big"' in p for p in parts) == 1  # promoted, once
    assert sum(p.count('@"counter" = global i64 0') for p in parts) == 1
    for p in parts:
        if '@"counter"' in p and '@"counter" = global' not in p:
            assert '@"counter" = external global i64' in p
    obj = jit.pack_objects(jit._compile_parts(parts, loop_vectorize=False))
    assert set(jit.undefined_symbols(obj)) == set()
    engine, addresses = jit.load_object(obj, ["f", "g", "h", "h2"])
    try:
        fn = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)
        f, g, h = (fn(addresses[n]) for n in ("f", "g", "h"))
        ef, eg = _expected(5)
        assert f(5) == ef                     # counter 1
        assert g(5) == eg + 2 * 1000          # g calls f (counter 2), reads the same counter
        assert h(7) == 21
    finally:
        with jit.LLVM_LOCK:
            engine.close()


def test_split_module_keeps_what_it_cannot_read_whole():
    """One part asked, too few lines, a single function, or a linkage the splitter does
    not handle: the text comes back whole."""
    text = _module()
    assert ir_split.split_module(text, 1) == [text]
    assert ir_split.split_module(text, 2, min_lines=10_000) == [text]
    odd = text.replace('define i64 @"h2"', 'define linkonce_odr i64 @"h2"')
    assert ir_split.split_module(odd, 2) == [odd]
    one = 'define i64 @"h"(i64 %".1")\n{\nentry:\n  ret i64 %".1"\n}\n'
    assert ir_split.split_module(one, 2) == [one]


def test_a_failing_part_is_a_clear_error_and_every_thread_ends(monkeypatch):
    """LLVM refusing the second part: a CompileError naming it and the switch, raised
    in the caller's thread once all threads have ended."""
    good = _module()
    bad = 'define i64 @"oops"(i64 %".1")\n{\nentry:\n  ret i32 0\n}\n'
    with pytest.raises(CompileError, match=r"(?s)part 2 of 2 .*TW_COMPILE_THREADS=1.*doesn't match"):
        jit._compile_parts([good, bad], loop_vectorize=False)
    assert not [t for t in threading.enumerate() if t.name.startswith("tw-llvm-part")]


def test_a_failing_split_surfaces_through_a_compile(monkeypatch):
    """A step whose part fails (LLVM refuses it) is not a crash nor a silently wrong
    step: as for any CompileError of a native step, the function runs on the dataflow
    executor (right results) and says why (`native_reason` names the part)."""
    monkeypatch.setenv("TW_COMPILE_THREADS", "2")
    real = ir_split.split_module

    def broken(text, parts, min_lines=0):
        out = real(text, parts, min_lines)
        assert len(out) == 2
        return [out[0] + '\ndefine i64 @"bad"() {\nentry:\n  ret i32 0\n}\n'] + out[1:]

    monkeypatch.setattr(ir_split, "split_module", broken)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    w = rng.standard_normal((4, 5)).astype(np.float32)

    @tw.compile(target="cpu")
    def f(x, w):
        return tw.reduce_sum(tw.nn.relu(tw.matmul(x, w) + 1.0), axis=0) * 0.731

    np.testing.assert_allclose(f(x, w), np.maximum(x @ w + 1, 0).sum(0) * 0.731, rtol=1e-5)
    reason = f.get_concrete_function(x, w).executable.native_reason
    assert "part 1 of 2" in reason and "TW_COMPILE_THREADS=1" in reason, reason


def test_objects_defining_one_symbol_twice_are_refused():
    """LLVM aborts the process on a symbol two objects define: the loader refuses it."""
    one = 'define i64 @"h"(i64 %".1")\n{\nentry:\n  ret i64 %".1"\n}\n'
    obj = jit._compile_parts([one, one], loop_vectorize=False)
    with pytest.raises(ValueError, match="defined by two objects: h"):
        jit.undefined_symbols(jit.pack_objects(obj))
    with pytest.raises(jit.ObjectLoadError):
        jit.load_object(jit.pack_objects(obj), ["h"])


def test_object_packs_round_trip_and_malformed_ones_are_refused():
    objs = [b"\x7fELF-one", b"\x7fELF-two-", b"three"]
    packed = jit.pack_objects(objs)
    assert jit.unpack_objects(packed) == objs
    assert jit.pack_objects(objs[:1]) == objs[0]
    assert jit.unpack_objects(objs[0]) == [objs[0]]
    for bad in (packed[:-1], packed + b"x", packed[:len(jit._OBJECTS_MAGIC) + 2]):
        with pytest.raises(ValueError, match="malformed object pack"):
            jit.unpack_objects(bad)
        with pytest.raises(jit.ObjectLoadError):
            jit.load_object(bad, ["f"])


def test_compile_threads_setting(monkeypatch):
    """1 or more; a typo is an error the call raises (not a silent fall back to the
    dataflow executor); unset: the CPUs of the affinity, at most MAX_COMPILE_THREADS."""
    monkeypatch.setenv("TW_COMPILE_THREADS", "1")
    assert jit.compile_threads() == 1
    monkeypatch.setenv("TW_COMPILE_THREADS", "3")
    assert jit.compile_threads() == 3
    for bad in ("0", "-2", "two", "1.5"):
        monkeypatch.setenv("TW_COMPILE_THREADS", bad)
        with pytest.raises(ValueError, match=f"TW_COMPILE_THREADS .*got '{bad}'"):
            jit.compile_threads()
    monkeypatch.delenv("TW_COMPILE_THREADS")
    monkeypatch.setattr(jit.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert jit.compile_threads() == 1  # a one-core host compiles whole
    monkeypatch.setattr(jit.os, "sched_getaffinity", lambda pid: set(range(64)),
                        raising=False)
    assert jit.compile_threads() == jit.MAX_COMPILE_THREADS


def test_a_split_step_profiles_every_action(monkeypatch, tmp_path):
    """The profile buffer is one global of the step's code whichever part uses it:
    ``tw_profile_slot`` (in one object) hands out the buffer the other objects write."""
    monkeypatch.setenv("TW_COMPILE_THREADS", "2")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, 12)).astype(np.float32)
    ws = [rng.standard_normal(s).astype(np.float32) for s in ((12, 20), (20, 20), (20, 3))]

    @tw.compile(target="cpu")
    def f(x, w1, w2, w3):
        h = tw.nn.relu(tw.matmul(x, w1) + 0.5)
        h = tw.tanh(tw.matmul(h, w2))
        return tw.reduce_sum(tw.nn.softmax(tw.matmul(h, w3)), axis=0), tw.reduce_max(h)

    splits = jit.STATS.split_compiles
    expected = f(x, *ws)
    assert jit.STATS.split_compiles > splits
    step = f.get_concrete_function(x, *ws).executable.native_step([x, *ws])
    plan = step.plan
    with tw.profiler.trace(str(tmp_path)) as rec:
        got = f(x, *ws)
    _same_bits([np.asarray(e) for e in expected], [np.asarray(g) for g in got])
    assert rec.calls == 1 and len(rec.records) == len(plan.actions)
    assert {r["source"] for r in rec.records} == {"native"}


def test_a_bad_setting_is_raised_by_the_call(monkeypatch):
    monkeypatch.setenv("TW_COMPILE_THREADS", "two")
    f = tw.compile(lambda x: tw.nn.relu(x) * 3.0 + 0.25, target="cpu")
    with pytest.raises(ValueError, match="TW_COMPILE_THREADS .*got 'two'"):
        f(np.ones((3, 5), np.float32))
