"""``==`` and ``!=`` on tensors are elementwise (TensorFlow 2, JAX, NumPy), never a silent
identity test; hashing stays by identity and ``ref()`` gives keys for sets and dicts."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.compat import v1
from tests.helpers import TARGETS


@pytest.mark.parametrize("target", TARGETS)
def test_accuracy_with_equality_is_elementwise(target):
    # issue 14: this gave 0.0 (identity) instead of 0.75
    acc = tw.compile(lambda p, y: tw.reduce_mean(tw.cast(p == y, tw.float32)), target=target)
    assert acc(np.array([1, 2, 3, 3]), np.array([1, 0, 3, 3])) == np.float32(0.75)
    miss = tw.compile(lambda p, y: tw.reduce_sum(tw.cast(p != y, tw.int32)), target=target)
    assert miss(np.array([1, 2, 3, 3]), np.array([1, 0, 3, 3])) == 1


def test_eager_tensors_and_variables_compare_elementwise():
    a, b = tw.constant([1.0, 2.0, 3.0]), tw.constant([1.0, 5.0, 3.0])
    assert (a == b).numpy().tolist() == [True, False, True]
    assert (a != b).numpy().tolist() == [False, True, False]
    assert (a == [1.0, 2.0, 0.0]).numpy().tolist() == [True, True, False]
    assert (np.float32(2.0) == a).numpy().tolist() == [False, True, False]
    v = tw.Variable([1.0, 5.0, 3.0])
    assert (v == a).numpy().tolist() == [True, False, True]
    assert (a != v).numpy().tolist() == [False, True, False]


def test_comparing_with_none_or_unrelated_objects_is_false():
    a = tw.constant([1.0, 2.0])
    assert (a == None) is False and (a != None) is True  # noqa: E711
    assert (a == "a") is False and (a != object()) is True


def test_v1_graph_tensors_compare_elementwise():
    g = v1.Graph()
    with g.as_default():
        p = v1.placeholder(v1.int32, [None])
        label = v1.placeholder(v1.int32, [None])
        acc = v1.reduce_mean(v1.cast(p == label, v1.float32))
        wrong = v1.reduce_sum(v1.cast(p != label, v1.int32))
    with v1.Session(graph=g) as sess:
        feed = {p: [1, 2, 3, 3], label: [1, 0, 3, 3]}  # tensors stay usable as keys
        assert sess.run([acc, wrong], feed) == [np.float32(0.75), 1]


def test_hash_is_identity_and_ref_gives_set_and_dict_keys():
    a, b = tw.constant(1.0), tw.constant(1.0)
    assert hash(a) != hash(b) and {a: 1, b: 2}[b] == 2
    refs = {a.ref(), b.ref(), a.ref()}
    assert len(refs) == 2 and a.ref() in refs and tw.constant(1.0).ref() not in refs
    assert a.ref().deref() is a and a.experimental_ref() == a.ref() and a.ref() != b.ref()
    v = tw.Variable(0.0)
    assert v.ref().deref() is v and {v.ref(): "v"}[v.ref()] == "v"


def test_membership_in_a_list_of_symbolic_tensors_is_refused_not_guessed():
    @tw.compile
    def f(x, y):
        if x in [y]:  # elementwise, so its truth value is unknown while tracing
            return x
        return y

    with pytest.raises(tw.errors.TracingError, match="tw.cond"):
        f(np.float32(1), np.float32(1))


def test_variables_passed_as_static_arguments_are_told_apart_by_identity():
    f = tw.compile(lambda v: v.read_value() + 0.0)
    v1_, v2_ = tw.Variable(1.0), tw.Variable(1.0)
    assert f(v1_) == 1.0 and f(v2_) == 1.0
    v2_.assign(5.0)
    assert f(v1_) == 1.0 and f(v2_) == 5.0
    assert len(f.concrete_functions) == 2
