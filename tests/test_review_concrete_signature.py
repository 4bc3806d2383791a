"""`get_concrete_function(spec)` on a function with an input signature checks `spec`
against it. It returned the signature's trace for any TensorSpec (an int32[5] spec gave
the float32[2] trace), so code built from the result (an AOT library, a dump) silently
read other buffers than the caller described. TensorFlow refuses such a spec too."""

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.errors import InvalidArgumentError


def _doubler(shape):
    @tw.compile(input_signature=[tw.TensorSpec(shape, tw.float32)])
    def f(x):
        return x * 2.0
    return f


@pytest.mark.parametrize("given", [tw.TensorSpec([5], tw.int32), tw.TensorSpec([5], tw.float32),
                                   tw.TensorSpec([None], tw.float32),
                                   tw.TensorSpec([2, 1], tw.float32)],
                         ids=["dtype", "dim", "less-specific", "rank"])
def test_a_spec_that_does_not_fit_the_signature_is_refused(given):
    with pytest.raises(InvalidArgumentError, match=r"argument 'x' must match .*shape=\[2\]"):
        _doubler([2]).get_concrete_function(given)


def test_specs_that_fit_give_the_signature_trace():
    f = _doubler([None])
    a = f.get_concrete_function(tw.TensorSpec([7], tw.float32))
    b = f.get_concrete_function(tw.TensorSpec([None], tw.float32))
    c = f.get_concrete_function()
    assert a is b is c
    np.testing.assert_array_equal(a(np.ones(3, np.float32)), np.full(3, 2.0, np.float32))
