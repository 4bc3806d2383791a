"""Review: a call that leaves out an argument whose default is a dict or list binds that
default on every call, as the slow path (and TensorFlow's ``tf.function``) does.

A default dict or list is flattened into the static values of the trace key when the
call is bound. `tw.compile`'s fast path for calls with only array arguments (and the
native dispatcher behind it) skipped binding: after ``CFG["scale"] = 3.0`` the call
``f(x)`` kept running the trace made with 2.0 while ``f(x, CFG)``, the same arguments,
traced again and gave 3.0.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw

pytestmark = pytest.mark.filterwarnings("ignore::tensorweave.errors.RetracingWarning")


@pytest.mark.parametrize("target", ["cpu", "reference"])
def test_a_mutated_default_dict_is_read_on_every_call(target: str) -> None:
    cfg = {"scale": 2.0}

    @tw.compile(target=target)
    def f(x, c=cfg):
        return x * c["scale"]

    x = np.ones(2, np.float32)
    for _ in range(3):  # (past the calls that install the fast path and the dispatcher)
        np.testing.assert_array_equal(f(x), [2.0, 2.0])
    cfg["scale"] = 3.0
    np.testing.assert_array_equal(f(x, cfg), [3.0, 3.0])
    np.testing.assert_array_equal(f(x), [3.0, 3.0])  # (was 2.0: the old trace)


@pytest.mark.parametrize("target", ["cpu", "reference"])
def test_a_mutated_default_list_in_a_tuple_is_read_on_every_call(target: str) -> None:
    offsets = [1.0]

    @tw.compile(target=target)
    def f(x, y, extra=(offsets, 0.5)):
        return x + y * extra[0][0] + extra[1]

    x = np.ones(2, np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(f(x, x), [2.5, 2.5])
    offsets[0] = 10.0
    np.testing.assert_array_equal(f(x, x), [11.5, 11.5])


def test_a_keyword_only_default_after_varargs_is_read_on_every_call() -> None:
    cfg = {"scale": 2.0}

    @tw.compile(target="cpu")
    def f(*xs, c=cfg):
        return xs[0] * c["scale"]

    x = np.ones(2, np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(f(x, x), [2.0, 2.0])
    cfg["scale"] = 5.0
    np.testing.assert_array_equal(f(x, x), [5.0, 5.0])


def test_immutable_defaults_keep_the_fast_path_and_native_dispatch() -> None:
    @tw.compile(target="cpu")  # (native dispatch: the fast path's own answer)
    def g(x, bias=1.0, names=("a", "b")):
        return x + bias

    x = np.ones(2, np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(g(x), [2.0, 2.0])
    assert g._dispatcher is not None and sum(g._dispatcher.hit_counts().values()) >= 1
