"""Products on the BLAS library's own threads (`lowering.gemm_plan` answering ``"blas"``):
only where the probe found one thread's bits and a faster run, never inside our own
parallel regions, under the process's BLAS lock (a threaded call is the only BLAS call in
flight, else it runs on one thread), and only with ``TW_BLAS_OWN_THREADS=1`` (off by
default).

Which products keep their bits on OpenBLAS's threads depends on the host's kernels, so
the tests that need such a product (or one that changes bits) look for one among a few
shapes and skip when this host has none."""

from __future__ import annotations

import ctypes
import threading
import time

import llvmlite.ir as ir
import numpy as np
import pytest

import tensorweave as tw
from tensorweave.compiler.dtypes import as_dtype
from tensorweave.targets.cpu import blas, disk_cache, executable, lowering, parallel
from tests.lowerings.helpers import single_node

F32 = as_dtype(np.float32)
# (ta, tb, m, n, k), each at least parallel.MIN_GEMM_FLOPS multiply-adds, K odd in most
CANDIDATES = [(True, False, 384, 384, 300), (True, True, 384, 128, 301),
              (True, True, 96, 384, 301), (False, False, 256, 1024, 784),
              (False, True, 200, 400, 333), (True, False, 400, 200, 333)]

needs_threads = pytest.mark.skipif(not lowering.blas_threads_settable(),
                                   reason="the BLAS library's thread count cannot be set")


@pytest.fixture
def fresh_probes(monkeypatch, tmp_path):
    """Two threads, probe answers in a temporary disk cache and no remembered answers:
    a test's made-up answers are never seen by another test or process."""
    monkeypatch.setenv("TW_NUM_THREADS", "2")
    monkeypatch.setenv("TW_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TW_BLAS_OWN_THREADS", "1")
    lowering._probe_blas_threads.cache_clear()
    yield
    lowering._probe_blas_threads.cache_clear()


def _find(exact: bool) -> tuple:
    """A candidate product whose bits on the library's threads are (or are not) one
    thread's on this host, or a skip."""
    for shape in CANDIDATES:
        if lowering.blas_threads_exact("f32", *shape) == exact:
            return shape
    pytest.skip(f"no candidate product {'keeps' if exact else 'changes'} its bits on this "
                f"host's BLAS threads")


def _threads_now() -> int:
    get = ctypes.CFUNCTYPE(ctypes.c_int)(blas.thread_control()[blas.GET_THREADS])
    return get()


@needs_threads
def test_threaded_call_runs_on_the_library_threads_and_yields_to_other_calls(fresh_probes):
    """The kernel's threaded call (split code 3) gives the library's threaded bits when it
    is the only BLAS call in flight, one thread's bits when another call holds the lock
    (here: this thread, as a reader), and leaves the thread count as it found it."""
    shape = _find(exact=False)
    before = _threads_now()
    run = lowering._probe_kernel("f32", *shape, timing=True)  # (the MatMul kernel's code)
    a, b = lowering.probe_operands("f32", *shape, draw=1)
    one, waited = run(a, b, "one"), run(a, b, "blas_wait")
    assert one.tobytes() != waited.tobytes()  # (what `_find` found: threads ran)
    # The non-waiting call runs on one thread while any other BLAS call of the process
    # is in flight (a thread an earlier test left running, in a shared worker process):
    # it must give the threaded bits once it finds the lock free.
    for _ in range(100):
        threaded = run(a, b, "blas")
        if threaded.tobytes() != one.tobytes():
            break
        time.sleep(0.05)
    assert threaded.tobytes() == waited.tobytes()
    probe = lowering._probe_kernel("f32", *shape)  # (the probe's own small module)
    assert probe(a, b, "one").tobytes() == one.tobytes()
    assert probe(a, b, "blas_wait").tobytes() == threaded.tobytes()
    with blas.serial_calls():
        assert run(a, b, "blas").tobytes() == one.tobytes()
    assert _threads_now() == before
    ta, tb, m, n, k = shape
    want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    scale = np.abs(a.T if ta else a).astype(np.float64) @ np.abs(b.T if tb else b)
    assert (np.abs(threaded - want) <= 1e-6 * scale).all()  # (float32 over k terms)


