"""``tf.placeholder`` without a shape has an unknown rank, as in TensorFlow 1.

The programs of tests/v1_unknown_rank_cases.py give the static shapes and the values that
TensorFlow 2.21's tf.compat.v1 gave in graph mode (tests/data/tf_fixtures/
v1_unknown_rank.json, recorded by record_v1_unknown_rank.py there), on both targets; the
rest checks what TensorFlow does not record: the TensorShape API, the clear errors where
tensorweave needs a rank, one compiled step per shape fed, and that ``tw.compile`` is
untouched.
"""

import json
import os

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.compat.v1 import session as session_module
from tensorweave.compat.v1.fed_shapes import specialize_to_feeds
from tensorweave.compiler import ir
from tensorweave.compiler.parser import parse_graph
from tensorweave.compiler.printer import print_graph
from tensorweave.compiler.types import TensorType
from tensorweave.errors import DTypeError, ShapeError, UnimplementedError
from tests.v1_unknown_rank_cases import CASES, run_case

pytestmark = pytest.mark.usefixtures("fresh_default_graph")

FIXTURE = os.path.join(os.path.dirname(__file__), "data", "tf_fixtures", "v1_unknown_rank.json")
with open(FIXTURE) as _f:
    TF = json.load(_f)["cases"]


def _assert_same(got, want, where):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            _assert_same(g, w, f"{where}[{i}]")
        return
    assert got["shape"] == want["shape"], where
    np.testing.assert_allclose(got["data"], want["data"], rtol=2e-5, atol=1e-6,
                               err_msg=where)


