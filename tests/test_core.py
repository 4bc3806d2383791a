"""The IR core, tracing, variables and the reference executor."""

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.compiler import Graph, TensorType
from tensorweave.compiler.verifier import verify


def test_trace_once_per_signature_and_variables_update_in_place():
    v = tw.Variable(np.ones(3, np.float32), name="acc")

    @tw.compile
    def step(x):
        v.assign_add(x)
        return v.read_value()

    np.testing.assert_array_equal(step(np.ones(3, np.float32)), [2, 2, 2])
    np.testing.assert_array_equal(step(np.full(3, 2, np.float32)), [4, 4, 4])
    assert step.tracing_count == 1
    np.testing.assert_array_equal(v.numpy(), [4, 4, 4])


def test_stateful_ops_on_one_variable_are_chained_in_program_order():
    v = tw.Variable(0.0, name="chain")

    @tw.compile
    def f():
        v.assign(1.0, read_value=False)
        v.assign_add(2.0, read_value=False)
        return v.read_value()

    assert f() == 3.0
    g = f.get_concrete_function().graph
    assign, add, read = [n for n in g.nodes if n.op not in ("VarHandle", "Const")]
    assert add.control_inputs == [assign] and read.control_inputs == [add]


def test_structured_outputs_and_static_arguments():
    @tw.compile
    def f(x, scale, flag=True):
        return {"same": x, "pair": (x, scale), "flag": flag}

    out = f(np.arange(3, dtype=np.int32), 2)
    assert set(out) == {"same", "pair", "flag"}
    assert out["pair"][1] == 2 and out["flag"] is True
    f(np.arange(3, dtype=np.int32), 3)
    assert f.tracing_count == 2


def test_input_signature_with_unknown_dims_does_not_retrace():
    @tw.compile(input_signature=[tw.TensorSpec([None, 2], tw.float32)])
    def f(x):
        return x

    for n in (1, 5, 0):
        assert f(np.zeros((n, 2), np.float32)).shape == (n, 2)
    assert f.tracing_count == 1
    with pytest.raises(tw.errors.InvalidArgumentError, match="TensorSpec"):
        f(np.zeros((3, 2), np.float64))


def test_results_never_alias_inputs_or_constants():
    @tw.compile
    def f(x):
        return x, tw.constant([1.0, 2.0])

    x = np.zeros(2, np.float32)
    a, c = f(x)
    a[0] = 5
    c[0] = 7
    assert x[0] == 0
    assert f(x)[1][0] == 1.0


def test_python_bool_of_traced_tensor_names_the_line_and_cond():
    @tw.compile
    def f(x):
        if x:
            return x
        return x

    with pytest.raises(tw.errors.TracingError, match=r"tw\.cond.*") as info:
        f(np.float32(1))
    assert "test_core.py" in str(info.value)


def test_tensor_from_another_trace_is_rejected():
    leaked = []

    @tw.compile
    def f(x):
        leaked.append(x)
        return x

    @tw.compile
    def g(y):
        return leaked[0]

    f(np.float32(1))
    with pytest.raises(tw.errors.TracingError, match="belongs to graph"):
        g(np.float32(2))


def test_uninitialized_and_missing_variables_give_clear_errors():
    from tensorweave.runtime import ResourceManager
    rm = ResourceManager()
    state = rm.create_variable("w", tw.float32, (2,))
    with pytest.raises(tw.errors.FailedPreconditionError, match="uninitialized variable 'w'"):
        state.read()
    with pytest.raises(tw.errors.NotFoundError, match="no variable named 'nope'"):
        rm.variable("nope")


def test_verifier_rejects_use_before_definition_and_bad_types():
    g = Graph("bad")
    x = g.add_arg(TensorType("f32", [2]), "x")
    n = g.add_node("Identity", [x])
    g.set_results([n.outputs[0]])
    verify(g)
    n.outputs[0].type = TensorType("f64", [2])
    with pytest.raises(tw.errors.VerificationError, match="inference gives"):
        verify(g)
    g2 = Graph("cycle")
    a = g2.add_node("Const", [], {"value": np.zeros(2, np.float32)})
    b = g2.add_node("Identity", [a.outputs[0]])
    a.control_inputs.append(b)
    with pytest.raises(tw.errors.VerificationError, match="cycle"):
        verify(g2)


def test_unknown_attribute_and_wrong_arity_name_the_op():
    g = Graph("g")
    x = g.add_arg(TensorType("f32", [2]), "x")
    with pytest.raises(tw.errors.VerificationError, match=r"Identity 'identity'.*unknown attribute"):
        g.add_node("Identity", [x], {"bogus": 1})
    with pytest.raises(tw.errors.VerificationError, match=r"expects 1 inputs"):
        g.add_node("Identity", [x, x])


def test_variable_dtype_and_shape_mismatch_on_assign():
    v = tw.Variable(np.zeros(2, np.float32), name="strict")
    with pytest.raises(tw.errors.DTypeError, match="float64"):
        v.assign(np.zeros(2, np.float64))
    with pytest.raises(tw.errors.ShapeError, match=r"shape \[3\] to variable 'strict:0' of shape \[2\]"):
        v.assign(np.zeros(3, np.float32))
    assert v.numpy().tolist() == [0.0, 0.0]


def test_equality_is_elementwise_against_values_and_between_tensors():
    @tw.compile
    def f(x):
        return x == 1.0, x != 2.0

    eq, ne = f(np.array([1.0, 2.0], np.float32))
    assert eq.tolist() == [True, False] and ne.tolist() == [True, False]

    @tw.compile
    def g(x):
        if x == 0:  # a traced comparison, not a silent False
            return x
        return x

    with pytest.raises(tw.errors.TracingError, match="tw.cond"):
        g(np.float32(0))
    a, b = tw.constant(1.0), tw.constant(1.0)
    # hashing stays by identity (feed_dict keys); equality is elementwise
    assert {a: 1, b: 2}[a] == 1 and {a.ref(): 1, b.ref(): 2}[b.ref()] == 2
    assert bool(a == b) is True and bool(a != b) is False
