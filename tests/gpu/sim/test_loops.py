"""While loops on the gpu target as device launch sequences (`targets/gpu/loops.py`):
scans and their gradients (stacks on the device, DynamicUpdateRow), the W5 LSTM
language model step as one GPU step, and the host-call fallback for loops whose body has
no GPU kernel. Under the simulator, tiny shapes."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.errors import InvalidArgumentError
from tensorweave.frontend.building import apply_op1
from tensorweave.targets.gpu.listing import kernel_listing
from tensorweave.targets.gpu.step import Copy, HostCall, Launch, Loop, walk_actions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
F32 = {"rtol": 1e-5, "atol": 1e-6}  # float32: device libm and product order


def _step_plan(fn, *arrays):
    """The bound step's plan of compiled `fn` for `arrays` (after a call)."""
    exe = fn.get_concrete_function(*arrays).executable
    assert exe.native_reason is None, exe.native_reason
    return next(iter(exe._steps.values())).plan


def _loops(plan) -> list[Loop]:
    return [a for a in walk_actions(plan.actions) if isinstance(a, Loop)]


def _rnn(x, w):
    ys = tw.scan(lambda a, xt: tw.tanh(tw.matmul(a, w) + xt), x,
                 initializer=tw.zeros([2, 4], x.dtype))
    loss = tw.reduce_sum(ys * ys)
    gx, gw = tw.gradients(loss, [x, w])
    return loss, ys, gx, gw


def test_a_scan_and_its_gradient_run_as_device_loops_and_match_the_reference():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (3, 2, 4)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 4)).astype(np.float32)
    expected = tw.compile(_rnn, target="reference")(x, w)
    gpu = tw.compile(_rnn, target="gpu")
    for _ in range(2):  # the second call reuses the bound step (and its stack buffers)
        actual = gpu(x, w)
        for a, e in zip(actual, expected):
            np.testing.assert_allclose(a, e, **F32)
    plan = _step_plan(gpu, x, w)
    loops = _loops(plan)
    assert [lp.trips for lp in loops] == [3, 3] and not plan.fallbacks
    assert not [a for a in walk_actions(plan.actions) if isinstance(a, HostCall)]
    grad_loop = loops[1]
    # popped entries are read in place: the gradient loop copies nothing off its stack
    stack_reads = [a for a in grad_loop.body if isinstance(a, Copy)
                   and a.src.row is not None and a.src.rows == 3]
    assert not stack_reads
    # the forward loop's accumulator is updated in place, one row per iteration
    assert any(isinstance(a, Launch) and a.node.op == "DynamicUpdateRow" and len(a.args) == 3
               for a in loops[0].body)
    # x's gradient adds one row per iteration in place (no zeroed segment sum, no copy)
    assert any(isinstance(a, Launch) and a.node.op == "UnsortedSegmentSum" and
               len(a.args) == 3 for a in grad_loop.body)
    assert not [a for a in grad_loop.body if isinstance(a, Launch) and
                a.kernel.name.endswith("_zero")]
    # w's gradient: the product kernel adds into the loop variable's buffer (no Fusion)
    (product,) = [a for a in grad_loop.body if isinstance(a, Launch) and
                  a.node.op == "MatMul" and a.args[-1].rows == 1 and a.args[-1].row is None
                  and a.args[-1].shape == (4, 4)]
    assert "+ float32(total))" in product.kernel.source
    assert "runs its body 3 times on the device" in kernel_listing(plan)


