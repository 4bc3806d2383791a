"""TensorFlow 1 programs on placeholders made without a shape (an unknown rank), shared by
tests/test_v1_unknown_rank.py and the script that records TensorFlow 2.21's answers
(tests/data/tf_fixtures/record_v1_unknown_rank.py; CI has no TensorFlow).

Each case is ``case(tf) -> (fetch, runs)``: it builds a graph in the default graph with
``tf`` (``tensorflow.compat.v1`` or ``tensorweave.compat.v1``) and returns what to fetch
and the runs to make: a feed dict each, or a function of the session for a run of several
steps (training). The static shape of `fetch` is recorded while the graph is built, then
each run's value (or the kind of error it raises). Imports nothing but NumPy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

CASES: dict[str, Callable[[Any], tuple[Any, list[Any]]]] = {}


def case(fn: Callable) -> Callable:
    CASES[fn.__name__] = fn
    return fn


def _data(seed: int, *shape: int) -> np.ndarray:
    return np.random.RandomState(seed).uniform(-2, 2, size=shape).astype(np.float32)


def _onehot(seed: int, n: int, k: int) -> np.ndarray:
    return np.eye(k, dtype=np.float32)[np.random.RandomState(seed).randint(0, k, n)]


SCALAR, VECTOR, MATRIX, CUBE = _data(1), _data(2, 3), _data(3, 2, 3), _data(4, 2, 2, 3)


# -- elementwise and broadcasting ------------------------------------------------------------

@case
def elementwise(tf):
    x = tf.placeholder(tf.float32)
    return tf.exp(x) * 2.0 + 1.0, [{x: SCALAR}, {x: VECTOR}, {x: MATRIX}]


@case
def broadcast_with_a_vector(tf):
    x = tf.placeholder(tf.float32)
    return x + tf.constant([1.0, 2.0, 3.0]), [{x: SCALAR}, {x: VECTOR}, {x: CUBE}]


@case
def two_unknown_ranks(tf):
    x, y = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    return tf.maximum(x, y) - x * y, [{x: MATRIX, y: VECTOR}, {x: SCALAR, y: MATRIX}]


@case
def integer_placeholder(tf):
    a, b = tf.placeholder(tf.int32), tf.placeholder(tf.int32)
    return tf.add(a, b) * tf.multiply(a, b), [{a: 2, b: 3}, {a: [1, 2], b: [[3, 4], [5, 6]]}]


@case
def comparison_and_cast(tf):
    x = tf.placeholder(tf.float32)
    return tf.cast(x > 0.5, tf.int32), [{x: MATRIX}, {x: SCALAR}]


# -- matmul, reductions, reshapes -------------------------------------------------------------

@case
def matmul_with_a_matrix(tf):
    x = tf.placeholder(tf.float32)
    return tf.matmul(x, tf.constant(_data(5, 3, 2))), [{x: MATRIX}, {x: CUBE}]


@case
def matmul_of_two_unknown(tf):
    x, y = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    return tf.matmul(x, y, transpose_b=True), [{x: MATRIX, y: MATRIX}]


@case
def reduce_sum_all(tf):
    x = tf.placeholder(tf.float32)
    return tf.reduce_sum(x), [{x: SCALAR}, {x: MATRIX}, {x: CUBE}]


@case
def reduce_mean_axis_0(tf):
    x = tf.placeholder(tf.float32)
    return tf.reduce_mean(x, 0), [{x: VECTOR}, {x: MATRIX}]


@case
def reduce_max_keepdims(tf):
    x = tf.placeholder(tf.float32)
    return tf.reduce_max(x, axis=-1, keepdims=True), [{x: MATRIX}, {x: CUBE}]


@case
def reduce_sum_keepdims_all(tf):
    x = tf.placeholder(tf.float32)
    return tf.reduce_sum(x, keepdims=True), [{x: VECTOR}, {x: CUBE}]


@case
def reduction_indices(tf):
    x = tf.placeholder(tf.float32)
    return tf.reduce_sum(x, reduction_indices=[1]), [{x: MATRIX}]


@case
def statistics_reductions(tf):
    x = tf.placeholder(tf.float32)
    return [tf.reduce_logsumexp(x), tf.reduce_logsumexp(x, 1), tf.math.reduce_variance(x, 0),
            tf.math.reduce_std(x), tf.reduce_prod(x), tf.reduce_any(x > 0),
            tf.count_nonzero(x, 0)], [{x: MATRIX}]


@case
def reshape_to_known_columns(tf):
    x = tf.placeholder(tf.float32)
    return tf.reshape(x, [-1, 3]), [{x: VECTOR}, {x: MATRIX}, {x: CUBE}]


@case
def reshape_flat(tf):
    x = tf.placeholder(tf.float32)
    return tf.reshape(x, [-1]), [{x: SCALAR}, {x: CUBE}]


@case
def reshape_like_another(tf):
    x = tf.placeholder(tf.float32)
    return tf.reshape(tf.constant(_data(6, 6)), tf.shape(x)), [{x: MATRIX}, {x: _data(7, 6)}]


@case
def concat_with_a_matrix(tf):
    x = tf.placeholder(tf.float32)
    return tf.concat([x, tf.constant(_data(8, 2, 3))], 0), [{x: MATRIX}, {x: _data(9, 1, 3)}]


@case
def concat_last_axis(tf):
    x = tf.placeholder(tf.float32)
    return tf.concat([x, x], -1), [{x: VECTOR}, {x: MATRIX}]


@case
def shape_size_rank(tf):
    x = tf.placeholder(tf.float32)
    return [tf.shape(x), tf.size(x), tf.rank(x)], [{x: SCALAR}, {x: CUBE}]


@case
def expand_squeeze_and_index(tf):
    x = tf.placeholder(tf.float32)
    return [tf.expand_dims(x, 0), tf.squeeze(x), x[0], x[..., 1]], \
        [{x: _data(10, 2, 1, 3)}]


@case
def stack_tile_pad(tf):
    x = tf.placeholder(tf.float32)
    return [tf.stack([x, x]), tf.tile(x, [2, 1]), tf.pad(x, [[1, 0], [0, 2]])], [{x: MATRIX}]


@case
def gather_and_one_hot(tf):
    x, i = tf.placeholder(tf.float32), tf.placeholder(tf.int32)
    return [tf.gather(x, [1, 0]), tf.one_hot(i, 4)], [{x: MATRIX, i: [[0, 3], [2, 1]]}]


@case
def argmax_accuracy(tf):
    y, t = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    correct = tf.equal(tf.argmax(y, 1), tf.argmax(t, 1))
    return tf.reduce_mean(tf.cast(correct, tf.float32)), \
        [{y: _data(11, 6, 4), t: _onehot(12, 6, 4)}]


# -- softmax and losses -----------------------------------------------------------------------

@case
def softmax_and_log_softmax(tf):
    x = tf.placeholder(tf.float32)
    return [tf.nn.softmax(x), tf.nn.log_softmax(x)], [{x: VECTOR}, {x: MATRIX}]


@case
def softmax_cross_entropy_with_logits(tf):
    x, y = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    return tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=x), \
        [{x: _data(13, 5, 4), y: _onehot(14, 5, 4)}, {x: _data(15, 4), y: _onehot(16, 1, 4)[0]}]


@case
def handwritten_cross_entropy(tf):
    x, y = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    p = tf.nn.softmax(x)
    return tf.reduce_mean(-tf.reduce_sum(y * tf.log(p), reduction_indices=[1])), \
        [{x: _data(17, 5, 4), y: _onehot(18, 5, 4)}]


@case
def sigmoid_cross_entropy_with_logits(tf):
    x, y = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    return tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=x), \
        [{x: MATRIX, y: (MATRIX > 0).astype(np.float32)}]


@case
def sparse_softmax_cross_entropy(tf):
    x, y = tf.placeholder(tf.float32), tf.placeholder(tf.int32)
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x), \
        [{x: _data(19, 3, 4), y: [0, 3, 1]}]


def _regression_feeds(x, y):
    return [{x: MATRIX, y: _data(20, 2, 3)}, {x: VECTOR, y: _data(21, 3)}]


@case
def losses_regression(tf):
    x, y = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    return [tf.losses.mean_squared_error(y, x), tf.losses.absolute_difference(y, x),
            tf.losses.huber_loss(y, x)], _regression_feeds(x, y)


@case
def losses_probabilities(tf):
    x, y = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    p = tf.sigmoid(x)
    labels = tf.cast(y > 0, tf.float32)
    return [tf.losses.log_loss(labels, p), tf.losses.hinge_loss(labels, x),
            tf.losses.sigmoid_cross_entropy(labels, x, label_smoothing=0.1)], \
        _regression_feeds(x, y)


@case
def losses_softmax(tf):
    x, y = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    i = tf.placeholder(tf.int32)
    return [tf.losses.softmax_cross_entropy(y, x, label_smoothing=0.2),
            tf.losses.sparse_softmax_cross_entropy(i, x)], \
        [{x: _data(22, 5, 4), y: _onehot(23, 5, 4), i: [1, 0, 3, 2, 2]}]


# -- placeholders: defaults, set_shape, scalars -----------------------------------------------

@case
def placeholder_with_default_without_shape(tf):
    d = tf.placeholder_with_default(tf.constant([1.0, 2.0]), shape=None)
    return d * 3.0, [{}, {d: MATRIX}, {d: SCALAR}]


@case
def set_shape_on_the_placeholder(tf):
    x = tf.placeholder(tf.float32)
    x.set_shape([None, 3])
    return tf.reduce_sum(x, 1), [{x: MATRIX}, {x: VECTOR}]


@case
def set_shape_on_a_result(tf):
    x = tf.placeholder(tf.float32)
    y = x * 2.0
    y.set_shape([2, 3])
    return y + tf.constant([1.0, 2.0, 3.0]), [{x: MATRIX}]


@case
def variable_made_from_a_placeholder_with_a_shape(tf):
    x = tf.placeholder(tf.float32)
    v = tf.Variable(x, shape=[None, 3], validate_shape=False, collections=[])

    def initialize_and_read(sess):
        sess.run(v.initializer, {x: MATRIX})
        return sess.run(v * 2.0)
    return v.read_value(), [initialize_and_read]


@case
def where_with_a_condition_of_known_rank(tf):
    x = tf.placeholder(tf.float32)
    return tf.where(tf.constant(MATRIX > 0), x, -x), [{x: MATRIX}]


@case
def scalar_placeholder_refuses_a_vector(tf):
    x = tf.placeholder(tf.float32, [])
    return x * 2.0, [{x: SCALAR}, {x: VECTOR}]


@case
def placeholder_of_unknown_shape_object(tf):
    x = tf.placeholder(tf.float32, tf.TensorShape(None))
    return x - 1.0, [{x: CUBE}]


# -- control flow -----------------------------------------------------------------------------

@case
def cond_on_a_predicate_of_unknown_rank(tf):
    p = tf.placeholder(tf.bool)
    w = tf.constant(MATRIX)
    return tf.cond(p, lambda: w * 2.0, lambda: w), [{p: True}, {p: False}]


@case
def cond_on_values_of_unknown_rank(tf):
    p, x = tf.placeholder(tf.bool, []), tf.placeholder(tf.float32)
    return tf.cond(p, lambda: x * 2.0, lambda: x - 1.0), [{p: True, x: VECTOR},
                                                          {p: False, x: CUBE}]


@case
def while_loop_on_a_value_of_unknown_rank(tf):
    x = tf.placeholder(tf.float32)
    _, out = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 2.0), [0, x])
    return out, [{x: SCALAR}, {x: MATRIX}]


@case
def while_loop_bounded_by_a_placeholder(tf):
    n = tf.placeholder(tf.int32)
    return tf.while_loop(lambda i: i < n, lambda i: i + 2, [0]), [{n: 5}, {n: 0}]


@case
def dropout_with_a_keep_prob_placeholder(tf):
    keep = tf.placeholder(tf.float32)
    x = tf.constant(MATRIX)
    return tf.nn.dropout(x, keep_prob=keep) - x, [{keep: 1.0}]


@case
def assert_rank_checked_when_run(tf):
    x = tf.placeholder(tf.float32)
    with tf.control_dependencies([tf.assert_rank(x, 2)]):
        y = tf.identity(x)
    return y, [{x: MATRIX}, {x: VECTOR}]


# -- gradients and training -------------------------------------------------------------------

@case
def gradient_with_respect_to_the_placeholder(tf):
    x = tf.placeholder(tf.float32)
    return tf.gradients(tf.reduce_sum(tf.square(x) * 3.0), x)[0], [{x: VECTOR}, {x: CUBE}]


@case
def gradients_of_a_softmax_classifier(tf):
    x, y = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    w = tf.constant(_data(24, 3, 4))
    b = tf.constant(_data(25, 4))
    logits = tf.matmul(x, w) + b
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
    return tf.gradients(loss, [w, b, x]), [{x: _data(26, 5, 3), y: _onehot(27, 5, 4)}]


@case
def gradients_of_reductions_over_axes(tf):
    x = tf.placeholder(tf.float32)
    y = tf.reduce_mean(x, 0) + tf.reduce_max(x, -1, keepdims=True) * tf.reduce_sum(x, [1])
    return tf.gradients(tf.reduce_sum(y * y), x)[0], [{x: _data(28, 3, 3)}]


@case
def linear_regression_tutorial(tf):
    # TensorFlow 1's linear regression example: scalars fed one by one, arrays for the cost
    train_x = _data(29, 12) + 4.0
    train_y = 0.4 * train_x + _data(30, 12) * 0.1
    x, y = tf.placeholder("float"), tf.placeholder("float")
    w, b = tf.Variable(0.3, name="weight"), tf.Variable(-0.2, name="bias")
    pred = tf.add(tf.multiply(x, w), b)
    cost = tf.reduce_sum(tf.pow(pred - y, 2)) / (2 * len(train_x))
    step = tf.train.GradientDescentOptimizer(0.01).minimize(cost)

    def train(sess):
        for _ in range(2):
            for a, c in zip(train_x, train_y):
                sess.run(step, {x: a, y: c})
        return sess.run([cost, w, b], {x: train_x, y: train_y})
    return cost, [train]


@case
def softmax_regression_with_fed_learning_rate(tf):
    x, y, lr = tf.placeholder(tf.float32), tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    w = tf.Variable(_data(31, 3, 4) * 0.1)
    b = tf.Variable(np.zeros(4, np.float32))
    logits = tf.matmul(x, w) + b
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
    step = tf.train.GradientDescentOptimizer(lr).minimize(loss)
    xs, ys = _data(32, 8, 3), _onehot(33, 8, 4)

    def train(sess):
        for i in range(4):
            sess.run(step, {x: xs, y: ys, lr: 0.5 / (i + 1)})
        return sess.run([loss, w, b], {x: xs, y: ys})
    return loss, [train]


# -- running a case ---------------------------------------------------------------------------

def shape_text(fetch: Any) -> Any:
    """The static shape of `fetch` as TensorFlow prints it (``(None, 3)``, ``<unknown>``),
    a list for a list of tensors."""
    if isinstance(fetch, (list, tuple)):
        return [shape_text(f) for f in fetch]
    return str(fetch.shape)


def _encode(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    arr = np.asarray(value)
    return {"dtype": arr.dtype.name, "shape": list(arr.shape),
            "data": arr.astype(np.float64).reshape(-1).tolist()}


def _kinds(e: Exception) -> list[str]:
    """The names of `e`'s classes: a test expects TensorFlow's (``ValueError`` for a
    refused feed, ``InvalidArgumentError`` for an op's error) among them."""
    return [c.__name__ for c in type(e).__mro__]


def run_case(tf: Any, name: str, make_session: Callable | None = None) -> dict:
    """Build case `name` in a fresh default graph and run it in a session from
    `make_session` (default ``tf.Session()``): ``{"shape": ..., "runs": [...]}``, each run
    ``{"value": ...}`` or ``{"error": <class name>, "kinds": `_kinds`, "message": ...}``."""
    tf.reset_default_graph()
    fetch, runs = CASES[name](tf)
    record: dict[str, Any] = {"shape": shape_text(fetch), "runs": []}
    with (make_session or tf.Session)() as sess:
        sess.run(tf.global_variables_initializer())
        for run in runs:
            try:
                value = run(sess) if callable(run) else sess.run(fetch, run)
            except Exception as e:  # noqa: BLE001  (a feed refused, an op's error)
                record["runs"].append({"error": type(e).__name__, "kinds": _kinds(e),
                                       "message": str(e)[:300]})
            else:
                record["runs"].append({"value": _encode(value)})
    return record
