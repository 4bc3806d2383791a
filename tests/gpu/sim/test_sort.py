"""The stable sort of index positions and the first-occurrence ranks (`targets/gpu/sort.py`)
under the simulator: chunk sorts and merges against NumPy's stable argsort for drawn
index counts (not multiples of the chunk), chunk sizes small enough that the merges run,
duplicates, negative and int64-wide values, and the counted form; then the scatters and
DeduplicateSlices end to end with a chunk of 2, bitwise the reference's, with a bad
index's message."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda

import tensorweave as tw
from tensorweave.compiler.dtypes import int32, int64
from tensorweave.compiler.types import TensorType
from tensorweave.errors import InvalidArgumentError
from tensorweave.frontend.ops.scatter import deduplicate, gather_rows, scatter_add, scatter_sub
from tensorweave.targets.gpu import sort
from tensorweave.targets.gpu.compile import configured


def _indices(draw, n: int, dtype):
    wide = draw(st.booleans())
    lo, hi = ((-2**62, 2**62) if dtype is int64 else (-2**31, 2**31 - 1)) if wide else (-3, 4)
    pool = draw(st.lists(st.integers(lo, hi), min_size=1, max_size=5))
    return np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)), dtype.np)


def _sorted(values: np.ndarray, chunk: int, count: int | None = None) -> np.ndarray:
    """Run the sort's passes on `values` in the simulator; the first `count` positions
    of `order` (all when None)."""
    n = values.size
    passes = sort.sort_passes(TensorType(int32 if values.dtype == np.int32 else int64, (n,)),
                              n, "k", counted=count is not None, chunk=chunk)
    assert len(passes) == 1 + len(sort.merge_widths(n, chunk))
    ind = cuda.to_device(values)
    bufs = [cuda.to_device(np.full(n, -1, np.int32)) for _ in range(2)]
    cnt = [cuda.to_device(np.array([count], np.int32))] if count is not None else []
    for p in passes:
        src = [] if p.src is None else [bufs[p.src]]
        configured(p.kernel)(ind, *cnt, *src, bufs[p.dst])
    return bufs[0].copy_to_host()[:n if count is None else count]


@settings(max_examples=6, deadline=None)
@given(st.data())
def test_the_sort_is_numpys_stable_argsort(data):
    dtype = data.draw(st.sampled_from([int32, int64]))
    n = data.draw(st.integers(1, 23))
    chunk = data.draw(st.sampled_from([1, 2, 3, 4]))
    values = _indices(data.draw, n, dtype)
    np.testing.assert_array_equal(_sorted(values, chunk), np.argsort(values, kind="stable"))
    count = data.draw(st.integers(0, n))  # the counted form sorts the first `count`
    np.testing.assert_array_equal(_sorted(values, chunk, count),
                                  np.argsort(values[:count], kind="stable"))


@settings(max_examples=6, deadline=None)
@given(st.data())
def test_runs_are_numbered_by_first_occurrence(data):
    dtype = data.draw(st.sampled_from([int32, int64]))
    n = data.draw(st.integers(1, 19))
    chunk = data.draw(st.sampled_from([1, 2, 3, 5]))
    values = _indices(data.draw, n, dtype)
    order = np.argsort(values, kind="stable").astype(np.int32)
    kernels, chunks = sort.first_kernels(TensorType(dtype, (n,)), n, "r", chunk)
    assert chunks == -(-n // chunk)
    ind, od = cuda.to_device(values), cuda.to_device(order)
    first = cuda.to_device(np.full(n, -7, np.int32))
    sums = cuda.to_device(np.full(chunks, -7, np.int32))
    count = cuda.to_device(np.full(1, -7, np.int32))
    for kernel, args in zip(kernels, ([ind, od, first], [first, sums], [sums, count],
                                      [first, sums])):
        configured(kernel)(*args)
    _, at = np.unique(values, return_index=True)
    row_of = {values[p]: r for r, p in enumerate(sorted(at))}  # first-occurrence order
    got = first.copy_to_host()
    heads = [k for k in range(n) if k == 0 or values[order[k - 1]] != values[order[k]]]
    assert {values[order[k]]: got[order[k]] for k in heads} == row_of
    assert int(count.copy_to_host()[0]) == len(at)


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 2: a dozen indices take three merge passes."""
    monkeypatch.setattr(sort, "SORT_CHUNK", 2)


def _run_both(fn_of, *args):
    """`fn_of(target)` (fresh variables per target) compiled and run on the reference
    and gpu targets: their results."""
    out = []
    for target in ("reference", "gpu"):
        fn, variables = fn_of(target)
        out.append(([np.asarray(r) for r in fn(*args)], [v.numpy() for v in variables]))
    return out


def test_scatters_and_deduplicate_with_merges_are_bitwise_the_reference(small_chunks):
    rng = np.random.default_rng(5)
    start = (rng.normal(size=(6, 3)) * 10.0 ** rng.integers(-3, 4, (6, 3))).astype(np.float32)
    idx = np.array([5, 1, 5, 0, 1, 5, 3, 5, 0, 1, 5, 2, 1], np.int64)  # 13: not a power of 2
    upd = (rng.normal(size=(13, 3)) * 10.0 ** rng.integers(-4, 5, (13, 3))).astype(np.float32)

    compiled = {}

    def fn_of(target):
        v = tw.Variable(start, name=f"sort_v_{target}")
        w = tw.Variable(start * 3, name=f"sort_w_{target}")

        @tw.compile(target=target)
        def f(i, u):
            scatter_add(v, i, u)
            summed, rows = deduplicate(u, i)
            scatter_sub(w, rows, summed * 0.5)
            return [gather_rows(v, i)]
        compiled[target] = f
        return f, [v, w]

    (ref, ref_vars), (gpu, gpu_vars) = _run_both(fn_of, idx, upd)
    for a, b in zip(ref + ref_vars, gpu + gpu_vars):
        assert a.tobytes() == b.tobytes()
    exe = compiled["gpu"].get_concrete_function(idx, upd).executable
    assert exe.native_reason is None and not exe.fallbacks
    names = [k.name for step in exe._steps.values() for k in step.plan.kernels]
    assert sum("_merge" in k for k in names) == 3 * 3  # 13 positions: widths 2, 4, 8


def test_a_bad_index_among_many_names_the_first_one(small_chunks):
    v = tw.Variable(np.zeros((4, 2), np.float32), name="sort_bad")

    @tw.compile(target="gpu")
    def f(i, u):
        scatter_add(v, i, u)
        return v.read_value()

    idx = np.array([1, 3, 0, 2, 9, 1, -1, 3, 0], np.int32)
    with pytest.raises(InvalidArgumentError, match=r"indices\[4\] = 9 is not in \[0, 4\)"):
        f(idx, np.ones((9, 2), np.float32))
    np.testing.assert_array_equal(v.numpy(), 0.0)
    exe = f.get_concrete_function(idx, np.ones((9, 2), np.float32)).executable
    assert exe.native_reason is None  # the GPU step's own check, not the reference's
    assert any("_merge" in k.name for s in exe._steps.values() for k in s.plan.kernels)