def _lstm_module():
    """benchmarks/lstm.py (W5's model: `w5_loss`, `w5_data`, its sizes W5_*)."""
    spec = importlib.util.spec_from_file_location("tw_benchmarks_lstm",
                                                  os.path.join(ROOT, "benchmarks", "lstm.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _w5_step(lstm, target: str):
    """W5's SGD training step (as benchmarks/gpu.py's `tw_w5_step`) and its variables."""
    vs = [tw.Variable(a) for a in lstm.w5_data()["params"]]

    @tw.compile(target=target)
    def step(tok, tgt):
        loss = lstm.w5_loss(vs, tok, tgt)
        for v, g in zip(vs, tw.gradients(loss, vs)):
            v.assign_sub(lstm.W5_LR * g)
        return loss
    return step, vs


def test_the_w5_training_step_runs_as_one_gpu_step_and_matches_the_reference():
    lstm = _lstm_module()
    lstm.W5_V, lstm.W5_E, lstm.W5_H, lstm.W5_T, lstm.W5_B = 8, 3, 4, 3, 2  # tiny W5
    d = lstm.w5_data()
    gpu, gpu_vars = _w5_step(lstm, "gpu")
    ref, ref_vars = _w5_step(lstm, "reference")
    losses = [(float(gpu(d["tok"], d["tgt"])), float(ref(d["tok"], d["tgt"])))
              for _ in range(2)]
    np.testing.assert_allclose(*zip(*losses), **F32)
    assert losses[1][0] < losses[0][0]  # it trains
    for g, r in zip(gpu_vars, ref_vars):  # the parameters after two SGD steps
        np.testing.assert_allclose(g.numpy(), r.numpy(), **F32)
    plan = _step_plan(gpu, d["tok"], d["tgt"])
    assert not plan.fallbacks
    assert not [a for a in walk_actions(plan.actions) if isinstance(a, HostCall)]
    forward, backward = _loops(plan)
    assert forward.trips == backward.trips == 3  # the scan and its gradient
    # the kernels write pushed values into their stack entries and next loop values into
    # their buffers; the three arguments it pushes (i, h, c) live in their stack entries
    # (loops._stack_resident): neither loop copies anything
    assert not [a for a in forward.body if isinstance(a, Copy)]
    assert not [a for a in backward.body if isinstance(a, Copy)]
    assert plan.assigned == set(plan.var_names) and len(plan.var_names) == 6


def test_a_loop_whose_trip_count_is_known_only_at_run_time_checks_its_cond_on_the_device():
    def count(x, n):
        return tw.while_loop(lambda i, a: i < n, lambda i, a: [i + 1, a * 2.0],
                             [tw.constant(0), x])

    x = np.ones(3, np.float32)
    gpu = tw.compile(count, target="gpu")
    i, a = gpu(x, np.int32(4))
    assert int(i) == 4
    np.testing.assert_array_equal(a, 16 * x)
    plan = _step_plan(gpu, x, np.int32(4))
    assert not plan.fallbacks  # (more in sim/test_dynamic_loops.py)
    assert [lp.trips for lp in _loops(plan)] == [None]


def test_a_loop_whose_body_has_a_shape_known_only_at_run_time_runs_on_the_host():
    def masked(x):
        def body(i, a):
            return [i + 1, a + tw.reduce_sum(tw.boolean_mask(x, x > 0.0))]
        return tw.while_loop(lambda i, a: i < 3, body,
                             [tw.constant(0), tw.constant(0.0)])[1] * 2.0

    x = np.array([1.0, -2.0, 3.0], np.float32)
    gpu = tw.compile(masked, target="gpu")
    assert float(gpu(x)) == 24.0
    # BooleanMask has no GPU kernel, so the gpu target's placement puts the loop on the
    # CPU, where the step runs it as a host call
    assert _step_plan(gpu, x).fallbacks == {
        "while": "While: no GPU kernel for BooleanMask in its body"}


def test_swapped_loop_variables_zero_trips_and_maximum_iterations():
    def fib(a, b):
        _, x, y = tw.while_loop(lambda i, x, y: i < 5, lambda i, x, y: [i + 1, y, x + y],
                                [tw.constant(0), a, b])
        _, z = tw.while_loop(lambda i, z: i < 0, lambda i, z: [i + 1, z * 3.0],
                             [tw.constant(0), a])  # never runs
        _, m = tw.while_loop(lambda i, m: i < 10, lambda i, m: [i + 1, m + 1.0],
                             [tw.constant(0), b], maximum_iterations=2)
        return x, y, z, m

    a, b = np.array([0.0, 1.0], np.float32), np.array([1.0, 2.0], np.float32)
    gpu = tw.compile(fib, target="gpu")
    for got, want in zip(gpu(a, b), tw.compile(fib, target="reference")(a, b)):
        np.testing.assert_array_equal(got, want)
    x, y, z, m = gpu(a, b)
    np.testing.assert_array_equal(x, [5.0, 13.0])  # 5 Fibonacci steps from (0, 1), (1, 2)
    np.testing.assert_array_equal(m, b + 2.0)
    assert [lp.trips for lp in _loops(_step_plan(gpu, a, b))] == [5, 2]


def _rows(buf, offset):
    def body(i, b):
        row = tw.cast(i, tw.float32) * tw.ones([2], tw.float32)
        return [i + 1, apply_op1("DynamicUpdateRow", [b, i + offset, row])]
    return tw.while_loop(lambda i, b: i < 3, body, [tw.constant(0), buf])[1]


def test_update_row_in_place_in_a_loop_and_its_index_errors():
    buf = np.full((3, 2), -1.0, np.float32)
    gpu = tw.compile(_rows, target="gpu")
    np.testing.assert_array_equal(gpu(buf, np.int32(0)), [[0, 0], [1, 1], [2, 2]])
    (loop,) = _loops(_step_plan(gpu, buf, np.int32(0)))
    assert any(a.node.op == "DynamicUpdateRow" and len(a.args) == 3 for a in loop.body)
    with pytest.raises(InvalidArgumentError, match=r"index 3 is not in \[0, 3\)"):
        gpu(buf, np.int32(1))
    np.testing.assert_array_equal(gpu(buf, np.int32(0)), [[0, 0], [1, 1], [2, 2]])


def test_update_row_copy_and_its_index_error():
    def put(t, i, r):
        return apply_op1("DynamicUpdateRow", [t, i, r])

    t, r = np.arange(6, dtype=np.float64).reshape(3, 2), np.array([7.0, 8.0])
    gpu = tw.compile(put, target="gpu")
    np.testing.assert_array_equal(gpu(t, np.int64(1), r), [[0, 1], [7, 8], [4, 5]])
    np.testing.assert_array_equal(t, np.arange(6).reshape(3, 2))  # a copy
    with pytest.raises(InvalidArgumentError, match=r"index -1 is not in \[0, 3\)"):
        gpu(t, np.int64(-1), r)


def _cumsum_scan(x):
    return tw.scan(lambda a, xt: tw.cumsum(a + xt, axis=0), x)  # Cumsum: no GPU kernel


def test_a_loop_with_a_host_only_op_runs_on_the_host_or_declines_the_step():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    gpu = tw.compile(_cumsum_scan, target="gpu")
    np.testing.assert_array_equal(gpu(x), tw.compile(_cumsum_scan, target="reference")(x))
    (reason,) = _step_plan(gpu, x).fallbacks.values()
    assert reason == "While: no GPU kernel for Cumsum in its body"

    def with_gradient(x):  # the loops share a stack, placed on the CPU with the forward
        return tw.gradients(tw.reduce_sum(_cumsum_scan(x)), [x])[0]  # loop: declined

    gpu = tw.compile(with_gradient, target="gpu")
    np.testing.assert_array_equal(gpu(x), tw.compile(with_gradient, target="reference")(x))
    reason = gpu.get_concrete_function(x).executable.native_reason
    assert " is placed on /job:localhost/replica:0/task:0/device:CPU:0 and uses a " \
           "resource" in reason, reason


def test_random_draws_in_a_loop_body_are_the_references_call_after_call():
    def noisy(x):
        def cell(a, xt):
            r = apply_op1("RandomUniform", [], {"shape": (2,), "dtype": tw.float32,
                                                "seed": 3, "seed2": 4})
            return a + xt * r
        return tw.scan(cell, x, initializer=tw.zeros([2], tw.float32))

    x = np.ones((4, 2), np.float32)
    gpu, ref = tw.compile(noisy, target="gpu"), tw.compile(noisy, target="reference")
    first = gpu(x)
    np.testing.assert_array_equal(first, ref(x))  # one call index per iteration
    second = gpu(x)
    np.testing.assert_array_equal(second, ref(x))  # the next call draws on
    assert not np.array_equal(first, second)
    assert len(_loops(_step_plan(gpu, x))) == 1


@settings(settings.get_profile("gpu-sim"))
@given(data=st.data())
def test_scans_and_folds_with_their_gradients_match_the_reference(data):
    """Drawn lengths (1 to 4), batch and width, float64, with or without an initializer,
    a scan or a fold: values and gradients within 1e-12 of the reference."""
    t = data.draw(st.integers(1, 4), label="T")
    b, h = data.draw(st.integers(1, 3), label="B"), data.draw(st.integers(1, 3), label="H")
    fold = data.draw(st.booleans(), label="foldl")
    init = data.draw(st.booleans(), label="initializer")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    x = rng.uniform(-1, 1, (t, b, h))
    w = rng.uniform(-1, 1, (h, h))

    def fn(x, w):
        loop = tw.foldl if fold else tw.scan
        cell = lambda a, xt: tw.tanh(tw.matmul(a, w) + xt) * xt  # noqa: E731
        out = loop(cell, x, initializer=tw.ones([b, h], tw.float64) if init else None)
        return (out, *tw.gradients(tw.reduce_sum(tw.sin(out)), [x, w]))

    gpu = tw.compile(fn, target="gpu")
    for got, want in zip(gpu(x, w), tw.compile(fn, target="reference")(x, w)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    plan = _step_plan(gpu, x, w)
    assert not plan.fallbacks
    trips = t if init else t - 1
    assert [lp.trips for lp in _loops(plan)] == ([trips, trips] if trips else [])
