"""Thread races of numba's CUDA simulator that tensorweave guards against (compile.py):
a simulated block's threads sharing one ``cuda.shared.array`` per call site, and
simulated launches from several Python threads (the dataflow executor's parallel GPU
nodes) not reading each other's thread indices. Both once gave silently wrong sums in
tests/gpu/sim/test_placement.py (a reduction of 32 threads: 9.7 for 15.06)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tensorweave as tw


def _placed_step(name: str, scale: float):
    """A variable on the GPU updated by a GPU matmul and summed by a GPU reduction (the
    shape of test_placement's variable test), and the totals NumPy gives for 3 steps."""
    with tw.device("/GPU:0"):
        v = tw.Variable(np.eye(3, dtype=np.float32), name=name)

    @tw.compile(target="reference")
    def step(x):
        with tw.device("/GPU:0"):
            v.assign_add(tw.matmul(x, v))
            return tw.reduce_sum(v)

    x = np.arange(9, dtype=np.float32).reshape(3, 3) * np.float32(scale)
    value, want = np.eye(3, dtype=np.float32), []
    for _ in range(3):
        value = value + x @ value
        want.append(float(value.sum()))
    return step, x, want, v


class _MissesTogether(dict):
    """A simulated launch's shared-array table where the first thread to miss a call
    site waits (up to half a second) until a second thread misses it too: the
    interleaving a busy GIL makes only rarely, made every time."""

    def __init__(self) -> None:
        super().__init__()
        self._mu = threading.Lock()
        self._second_miss: dict = {}

    def get(self, key, default=None):
        found = super().get(key, default)
        if found is None:  # the miss is answered after the wait: another may store
            with self._mu:
                second = self._second_miss.get(key)
                first = second is None
                if first:
                    second = self._second_miss[key] = threading.Event()
            if first:
                second.wait(0.5)  # times out when the look-ups are serialized (the guard)
            else:
                second.set()
        return found


def test_threads_of_a_simulated_block_share_one_shared_array_when_they_all_miss(monkeypatch):
    from numba.cuda.simulator import kernelapi
    unpatched_init = kernelapi.FakeCUDAShared.__init__

    def init(self, dynshared_size):
        unpatched_init(self, dynshared_size)
        self._allocations = _MissesTogether()

    step, x, want, v = _placed_step("race_shared_var", 0.1)
    step(x)  # compiles and loads the kernels (installs the guard) before the slow table
    monkeypatch.setattr(kernelapi.FakeCUDAShared, "__init__", init)
    got = float(step(x))
    # the matmul and the sum both use shared arrays: a thread computing on a private
    # copy in either shows in the total (without the guard: 1.73, 8.95 in two runs)
    np.testing.assert_allclose(got, want[1], rtol=1e-6)
    np.testing.assert_allclose(v.numpy().sum(), want[1], rtol=1e-6)


def test_two_threads_running_steps_with_the_same_kernels_at_once_get_their_own_numbers():
    # same shapes: the two functions launch kernels of one source (one simulated kernel)
    runs = [_placed_step(f"race_two_threads_{k}", scale) for k, scale in enumerate((0.1, 0.05))]
    got: dict[int, list[float]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(len(runs))

    def run(k: int) -> None:
        step, x, _, _ = runs[k]
        try:
            start.wait()
            got[k] = [float(step(x)) for _ in range(3)]
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(runs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    for k, (_, _, want, v) in enumerate(runs):
        np.testing.assert_allclose(got[k], want, rtol=1e-6)
        np.testing.assert_allclose(v.numpy().sum(), want[-1], rtol=1e-6)


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__, "-q"])
