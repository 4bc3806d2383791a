"""Correctness of the cpu target's speed paths of issue 13: the caching allocator of
result buffers (`targets/cpu/allocator.py`); GEMMs split over threads by columns or by
rows of C, whichever `lowering.gemm_split` picks for the shape, bit for bit one BLAS
call."""

from __future__ import annotations

import gc
import platform

import llvmlite.ir as ir
import numpy as np
import pytest

import tensorweave as tw
from tensorweave.compiler.dtypes import as_dtype
from tensorweave.errors import InvalidArgumentError
from tensorweave.targets.cpu import allocator, codegen, jit, lowering, parallel
from tests.lowerings.helpers import single_node

# ---------------------------------------------------------------------- allocator

BIG = (allocator.MIN_BYTES // 4) + 1000  # float32 elements: over the pooled minimum


def _block(x: np.ndarray) -> np.ndarray:
    """The pool block under a result or a view of one (the end of its ``base`` chain)."""
    while x.base is not None:
        x = x.base
    return x


def test_pool_reuses_a_block_only_once_nothing_uses_it():
    pool = allocator.BlockPool(cap=1 << 30)
    a = pool.empty((BIG,), np.float32)
    b = pool.empty((BIG,), np.float32)
    assert _block(a) is not _block(b) and pool.misses == 2
    view = a[5:].reshape(-1)[::2]  # a view keeps the block in use, not just the array
    assert view.base is a  # (its base is the result, so the result's refcount counts it)
    del a
    c = pool.empty((BIG,), np.float32)
    assert _block(c) is not _block(view) and _block(c) is not _block(b) and pool.misses == 3
    base = id(_block(view))  # (a reference to the block would keep it in use)
    del view
    d = pool.empty((BIG,), np.float32)
    assert id(_block(d)) == base and pool.hits == 1
    # a different dtype and shape of the same byte count share the block
    del d
    e = pool.empty((BIG // 2, 2), np.int32)
    assert id(_block(e)) == base and e.shape == (BIG // 2, 2) and e.dtype == np.int32
    assert e.flags.c_contiguous and e.flags.writeable and type(e) is np.ndarray


def test_pool_small_requests_and_the_cap():
    pool = allocator.BlockPool(cap=3 * allocator.MIN_BYTES)
    small = pool.empty((10,), np.float64)
    assert small.base is None and pool.misses == 0  # NumPy's own memory
    a = pool.empty((BIG,), np.float32)
    nbytes = allocator._round(a.nbytes)  # (the block holds ALIGN bytes more)
    b = pool.empty((BIG,), np.float32)
    assert pool.tracked_bytes == 2 * nbytes
    del a
    # the third block does not fit: the free one is released, the used one forgotten
    c = pool.empty((BIG,), np.float32)
    assert pool.tracked_bytes <= pool.cap and c.base is not b.base
    c[:] = 1.0
    b[:] = 2.0  # b still owns its memory after the pool forgot it
    assert np.all(c == 1.0) and np.all(b == 2.0)
    del c
    assert pool.free_bytes() == nbytes and pool.release_free() == nbytes
    # over the cap, or objects: plain NumPy memory
    huge = allocator.BlockPool(cap=1 << 20).empty((1 << 20,), np.float32)
    assert huge.base is None
    objects = pool.empty((BIG,), object)
    assert objects.base is None and objects.dtype == object


def test_pool_results_start_on_a_cache_line():
    pool = allocator.BlockPool(cap=1 << 30)
    held = [pool.empty(shape, dt) for shape, dt in
            [((BIG,), np.float32), ((BIG // 3, 3), np.float64), ((4 * BIG + 5,), np.int8)]]
    assert all(a.ctypes.data % allocator.ALIGN == 0 for a in held)
    del held
    again = pool.empty((BIG,), np.float32)  # a reused block: aligned too
    assert pool.hits == 1 and again.ctypes.data % allocator.ALIGN == 0
    assert pool.tracked_bytes == sum(allocator._round(n) for n in
                                             (BIG * 4, (BIG // 3) * 24, 4 * BIG + 5))


def test_result_cache_size_from_the_environment(monkeypatch):
    monkeypatch.setenv("TW_RESULT_CACHE_MB", "3")
    assert allocator.cap_bytes() == 3 << 20
    monkeypatch.setenv("TW_RESULT_CACHE_MB", "lots")
    with pytest.raises(InvalidArgumentError, match="TW_RESULT_CACHE_MB"):
        allocator.cap_bytes()
    monkeypatch.setenv("TW_RESULT_CACHE_MB", "0")
    assert allocator.BlockPool().empty((BIG,), np.float32).base is None


def test_held_results_never_alias_and_dropped_ones_are_reused():
    n = BIG
    f = tw.compile(lambda x, s: x * s + 1.0, target="cpu")
    x = np.arange(n, dtype=np.float32)
    held = []
    for s in range(6):
        y = f(x, np.float32(s))
        held.append(y)
        # every result still held keeps its own values
        for t, old in enumerate(held):
            np.testing.assert_array_equal(old, x * np.float32(t) + 1.0)
    bases = {id(y.base) for y in held}
    assert len(bases) == len(held)
    # the caller keeps only the last result: the block of the one before comes back
    held = held[-1:]
    gc.collect()
    hits = allocator.POOL.hits
    for s in range(4):
        held = [f(x, np.float32(s))]
        np.testing.assert_array_equal(held[0], x * np.float32(s) + 1.0)
    assert allocator.POOL.hits > hits


# ------------------------------------------------------------------ GEMM splits


def _matmul_on_threads(monkeypatch, a, b, ta, tb, threads):
    """The MatMul lowering of op(a) @ op(b) built for `threads` threads: its result and
    the names of the module's GEMM wrappers."""
    monkeypatch.setenv("TW_NUM_THREADS", str(threads))
    monkeypatch.setenv("TW_BLAS_OWN_THREADS", "0")  # (our cuts; the library's: test_blas_threads)
    node = single_node("MatMul", [a, b], transpose_a=ta, transpose_b=tb)
    module = ir.Module()
    lowering.emit_node_function(module, node, "f", "blas")
    text = str(module)
    called = {how for how in ("cols", "rows") if f"tw_gemm_{node.outputs[0].type.dtype.ir_name}"
              f".{how}" in text}
    return lowering.compile_node(node, "blas")([a, b])[0], called, text


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m,n,k", [(72, 700, 100),   # m < n: columns first
                                   (520, 40, 230)])  # m > n: rows first
def test_gemm_split_is_one_blas_call_bit_for_bit(monkeypatch, dtype, ta, tb, m, n, k):
    if not lowering.blas_row_align(as_dtype(dtype).ir_name):
        pytest.skip("this BLAS is never split")
    assert m * n * k >= parallel.MIN_GEMM_FLOPS
    rng = np.random.default_rng(m + n)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    one, _, text1 = _matmul_on_threads(monkeypatch, a, b, ta, tb, 1)
    assert "pthread_create" not in text1
    split = lowering.gemm_split(as_dtype(dtype), ta, tb, m, n, k)  # (2 threads: set above)
    two, called, text2 = _matmul_on_threads(monkeypatch, a, b, ta, tb, 2)
    if split == "cols":
        assert "cols" in called
    assert one.tobytes() == two.tobytes()
    want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    np.testing.assert_allclose(two, want, rtol=1e-4, atol=1e-4)
    # a third thread count cuts elsewhere, still the same bits
    three, _, _ = _matmul_on_threads(monkeypatch, a, b, ta, tb, 3)
    assert one.tobytes() == three.tobytes()


def test_split_probe_answers_are_kept_on_disk(monkeypatch, tmp_path):
    """A product shape probed once is not probed again in a new process (the functools
    cache cleared stands for one): the answer comes from the disk cache; a damaged note is
    probed again and rewritten; without a cache directory nothing is stored."""
    monkeypatch.setenv("TW_CACHE_DIR", str(tmp_path))
    runs = []
    real = lowering._run_split_probe

    def counting(*args):
        runs.append(args)
        return real(*args)

    monkeypatch.setattr(lowering, "_run_split_probe", counting)
    shape = ("f32", False, False, 96, 80, 64, 2, 16, "cols")
    lowering._probe_split.cache_clear()
    first = lowering._probe_split(*shape)
    lowering._probe_split.cache_clear()
    assert lowering._probe_split(*shape) == first and len(runs) == 1
    assert first == real(*shape)  # (the stored answer is the probe's)
    other = ("f32", False, True, 96, 80, 64, 2, 16, "cols")  # another product: probed
    lowering._probe_split(*other)
    assert len(runs) == 2
    key = lowering._split_probe_key(*shape)
    from tensorweave.targets.cpu import disk_cache
    disk_cache.store(key, b"garbage", disk_cache.NOTE_SUFFIX)
    lowering._probe_split.cache_clear()
    assert lowering._probe_split(*shape) == first and len(runs) == 3
    assert disk_cache.load(key, disk_cache.NOTE_SUFFIX) in (b"0", b"1")
    lowering._probe_split.cache_clear()


def test_gemm_split_model_and_fallbacks(monkeypatch):
    monkeypatch.setenv("TW_NUM_THREADS", "2")
    f32 = as_dtype(np.float32)
    probed = []

    def probe(dt, ta, tb, m, n, k, threads, align, how="rows"):
        probed.append(how)
        return verdict[how]

    monkeypatch.setattr(lowering, "_probe_split", probe)
    monkeypatch.setattr(lowering, "blas_row_align", lambda name: 12)
    verdict = {"cols": True, "rows": True}
    # the split that packs the smaller shared operand again is tried first
    assert lowering.gemm_split(f32, False, False, 256, 1024, 784) == "cols"
    assert lowering.gemm_split(f32, False, False, 3136, 64, 800) == "rows"
    # a split that would change bits is not taken: the other one, else none
    verdict = {"cols": False, "rows": True}
    assert lowering.gemm_split(f32, False, False, 256, 1024, 784) == "rows"
    verdict = {"cols": False, "rows": False}
    probed.clear()
    assert lowering.gemm_split(f32, False, False, 256, 1024, 784) is None
    assert probed == ["cols", "rows"]
    # too small, unknown sizes, one thread: never split, nothing probed
    probed.clear()
    assert lowering.gemm_split(f32, False, False, 16, 16, 16) is None
    assert lowering.gemm_split(f32, False, False, ir.Constant(ir.IntType(64), 256), 1024,
                               784) is None
    monkeypatch.setenv("TW_NUM_THREADS", "1")
    assert lowering.gemm_split(f32, False, False, 256, 1024, 784) is None
    assert probed == []
    assert lowering.col_align(f32) == 16 and lowering.col_align(as_dtype(np.float64)) == 8


def test_mlp_step_with_column_splits_is_identical_on_one_and_two_threads(monkeypatch):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 300)).astype(np.float32)
    w1 = rng.standard_normal((300, 512)).astype(np.float32) * 0.05
    w2 = rng.standard_normal((512, 10)).astype(np.float32) * 0.05

    def loss(x, w1, w2):
        h = tw.nn.relu(tw.matmul(x, w1))
        y = tw.reduce_sum(tw.square(tw.matmul(h, w2)))
        return (y,) + tuple(tw.gradients(y, [w1, w2]))

    outs = []
    for threads in (1, 2):
        monkeypatch.setenv("TW_NUM_THREADS", str(threads))
        outs.append(tw.compile(loss, target="cpu")(x, w1, w2))
    assert lowering.gemm_split(as_dtype(np.float32), False, False, 64, 512, 300) in (
        "cols", None)
    for a, b in zip(*outs):
        assert a.tobytes() == b.tobytes()
    ref = tw.compile(loss, target="reference")(x, w1, w2)
    for a, b in zip(outs[0], ref):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-3)


# ------------------------------------------------------------------ float32 tanh
# (its range checks, against float64 tanh on every 997th float32, moved to
# tests/test_tanh_rational.py with the rational tanh that replaced the Cephes one)


# ------------------------------------------------------- convolutions per vector width

CONV_CASES = [  # (input NHWC, filter HWIO): W3's second layer, odd channel counts
    ((2, 14, 14, 32), (5, 5, 32, 64)),
    ((2, 9, 11, 3), (3, 5, 3, 40)),
    ((1, 7, 6, 20), (5, 3, 20, 17)),
]


@pytest.mark.parametrize("vector", [(16, 16), (32, 16), (64, 32)])  # SSE, AVX2, AVX-512
@pytest.mark.parametrize("xs,ws", CONV_CASES)
def test_direct_convolutions_on_every_vector_width(monkeypatch, vector, xs, ws):
    """The direct kernels' register tiles follow the host's vector registers
    (`nn.VECTOR_BYTES`, `nn.REGISTERS`); each geometry computes exactly the reference's
    sums (inputs are multiples of 1/4: exact in any order), on 1 and 2 threads."""
    from tensorweave.targets.cpu.lowerings import nn as nn_low
    from tests.lowerings.helpers import reference_outputs
    monkeypatch.setattr(nn_low, "VECTOR_BYTES", vector[0])
    monkeypatch.setattr(nn_low, "REGISTERS", vector[1])
    rng = np.random.default_rng(sum(xs) + sum(ws))
    ys = xs[:3] + ws[3:]

    def quarters(shape):
        return (rng.integers(-4, 5, size=shape) / 4).astype(np.float32)

    same = dict(strides=(1, 1, 1, 1), padding="SAME")
    for op, arrays, attrs in [
            ("Conv2D", [quarters(xs), quarters(ws)], same),
            ("Conv2DBackpropInput", [quarters(ws), quarters(ys)], dict(input_shape=xs, **same)),
            ("Conv2DBackpropFilter", [quarters(xs), quarters(ys)],
             dict(filter_shape=ws, **same))]:
        node = single_node(op, arrays, **attrs)
        if xs[3] >= vector[0] // 4:  # (fewer input channels: dX is im2col + GEMM)
            assert nn_low._conv_path(node) == "direct"
        want = reference_outputs(node, arrays)[0]
        for threads in (1, 2):
            monkeypatch.setenv("TW_NUM_THREADS", str(threads))
            got = lowering.compile_node(node)(arrays)[0]
            assert got.dtype == want.dtype and got.shape == want.shape
            assert got.tobytes() == want.tobytes(), (op, threads)


def test_host_vector_geometry():
    from tensorweave.targets.cpu import jit
    from tensorweave.targets.cpu.lowerings import nn as nn_low
    bits = jit.host_info().vector_bits
    assert nn_low._host_vectors() == (bits // 8, 32 if bits == 512 else 16)


# ---------------------------------------------------------------------- donation


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_donated_argument_becomes_the_result():
    f = tw.compile(lambda x, a: 0.5 * x * (1.0 + tw.tanh(x * a)), donate_argnums=0,
                   target="cpu")
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    start = _address(x)
    want = x.copy()
    for _ in range(3):  # x = f(x): the same memory every call
        want = 0.5 * want * (1.0 + np.tanh(want * np.float32(0.7)))
        y = f(x, np.float32(0.7))
        assert _address(y) == start
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
        assert not x.flags.writeable and y.flags.writeable
        with pytest.raises(ValueError):
            x[0] = 1.0  # the donated array is read-only from now on
        x = y


# case -> (function of (x, o), whether x's buffer may take the result)
DONATION_CASES = {
    "elementwise": (lambda x, o: x * o + 1.0, True),
    # x is read first (by the product, which a reduction also reads: no epilogue)
    "after_a_product": (lambda x, o: tw.matmul(x, o) - tw.reduce_max(tw.matmul(x, o), axis=1,
                                                                      keepdims=True), True),
    # the product's epilogue writes the result while the GEMM still reads x (FusedMatMul)
    "product_epilogue": (lambda x, o: tw.matmul(x, o) + 1.0, False),
    "centered": (lambda x, o: x - tw.reduce_max(x, axis=1, keepdims=True), True),
    "product": (lambda x, o: tw.matmul(x, o), False),  # GEMM reads x while writing C
    "transposed": (lambda x, o: tw.transpose(x) * o, True),
    "other_shape": (lambda x, o: tw.reduce_sum(x * o, axis=0), False),
    "aliased": (lambda x, o: x * o + 1.0, False),      # f(x, x): o is x's memory too
    "strided": (lambda x, o: x * o + 1.0, False),      # the step's private copy is used
    "reference": (lambda x, o: x * o + 1.0, False),    # the reference target ignores it
}


@pytest.mark.parametrize("case", sorted(DONATION_CASES))
def test_donation_only_where_the_buffer_may_be_overwritten(case):
    fn, donates = DONATION_CASES[case]
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 8)).astype(np.float32)
    other = rng.standard_normal((8, 8)).astype(np.float32)
    f = tw.compile(fn, target="reference" if case == "reference" else "cpu",
                   donate_argnums=(0,))
    arg = np.asfortranarray(x) if case == "strided" else x
    o = arg if case == "aliased" else other
    keep = x.copy()
    want = tw.compile(fn, target="reference")(keep, keep if case == "aliased" else other)
    got = f(arg, o)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert np.may_share_memory(got, arg) == donates
    if donates:
        assert not arg.flags.writeable
    else:  # a donation that did not happen leaves the caller's array alone
        assert arg.flags.writeable and np.array_equal(arg, keep)


def test_donate_argnums_is_checked():
    for bad in (-1, "x", 1.5, True):
        with pytest.raises(InvalidArgumentError, match="donate_argnums"):
            tw.compile(lambda x: x, donate_argnums=bad)
    f = tw.compile(lambda x, y: x + y, donate_argnums=[0, 1, 5], target="cpu")
    x, y = np.ones(4, np.float32), np.full(4, 2.0, np.float32)
    out = f(x, y)  # one result: only one donated buffer can be it
    assert np.array_equal(out, np.full(4, 3.0, np.float32))
    assert np.may_share_memory(out, x) != np.may_share_memory(out, y)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(301, 257, 200), (400, 301, 100), (2, 72, 700, 100)])
def test_per_node_matmul_kernel_is_identical_on_any_thread_count(monkeypatch, dtype, shape):
    """The dataflow executor's MatMul kernel (`blas.MatMulKernel`, shapes known at run
    time) cuts a product over threads only as `gemm_split` allows for its shape: on
    SkylakeX OpenBLAS a row cut of a dgemm with an odd n changed bits before."""
    from tensorweave.targets.cpu.blas import MatMulKernel
    *batch, m, n, k = shape
    rng = np.random.default_rng(m * n)
    a = rng.standard_normal((*batch, m, k)).astype(dtype)
    b = rng.standard_normal((*batch, k, n)).astype(dtype)
    node = single_node("MatMul", [a, b])
    outs = []
    for threads in (1, 2, 3):
        monkeypatch.setenv("TW_NUM_THREADS", str(threads))
        outs.append(MatMulKernel(node)([a, b])[0])
    assert outs[0].tobytes() == outs[1].tobytes() == outs[2].tobytes()
    np.testing.assert_allclose(outs[0], a.astype(np.float64) @ b.astype(np.float64),
                               rtol=1e-4, atol=1e-3)


# ------------------------------------------------------------- streaming stores

STREAMED = codegen.NONTEMPORAL_MIN_BYTES // 4 + 21  # float32 elements: a streamed output


def test_streaming_store_kernel_code():
    """A fused loop writes its outputs with non-temporal stores guarded by a run-time
    alignment check, and fences them before it returns."""
    program = codegen.Program((as_dtype("f32"), as_dtype("f32")), (
        codegen.Instr("Add", (), (0, 1), (as_dtype("f32"),) * 2, as_dtype("f32")),), (2,))
    text = codegen.build_kernel(program, codegen.Layout(1, 0, ((True,),) * 3), width=16)
    assert "!nontemporal" in text and "fence seq_cst" in text
    if platform.machine() in ("x86_64", "AMD64"):
        assert "vmovntps" in jit.assembly(text) or "movntps" in jit.assembly(text)


def test_compute_bound_loops_store_normally():
    """A loop with a transcendental (`codegen.COMPUTE_BOUND_OPS`) is bound by compute:
    streaming its stores doubled the W4 gelu's time on the AMD host, so it stores
    normally; the memory-bound Add above keeps streaming."""
    f32 = as_dtype("f32")
    program = codegen.Program((f32, f32), (
        codegen.Instr("Tanh", (), (0,), (f32,), f32),
        codegen.Instr("Add", (), (2, 1), (f32, f32), f32)), (3,))
    text = codegen.build_kernel(program, codegen.Layout(1, 0, ((True,),) * 3), width=16)
    assert "!nontemporal" not in text


def test_streamed_results_equal_normal_ones_aligned_or_not():
    """Outputs over `NONTEMPORAL_MIN_BYTES` take the streaming stores where aligned: the
    values are those of the normal stores, into aligned results (the pool's), a
    misaligned donated buffer and rows that start off vector boundaries."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(STREAMED).astype(np.float32)
    y = rng.standard_normal(STREAMED).astype(np.float32)
    want = x + y * np.float32(2.0)  # exact in one rounding, FMA-contracted or not
    f = tw.compile(lambda x, y: x + y * 2.0, target="cpu")
    got = f(x, y)
    assert got.ctypes.data % allocator.ALIGN == 0  # the streaming path is taken
    np.testing.assert_array_equal(got, want)

    g = tw.compile(lambda x, y: x + y * 2.0, target="cpu", donate_argnums=0)
    raw = np.empty(STREAMED + 16, np.float32)
    skip = (-raw.ctypes.data % 64) // 4 + 1  # 4 bytes past a cache line
    misaligned = raw[skip:skip + STREAMED]
    misaligned[:] = x
    assert misaligned.ctypes.data % 64 == 4
    out = g(misaligned, y)
    assert _address(out) == _address(misaligned)
    np.testing.assert_array_equal(out, want)

    rows = x[:STREAMED - STREAMED % 1001].reshape(-1, 1001)  # rows of 4004 bytes
    bias = y[:1001]
    np.testing.assert_array_equal(tw.compile(lambda r, b: r + b * 2.0, target="cpu")(rows, bias),
                                  rows + bias * np.float32(2.0))