@pytest.mark.parametrize("target", ["reference", "cpu"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_static_shapes_and_values_are_tensorflows(name, target):
    got = run_case(tf, name, lambda: tf.Session(compile_target=target))
    want = TF[name]
    assert got["shape"] == want["shape"]
    assert len(got["runs"]) == len(want["runs"])
    for i, (g, w) in enumerate(zip(got["runs"], want["runs"])):
        if "error" in w:  # TensorFlow refused this run: so must we, with the same kind
            assert w["error"] in g.get("kinds", ()), (i, g)
        else:
            assert "value" in g, (i, g)
            _assert_same(g["value"], w["value"], f"{name} run {i}")


def test_the_fixture_covers_every_case():
    assert sorted(TF) == sorted(CASES)


# -- the TensorShape of an unknown rank, as TensorFlow's ---------------------------------------

def test_tensor_shape_of_an_unknown_rank():
    x = tf.placeholder(tf.float32)
    for s in (x.shape, x.get_shape()):
        assert isinstance(s, tf.TensorShape)
        assert s.ndims is None and s.rank is None and s.dims is None
        assert not s.is_fully_defined() and s.num_elements() is None
        assert str(s) == "<unknown>" and repr(s) == "TensorShape(None)"
        assert s[0] is None
        assert s == tf.TensorShape(None) and s != tf.TensorShape([])
        assert s.is_compatible_with([2, 3]) and s.is_compatible_with([])
        assert s.merge_with([None, 3]).as_list() == [None, 3]
    # TensorFlow's ValueErrors, word for word
    with pytest.raises(ValueError, match=r"^as_list\(\) is not defined on an unknown "
                                         r"TensorShape\.$"):
        x.shape.as_list()
    with pytest.raises(ValueError, match="Cannot take the length of shape with unknown rank"):
        len(x.shape)
    with pytest.raises(ValueError, match="Cannot iterate over a shape with unknown rank"):
        list(x.shape)
    assert "shape=<unknown>" in repr(x)
    assert tf.placeholder(tf.float32, []).shape == ()


def test_ndim_of_an_unknown_rank_is_an_error_naming_the_tensor():
    # TensorFlow answers -1 or None; a number would pass for a rank in rank arithmetic
    x = tf.placeholder(tf.float32, name="images")
    with pytest.raises(ValueError, match=r"rank of tensor 'images'.*unknown"):
        _ = x.ndim


def test_set_shape_narrows_an_unknown_rank_and_refuses_a_contradiction():
    x = tf.placeholder(tf.float32)
    x.set_shape([None, 3])
    assert x.shape.as_list() == [None, 3]
    with pytest.raises(ValueError, match="Dimension 1 in both shapes must be equal"):
        x.set_shape([None, 4])
    with pytest.raises(ValueError, match="Shapes must be equal rank"):
        x.set_shape([3])
    y = tf.placeholder(tf.float32, [2])
    y.set_shape(None)  # nothing known more: as TensorFlow, a no-op
    assert y.shape.as_list() == [2]


def test_a_shape_set_on_a_result_that_the_values_fed_contradict_is_an_error():
    # TensorFlow trusts set_shape at run time; a step compiled for the promised shape
    # would read the wrong buffer sizes, so the run stops, naming the op
    x = tf.placeholder(tf.float32)
    y = x * 2.0
    y.set_shape([2, 3])
    z = y + 1.0
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(z, {x: np.ones((2, 3))}), np.full((2, 3), 3.0))
        with pytest.raises(ShapeError, match=r"'mul'.*f32\[2,3\]"):
            sess.run(z, {x: np.ones((3, 2))})


def test_a_result_that_is_read_keeps_its_unknown_rank():
    x = tf.placeholder(tf.float32)
    y = x * 2.0
    _ = y + 1.0
    with pytest.raises(tw.errors.TracingError, match="would narrow"):
        y.set_shape([2, 3])


# -- errors where a rank is needed ------------------------------------------------------------

def test_a_function_that_needs_the_rank_names_itself_and_the_line():
    x = tf.placeholder(tf.float32, name="inputs")
    with pytest.raises(ShapeError) as info:
        tf.transpose(x)
    message = str(info.value)
    assert "transpose" in message and "'inputs:0'" in message and "unknown rank" in message
    assert "test_v1_unknown_rank.py" in message
    assert "give the placeholder a shape" in message


def test_dense_needs_a_known_last_dim_as_in_tensorflow():
    x = tf.placeholder(tf.float32)
    with pytest.raises(ValueError, match="The last dimension of the inputs to `Dense` should "
                                         "be defined. Found `None`."):
        tf.layers.dense(x, 3)
    x.set_shape([None, 4])
    assert tf.layers.dense(x, 3).shape.as_list() == [None, 3]


def test_an_op_that_no_rank_makes_valid_is_an_error_at_build_time():
    x = tf.placeholder(tf.float32)
    with pytest.raises(ShapeError, match="MatMul.*no rank makes MatMul valid"):
        tf.matmul(x, tf.zeros([3]))
    with pytest.raises(DTypeError):  # a dtype error holds at any rank: TensorFlow's TypeError
        _ = x + tf.placeholder(tf.int32)


def test_v1_where_that_needs_the_ranks_to_choose_is_an_error():
    # TensorFlow 1's where picks rows for a vector condition and a matrix x: with unknown
    # ranks which one it is would be known only at run time
    x = tf.placeholder(tf.float32)
    with pytest.raises(ShapeError, match="tf.where.*selects whole rows.*where_v2"):
        tf.where(x > 0, x, -x)
    assert tf.where_v2(x > 0, x, -x).shape.rank is None


def test_a_variable_made_from_a_value_of_unknown_rank_needs_a_shape():
    x = tf.placeholder(tf.float32)
    with pytest.raises(ShapeError, match="initial value has an unknown rank.*shape="):
        tf.Variable(x, validate_shape=False)
    v = tf.Variable(x, shape=[None, 3], validate_shape=False)
    assert v.shape.as_list() == [None, 3]


def test_a_rank_the_values_fed_do_not_decide_is_an_error_naming_the_op():
    # a branch whose result has an unknown rank whatever is fed (only hand-made IR can
    # say so: every op's rank follows from its inputs' once they are known); the error
    # names where the unknown rank starts
    branch = ir.Graph("then")
    inner = branch.add_node("Placeholder", [], {"dtype": "float32", "shape": None})
    branch.set_results(inner.outputs)
    other = ir.Graph("else")
    other.set_results(other.add_node("Placeholder", [], {"dtype": "float32", "shape": None})
                      .outputs)
    g = ir.Graph("step")
    pred = g.add_arg(TensorType("bool", None), "pred")
    node = g.add_node("If", [pred], regions=[branch, other], name="branchy")
    g.set_results(node.outputs)
    assert node.outputs[0].type.shape is None
    with pytest.raises(UnimplementedError, match="Placeholder 'placeholder'.*still has an "
                                                 "unknown rank"):
        specialize_to_feeds(g, [()])


# -- specialization per shape fed -------------------------------------------------------------

def test_one_step_is_compiled_per_shape_fed(monkeypatch):
    compiles = []
    real = session_module.compile_graph

    def counting(graph, *args, **kwargs):
        compiles.append([str(a.type) for a in graph.args])
        return real(graph, *args, **kwargs)
    monkeypatch.setattr(session_module, "compile_graph", counting)
    x = tf.placeholder(tf.float32)
    y = tf.reduce_sum(x * 2.0)
    with tf.Session() as sess:
        assert sess.run(y, {x: np.ones(3)}) == 6.0
        assert sess.run(y, {x: np.full(3, 2.0)}) == 12.0
        assert sess.run(y, {x: np.ones((2, 2))}) == 8.0
        assert sess.run(y, {x: 1.0}) == 2.0
    assert compiles == [["f32[3]"], ["f32[2,2]"], ["f32[]"]]


def test_a_graph_without_unknown_ranks_compiles_as_before(monkeypatch):
    compiles = []
    real = session_module.compile_graph
    monkeypatch.setattr(session_module, "compile_graph",
                        lambda g, *a, **k: compiles.append(str(g.args[0].type))
                        or real(g, *a, **k))
    x = tf.placeholder(tf.float32, [None, 2])
    y = x * 2.0
    with tf.Session() as sess:
        sess.run(y, {x: np.ones((1, 2))})
        sess.run(y, {x: np.ones((5, 2))})
    assert compiles == ["f32[?,2]"]  # once: the target handles the None dim


def test_placeholder_with_default_of_unknown_rank_takes_any_feed_and_its_default():
    d = tf.placeholder_with_default(tf.constant([[1.0, 2.0]]), shape=None)
    assert d.shape.rank is None
    e = tf.placeholder_with_default(tf.constant([1.0, 2.0]), shape=[None])
    assert e.shape.as_list() == [None]
    with pytest.raises(ValueError, match="does not have the shape given"):
        tf.placeholder_with_default(tf.constant([1.0, 2.0]), shape=[None, 2])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(d), [[1.0, 2.0]])
        assert sess.run(d, {d: 7.0}) == 7.0


# -- the IR text and tw.compile ---------------------------------------------------------------

def test_unknown_rank_prints_and_parses_as_mlir_unranked_tensors():
    g = ir.Graph("f")
    x = g.add_arg(TensorType("float32", None), "x")
    y = g.add_node("Exp", [x])
    g.set_results(y.outputs)
    text = print_graph(g)
    assert "tensor<*xf32>" in text
    back = parse_graph(text)
    assert back.args[0].type == TensorType("float32", None)
    assert back.nodes[0].outputs[0].type.shape is None


def test_tw_compile_is_unaffected():
    f = tw.compile(lambda a: tw.reduce_sum(a * 2.0))
    assert f(np.ones(3, np.float32)) == 6.0
    g = tw.compile(lambda a: a + 1.0, input_signature=[tw.TensorSpec([None], tw.float32)])
    np.testing.assert_array_equal(g(np.zeros(2, np.float32)), [1.0, 1.0])
    with pytest.raises((TypeError, ValueError)):
        tw.TensorSpec(None, tw.float32)
