"""Review: `experimental_get_tracing_count` counts the traces a function made, not the
checks an eager tape runs.

A compiled call recorded by an eager `GradientTape` is differentiated by re-running the
Python function; before that, `tape_calls` traces it once more to check that it still
gives the same graph. That check went through `Function._trace`, which counted it: three
training steps of ``with tape: y = f(x)`` reported 4 traces for a function traced once,
as if it retraced on every step (TensorFlow reports 1), the count users assert on to
catch retracing.
"""

from __future__ import annotations

import numpy as np

import tensorweave as tw


def test_tape_gradients_of_a_compiled_call_do_not_count_as_traces() -> None:
    v = tw.Variable(np.float32(2.0))

    @tw.compile
    def f(x):
        return x * v

    x = tw.constant(np.float32(3.0))
    for _ in range(3):
        with tw.GradientTape() as tape:
            y = f(x)
        assert float(tape.gradient(y, v)) == 3.0
    assert f.experimental_get_tracing_count() == 1
    f(tw.constant(np.ones(2, np.float32)))  # a new signature still counts
    assert f.experimental_get_tracing_count() == 2
