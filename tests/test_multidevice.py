"""One function on 1, 2 and 4 logical CPU devices: bitwise-identical results (ops of
every family, random numbers, a few training steps of an MLP), and independent heavy
branches that really run on different devices, at the same time."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.runtime.dataflow import DataflowExecutable
from tensorweave.runtime.devices import DeviceSpec
from tests.helpers import within

DEVICE_COUNTS = (1, 2, 4)


@pytest.fixture(autouse=True)
def restore_devices():
    before = len(tw.config.list_logical_devices("CPU"))
    yield
    tw.config.set_logical_devices("CPU", before)


def compiled_on(devices: int, fn: Callable, *args) -> tuple[tw.Function, DataflowExecutable]:
    """`fn` compiled (traced, placed and partitioned) with `devices` logical CPUs."""
    tw.config.set_logical_devices("CPU", devices)
    f = tw.compile(fn)
    exe = f.get_concrete_function(*args).executable
    assert isinstance(exe, DataflowExecutable)
    return f, exe


def assert_bitwise(a, b) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def index_of(device: str) -> int:
    return DeviceSpec.from_string(device).device_index


# ------------------------------------------------------------ the op families

def families(x, w, img, filt, idx):
    """A few ops of each family, spread over up to 4 devices (on fewer devices, soft
    placement moves the extra scopes to CPU:0)."""
    with tw.device("/cpu:0"):
        h = tw.matmul(x, w)                                       # math
        noise = tw.random.uniform([6, 5], seed=7)                 # random
    with tw.device("/cpu:1"):
        z = tw.nn.relu(h) * 0.5 + noise                           # nn, math
        both = tw.concat([h, z], axis=1)                          # array
        picked = tw.gather(both, idx)
        normal = tw.random.normal([3, 5], seed=3)
    with tw.device("/cpu:2"):
        conv = tw.nn.conv2d(img, filt, strides=1, padding="SAME")  # nn
        pooled = tw.nn.max_pool2d(conv, 2, 2, "VALID")
        soft = tw.nn.softmax(tw.transpose(z))
    with tw.device("/cpu:3"):
        total = tw.reduce_sum(picked, axis=0) + tw.reduce_mean(soft)
        stats = tw.stack([tw.reduce_max(pooled), tw.reduce_min(normal)])
        counts = tw.cast(tw.argmax(both, axis=1), tw.float32)
    return total, stats, counts, tw.reshape(pooled, [-1])


def family_args():
    rng = np.random.default_rng(1)
    return (rng.normal(size=(6, 4)).astype(np.float32),
            rng.normal(size=(4, 5)).astype(np.float32),
            rng.normal(size=(2, 6, 6, 3)).astype(np.float32),
            rng.normal(size=(3, 3, 3, 4)).astype(np.float32),
            np.array([5, 0, 2, 2], np.int32))


def test_op_families_give_identical_bits_on_1_2_and_4_devices():
    args = family_args()
    results = {}
    for n in DEVICE_COUNTS:
        f, exe = compiled_on(n, families, *args)
        assert len(exe.partitions) == n
        results[n] = [within(30, lambda f=f: f(*args)) for _ in range(2)]  # 2 random draws
    for n in DEVICE_COUNTS[1:]:
        for run_1, run_n in zip(results[1], results[n]):
            for a, b in zip(run_1, run_n):
                assert_bitwise(a, b)
    # The two calls drew different random numbers (the counter advanced).
    assert results[1][0][0].tobytes() != results[1][1][0].tobytes()


def cost_model_only(x, y):
    """No device scopes: the cost model decides."""
    a = tw.tanh(tw.matmul(x, x))
    b = tw.sigmoid(tw.matmul(y, y))
    return tw.reduce_sum(a) + tw.reduce_sum(b), tw.concat([a, b], axis=0)


def test_cost_model_placement_gives_identical_bits():
    rng = np.random.default_rng(2)
    args = [rng.normal(size=(64, 64)).astype(np.float32) for _ in range(2)]
    outs = {}
    for n in DEVICE_COUNTS:
        f, _ = compiled_on(n, cost_model_only, *args)
        outs[n] = within(30, lambda f=f: f(*args))
    for n in DEVICE_COUNTS[1:]:
        for a, b in zip(outs[1], outs[n]):
            assert_bitwise(a, b)


# ------------------------------------------------------------ training

def mlp_training(devices: int, steps: int = 3):
    """Losses and final weights of `steps` Adam steps of a 2-layer MLP whose layers sit
    on different devices."""
    rng = np.random.default_rng(3)
    init = [rng.normal(size=(8, 16)) * 0.3, np.zeros(16), rng.normal(size=(16, 3)) * 0.3,
            np.zeros(3)]
    tw.config.set_logical_devices("CPU", devices)
    params = [tw.Variable(v.astype(np.float32), name=f"mlp{devices}_{i}")
              for i, v in enumerate(init)]
    optimizer = tw.optimizers.Adam(0.01)

    @tw.compile
    def train_step(x, y):
        with tw.device("/cpu:0"):
            hidden = tw.nn.relu(tw.matmul(x, params[0]) + params[1])
        with tw.device("/cpu:1"):
            logits = tw.matmul(hidden, params[2]) + params[3]
            loss = tw.reduce_mean(
                tw.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        optimizer.minimize(loss, var_list=params)
        return loss

    x = rng.normal(size=(10, 8)).astype(np.float32)
    y = rng.integers(0, 3, size=10).astype(np.int64)
    exe = train_step.get_concrete_function(x, y).executable
    assert len(exe.partitions) >= min(devices, 2)  # the cost model places the rest
    losses = [within(30, lambda: train_step(x, y)) for _ in range(steps)]
    return losses, [p.numpy() for p in params]


def test_mlp_training_steps_give_identical_bits_on_1_2_and_4_devices():
    base_losses, base_params = mlp_training(1)
    assert base_losses[-1] < base_losses[0]  # it trains
    for n in DEVICE_COUNTS[1:]:
        losses, params = mlp_training(n)
        for a, b in zip(base_losses, losses):
            assert_bitwise(a, b)
        for a, b in zip(base_params, params):
            assert_bitwise(a, b)


# ------------------------------------------------------------ parallel branches

def heavy_branches(a, b):
    x, y = a, b
    for i in range(3):
        x = tw.matmul(x, a, name=f"left{i}")
        y = tw.matmul(y, b, name=f"right{i}")
    return x, y


def matmul_spans(trace: list, device: int) -> tuple[float, float]:
    """First start and last end of the MatMuls that ran on CPU:`device`."""
    mine = [t for t in trace if t.op == "MatMul" and index_of(t.device) == device]
    return min(t.start for t in mine), max(t.end for t in mine)


def test_independent_heavy_branches_run_on_different_devices():
    rng = np.random.default_rng(4)
    args = [(rng.normal(size=(192, 192)) / 14).astype(np.float32) for _ in range(2)]
    f, exe = compiled_on(2, heavy_branches, *args)
    assert len(exe.partitions) == 2
    overlapped = False
    for _ in range(5):  # on a busy machine one step may not show it
        trace: list = []
        results = within(30, lambda trace=trace: exe.run(args, trace=trace))
        ran = {t.node: t for t in trace if t.op == "MatMul"}
        left = {index_of(ran[f"left{i}"].device) for i in range(3)}
        right = {index_of(ran[f"right{i}"].device) for i in range(3)}
        assert len(left) == 1 and len(right) == 1 and left != right
        # Both partitions were busy at the same time: their MatMul spans overlap.
        (s0, e0), (s1, e1) = matmul_spans(trace, 0), matmul_spans(trace, 1)
        if s0 < e1 and s1 < e0:
            overlapped = True
            break
    assert overlapped, "the two devices never computed at the same time"
    _, one = compiled_on(1, heavy_branches, *args)
    for a, b in zip(results, one(*args)):
        assert_bitwise(a, b)
