"""Native dispatch of `tw.compile` calls (`targets/cpu/dispatch.py`): a call whose arrays
match a signature that ran natively before is answered without Python; every other call
(another dtype, shape or layout, other array types, keywords, static arguments, bad
arguments, calls while tracing or profiling) takes the Python path and behaves exactly as
before. Results are fresh (reused only once the caller has dropped them), step errors are
the Python path's, and concurrent calls from threads stay correct."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tensorweave.errors import InvalidArgumentError
from tensorweave.targets.cpu import dispatch

pytestmark = pytest.mark.skipif(not dispatch.enabled(), reason="native dispatch is off here")


def _hits(f) -> int:
    """Calls of `f` its native dispatcher answered."""
    d = f._dispatcher
    return 0 if d is None else sum(d.hit_counts().values())


def _warm(f, *args):
    """Call `f` until its native dispatcher answers these arguments."""
    for _ in range(3):
        f(*args)
    before = _hits(f)
    out = f(*args)
    assert _hits(f) == before + 1, "the call was not dispatched natively"
    return out


_FNS: dict = {}


def _affine(dtype):
    """One compiled function per dtype (each new shape compiles once)."""
    if dtype not in _FNS:
        _FNS[dtype] = tw.compile(lambda x, y: x * 3 - y, target="cpu")
    return _FNS[dtype]


@settings(max_examples=15)
@given(st.sampled_from([np.float32, np.float64, np.int32, np.int64]),
       st.sampled_from([(), (5,), (2, 3)]), st.data())
def test_native_hits_match_numpy(dtype, shape, data):
    elements = st.integers(-1000, 1000)
    x = data.draw(hnp.arrays(dtype, shape, elements=elements))
    y = data.draw(hnp.arrays(dtype, shape, elements=elements))
    f = _affine(np.dtype(dtype).name)
    _warm(f, x, y)
    before = _hits(f)
    got = f(x, y)
    assert _hits(f) == before + 1
    assert type(got) is np.ndarray and got.dtype == dtype and got.shape == shape
    np.testing.assert_array_equal(got, x * 3 - y)
    assert not np.shares_memory(got, x) and not np.shares_memory(got, y)


def test_results_are_fresh_while_held_and_reused_once_dropped():
    f = tw.compile(lambda x: x * 2.0, target="cpu")
    x = np.ones(1 << 12, np.float32)
    _warm(f, x)
    held = f(x)
    again = f(x + 1)
    assert not np.shares_memory(held, again)
    np.testing.assert_array_equal(held, 2.0)  # untouched by the second call
    view = again[1:]
    address = again.ctypes.data
    del again
    kept = f(x)  # a view still uses the buffer: not reused
    assert not np.shares_memory(kept, view)
    np.testing.assert_array_equal(view, 4.0)
    del view, kept
    # nothing holds the last result any more: the next call writes into it
    last = f(x + 2)
    address = last.ctypes.data
    del last
    assert f(x + 3).ctypes.data == address
    np.testing.assert_array_equal(held, 2.0)
    # a result passed back in is an input, never the output buffer
    y = f(x)
    z = f(y)
    assert not np.shares_memory(y, z)
    np.testing.assert_array_equal(z, 4.0)
    np.testing.assert_array_equal(f(f(x)), 4.0)


class _Interface:
    """An array of "another library": only NumPy's array interface."""

    def __init__(self, a: np.ndarray) -> None:
        self.__array_interface__ = a.__array_interface__
        self._a = a


class _DLPack:
    """A DLPack producer that is not a NumPy array."""

    def __init__(self, a: np.ndarray) -> None:
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class _Sub(np.ndarray):
    pass


