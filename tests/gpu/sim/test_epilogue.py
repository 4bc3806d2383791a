"""Epilogue fusion on the gpu target (`targets/gpu/epilogue.py`, stage ``epilogue``): the
elementwise cluster that alone reads a MatMul or Conv2D runs in the product kernel's
store. Checked against the reference target (float32 within `cases.tolerance`: 2e-5
relative, 2e-6 absolute; float64 within 1e-12), on the plan (one launch where there
were two, the same results as with ``TW_EPILOGUE_FUSION=0``), and on what must not be
fused: a product read twice, or read by a non-elementwise op."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.passes.epilogue import ENV
from tensorweave.targets.gpu.step import Launch, walk_actions
from tests.gpu.cases import tolerance
from tests.gpu.plans import plan_of

ACTIVATIONS = {"none": lambda h: h, "relu": tw.nn.relu, "tanh": tw.tanh,
               "sigmoid": tw.sigmoid, "relu6": tw.nn.relu6}


def _ops(fn, arrays) -> list[str]:
    """The op of each launch of `fn`'s gpu step for `arrays`."""
    return [a.node.op for a in walk_actions(plan_of(fn, arrays).actions)
            if isinstance(a, Launch)]


def _check(fn, arrays) -> list:
    """`fn` on the gpu target against the reference target; the gpu results."""
    expected = tw.compile(fn, target="reference")(*arrays)
    gpu = tw.compile(fn, target="gpu")
    actual = gpu(*arrays)
    exe = gpu.get_concrete_function(*arrays).executable
    assert exe.native_reason is None and not exe.fallbacks
    actual, expected = ([x] if not isinstance(x, (tuple, list)) else list(x)
                        for x in (actual, expected))
    for a, e in zip(actual, expected, strict=True):
        a, e = np.asarray(a), np.asarray(e)
        assert a.dtype == e.dtype and a.shape == e.shape
        if e.dtype.kind == "f":
            np.testing.assert_allclose(a, e, **tolerance(e.dtype))
        else:
            np.testing.assert_array_equal(a, e)
    return actual


@settings(max_examples=8, deadline=None)
@given(m=st.integers(1, 18), k=st.integers(1, 9), n=st.integers(1, 18),
       batch=st.sampled_from([(), (2,)]), ta=st.booleans(), tb=st.booleans(),
       act=st.sampled_from(sorted(ACTIVATIONS)), residual=st.booleans(),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))
def test_matmul_epilogues_match_the_reference(m, k, n, batch, ta, tb, act, residual, dtype,
                                              seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (*batch, *((k, m) if ta else (m, k)))).astype(dtype)
    b = rng.uniform(-1, 1, (*batch, *((n, k) if tb else (k, n)))).astype(dtype)
    bias = rng.uniform(-1, 1, (n,)).astype(dtype)
    r = rng.uniform(-1, 1, (*batch, m, n)).astype(dtype)

    def f(a, b, bias, r):
        h = ACTIVATIONS[act](tw.matmul(a, b, transpose_a=ta, transpose_b=tb) + bias)
        return h + r if residual else h * 2.0

    _check(f, [a, b, bias, r])
    assert _ops(f, [a, b, bias, r]) == ["FusedMatMul"]  # the cluster is in the product


@settings(max_examples=4, deadline=None)
@given(h=st.integers(1, 5), w=st.integers(1, 5), c=st.integers(1, 3), o=st.integers(1, 4),
       stride=st.sampled_from([1, 2]), padding=st.sampled_from(["SAME", "VALID"]),
       act=st.sampled_from(sorted(ACTIVATIONS)),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))
def test_conv2d_epilogues_match_the_reference(h, w, c, o, stride, padding, act, dtype, seed):
    rng = np.random.default_rng(seed)
    kh, kw = min(2, h), min(3, w)
    x = rng.uniform(-1, 1, (2, h, w, c)).astype(dtype)
    k = rng.uniform(-1, 1, (kh, kw, c, o)).astype(dtype)
    bias = rng.uniform(-1, 1, (o,)).astype(dtype)

    def f(x, k, bias):
        y = tw.nn.bias_add(tw.nn.conv2d(x, k, stride, padding), bias)
        return ACTIVATIONS[act](y), y > 0.25  # two outputs, one bool

    _check(f, [x, k, bias])
    assert _ops(f, [x, k, bias]) == ["FusedConv2D"]


