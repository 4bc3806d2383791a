"""Differential tests: random small programs (`tests/differential.py`) run on the cpu
target must give what the reference target (the NumPy oracle) gives.

Each op has its own tests; these check ops *combined*, where the cpu target fuses
elementwise/broadcast/reduction clusters, splits work over threads, plans buffers
(in-place reuse, the caching allocator for results of 1 MiB or more, donation), builds
native loops, and the passes fold constants and merge common subexpressions. Programs mix
elementwise ops with broadcasting (scalars, size-1 dims, other ranks), casts between
float32/float64/int32/bool, reductions over random axes with keepdims, matmul and batch
matmul, layout ops (transpose, reshape, concat, slice, strided slice, gather, one_hot,
tile, pad ...), softmax, cumsum and comparisons, on C-ordered, Fortran-ordered and strided
NumPy arguments, 0-d and empty tensors, and now and then base shapes of more than 64K
elements. One test draws NaN, +-inf and -0.0 among the float arguments' values. Other
programs add tw.cond / tw.while_loop / tw.scan, tw.Variable reads and assignments, and
gradients of a random scalar loss. The same programs also run eagerly (op by op, with
tw.GradientTape for gradients) and in a tf.compat.v1 Graph on placeholders run by a
Session, against the same reference results and bounds.

Tolerances come from the program itself (see `tests/differential.py`): values computed
without rounding (and every int or bool) must be bitwise equal, the others are within an
error bound propagated op by op from one rounding (a few ulps for transcendentals) per
op, per dtype.

Every test here is derandomized, so CI sees the same programs each run. For a longer
local hunt, set ``TW_FUZZ_EXAMPLES`` (examples per test, e.g. 2000) and optionally
``TW_FUZZ_RANDOM=1`` (fresh programs each run instead of the fixed ones):

    TW_FUZZ_EXAMPLES=2000 TW_FUZZ_RANDOM=1 python -m pytest tests/test_differential.py

The gpu target's check runs a few tiny programs in numba's CUDA simulator, in a process
of its own (`test_gpu_target_matches_the_reference_in_the_simulator`).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.compiler import pipeline
from tensorweave.frontend import nest
from tests import differential as D

_RANDOM = os.environ.get("TW_FUZZ_RANDOM", "") not in ("", "0")


def _examples(n: int):
    """Hypothesis settings: `n` examples (or TW_FUZZ_EXAMPLES), derandomized for CI."""
    n = int(os.environ.get("TW_FUZZ_EXAMPLES", n))
    return settings(max_examples=n, deadline=None, derandomize=not _RANDOM, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def _call(prog: D.Program, target: str, args=None, calls: int = 1, **kw):
    """`prog` compiled for `target` with fresh variables, called `calls` times: the
    function, each call's outputs and the variables' values after the last call."""
    prog.make_vars()
    fn = tw.compile(prog, target=target, **kw)
    args = prog.args if args is None else args
    outs = [D.leaves(fn(*args)) for _ in range(calls)]
    return fn, outs, [v.numpy() for v in prog.variables]


def _bitwise(got, want, what: str, prog: D.Program) -> None:
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes(), \
            f"{what}: output {k}\n{prog.text()}"


# ---------------------------------------------------------------- straight-line programs

@_examples(80)
@given(prog=D.programs(max_ops=14), seed=st.integers(0, 2 ** 31 - 1))
def test_cpu_matches_the_reference(prog: D.Program, seed: int) -> None:
    """One program on both targets; then on the cpu target: the same call again
    (bitwise equal: no state, no thread-count dependence), other values of the same
    shapes while the caller holds the first result and views of the others (which must
    not change), every
    argument donated, and one argument passed twice (aliasing) with one donated."""
    tol = prog.tolerances()
    _, (ref,), _ = _call(prog, "reference")
    fn, (first,), _ = _call(prog, "cpu")
    D.compare(first, ref, tol, "cpu vs reference", prog)
    held = [o.copy() for o in first]
    for k, o in enumerate(first):  # results are the caller's own arrays
        assert not any(np.may_share_memory(o, a) for a in prog.args + first[:k]), \
            f"output {k} shares memory with an argument or another output\n{prog.text()}"
    # the caller keeps views of the first results but drops the results themselves
    views = [o.reshape(-1)[1:] for o in first[1:]]
    first = first[:1]

    other = prog.fresh_args(seed)
    second = D.leaves(fn(*other))
    D.compare(second, D.run(prog, "reference", args=other), tol,
              "cpu vs reference, other argument values", prog)
    _bitwise(first, held, "a result the caller holds changed in a later call", prog)
    _bitwise(views, [h.reshape(-1)[1:] for h in held[1:]],
             "a view of a result the caller holds changed in a later call", prog)
    del second  # its buffers may be reused now
    _bitwise(D.leaves(fn(*prog.args)), held, "same call, other bits", prog)

    if prog.args:
        donating = tw.compile(prog, target="cpu",
                              donate_argnums=tuple(range(len(prog.args))))
        for _ in range(2):
            got = D.leaves(donating(*[a.copy(order="K") for a in prog.args]))
            _bitwise(got, held, "donated arguments", prog)

    same = [i for i, a in enumerate(prog.args)
            if a.dtype.kind == "f" and a.shape == prog.args[0].shape
            and a.dtype == prog.args[0].dtype]
    if len(same) > 1:
        shared = [prog.args[same[0]] if i in same else a for i, a in enumerate(prog.args)]
        want = D.run(prog, "reference", args=shared)
        owned = [a.copy() for a in shared]
        for i in same[1:]:
            owned[i] = owned[same[0]]
        got = D.leaves(tw.compile(prog, target="cpu", donate_argnums=same[0])(*owned))
        D.compare(got, want, tol, "one array passed for several arguments, donated", prog)


@_examples(40)
@given(prog=D.programs(max_ops=12, big=False, specials=True), seed=st.integers(0, 2 ** 31 - 1))
def test_nan_inf_and_signed_zeros(prog: D.Program, seed: int) -> None:
    """Float arguments and constants with NaN, +-inf and -0.0 among their values: the
    cpu target's vector code (max/min and their reductions, argmax, relu, clip, sort of
    NaN in any lane), its constant folding and fusion give the reference's NaNs and
    infinities at the same places, and its finite results within the usual bounds."""
    tol = prog.tolerances()
    D.compare(D.run(prog, "cpu"), D.run(prog, "reference"), tol, "cpu vs reference", prog)
    other = prog.fresh_args(seed)
    D.compare(D.run(prog, "cpu", args=other), D.run(prog, "reference", args=other), tol,
              "cpu vs reference, other argument values", prog)


@_examples(8)
@given(prog=D.programs(max_ops=10, big=True), threads=st.sampled_from([1, 3, 5]))
def test_big_programs_do_not_depend_on_the_thread_count(prog: D.Program, threads: int
                                                         ) -> None:
    """Base shapes of more than 64K elements (threaded, vectorized and split loops; results
    of 1 MiB or more from the caching allocator) match the reference, views of them the
    caller keeps survive the next call, and another TW_NUM_THREADS gives the same bits."""
    _, (ref,), _ = _call(prog, "reference")
    fn, (cpu,), _ = _call(prog, "cpu")
    D.compare(cpu, ref, prog.tolerances(), "cpu vs reference", prog)
    # views kept, results dropped: the result pool must not hand their blocks out again
    # (the biggest output also returned alone: a bare array, not in a structure)
    views = [o.reshape(-1)[1:] for o in cpu]
    cpu = [o.copy() for o in cpu]
    fn(*prog.fresh_args(threads))
    _bitwise(views, [o.reshape(-1)[1:] for o in cpu], "a held view of a big result", prog)
    k = int(np.argmax([o.size for o in cpu]))
    alone = tw.compile(lambda *xs: nest.flatten(prog(*xs))[0][k], target="cpu")
    view = np.asarray(alone(*prog.args)).reshape(-1)[1:]
    alone(*prog.fresh_args(threads + 1))
    _bitwise([view], [cpu[k].reshape(-1)[1:]], "a held view of a big bare result", prog)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TW_NUM_THREADS", str(threads))
        _, (other,), _ = _call(prog, "cpu")
    _bitwise(other, cpu, f"TW_NUM_THREADS={threads}", prog)


@_examples(16)
@given(prog=D.programs(max_ops=12, big=False))
def test_simplification_passes_do_not_change_results(prog: D.Program) -> None:
    """Constant folding and CSE off (the `optimized` stage keeps shape inference and
    DCE only): both targets give what they give with them on."""
    tol = prog.tolerances()
    _, (ref,), _ = _call(prog, "reference")
    _, (cpu,), _ = _call(prog, "cpu")
    stages = dict(pipeline._STAGES)
    from tensorweave.passes import constant_folding, cse
    plain = [p for p in stages["optimized"] if p not in (constant_folding.fold_constants,
                                                          cse.cse)]
    assert len(plain) == len(stages["optimized"]) - 2
    with pytest.MonkeyPatch.context() as mp:
        # (a step record keyed by the stages' names alone was used for the new pipeline:
        # the key names every pass now, plan_cache.record_key)
        mp.setitem(pipeline._STAGES, "optimized", plain)
        for target, want in (("reference", ref), ("cpu", cpu)):
            _, (got,), _ = _call(prog, target)
            D.compare(got, want, tol, f"{target}: without constant folding and CSE", prog)


@_examples(12)
@given(prog=D.programs(max_ops=10, mode="generic"),
       sizes=st.permutations([2, 3, 4, 5, 6, 7]), seed=st.integers(0, 2 ** 31 - 1))
def test_calls_with_other_shapes(prog: D.Program, sizes, seed: int) -> None:
    """One compiled function called with other shapes (a retrace and a new native step),
    then with the first ones again: each call matches the reference and the first
    call's results, still held, are unchanged."""
    tol = prog.tolerances()
    fn = tw.compile(prog, target="cpu")
    first = D.leaves(fn(*prog.args))
    held = [o.copy() for o in first]
    D.compare(first, D.run(prog, "reference"), tol, "first shapes", prog)
    other = prog.remapped(dict(zip([2, 3, 4, 5], sizes)), seed)
    D.compare(D.leaves(fn(*other)), D.run(prog, "reference", args=other),
              tol, "other shapes", prog)
    _bitwise(D.leaves(fn(*prog.args)), held, "first shapes again", prog)
    _bitwise(first, held, "a held result changed", prog)


