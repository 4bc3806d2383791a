"""tf.scatter_add / scatter_sub on a bool variable are a DTypeError at trace time naming
the op and the user's line, as TensorFlow's ResourceScatterAdd/Sub (numeric types only)
refuse them. scatter_add ran NumPy's bool addition (a logical or, no error) and
scatter_sub failed inside the kernel with NumPy's own TypeError. scatter_update of
bools stays allowed."""

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.errors import DTypeError
from tensorweave.frontend.ops import scatter


@pytest.mark.parametrize("fn", [scatter.scatter_add, scatter.scatter_sub])
def test_adding_into_a_bool_variable_is_a_dtype_error(fn):
    v = tw.Variable(np.array([True, False, False]))

    def step():
        fn(v, [1, 1], [True, True])

    with pytest.raises(DTypeError, match="numeric") as info:
        tw.compile(step, target="reference")()
    assert "test_review_sparse_scatter_bool.py" in str(info.value)
    np.testing.assert_array_equal(v.numpy(), [True, False, False])


def test_updating_a_bool_variable_still_works():
    v = tw.Variable(np.array([True, False, False]))
    scatter.scatter_update(v, [2, 0], [True, False])
    np.testing.assert_array_equal(v.numpy(), [False, False, True])