def test_every_other_call_takes_the_python_path_with_the_same_results():
    f = tw.compile(lambda x: x + 1.0, target="cpu")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    _warm(f, x)
    cases = {
        "float64": x.astype(np.float64),
        "other shape": np.arange(3, dtype=np.float32),
        "strided": np.arange(12, dtype=np.float32).reshape(2, 6)[:, ::2],
        "fortran order": np.asfortranarray(x),
        "subclass": x.view(_Sub),
        "eager tensor": tw.constant(x),
        "array interface": _Interface(x),
        "dlpack": _DLPack(x),
    }
    for what, arg in cases.items():
        before = _hits(f)
        got = f(arg)
        assert _hits(f) == before, what
        base = np.from_dlpack(arg) if isinstance(arg, _DLPack) else np.asarray(arg)
        expected = base + base.dtype.type(1)
        assert type(got) is np.ndarray, what
        np.testing.assert_array_equal(got, expected, err_msg=what)
        assert got.dtype == expected.dtype, what
    # keywords and static arguments: the Python path too
    before = _hits(f)
    np.testing.assert_array_equal(f(x=x), x + 1)
    np.testing.assert_array_equal(f(2.0), 3.0)
    assert _hits(f) == before
    # and the signature still hits afterwards
    _warm(f, x)


def _error(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001 - compared below
        return type(e), str(e)
    raise AssertionError("no error")


def test_bad_arguments_raise_what_the_python_path_raises(monkeypatch):
    def body(x):
        return x + 1.0

    x = np.ones(3, np.float32)
    native = tw.compile(body, target="cpu")
    _warm(native, x)
    monkeypatch.setenv("TW_NATIVE_DISPATCH", "0")
    plain = tw.compile(body, target="cpu")
    for _ in range(3):
        plain(x)
    assert plain._native is None
    for args, kwargs in [((None,), {}), ((x, x), {}), ((), {}), ((x,), {"y": x}),
                         (("text",), {})]:
        # (one line for both calls: errors name the caller's line)
        got, want = [_error(lambda f=f: f(*args, **kwargs)) for f in (native, plain)]
        assert got[0] is want[0], args
        assert got[1].replace("body", "") == want[1].replace("body", ""), args
    for f in (native, plain):  # a big-endian array: converted by value on both paths
        np.testing.assert_array_equal(f(x.astype(">f4") * 3), x * 3 + 1)


def test_step_errors_from_native_calls_name_the_op_and_line():
    f = tw.compile(lambda p, i: tw.gather(p, i), target="cpu")
    p = np.arange(8, dtype=np.float32).reshape(4, 2)
    ok = np.array([3, 0], np.int32)
    np.testing.assert_array_equal(_warm(f, p, ok), p[[3, 0]])
    before = _hits(f)
    with pytest.raises(InvalidArgumentError, match="Gather.*test_dispatch.py") as info:
        f(p, np.array([4, 0], np.int32))
    assert "indices[0] = 4 is not in [0, 4)" in str(info.value)
    assert _hits(f) == before + 1  # raised by the native call itself
    # the entry is free again
    np.testing.assert_array_equal(f(p, ok), p[[3, 0]])
    assert _hits(f) == before + 2

    @tw.compile(target="cpu")
    def g(x):
        tw.debugging.assert_positive(x, message="needs x > 0")
        return x * 2.0

    y = np.ones(3, np.float32)
    _warm(g, y)
    for _ in range(2):
        with pytest.raises(InvalidArgumentError, match="needs x > 0"):
            g(-y)
    np.testing.assert_array_equal(g(y), 2 * y)


def test_structured_results_and_constants():
    f = tw.compile(lambda x, y: (x + y, {"d": x * y, "k": 3, "n": None}, [y]), target="cpu")
    x = np.arange(4, dtype=np.float64)
    y = np.full(4, 2.0)
    a, d, (c,) = _warm(f, x, y)
    np.testing.assert_array_equal(a, x + y)
    np.testing.assert_array_equal(d["d"], x * y)
    assert d["k"] == 3 and d["n"] is None
    np.testing.assert_array_equal(c, y)
    assert not np.shares_memory(c, y)
    a2, d2, (c2,) = f(x, y)  # the first results are still held: fresh ones
    assert not any(np.shares_memory(u, v) for u in (a, d["d"], c) for v in (a2, d2["d"], c2))


def test_random_ops_advance_on_every_native_call():
    f = tw.compile(lambda x: x + tw.random.uniform([64]), target="cpu")
    x = np.zeros(64, np.float32)
    _warm(f, x)
    draws = [f(x).copy() for _ in range(3)]
    assert not np.array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[1], draws[2])
    assert all(((d >= 0) & (d < 1)).all() for d in draws)