def test_gemm_plan_model(monkeypatch, fresh_probes):
    """The library's threads only for static products in the split range whose bits
    agree and which run faster; our split (or one call) otherwise; nothing probed for
    products too small, dynamic, on one thread or with the switch off."""
    calls = []
    verdict = {"exact": True, "faster": True}

    def exact(*shape):
        calls.append(("exact", shape))
        return verdict["exact"]

    def faster(*args):
        calls.append(("faster", args))
        return verdict["faster"]

    monkeypatch.setenv("TW_CACHE_DIR", "off")  # (answers from the functools cache only)
    monkeypatch.setattr(lowering, "blas_threads_exact", exact)
    monkeypatch.setattr(lowering, "blas_threads_faster", faster)
    monkeypatch.setattr(lowering, "blas_own_threads", lambda: True)
    monkeypatch.setattr(lowering, "gemm_split", lambda *a: "rows")
    shape = (F32, False, False, 256, 1024, 784)
    assert lowering.gemm_plan(*shape) == "blas"
    assert calls == [("exact", ("f32", False, False, 256, 1024, 784)),
                     ("faster", ("f32", False, False, 256, 1024, 784, "rows"))]
    for exact_, faster_ in ((False, True), (True, False)):
        verdict.update(exact=exact_, faster=faster_)
        lowering._probe_blas_threads.cache_clear()
        assert lowering.gemm_plan(*shape) == "rows"
    verdict.update(exact=True, faster=True)
    lowering._probe_blas_threads.cache_clear()
    calls.clear()
    dynamic = ir.Constant(ir.IntType(64), 256)
    assert lowering.gemm_plan(F32, False, False, 16, 16, 16) == "rows"
    assert lowering.gemm_plan(F32, False, False, dynamic, 1024, 784) == "rows"
    assert lowering.gemm_plan(F32, False, False, 1 << 12, 1 << 12, 1 << 10) == "rows"  # big
    monkeypatch.setenv("TW_NUM_THREADS", "1")
    assert lowering.gemm_plan(*shape) == "rows"
    assert calls == []


def test_switch_and_blas_key(monkeypatch):
    """The library's threads are off by default and with ``TW_BLAS_OWN_THREADS=0``; the
    switch changes the key of code that calls BLAS (a step compiled with them is not
    loaded without them)."""
    monkeypatch.delenv("TW_BLAS_OWN_THREADS", raising=False)
    assert not lowering.blas_own_threads()
    default = executable._blas_key_of(True)
    monkeypatch.setenv("TW_BLAS_OWN_THREADS", "0")
    assert not lowering.blas_own_threads()
    off = executable._blas_key_of(True)
    assert off == default
    monkeypatch.setenv("TW_BLAS_OWN_THREADS", "1")
    assert off != executable._blas_key_of(True)
    monkeypatch.setenv("TW_BLAS_THREADS", "2")  # the library runs threads anyway
    assert not lowering.blas_own_threads()


@needs_threads
def test_probe_answers_are_kept_on_disk(monkeypatch, fresh_probes):
    runs = []
    real = lowering._run_blas_threads_probe

    def counting(*args):
        runs.append(args)
        return real(*args)

    monkeypatch.setattr(lowering, "_run_blas_threads_probe", counting)
    args = ("f32", True, False, 384, 384, 300, 2, "cols")
    first = lowering._probe_blas_threads(*args)
    lowering._probe_blas_threads.cache_clear()
    assert lowering._probe_blas_threads(*args) == first and len(runs) == 1
    key = lowering._probe_key("blas threads probe v1", *args)
    assert disk_cache.load(key, disk_cache.NOTE_SUFFIX) == (b"1" if first else b"0")
    disk_cache.store(key, b"garbage", disk_cache.NOTE_SUFFIX)
    lowering._probe_blas_threads.cache_clear()
    assert lowering._probe_blas_threads(*args) in (False, True) and len(runs) == 2
    # another thread count, another own split: other answers
    assert key not in (lowering._probe_key("blas threads probe v1", *args[:6], 3, "cols"),
                       lowering._probe_key("blas threads probe v1", *args[:7], "rows"))


def test_no_library_threads_inside_parallel_regions(monkeypatch):
    """A product in a chunk of `parallel_for` (our own threads) is one call on one thread,
    whatever `gemm_plan` says of its shape."""
    monkeypatch.setenv("TW_NUM_THREADS", "2")
    monkeypatch.setattr(lowering, "gemm_plan", lambda *a: "blas")
    a = np.ones((256, 784), np.float32)
    node = single_node("MatMul", [a, np.ones((784, 1024), np.float32)])
    module = ir.Module()
    chunk = parallel.define_chunk(module, "chunk")
    cx = lowering.LoweringContext(node, module, chunk, "blas")
    assert cx.in_parallel_region
    null = ir.Constant(ir.PointerType(ir.FloatType()), None)  # (the code is never run)
    cx.gemm(F32, False, False, 256, 1024, 784, 1.0, null, 784, null, 1024, 0.0, null, 1024)
    cx.ret_ok()
    assert "blas_threads" not in str(module)
    top = ir.Module()
    lowering.emit_node_function(top, node, "f", "blas")  # (not in a region: threads)
    assert "tw_gemm_f32.blas_threads" in str(top)
    assert '@"tw_blas_set_threads"(i32 2)' in str(top)  # (TW_NUM_THREADS of the code)


