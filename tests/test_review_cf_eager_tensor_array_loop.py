"""An eager `tw.while_loop` over a `tw.TensorArray` whose element shape is learned in the
body (no `element_shape`, as TensorFlow 2 allows eagerly): every iteration rebuilt the
array with the configuration it had before the loop (shape unknown), so each write
started from an empty buffer and the loop returned an array that had forgotten all of
them: ``size()`` was 0 after writing 3 elements (a silent wrong answer) and ``stack()``
said "nothing has been written yet"."""

from __future__ import annotations

import numpy as np

import tensorweave as tw
from tests.helpers import assert_same

F32 = np.float32


def write_rows(ta, n=3):
    def body(i, ta):
        return i + 1, ta.write(i, tw.fill([2], tw.cast(i, tw.float32)))
    return tw.while_loop(lambda i, ta: i < n, body, (tw.constant(0), ta))[1]


EXPECTED = np.array([[0, 0], [1, 1], [2, 2]], F32)


def test_dynamic_array_without_element_shape():
    ta = write_rows(tw.TensorArray(tw.float32, size=0, dynamic_size=True))
    assert_same(ta.size().numpy(), np.int32(3))
    assert_same(ta.stack().numpy(), EXPECTED)
    assert ta.element_shape == (2,)


def test_fixed_size_array_without_element_shape():
    ta = write_rows(tw.TensorArray(tw.float32, size=3, clear_after_read=False))
    assert_same(ta.stack().numpy(), EXPECTED)
    assert_same(ta.read(1).numpy(), EXPECTED[1])


def test_same_as_with_an_element_shape_and_as_traced():
    eager = write_rows(tw.TensorArray(tw.float32, size=3)).stack().numpy()
    shaped = write_rows(tw.TensorArray(tw.float32, size=3, element_shape=[2])).stack().numpy()
    traced = tw.compile(lambda: write_rows(
        tw.TensorArray(tw.float32, size=3, element_shape=[2])).stack())()
    for got in (eager, shaped, traced):
        assert_same(got, EXPECTED)


def test_zero_iterations_keep_the_array():
    ta = write_rows(tw.TensorArray(tw.float32, size=0, dynamic_size=True), n=0)
    assert_same(ta.size().numpy(), np.int32(0))
