"""What makes a cold first call of the cpu target cheaper must not change its results:
the LLVM pipeline's choices (`jit.LOOP_UNROLLING`, `LOOP_INTERLEAVING`,
`MERGE_FUNCTIONS`), one shared loop per kind of variable update (`step._update_function`),
node functions kept out of the step function (noinline), and the GEMM split probe's
pooled operands and shared whole product (`lowering._run_split_probe`)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.targets.cpu import jit, lowering
from tensorweave.targets.cpu.step import emit_step


def _native(fn, *args):
    """The NativeStep of `fn` (a cpu-target Function) for `args`."""
    step = fn.get_concrete_function(*args).executable.native_step(list(args))
    assert step is not None
    return step


def _mlp_run(steps: int = 3) -> list[np.ndarray]:
    """Losses and final variables of a small MLP's SGD steps (matmuls with bias + ReLU
    epilogues, softmax cross-entropy, bias gradients of one shape twice)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((24, 20)).astype(np.float32)
    y = np.eye(6, dtype=np.float32)[rng.integers(0, 6, 24)]
    shapes = [(20, 16), (16,), (16, 16), (16,), (16, 6), (6,)]
    vs = [tw.Variable(rng.standard_normal(s).astype(np.float32) * 0.3) for s in shapes]
    opt = tw.optimizers.SGD(0.1)

    @tw.compile(target="cpu")
    def step(x, y):
        h = tw.nn.relu(tw.matmul(x, vs[0]) + vs[1])
        h = tw.nn.relu(tw.matmul(h, vs[2]) + vs[3])
        logits = tw.matmul(h, vs[4]) + vs[5]
        loss = tw.reduce_mean(tw.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
        opt.minimize(loss, var_list=vs)
        return loss

    out = [np.asarray(step(x, y)) for _ in range(steps)]
    assert _native(step, x, y) is not None
    return out + [v.numpy() for v in vs]


def _cnn_run(steps: int = 3) -> list[np.ndarray]:
    """The same for a small CNN (direct convolutions, max pooling and their gradients)."""
    rng = np.random.default_rng(1)
    x = rng.random((4, 8, 8, 1), dtype=np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 4)]
    shapes = [(3, 3, 1, 4), (4,), (3, 3, 4, 4), (4,), (2 * 2 * 4, 3), (3,)]
    vs = [tw.Variable(rng.standard_normal(s).astype(np.float32) * 0.3) for s in shapes]
    opt = tw.optimizers.SGD(0.05)

    @tw.compile(target="cpu")
    def step(x, y):
        h = tw.nn.relu(tw.nn.conv2d(x, vs[0], strides=1, padding="SAME") + vs[1])
        h = tw.nn.max_pool2d(h, 2, 2, "VALID")
        h = tw.nn.relu(tw.nn.conv2d(h, vs[2], strides=1, padding="SAME") + vs[3])
        h = tw.nn.max_pool2d(h, 2, 2, "VALID")
        logits = tw.matmul(tw.reshape(h, [4, 2 * 2 * 4]), vs[4]) + vs[5]
        loss = tw.reduce_mean(tw.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
        opt.minimize(loss, var_list=vs)
        return loss

    out = [np.asarray(step(x, y)) for _ in range(steps)]
    return out + [v.numpy() for v in vs]


@pytest.mark.parametrize("run", [_mlp_run, _cnn_run], ids=["mlp", "cnn"])
def test_pipeline_choices_keep_every_bit(run, monkeypatch):
    """The cheaper pipeline (no LLVM unrolling or interleaving, identical functions
    merged) computes what the previous one did, bit for bit: none of these passes may
    reorder floating-point arithmetic, and this checks that nothing else changed."""
    now = run()
    key = jit.cache_key("module", True)
    monkeypatch.setattr(jit, "LOOP_UNROLLING", True)
    monkeypatch.setattr(jit, "LOOP_INTERLEAVING", True)
    monkeypatch.setattr(jit, "MERGE_FUNCTIONS", False)
    assert jit.cache_key("module", True) != key  # (its own entries, memory and disk)
    before = run()
    assert len(now) == len(before)
    for a, b in zip(now, before):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()


_FLOAT = [np.float32, np.float64]
_INT = [np.int32, np.int64]


@given(n=st.integers(0, 37), float_dtype=st.sampled_from(_FLOAT),
       int_dtype=st.sampled_from(_INT), lr=st.sampled_from([0.1, 0.37, -2.5]),
       seed=st.integers(0, 2**16))
def test_updates_share_one_loop_per_kind_and_match_numpy(n, float_dtype, int_dtype, lr, seed):
    """Two scaled updates (var -= lr * g), an unscaled one (var += g) and a wrapping
    integer one: each kind is one function of the module, called once per variable,
    and every variable ends as NumPy computes it (the product rounded on its own)."""
    rng = np.random.default_rng(seed)
    f0 = [rng.standard_normal(n).astype(float_dtype) for _ in range(3)]
    info = np.iinfo(int_dtype)
    i0 = rng.integers(info.max - 3, info.max, n, endpoint=True, dtype=int_dtype)
    vs = [tw.Variable(a.copy()) for a in f0] + [tw.Variable(i0.copy())]
    g = [rng.standard_normal(n).astype(float_dtype) for _ in range(3)]
    gi = rng.integers(0, 9, n, dtype=int_dtype)

    @tw.compile(target="cpu")
    def step(g0, g1, g2, gi):
        vs[0].assign_sub(lr * g0)
        vs[1].assign_sub(lr * g1)
        vs[2].assign_add(g2)
        vs[3].assign_add(gi)
        return g0

    step(*g, gi)
    c = float_dtype(lr)
    expected = [f0[0] - c * g[0], f0[1] - c * g[1], f0[2] + g[2]]
    for v, e in zip(vs, expected):
        assert v.numpy().dtype == float_dtype and v.numpy().tobytes() == e.tobytes()
    with np.errstate(over="ignore"):
        assert vs[3].numpy().tobytes() == (i0 + gi).tobytes()  # (wraps, like NumPy)

    text = str(emit_step(_native(step, *g, gi).plan, data_offset=0))
    scaled = f"tw_update.AssignSubVariable.{_name(float_dtype)}.scaled"
    added = f"tw_update.AssignAddVariable.{_name(float_dtype)}"
    wrapped = f"tw_update.AssignAddVariable.{_name(int_dtype)}"
    loops = re.findall(r'define internal void @"(tw_update\.[\w.]+)"', text)
    assert sorted(loops) == sorted([scaled, added, wrapped])
    calls = re.findall(r'call void @"(tw_update\.[\w.]+)"', text)
    assert sorted(calls) == sorted([scaled, scaled, added, wrapped])

def _name(dtype) -> str:
    return {np.float32: "f32", np.float64: "f64", np.int32: "i32", np.int64: "i64"}[dtype]


def test_node_functions_stay_out_of_the_step_function():
    """Each node function is called from the optimized step, not inlined into it (which
    made LLVM compile the same kernel twice: the function is external and kept)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 5)).astype(np.float32)
    w = tw.Variable(rng.standard_normal((5, 3)).astype(np.float32))

    @tw.compile(target="cpu")
    def f(x):
        y = tw.nn.relu(tw.matmul(x, w))
        return tw.reduce_sum(tw.exp(y), axis=0)

    np.testing.assert_allclose(f(x), np.exp(np.maximum(x @ w.numpy(), 0)).sum(0), rtol=1e-5)
    text = str(emit_step(_native(f, x).plan, data_offset=0))
    defined = re.findall(r'define i32 @"(n\d+\.\w+)"\(i8\*\* %"\.1", i8\*\* %"\.2"\) ([^\n{]*)',
                         text)
    assert len(defined) >= 2 and all("noinline" in attrs.split() for _, attrs in defined)
    nodes = [name for name, _ in defined]
    module = jit.parse_and_optimize(text, loop_vectorize=True)
    step_fn = str(module.get_function("tw_step"))
    for name in nodes:
        assert re.search(rf'call [^\n]*@"?{re.escape(name)}"?\(', step_fn), name


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True)])
def test_split_probe_answers_do_not_depend_on_the_kept_whole_product(ta, tb):
    """A row probe that reuses the column probe's whole product answers as one that
    computes it again, a probe of another shape, dtype or transpose never reuses it, and
    a cut that is the whole call passes."""
    from tensorweave.targets.cpu.blas import register_blas
    if not register_blas():
        pytest.skip("no BLAS")
    m, n, k = 40, 48, 33
    row, col = 8, 16
    lowering._SPLIT_PROBE_WHOLE.clear()
    lowering._run_split_probe("f32", ta, tb, m, n, k, 2, col, "cols")
    assert list(lowering._SPLIT_PROBE_WHOLE) == [("f32", ta, tb, m, n, k)]
    kept = lowering._run_split_probe("f32", ta, tb, m, n, k, 2, row, "rows")
    lowering._SPLIT_PROBE_WHOLE.clear()
    fresh = lowering._run_split_probe("f32", ta, tb, m, n, k, 2, row, "rows")
    assert kept == fresh
    lowering._run_split_probe("f64", ta, tb, m, n, k, 2, row, "rows")
    assert list(lowering._SPLIT_PROBE_WHOLE) == [("f64", ta, tb, m, n, k)]
    # one "thread": the cut is the whole call itself, which the probe (stopping at the
    # first block that differs) must find equal, with the whole kept or not
    for how, align in (("rows", row), ("cols", col)):
        assert lowering._run_split_probe("f64", ta, tb, m, n, k, 1, align, how)
        lowering._SPLIT_PROBE_WHOLE.clear()
        assert lowering._run_split_probe("f64", ta, tb, m, n, k, 1, align, how)
    lowering._SPLIT_PROBE_WHOLE.clear()
