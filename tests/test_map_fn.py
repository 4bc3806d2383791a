"""tw.map_fn (a loop), tw.vectorized_map and tw.vmap (batched, with a logged fallback to
map_fn): results against Python loops over NumPy, gradients against finite differences,
eagerly and on the reference and cpu targets."""

import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.frontend import nest
from tests.grads.strategies import seeds, values
from tests.helpers import TARGETS, check_gradients

MODES = ["eager", *TARGETS]
rng = np.random.default_rng(2)
W = rng.normal(size=(3, 2))


def run(mode, fn, *args):
    if mode == "eager":
        return nest.map_structure(np.asarray, fn(*[tw.constant(a) for a in args]))
    return tw.compile(fn, target=mode)(*args)


def per_row(row):
    """One element: a matmul with a captured weight, reductions with axes, a softmax."""
    h = tw.tanh(tw.matmul(tw.expand_dims(row, 0), W))[0]
    return tw.nn.softmax(h * tw.reduce_max(row)) + tw.reduce_sum(row * row, axis=0)


def per_row_np(row):
    h = np.tanh(row[None] @ W)[0] * row.max()
    e = np.exp(h - h.max())
    return e / e.sum() + (row * row).sum()


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=3)
@given(seed=seeds, n=st.integers(1, 4))
def test_map_fn_and_vectorized_map_match_a_loop(mode, seed, n):
    x = values(seed, (n, 3))
    expected = np.stack([per_row_np(r) for r in x])
    for mapper in (tw.map_fn, tw.vectorized_map):
        got = run(mode, lambda x, mapper=mapper: mapper(per_row, x), x)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_vectorized_map_batches_without_a_loop(caplog):
    x = rng.normal(size=(4, 3))

    def f(x):
        return tw.vectorized_map(lambda r: tw.transpose(tw.reshape(r[1:], [1, 2])) * r[0]
                                 + tw.concat([r[:1], r[2:]], 0), x)

    with caplog.at_level(logging.DEBUG, logger="tensorweave"):
        got = tw.compile(f)(x)
        graph = tw.compile(f).get_concrete_function(x).graph
    ops = {n.op for n in graph.nodes}
    assert "While" not in ops, ops
    assert not [r for r in caplog.records if "falling back" in r.getMessage()]
    expected = np.stack([r[1:].reshape(1, 2).T * r[0] + np.concatenate([r[:1], r[2:]])
                         for r in x])
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_nested_elems_and_output_signature(mode):
    a = rng.normal(size=(3, 2))
    b = rng.normal(size=(3,))

    def fn(e):
        return {"s": tw.reduce_sum(e["a"]) * e["b"], "pos": tw.cast(e["b"] > 0, tw.int32)}

    expected = {"s": a.sum(axis=1) * b, "pos": (b > 0).astype(np.int32)}
    signature = {"s": tw.float64, "pos": tw.int32}
    for got in (run(mode, lambda a, b: tw.map_fn(fn, {"a": a, "b": b},
                                                 fn_output_signature=signature), a, b),
                run(mode, lambda a, b: tw.vectorized_map(fn, {"a": a, "b": b}), a, b)):
        np.testing.assert_allclose(got["s"], expected["s"], rtol=1e-12)
        np.testing.assert_array_equal(got["pos"], expected["pos"])
        assert got["pos"].dtype == np.int32


@pytest.mark.parametrize("mode", MODES)
def test_map_fn_with_a_full_signature_handles_no_elements(mode):
    empty = np.zeros((0, 2))
    got = run(mode, lambda x: tw.map_fn(lambda r: r * 2.0, x,
                                        fn_output_signature=tw.TensorSpec([2], tw.float64)),
              empty)
    assert got.shape == (0, 2) and got.dtype == np.float64


