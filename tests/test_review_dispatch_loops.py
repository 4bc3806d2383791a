"""Adversarial review of three paths that could give silent wrong answers.

1. The native dispatcher (`targets/cpu/dispatch.py`, installed by `frontend/function.py`
   `_install_native`, entries from `targets/cpu/executable.py`): arrays of every layout,
   byte order, alignment, subclass and dtype, aliased arguments, results fed back as
   arguments, variables whose values users hold: the answer equals the Python path's
   (``TW_NATIVE_DISPATCH=0``) and the reference target's. (Held up at 577d6e8.)
2. Native loops with stacks (`targets/cpu/stacks.py`, `step.py`'s While/If emission):
   gradients of loops with data-dependent trip counts (0, 1, many, different per call),
   bounded by ``maximum_iterations``, two loops in one step, nested loops whose inner
   trip count depends on the outer counter, stacks of several dtypes and shapes, results
   of one call held while the next reuses the arena: the reference target's values and
   float64 finite differences. (Held up at 577d6e8.)
3. Eager tapes over compiled calls (`frontend/tape.py`, `frontend/tape_calls.py`,
   `custom_gradient.py`): a compiled call that reads no trainable variable could not be
   differentiated at all (its gradient function returned (input grads, []) where the
   CustomGradient node expected input grads only); a persistent tape's second
   ``gradient`` through a compiled call that reads a variable failed (the re-trace reused
   the VarHandle made by the first, which the replay did not know); a variable the call
   read, assigned before ``tape.gradient``, silently gave the gradient at its new value
   (the call is re-traced, its variables read anew): now an error. Fixed here.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.targets.cpu import dispatch
from tests.helpers import check_gradients
from tests.test_dispatch import _warm

# ------------------------------------------------------------------ native dispatch


def _unaligned(base, offset):
    """A copy of `base` whose data starts `offset` bytes into a uint8 buffer."""
    a = np.zeros(base.nbytes + offset, np.uint8)[offset:].view(base.dtype).reshape(base.shape)
    a[...] = base
    return a


def _layouts(base, tmp_path):
    """Arrays equal to `base` (2-d float32) in the layouts a caller may pass."""
    ro = base.copy()
    ro.flags.writeable = False
    mm = np.memmap(tmp_path / "x.bin", dtype=base.dtype, mode="w+", shape=base.shape)
    mm[...] = base
    return {
        "fortran": np.asfortranarray(base),
        "negative strides": np.ascontiguousarray(base[::-1])[::-1],
        "unaligned by 1": _unaligned(base, 1),
        "unaligned by 2": _unaligned(base, 2),
        "read-only": ro,
        "matrix": np.asmatrix(base),
        "masked": np.ma.MaskedArray(base, mask=np.zeros(base.shape, bool)),
        "memmap": mm,
    }


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # (np.matrix)
@pytest.mark.skipif(not dispatch.enabled(), reason="native dispatch is off here")
def test_every_layout_gives_the_python_paths_answer(tmp_path, monkeypatch):
    fn = lambda x, y: tw.nn.relu(x * y + 1.0) - tw.exp(-x) + tw.reduce_sum(x, axis=1, keepdims=True)  # noqa: E731,E501
    native, ref = tw.compile(fn, target="cpu"), tw.compile(fn, target="reference")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((37, 33)).astype(np.float32)
    y = rng.standard_normal((37, 33)).astype(np.float32)
    _warm(native, x, y)
    want = ref(x, y)
    cases = _layouts(x, tmp_path)
    for name, a in cases.items():
        np.testing.assert_allclose(native(a, y), want, rtol=1e-5, atol=1e-5, err_msg=name)
        np.testing.assert_allclose(native(y * 0 + y, a), ref(y, x), rtol=1e-5, atol=1e-5,
                                   err_msg=name)
    # an array whose C-contiguous flag ignores a stride (a size-1 dim): a view one row of
    # a bigger array, every other row
    big = np.repeat(x[:1], 2, axis=0)
    one = tw.compile(fn, target="cpu")
    _warm(one, x[:1].copy(), y[:1].copy())
    np.testing.assert_allclose(one(big[::2], y[:1]), ref(x[:1].copy(), y[:1].copy()),
                               rtol=1e-5, atol=1e-5)
    # the Python path gives the same answers
    monkeypatch.setenv("TW_NATIVE_DISPATCH", "0")
    python = tw.compile(fn, target="cpu")
    for name, a in cases.items():
        np.testing.assert_array_equal(python(a, y), native(np.ascontiguousarray(a), y),
                                      err_msg=name)


@pytest.mark.skipif(not dispatch.enabled(), reason="native dispatch is off here")
def test_aliased_arguments_results_fed_back_and_dtypes_are_never_mixed_up():
    f = tw.compile(lambda x, y: x * y + x, target="cpu")
    q = np.arange(1, 5, dtype=np.float32)
    _warm(f, q, q.copy())
    r1 = f(q, q)  # the same array twice
    np.testing.assert_array_equal(r1, q * q + q)
    r2 = f(r1, r1)  # a result held by the caller, given back as both arguments
    np.testing.assert_array_equal(r1, q * q + q)
    np.testing.assert_array_equal(r2, r1 * r1 + r1)
    np.testing.assert_array_equal(f(f(q, q), f(q, q)), r2)  # temporaries as arguments
    ident = tw.compile(lambda x: x, target="cpu")
    _warm(ident, q)
    assert not np.shares_memory(ident(q), q)
    # int32 trace, then int64, long long and 0-d / NumPy scalar arguments: each its own
    # trace with its own dtype, never a silent cast through the int32 entry
    g = tw.compile(lambda x: x * 3 + 1, target="cpu")
    i32 = np.array([1, -2, 2**20], np.int32)
    _warm(g, i32)
    for a in (i32.astype(np.int64), i32.astype(np.longlong), np.int64(2**40),
              np.array(2**40, np.int64)):
        got = g(a)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, np.asarray(a, np.int64) * 3 + 1)
    assert g(i32).dtype == np.int32
    s = tw.compile(lambda x: x * 2.0, target="cpu")
    _warm(s, np.array(3.0, np.float32))
    assert s(np.float32(3)) == 6.0 and s(np.array(4.0, np.float32)) == 8.0


@pytest.mark.skipif(not dispatch.enabled(), reason="native dispatch is off here")
def test_variable_buffers_never_reach_callers_and_reshaped_variables_are_rechecked():
    init = np.arange(4, dtype=np.float32)
    v = tw.Variable(init)

    @tw.compile(target="cpu")
    def step(d):
        v.assign_add(d)
        return v.read_value()

    d = np.ones(4, np.float32)
    _warm(step, d)
    np.testing.assert_array_equal(init, np.arange(4))  # the initial value was copied
    held, result = v.numpy(), step(d)
    kept_held, kept_result = held.copy(), result.copy()
    step(d)
    np.testing.assert_array_equal(held, kept_held)
    np.testing.assert_array_equal(result, kept_result)
    mine = np.zeros(4, np.float32)
    v.assign(mine)
    np.testing.assert_array_equal(step(d), np.ones(4))
    np.testing.assert_array_equal(mine, np.zeros(4))
    # a variable of unknown shape that changes shape between calls
    w = tw.Variable(np.zeros(3, np.float32), shape=[None])
    total = tw.compile(lambda x: tw.reduce_sum(w.read_value()) + x, target="cpu")
    x = np.ones((), np.float32)
    for _ in range(4):
        assert total(x) == 1.0
    w.assign(np.arange(5, dtype=np.float32))
    assert total(x) == 11.0
    w.assign(np.arange(3, dtype=np.float32))
    assert total(x) == 4.0 and total(x) == 4.0


# ------------------------------------------------------------------ native loops


def _grad_loop_bounded(x, n):
    _, a = tw.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, tw.sin(a) * 1.1 + a),
                         (tw.constant(0), x), maximum_iterations=4)
    return tw.gradients(tw.reduce_sum(a * a), [x])[0]


def _grad_two_loops(x, n, m):
    _, a = tw.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, tw.sin(a) + a * 0.5),
                         (tw.constant(0), x))
    _, b = tw.while_loop(lambda i, b: i < m, lambda i, b: (i + 1, b * tw.exp(-b * b)),
                         (tw.constant(0), a * 2.0))
    return tw.gradients(tw.reduce_sum(b * a), [x])[0]


def _grad_nested(x, n):
    def outer(i, acc):
        _, acc = tw.while_loop(lambda j, a: j < n - i,
                               lambda j, a: (j + 1, tw.sin(a) * 1.2 + x), (tw.constant(0), acc))
        return i + 1, acc * 0.7
    y = tw.while_loop(lambda i, a: i < n, outer, (tw.constant(0), x))[1]
    return tw.gradients(tw.reduce_sum(y), [x])[0]


def _grad_mixed(x, tab, n):
    """Stacks of i32 (gather indices), f64 and f32 values, of several shapes."""
    def body(i, idx, a, b, m):
        row = tw.gather(tab, idx)
        return (i + 1, (idx * 3 + 1) % 7, a * row + tw.cast(b, tw.float64),
                tw.cos(tw.cast(a, tw.float32)) * b, tw.tanh(m * tw.reshape(a, (1, 5))))
    _, _, a, b, m = tw.while_loop(lambda i, *_: i < n, body,
                                  (tw.constant(0), tw.constant(2), x, tw.cast(x, tw.float32),
                                   tab[:3]))
    loss = tw.reduce_sum(a) + tw.cast(tw.reduce_sum(b), tw.float64) + tw.reduce_sum(m)
    return tw.gradients(loss, [x, tab])


def _grad_data_cond(x):
    """The trip count follows the data (a float condition)."""
    _, a = tw.while_loop(lambda i, a: tw.reduce_sum(a * a) < 50.0,
                         lambda i, a: (i + 1, a * 1.3 + 0.1), (tw.constant(0), x))
    return tw.gradients(tw.reduce_sum(tw.sin(a)), [x])[0]


def _grad_loop_in_cond(x, p):
    y = tw.cond(p > 0, lambda: tw.while_loop(lambda i, a: i < 3,
                                             lambda i, a: (i + 1, tw.sin(a) + a),
                                             (tw.constant(0), x))[1],
                lambda: x * 2.0)
    return tw.gradients(tw.reduce_sum(y * y), [x])[0]


def _check_calls(fn, calls, rtol=1e-10, atol=1e-12):
    """cpu == reference for every call, with every earlier result held (and unchanged)
    while later calls reuse the step's workspace and arena; the step is native."""
    cpu, ref = tw.compile(fn, target="cpu"), tw.compile(fn, target="reference")
    held = []
    for args in calls:
        got, want = cpu(*args), ref(*args)
        got = list(got) if isinstance(got, (list, tuple)) else [got]
        want = list(want) if isinstance(want, (list, tuple)) else [want]
        for g, w in zip(got, want):
            assert np.asarray(g).shape == np.asarray(w).shape
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=str(args[1:]))
        held.append((got, [np.array(g, copy=True) for g in got]))
    for got, kept in held:
        for g, k in zip(got, kept):
            np.testing.assert_array_equal(g, k)
    exe = cpu.get_concrete_function(*calls[-1]).executable
    assert exe.native_step(list(calls[-1])) is not None, exe.native_reason