def test_variables_are_read_when_called():
    v = tw.Variable(np.ones(3, np.float32))
    f = tw.compile(lambda x: x + v.read_value(), target="cpu")
    x = np.zeros(3, np.float32)
    np.testing.assert_array_equal(_warm(f, x), 1.0)
    before = _hits(f)
    v.assign(np.full(3, 5.0, np.float32))
    np.testing.assert_array_equal(f(x), 5.0)
    out = f(x)
    v.assign(np.full(3, 7.0, np.float32))
    np.testing.assert_array_equal(out, 5.0)  # a result is not the variable's buffer
    np.testing.assert_array_equal(f(x), 7.0)
    assert _hits(f) == before + 3


def _sgd_step(seed: int):
    rng = np.random.default_rng(seed)
    w = tw.Variable(rng.standard_normal((6, 3)).astype(np.float32))
    b = tw.Variable(np.zeros(3, np.float32))
    opt = tw.optimizers.SGD(0.3)

    @tw.compile(target="cpu")
    def step(x, y):
        loss = tw.reduce_mean(tw.nn.softmax_cross_entropy_with_logits(
            labels=y, logits=tw.matmul(x, w) + b))
        opt.minimize(loss, var_list=[w, b])
        return loss
    return step, w, b


def test_training_steps_run_natively_bitwise_like_the_python_path(monkeypatch):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8)]
    native, nw, nb = _sgd_step(0)
    native_losses = [native(x, y) for _ in range(8)]
    monkeypatch.setenv("TW_NATIVE_DISPATCH", "0")
    plain, pw, pb = _sgd_step(0)
    plain_losses = [plain(x, y) for _ in range(8)]
    assert _hits(native) >= 5 and plain._native is None
    np.testing.assert_array_equal(native_losses, plain_losses)
    np.testing.assert_array_equal(nw.numpy(), pw.numpy())
    np.testing.assert_array_equal(nb.numpy(), pb.numpy())
    assert native_losses[-1] < native_losses[0]


def test_variable_updates_from_threads_are_not_lost():
    v = tw.Variable(np.zeros(4, np.float64))

    @tw.compile(target="cpu")
    def bump(x):
        v.assign_add(x)
        return v.read_value()

    one = np.ones(4)
    _warm(bump, one)
    start = v.numpy().copy()
    errors: list = []

    def work() -> None:
        try:
            for _ in range(200):
                bump(one)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    np.testing.assert_array_equal(v.numpy(), start + 800)  # every update under the lock


def test_a_call_waits_for_a_variable_lock_held_elsewhere():
    v = tw.Variable(np.ones(2, np.float32))
    f = tw.compile(lambda x: x + v.read_value(), target="cpu")
    x = np.ones(2, np.float32)
    _warm(f, x)
    (state,) = f.get_concrete_function(x).executable.native_step([x])._variables()
    got: list = []
    with state.lock:
        t = threading.Thread(target=lambda: got.append(f(x)))
        t.start()
        t.join(0.3)
        assert t.is_alive() and not got  # blocked on the lock, not running without it
        state.value[:] = 5.0
    t.join()
    np.testing.assert_array_equal(got[0], 6.0)


def test_a_call_while_another_function_traces_is_inlined():
    calls = []

    @tw.compile(target="cpu")
    def inner(x):
        calls.append(1)
        return x * 2.0

    x = np.ones(2, np.float32)
    _warm(inner, x)
    traced = len(calls)

    @tw.compile(target="cpu")
    def outer(y):
        return inner(x) + y  # a concrete array while `outer` traces

    np.testing.assert_array_equal(outer(x), 3.0)
    assert len(calls) == traced + 1  # the Python function ran inside outer's trace


