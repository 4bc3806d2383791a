"""Whole steps on the gpu target under the simulator: an MLP training step against the
reference target, variables resident on the device, the caching allocator, host calls
for ops without a GPU kernel, and the errors kernels report through their status."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.errors import FailedPreconditionError, InvalidArgumentError
from tensorweave.targets.gpu import variables
from tensorweave.targets.gpu.allocator import default_allocator


def _mlp(target: str, seed: int = 0, steps: int = 3):
    """Train a 2-layer MLP with Adam for `steps` steps on `target`; losses and weights."""
    rng = np.random.default_rng(seed)
    w1 = tw.Variable(rng.normal(size=(6, 8)).astype(np.float32) * 0.3, name="mlp/w1")
    b1 = tw.Variable(np.full(8, 0.1, np.float32), name="mlp/b1")
    w2 = tw.Variable(rng.normal(size=(8, 3)).astype(np.float32) * 0.3, name="mlp/w2")
    b2 = tw.Variable(np.zeros(3, np.float32), name="mlp/b2")
    params = [w1, b1, w2, b2]
    opt = tw.optimizers.Adam(0.05)

    @tw.compile(target=target)
    def train_step(x, y):
        h = tw.nn.relu(tw.matmul(x, w1) + b1)
        logits = tw.matmul(h, w2) + b2
        loss = tw.reduce_mean(tw.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                             logits=logits))
        opt.minimize(loss, var_list=params)
        return loss

    x = rng.normal(size=(4, 6)).astype(np.float32)
    y = rng.integers(0, 3, 4).astype(np.int64)
    losses = [float(train_step(x, y)) for _ in range(steps)]
    return losses, [p.numpy() for p in params], train_step.get_concrete_function(x, y)


def _mirror_of(fn, *arrays) -> variables.Mirror:
    """The device mirror of the one variable `fn`'s step reads."""
    exe = fn.get_concrete_function(*arrays).executable
    (name,) = next(iter(exe._steps.values())).plan.var_names
    return variables.mirror(exe.resources.variable(name), default_allocator())


def test_mlp_training_step_matches_the_reference():
    ref_losses, ref_params, _ = _mlp("reference")
    losses, params, cf = _mlp("gpu")
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    assert losses[-1] < losses[0]  # it trains
    for p, r in zip(params, ref_params):
        np.testing.assert_allclose(p, r, rtol=1e-5, atol=1e-6)
    exe = cf.executable
    assert exe.native_reason is None and exe.fallbacks == {}
    step = next(iter(exe._steps.values()))
    assert step.launches >= 15  # fused clusters, products, cross entropy, updates


def _cnn(target: str, steps: int = 2):
    """A conv -> relu -> max-pool -> dense classifier trained with Adam on `target`."""
    rng = np.random.default_rng(1)
    k = tw.Variable(rng.normal(size=(3, 3, 1, 4)).astype(np.float32) * 0.5, name="cnn/k")
    w = tw.Variable(rng.normal(size=(36, 3)).astype(np.float32) * 0.2, name="cnn/w")
    params = [k, w]
    opt = tw.optimizers.Adam(0.05)

    @tw.compile(target=target)
    def train_step(x, y):
        h = tw.nn.max_pool2d(tw.nn.relu(tw.nn.conv2d(x, k, 1, "SAME")), 2, 2, "VALID")
        logits = tw.matmul(tw.reshape(h, [-1, 36]), w)
        loss = tw.reduce_mean(tw.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                             logits=logits))
        opt.minimize(loss, var_list=params)
        return loss

    x = rng.normal(size=(2, 6, 6, 1)).astype(np.float32)
    y = np.array([0, 2], np.int64)
    losses = [float(train_step(x, y)) for _ in range(steps)]
    return losses, [p.numpy() for p in params], train_step.get_concrete_function(x, y)


def test_cnn_training_step_matches_the_reference():
    ref_losses, ref_params, _ = _cnn("reference")
    losses, params, cf = _cnn("gpu")
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    for p, r in zip(params, ref_params):
        np.testing.assert_allclose(p, r, rtol=1e-4, atol=1e-6)
    exe = cf.executable
    assert exe.native_reason is None and exe.fallbacks == {}
    ops = {a.node.op for a in next(iter(exe._steps.values())).plan.actions}
    assert {"Conv2D", "Conv2DBackpropFilter", "MaxPool", "MaxPoolGrad"} <= ops


