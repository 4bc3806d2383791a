"""tw.GradientTape: eager (recorded eager ops, gradients replayed eagerly) and traced
(symbolic gradients of the recorded nodes), checked against finite differences in
float64 on the reference and cpu targets."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tests.grads.strategies import seeds, small_shapes, values
from tests.helpers import TARGETS, check_gradients

rng = np.random.default_rng(0)


def finite_difference(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of the scalar f (NumPy in, float out) at x."""
    out = np.zeros_like(x, dtype=np.float64)
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += eps
        minus[idx] -= eps
        out[idx] = (f(plus) - f(minus)) / (2 * eps)
    return out


def model(x, w):
    """A scalar of x and w with broadcasting, a matmul, a reduction and nonlinearities."""
    h = tw.tanh(tw.matmul(x, w)) * tw.reduce_sum(x, axis=1, keepdims=True)
    return tw.reduce_sum(h * h + tw.exp(-h)) / 3.0


def model_np(x, w):
    h = np.tanh(x @ w) * x.sum(axis=1, keepdims=True)
    return float((h * h + np.exp(-h)).sum() / 3.0)


@settings(max_examples=8)
@given(seed=seeds, n=st.integers(1, 3), k=st.integers(1, 3), m=st.integers(1, 3))
def test_eager_tape_matches_finite_differences(seed, n, k, m):
    x, w = values(seed, (n, k)), values(seed + 1, (k, m))
    xt, wt = tw.constant(x), tw.constant(w)
    with tw.GradientTape() as tape:
        tape.watch([xt, wt])
        y = model(xt, wt)
    gx, gw = tape.gradient(y, [xt, wt])
    assert isinstance(gx, tw.EagerTensor)
    np.testing.assert_allclose(float(y), model_np(x, w), rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), finite_difference(lambda a: model_np(a, w), x),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gw.numpy(), finite_difference(lambda b: model_np(x, b), w),
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("target", TARGETS)
def test_traced_tape_matches_finite_differences(target):
    x, w = rng.normal(size=(3, 2)), rng.normal(size=(2, 4))

    def grads(x, w):
        with tw.GradientTape() as tape:
            tape.watch(x)
            tape.watch(w)
            y = model(x, w)
        return tape.gradient(y, {"x": x, "w": w})

    got = tw.compile(grads, target=target)(x, w)
    np.testing.assert_allclose(got["x"], finite_difference(lambda a: model_np(a, w), x),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got["w"], finite_difference(lambda b: model_np(x, b), w),
                               rtol=1e-5, atol=1e-7)


@settings(max_examples=6)
@given(seed=seeds, shape=small_shapes(min_dims=1, max_dims=2, min_side=1))
def test_second_order_with_nested_tapes_eager_and_traced(seed, shape):
    x = values(seed, shape)

    def first(x):
        with tw.GradientTape() as inner:
            inner.watch(x)
            y = tw.reduce_sum(tw.sin(x) * x * x)
        return inner.gradient(y, x)

    def second(x):
        with tw.GradientTape() as outer:
            outer.watch(x)
            g = first(x)
            s = tw.reduce_sum(g * g)
        return outer.gradient(s, x)

    def s_np(a):
        g = np.cos(a) * a * a + 2 * a * np.sin(a)
        return float((g * g).sum())

    expected = finite_difference(s_np, x)
    np.testing.assert_allclose(second(tw.constant(x)).numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tw.compile(second)(x), expected, rtol=1e-5, atol=1e-6)
    # the traced first derivative is itself differentiable like any traced function
    check_gradients(first, x)


def test_trainable_variables_are_watched_automatically():
    w = tw.Variable(rng.normal(size=(3, 2)))
    frozen = tw.Variable(rng.normal(size=(3, 2)), trainable=False)
    x = rng.normal(size=(4, 3))

    def loss_np(wv):
        return float(np.sum(np.tanh(x @ wv) ** 2 * (x @ frozen.numpy())))

    expected = finite_difference(loss_np, w.numpy())
    with tw.GradientTape() as tape:
        y = tw.reduce_sum(tw.tanh(tw.matmul(x, w)) ** 2 * tw.matmul(x, frozen))
    gw, gf = tape.gradient(y, [w, frozen])
    np.testing.assert_allclose(gw.numpy(), expected, rtol=1e-5, atol=1e-7)
    assert gf is None  # not trainable: not watched
    assert [v.name for v in tape.watched_variables()] == [w.name]

    @tw.compile
    def traced(x):
        with tw.GradientTape() as tape:
            y = tw.reduce_sum(tw.tanh(tw.matmul(x, w)) ** 2 * tw.matmul(x, frozen))
        gw, gf = tape.gradient(y, [w, frozen])
        return gw, gf is None

    gw, frozen_none = traced(x)
    np.testing.assert_allclose(gw, expected, rtol=1e-5, atol=1e-7)
    assert frozen_none is True


