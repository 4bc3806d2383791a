"""`tw.cond` results that TensorFlow accepts and tensorweave refused (checked with
TensorFlow 2.21, graph mode and eager):

- None leaves: both branches may return None at the same places (``(x, None)``), and
  the result has None there; None in one branch only stays an error.
- dicts: TensorFlow's nest sorts dict keys, so ``{'a': .., 'b': ..}`` and ``{'b': ..,
  'a': ..}`` are the same structure; the result's keys are in true_fn's order.
- TensorFlow 1's ``tf.cond(pred, true_fn, false_fn, strict=False, name, fn1, fn2)``:
  `strict` is accepted, and without it a branch's one-element list or tuple is
  unpacked (TensorFlow 1's documented non-strict mode: TF 1.x, control flow v1 and
  eager; TF 2.x graphs with control flow v2 ignore `strict`); fn1/fn2 are the old
  names of true_fn/false_fn."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.errors import TracingError

F64 = np.float64
TARGETS = ["reference", "cpu"]


@pytest.mark.parametrize("target", TARGETS)
def test_none_leaves_at_the_same_places(target):
    def f(p, x):
        return tw.cond(p, lambda: (x * 2.0, None, {"n": None, "y": x + 1.0}),
                       lambda: (x * 3.0, None, {"y": x - 1.0, "n": None}))

    g = tw.compile(f, target=target)
    for p, a, b in ((True, 4.0, 3.0), (False, 6.0, 1.0)):
        out = g(np.bool_(p), F64(2.0))
        assert out[1] is None and out[2]["n"] is None and list(out[2]) == ["n", "y"]
        assert float(out[0]) == a and float(out[2]["y"]) == b


def test_none_from_both_branches_is_none():
    g = tw.compile(lambda p: tw.cond(p, lambda: None, lambda: None))
    assert g(np.bool_(True)) is None


def test_none_in_one_branch_only_is_an_error():
    def f(p, x):
        return tw.cond(p, lambda: (x, None), lambda: (x, x))

    with pytest.raises(TracingError, match="None") as err:
        tw.compile(f)(np.bool_(True), F64(1.0))
    assert "test_review_cf2_cond_structures.py" in str(err.value)


@pytest.mark.parametrize("target", TARGETS)
def test_dict_keys_in_another_order_are_the_same_structure(target):
    def f(p, x):
        return tw.cond(p, lambda: {"b": x * 2.0, "a": x + 1.0, "c": {"z": x, "y": -x}},
                       lambda: {"a": x * 3.0, "c": {"y": x, "z": -x}, "b": x - 1.0})

    g = tw.compile(f, target=target)
    t = g(np.bool_(True), F64(2.0))
    assert list(t) == ["b", "a", "c"] and list(t["c"]) == ["z", "y"]  # true_fn's order
    assert (float(t["a"]), float(t["b"]), float(t["c"]["y"]), float(t["c"]["z"])) == \
        (3.0, 4.0, -2.0, 2.0)
    e = g(np.bool_(False), F64(2.0))
    assert list(e) == ["b", "a", "c"]
    assert (float(e["a"]), float(e["b"]), float(e["c"]["y"]), float(e["c"]["z"])) == \
        (6.0, 1.0, 2.0, -2.0)


def test_dict_branches_gradient():
    def f(x):
        with tw.GradientTape() as tape:
            tape.watch(x)
            d = tw.cond(x > 0.0, lambda: {"u": x * x, "v": x}, lambda: {"v": 3.0 * x, "u": x})
            y = d["u"] + 10.0 * d["v"]
        return tape.gradient(y, x)

    g = tw.compile(f)
    assert float(g(F64(2.0))) == 14.0  # 2x + 10
    assert float(g(F64(-2.0))) == 31.0  # 1 + 30


def test_dicts_with_other_keys_are_still_an_error():
    def f(p, x):
        return tw.cond(p, lambda: {"a": x}, lambda: {"b": x})

    with pytest.raises(TracingError, match="same structure"):
        tw.compile(f)(np.bool_(True), F64(1.0))


def _session_run(build):
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.bool, [])
        x = tf.constant(np.array([1.0, 2.0]))
        out = build(p, x)
        with tf.Session() as sess:
            return out, [sess.run(out, {p: v}) for v in (True, False)]


def test_v1_cond_unpacks_a_one_element_list_unless_strict():
    out, (t, f) = _session_run(lambda p, x: tf.cond(p, lambda: [x * 2.0], lambda: [x]))
    assert isinstance(out, tw.Tensor)
    np.testing.assert_array_equal(t, [2.0, 4.0])
    np.testing.assert_array_equal(f, [1.0, 2.0])
    out, (t, _) = _session_run(lambda p, x: tf.cond(p, lambda: (x * 2.0,), lambda: x,
                                                    strict=False))
    assert isinstance(out, tw.Tensor)
    np.testing.assert_array_equal(t, [2.0, 4.0])
    out, (t, f) = _session_run(lambda p, x: tf.cond(p, lambda: [x * 2.0], lambda: [x],
                                                    strict=True))
    assert isinstance(out, list) and len(out) == 1
    np.testing.assert_array_equal(f[0], [1.0, 2.0])
    # two elements: never unpacked
    out, (t, _) = _session_run(lambda p, x: tf.cond(p, lambda: [x, x], lambda: [x, -x]))
    assert isinstance(out, list) and len(out) == 2


def test_v1_cond_positional_strict_name_and_fn1_fn2():
    out, (t, f) = _session_run(lambda p, x: tf.cond(p, lambda: [x], lambda: [x + 1.0],
                                                    True, "choose"))
    assert isinstance(out, list)
    np.testing.assert_array_equal(f[0], [2.0, 3.0])
    out, (t, f) = _session_run(lambda p, x: tf.cond(p, fn1=lambda: x, fn2=lambda: x * 0.0))
    np.testing.assert_array_equal(t, [1.0, 2.0])
    np.testing.assert_array_equal(f, [0.0, 0.0])
    with pytest.raises(TypeError, match="true_fn"):
        _session_run(lambda p, x: tf.cond(p, lambda: x, lambda: x, fn1=lambda: x))
