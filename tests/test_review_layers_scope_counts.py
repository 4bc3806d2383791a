"""Review of compat.v1 ``variable_scope`` default names against TensorFlow 2.21's
``tf.compat.v1`` (graph mode, ``TF_USE_LEGACY_KERAS=1`` for ``tf.layers``).

TensorFlow counts every variable scope opened (by name, by default name or by a
``VariableScope``), makes a default name unique against those counts, and forgets the
counts of a scope's subscopes when the scope is left. So a model built twice in
``variable_scope("model", reuse=...)`` gets the same layer names the second time and
shares its variables. tensorweave counted only default names, for the whole graph:

- ``with variable_scope("m", reuse=AUTO_REUSE): tf.layers.dense(x, 2)`` twice made
  ``m/dense`` and then a second, separate ``m/dense_1`` (TensorFlow: one ``m/dense``,
  shared), a silently unshared model;
- after ``with variable_scope("dense"): get_variable("kernel", ...)`` a ``tf.layers.dense``
  in an AUTO_REUSE scope took the user's ``dense/kernel`` as its kernel (TensorFlow names
  the layer ``dense_1`` and makes its own);
- the TensorFlow 1 tower pattern (``variable_scope("model", reuse=True)`` around the same
  layers) failed with "model/dense_2/kernel does not exist".
The expected names below are what TensorFlow 2.21 gives for the same programs."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def _names() -> list[str]:
    return [v.name for v in tf.global_variables()]


def test_auto_reuse_scope_entered_twice_shares_the_layers():
    x = tf.ones([2, 3])
    outs = []
    for _ in range(2):
        with tf.variable_scope("m", reuse=tf.AUTO_REUSE):
            outs.append(tf.layers.dense(x, 2))
    assert _names() == ["m/dense/kernel:0", "m/dense/bias:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b = sess.run(outs)
    np.testing.assert_array_equal(a, b)


def test_tower_reuse_finds_the_same_layer_names():
    x = tf.ones([2, 3])
    with tf.variable_scope("model"):
        tf.layers.dense(tf.layers.dense(x, 2), 2)
    with tf.variable_scope("model", reuse=True):
        tf.layers.dense(tf.layers.dense(x, 2), 2)
    assert _names() == ["model/dense/kernel:0", "model/dense/bias:0",
                        "model/dense_1/kernel:0", "model/dense_1/bias:0"]


def test_a_named_scope_counts_for_default_names():
    x = tf.ones([2, 3])
    with tf.variable_scope("au", reuse=tf.AUTO_REUSE):
        with tf.variable_scope("dense"):
            mine = tf.get_variable("kernel", [3, 2])
        tf.layers.dense(x, 2)
    # TensorFlow: the layer is au/dense_1, with its own kernel
    assert _names() == ["au/dense/kernel:0", "au/dense_1/kernel:0", "au/dense_1/bias:0"]
    assert mine.name == "au/dense/kernel:0"


def test_default_names_restart_when_the_parent_is_entered_again():
    got = []
    with tf.variable_scope("dflt"):
        for _ in range(2):
            with tf.variable_scope(None, default_name="blk") as s:
                got.append(s.name)
        with tf.variable_scope("blk_2") as s:
            got.append(s.name)
        with tf.variable_scope(None, default_name="blk") as s:
            got.append(s.name)
    with tf.variable_scope("dflt"):
        with tf.variable_scope(None, default_name="blk") as s:
            got.append(s.name)
    assert got == ["dflt/blk", "dflt/blk_1", "dflt/blk_2", "dflt/blk_3", "dflt/blk"]


def test_towers_with_default_names_reuse():
    for i in range(2):
        with tf.variable_scope("tower", reuse=(i > 0)):
            with tf.variable_scope(None, default_name="blk"):
                tf.get_variable("w", [1])
    assert _names() == ["tower/blk/w:0"]


def test_reentering_a_scope_object_keeps_the_counts_of_its_outside():
    with tf.variable_scope("outer") as outer:
        pass
    with tf.variable_scope(None, default_name="blk") as s0:
        pass
    with tf.variable_scope(outer):
        with tf.variable_scope(None, default_name="blk") as s1:
            pass
    with tf.variable_scope(outer):
        with tf.variable_scope(None, default_name="blk") as s2:
            pass
    # (TensorFlow restores the counts saved when the scope object was entered)
    assert [s0.name, s1.name, s2.name] == ["blk", "outer/blk", "outer/blk"]


def test_default_name_with_reuse_true_is_an_error():
    with pytest.raises(ValueError, match="reuse=True cannot be used without a name"):
        with tf.variable_scope(None, default_name="blk", reuse=True):
            pass


def test_layer_with_reuse_and_no_name_reuses_the_base_name():
    x = tf.ones([2, 3])
    tf.layers.dense(x, 2)
    tf.layers.dense(x, 2, reuse=True)
    assert _names() == ["dense/kernel:0", "dense/bias:0"]
