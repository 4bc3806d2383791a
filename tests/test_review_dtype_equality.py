"""A DType equals what names it, as TensorFlow's does: ``x.dtype == 'float32'``,
``x.dtype == np.float32`` and ``x.dtype == np.dtype('float32')`` are True.

TensorFlow 2.21's ``DType.__eq__`` converts the other side with ``as_dtype``; tensorweave's
DType compared by identity, so TensorFlow programs that branch on
``if x.dtype == np.float32:`` or ``assert images.dtype == 'uint8'`` silently took the
other branch (0e86b1c made ``x.dtype.name == 'float32'`` right, not these)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.compiler.dtypes import ALL_DTYPES


@pytest.mark.parametrize("d", ALL_DTYPES, ids=lambda d: d.name)
def test_a_dtype_equals_its_names_and_numpy_types(d):
    for other in (d.name, d.ir_name, d.np, d.np.type):
        assert d == other and other == d and not (d != other) and not (other != d), other
    assert hash(d) == hash(d)  # still hashable: dict keys and sets of dtypes keep working
    for e in ALL_DTYPES:
        if e is not d:
            assert d != e and d != e.name and d != e.np and d != e.np.type


def test_things_that_name_no_dtype_are_not_equal():
    for other in (None, "floatx", "", 1, 1.5, object(), str,
                  np.dtype("U3"), [tw.float32]):
        assert not (tw.float32 == other) and tw.float32 != other


def test_tensorflow_style_branches_take_tensorflows_branch():
    x = tf.placeholder(tf.float32, [2])
    e = tw.constant(np.array([1, 2], np.uint8))
    assert x.dtype == np.float32 and x.dtype == "float32" and x.dtype == tf.float32
    assert e.dtype == np.uint8 and e.dtype != np.int8
    assert tw.bfloat16 == ml_dtypes.bfloat16 and tw.bool == np.bool_ and tw.bool == "bool"
    scale = 2.0 if x.dtype == np.float32 else 0.0
    with tf.Session() as sess:
        assert sess.run(x * scale, {x: [1.0, 2.0]}).tolist() == [2.0, 4.0]
    # dicts keyed by dtypes still find them by the dtype object
    table = {tw.float32: "f", tw.int32: "i"}
    assert table[x.dtype] == "f" and tw.float32 in {tw.float32}
