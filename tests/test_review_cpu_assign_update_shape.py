"""Review: assign_add / assign_sub of a value whose shape is not the variable's.

With the value's shape known when tracing, that is a ShapeError (as in TensorFlow). With
it unknown (an input_signature with None), both targets broadcast the value into the
variable instead: ``v.assign_add(x)`` with v of shape [3] and x of shape [1] added x[0]
to every element where TensorFlow raises "shapes must be equal". A wrong-shaped update
(a batch of 1 where a full batch was meant, say) went unnoticed. It is now an
InvalidArgumentError naming the op and both shapes, as assign of a wrong shape was."""

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.errors import InvalidArgumentError


@pytest.mark.parametrize("target", ["reference", "cpu"])
@pytest.mark.parametrize("method", ["assign_add", "assign_sub"])
@pytest.mark.parametrize("var_shape,value_shape", [((3,), (1,)), ((2, 5), (1, 5)),
                                                    ((2, 5), (2, 1))])
def test_an_update_of_another_shape_is_refused(target, method, var_shape, value_shape):
    v = tw.Variable(np.zeros(var_shape, np.float32))
    spec = tw.TensorSpec([None] * len(var_shape), tw.float32)
    f = tw.compile(lambda x: getattr(v, method)(x), target=target, input_signature=[spec])
    with pytest.raises(InvalidArgumentError, match="shape") as err:
        f(np.ones(value_shape, np.float32))
    assert str(list(value_shape)).replace(" ", "") in str(err.value).replace(" ", "")
    np.testing.assert_array_equal(v.numpy(), np.zeros(var_shape, np.float32))
    f(np.ones(var_shape, np.float32))  # the right shape still updates
    np.testing.assert_array_equal(v.numpy(), np.full(var_shape, 1 if method == "assign_add"
                                                     else -1, np.float32))
