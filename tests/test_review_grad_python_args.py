"""Adversarial review of `tw.grad` / `tw.value_and_grad` (JAX's API): the derivative
with respect to a Python number argument. It was a static value of the compiled call,
so the gradient with respect to it was silently 0.0: ``tw.grad(lambda a: a ** 3)(2.0)``
gave 0.0, not 12.0 (JAX: 12.0). Integer arguments have no derivative: an error, as in
JAX, rather than a zero."""

import numpy as np
import pytest

import tensorweave as tw


def test_python_float_argument():
    g = tw.grad(lambda a: a ** 3)(2.0)
    assert np.asarray(g).dtype == np.float32  # a Python float is a float32 tensor
    np.testing.assert_allclose(g, 12.0, rtol=1e-6)


def test_python_floats_among_several_arguments_and_nests():
    g = tw.grad(lambda a, b: a * b["x"] + b["y"] ** 2, argnums=(0, 1))(
        3.0, {"x": 2.0, "y": -1.5})
    np.testing.assert_allclose(g[0], 2.0)
    np.testing.assert_allclose(g[1]["x"], 3.0)
    np.testing.assert_allclose(g[1]["y"], -3.0)


def test_value_and_grad_of_a_python_float():
    value, g = tw.value_and_grad(lambda a, k: tw.sin(a) * k)(0.5, 3.0)
    np.testing.assert_allclose(value, np.sin(0.5) * 3.0, rtol=1e-6)
    np.testing.assert_allclose(g, np.cos(0.5) * 3.0, rtol=1e-6)


def test_each_python_value_gets_its_own_gradient():
    f = tw.grad(lambda a: a * a)
    for a in [1.0, -2.0, 0.25]:
        np.testing.assert_allclose(f(a), 2 * a, rtol=1e-6)


def test_inside_a_compiled_function():
    f = tw.compile(lambda x: tw.grad(lambda a, b: a * b * x)(2.0, x))
    np.testing.assert_allclose(f(np.float32(5.0)), 25.0)


def test_non_differentiated_python_arguments_stay_static():
    g = tw.grad(lambda a, n: a ** n)(np.float64(2.0), 3)
    assert np.asarray(g).dtype == np.float64  # a NumPy float64 keeps its dtype
    np.testing.assert_allclose(g, 12.0)


@pytest.mark.parametrize("arg", [3, True, np.int32(3), np.array([1, 2], np.int64)],
                         ids=["int", "bool", "np.int32", "int64 array"])
def test_integer_argument_is_an_error(arg):
    with pytest.raises(tw.errors.DTypeError, match="tw.grad"):
        tw.grad(lambda a: tw.reduce_sum(tw.cast(a, tw.float32)) * 2.0)(arg)
