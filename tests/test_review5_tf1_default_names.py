"""TensorFlow 1's default names in v1 graphs: a tensor fetched by the name TensorFlow
gives it is the same tensor here.

TF1 programs fetch tensors by name (``sess.run("Const_1:0")``, ``get_tensor_by_name
("Maximum:0")``). Ops that tensorweave adds that TensorFlow does not (a Python value
converted for an op, the pieces of a function TensorFlow builds as one op) took the
root names TensorFlow gives the program's own ops, so those names fetched another
tensor, silently: ``x * 2.0`` took ``Const`` (the program's ``tf.constant`` became
``Const_1``), ``tf.clip_by_value`` took ``Maximum`` and ``Minimum``,
``sigmoid_cross_entropy_with_logits`` ``Add`` and ``Log1p``, ``tf.zeros`` ``Fill``.
Every expected name and value below was printed by TensorFlow 2.21's ``tf.compat.v1``
(graph mode) on the same program.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def test_a_python_operand_is_named_after_its_op_and_constants_keep_tensorflows_names():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        a = x * 2.0
        b = tf.add(x, 3.0)
        c = tf.constant(1.0)
        d = tf.convert_to_tensor(np.float32(5.0))
        e = tf.constant(2.0)
        v = tf.Variable(7.0)
        names = [a.name, b.name, c.name, d.name, e.name]
        with tf.Session() as sess:
            sess.run(v.initializer)
            got = sess.run(["Const:0", "Const_1:0", "Const_2:0", "mul/y:0", "Add/y:0",
                            "Variable/initial_value:0"])
    assert names == ["mul:0", "Add:0", "Const:0", "Const_1:0", "Const_2:0"]
    assert [float(v) for v in got] == [1.0, 5.0, 2.0, 2.0, 3.0, 7.0]


def _mnist_softmax():
    x = tf.placeholder(tf.float32, [None, 6])
    w = tf.Variable(tf.zeros([6, 3]) + 0.1)
    b = tf.Variable(tf.zeros([3]))
    y = tf.nn.softmax(tf.matmul(x, w) + b)
    y_ = tf.placeholder(tf.float32, [None, 3])
    cross_entropy = tf.reduce_mean(-tf.reduce_sum(y_ * tf.log(y), reduction_indices=[1]))
    correct = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
    tf.reduce_mean(tf.cast(correct, tf.float32))
    cross_entropy * tf.constant(2.0) + 1.0
    total = tf.reduce_sum(tf.add(y, tf.constant([1.0, 2.0, 3.0])))
    tf.maximum(total, 0.5)
    return {x: np.arange(12, dtype=np.float32).reshape(2, 6) / 10,
            y_: np.eye(3, dtype=np.float32)[:2]}


def _losses():
    x = tf.placeholder(tf.float32, [2, 3])
    labels = tf.placeholder(tf.float32, [2, 3])
    tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=x))
    tf.clip_by_value(x, -0.5, 0.5)
    tf.add(x, 1.0)
    tf.maximum(x, 0.2)
    tf.minimum(x, 0.3)
    tf.reduce_sum(x)
    tf.zeros([2]) + tf.ones([2])
    tf.fill([2], 3.0)
    tf.nn.l2_normalize(x, 1)
    tf.reduce_logsumexp(x, 1)
    tf.identity(x)
    tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=x)
    tf.subtract(x, 1.0)
    tf.log1p(tf.abs(x))
    tf.count_nonzero(x > 0)
    tf.reduce_sum(x, 1)
    tf.constant(7.0)
    tf.nn.embedding_lookup(tf.constant([[1.0, 2.0], [3.0, 4.0]]), [1])
    tf.zeros_like(x)
    return {x: np.array([[0.1, -1.0, 2.0], [0.0, 0.5, -0.3]], np.float32),
            labels: np.array([[1, 0, 1], [0, 1, 0]], np.float32)}


# op name -> (shape, the first 8 values rounded to 5 decimals) of its output 0 in TensorFlow
# 2.21 (every name that both graphs have: the others are TensorFlow's internals)
TF_MNIST = {
    'Add_3': ((2, 3), [1.33333, 2.33333, 3.33333, 1.33333, 2.33333, 3.33333]),
    'ArgMax': ((2,), [0.0, 0.0]),
    'ArgMax_1': ((2,), [0.0, 1.0]),
    'Cast': ((2,), [1.0, 0.0]),
    'Const': ((1,), [0.0]),
    'Const_1': ((1,), [0.0]),
    'Const_2': ((), [2.0]),
    'Const_3': ((3,), [1.0, 2.0, 3.0]),
    'Const_4': ((2,), [0.0, 1.0]),
    'Equal': ((2,), [1.0, 0.0]),
    'Log': ((2, 3), [-1.09861, -1.09861, -1.09861, -1.09861, -1.09861, -1.09861]),
    'MatMul': ((2, 3), [0.15, 0.15, 0.15, 0.51, 0.51, 0.51]),
    'Maximum': ((), [14.0]),
    'Maximum/y': ((), [0.5]),
    'Mean': ((), [1.09861]),
    'Mean_1': ((), [0.5]),
    'Neg': ((2,), [1.09861, 1.09861]),
    'Placeholder': ((2, 6), [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]),
    'Placeholder_1': ((2, 3), [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]),
    'Softmax': ((2, 3), [0.33333, 0.33333, 0.33333, 0.33333, 0.33333, 0.33333]),
    'Sum': ((2,), [-1.09861, -1.09861]),
    'Sum_1': ((), [14.0]),
    'Variable': ((6, 3), [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]),
    'Variable_1': ((3,), [0.0, 0.0, 0.0]),
    'add': ((6, 3), [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]),
    'add/y': ((), [0.1]),
    'add_1': ((2, 3), [0.15, 0.15, 0.15, 0.51, 0.51, 0.51]),
    'add_2': ((), [3.19722]),
    'add_2/y': ((), [1.0]),
    'mul': ((2, 3), [-1.09861, -0.0, -0.0, -0.0, -1.09861, -0.0]),
    'mul_1': ((), [2.19722]),
    'zeros': ((6, 3), [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
    'zeros_1': ((3,), [0.0, 0.0, 0.0]),
}

TF_LOSSES = {
    'Abs': ((2, 3), [0.1, 1.0, 2.0, 0.0, 0.5, 0.3]),
    'Add': ((2, 3), [1.1, 0.0, 3.0, 1.0, 1.5, 0.7]),
    'Add/y': ((), [1.0]),
    'Const': ((2,), [0.0, 1.0]),
    'Const_1': ((2,), [0.0, 1.0]),
    'Const_2': ((), [7.0]),
    'Const_3': ((2, 2), [1.0, 2.0, 3.0, 4.0]),
    'Fill': ((2,), [3.0, 3.0]),
    'Greater': ((2, 3), [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]),
    'Greater/y': ((), [0.0]),
    'Identity': ((2, 3), [0.1, -1.0, 2.0, 0.0, 0.5, -0.3]),
    'Log1p': ((2, 3), [0.09531, 0.69315, 1.09861, 0.0, 0.40547, 0.26236]),
    'Maximum': ((2, 3), [0.2, 0.2, 2.0, 0.2, 0.5, 0.2]),
    'Maximum/y': ((), [0.2]),
    'Mean': ((), [0.46769]),
    'Minimum': ((2, 3), [0.1, -1.0, 0.3, 0.0, 0.3, -0.3]),
    'Minimum/y': ((), [0.3]),
    'Placeholder': ((2, 3), [0.1, -1.0, 2.0, 0.0, 0.5, -0.3]),
    'Placeholder_1': ((2, 3), [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]),
    'ReduceLogSumExp': ((2,), [2.18178, 1.22069]),
    'ReduceLogSumExp/Exp': ((2, 3), [0.14957, 0.04979, 1.0, 0.60653, 1.0, 0.44933]),
    'ReduceLogSumExp/IsFinite': ((2, 1), [1.0, 1.0]),
    'ReduceLogSumExp/Log': ((2,), [0.18178, 0.72069]),
    'ReduceLogSumExp/Max': ((2, 1), [2.0, 0.5]),
    'ReduceLogSumExp/StopGradient': ((2, 1), [2.0, 0.5]),
    'ReduceLogSumExp/Sum': ((2,), [1.19936, 2.05586]),
    'Sub': ((2, 3), [-0.9, -2.0, 1.0, -1.0, -0.5, -1.3]),
    'Sub/y': ((), [1.0]),
    'Sum': ((), [1.3]),
    'Sum_1': ((2,), [1.1, 0.2]),
    'add_1': ((2,), [1.0, 1.0]),
    'clip_by_value': ((2, 3), [0.1, -0.5, 0.5, 0.0, 0.5, -0.3]),
    'clip_by_value/Minimum': ((2, 3), [0.1, -1.0, 0.5, 0.0, 0.5, -0.3]),
    'clip_by_value/Minimum/y': ((), [0.5]),
    'clip_by_value/y': ((), [-0.5]),
    'count_nonzero/Cast': ((2, 3), [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]),
    'count_nonzero/Sum': ((), [3.0]),
    'embedding_lookup': ((1, 2), [3.0, 4.0]),
    'l2_normalize/Maximum': ((2, 1), [5.01, 0.34]),
    'l2_normalize/Maximum/y': ((), [0.0]),
    'l2_normalize/Rsqrt': ((2, 1), [0.44677, 1.71499]),
    'l2_normalize/Square': ((2, 3), [0.01, 1.0, 4.0, 0.0, 0.25, 0.09]),
    'l2_normalize/Sum': ((2, 1), [5.01, 0.34]),
    'logistic_loss': ((2, 3), [0.6444, 0.31326, 0.12693, 0.69315, 0.47408, 0.55436]),
    'logistic_loss/Exp': ((2, 3), [0.90484, 0.36788, 0.13534, 1.0, 0.60653, 0.74082]),
    'logistic_loss/GreaterEqual': ((2, 3), [1.0, 0.0, 1.0, 1.0, 1.0, 0.0]),
    'logistic_loss/Log1p': ((2, 3), [0.6444, 0.31326, 0.12693, 0.69315, 0.47408, 0.55436]),
    'logistic_loss/Neg': ((2, 3), [-0.1, 1.0, -2.0, -0.0, -0.5, 0.3]),
    'logistic_loss/Select': ((2, 3), [0.1, 0.0, 2.0, 0.0, 0.5, 0.0]),
    'logistic_loss/Select_1': ((2, 3), [-0.1, -1.0, -2.0, -0.0, -0.5, -0.3]),
    'logistic_loss/mul': ((2, 3), [0.1, -0.0, 2.0, 0.0, 0.5, -0.0]),
    'logistic_loss/sub': ((2, 3), [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
    'ones': ((2,), [1.0, 1.0]),
    'softmax_cross_entropy_with_logits': ((2,), [2.26357, 0.72069]),
    'zeros': ((2,), [0.0, 0.0]),
    'zeros_like': ((2, 3), [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
}


@pytest.mark.parametrize("program, expected", [(_mnist_softmax, TF_MNIST),
                                               (_losses, TF_LOSSES)],
                         ids=["mnist_softmax", "losses"])
def test_tensors_fetched_by_tensorflows_names_are_tensorflows(program, expected):
    g = tf.Graph()
    with g.as_default():
        feeds = program()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = {}
            for name in expected:
                value = np.asarray(sess.run(g.get_tensor_by_name(f"{name}:0"), feeds))
                got[name] = (value.shape,
                             np.round(value.astype(np.float64), 5).ravel().tolist()[:8])
    for name, (shape, values) in expected.items():
        assert got[name][0] == shape, name
        np.testing.assert_allclose(got[name][1], values, atol=2e-5, err_msg=name)


def _fn_inputs():
    return (tf.placeholder(tf.float32, [2, 3], name="x"),
            tf.placeholder(tf.float32, [2, 3], name="l"),
            tf.placeholder(tf.int32, [2], name="i"))


# what each function returns and the names it adds at the root, in TensorFlow 2.21
ROOT_NAMES = {
    "clip_by_value": (lambda x, y, i: tf.clip_by_value(x, -0.5, 0.5),
                      "clip_by_value:0", ["clip_by_value"]),
    "clip_by_norm": (lambda x, y, i: tf.clip_by_norm(x, 1.0), "clip_by_norm:0",
                     ["clip_by_norm"]),
    "sigmoid_xent": (lambda x, y, i: tf.nn.sigmoid_cross_entropy_with_logits(labels=y,
                                                                            logits=x),
                     "logistic_loss:0", ["logistic_loss"]),
    "zeros": (lambda x, y, i: tf.zeros([2, 3]), "zeros:0", ["zeros"]),
    "ones": (lambda x, y, i: tf.ones([2, 3]), "ones:0", ["ones"]),
    "logsumexp": (lambda x, y, i: tf.reduce_logsumexp(x, 1), "ReduceLogSumExp:0",
                  ["ReduceLogSumExp"]),
    "count_nonzero": (lambda x, y, i: tf.count_nonzero(x), "count_nonzero/Sum:0", []),
    "elu": (lambda x, y, i: tf.nn.elu(x), "Elu:0", ["Elu"]),
    "softplus": (lambda x, y, i: tf.nn.softplus(x), "Softplus:0", ["Softplus"]),
    "selu": (lambda x, y, i: tf.nn.selu(x), "Selu:0", ["Selu"]),
    "relu6": (lambda x, y, i: tf.nn.relu6(x), "Relu6:0", ["Relu6"]),
    "softsign": (lambda x, y, i: tf.nn.softsign(x), "Softsign:0", ["Softsign"]),
    "leaky_relu": (lambda x, y, i: tf.nn.leaky_relu(x), "LeakyRelu:0", ["LeakyRelu"]),
    "rank": (lambda x, y, i: tf.rank(x), "Rank:0", ["Rank"]),
    "reverse": (lambda x, y, i: tf.reverse(x, [0]), "ReverseV2:0", ["ReverseV2"]),
    "to_float": (lambda x, y, i: tf.to_float(i), "ToFloat:0", ["ToFloat"]),
    "where": (lambda x, y, i: tf.where(x > 0, x, y), "Select:0", ["Greater", "Select"]),
    "where_coordinates": (lambda x, y, i: tf.where(x > 0), "Where:0", ["Greater", "Where"]),
    "rsqrt": (lambda x, y, i: tf.rsqrt(tf.abs(x) + 1.0), "Rsqrt:0", ["Abs", "Rsqrt", "add"]),
    "pow": (lambda x, y, i: tf.pow(x, 2.0), "Pow:0", ["Pow"]),
    "divide": (lambda x, y, i: tf.divide(x, y + 1.0), "truediv:0", ["add", "truediv"]),
    "div": (lambda x, y, i: tf.div(x, y + 1.0), "div:0", ["add", "div"]),
    "floordiv": (lambda x, y, i: tf.floordiv(x, y + 1.0), "floordiv:0", ["add", "floordiv"]),
    "mod": (lambda x, y, i: tf.mod(x, y + 1.0), "FloorMod:0", ["FloorMod", "add"]),
    "logical_and": (lambda x, y, i: tf.logical_and(x > 0, y > 0), "LogicalAnd:0",
                    ["Greater", "Greater_1", "LogicalAnd"]),
    "reduce_max": (lambda x, y, i: tf.reduce_max(x), "Max:0", ["Const", "Max"]),
    "reduce_prod": (lambda x, y, i: tf.reduce_prod(x), "Prod:0", ["Const", "Prod"]),
    "reduce_mean_axis": (lambda x, y, i: tf.reduce_mean(x, 1), "Mean:0", ["Mean"]),
    "scatter_nd": (lambda x, y, i: tf.scatter_nd([[0]], [1.0], [2]), "ScatterNd:0",
                   ["ScatterNd"]),
    "conv2d": (lambda x, y, i: tf.nn.conv2d(tf.reshape(x, [1, 2, 3, 1]),
                                            tf.ones([1, 1, 1, 2]), [1, 1, 1, 1], "SAME"),
               "Conv2D:0", ["Conv2D", "Reshape", "ones"]),
    "gradients": (lambda x, y, i: tf.gradients(tf.reduce_sum(x * x), x)[0],
                  "gradients/AddN:0", ["Const", "Sum", "mul"]),
    "group": (lambda x, y, i: tf.group(x, x * 2.0), "group_deps", ["group_deps", "mul"]),
    "assert_less": (lambda x, y, i: tf.assert_less(x, x + 1.0), None, ["add"]),
}


@pytest.mark.parametrize("case", sorted(ROOT_NAMES))
def test_functions_add_tensorflows_root_names(case):
    fn, returned, root = ROOT_NAMES[case]
    g = tf.Graph()
    with g.as_default():
        inputs = _fn_inputs()
        before = {op.name for op in g.get_operations()}
        result = fn(*inputs)
        added = sorted(op.name for op in g.get_operations()
                       if op.name not in before and "/" not in op.name)
    if returned is not None:
        assert result.name == returned
    # an assertion's own op takes its scope's name, which TensorFlow has taken too
    assert [n for n in added if not n.startswith("assert_")] == root


def test_a_given_name_names_the_scope_and_the_last_op():
    xs = np.array([[0.1, -1.0, 2.0], [0.0, 0.5, -0.3]], np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        by_keyword = tf.clip_by_value(x, -0.5, 0.5, name="clipped")
        by_position = tf.clip_by_value(x, -0.5, 0.5, "clipped")
        loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.ones_like(x), logits=x,
                                                       name="xent")
        elu = tf.nn.elu(x, name="act")
        added = sorted(op.name for op in g.get_operations() if "/" not in op.name)
        with tf.Session() as sess:
            got = sess.run([by_keyword, by_position, loss, elu, "clipped_1:0"], {x: xs})
    assert [t.name for t in (by_keyword, by_position, loss, elu)] == [
        "clipped:0", "clipped_1:0", "xent:0", "act:0"]
    assert added == ["act", "clipped", "clipped_1", "ones_like", "x", "xent"]
    np.testing.assert_allclose(got[0], np.clip(xs, -0.5, 0.5))
    np.testing.assert_allclose(got[1], np.clip(xs, -0.5, 0.5))
    np.testing.assert_allclose(got[2], np.maximum(xs, 0) - xs + np.log1p(np.exp(-np.abs(xs))),
                               rtol=1e-6)
    np.testing.assert_allclose(got[3], np.where(xs >= 0, xs, np.expm1(xs)), rtol=1e-6)
    np.testing.assert_allclose(got[4], got[1])


def test_names_in_traced_functions_are_unchanged():
    import tensorweave as tw

    @tw.compile
    def f(x):
        return tf.clip_by_value(x * 2.0, -1.0, 1.0)

    np.testing.assert_allclose(f(np.array([0.2, 3.0, -4.0], np.float32)), [0.4, 1.0, -1.0])