@pytest.mark.parametrize("target", TARGETS)
def test_gradients_through_map_fn_and_vectorized_map(target):
    x = rng.normal(size=(3, 3))
    check_gradients(lambda x: tw.map_fn(per_row, x), x, target=target)
    check_gradients(lambda x: tw.vectorized_map(per_row, x), x, target=target)


def test_eager_tape_through_vectorized_map_and_map_fn():
    x = rng.normal(size=(3, 3))
    expected = tw.compile(tw.grad(lambda x: tw.reduce_sum(tw.map_fn(per_row, x) ** 2)))(x)
    for mapper in (tw.map_fn, tw.vectorized_map):
        xt = tw.constant(x)
        with tw.GradientTape() as tape:
            tape.watch(xt)
            y = tw.reduce_sum(mapper(per_row, xt) ** 2)
        np.testing.assert_allclose(tape.gradient(y, xt).numpy(), expected, rtol=1e-10)


@pytest.mark.parametrize("mode", MODES)
def test_fallback_to_map_fn_is_logged_with_the_reason(mode, caplog):
    x = rng.normal(size=(4, 2))

    def fn(r):  # control flow inside fn has no batching rule
        return tw.cond(tw.reduce_sum(r) > 0.0, lambda: r * 2.0, lambda: -r)

    with caplog.at_level(logging.WARNING, logger="tensorweave"):
        got = run(mode, lambda x: tw.vectorized_map(fn, x), x)
    expected = np.stack([r * 2.0 if r.sum() > 0 else -r for r in x])
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    if mode != "eager":  # eagerly tw.cond is Python control flow: nothing to fall back from
        reasons = [r.getMessage() for r in caplog.records if "falling back" in r.getMessage()]
        assert reasons and "op If" in reasons[0] and "test_map_fn.py" in reasons[0]
        with pytest.raises(ValueError, match="falling back"):
            tw.compile(lambda x: tw.vectorized_map(fn, x, fallback_to_while_loop=False))(x)


