"""The cpu target's DynamicUpdateRow (a TensorArray write, a scan row) names the bad
index as the reference target does: at the top level the reference kernel explains the
native failure ("index 3 is not in [0, 2)"); inside a loop, where the index is not at
hand, the message still gives the row count. The native message used to be "index is not
in [0, n)", so the same program's error depended on the target."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_top_level_write_names_the_index(target):
    @tw.compile(target=target)
    def beyond(x):
        return tw.TensorArray(tw.float64, size=2).write(tw.cast(x[0], tw.int32), x).stack()

    with pytest.raises(tw.errors.InvalidArgumentError, match=r"index 3 is not in \[0, 2\)"):
        beyond(np.array([3.0]))
    np.testing.assert_array_equal(beyond(np.array([1.0])), [[0.0], [1.0]])


def test_write_in_a_loop_names_the_row_count_on_the_cpu_target():
    @tw.compile(target="cpu")
    def inloop(x):
        ta = tw.TensorArray(tw.float64, size=2, element_shape=[1])
        _, ta = tw.while_loop(lambda i, ta: i < 3, lambda i, ta: (i + 1, ta.write(i, x)),
                              (0, ta))
        return ta.stack()

    with pytest.raises(tw.errors.InvalidArgumentError, match=r"is not in \[0, 2\)"):
        inloop(np.array([3.0]))
