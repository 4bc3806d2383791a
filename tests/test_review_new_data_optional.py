"""Review of tw.data against TensorFlow 2.21: ``iterator.get_next_as_optional()`` returns
an Optional (``has_value()``, ``get_value()``, ``element_spec``), as TensorFlow's
``tf.experimental.Optional``.

TensorFlow 2.21, same program: ``it = iter(range(1)); o = it.get_next_as_optional()``
gives ``o.has_value()`` True and ``o.get_value()`` 0; the next call's ``has_value()``
is False and its ``get_value()`` an InvalidArgumentError. tensorweave returned the bare
element (None at the end), so TensorFlow's loop ``while opt.has_value()`` failed with
AttributeError."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.data import Dataset


def test_optional_has_the_next_element_then_none():
    it = iter(Dataset.range(1))
    first = it.get_next_as_optional()
    assert bool(first.has_value())
    assert int(first.get_value()) == 0
    assert first.element_spec == tw.TensorSpec([], tw.int64)
    end = it.get_next_as_optional()
    assert not bool(end.has_value())
    with pytest.raises(tw.errors.InvalidArgumentError, match="no value"):
        end.get_value()


def test_the_tensorflow_loop_over_optionals():
    it = iter(Dataset.from_tensor_slices((np.arange(3), np.arange(3.0) * 2)))
    seen = []
    while True:
        opt = it.get_next_as_optional()
        if not opt.has_value():
            break
        a, b = opt.get_value()
        seen.append((int(a), float(b)))
    assert seen == [(0, 0.0), (1, 2.0), (2, 4.0)]