def test_stateful_ops_fall_back_and_run_per_element(caplog):
    x = np.zeros((5, 3), np.float32)
    with caplog.at_level(logging.WARNING, logger="tensorweave"):
        got = tw.compile(lambda x: tw.vectorized_map(lambda r: r + tw.random.uniform([3]), x))(x)
    assert got.shape == (5, 3) and len({tuple(r) for r in got}) == 5  # a draw per element
    assert any("stateful" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("mode", MODES)
def test_vmap_axes(mode):
    a = rng.normal(size=(2, 4, 3))  # mapped over axis 1
    b = rng.normal(size=(3,))       # not mapped
    c = rng.normal(size=(3, 4))     # mapped over axis 1 (= -1)

    def fn(x, y, z):
        return tw.matmul(x, tw.expand_dims(y * z, 1))[:, 0], tw.reduce_sum(x, axis=0)

    mapped = tw.vmap(fn, in_axes=(1, None, -1), out_axes=(1, 0))
    first, second = run(mode, lambda a, b, c: mapped(a, b, c), a, b, c)
    exp_first = np.stack([a[:, i] @ (b * c[:, i]) for i in range(4)], axis=1)
    exp_second = np.stack([a[:, i].sum(axis=0) for i in range(4)])
    np.testing.assert_allclose(first, exp_first, rtol=1e-12)
    np.testing.assert_allclose(second, exp_second, rtol=1e-12)
    with pytest.raises(ValueError, match="in_axes has 2 entries for 3"):
        tw.vmap(fn, in_axes=(0, 0))(tw.constant(a), tw.constant(b), tw.constant(c))


def test_vmap_gradient():
    x = rng.normal(size=(4, 3))
    w = rng.normal(size=(3,))
    check_gradients(lambda x, w: tw.vmap(lambda r, w: tw.sin(r) * w + tw.reduce_sum(r * w),
                                         in_axes=(0, None))(x, w), x, w)


def test_map_fn_without_back_prop_stops_gradients():
    x = rng.normal(size=(3, 3))
    g = tw.compile(tw.grad(lambda x: tw.reduce_sum(tw.map_fn(per_row, x, back_prop=False))
                           + tw.reduce_sum(x * 2.0)))(x)
    np.testing.assert_array_equal(g, np.full((3, 3), 2.0))


CONST = rng.normal(size=(2, 3))
BATCHED = [  # (fn of one element of shape [2, 3], the same in NumPy)
    (lambda r: r[..., 0] + r[None, 1:, ::-1][0, :, 0], lambda r: r[..., 0] + r[None, 1:, ::-1][0, :, 0]),
    (lambda r: tw.cast(tw.argmax(r, axis=-1), tw.float64) + tw.gather(r, [1, 0])[0, :2]
     + tw.gather(r, [2, 0], axis=1)[:, 1],
     lambda r: np.argmax(r, axis=-1).astype(np.float64) + r[[1, 0]][0, :2] + r[:, [2, 0]][:, 1]),
    (lambda r: tw.concat([r, CONST], axis=0) @ tw.transpose(CONST),
     lambda r: np.concatenate([r, CONST], 0) @ CONST.T),
    (lambda r: tw.stack([r, CONST * 2.0], axis=-1), lambda r: np.stack([r, CONST * 2.0], -1)),
    (lambda r: tw.squeeze(tw.expand_dims(r, 0)) + tw.pad(r, [[0, 0], [1, 0]])[:, :3],
     lambda r: r + np.pad(r, [[0, 0], [1, 0]])[:, :3]),
    (lambda r: tw.tile(r, [1, 2]) * tw.reduce_mean(r), lambda r: np.tile(r, [1, 2]) * r.mean()),
    (lambda r: tw.nn.log_softmax(r, axis=0) - tw.reshape(r, [3, 2])[0, 0],
     lambda r: r - np.log(np.exp(r).sum(0)) - r.reshape(3, 2)[0, 0]),
    (lambda r: tw.one_hot(tw.argmax(r, axis=1), 3, dtype=tw.float64) * r,
     lambda r: np.eye(3)[np.argmax(r, axis=1)] * r),
    (lambda r: tw.math.cumsum(r, axis=-1) + tw.roll(r, shift=1, axis=0),
     lambda r: np.cumsum(r, axis=-1) + np.roll(r, 1, axis=0)),
    (lambda r: tw.add_n([*tw.unstack(r, axis=1), tw.split(r, 3, axis=1)[2][:, 0]]),
     lambda r: r[:, 0] + r[:, 1] + r[:, 2] + r[:, 2]),
]


@pytest.mark.parametrize("mode", MODES)
def test_batching_rules_match_a_loop(mode, caplog):
    x = rng.normal(size=(3, 2, 3))
    with caplog.at_level(logging.WARNING, logger="tensorweave"):
        for k, (fn, fn_np) in enumerate(BATCHED):
            got = run(mode, lambda x, fn=fn: tw.vectorized_map(fn, x), x)
            np.testing.assert_allclose(got, np.stack([fn_np(r) for r in x]), rtol=1e-12,
                                       err_msg=f"function {k}")
    assert not [r.getMessage() for r in caplog.records if "falling back" in r.getMessage()]


def test_vectorized_map_with_an_unknown_batch_size():
    f = tw.compile(lambda x: tw.vectorized_map(
        lambda r: (tw.reshape(r, [3, 1]) * 2.0, tw.constant(np.arange(2.0)), tw.reduce_sum(r)),
        x), input_signature=[tw.TensorSpec([None, 3], tw.float64)])
    x = rng.normal(size=(4, 3))
    shaped, constant, total = f(x)
    np.testing.assert_allclose(shaped, x.reshape(4, 3, 1) * 2.0)
    np.testing.assert_array_equal(constant, np.tile(np.arange(2.0), (4, 1)))  # repeated
    np.testing.assert_allclose(total, x.sum(axis=1))
