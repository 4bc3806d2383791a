"""A `tw.while_loop` whose cond has a side effect, stopped by `maximum_iterations`, runs
the cond as TensorFlow does: it evaluates the cond and then ANDs it with the bound
(``logical_and(i < maximum_iterations, cond(...))``), so the cond runs once more than the
body: 3 times for a bound of 2 (TensorFlow 2.21: 3.0 eagerly, in a tf.function with a
static bound and with a tensor bound).

Before, eagerly and with a static bound on the functional While (reference and cpu
targets) the bound was checked first and the cond ran 2 times, but 3 times with a tensor
bound or lowered to Switch/Merge: the variable a user reads afterwards differed between
eager and compiled code, and between a static and a fed bound."""

from __future__ import annotations

import numpy as np

import tensorweave as tw

CONFIGS = [("reference", False), ("cpu", False), ("reference", True), ("cpu", True)]


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
    assert set(seen.values()) == {3.0}, seen  # TensorFlow 2.21: 3.0 on every path


def test_a_bound_of_zero_still_runs_an_effectful_cond_once():
    v = tw.Variable(np.float32(0.0))

    def counted(x):
        def cond(i):
            v.assign_add(1.0)
            return i < 10
        tw.while_loop(cond, lambda i: i + 1, [x], maximum_iterations=0)
        return v.read_value()

    assert float(counted(tw.constant(np.int32(0)))) == 1.0
    v.assign(0.0)
    assert float(tw.compile(counted)(np.int32(0))) == 1.0


def test_an_effect_free_cond_keeps_the_static_bound():
    def loop(x):
        return tw.while_loop(lambda i: i < 10, lambda i: i + 1, [x], maximum_iterations=4)

    graph = tw.compile(loop).get_concrete_function(np.int32(0)).graph
    (node,) = [n for n in graph.nodes if n.op == "While"]
    assert node.attrs["maximum_iterations"] == 4 and len(node.inputs) == 1