_RNG = np.random.default_rng(3)
_X = _RNG.standard_normal(5) * 0.5


@pytest.mark.parametrize("case", ["bounded", "two loops", "nested", "mixed", "data cond",
                                  "loop in cond"])
def test_loop_gradients_with_data_dependent_trip_counts_equal_the_reference(case):
    i32 = np.int32
    if case == "bounded":  # maximum_iterations cuts the loop (0, 1, 4 of 10)
        _check_calls(_grad_loop_bounded, [(_X, i32(n)) for n in (0, 1, 4, 10, 2)])
    elif case == "two loops":  # two stacks in one arena, either empty
        _check_calls(_grad_two_loops, [(_X, i32(n), i32(m))
                                       for n, m in ((0, 3), (3, 0), (40, 1), (1, 40), (2, 2))])
    elif case == "nested":
        _check_calls(_grad_nested, [(_X * 0.3, i32(n)) for n in (0, 1, 3, 6, 2)])
    elif case == "mixed":  # f32 parts: float32 rounding of native sin/cos vs NumPy's
        tab = _RNG.standard_normal((7, 5))
        _check_calls(_grad_mixed, [(_X, tab, i32(n)) for n in (0, 1, 5, 2)],
                     rtol=1e-5, atol=1e-6)
    elif case == "data cond":
        _check_calls(_grad_data_cond, [(_X,), (_X * 10,), (_X * 0.01,), (_X,)])
    else:
        _check_calls(_grad_loop_in_cond, [(_X, np.float64(p)) for p in (1.0, -1.0, 1.0)])


