"""`tensorweave aot` of a function holding tf.py_func or tf.Print: the refusal says that
these run Python code, which a C library cannot call, also when they sit inside a loop
(before, the error named only the While that could not be lowered)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.errors import UnimplementedError
from tensorweave.targets.cpu.aot import build_library

SPEC = [tw.TensorSpec([2], tw.float32)]


def _py_func_and_print(x):
    y = tf.py_func(lambda v: v * np.float32(2), [x], tf.float32)
    y.set_shape([2])
    return tf.Print(y + 1, [y])


def _print_in_a_loop(x):
    return tw.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, tf.Print(a * 2, [a])),
                         [0, x])[1]


@pytest.mark.parametrize("fn, named", [
    (_py_func_and_print, r"Print \(tf.Print\), PyFunc \(tf.py_func\) run Python code"),
    (_print_in_a_loop, r"no native lowering for While: Print \(tf.Print\) runs Python code"),
])
def test_python_ops_are_named_as_the_reason(tmp_path, fn, named):
    f = tw.compile(fn, input_signature=SPEC)
    with pytest.raises(UnimplementedError, match=named) as info:
        build_library(f.get_concrete_function(), str(tmp_path), name="lib")
    assert "which a C library cannot call" in str(info.value)
