"""Retracing that explains itself: a warning after 5 retraces naming the argument that
changed and the fix, an INFO log line per trace, ``reduce_retracing`` relaxing shapes,
and an LRU bound on the traces a function keeps."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

import tensorweave as tw
from tests.helpers import TARGETS

ONES = np.ones(3, np.float32)


def test_five_retraces_then_a_warning_that_names_the_python_argument():
    scale = tw.compile(lambda x, lr: x * lr)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tw.errors.RetracingWarning)
        for i in range(5):  # one trace and four retraces: quiet
            scale(ONES, 0.1 * (i + 1))
        scale(ONES, 0.1)  # a trace it has: no retrace
    with pytest.warns(tw.errors.RetracingWarning) as record:
        scale(ONES, 0.6)  # the fifth retrace
    assert len(record) == 1
    msg = str(record[0].message)
    assert "traced 6 times" in msg and "argument 'lr' changed from the Python float 0.5" in msg
    assert "np.float32(value)" in msg and "input_signature" in msg
    assert record[0].filename == __file__  # points at the user's call
    assert scale.experimental_get_tracing_count() == 6


def test_the_warning_comes_again_only_when_the_count_doubles():
    f = tw.compile(lambda x, k: x * k)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for k in range(25):
            f(ONES, k)
    counts = [str(w.message).split("traced ")[1].split(" ")[0] for w in record
              if issubclass(w.category, tw.errors.RetracingWarning)]
    assert counts == ["6", "11", "21"]


def test_shape_and_dtype_changes_name_their_fix():
    f = tw.compile(lambda x: x * 2)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for n in range(1, 7):
            f(np.ones((n, 4), np.float32))
    msg = str(record[-1].message)
    assert "argument 'x' changed from f32[5,4] to f32[6,4]" in msg
    assert "tw.TensorSpec" in msg and "reduce_retracing=True" in msg
    g = tw.compile(lambda x: x * 2)
    g(np.ones(2, np.float32))
    g(np.ones(2, np.float64))
    assert "changed from f32[2] to f64[2]" in g.retrace_reasons[-1]
    assert "one dtype" in g.retrace_reasons[-1]
    assert g.retrace_reasons[0] == "first call"


def test_every_trace_is_logged_at_info_with_its_reason(caplog):
    f = tw.compile(lambda x, n: x * n, name="scaled")
    with caplog.at_level(logging.INFO, logger="tensorweave"):
        f(ONES, 1)
        f(ONES, 2)
        f(ONES, 2)
    lines = [r.getMessage() for r in caplog.records if r.name == "tensorweave"]
    assert lines == ["tracing scaled (trace 1): first call",
                     "tracing scaled (trace 2): argument 'n' changed from the Python int 1 to "
                     "the Python int 2. To avoid it: a Python value is part of the trace, so "
                     "every new value of 'n' traces again: pass it as an array "
                     "(np.float32(value) or tw.constant(value)), or give input_signature"]


@pytest.mark.parametrize("target", TARGETS)
def test_reduce_retracing_traces_once_more_with_unknown_dims(target):
    f = tw.compile(lambda x: tw.reduce_sum(x * 2.0, axis=1), reduce_retracing=True, target=target)
    for n in (1, 2, 3, 7, 2):
        np.testing.assert_allclose(f(np.ones((n, 4), np.float32)), np.full(n, 8.0))
    assert f.tracing_count == 2
    assert [cf.input_specs[0].shape for cf in f.concrete_functions] == [(1, 4), (None, 4)]
    f(np.ones((3, 5), np.float32))  # another dim changed: relaxed again
    assert f.tracing_count == 3 and f.concrete_functions[-1].input_specs[0].shape == (None, None)
    f(np.ones((2, 3, 4), np.float32))  # another rank: a trace of its own
    assert f.tracing_count == 4


def test_the_trace_cache_is_bounded_and_keeps_the_recently_used():
    f = tw.compile(lambda x, k: x * k, max_traces=3)
    for k in (0, 1, 2):
        f(ONES, k)
    f(ONES, 0)  # 0 is now the most recent; 1 the least
    f(ONES, 3)  # evicts 1
    assert len(f.concrete_functions) == 3 and f.tracing_count == 4
    f(ONES, 0)
    assert f.tracing_count == 4
    f(ONES, 1)
    assert f.tracing_count == 5


def test_calls_on_the_fast_path_count_as_uses():
    f = tw.compile(lambda x: x + 1, max_traces=2)
    a, b, c = (np.ones(n, np.float32) for n in (1, 2, 3))
    f(a)
    f(b)
    f(a)  # the arrays-only fast path
    f(c)  # evicts b, not a
    f(a)
    assert f.tracing_count == 3
    f(b)
    assert f.tracing_count == 4


def test_the_default_bound_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("TW_MAX_TRACES", "2")
    f = tw.compile(lambda x, k: x * k)
    for k in range(5):
        f(ONES, k)
    assert len(f.concrete_functions) == 2
    with pytest.raises(ValueError, match="max_traces"):
        tw.compile(lambda x: x, max_traces=0)