# ------------------------------------------------- control flow, variables, gradients

@_examples(30)
@given(prog=D.programs(max_ops=10, mode="control", big=False))
def test_control_flow_programs(prog: D.Program) -> None:
    """Programs with tw.cond, tw.while_loop (run-time trip counts, maximum_iterations)
    and tw.scan whose regions capture outer values."""
    _, (ref,), _ = _call(prog, "reference")
    _, (cpu,), _ = _call(prog, "cpu")
    D.compare(cpu, ref, prog.tolerances(), "cpu vs reference", prog)


@_examples(30)
@given(prog=D.programs(max_ops=10, mode="vars", big=False))
def test_variable_programs(prog: D.Program) -> None:
    """Reads, assigns and assign_adds of several variables (reads after assignments in
    the same step; reads and assign_adds inside tw.cond branches and tw.while_loop
    bodies), called twice: every output of both calls and the variables' final
    values are bitwise equal to the reference's."""
    _, ref, ref_vars = _call(prog, "reference", calls=2)
    _, cpu, cpu_vars = _call(prog, "cpu", calls=2)
    for k in range(2):
        D.compare(cpu[k], ref[k], prog.tolerances(), f"call {k}", prog)
    D.compare(cpu_vars, ref_vars, [0.0] * len(ref_vars), "variables after two calls", prog)