def test_calls_inside_a_profiler_trace_are_recorded(tmp_path):
    f = tw.compile(lambda x: tw.exp(x) + 1.0, target="cpu")
    x = np.zeros(3, np.float32)
    _warm(f, x)
    before = _hits(f)
    with tw.profiler.trace(str(tmp_path)) as rec:
        for _ in range(2):
            np.testing.assert_array_equal(f(x), 2.0)
    assert rec.calls == 2
    assert _hits(f) == before
    _warm(f, x)


def test_concurrent_calls_from_threads_are_correct():
    f = tw.compile(lambda x: tw.reduce_sum(x * x, axis=1) + 1.0, target="cpu")
    _warm(f, np.ones((64, 256), np.float32))
    errors: list = []

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        held = []
        try:
            for _ in range(150):
                x = rng.integers(-4, 5, (64, 256)).astype(np.float32)
                r = f(x)
                np.testing.assert_array_equal(r, (x * x).sum(axis=1) + 1)
                held.append((r, r.copy()))
            for r, copy in held:  # nobody else wrote into a result this thread holds
                np.testing.assert_array_equal(r, copy)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert _hits(f) > 150


@pytest.mark.filterwarnings("ignore::tensorweave.errors.RetracingWarning")
def test_hot_traces_survive_eviction_and_entries_follow_the_trace_cache():
    f = tw.compile(lambda x: x - 1.0, target="cpu", max_traces=2)
    a, b, c = (np.zeros(n, np.float32) for n in (2, 3, 4))
    _warm(f, a)
    f(b)
    for _ in range(5):
        f(a)  # native hits: `a`'s trace is the most recently used
    traces = f.experimental_get_tracing_count()
    f(c)  # evicts `b`'s trace, not `a`'s
    np.testing.assert_array_equal(f(a), -1.0)
    assert f.experimental_get_tracing_count() == traces + 1
    live = {k for k, _ in f._cache.items()}
    assert all(e.key in live for e in f._dispatcher.entries)
    for n in range(2, 2 + dispatch.MAX_ENTRIES + 2):  # more shapes than entries
        x = np.full(n, 3.0, np.float32)
        for _ in range(3):
            np.testing.assert_array_equal(f(x), 2.0)
    assert len(f._dispatcher.entries) <= 2


def test_a_deadline_on_a_loop_keeps_the_dataflow_executor():
    def count(x):
        return tw.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + x),
                             (tw.constant(0), tw.zeros_like(x)))[1]

    f = tw.compile(count, target="cpu", timeout=30.0)
    x = np.ones(2, np.float32)
    for _ in range(4):
        np.testing.assert_array_equal(f(x), 5.0)
    assert f._native is None
    g = tw.compile(count, target="cpu")
    np.testing.assert_array_equal(_warm(g, x), 5.0)


def test_turned_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("TW_NATIVE_DISPATCH", "0")
    f = tw.compile(lambda x: x + 1.0, target="cpu")
    x = np.ones(2, np.float32)
    for _ in range(4):
        np.testing.assert_array_equal(f(x), 2.0)
    assert f._native is None and f._dispatcher is None


def test_identity_no_arguments_and_methods():
    ident = tw.compile(lambda x: x, target="cpu")
    x = np.arange(5, dtype=np.int32)
    out = _warm(ident, x)
    np.testing.assert_array_equal(out, x)
    assert not np.shares_memory(out, x)  # a result is never the argument itself

    const = tw.compile(lambda: tw.constant([1.0, 2.0]) * 2.0, target="cpu")
    first = _warm(const)
    second = const()
    np.testing.assert_array_equal(second, [2.0, 4.0])
    assert not np.shares_memory(first, second)
    second[:] = 0  # the caller owns its result: the next call is not affected
    np.testing.assert_array_equal(const(), [2.0, 4.0])

    class Scaler:
        def __init__(self, k: float) -> None:
            self.k = k

        @tw.compile(target="cpu")
        def apply(self, x):
            return x * self.k

    s = Scaler(3.0)
    y = np.ones(2, np.float32)
    for _ in range(4):
        np.testing.assert_array_equal(s.apply(y), 3.0)
