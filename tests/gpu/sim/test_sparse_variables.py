"""Sparse variable ops on the gpu target (numba's simulator) against the reference:
ResourceGather and ResourceScatterAdd/Sub/Update on random shapes, dtypes and indices
with repeats (bitwise equal: the GPU sums a row's updates in the reference's order),
bad indices reported with the reference's message and the user's line, DeduplicateSlices
padded to its number of indices, and embedding models trained with sparse SGD, Adam,
Adagrad and Momentum in one GPU step."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.errors import InvalidArgumentError
from tensorweave.frontend.ops.scatter import (
    deduplicate,
    gather_rows,
    scatter_add,
    scatter_sub,
    scatter_update,
)
from tensorweave.targets.gpu.step import Copy, Launch

SCATTERS = {"add": scatter_add, "sub": scatter_sub, "update": scatter_update}


def _values(rng: np.random.Generator, dtype: np.dtype, shape: tuple) -> np.ndarray:
    if dtype.kind == "f":  # varied magnitudes: the order of float additions shows
        return (rng.normal(size=shape) * 10.0 ** rng.integers(-3, 4, size=shape)).astype(dtype)
    info = np.iinfo(dtype)  # the whole range: sums wrap
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)


def _scatter_step(kind: str, target: str, init: np.ndarray):
    """A fresh variable, and a function reading it, scattering into it and gathering the
    touched rows: (read before, gathered after) come back."""
    v = tw.Variable(init.copy())

    @tw.compile(target=target)
    def f(i, u):
        before = v.read_value()
        SCATTERS[kind](v, i, u)
        return before, gather_rows(v, i)
    return v, f


def _run_both(kind: str, init: np.ndarray, calls: list[tuple[np.ndarray, np.ndarray]]):
    out = {}
    for target in ("reference", "gpu"):
        v, f = _scatter_step(kind, target, init)
        results = [f(i, u) for i, u in calls]
        out[target] = (results, v.numpy(), f)
    return out


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # sums wrap
@settings(settings.get_profile("gpu-sim"))
@given(kind=st.sampled_from(sorted(SCATTERS)),
       dtype=st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.int8, np.uint8]),
       idt=st.sampled_from([np.int32, np.int64]),
       rows=st.integers(1, 6),
       rest=st.lists(st.integers(1, 3), max_size=2),
       lead=st.lists(st.integers(1, 4), min_size=1, max_size=2),
       seed=st.integers(0, 2**32 - 1))
def test_scatters_and_gathers_are_bitwise_the_reference(kind, dtype, idt, rows, rest, lead,
                                                        seed):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    init = _values(rng, dtype, (rows, *rest))
    # few rows, several indices: repeats are the rule
    calls = [(rng.integers(0, rows, size=lead).astype(idt),
              _values(rng, dtype, (*lead, *rest))) for _ in range(2)]
    out = _run_both(kind, init, calls)
    (ref, ref_var, _), (gpu, gpu_var, f) = out["reference"], out["gpu"]
    np.testing.assert_array_equal(gpu_var, ref_var)
    for r, g in zip(ref, gpu):
        for a, b in zip(r, g):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(b, a)
    exe = f.get_concrete_function(*calls[0]).executable
    assert exe.native_reason is None and exe.fallbacks == {}


def test_float_sums_of_repeated_rows_follow_the_reference_order():
    # row 1 gets 1, 1e8, -1e8: 0 in float32 summed in position order, 1 summed backwards
    init = np.zeros((2, 1), np.float32)
    i = np.array([1, 0, 1, 1], np.int32)
    u = np.array([[1.0], [5.0], [1e8], [-1e8]], np.float32)
    out = _run_both("add", init, [(i, u)])
    np.testing.assert_array_equal(out["gpu"][1], out["reference"][1])
    assert out["gpu"][1][1, 0] == 0.0


def test_update_keeps_the_last_of_repeated_rows():
    init = np.zeros((3, 2), np.int32)
    i = np.array([2, 0, 2, 2, 0], np.int64)
    u = np.arange(10, dtype=np.int32).reshape(5, 2)
    out = _run_both("update", init, [(i, u)])
    np.testing.assert_array_equal(out["gpu"][1], [[8, 9], [0, 0], [6, 7]])
    np.testing.assert_array_equal(out["gpu"][1], out["reference"][1])


def _message(fn, *args) -> str:
    with pytest.raises(InvalidArgumentError) as e:
        fn(*args)
    return re.sub(r"variable '[^']*'", "variable 'V'", str(e.value))  # each test's own


@pytest.mark.parametrize("kind", ["gather", *sorted(SCATTERS)])
@pytest.mark.parametrize("bad", [[1, 7, -2, 9], [0, -3, 12], [-1]], ids=["past", "negative",
                                                                          "only"])
def test_a_bad_index_is_the_references_error_and_changes_nothing(kind, bad):
    init = np.arange(8, dtype=np.float32).reshape(4, 2)
    good = (np.array([3, 1, 3], np.int32), np.ones((3, 2), np.float32))
    wrong = (np.array(bad, np.int32), np.ones((len(bad), 2), np.float32))
    messages, finals = {}, {}
    for target in ("reference", "gpu"):
        v = tw.Variable(init.copy())

        @tw.compile(target=target)
        def f(i, u):
            if kind == "gather":
                v.assign_add(tw.ones_like(v))  # a dense update before the failing op
                return gather_rows(v, i) * 2.0
            SCATTERS[kind](v, i, u)
            return v.read_value()
        f(*good)
        after_good = v.numpy()
        messages[target] = _message(f, *wrong)
        if target == "gpu":  # a failed step writes nothing back
            np.testing.assert_array_equal(v.numpy(), after_good)
        finals[target] = (f(*good), v.numpy())  # the device copy is in step again
    op = "ResourceGather" if kind == "gather" else f"ResourceScatter{kind.title()}"
    first = next(k for k, x in enumerate(bad) if not 0 <= x < 4)
    assert f"indices[{first}] = {bad[first]} is not in [0, 4) (rows of variable" in \
        messages["gpu"]
    assert op in messages["gpu"] and "test_sparse_variables.py:" in messages["gpu"]
    assert messages["gpu"] == messages["reference"]
    if kind != "gather":  # the reference's dataflow executor applies the assign_add
        for a, b in zip(finals["gpu"], finals["reference"]):  # before the gather fails
            np.testing.assert_array_equal(a, b)


def _embedding_model(target: str, optimizer: str, steps: int = 2):
    """A bag-of-words classifier: mean of looked-up embeddings, a dense layer, trained
    with `optimizer` through `minimize` (sparse gradients for the embedding)."""
    rng = np.random.default_rng(7)
    emb = tw.Variable(rng.normal(size=(12, 4)).astype(np.float32) * 0.5)
    w = tw.Variable(rng.normal(size=(4, 3)).astype(np.float32) * 0.5)
    opt = {"sgd": lambda: tw.optimizers.SGD(0.5), "adam": lambda: tw.optimizers.Adam(0.05),
           "adagrad": lambda: tw.optimizers.Adagrad(0.3),
           "momentum": lambda: tw.optimizers.Momentum(0.2, nesterov=True)}[optimizer]()

    @tw.compile(target=target)
    def step(tok, y):
        h = tw.reduce_mean(tw.gather(emb, tok), axis=1)
        loss = tw.reduce_mean(tw.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=tw.matmul(h, w)))
        opt.minimize(loss, var_list=[emb, w])
        return loss

    tok = rng.integers(0, 12, (5, 3)).astype(np.int32)
    tok[1, 2] = tok[0, 0]  # a repeated row
    y = rng.integers(0, 3, 5).astype(np.int64)
    losses = [float(step(tok, y)) for _ in range(steps)]
    return losses, [emb.numpy(), w.numpy()], step.get_concrete_function(tok, y).executable


@pytest.mark.parametrize("optimizer", ["sgd", "adam", "adagrad", "momentum"])
def test_an_embedding_model_trains_in_one_gpu_step(optimizer):
    ref_losses, ref_params, _ = _embedding_model("reference", optimizer)
    losses, params, exe = _embedding_model("gpu", optimizer)
    assert exe.native_reason is None and exe.fallbacks == {}
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    assert losses[-1] < losses[0]
    for p, r in zip(params, ref_params):
        np.testing.assert_allclose(p, r, rtol=1e-5, atol=1e-6)
    plan = next(iter(exe._steps.values())).plan
    ops = [a.node.op for a in plan.actions if isinstance(a, Launch)]
    assert "ResourceGather" in ops
    if optimizer == "sgd":  # the sparse update, in place: no dense gradient at all
        assert "ResourceScatterSub" in ops and "UnsortedSegmentSum" not in ops
    if optimizer in ("adagrad", "momentum"):  # repeated rows summed first
        assert {"DeduplicateSlices", "ResourceScatterUpdate"} <= set(ops)
    # the embedding's read only orders the update after it: no snapshot copy
    emb = plan.var_names[0]
    assert not [a for a in plan.actions if isinstance(a, Copy) and a.src.storage.key == emb]


def _dedupe_step(target: str, init: np.ndarray, scale: float):
    """Fresh variables; a function summing the repeated rows of (u, i) with
    DeduplicateSlices, scattering the sums into one variable and gathering the other's
    rows at the unique indices into it."""
    v, w = tw.Variable(init.copy()), tw.Variable(init.copy() * 3)

    @tw.compile(target=target)
    def f(i, u):
        summed, rows = deduplicate(u, i)
        scatter_update(v, rows, summed * scale + gather_rows(w, rows))
        scatter_add(w, rows, tw.square(summed))
        return v.read_value()
    return f, v, w


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # sums wrap
@settings(settings.get_profile("gpu-sim"))
@given(dtype=st.sampled_from([np.float32, np.float64, np.int32, np.int8]),
       idt=st.sampled_from([np.int32, np.int64]),
       rows=st.integers(1, 6), rest=st.lists(st.integers(1, 3), max_size=2),
       n=st.integers(1, 8), seed=st.integers(0, 2**32 - 1))
def test_deduplicated_updates_are_bitwise_the_reference(dtype, idt, rows, rest, n, seed):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    init = _values(rng, dtype, (rows, *rest))
    calls = [(rng.integers(0, rows, size=n).astype(idt), _values(rng, dtype, (n, *rest)))
             for _ in range(2)]
    out = {}
    for target in ("reference", "gpu"):
        f, v, w = _dedupe_step(target, init, 2)
        out[target] = ([f(i, u) for i, u in calls], v.numpy(), w.numpy(), f)
    for a, b in zip(out["reference"][:3], out["gpu"][:3]):
        np.testing.assert_array_equal(np.asarray(b), np.asarray(a))
    exe = out["gpu"][3].get_concrete_function(*calls[0]).executable
    assert exe.native_reason is None and exe.fallbacks == {}


def test_a_bad_index_after_deduplication_is_the_references_error():
    init = np.arange(8, dtype=np.float32).reshape(4, 2)
    i, u = np.array([2, 9, 2, -1], np.int32), np.ones((4, 2), np.float32)
    messages = {}
    for target in ("reference", "gpu"):
        f, v, _ = _dedupe_step(target, init, 2)
        messages[target] = _message(f, i, u)
        np.testing.assert_array_equal(v.numpy(), init)
    # the position is the unique index's (first-occurrence order: 2, 9, -1)
    assert "indices[1] = 9 is not in [0, 4)" in messages["gpu"]
    assert messages["gpu"] == messages["reference"]


def test_deduplicated_rows_reaching_a_result_keep_the_graph_off_the_gpu_step():
    def f(i, u):
        summed, rows = deduplicate(u, i)
        return tw.reduce_sum(summed, axis=1), rows
    i, u = np.array([1, 0, 1], np.int64), np.ones((3, 2), np.float32)
    gpu = tw.compile(f, target="gpu")
    for a, b in zip(gpu(i, u), tw.compile(f, target="reference")(i, u)):
        np.testing.assert_array_equal(a, b)
    reason = gpu.get_concrete_function(i, u).executable.native_reason
    assert "DeduplicateSlices" in reason and "known only at run time" in reason