def _mlp(x, w1, b1, w2):
    h = tw.nn.relu(tw.matmul(x, w1, transpose_a=True) + b1)  # a product with an epilogue
    y = tw.reduce_sum(tw.square(tw.matmul(h, w2)))
    return (y, h) + tuple(tw.gradients(y, [w1, b1, w2]))


@needs_threads
def test_steps_on_the_library_threads_match_one_thread(monkeypatch, fresh_probes):
    """A step whose product runs on the library's threads (its bits agree: probed; its
    speed: taken as faster) gives one thread's results bit for bit: alone, from two
    Python threads at once (the threaded call then often runs on one thread), and as
    the dataflow executor's MatMul kernel."""
    ta, tb, m, n, k = _find(exact=True)
    if (ta, tb) != (True, False):
        pytest.skip("the step below has one transpose")
    monkeypatch.setattr(lowering, "blas_threads_faster", lambda *a: True)
    made = []
    real = lowering.blas_threads_function

    def spy(module, dtype, wait=False):
        made.append(wait)
        return real(module, dtype, wait)

    monkeypatch.setattr(lowering, "blas_threads_function", spy)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((k, m)).astype(np.float32)
    w1 = rng.standard_normal((k, n)).astype(np.float32) * 0.05
    b1 = rng.standard_normal(n).astype(np.float32)
    w2 = rng.standard_normal((n, 10)).astype(np.float32) * 0.05
    assert lowering.gemm_plan(F32, True, False, m, n, k) == "blas"
    two = tw.compile(_mlp, target="cpu")
    got = two(x, w1, b1, w2)
    assert False in made  # (the step calls the threaded GEMM)
    monkeypatch.setenv("TW_NUM_THREADS", "1")
    want = tw.compile(_mlp, target="cpu")(x, w1, b1, w2)
    for g, w in zip(got, want):
        assert g.tobytes() == w.tobytes()
    ref = tw.compile(_mlp, target="reference")(x, w1, b1, w2)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-2)

    monkeypatch.setenv("TW_NUM_THREADS", "2")
    results: list[list[np.ndarray]] = []

    def worker() -> None:
        for _ in range(6):
            results.append(two(x, w1, b1, w2))

    workers = [threading.Thread(target=worker) for _ in range(2)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert len(results) == 12
    for out in results:
        for g, w in zip(out, want):
            assert g.tobytes() == w.tobytes()

    from tensorweave.targets.cpu.blas import MatMulKernel
    node = single_node("MatMul", [x, w1], transpose_a=True)
    kernel = MatMulKernel(node)
    threaded = kernel([x, w1])[0]
    assert kernel._plans[(x.shape, w1.shape)][3][5] == blas.SPLIT_CODES["blas"]
    monkeypatch.setenv("TW_NUM_THREADS", "1")
    assert threaded.tobytes() == MatMulKernel(node)([x, w1])[0].tobytes()


@needs_threads
def test_one_thread_products_never_run_on_threads_another_step_set(monkeypatch, fresh_probes):
    """While one Python thread runs a step whose product runs on the library's threads,
    another runs a step whose product changes bits on them: the second one's calls hold
    the BLAS lock as readers, so they never see the thread count the first one set."""
    exact, changing = _find(exact=True), _find(exact=False)
    monkeypatch.setattr(lowering, "blas_threads_faster", lambda *a: True)

    def product(ta, tb, m, n, k, seed):
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
        b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
        fn = tw.compile(lambda a, b: tw.matmul(a, b, transpose_a=ta, transpose_b=tb),
                        target="cpu")
        return fn, a, b

    threaded, ta_, tb_ = product(*exact, seed=1)
    assert lowering.gemm_plan(F32, *exact) == "blas"
    monkeypatch.setenv("TW_NUM_THREADS", "1")  # (one call on one thread, no split)
    serial, sa, sb = product(*changing, seed=2)
    want = serial(sa, sb).tobytes()
    monkeypatch.setenv("TW_NUM_THREADS", "2")
    threaded(ta_, tb_)  # (compiled for 2 threads before the race starts)
    done = threading.Event()
    got: list[bytes] = []

    def hammer() -> None:
        while not done.is_set():
            threaded(ta_, tb_)

    other = threading.Thread(target=hammer)
    other.start()
    try:
        for _ in range(30):
            got.append(serial(sa, sb).tobytes())
    finally:
        done.set()
        other.join()
    assert all(g == want for g in got)