@_examples(20)
@given(prog=D.programs(max_ops=9, mode="grad", big=False), seed=st.integers(0, 99))
def test_gradients_of_random_programs(prog: D.Program, seed: int) -> None:
    """tw.gradients of a random weighted sum of a float64 program's outputs (control
    flow included) on both targets. The gradient graph is the same on both, so they
    differ only by the rounding of its ops: 1e-9 relative to the largest gradient, 1e-4
    where the program passes through float32 (through a scan of two products and a tanh
    per step, both targets' float32 gradients are up to 1.6e-5 off the float64 ones)."""
    grads = D.gradient_program(prog, seed)
    ref = [np.asarray(g) for g in tw.compile(grads, target="reference")(*prog.args)]
    cpu = [np.asarray(g) for g in tw.compile(grads, target="cpu")(*prog.args)]
    tol = 1e-4 if any(v.dtype == D.F32 for v in prog.vals) else 1e-9
    assert len(cpu) == len(ref)
    for c, r in zip(cpu, ref):
        assert c.dtype == r.dtype and c.shape == r.shape
        scale = max(1.0, float(np.max(np.abs(r)))) if r.size else 1.0
        np.testing.assert_allclose(c, r, rtol=tol, atol=tol * scale, equal_nan=True,
                                   err_msg=prog.text())


