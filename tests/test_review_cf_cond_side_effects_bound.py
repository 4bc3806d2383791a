"""A `tw.while_loop` whose cond has a side effect, stopped by `maximum_iterations`: how
often the cond runs depends on how the loop runs. Eagerly and with a static bound on
the functional While (reference and cpu targets) the bound is checked first, so the cond
runs once per iteration (2 for a bound of 2); with a tensor bound (a LogicalAnd in the
cond region) or lowered to Switch/Merge (the bound ANDed with the cond's result, as
TensorFlow's graph does) it runs once more (3). The variable a user reads afterwards
differs between eager and compiled code, and between a static and a fed bound.

Left as a strict xfail: making every path agree means changing the functional While
kernels of every target (to evaluate the cond before the bound, as TensorFlow) or the
lowering's loop condition (to skip the cond once the bound is reached)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw

CONFIGS = [("reference", False), ("cpu", False), ("reference", True), ("cpu", True)]


@pytest.mark.xfail(strict=True, reason="the cond runs 2 or 3 times depending on the "
                                       "path (see the module docstring)")
def test_cond_side_effects_under_a_bound_agree_everywhere():
    v = tw.Variable(np.float32(0.0))

    def counted(x, bound):
        def cond(i):
            v.assign_add(1.0)
            return i < 10
        tw.while_loop(cond, lambda i: i + 1, [x], maximum_iterations=bound)
        return v.read_value()

    seen = {}
    v.assign(0.0)
    seen["eager"] = float(counted(tw.constant(np.int32(0)), 2))
    for target, lowered in CONFIGS:
        for bound in ("static", "tensor"):
            v.assign(0.0)
            if bound == "static":
                f = tw.compile(lambda x: counted(x, 2), target=target, lower_control_flow=lowered)
                got = f(np.int32(0))
            else:
                f = tw.compile(counted, target=target, lower_control_flow=lowered)
                got = f(np.int32(0), np.int32(2))
            seen[f"{target}{'-lowered' if lowered else ''}-{bound}"] = float(got)
    assert len(set(seen.values())) == 1, seen
