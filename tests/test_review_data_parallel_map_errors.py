"""``Dataset.map(..., num_parallel_calls=n)`` hands out every element mapped before an
error of its input, then the error, as the sequential map and TensorFlow do.

The parallel map read ahead to fill its window and let the input's error escape at once:
with a generator yielding 1, 2 and then raising, ``map(lambda x: x + 1,
num_parallel_calls=3)`` raised on the first ``next`` and the 2 and 3 already mapped were
lost (TensorFlow 2.21 and ``num_parallel_calls=None`` give 2, 3, then the error).
"""

from __future__ import annotations

import pytest

import tensorweave as tw


def _failing_after(n: int):
    def gen():
        yield from range(1, n + 1)
        raise ValueError("the input failed")
    return tw.data.Dataset.from_generator(gen, output_signature=tw.TensorSpec([], tw.int32))


@pytest.mark.parametrize("calls", [None, 1, 2, 3, 8, tw.data.AUTOTUNE])
@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_elements_before_an_input_error_come_out_first(calls, n):
    it = iter(_failing_after(n).map(lambda x: x + 1, num_parallel_calls=calls))
    got = []
    with pytest.raises(ValueError, match="the input failed"):
        for x in it:
            got.append(int(x))
    assert got == list(range(2, n + 2))