def test_watch_accessed_variables_false_needs_explicit_watch():
    v = tw.Variable(np.array([1.0, 2.0]))
    with tw.GradientTape(watch_accessed_variables=False) as tape:
        y = tw.reduce_sum(v * v)
    assert tape.gradient(y, v) is None
    with tw.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(v)
        y = tw.reduce_sum(v * v)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [2.0, 4.0])


def test_non_persistent_tape_computes_one_set_of_gradients():
    x = tw.constant(np.array([1.0, 2.0]))
    with tw.GradientTape() as tape:
        tape.watch(x)
        y = tw.reduce_sum(x * x)
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="non-persistent GradientTape"):
        tape.gradient(y, x)
    with tw.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tw.reduce_sum(x * x)
        z = tw.reduce_sum(tw.sin(x))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(tape.gradient(z, x).numpy(), np.cos([1.0, 2.0]))

    @tw.compile
    def twice(x):
        with tw.GradientTape() as tape:
            tape.watch(x)
            y = tw.reduce_sum(x * x)
        tape.gradient(y, x)
        return tape.gradient(y, x)

    with pytest.raises(RuntimeError, match="non-persistent GradientTape"):
        twice(np.array([1.0]))


@pytest.mark.parametrize("mode", ["eager", "traced"])
def test_stop_recording_unwatched_and_unconnected(mode):
    def grads(x, c):
        with tw.GradientTape(persistent=True) as tape:
            tape.watch(x)
            with tape.stop_recording():
                frozen = x * 3.0  # a constant to the tape
            y = tw.reduce_sum(frozen * x + c * x)
            u = c * 2.0  # does not depend on anything watched
        return (tape.gradient(y, x), tape.gradient(y, c), tape.gradient(u, x),
                tape.gradient(u, x, unconnected_gradients=tw.UnconnectedGradients.ZERO),
                tape.gradient(y, x, output_gradients=tw.constant(np.array(2.0))))

    x, c = np.array([1.0, -2.0]), np.array([0.5, 4.0])
    if mode == "eager":
        got = grads(tw.constant(x), tw.constant(c))
        got = [None if g is None else g.numpy() for g in got]
    else:
        got = list(tw.compile(lambda x, c: [g if g is not None else tw.constant(-1.0)
                                            for g in grads(x, c)])(x, c))
        got = [None if np.ndim(g) == 0 and g == -1.0 else g for g in got]
    gx, gc, gu, gu_zero, gx_weighted = got
    np.testing.assert_allclose(gx, 3.0 * x + c)  # only the recorded factor is differentiated
    assert gc is None  # c is not watched
    assert gu is None
    np.testing.assert_array_equal(gu_zero, np.zeros(2))
    np.testing.assert_allclose(gx_weighted, 2.0 * (3.0 * x + c))


@pytest.mark.parametrize("target", [None, *TARGETS])
def test_jacobian_matches_finite_differences(target):
    x = rng.normal(size=(3,))
    w = rng.normal(size=(3, 2))

    def f_np(a):
        return np.tanh(a @ w) * a[:2]

    def jac(x):
        with tw.GradientTape() as tape:
            tape.watch(x)
            y = tw.tanh(tw.matmul(tw.expand_dims(x, 0), w))[0] * x[:2]
        return tape.jacobian(y, x)

    expected = np.stack([finite_difference(lambda a, i=i: float(f_np(a)[i]), x)
                         for i in range(2)])
    got = jac(tw.constant(x)).numpy() if target is None else tw.compile(jac, target=target)(x)
    assert got.shape == (2, 3)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_tape_through_eager_control_flow_and_gather():
    x = rng.normal(size=(4, 2))
    xt = tw.constant(x)

    with tw.GradientTape() as tape:
        tape.watch(xt)
        acc = tw.scan(lambda a, row: a * 0.5 + tw.sin(row), xt)
        y = tw.reduce_sum(tw.cond(tw.reduce_sum(xt) > 100.0, lambda: acc * 0.0,
                                  lambda: acc * acc))
    expected = tw.compile(tw.grad(lambda x: tw.reduce_sum(
        tw.scan(lambda a, row: a * 0.5 + tw.sin(row), x) ** 2)))(x)
    np.testing.assert_allclose(tape.gradient(y, xt).numpy(), expected, rtol=1e-12)


