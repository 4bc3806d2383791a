"""An eager ``Variable.read_value()`` under a `tw.GradientTape` is differentiable, as the
same code under `tw.compile` is (and as TensorFlow's ReadVariableOp is): the tape gave
None for ``(v.read_value() - 3) ** 2``, so an optimizer step in an eager loop body
failed with "no gradients provided", while ``(v - 3) ** 2`` worked."""

from __future__ import annotations

import numpy as np

import tensorweave as tw
from tests.helpers import assert_same

F32 = np.float32


def loss_and_grad(v, w):
    with tw.GradientTape() as tape:
        loss = (v.read_value() - 3.0) ** 2 + v * w.value()
    return tape.gradient(loss, [v, w])


def test_read_value_is_recorded_eagerly_as_when_compiled():
    v, w = tw.Variable(F32(1.0)), tw.Variable(F32(2.0))
    eager = [g.numpy() for g in loss_and_grad(v, w)]
    compiled = tw.compile(lambda: loss_and_grad(v, w))()
    # d/dv: 2 (v - 3) + w = -2; d/dw: v (read through .value()) = 1
    for got in (eager, compiled):
        assert_same(got[0], F32(-2.0))
        assert_same(got[1], F32(1.0))


def test_a_read_through_both_paths_is_counted_once():
    v = tw.Variable(F32(1.5))
    with tw.GradientTape() as tape:
        r = v.read_value()
        loss = tw.convert_to_tensor(v) * r  # v * v
    assert_same(tape.gradient(loss, v).numpy(), F32(3.0))


def test_an_optimizer_step_in_an_eager_loop_body():
    def train(v, opt):
        def body(i, acc):
            with tw.GradientTape() as tape:
                loss = (v.read_value() - 3.0) ** 2
            opt.apply_gradients([(tape.gradient(loss, v), v)])
            return i + 1, acc + v.read_value()
        return tw.while_loop(lambda i, a: i < 3, body, (0, tw.constant(F32(0))))

    v_eager, v_compiled = tw.Variable(F32(1.0)), tw.Variable(F32(1.0))
    _, eager = train(v_eager, tw.optimizers.SGD(0.1))
    _, compiled = tw.compile(lambda: train(v_compiled, tw.optimizers.SGD(0.1)))()
    # v: 1 -> 1.4 -> 1.72 -> 1.976 (each step v += 0.2 (3 - v))
    assert_same(v_eager.numpy(), F32(1.976))
    assert_same(v_compiled.numpy(), F32(1.976))
    assert_same(eager.numpy(), compiled)
