"""Constant folding's simplification keeps the sign of zero for bfloat16 too.

``x + 0.0`` is not ``x`` when x is -0.0 (IEEE: -0.0 + +0.0 = +0.0), so the folder keeps
an Add whose zero is +0.0 and a Sub whose zero is -0.0. It told float zeros apart by
NumPy's dtype kind ``"f"``, and ml_dtypes' bfloat16 has kind ``"V"``: a bfloat16
``x + 0.0`` was dropped, and ``1 / (x + 0.0)`` gave -inf for x = -0.0 where the graph's
own arithmetic (the reference target on the traced graph) gives +inf.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tensorweave as tw
from tensorweave.targets.reference import ReferenceExecutable

BF16 = ml_dtypes.bfloat16


def plus_zero(x):
    return x + tw.constant(0.0, "bfloat16"), tw.constant(0.0, "bfloat16") + x


def minus_minus_zero(x):
    return (x - tw.constant(-0.0, "bfloat16"),)


def reciprocal_of_plus_zero(x):
    return (1.0 / tw.cast(x + tw.constant(0.0, "bfloat16"), "float32"),)


def minus_zero_neutral(x):
    # x + (-0.0) and x - (+0.0) are x bit for bit: these may go
    return x + tw.constant(-0.0, "bfloat16"), x - tw.constant(0.0, "bfloat16")


@pytest.mark.parametrize("target", ["reference", "cpu"])
@pytest.mark.parametrize("fn", [plus_zero, minus_minus_zero, reciprocal_of_plus_zero,
                                minus_zero_neutral])
def test_bfloat16_zero_keeps_its_sign(fn, target):
    x = np.array([-0.0, 0.0, 1.5, -2.0], BF16)
    raw = ReferenceExecutable(tw.compile(fn).get_concrete_function(x).graph)(x)
    got = tw.compile(fn, target=target)(x)
    for g, w in zip(got, raw):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype
        assert g.tobytes() == w.tobytes(), (g, w)
    # the traced graph's own answer, for the record: -0.0 + 0.0 is +0.0
    if fn is plus_zero:
        assert not np.signbit(np.asarray(got[0], np.float32)[0])


def test_bfloat16_plus_zero_stays_in_the_optimized_graph():
    x = np.array([-0.0, 1.0], BF16)
    cf = tw.compile(plus_zero).get_concrete_function(x)
    assert cf.ir("optimized").count('"tw.Add"') == 2
