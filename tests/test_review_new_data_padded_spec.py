"""Review of tw.data against TensorFlow 2.21: ``padded_batch`` without `padded_shapes`
pads to the element's static shape, so its known dims stay known in ``element_spec``.

TensorFlow 2.21, same programs: ``from_tensor_slices(zeros([5, 3])).padded_batch(2)``
has element shape ``(None, 3)`` (tensorweave had ``(None, None)``, so a function mapped
over the batches was traced without the 3); ``padded_shapes=[None]`` gives
``(None, None)``, ``[4]`` gives ``(None, 4)``; with a generator's ``[None, 2]`` elements
the spec is ``(None, None, 2)``."""

from __future__ import annotations

import numpy as np

import tensorweave as tw
from tensorweave.data import Dataset


def test_known_dims_stay_known_without_padded_shapes():
    r = Dataset.from_tensor_slices(np.zeros([5, 3], np.float32))
    assert r.padded_batch(2).element_spec == tw.TensorSpec([None, 3], tw.float32)
    assert r.padded_batch(2, drop_remainder=True).element_spec.shape == (2, 3)
    assert r.padded_batch(2, padded_shapes=[None]).element_spec.shape == (None, None)
    assert r.padded_batch(2, padded_shapes=[4]).element_spec.shape == (None, 4)
    assert [b.shape for b in r.padded_batch(2).as_numpy_iterator()] == [(2, 3), (2, 3), (1, 3)]
    # a function mapped over the batches sees the 3
    seen = []
    r.padded_batch(2).map(lambda b: seen.append(b.shape) or b)
    assert seen[0] == (None, 3)


def test_unknown_dims_are_padded_to_the_largest_in_the_batch():
    def gen():
        for n in (1, 3, 2):
            yield np.full([n, 2], n, np.int64)

    ds = Dataset.from_generator(gen, output_signature=tw.TensorSpec([None, 2], tw.int64))
    batched = ds.padded_batch(2)
    assert batched.element_spec.shape == (None, None, 2)
    out = list(batched.as_numpy_iterator())
    np.testing.assert_array_equal(out[0], [[[1, 1], [0, 0], [0, 0]], [[3, 3]] * 3])
    np.testing.assert_array_equal(out[1], [[[2, 2], [2, 2]]])
