"""Review of the op names inside ``tf.variable_scope`` against TensorFlow 2.21's
``tf.compat.v1`` (graph mode).

TensorFlow opens a name scope named by the whole string given (``variable_scope("a/b")``
names its ops ``a/b/...``), and a scope's ``original_name_scope`` is the name scope it
opened, under the current one (``outer_ns/vs/`` inside ``tf.name_scope("outer_ns")``).
tensorweave opened only the last component (ops ``b/op``), so summaries were tagged
``enc/loss`` instead of ``model/enc/loss`` and ``get_losses(scope="model")`` missed the
losses built there; ``original_name_scope`` ignored the enclosing name scope.
A ``VariableScope`` object entered again keeps its own reuse (TensorFlow does not inherit
the parent's there): inside ``variable_scope("r", reuse=True)``, entering a scope captured
with reuse=False gave reuse True."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def test_a_scope_with_a_slash_names_its_ops_with_the_whole_string():
    x = tf.ones([2])
    with tf.variable_scope("a/b"):
        v = tf.get_variable("v", [1])
        op = tf.add(x, 1.0, name="op")
    assert v.name == "a/b/v:0"
    assert op.name == "a/b/op:0"  # TensorFlow 2.21 (we gave b/op:0)


def test_losses_in_a_nested_scope_string_are_found_by_the_outer_scope():
    with tf.variable_scope("model/enc"):
        loss = tf.losses.mean_squared_error(np.ones([2, 2], np.float32),
                                            np.zeros([2, 2], np.float32))
    assert loss.name.startswith("model/enc/")
    assert tf.losses.get_losses(scope="model") == [loss]


def test_original_name_scope_is_the_name_scope_opened():
    with tf.name_scope("outer_ns"):
        with tf.variable_scope("vs") as vs:
            pass
    with tf.variable_scope("top") as top:
        with tf.variable_scope("in") as inner:
            pass
    with tf.variable_scope(None, default_name="blk") as blk:
        pass
    # TensorFlow 2.21
    assert vs.original_name_scope == "outer_ns/vs/"
    assert top.original_name_scope == "top/"
    assert inner.original_name_scope == "top/in/"
    assert blk.original_name_scope == "blk/"
    with tf.variable_scope(vs) as again:
        # a scope object entered again keeps the name scope it was made with
        assert again.original_name_scope == "outer_ns/vs/"


def test_a_scope_object_keeps_its_own_reuse():
    with tf.variable_scope("plain") as plain:
        pass
    with tf.variable_scope("r", reuse=True):
        with tf.variable_scope(plain) as entered:
            assert entered.reuse is False  # TensorFlow 2.21
            created = tf.get_variable("new", [1])
    assert created.name == "plain/new:0"
    with tf.variable_scope("r2", reuse=True):
        with tf.variable_scope("named") as named:
            assert named.reuse is True  # a name inherits the parent's reuse