def test_loop_gradients_from_threads_each_get_their_own_arena():
    """Four threads call one stack-using step with trip counts that grow and shrink the
    arena (0 to 60 entries of 8 KiB): every result equals the reference's."""
    import threading

    def g(x, n):
        _, a = tw.while_loop(lambda i, a: i < n,
                             lambda i, a: (i + 1, tw.sin(a) * 1.1 + a), (tw.constant(0), x))
        return tw.gradients(tw.reduce_sum(a * a), [x])[0]

    cpu, ref = tw.compile(g, target="cpu"), tw.compile(g, target="reference")
    x = np.random.default_rng(0).standard_normal((16, 64))
    want = {n: ref(x, np.int32(n)) for n in (0, 1, 5, 30, 60)}
    cpu(x, np.int32(1))
    bad = []

    def work(seed):
        r = np.random.default_rng(seed)
        for _ in range(25):
            n = int(r.choice(list(want)))
            if not np.allclose(cpu(x, np.int32(n)), want[n], rtol=1e-10, atol=1e-12):
                bad.append(n)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_bounded_loop_gradients_on_the_cpu_target_match_finite_differences():
    def f(x):
        return tw.while_loop(lambda i, a: i < 7, lambda i, a: (i + 1, tw.sin(a) * 1.1 + a),
                             (tw.constant(0), x), maximum_iterations=3)[1]
    check_gradients(f, _X[:3], target="cpu")


