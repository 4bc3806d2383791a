"""TensorFlow 1's ``Session.partial_run_setup`` / ``partial_run``.

TensorFlow 2.21's compat.v1 ran the same program (TensorFlow's own partial_run example,
with a random term) and raised the same errors, quoted in the comments."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.errors import InvalidArgumentError, UnimplementedError

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def _graph():
    a, b, c = (tf.placeholder(tf.float32, shape=[]) for _ in range(3))
    r = tf.random_uniform([])
    r1 = tf.add(a, b) + r
    r2 = tf.multiply(r1, c)
    return a, b, c, r, r1, r2


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_pieces_share_one_step(target):
    a, b, c, r, r1, r2 = _graph()
    with tf.Session(compile_target=target) as sess:
        h = sess.partial_run_setup([r1, r2], [a, b, c])
        res = sess.partial_run(h, r1, feed_dict={a: 1, b: 2})
        res2 = sess.partial_run(h, r2, feed_dict={c: res})
    # TF: res2 == res * res (r1 is not recomputed: the random term is drawn once)
    assert 3.0 <= res < 4.0
    np.testing.assert_allclose(res2, res * res, rtol=1e-6)


def test_partial_run_errors_match_tensorflow():
    a, b, c, r, r1, r2 = _graph()
    r3 = r * 2
    with tf.Session() as sess:
        h = sess.partial_run_setup([r1, r2, r3], [a, b, c])
        sess.partial_run(h, r1, feed_dict={a: 1, b: 2})
        # TF: The fetch add_1:0 has already been fetched.
        with pytest.raises(InvalidArgumentError, match=r"The fetch add_1:0 has already been "
                                                       r"fetched\."):
            sess.partial_run(h, r1)
        # TF: The feed Placeholder:0 has already been fed.
        with pytest.raises(InvalidArgumentError, match=r"The feed Placeholder:0 has already "
                                                       r"been fed\."):
            sess.partial_run(h, r2, feed_dict={a: 3, c: 1})
        # TF: The fetch random_uniform/RandomUniform:0 was not specified in partial_run_setup.
        with pytest.raises(InvalidArgumentError, match="was not specified in partial_run_setup"):
            sess.partial_run(h, r, feed_dict={c: 1})
        # TF: The feed Placeholder_3:0 was not specified in partial_run_setup.
        with pytest.raises(InvalidArgumentError, match=r"The feed Placeholder_3:0 was not "
                                                       r"specified in partial_run_setup\."):
            sess.partial_run(h, r2, feed_dict={tf.placeholder(tf.float32): 1.0})
        # tensorweave's own: r3 needs the random op again, which TF would not rerun
        with pytest.raises(UnimplementedError, match="RandomUniform 'random_uniform' ran in an "
                                                     "earlier partial_run"):
            sess.partial_run(h, r3)
        # TF: Must run 'setup' before performing partial runs!
        with pytest.raises(InvalidArgumentError, match="Must run 'setup' before performing"):
            sess.partial_run("nope", r1)
        # TF: Fetch Placeholder_2:0 can't be computed from the feeds that have been fed so far.
        h = sess.partial_run_setup([r2], [a, b, c])
        with pytest.raises(InvalidArgumentError, match="you must feed a value for placeholder"):
            sess.partial_run(h, r2, feed_dict={a: 1, b: 2})


def test_pure_intermediates_may_be_recomputed():
    a = tf.placeholder(tf.float32, [2])
    b = tf.placeholder(tf.float32, [2])
    h1 = a * 3
    out1, out2 = tf.reduce_sum(h1), tf.reduce_sum(h1 * b)
    with tf.Session() as sess:
        h = sess.partial_run_setup([out1, out2], [a, b])
        assert sess.partial_run(h, out1, {a: [1.0, 2.0]}) == 9.0
        assert sess.partial_run(h, [out2], {b: [1.0, 10.0]}) == [63.0]
