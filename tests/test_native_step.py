"""The cpu target's whole-step native functions (`targets/cpu/step.py`,
`targets/cpu/executable.py`): which graphs run as one native call, and that they keep
every promise the dataflow executor keeps (values, variable semantics, fresh results,
errors, concurrency)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.errors import FailedPreconditionError, InvalidArgumentError
from tensorweave.targets.cpu.step import describe


def _native(fn, *args):
    """The NativeStep of `fn` (a cpu-target Function) for `args`, or None."""
    return fn.get_concrete_function(*args).executable.native_step(list(args))


def test_training_step_is_one_native_function_and_matches_reference():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 20)).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 16)]

    def make(target):
        w = tw.Variable(rng.standard_normal((20, 4)).astype(np.float32) * 0.1)
        b = tw.Variable(np.zeros(4, np.float32))
        opt = tw.optimizers.SGD(0.5)

        @tw.compile(target=target)
        def step(x, y):
            logits = tw.matmul(x, w) + b
            loss = tw.reduce_mean(tw.nn.softmax_cross_entropy_with_logits(labels=y,
                                                                          logits=logits))
            opt.minimize(loss, var_list=[w, b])
            return loss
        return step, w

    rng = np.random.default_rng(1)
    cpu, w_cpu = make("cpu")
    rng = np.random.default_rng(1)
    ref, w_ref = make("reference")
    for _ in range(5):
        np.testing.assert_allclose(cpu(x, y), ref(x, y), rtol=1e-5)
    np.testing.assert_allclose(w_cpu.numpy(), w_ref.numpy(), rtol=1e-5, atol=1e-7)
    step = _native(cpu, x, y)
    assert step is not None
    assert not step.plan.callback_nodes, describe(step.plan)


def test_read_before_assign_returns_the_old_value():
    v = tw.Variable(np.arange(3, dtype=np.float32))

    @tw.compile(target="cpu")
    def f(x):
        old = v.read_value()
        v.assign(x)
        return old, v.read_value() * 2

    old, new2 = f(np.full(3, 7, np.float32))
    np.testing.assert_array_equal(old, [0, 1, 2])
    np.testing.assert_array_equal(new2, [14, 14, 14])
    assert _native(f, np.full(3, 7, np.float32)) is not None


def test_results_are_fresh_and_never_alias_inputs_or_variables():
    v = tw.Variable(np.ones(4, np.float32))
    f = tw.compile(lambda x: (x, tw.identity(x), v.read_value(), tw.reshape(x, [2, 2])),
                   target="cpu")
    x = np.arange(4, dtype=np.float32)
    a, b, c, d = f(x)
    for r in (a, b, d):
        assert not np.shares_memory(r, x)
    c[:] = 5  # the caller owns it: the variable does not change
    np.testing.assert_array_equal(v.numpy(), np.ones(4))
    assert _native(f, x) is not None


def test_result_buffers_are_reused_only_when_nobody_holds_them():
    f = tw.compile(lambda x: x * 2.0, target="cpu")
    x = np.ones(1 << 16, np.float32)
    held = f(x)
    again = f(x + 1)
    assert not np.shares_memory(held, again)
    np.testing.assert_array_equal(held, 2.0)  # untouched by the second call
    address = again.ctypes.data
    del again
    third = f(x)  # the dropped buffer is recycled
    assert third.ctypes.data == address
    np.testing.assert_array_equal(third, 2.0)
    np.testing.assert_array_equal(held, 2.0)


def test_unknown_dims_are_specialized_per_shape():
    f = tw.compile(lambda x: tw.reduce_sum(x * x, axis=1),
                   input_signature=[tw.TensorSpec([None, 3], tw.float32)], target="cpu")
    for n in (1, 5, 0):
        x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
        np.testing.assert_allclose(f(x), (x * x).sum(1), rtol=1e-6)
    exe = f.get_concrete_function().executable
    assert exe.native_step([np.zeros((5, 3), np.float32)]) is not None


def test_uninitialized_variable_is_a_clear_error():
    from tensorweave.compat import v1
    g = v1.Graph()
    with g.as_default():
        v = v1.Variable(np.ones(3, np.float32), name="never_initialized")
        out = v * 2.0
        with v1.Session(compile_target="cpu") as sess:
            with pytest.raises(FailedPreconditionError, match="never_initialized"):
                sess.run(out)
            sess.run(v1.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(out), [2, 2, 2])


def test_ops_without_a_native_lowering_call_back_into_python():
    @tw.compile(target="cpu")
    def f(x):
        return x + tw.random.normal([3], seed=1), tw.random.uniform([2], seed=2)

    x = np.zeros(3, np.float32)
    a, b = f(x)
    step = _native(f, x)
    assert step is not None
    if step.plan.callback_nodes:  # random numbers run their reference kernels
        ref = tw.compile(f.python_function, target="reference")
        ra, rb = ref(x)
        np.testing.assert_array_equal(a, ra)
        np.testing.assert_array_equal(b, rb)


def test_errors_inside_a_native_step_name_the_op_and_line():
    f = tw.compile(lambda x, i: tw.gather(x, i), target="cpu")
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(f(x, np.array([2, 0], np.int32)), x[[2, 0]])
    with pytest.raises(InvalidArgumentError, match=r"(?i)gather.*test_native_step.py"):
        f(x, np.array([0, 7], np.int32))


def test_concurrent_calls_share_nothing_but_variables():
    f = tw.compile(lambda x: tw.reduce_sum(tw.tanh(x) * 3.0, axis=1), target="cpu")
    inputs = [np.random.default_rng(k).standard_normal((64, 256)).astype(np.float32)
              for k in range(8)]
    expected = [np.tanh(x).astype(np.float64).sum(1) * 3 for x in inputs]
    f(inputs[0])
    errors = []

    def worker(k):
        try:
            for _ in range(50):
                np.testing.assert_allclose(f(inputs[k]), expected[k], rtol=1e-4)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_concurrent_updates_of_one_variable_are_not_lost():
    v = tw.Variable(np.zeros(1000, np.float64))
    add = tw.compile(lambda x: v.assign_add(x, read_value=False) or tw.constant(0.0),
                     target="cpu")
    one = np.ones(1000)
    add(one)
    threads = [threading.Thread(target=lambda: [add(one) for _ in range(100)])
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(v.numpy(), np.full(1000, 401.0))


def test_graphs_that_need_the_dataflow_executor_still_run():
    q = tw.queue.FIFOQueue(4, [tw.float32], shapes=[[2]])

    @tw.compile(target="cpu")
    def f(x):
        q.enqueue([x])
        return q.dequeue() + 1.0

    np.testing.assert_array_equal(f(np.ones(2, np.float32)), [2, 2])
    exe = f.get_concrete_function(np.ones(2, np.float32)).executable
    assert exe.native_step([np.ones(2, np.float32)]) is None
    assert "block" in exe.native_reason or "resource" in exe.native_reason
