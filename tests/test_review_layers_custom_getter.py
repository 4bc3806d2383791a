"""``custom_getter`` of ``tf.variable_scope`` and ``tf.get_variable``, which tensorweave
refused. Behaviour of TensorFlow 2.21's ``tf.compat.v1`` (graph mode,
``TF_USE_LEGACY_KERAS=1``; this file passes under it too): the getter is called with
keywords only, the full name and the scope's resolved defaults (dtype float32, reuse,
initializer...); nested scopes chain their getters (the inner one's `getter` calls the
outer one); `get_variable(custom_getter=...)` replaces the scope's; layers' variables go
through it; the classic float16 model with float32 storage works."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def test_getter_arguments():
    seen = []

    def getter(getter, name, *args, **kwargs):
        seen.append((name, args, sorted(kwargs), kwargs["dtype"], kwargs["reuse"],
                     kwargs["shape"]))
        return getter(name, *args, **kwargs)

    with tf.variable_scope("c", custom_getter=getter):
        v = tf.get_variable("w", [2])
    assert v.name == "c/w:0"
    assert seen == [("c/w", (), ["aggregation", "caching_device", "collections", "constraint",
                                 "dtype", "initializer", "partitioner", "regularizer", "reuse",
                                 "shape", "synchronization", "trainable", "use_resource",
                                 "validate_shape"], tf.float32, False, [2])]


def test_nested_getters_chain_and_the_argument_replaces_the_scopes():
    order = []

    def tagging(tag):
        def getter(getter, name, *args, **kwargs):
            order.append(tag)
            return getter(name, *args, **kwargs)
        return getter

    with tf.variable_scope("outer", custom_getter=tagging("outer")):
        with tf.variable_scope("inner", custom_getter=tagging("inner")):
            tf.get_variable("a", [1])
            assert order == ["inner", "outer"]
            order.clear()
            tf.get_variable("b", [1], custom_getter=tagging("arg"))
            assert order == ["arg"]
            order.clear()
        with tf.variable_scope("plain"):
            tf.get_variable("c", [1])  # inherited
            assert order == ["outer"]


def test_a_getter_can_rename_and_transform():
    def scaled(getter, name, *args, **kwargs):
        v = getter(name + "_raw", *args, **kwargs)
        return v * 2.0

    with tf.variable_scope("s", custom_getter=scaled, initializer=tf.ones_initializer()):
        t = tf.get_variable("w", [3])
    assert [v.name for v in tf.global_variables()] == ["s/w_raw:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(t), [2.0, 2.0, 2.0])


def test_float16_model_with_float32_storage():
    def float32_storage(getter, name, shape=None, dtype=None, trainable=True, *args, **kwargs):
        storage = tf.float32 if trainable else dtype
        v = getter(name, shape, dtype=storage, trainable=trainable, *args, **kwargs)
        return tf.cast(v, dtype) if trainable and dtype != tf.float32 else v

    x = tf.constant(np.ones([2, 3], np.float16))
    with tf.variable_scope("fp16", custom_getter=float32_storage):
        y = tf.layers.dense(x, 2, kernel_initializer=tf.ones_initializer())
    assert [(v.name, v.dtype) for v in tf.global_variables()] == [
        ("fp16/dense/kernel:0", tf.float32), ("fp16/dense/bias:0", tf.float32)]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(y)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, np.full([2, 2], 3.0))


def test_reuse_through_a_getter():
    def ident(getter, *args, **kwargs):
        return getter(*args, **kwargs)

    with tf.variable_scope("r", custom_getter=ident):
        a = tf.get_variable("w", [2])
    with tf.variable_scope("r", reuse=True, custom_getter=ident):
        b = tf.get_variable("w", [2])
    assert a is b