# ------------------------------------------------------------------ eager tapes


def test_a_compiled_call_without_variables_is_differentiable_under_a_tape():
    """tape_calls.call_recorded: a call reading no trainable variable raised 'returned 2
    gradients for 1 inputs' (two arguments: a stacked gradient for the first)."""
    f1 = tw.compile(lambda x: x * x * 0.5)
    f2 = tw.compile(lambda x, z: x * z + x)
    x = tw.constant(np.array([3.0, -1.0]))
    z = tw.constant(np.array([2.0, 5.0]))
    with tw.GradientTape() as tape:
        tape.watch(x)
        tape.watch(z)
        y1 = f1(x)
        y2 = f2(x, z)
    gx, gz = tape.gradient(y2, [x, z])
    np.testing.assert_array_equal(np.asarray(gx), np.asarray(z) + 1.0)
    np.testing.assert_array_equal(np.asarray(gz), np.asarray(x))
    with tw.GradientTape() as tape:
        tape.watch(x)
        y1 = f1(x)
    np.testing.assert_array_equal(np.asarray(tape.gradient(y1, x)), np.asarray(x))


def test_a_persistent_tape_differentiates_a_compiled_call_twice():
    """tape._replay: the second gradient's re-trace reads the variable through the
    VarHandle the first one made (handles are made once per graph): 'no recorded value'."""
    w = tw.Variable(np.array([1.5, -0.5]))
    fp = lambda x: tw.reduce_sum(tw.sin(x * w) * x)  # noqa: E731
    x = tw.constant(np.array([0.3, 0.7]))
    grads = {}
    for name, fn in (("python", fp), ("compiled", tw.compile(fp))):
        with tw.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = fn(x)
            z = y * y
        first = tape.gradient(y, [x, w])
        second = tape.gradient(z, [x, w])
        again = tape.gradient(y, [x])
        grads[name] = [np.asarray(g) for g in (*first, *second, *again)]
    for g, want in zip(grads["compiled"], grads["python"]):
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-14)


