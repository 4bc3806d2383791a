"""``interleave`` without a ``cycle_length`` (or with AUTOTUNE) cycles over as many
inputs as the process may run on CPUs, as TensorFlow (``port::MaxParallelism()``, the
schedulable CPUs): the count decides the order of the elements.

It used ``os.cpu_count()``, every CPU of the machine, so a process limited to fewer
(``taskset``, a container's cpuset) interleaved in another order than TensorFlow on the
same machine: limited to one CPU of four, ``range(1, 3).interleave(lambda x:
range(10 * x, 10 * x + 2))`` gave 10, 20, 11, 21 where TensorFlow gives 10, 11, 20, 21.
"""

from __future__ import annotations

import os

import pytest

import tensorweave as tw


def _order(**kwargs):
    ds = tw.data.Dataset.range(1, 3).interleave(
        lambda x: tw.data.Dataset.range(10 * x, 10 * x + 2), **kwargs)
    return [int(v) for v in ds.as_numpy_iterator()]


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity here")
@pytest.mark.parametrize("kwargs", [{}, {"cycle_length": None},
                                    {"cycle_length": tw.data.AUTOTUNE}])
def test_autotuned_cycle_is_the_schedulable_cpu_count(monkeypatch, kwargs):
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {2})
    assert _order(**kwargs) == [10, 11, 20, 21]  # one input at a time
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3})
    assert _order(**kwargs) == [10, 20, 11, 21]


def test_a_given_cycle_length_is_kept():
    assert _order(cycle_length=1) == [10, 11, 20, 21]
    assert _order(cycle_length=2) == [10, 20, 11, 21]
