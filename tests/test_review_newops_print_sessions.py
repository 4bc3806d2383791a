"""tf.Print's `first_n` counts per session, as TensorFlow's: the count lives in the op's
kernel, which each Session makes anew (and shares between the run calls of one session,
whatever their fetches: the kernel of a stateful op is kept per session)."""

from __future__ import annotations

import pytest

import tensorweave.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_first_n_counts_again_in_a_new_session(target, capsys):
    x = tf.placeholder(tf.float32, [])
    y = tf.Print(x, [x], message="P ", first_n=2)
    z = y + 1
    for base in (0, 10):
        with tf.Session(compile_target=target) as sess:
            for i in range(3):
                sess.run(y, {x: float(base + i)})
                sess.run([y, z], {x: float(base + i + 100)})  # another step, same count
    # TF 2.21 (tf.compat.v1, graph mode) printed, the second session's lines included:
    assert capsys.readouterr().err.splitlines() == ["P [0]", "P [100]", "P [10]", "P [110]"]


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_first_n_in_a_loop_counts_iterations_once_per_session(target, capsys):
    def body(i):
        return tf.Print(i + 1, [i], message="it ", first_n=2)

    out = tf.while_loop(lambda i: i < 4, body, [tf.constant(0)])
    for _ in range(2):
        with tf.Session(compile_target=target) as sess:
            assert sess.run(out) == 4
            assert sess.run(out) == 4
    assert capsys.readouterr().err.splitlines() == ["it [0]", "it [1]"] * 2
