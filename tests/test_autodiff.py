"""The autodiff pass and the gradient APIs (per-op gradients are in tests/grads/)."""

import numpy as np
import pytest

import tensorweave as tw
from tests.helpers import check_gradients

rng = np.random.default_rng(0)


def test_gradients_sum_over_multiple_paths():
    x = rng.normal(size=(3,))
    # x is used three times: d/dx (x*x + x) = 2x + 1
    g = tw.grad(lambda x: tw.reduce_sum(x * x + x))(x)
    np.testing.assert_allclose(g, 2 * x + 1)
    check_gradients(lambda x: x * x * x + tw.sin(x) * x, x)


def test_broadcasting_gradients_reduce_to_operand_shapes():
    a, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(3, 1))
    check_gradients(lambda a, b: a * b - b / (2.0 + a * a), a, b)


def test_broadcasting_with_unknown_dims_uses_runtime_reduction():
    spec = [tw.TensorSpec([None, 3], tw.float64), tw.TensorSpec([None, 1], tw.float64)]

    def loss(a, b):
        return tw.reduce_sum(a * b)

    f = tw.compile(tw.grad(loss, argnums=(0, 1)), input_signature=spec)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(4, 1))
    ga, gb = f(a, b)
    np.testing.assert_allclose(ga, np.broadcast_to(b, (4, 3)))
    np.testing.assert_allclose(gb, a.sum(axis=1, keepdims=True))


def test_stop_gradient_blocks_and_unconnected_inputs():
    @tw.compile
    def f(x, y):
        z = tw.stop_gradient(x * 2.0) * x
        gx, gy = tw.gradients(tw.reduce_sum(z), [x, y])
        gy_zero = tw.gradients(tw.reduce_sum(z), [y], unconnected_gradients="zero")[0]
        return gx, gy is None, gy_zero

    gx, gy_is_none, gy_zero = f(np.array([1.0, 3.0]), np.array([5.0]))
    np.testing.assert_allclose(gx, [2.0, 6.0])  # only the unstopped factor is differentiated
    assert gy_is_none is True
    np.testing.assert_array_equal(gy_zero, [0.0])


def test_integer_paths_carry_no_gradient():
    @tw.compile
    def f(x):
        idx = tw.argmax(x, axis=0)
        y = x * tw.cast(idx, tw.float64)
        return tw.gradients(tw.reduce_sum(y), [x])[0]

    np.testing.assert_allclose(f(np.array([1.0, 5.0, 2.0])), [1.0, 1.0, 1.0])


def test_grad_ys_weights_the_output():
    @tw.compile
    def f(x, w):
        return tw.gradients(x * x, [x], grad_ys=[w])[0]

    np.testing.assert_allclose(f(np.array([1.0, 2.0]), np.array([3.0, 0.5])), [6.0, 2.0])


def test_gradients_with_respect_to_variables_read_inside():
    w = tw.Variable(np.array([1.0, -2.0]), name="gw")

    @tw.compile
    def f(x):
        loss = tw.reduce_sum(w * x) + tw.reduce_sum(w * w)
        return tw.gradients(loss, [w])[0]

    np.testing.assert_allclose(f(np.array([3.0, 4.0])), [3.0 + 2.0, 4.0 - 4.0])


def test_value_and_grad_with_nested_params():
    params = {"w": rng.normal(size=(3, 2)), "b": np.zeros(2)}
    x = rng.normal(size=(5, 3))

    def loss(p, x):
        return tw.reduce_mean(tw.square(x @ p["w"] + p["b"]))

    value, g = tw.value_and_grad(loss)(params, x)
    y = x @ params["w"] + params["b"]
    np.testing.assert_allclose(value, np.mean(y ** 2))
    np.testing.assert_allclose(g["b"], (2 * y / y.size).sum(0))
    np.testing.assert_allclose(g["w"], x.T @ (2 * y / y.size))


def test_gradient_graph_is_ordinary_ir_that_prints():
    f = tw.compile(tw.grad(lambda x: tw.reduce_sum(tw.tanh(x))))
    cf = f.get_concrete_function(np.zeros(3))
    ops = {n.op for n in cf.graph.nodes}
    assert {"Tanh", "Sum"} <= ops
    assert any(n.name.startswith("gradients/") for n in cf.graph.nodes)


def test_grad_of_non_scalar_is_a_clear_error():
    with pytest.raises(tw.errors.CompileError, match="float scalar"):
        tw.grad(lambda x: x * 2.0)(np.ones(3))


def test_missing_gradient_names_the_op():
    from tensorweave.compiler.registry import def_op

    op = def_op("TestNoGradOp", ["x"])
    op.infer(lambda x: x)
    op.kernel("reference")(lambda x: x)

    def loss(x):
        from tensorweave.frontend.building import apply_op1
        return tw.reduce_sum(apply_op1("TestNoGradOp", [x]))

    with pytest.raises(tw.errors.CompileError, match="no gradient is registered for op "
                                                     "TestNoGradOp") as err:
        tw.grad(loss)(np.ones(2))
    assert "test_autodiff.py" in str(err.value)