def test_fused_and_unfused_steps_agree_bitwise(monkeypatch):
    """The epilogue computes each element from the product rounded to its dtype, as the
    unfused cluster reads it: the same bits, one launch instead of two."""
    rng = np.random.default_rng(3)
    arrays = [rng.normal(size=(9, 5)).astype(np.float32),
              rng.normal(size=(5, 7)).astype(np.float32),
              rng.normal(size=(7,)).astype(np.float32)]

    def f(a, b, c):
        return tw.tanh(tw.matmul(a, b) + c) * 3.0

    fused = tw.compile(f, target="gpu")(*arrays)
    assert _ops(f, arrays) == ["FusedMatMul"]
    monkeypatch.setenv(ENV, "0")
    unfused = tw.compile(f, target="gpu")(*arrays)
    assert _ops(f, arrays) == ["MatMul", "Fusion"]
    np.testing.assert_array_equal(fused, unfused)


def test_a_product_read_twice_is_not_fused():
    """The product is also a result: it must be stored, so its cluster stays apart."""
    rng = np.random.default_rng(4)
    arrays = [rng.normal(size=(4, 3)).astype(np.float64),
              rng.normal(size=(3, 5)).astype(np.float64)]

    def f(a, b):
        p = tw.matmul(a, b)
        return p, tw.nn.relu(p + 1.0)

    p, r = _check(f, arrays)
    np.testing.assert_allclose(r, np.maximum(p + 1.0, 0.0), rtol=1e-15)
    assert _ops(f, arrays) == ["MatMul", "Fusion"]


def test_a_product_read_by_a_non_elementwise_op_is_not_fused():
    """Softmax (its own kernel) and a cluster with a reduction read the product: no
    epilogue (an epilogue is elementwise only)."""
    rng = np.random.default_rng(5)
    arrays = [rng.normal(size=(4, 3)).astype(np.float32),
              rng.normal(size=(3, 6)).astype(np.float32)]

    def softmax_of(a, b):
        return tw.nn.softmax(tw.matmul(a, b))

    def reduced(a, b):
        return tw.reduce_sum(tw.exp(tw.matmul(a, b)), axis=-1)

    for f in (softmax_of, reduced):
        _check(f, arrays)
        ops = _ops(f, arrays)
        assert "MatMul" in ops and "FusedMatMul" not in ops, ops


def test_training_steps_fuse_and_match_the_reference():
    """An MLP training step (relu(x @ w + b), its mask for the gradient as a second,
    bool output of the fused node) on the gpu target against the reference."""
    rng = np.random.default_rng(6)
    init = [rng.normal(size=(6, 8)) * 0.3, np.full(8, 0.1), rng.normal(size=(8, 3)) * 0.3,
            np.zeros(3)]
    x = rng.normal(size=(5, 6)).astype(np.float32)
    y = rng.integers(0, 3, 5).astype(np.int64)
    losses = {}
    for target in ("reference", "gpu"):
        ps = [tw.Variable(p.astype(np.float32)) for p in init]

        @tw.compile(target=target)
        def step(x, y):
            h = tw.nn.relu(tw.matmul(x, ps[0]) + ps[1])
            logits = tw.matmul(h, ps[2]) + ps[3]
            loss = tw.reduce_mean(tw.nn.sparse_softmax_cross_entropy_with_logits(
                labels=y, logits=logits))
            for p, g in zip(ps, tw.gradients(loss, ps)):
                p.assign_sub(0.1 * g)
            return loss
        losses[target] = [float(step(x, y)) for _ in range(2)] + [p.numpy() for p in ps]
        if target == "gpu":
            ops = [a.node.op for a in walk_actions(next(iter(
                step.get_concrete_function(x, y).executable._steps.values())).plan.actions)
                if isinstance(a, Launch)]
            assert ops.count("FusedMatMul") >= 2, ops
    for g, r in zip(losses["gpu"], losses["reference"]):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)
