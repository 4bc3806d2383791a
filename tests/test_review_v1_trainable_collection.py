"""Adversarial review: a TensorFlow 1 optimizer without `var_list` trains the graph's
``TRAINABLE_VARIABLES`` collection, which users edit (the usual way to freeze a
pretrained layer, or to train a variable created with ``trainable=False``). Before, the
optimizer took every variable created trainable, whatever the collection held: the
"frozen" variable moved (b: 1.0 -> 0.9 here) and the added one did not."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf


@pytest.mark.parametrize("make_opt", [lambda: tf.train.GradientDescentOptimizer(0.1),
                                      lambda: tf.train.AdamOptimizer(0.1)])
def test_minimize_trains_what_the_trainable_collection_holds(make_opt):
    g = tf.Graph()
    with g.as_default():
        a = tf.Variable(np.float32(1.0), name="a")
        frozen = tf.Variable(np.float32(1.0), name="frozen")
        extra = tf.Variable(np.float32(1.0), name="extra", trainable=False)
        coll = tf.get_collection_ref(tf.GraphKeys.TRAINABLE_VARIABLES)
        coll[:] = [v for v in coll if v is not frozen]
        tf.add_to_collection(tf.GraphKeys.TRAINABLE_VARIABLES, extra)
        loss = a * frozen * extra
        opt = make_opt()
        grads = opt.compute_gradients(loss)
        train = opt.minimize(loss)
        init = tf.global_variables_initializer()
    assert [v.name for _, v in grads] == ["a:0", "extra:0"]
    with tf.Session(graph=g) as sess:
        sess.run(init)
        sess.run(train)
        got_a, got_frozen, got_extra = sess.run([a, frozen, extra])
    assert got_frozen == 1.0
    assert got_a < 1.0 and got_extra < 1.0


def test_an_empty_trainable_collection_is_an_error():
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(np.float32(1.0), name="w", trainable=False)
        with pytest.raises(ValueError, match="no variables to optimize"):
            tf.train.GradientDescentOptimizer(0.1).minimize(w * 2.0)
