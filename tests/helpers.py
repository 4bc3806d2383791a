"""Shared checks for op tests: run a tensorweave function eagerly and traced, compare it
with a NumPy reference, and insist on the exact dtype and shape."""

from __future__ import annotations

import contextlib
import inspect
import os
import threading
from collections.abc import Callable

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.frontend import nest

# Every op test runs traced on each target. The cpu target's results meet the same
# tolerances as the reference's: its float32 exp is within 1-2 ulp and tanh and erf within
# 5 and 5.6 ulp (rational approximations: tests/test_tanh_rational.py, test_erf_rational.py),
# sums accumulate in float64, and FMA contraction changes a result by at most one rounding,
# so no op needs a looser float32 tolerance there (checked on the whole op suite).
TARGETS = ("reference", "cpu")


def tolerance(dtype) -> dict:
    """Comparison tolerances for results of `dtype`."""
    d = np.dtype(dtype)
    if d == np.float16 or d.name == "bfloat16":
        return {"rtol": 2e-2, "atol": 2e-2}
    if d == np.float32:
        return {"rtol": 1e-5, "atol": 1e-6}
    return {"rtol": 1e-12, "atol": 1e-12}


def assert_same(actual, expected, **tol) -> None:
    """Exact dtype and shape; values equal within tolerance (NaNs match NaNs)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind in "fc" or expected.dtype.name == "bfloat16":
        t = tolerance(expected.dtype)
        t.update(tol)
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                                   equal_nan=True, **t)
    else:
        np.testing.assert_array_equal(actual, expected)


def line_of(fn: Callable, text: str) -> str:
    """``'FILE.py:N)'`` for the first line of `fn`'s source that contains `text`: how an
    error message ends the user's location ``(FILE.py:N)``, so ``line_of(...) in msg``
    does not take line 12 for line 123."""
    lines, start = inspect.getsourcelines(fn)
    offset = next(i for i, line in enumerate(lines) if text in line)
    return f"{os.path.basename(inspect.getsourcefile(fn))}:{start + offset})"


def check_against_numpy(tw_fn: Callable, np_fn: Callable, *arrays, **tol) -> None:
    """`tw_fn` on `arrays` (traced on every target, and eagerly) matches `np_fn`."""
    expected = np_fn(*arrays)
    eager = tw_fn(*[tw.constant(a) for a in arrays])
    _compare(eager, expected, tol)
    reference = None
    for target in TARGETS:
        traced = tw.compile(tw_fn, target=target)(*arrays)
        _compare(traced, expected, tol)
        reference = traced if target == "reference" else reference
    _compare_bitwise(run_across_devices(tw_fn, arrays, 2), reference)


@contextlib.contextmanager
def logical_cpus(n: int):
    """Run the block with `n` logical CPU devices in this process."""
    tw.config.set_logical_devices("CPU", n)
    try:
        yield
    finally:
        tw.config.set_logical_devices("CPU", 1)


def run_across_devices(tw_fn: Callable, arrays, n: int):
    """`tw_fn` traced so that its inputs pass through CPU:0, the function itself runs on
    CPU:n-1 and its outputs come back to CPU:0: every value crosses devices through
    Send/Recv on the reference target's dataflow executor."""
    def spread(*xs):
        with tw.device("/cpu:0"):
            xs = [tw.identity(x) for x in xs]
        with tw.device(f"/cpu:{n - 1}"):
            out = tw_fn(*xs)
        with tw.device("/cpu:0"):
            leaves, tree = nest.flatten(out)
            return nest.unflatten(tree, [tw.identity(o) for o in leaves])

    with logical_cpus(n):
        return tw.compile(spread, target="reference")(*arrays)


def _compare_bitwise(got, want) -> None:
    got_leaves, _ = nest.flatten(got)
    want_leaves, _ = nest.flatten(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        assert g.tobytes() == w.tobytes(), "results differ across devices"


def _compare(got, expected, tol) -> None:
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_same(np.asarray(g), e, **tol)
    else:
        assert_same(np.asarray(got), expected, **tol)


def check_gradients(fn: Callable, *arrays, argnums=None, eps: float = 1e-6,
                    rtol: float = 1e-5, atol: float = 1e-7, seed: int = 0,
                    target: str | None = None) -> None:
    """Symbolic gradients of `fn` match central finite differences in float64.

    The scalar checked is ``sum(fn(*arrays) * W)`` for a fixed random W, so every element
    of the Jacobian contributes. `argnums` defaults to every floating-point argument.
    `target` compiles the function, its gradient and the finite differences there
    (default: the suite's default target)."""
    arrays = [np.asarray(a) for a in arrays]
    if argnums is None:
        argnums = tuple(i for i, a in enumerate(arrays) if a.dtype.kind == "f")
    out = np.asarray(tw.compile(fn, target=target)(*arrays))
    weights = np.random.default_rng(seed).normal(size=out.shape).astype(out.dtype)

    def loss(*args):
        return tw.reduce_sum(fn(*args) * weights)

    grad = tw.grad(loss, argnums=tuple(argnums))
    if target is not None:
        grad = tw.compile(grad, target=target)
    symbolic = grad(*arrays)
    forward = tw.compile(loss, target=target)
    for k, i in enumerate(argnums):
        x = arrays[i]
        numeric = np.zeros_like(x, dtype=np.float64)
        for idx in np.ndindex(x.shape):
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            numeric[idx] = (float(forward(*plus)) - float(forward(*minus))) / (2 * eps)
        got = np.asarray(symbolic[k])
        assert got.shape == x.shape and got.dtype == x.dtype, \
            f"gradient of argument {i}: {got.dtype}{got.shape}, argument is {x.dtype}{x.shape}"
        np.testing.assert_allclose(got, numeric, rtol=rtol, atol=atol,
                                   err_msg=f"gradient of argument {i}")


def within(seconds: float, fn: Callable[[], object]) -> object:
    """Run `fn` on a thread; fail the test if it has not finished after `seconds`."""
    box: dict[str, object] = {}

    def body() -> None:
        try:
            box["result"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised on the test's thread
            box["error"] = e

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        pytest.fail(f"did not finish within {seconds} s (deadlock?)")
    if "error" in box:
        raise box["error"]
    return box.get("result")


def has_c_compiler() -> bool:
    """Whether `tensorweave aot` finds a C compiler to link libraries with."""
    from tensorweave.errors import CompileError
    from tensorweave.targets.cpu.aot import c_compiler
    try:
        c_compiler()
    except CompileError:
        return False
    return True


needs_c_compiler = pytest.mark.skipif(not has_c_compiler(), reason="needs a C compiler")


def call_library(lib, args: list[np.ndarray]) -> tuple[int, list[np.ndarray]]:
    """Call an AOT library's NAME_run through ctypes: (its status, its results, which
    start as NaN so that an unwritten one shows)."""
    import ctypes
    run = getattr(ctypes.CDLL(lib.library), f"{lib.name}_run")
    run.restype = ctypes.c_int
    results = [np.full(v.type.shape, np.nan, v.type.dtype.np) for v in lib.plan.graph.results]
    arg_ptrs = (ctypes.c_void_p * len(args))(*[a.ctypes.data for a in args])
    res_ptrs = (ctypes.c_void_p * len(results))(*[r.ctypes.data for r in results])
    return run(arg_ptrs, res_ptrs), results
