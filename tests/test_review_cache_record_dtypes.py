"""Review: a step record keeps its dtypes, bfloat16 included.

Step records (`targets/cpu/plan_cache.py`) stored every dtype as NumPy's ``dtype.str``.
bfloat16 (ml_dtypes) has no string of its own there: ``'<V2'``, which reads back as a
2-byte *void* dtype. A later trace of the same graph (or a later process) built its step
from the record: a bfloat16 result came back as ``|V2`` bytes (``b'\\x40\\x40'`` for 3.0),
and bfloat16 arguments and variables never matched the record's specs, so every call
fell back to the dataflow executor. Records now name dtypes by tensorweave's names.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.compiler.dtypes import ALL_DTYPES
from tensorweave.targets.cpu import plan_cache


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.ir_name)
def test_every_dtype_round_trips_through_a_record(dtype) -> None:
    dt = np.dtype(dtype.np)
    const = np.zeros(3, dt)
    record = plan_cache.StepRecord(
        "code", [(dt, (3,))], [((2, 3), dt)], [const], ["v"], [(dt, ())], ["read"], 64,
        False, False, False, "", False)
    back = plan_cache.decode(plan_cache.encode(record))
    assert back.arg_specs == [(dt, (3,))]
    assert back.result_specs == [((2, 3), dt)]
    assert back.var_specs == [(dt, ())]
    assert back.consts[0].dtype == dt and back.consts[0].tobytes() == const.tobytes()


def test_a_bfloat16_result_of_a_step_made_from_its_record_is_bfloat16() -> None:
    def f(x):
        return tw.cast(x * 2.0, tw.bfloat16)

    x = np.array([1.5, 2.0, 3.0], np.float32)
    cold = tw.compile(f, target="cpu")(x)
    warm = tw.compile(f, target="cpu")(x)  # (a new trace of the same graph: the record)
    assert cold.dtype == tw.bfloat16.np
    assert warm.dtype == tw.bfloat16.np, warm.dtype
    np.testing.assert_array_equal(warm.astype(np.float32), [3.0, 4.0, 6.0])