def test_gradient_with_respect_to_an_intermediate_tensor():
    x = tw.constant(np.array([1.0, 2.0]))
    with tw.GradientTape() as tape:
        tape.watch(x)
        h = x * x
        y = tw.reduce_sum(tw.sin(h))
    np.testing.assert_allclose(tape.gradient(y, h).numpy(), np.cos([1.0, 4.0]))


def test_watch_rejects_non_tensors():
    with tw.GradientTape() as tape:
        with pytest.raises(TypeError, match="GradientTape.watch"):
            tape.watch(np.array([1.0]))


@pytest.mark.parametrize("mode", ["eager", "traced"])
def test_batch_jacobian_matches_finite_differences(mode):
    x = rng.normal(size=(3, 2))
    w = rng.normal(size=(2, 2))

    def f_np(row):
        return np.tanh(row @ w) * row.sum()

    def bjac(x):
        with tw.GradientTape() as tape:
            tape.watch(x)
            y = tw.tanh(tw.matmul(x, w)) * tw.reduce_sum(x, axis=1, keepdims=True)
        return tape.batch_jacobian(y, x)

    expected = np.stack([np.stack([finite_difference(lambda r, i=i: float(f_np(r)[i]), row)
                                   for i in range(2)]) for row in x])
    got = bjac(tw.constant(x)).numpy() if mode == "eager" else tw.compile(bjac)(x)
    assert got.shape == (3, 2, 2)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_eager_embedding_lookup_of_a_variable():
    table = tw.Variable(rng.normal(size=(4, 3)))
    ids = np.array([2, 0, 2])
    with tw.GradientTape() as tape:
        rows = tw.nn.embedding_lookup(table, ids)
        y = tw.reduce_sum(rows * rows)
    expected = np.zeros((4, 3))
    np.add.at(expected, ids, 2 * table.numpy()[ids])
    g = tape.gradient(y, table)
    assert isinstance(g, tw.IndexedSlices)  # as TensorFlow's tape: the rows looked up
    np.testing.assert_allclose(tw.convert_to_tensor(g).numpy(), expected)


@pytest.mark.parametrize("target", TARGETS)
def test_compiled_training_step_with_a_tape(target):
    x = rng.normal(size=(8, 3))
    y = x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3
    w0 = rng.normal(size=(3, 1))
    w = tw.Variable(w0.copy())
    b = tw.Variable(np.zeros((1,)))
    opt = tw.optimizers.SGD(0.1)

    @tw.compile(target=target)
    def step(x, y):
        with tw.GradientTape() as tape:
            loss = tw.reduce_mean((tw.matmul(x, w) + b - y) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
        return loss

    def loss_np(wv):
        return float(np.mean((x @ wv - y) ** 2))

    step(x, y)
    np.testing.assert_allclose(w.numpy(), w0 - 0.1 * finite_difference(loss_np, w0),
                               rtol=1e-6, atol=1e-8)
    first = float(step(x, y))
    for _ in range(200):
        last = float(step(x, y))
    assert last < 1e-3 * first  # it trains


@pytest.mark.parametrize("mode", ["eager", *TARGETS])
def test_hessian_vector_product_of_a_variable(mode):
    w = tw.Variable(rng.normal(size=(3,)))
    x, v = rng.normal(size=(3,)), rng.normal(size=(3,))

    def hvp(x, v):
        with tw.GradientTape() as outer:
            with tw.GradientTape() as inner:
                y = tw.reduce_sum(tw.sin(w * x) ** 2)
            gv = tw.reduce_sum(inner.gradient(y, w) * v)
        return outer.gradient(gv, w)

    def gv_np(wv):  # the first derivative in closed form, differenced once more
        return float(np.sum(np.sin(2 * wv * x) * x * v))

    got = hvp(tw.constant(x), tw.constant(v)).numpy() if mode == "eager" else \
        tw.compile(hvp, target=mode)(x, v)
    np.testing.assert_allclose(got, finite_difference(gv_np, w.numpy()), rtol=1e-5, atol=1e-7)