def test_variables_stay_on_the_device_until_the_host_changes_them():
    v = tw.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="resident")

    @tw.compile(target="gpu")
    def read(x):
        return tw.reduce_sum(v.read_value() * x, axis=-1)

    x = np.ones((2, 3), np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(read(x), [3.0, 12.0])
    m = _mirror_of(read, x)
    assert m.uploads == 1 and m.downloads == 0  # read three times, uploaded once
    v.assign(np.full((2, 3), 2.0, np.float32))  # a host-side write
    np.testing.assert_array_equal(read(x), [6.0, 6.0])
    assert m.uploads == 2


def test_assignments_on_the_device_are_seen_by_the_host():
    v = tw.Variable(np.zeros(4, np.float32), name="counter")

    @tw.compile(target="gpu")
    def bump(x):
        v.assign_add(x)
        return v.read_value() * 2.0

    x = np.arange(4, dtype=np.float32)
    bump(x)
    np.testing.assert_array_equal(bump(x), 4 * x)
    np.testing.assert_array_equal(v.numpy(), 2 * x)


def test_temporaries_share_blocks_and_the_allocator_reports_its_peak():
    @tw.compile(target="gpu")
    def chain(a, b):
        c = tw.matmul(a, b)              # temporaries with disjoint live ranges
        d = tw.matmul(tw.tanh(c), b)
        return tw.reduce_sum(tw.matmul(tw.exp(d), b))

    a = np.full((8, 8), 0.1, np.float32)
    chain(a, a)
    step = next(iter(chain.get_concrete_function(a, a).executable._steps.values()))
    temps = sum(step.plan.temps)
    held = sum(b.nbytes for b in step._tmp)  # per temporary (shared blocks repeat)
    distinct = {id(b): b.nbytes for b in step._tmp}
    assert sum(distinct.values()) < held and len(distinct) < len(step._tmp)
    assert temps > 0
    stats = default_allocator().stats()
    assert stats["peak"] >= stats["in_use"] > 0
    before = stats["hits"]
    step.release()  # the blocks go back to the pool ...
    chain2 = tw.compile(chain.python_function, target="gpu")
    np.testing.assert_allclose(chain2(a, a), chain(a, a), rtol=1e-6)
    assert default_allocator().stats()["hits"] > before  # ... and the next step takes them


def test_ops_without_a_gpu_kernel_run_on_the_host_with_a_reason():
    @tw.compile(target="gpu")
    def f(x):
        # Cumsum has no GPU kernel: its reference kernel runs on the host inside the step
        return tw.reduce_sum(tw.exp(x) + tw.math.cumsum(x, axis=1), axis=-1)

    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    expected = tw.compile(f.python_function, target="reference")(x)
    np.testing.assert_allclose(f(x), expected, rtol=1e-6)
    exe = f.get_concrete_function(x).executable
    assert list(exe.fallbacks.values()) == ["Cumsum: no GPU kernel for Cumsum"]


def test_integer_division_by_zero_names_the_op_and_line():
    @tw.compile(target="gpu")
    def f(x, y):
        return tw.floordiv(x, y) + 1

    line = inspect.getsourcelines(f.python_function)[1] + 2
    np.testing.assert_array_equal(f(np.array([7, -7], np.int32), np.array([2, 2], np.int32)),
                                  [4, -3])
    with pytest.raises(InvalidArgumentError,
                       match=rf"FloorDiv .*test_steps.py:{line}\): integer division by zero"):
        f(np.array([7, 1], np.int32), np.array([2, 0], np.int32))
    # the status is cleared: the next call works
    np.testing.assert_array_equal(f(np.array([4], np.int32), np.array([2], np.int32)), [3])


def test_a_label_out_of_range_is_an_error():
    @tw.compile(target="gpu")
    def f(logits, labels):
        return tw.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)

    with pytest.raises(InvalidArgumentError, match=r"outside the valid range of \[0, 3\)"):
        f(np.zeros((2, 3), np.float32), np.array([0, 3], np.int64))


def test_a_segment_id_out_of_range_is_an_error():
    @tw.compile(target="gpu")
    def f(data, ids):
        return tw.unsorted_segment_sum(data, ids, 2)

    data = np.ones((3, 2), np.float32)
    np.testing.assert_array_equal(f(data, np.array([1, -1, 1], np.int32)), [[0, 0], [2, 2]])
    with pytest.raises(InvalidArgumentError, match="not < num_segments = 2"):
        f(data, np.array([0, 2, 1], np.int32))


def test_reading_an_uninitialized_variable_fails():
    v = tw.Variable(np.ones(2, np.float32), name="later")

    @tw.compile(target="gpu")
    def f(x):
        return v.read_value() + x

    x = np.ones(2, np.float32)
    np.testing.assert_array_equal(f(x), [2.0, 2.0])
    state = _mirror_of(f, x).state
    with state.lock:
        state.value = None  # as if never initialized
    with pytest.raises(FailedPreconditionError, match="uninitialized variable"):
        f(x)


def test_a_deadline_stops_a_loop_run_on_the_host():
    from tensorweave.errors import DeadlineExceededError

    def count(n):
        return tw.while_loop(lambda i: i < n, lambda i: [i + 1], [tw.constant(0)])[0]

    f = tw.compile(count, target="gpu", timeout=0.2)
    assert int(f(np.int32(5))) == 5
    with pytest.raises(DeadlineExceededError):
        f(np.int32(10 ** 9))


def test_the_simulator_is_a_physical_gpu():
    assert [d.name for d in tw.config.list_physical_devices("GPU")] == ["/physical_device:GPU:0"]
