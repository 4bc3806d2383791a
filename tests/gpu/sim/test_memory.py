"""The caching allocator, result ownership, concurrent calls and variables shared with
other targets, under the simulator."""

from __future__ import annotations

import threading

import numpy as np

import tensorweave as tw
from tensorweave.targets.gpu.allocator import GRANULE, CachingAllocator
from tensorweave.targets.gpu.device import require


def test_freed_blocks_are_reused_by_rounded_size():
    alloc = CachingAllocator(require())
    a = alloc.allocate(1000)
    assert a.nbytes == 2 * GRANULE and alloc.stats()["misses"] == 1
    alloc.free(a)
    b = alloc.allocate(1020)  # rounds to the same size: the freed block comes back
    assert b is a and alloc.stats()["hits"] == 1
    c = alloc.allocate(5000)  # another size: a new block
    assert c is not a and alloc.stats()["misses"] == 2
    assert alloc.stats()["in_use"] == a.nbytes + c.nbytes == alloc.stats()["peak"]
    alloc.free(b)
    alloc.free(c)
    assert alloc.stats()["in_use"] == 0 and alloc.stats()["cached"] == a.nbytes + c.nbytes
    alloc.empty_cache()
    assert alloc.stats()["cached"] == 0 and alloc.allocate(1000) is not a


def test_results_are_fresh_arrays_every_call():
    f = tw.compile(lambda x: x * 2.0, target="gpu")
    x = np.ones(3, np.float32)
    r1, r2 = f(x), f(x)
    assert r1 is not r2 and not np.shares_memory(r1, r2)
    r1[:] = 7
    np.testing.assert_array_equal(f(x), [2, 2, 2])


def test_concurrent_calls_of_one_function_do_not_mix():
    f = tw.compile(lambda x: tw.reduce_sum(x * x, axis=-1), target="gpu")
    inputs = [np.full((2, 4), k, np.float32) for k in range(4)]
    f(inputs[0])  # plan and bind once
    results: dict[int, np.ndarray] = {}

    def run(k: int) -> None:
        results[k] = f(inputs[k])

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        np.testing.assert_array_equal(results[k], [4.0 * k * k] * 2)


def test_a_variable_shared_with_the_cpu_target_stays_consistent():
    v = tw.Variable(np.zeros(3, np.float32), name="shared_with_cpu")

    def bump(x):
        v.assign_add(x)
        return v.read_value()

    on_gpu = tw.compile(bump, target="gpu")
    on_cpu = tw.compile(bump, target="cpu")  # writes the host buffer in place, natively
    one = np.ones(3, np.float32)
    np.testing.assert_array_equal(on_gpu(one), [1, 1, 1])
    np.testing.assert_array_equal(on_cpu(one), [2, 2, 2])
    np.testing.assert_array_equal(on_gpu(one), [3, 3, 3])  # saw the cpu's write
    np.testing.assert_array_equal(on_cpu(one), [4, 4, 4])  # and the cpu sees the gpu's
    np.testing.assert_array_equal(v.numpy(), [4, 4, 4])
