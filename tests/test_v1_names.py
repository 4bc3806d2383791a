"""TensorFlow 1 names in v1 graphs, against TensorFlow 2.21's ``tf.compat.v1`` in graph
mode (the expected names below were printed by the same programs run there).

TF1 programs fetch tensors by name (``graph.get_tensor_by_name("dense/BiasAdd:0")``),
restore checkpoints by variable name and read summaries by tag, so tensorweave names ops
as TensorFlow 1 does: ``Graph.unique_name`` (``a``, ``a_1``, ..., unique ignoring case),
a name scope made unique the same way (a second ``name_scope("s")`` is ``s_1/``), a name
ending in ``/`` re-entering a scope exactly, a variable scope entered again opening a new
name scope (``vs_1``) while ``get_variable`` keeps ``vs/w``, and ops named after their op
type (``MatMul``, ``BiasAdd``, ``Relu``) or, for Python-level functions and operators, as
TensorFlow's wrappers name them (``add`` for ``x + y``, ``concat``, ``strided_slice``).
Loop and conditional bodies are named as TensorFlow 1's control flow names them
(``while/add``: TF 2.21 after ``disable_v2_behavior()``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave.compat.v1 as tf


def _names(*tensors):
    return [t.name for t in tensors]


def test_the_porting_program_gets_tensorflows_names():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2])
        with tf.name_scope("s1"):
            a = tf.identity(x, name="op")
        with tf.name_scope("s1"):
            b = tf.identity(x, name="op")
        with tf.variable_scope("vs"):
            c = tf.identity(x, name="op")
            w = tf.get_variable("w", [2])
        with tf.variable_scope("vs", reuse=True):
            d = tf.identity(x, name="op")
            w2 = tf.get_variable("w", [2])
        with tf.name_scope("s1/"):
            e = tf.identity(x, name="op")
        f = tf.layers.dense(x[None], 3)
        f2 = tf.layers.dense(x[None], 3)
        assert _names(a, b, c, d, e, w, w2, f, f2) == [
            "s1/op:0", "s1_1/op:0", "vs/op:0", "vs_1/op:0", "s1/op_1:0", "vs/w:0", "vs/w:0",
            "dense/BiasAdd:0", "dense_1/BiasAdd:0"]
        assert [v.name for v in tf.global_variables()] == [
            "vs/w:0", "dense/kernel:0", "dense/bias:0", "dense_1/kernel:0", "dense_1/bias:0"]
        # and each name fetches its tensor
        assert g.get_tensor_by_name("s1_1/op:0").op is b.op
        assert g.get_tensor_by_name("dense_1/BiasAdd:0").op is f2.op


def test_names_are_unique_ignoring_case_and_skip_taken_suffixes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        got = _names(tf.identity(x, name="A"), tf.identity(x, name="a"),
                     tf.identity(x, name="a_1"), tf.identity(x, name="a"))
    assert got == ["A:0", "a_1:0", "a_1_1:0", "a_2:0"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["a", "A", "a_1", "A_1", "a_2", "b", "B", "b_1", "a_1_1"]),
                min_size=1, max_size=12))
def test_every_op_gets_a_new_name_that_fetches_it(requested):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        ops = [tf.identity(x, name=n).op for n in requested]
    names = [op.name for op in ops]
    taken = {"x"}
    for want, op in zip(requested, ops):
        # a name whose lower case is not taken is kept; else a suffix ``_k`` is added
        if want.lower() not in taken:
            assert op.name == want
        else:
            assert op.name.startswith(want + "_") and op.name[len(want) + 1:].isdigit()
        assert op.name.lower() not in taken
        taken.add(op.name.lower())
        assert g.get_operation_by_name(op.name) is op
    assert len({n.lower() for n in names}) == len(names)


def test_name_scopes_nest_reset_and_reenter_as_tensorflow():
    out = []
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        with tf.name_scope("outer"):
            with tf.name_scope("inner") as s:
                out += [s, tf.identity(x).name]
            with tf.name_scope("inner") as s:
                out.append(s)
            with tf.name_scope(None) as s:  # the root
                out += [s, tf.identity(x).name]
            with tf.name_scope("") as s:
                out.append(s)
            with tf.name_scope("a/b") as s:
                out.append(s)
            with tf.name_scope("z/y/") as s:  # absolute: exactly this scope
                out += [s, tf.identity(x).name]
            with tf.name_scope(None, default_name="dflt") as s:
                out.append(s)
            with tf.name_scope(None, default_name="dflt") as s:
                out.append(s)
            out.append(tf.identity(x, name="inner").name)  # the scope took "inner"
        out.append(tf.identity(x, name="outer").name)
        with tf.name_scope("x") as s:  # an op took "x"
            out.append(s)
    assert out == ["outer/inner/", "outer/inner/Identity:0", "outer/inner_1/", "",
                   "Identity:0", "", "outer/a/b/", "z/y/", "z/y/Identity:0", "outer/dflt/",
                   "outer/dflt_1/", "outer/inner_2:0", "outer_1:0", "x_1/"]


def test_variable_scopes_name_variables_and_ops_as_tensorflow():
    out = []
    with tf.Graph().as_default():
        with tf.variable_scope("vs") as vs:
            out += [vs.original_name_scope, tf.get_variable("w", [2]).name,
                    tf.get_variable("W", [2]).name]  # a new variable, its name unique
            with tf.variable_scope("in"):
                out.append(tf.constant(1.0).name)
        with tf.variable_scope(vs):
            out += [tf.constant(1.0).name, vs.original_name_scope]
        with tf.variable_scope(vs, auxiliary_name_scope=False):
            out.append(tf.constant(1.0).name)
        with tf.variable_scope("vs", reuse=True) as again:
            out += [tf.constant(1.0).name, again.original_name_scope]
        with tf.variable_scope(None, default_name="d"):
            out.append(tf.constant(1.0).name)
        with tf.variable_scope(None, default_name="d"):
            out.append(tf.constant(1.0).name)
        with tf.name_scope("ns"):
            with tf.variable_scope("vv"):
                # the variable ignores the name scope, its initializer's ops too
                out += [tf.get_variable("u", [1]).name, tf.constant(1.0).name]
        v, v_ = tf.Variable(1.0, name="v"), tf.Variable(1.0, name="v")
        out += [v.name, v.op.name, v_.name, v.initializer.name]
        for _ in range(2):
            with tf.name_scope("s"):
                v = tf.Variable(1.0, name="v")
                out += [v.name, v.op.name]
    assert out == ["vs/", "vs/w:0", "vs/W_1:0", "vs/in/Const:0", "vs_1/Const:0", "vs/",
                   "Const:0", "vs_2/Const:0", "vs_2/", "d/Const:0", "d_1/Const:0", "vv/u:0",
                   "ns/vv/Const:0", "v:0", "v", "v_1:0", "v/Assign", "s/v:0", "s/v",
                   "s_1/v:0", "s_1/v"]


def test_layers_name_their_ops_as_tensorflow():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        im = tf.placeholder(tf.float32, [1, 8, 8, 3])
        got = _names(
            tf.layers.dense(x, 4, activation=tf.nn.relu),
            tf.layers.dense(x, 4, activation=tf.nn.tanh, use_bias=False),
            tf.layers.dense(x, 4, activation=tf.nn.sigmoid),
            tf.layers.dense(x, 4, name="fc"),
            tf.layers.dense(x, 4, name="fc", reuse=True),
            tf.layers.conv2d(im, 2, 3, activation=tf.nn.relu),
            tf.layers.conv2d(im, 2, 3, use_bias=False),
            tf.layers.max_pooling2d(im, 2, 2),
            tf.layers.average_pooling2d(im, 2, 2),
            tf.layers.flatten(im),
            tf.layers.dropout(x, 0.5),
            tf.layers.dense(tf.placeholder(tf.float32, [2, 5, 3]), 4))
        variables = [v.name for v in tf.global_variables()]
    assert got == ["dense/Relu:0", "dense_1/Tanh:0", "dense_2/Sigmoid:0", "fc/BiasAdd:0",
                   "fc_1/BiasAdd:0", "conv2d/Relu:0", "conv2d_1/Conv2D:0",
                   "max_pooling2d/MaxPool:0", "average_pooling2d/AvgPool:0",
                   "flatten/Reshape:0", "dropout/Identity:0", "dense_3/BiasAdd:0"]
    assert variables == ["dense/kernel:0", "dense/bias:0", "dense_1/kernel:0",
                         "dense_2/kernel:0", "dense_2/bias:0", "fc/kernel:0", "fc/bias:0",
                         "conv2d/kernel:0", "conv2d/bias:0", "conv2d_1/kernel:0",
                         "dense_3/kernel:0", "dense_3/bias:0"]


def test_ops_and_operators_get_tensorflows_default_names():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        m = tf.placeholder(tf.float32, [2, 2], name="m")
        got = _names(x + x, x * x, x - x, x / x, tf.add(x, x), tf.matmul(m, m), m @ m,
                     tf.nn.relu(x), tf.nn.softmax(m), tf.reduce_sum(x), tf.nn.bias_add(m, x),
                     tf.reshape(x, [2, 1]), tf.concat([x, x], 0), tf.stack([x, x]), -x, x[0],
                     tf.cast(x, tf.int32), tf.argmax(m, 1), x ** 2, tf.pow(x, 2.0))
    assert got == ["add:0", "mul:0", "sub:0", "truediv:0", "Add_1:0", "MatMul:0", "matmul_1:0",
                   "Relu:0", "Softmax:0", "Sum:0", "BiasAdd:0", "Reshape:0", "concat:0",
                   "stack:0", "Neg:0", "strided_slice:0", "Cast:0", "ArgMax:0", "pow:0",
                   "Pow_1:0"]


def test_summaries_are_tagged_with_their_unique_scope():
    pytest.importorskip("tensorboard")
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        got = [tf.summary.scalar("loss", x[0]), tf.summary.scalar("loss", x[0])]
        with tf.name_scope("train"):
            got += [tf.summary.scalar("loss", x[0]), tf.summary.histogram("h", x)]
    assert _names(*got) == ["loss:0", "loss_1:0", "train/loss:0", "train/h:0"]
    assert [t.op.attrs["tag"] for t in got] == ["loss", "loss_1", "train/loss", "train/h"]


def test_loop_and_conditional_bodies_are_named_under_their_scope():
    # TensorFlow 1's control flow (TF 2.21 after disable_v2_behavior) names the body's
    # ops in the graph: "s/while/step"; get_variable in a body keeps its variable scope
    seen = []
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [], name="x")

        def body(i):
            seen.append(tf.add(i, 1, name="step").name)
            with tf.name_scope("inner") as s:
                seen.append(s)
            return i + 1

        def then():
            seen.append(tf.identity(x, name="tt").name)
            return x

        with tf.name_scope("s"):
            tf.while_loop(lambda i: i < 3, body, [tf.constant(0)])
            tf.cond(x > 0, then, lambda: x, name="mycond")
        seen += [tf.identity(x, name="step").name, tf.identity(x, name="while").name]

        def body2(i):
            w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
            seen.append(w.name)
            return i + w

        with tf.variable_scope("v"):
            tf.while_loop(lambda i: i < 3.0, body2, [tf.constant(0.0)])
        assert [v.name for v in tf.global_variables()] == ["v/w:0"]
    assert seen == ["s/while/step:0", "s/while/inner/", "s/mycond/tt:0", "step:0",
                    "while:0", "v/w:0"]


def test_tensors_fetched_by_name_hold_the_layers_values():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2, 3], name="input")
        h = tf.layers.dense(x, 4, activation=tf.nn.relu)
        tf.layers.dense(h, 2, name="logits")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            xs = np.arange(6, dtype=np.float32).reshape(2, 3) / 5 - 0.4
            k, b, k2, b2 = sess.run(tf.global_variables())
            pre, act, out = sess.run(
                [g.get_tensor_by_name("dense/BiasAdd:0"), g.get_tensor_by_name("dense/Relu:0"),
                 "logits/BiasAdd:0"], {"input:0": xs})
    want_pre = xs.astype(np.float64) @ k + b
    np.testing.assert_allclose(pre, want_pre, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(act, np.maximum(want_pre, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, np.maximum(want_pre, 0) @ k2 + b2, rtol=1e-5, atol=1e-6)


def test_checkpoints_restore_by_the_same_variable_names(tmp_path):
    def build():
        x = tf.placeholder(tf.float32, [1, 3], name="x")
        with tf.name_scope("s"):  # a name scope does not rename get_variable's variables
            with tf.variable_scope("enc"):
                h = tf.layers.dense(x, 2)
        with tf.name_scope("s"):
            v = tf.Variable([1.0, 2.0], name="v")
        return x, h, v

    g1 = tf.Graph()
    with g1.as_default():
        x, h, v = build()
        names = [w.name for w in tf.global_variables()]
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(v.assign([5.0, 6.0]))
            want = sess.run(h, {x: np.ones((1, 3), np.float32)})
            path = saver.save(sess, str(tmp_path / "model"))
    assert names == ["enc/dense/kernel:0", "enc/dense/bias:0", "s_1/v:0"]
    g2 = tf.Graph()
    with g2.as_default():
        x, h, v = build()
        assert [w.name for w in tf.global_variables()] == names
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, path)
            np.testing.assert_array_equal(sess.run(h, {x: np.ones((1, 3), np.float32)}), want)
            np.testing.assert_array_equal(sess.run(v), [5.0, 6.0])


def test_a_variables_name_fetches_and_feeds_its_value():
    # TensorFlow 1 (ref variables): "w:0" is the variable's value; it was an opaque
    # VariableState object here
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [1, 2], name="x")
        y = tf.layers.dense(x, 1, kernel_initializer=tf.ones_initializer())
        kernel = g.get_tensor_by_name("dense/kernel:0")
        assert kernel.name == "dense/kernel:0" and kernel.op.name == "dense/kernel"
        doubled = tf.identity(kernel) * 2.0
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run("dense/kernel:0"), [[1.0], [1.0]])
            np.testing.assert_array_equal(sess.run(doubled), [[2.0], [2.0]])
            xs = np.array([[3.0, 4.0]], np.float32)
            np.testing.assert_array_equal(sess.run(y, {x: xs}), [[7.0]])
            # a feed of the variable's name replaces its value for that run
            np.testing.assert_array_equal(
                sess.run(y, {x: xs, "dense/kernel:0": [[2.0], [0.0]]}), [[6.0]])


def test_composite_activations_are_named_as_tensorflows_single_ops():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        got = _names(tf.nn.elu(x), tf.nn.relu6(x), tf.nn.leaky_relu(x, 0.1), tf.nn.softplus(x),
                     tf.nn.selu(x), tf.nn.softsign(x), tf.nn.elu(x, name="e"),
                     tf.layers.dense(x, 2, activation=tf.nn.elu),
                     tf.layers.dense(x, 2, activation="selu"),
                     tf.layers.dense(x, 2, activation="softplus"))
        leaky = tf.nn.leaky_relu(x, alpha=0.1)
        with tf.Session() as sess:
            xs = np.array([[-2.0, -0.5, 0.0], [0.5, 1.0, 3.0]], np.float32)
            got_leaky = sess.run(leaky, {x: xs})
    assert got == ["Elu:0", "Relu6:0", "LeakyRelu:0", "Softplus:0", "Selu:0", "Softsign:0",
                   "e:0", "dense/Elu:0", "dense_1/Selu:0", "dense_2/Softplus:0"]
    np.testing.assert_allclose(got_leaky, np.where(xs > 0, xs, 0.1 * xs), rtol=1e-6)