def test_gradient_tape_on_a_program() -> None:
    """GradientTape over an eager run of a fixed control-flow program agrees with
    tw.gradients compiled for the cpu target."""
    rng = np.random.default_rng(0)
    x = rng.integers(-8, 9, size=(3, 4)) / 4
    w = rng.integers(-8, 9, size=(4, 4)) / 8

    def f(x, w):
        h = tw.scan(lambda a, r: tw.tanh(tw.matmul(a[None], w)[0] + r), x)
        y = tw.cond(tw.reduce_sum(h) > 0, lambda: h * h, lambda: tw.sin(h))
        return tw.reduce_sum(tw.nn.softmax(y, axis=-1) * x)

    xt, wt = tw.constant(x), tw.constant(w)
    with tw.GradientTape() as tape:
        tape.watch(xt)
        tape.watch(wt)
        loss = f(xt, wt)
    eager = [np.asarray(g) for g in tape.gradient(loss, [xt, wt])]
    for target in ("reference", "cpu"):
        traced = tw.compile(lambda x, w: tw.gradients(f(x, w), [x, w]), target=target)(x, w)
        for e, t in zip(eager, traced):
            np.testing.assert_allclose(np.asarray(t), e, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_two_outputs_of_one_value_are_distinct_arrays(target: str) -> None:
    """``(-x, -x)`` (one node after CSE) returns two arrays: writing one must not change
    the other, as with NumPy (the cpu target copies; the reference target returned the
    same array twice)."""
    a, b = tw.compile(lambda x: (-x, -x), target=target)(np.ones(2, np.float32))
    a += 1
    np.testing.assert_array_equal(b, [-1.0, -1.0])
    graph = tf.Graph()
    with graph.as_default():  # v1 fetches of one value too
        x = tf.placeholder(tf.float32, [2])
        y = -x
    with tf.Session(graph=graph) as session:
        c, d = session.run([y, y], {x: np.ones(2, np.float32)})
    c += 1
    np.testing.assert_array_equal(d, [-1.0, -1.0])


# ----------------------------------------------------- eager and v1 Session legs

@_examples(25)
@given(prog=D.programs(max_ops=10, mode="control", big=False),
       seed=st.integers(0, 2 ** 31 - 1))
def test_eager_matches_the_reference(prog: D.Program, seed: int) -> None:
    """The program run eagerly (op by op on EagerTensors, tw.cond/while_loop/scan
    executed in Python, no passes) gives what the compiled reference target gives,
    within the program's own bounds, on its arguments and on others."""
    tol = prog.tolerances()
    prog.make_vars()
    D.compare(D.run_eager(prog), D.run(prog, "reference"), tol, "eager vs reference", prog)
    other = prog.fresh_args(seed)
    D.compare(D.run_eager(prog, other), D.run(prog, "reference", args=other), tol,
              "eager vs reference, other argument values", prog)


@_examples(15)
@given(prog=D.programs(max_ops=10, mode="vars", big=False))
def test_eager_variable_programs(prog: D.Program) -> None:
    """Variable programs run eagerly twice: outputs and final variable values bitwise
    equal to the compiled reference target's."""
    _, ref, ref_vars = _call(prog, "reference", calls=2)
    prog.make_vars()
    eager = [D.run_eager(prog) for _ in range(2)]
    for k in range(2):
        D.compare(eager[k], ref[k], prog.tolerances(), f"eager call {k}", prog)
    D.compare([v.numpy() for v in prog.variables], ref_vars, [0.0] * len(ref_vars),
              "variables after two eager calls", prog)


@_examples(12)
@given(prog=D.programs(max_ops=9, mode="grad", big=False), seed=st.integers(0, 99))
def test_eager_gradients_match_compiled_gradients(prog: D.Program, seed: int) -> None:
    """tw.GradientTape over the program run eagerly gives tw.gradients' values on the
    reference target (the same tolerances as `test_gradients_of_random_programs`)."""
    prog.make_vars()
    eager = D.eager_gradients(prog, seed)
    ref = [np.asarray(g) for g in tw.compile(D.gradient_program(prog, seed),
                                             target="reference")(*prog.args)]
    tol = 1e-4 if any(v.dtype == D.F32 for v in prog.vals) else 1e-9
    assert len(eager) == len(ref)
    for k, (e, r) in enumerate(zip(eager, ref)):
        assert e.dtype == r.dtype and e.shape == r.shape, \
            f"gradient {k}: {e.dtype}{e.shape} != {r.dtype}{r.shape}\n{prog.text()}"
        scale = max(1.0, float(np.max(np.abs(r)))) if r.size else 1.0
        np.testing.assert_allclose(e, r, rtol=tol, atol=tol * scale, equal_nan=True,
                                   err_msg=f"gradient {k}\n{prog.text()}")


@_examples(20)
@given(prog=D.programs(max_ops=10, mode="control", big=False),
       unknown=st.booleans(), seed=st.integers(0, 2 ** 31 - 1))
def test_v1_session_matches_the_reference(prog: D.Program, unknown: bool, seed: int
                                          ) -> None:
    """The program built in a tf.compat.v1 Graph on placeholders (fully known shapes,
    or every dim None) and run by a Session with feed_dict, twice with other values in
    between: the reference target's results within the program's bounds."""
    tol = prog.tolerances()
    other = prog.fresh_args(seed)
    try:
        (got,), _ = D.run_session(prog, unknown_dims=unknown)
    except tw.errors.ShapeError as e:
        # a loop variable of known shape [1] that a body broadcasts with a [?] value:
        # the loop needs shape_invariants, as in TensorFlow 1 (not a wrong answer)
        assume(not (unknown and "shape_invariants" in str(e)))
        raise
    D.compare(got, D.run(prog, "reference"), tol, "v1 Session vs reference", prog)
    (got,), _ = D.run_session(prog, args=other, unknown_dims=unknown)
    D.compare(got, D.run(prog, "reference", args=other), tol,
              "v1 Session vs reference, other argument values", prog)


# (no v1 leg for variable programs: a v1 Graph has no automatic control dependencies,
# so a read and an assignment of one variable in one Session.run run in either order,
# as in TensorFlow 1; those programs assume the order of the Python code)


# ------------------------------------------------------------------------------ gpu

@_examples(3)
@given(prog=D.programs(max_ops=6, big=False))
def _gpu_case(prog: D.Program) -> None:
    """(Run in the simulator's process by the test below.)"""
    want = D.run(prog, "reference")
    D.compare(D.run(prog, "gpu"), want, prog.tolerances(), "gpu vs reference", prog)


@_examples(2)
@given(prog=D.programs(max_ops=6, big=False, specials=True))
def _gpu_specials_case(prog: D.Program) -> None:
    """(Run in the simulator's process by the test below: NaN, +-inf and -0.0.)"""
    want = D.run(prog, "reference")
    D.compare(D.run(prog, "gpu"), want, prog.tolerances(), "gpu vs reference", prog)


def test_gpu_target_matches_the_reference_in_the_simulator() -> None:
    """A few tiny programs on the gpu target in numba's CUDA simulator (a process of its
    own: numba picks the simulator when it is first imported), some with NaN, +-inf and
    -0.0 among their values."""
    pytest.importorskip("numba.cuda")
    if os.environ.get("TW_FUZZ_IN_SIMULATOR"):
        _gpu_case()
        _gpu_specials_case()
        return
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", TW_FUZZ_IN_SIMULATOR="1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-W",
         "ignore::RuntimeWarning",
         f"{__file__}::test_gpu_target_matches_the_reference_in_the_simulator"],
        cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "1 passed" in proc.stdout, \
        (proc.stdout + proc.stderr)[-6000:]