def test_nested_tapes_give_second_derivatives_through_a_compiled_call():
    w = tw.Variable(np.array([1.5, -0.5]))
    f = tw.compile(lambda x: tw.reduce_sum(tw.sin(x * w) * x))
    xv, wv = np.array([0.3, 0.7]), np.array([1.5, -0.5])
    x = tw.constant(xv)
    with tw.GradientTape() as outer:
        outer.watch(x)
        with tw.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    h = outer.gradient(g, x)
    np.testing.assert_allclose(np.asarray(g), np.cos(xv * wv) * wv * xv + np.sin(xv * wv),
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(h), -np.sin(xv * wv) * wv ** 2 * xv
                               + 2 * np.cos(xv * wv) * wv, rtol=1e-12)


def test_a_variable_assigned_after_a_recorded_compiled_call_is_an_error_not_a_wrong_gradient():
    """tape_calls: the gradient re-traces the call and reads its variables anew, so
    dy/dx of y = x * v * x recorded with v = 2, then v.assign(5), came out 30, not 12."""
    v = tw.Variable(np.float64(2.0), name="scale")
    f = tw.compile(lambda x: x * v * x)
    x = tw.constant(np.float64(3.0))
    with tw.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
    assert float(np.asarray(tape.gradient(y, x))) == 12.0
    v.assign(5.0)
    # (the variable's name is unique in the process: scale, scale_1, ... in a whole suite)
    with pytest.raises(tw.errors.UnimplementedError,
                       match=r"'scale(_\d+)?:0' it reads was assigned after"):
        tape.gradient(y, x)
    v.assign(2.0)  # the values of the call again: its gradient
    assert float(np.asarray(tape.gradient(y, [x, v])[1])) == 9.0
    # a non-trainable variable counts too
    frozen = tw.Variable(np.float64(2.0), trainable=False, name="frozen")
    g = tw.compile(lambda x: x * frozen * x)
    with tw.GradientTape() as tape:
        tape.watch(x)
        y = g(x)
    frozen.assign(7.0)
    with pytest.raises(tw.errors.UnimplementedError, match=r"'frozen(_\d+)?:0'"):
        tape.gradient(y, x)


def test_a_closed_over_python_value_changed_after_the_call_is_refused():
    """tape_calls re-runs the Python function for the gradient: a closed-over Python value
    changed since the call was read anew (the call ran the trace of the old value), and
    the gradient was another function's (30 instead of 12), silently. Now a fresh trace
    that differs from the call's is an error naming the function."""
    scale = [2.0]
    f = tw.compile(lambda x: x * scale[0] * x)
    x = tw.constant(np.float64(3.0))
    f(x)  # traced with scale 2
    with tw.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)  # the cached trace: 18
    assert float(np.asarray(y)) == 18.0
    assert float(np.asarray(tape.gradient(y, x))) == 12.0  # unchanged: the call's gradient
    scale[0] = 5.0
    with pytest.raises(tw.errors.UnimplementedError, match="tracing it again now gives"):
        tape.gradient(y, x)


def test_arrays_without_a_tensorweave_dtype_are_refused_naming_the_argument_and_line():
    """function._classify: a big-endian or object array gave 'NumPy dtype >f4 has no
    tensorweave equivalent' without the argument, the function or the caller's line."""
    f = tw.compile(lambda x, y: x + y, target="cpu")
    ok = np.ones(3, np.float32)
    for bad, dt in ((np.array([1, None]), "object"),):
        with pytest.raises(tw.errors.DTypeError) as info:
            f(ok, bad)
        msg = str(info.value)
        assert f"argument 'y': NumPy dtype {dt}" in msg and "test_review_dispatch_loops.py" in msg
    np.testing.assert_array_equal(f(ok, ok), ok * 2)  # (native byte order: fine)
    # a big-endian array is converted by value (tests/test_v1_gaps2_big_endian.py)
    np.testing.assert_array_equal(f(ok, np.arange(3, dtype=">f4")), ok + np.arange(3))
