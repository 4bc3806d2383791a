"""Loops as native code on the cpu target, gradients included (issue 13, W5): the
forward loop's pushes and the backward loop's pops of a loop gradient's stack run inside
the step's native function (`targets/cpu/stacks.py`), loop bodies read and assign
variables through the step's variable table, and ResourceGather reads rows of a variable
in place. Every graph here must plan as one native step without callbacks, and its
results must equal the reference target's: zero iterations, unbounded loops whose stacks
grow, nested loops (a stack pushed on a stack), conds inside loops, variables read,
assigned and snapshotted around loops, and an LSTM language model's training step."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.errors import UnimplementedError
from tensorweave.targets.cpu.step import emit_step, plan_step, uses_stacks
from tests.helpers import check_gradients


def _step(fn, *args):
    """The native step of the cpu-compiled `fn` for `args` (fails when it fell back)."""
    exe = fn.get_concrete_function(*args).executable
    step = exe.native_step(list(args))
    assert step is not None, exe.native_reason
    return step


def _all_actions(plan):
    for a in plan.actions:
        yield a
        for r in a.regions:
            yield from _all_actions(r)


def _assert_native_with_stacks(fn, *args):
    plan = _step(fn, *args).plan
    kinds = [(a.kind, a.node.op if a.node is not None else None) for a in _all_actions(plan)]
    assert not [k for k in kinds if k[0] == "callback"], kinds
    assert ("stack", "StackPush") in kinds and ("stack", "StackPop") in kinds, kinds
    assert uses_stacks(plan)
    return plan


def _close(got, want, rtol=1e-10, atol=1e-12):
    got = got if isinstance(got, (tuple, list)) else [got]
    want = want if isinstance(want, (tuple, list)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


def _both(fn):
    return tw.compile(fn, target="cpu"), tw.compile(fn, target="reference")


# --------------------------------------------------------------- loop gradients' stacks

def _rnn_loss(xs, h0, w):
    hs = tw.scan(lambda h, x: tw.tanh(tw.matmul(h, w) + x), xs, initializer=h0)
    return tw.reduce_sum(hs * hs)


@settings(max_examples=6, deadline=None)
@given(t=st.integers(1, 6), b=st.integers(1, 3), h=st.integers(1, 5), seed=st.integers(0, 99))
def test_scan_gradient_is_one_native_step_equal_to_the_reference(t, b, h, seed):
    rng = np.random.default_rng(seed)
    xs, h0 = rng.standard_normal((t, b, h)), rng.standard_normal((b, h))
    w = rng.standard_normal((h, h)) * 0.5
    grad = lambda xs, h0, w: tw.gradients(_rnn_loss(xs, h0, w), [xs, h0, w])  # noqa: E731
    cpu, ref = _both(grad)
    _close(cpu(xs, h0, w), ref(xs, h0, w))
    _assert_native_with_stacks(cpu, xs, h0, w)


def _power_loop(x, n):
    """x -> sin(x * 1.1) + x, n times (n a run-time tensor: no maximum_iterations, so
    the history stack is unbounded)."""
    return tw.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, tw.sin(a * 1.1) + a),
                         (tw.constant(0), x))[1]


def test_unbounded_loop_gradients_grow_their_stack_zero_iterations_included():
    grad = lambda x, n: tw.gradients(tw.reduce_sum(_power_loop(x, n)), [x])[0]  # noqa: E731
    cpu, ref = _both(grad)
    x = np.random.default_rng(0).standard_normal((64, 128))  # 64 KiB entries
    # 0: no push, no pop; 40 (> 16 first entries, > one 1 MiB chunk): the stack moves and
    # the arena takes several chunks, which the next call replaces by one; then smaller
    # and bigger again on the same workspace
    for n in (0, 1, 40, 3, 70, 40):
        got = cpu(x, np.int32(n))
        _close(got, ref(x, np.int32(n)))
        if n == 0:
            np.testing.assert_array_equal(got, np.ones_like(x))
    _assert_native_with_stacks(cpu, x, np.int32(3))


def test_loop_gradient_on_the_cpu_target_matches_finite_differences():
    x = np.random.default_rng(1).standard_normal(4)
    check_gradients(lambda x: _power_loop(x, tw.constant(5)), x, target="cpu")
    check_gradients(lambda x: _power_loop(x, tw.constant(0)), x, target="cpu")


def test_nested_loop_gradients_push_a_stack_on_a_stack():
    def f(x):
        def outer(i, acc):
            _, acc = tw.while_loop(lambda j, a: j < i, lambda j, a: (j + 1, tw.sin(a) * 1.2 + x),
                                   (tw.constant(0), acc))
            return i + 1, acc * acc * 0.5
        return tw.reduce_sum(tw.while_loop(lambda i, a: i < 4, outer, (tw.constant(0), x))[1])

    grad = lambda x: tw.gradients(f(x), [x])[0]  # noqa: E731
    cpu, ref = _both(grad)
    x = np.random.default_rng(2).standard_normal(5) * 0.3
    _close(cpu(x), ref(x))
    plan = _assert_native_with_stacks(cpu, x)
    # the inner loop's stack is made inside the outer body, once per outer iteration
    assert sum(1 for a in _all_actions(plan) if a.kind == "stack" and a.node.op == "Stack") >= 2
    check_gradients(f, x, target="cpu")


def test_a_cond_inside_a_loop_is_differentiated_right():
    # (not natively yet: the cond's gradient saves values through outputs of unknown
    # shape, a saved value in one branch and an empty stand-in in the other)
    def f(x):
        def body(i, a):
            return i + 1, tw.cond(tw.reduce_sum(a) > 0, lambda: tw.tanh(a) * 2.0,
                                  lambda: a * a - 0.5)
        return tw.reduce_sum(tw.while_loop(lambda i, a: i < 6, body, (tw.constant(0), x))[1])

    grad = lambda x: tw.gradients(f(x), [x])[0]  # noqa: E731
    cpu, ref = _both(grad)
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal(3)
        _close(cpu(x), ref(x))
    exe = cpu.get_concrete_function(x).executable
    assert exe.native_step([x]) is None and "regions" in exe.native_reason


def test_a_cond_inside_a_loop_runs_natively_without_gradients():
    def f(x, n):
        def body(i, a):
            return i + 1, tw.cond(tw.reduce_sum(a) > 0, lambda: tw.tanh(a) * 2.0,
                                  lambda: a * a - 0.5)
        return tw.while_loop(lambda i, a: i < n, body, (tw.constant(0), x))[1]

    cpu, ref = _both(f)
    x = np.random.default_rng(7).standard_normal(3)
    for n in (0, 5):
        _close(cpu(x, np.int32(n)), ref(x, np.int32(n)))
    assert not [a for a in _all_actions(_step(cpu, x, np.int32(1)).plan)
                if a.kind == "callback"]


def test_ahead_of_time_libraries_refuse_stacks_clearly():
    grad = tw.compile(lambda x, n: tw.gradients(tw.reduce_sum(_power_loop(x, n)), [x])[0],
                      target="cpu")
    x = np.ones(3)
    plan = plan_step(_step(grad, x, np.int32(2)).plan.graph)
    with pytest.raises(UnimplementedError, match="ahead-of-time"):
        emit_step(plan, gemm_mode="generated", allow_callbacks=False)


# -------------------------------------------------------------------- variables in loops

def _vars(*arrays):
    return [tw.Variable(np.array(a)) for a in arrays]


def test_loop_bodies_read_and_assign_variables_natively():
    def make(target):
        v, w = _vars(np.ones(3), np.full(3, 0.5))

        @tw.compile(target=target)
        def f(x, n):
            def body(i, a):
                v.assign_add(a * 0.1)          # assigned, then read back in the same body
                w.assign(w * 0.9 + v)
                return i + 1, a + v.read_value() * w
            i, a = tw.while_loop(lambda i, a: i < n, body, (tw.constant(0), x))
            return a, v.read_value(), w.read_value()
        return f, v, w

    (cpu, v1, w1), (ref, v2, w2) = make("cpu"), make("reference")
    x = np.random.default_rng(3).standard_normal(3)
    for n in (0, 4, 1):
        _close(cpu(x, np.int32(n)), ref(x, np.int32(n)))
        _close([v1.numpy(), w1.numpy()], [v2.numpy(), w2.numpy()])
    plan = _step(cpu, x, np.int32(2)).plan
    assert len(plan.var_names) == 2
    assert not [a for a in _all_actions(plan) if a.kind == "callback"]


def test_a_read_before_a_loop_that_assigns_keeps_the_old_value():
    def make(target):
        (v,) = _vars(np.arange(4.0))

        def body(i):
            v.assign(v * 2.0)
            return (i + 1,)

        @tw.compile(target=target)
        def f(n):
            before = v.read_value()
            tw.while_loop(lambda i: i < n, body, (tw.constant(0),))
            return before, v.read_value()
        return f

    cpu, ref = make("cpu"), make("reference")
    for n in (0, 3):
        got, want = cpu(np.int32(n)), ref(np.int32(n))
        _close(got, want)
    assert not np.array_equal(got[0], got[1])
    _step(cpu, np.int32(1))


def test_a_variable_first_assigned_inside_a_loop_falls_back_and_stays_right():
    def make(target):
        v = tw.Variable(np.zeros(2))

        @tw.compile(target=target)
        def f(x):
            def body(i):
                v.assign(x)
                return (i + 1,)
            tw.while_loop(lambda i: i < 2, body, (tw.constant(0),))
            return x * 2.0
        return f, v

    (cpu, v1), (ref, v2) = make("cpu"), make("reference")
    x = np.array([1.0, 2.0])
    _close(cpu(x), ref(x))
    _close(v1.numpy(), v2.numpy())


def test_loop_gradient_with_respect_to_a_variable_read_in_the_body():
    def make(target):
        (w,) = _vars(np.random.default_rng(4).standard_normal((3, 3)) * 0.4)

        @tw.compile(target=target)
        def step(xs):
            hs = tw.scan(lambda h, x: tw.tanh(tw.matmul(h, w.read_value()) + x), xs,
                         initializer=tw.zeros([2, 3], tw.float64))
            loss = tw.reduce_sum(hs * hs)
            (g,) = tw.gradients(loss, [w])
            w.assign_sub(0.1 * g)
            return loss
        return step, w

    (cpu, w1), (ref, w2) = make("cpu"), make("reference")
    xs = np.random.default_rng(5).standard_normal((5, 2, 3))
    for _ in range(2):
        _close(cpu(xs), ref(xs))
        _close(w1.numpy(), w2.numpy())
    _assert_native_with_stacks(cpu, xs)


# ------------------------------------------------------------------ the W5 model, small

def _lstm_step(params, lr):
    E, Wih, Whh, b, Wo, bo = vs = [tw.Variable(p) for p in params]
    H = Whh.shape[0]

    def loss_fn(tok, tgt):
        T, B = tok.shape[1], tok.shape[0]
        emb = tw.gather(E, tw.reshape(tw.transpose(tok, [1, 0]), [T * B]))
        xw = tw.reshape(tw.matmul(emb, Wih) + b, [T, B, 4 * H])

        def cell(carry, xw_t):
            h, c = carry
            g = xw_t + tw.matmul(h, Whh)
            i, f = tw.sigmoid(g[:, :H]), tw.sigmoid(g[:, H:2 * H])
            gg, o = tw.tanh(g[:, 2 * H:3 * H]), tw.sigmoid(g[:, 3 * H:])
            c = f * c + i * gg
            return o * tw.tanh(c), c

        z = tw.zeros([B, H], params[0].dtype)
        hs, _ = tw.scan(cell, xw, initializer=(z, z))
        logits = tw.matmul(tw.reshape(hs, [T * B, H]), Wo) + bo
        return tw.reduce_mean(tw.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tw.reshape(tw.transpose(tgt, [1, 0]), [T * B]), logits=logits))

    def step(tok, tgt):
        loss = loss_fn(tok, tgt)
        for v, g in zip(vs, tw.gradients(loss, vs)):
            v.assign_sub(lr * g)
        return loss
    return step, vs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lstm_language_model_training_step_is_native_and_equals_the_reference(dtype):
    V, E, H, T, B = 50, 8, 6, 5, 3
    rng = np.random.default_rng(6)
    params = [rng.uniform(-0.3, 0.3, s).astype(dtype) for s in
              [(V, E), (E, 4 * H), (H, 4 * H), (4 * H,), (H, V), (V,)]]
    tok, tgt = (rng.integers(0, V, (B, T)).astype(np.int32) for _ in range(2))
    fn_cpu, vs_cpu = _lstm_step(params, 0.5)
    fn_ref, vs_ref = _lstm_step(params, 0.5)
    cpu, ref = tw.compile(fn_cpu, target="cpu"), tw.compile(fn_ref, target="reference")
    tol = dict(rtol=2e-5, atol=1e-6) if dtype == np.float32 else {}
    for _ in range(3):
        _close(cpu(tok, tgt), ref(tok, tgt), **tol)
        for a, b in zip(vs_cpu, vs_ref):
            _close(a.numpy(), b.numpy(), **tol)
    plan = _assert_native_with_stacks(cpu, tok, tgt)
    assert len(plan.var_names) == 6
    # the embedding's rows are gathered from the variable's buffer by the native Gather
    assert any(a.kind == "native" and a.node.op == "Gather" and a.ins[0].kind == "var"
               for a in plan.actions)


def test_resource_gather_out_of_range_names_the_op_and_line():
    v = tw.Variable(np.arange(6.0).reshape(3, 2))
    f = tw.compile(lambda i: tw.gather(v, i) * 2.0, target="cpu")
    np.testing.assert_array_equal(f(np.array([2, 0], np.int32)), [[8.0, 10.0], [0.0, 2.0]])
    _step(f, np.array([2, 0], np.int32))
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"(?s)Gather.*test_native_loops"):
        f(np.array([3], np.int32))


# ------------------------------------------------- loop variables kept in one buffer

def _loop_actions(plan):
    return [a for a in _all_actions(plan) if a.kind == "region" and a.node.op == "While"]


def test_scan_loops_keep_invariants_and_row_updates_in_place():
    def grad(xs, h0, w):
        return tw.gradients(_rnn_loss(xs, h0, w), [xs, h0, w])

    rng = np.random.default_rng(8)
    xs, h0, w = rng.standard_normal((7, 2, 4)), rng.standard_normal((2, 4)), rng.standard_normal((4, 4))
    cpu, ref = _both(grad)
    _close(cpu(xs, h0, w), ref(xs, h0, w))
    loops = _loop_actions(_step(cpu, xs, h0, w).plan)
    kinds = {how for a in loops for how in a.in_place.values()}
    # the weights and the sequence are invariants, the outputs' rows are written in
    # place, and the backward loop adds each step's gradient row into the sequence's
    assert {"invariant", "update", "row_add", "outer_acc"} <= kinds, [a.in_place for a in loops]
    inner = {a.kind for a in _all_actions(_step(cpu, xs, h0, w).plan)}
    assert {"row_update", "row_add"} <= inner


def _rows_loop(x, rows, n, read_after):
    """A loop writing row i of `rows` and summing `rows` before or after the write."""
    from tensorweave.frontend.building import apply_op1

    def body(i, r, acc):
        new = apply_op1("DynamicUpdateRow", [r, i % n, x * tw.cast(i + 1, x.dtype)])
        seen = new if read_after else r
        return i + 1, new, acc + tw.reduce_sum(seen * seen)
    return tw.while_loop(lambda i, r, acc: i < 2 * n, body,
                         (tw.constant(0), rows, tw.constant(0.0, x.dtype)))[1:]


@pytest.mark.parametrize("read_after", [False, True])
def test_row_updates_in_place_keep_the_order_of_reads(read_after):
    cpu, ref = _both(lambda x, rows: _rows_loop(x, rows, 3, read_after))
    x, rows = np.arange(4.0), np.ones((3, 4))
    _close(cpu(x, rows), ref(x, rows))


def test_an_in_place_row_update_out_of_range_names_the_op():
    from tensorweave.frontend.building import apply_op1

    def f(x, rows, k):
        return tw.while_loop(
            lambda i, r: i < 2,
            lambda i, r: (i + 1, apply_op1("DynamicUpdateRow", [r, i + k, x])),
            (tw.constant(0), rows))[1]

    cpu = tw.compile(f, target="cpu")
    x, rows = np.ones(2), np.zeros((3, 2))
    np.testing.assert_array_equal(cpu(x, rows, np.int32(1)), [[0, 0], [1, 1], [1, 1]])
    loop = _loop_actions(_step(cpu, x, rows, np.int32(1)).plan)[0]
    assert loop.in_place.get(1) == "update"
    with pytest.raises(tw.errors.InvalidArgumentError,
                       match=r"(?s)DynamicUpdateRow.*test_native_loops.*not in \[0, 3\)"):
        cpu(x, rows, np.int32(2))


def test_in_place_segment_sums_drop_negative_ids_and_refuse_big_ones():
    def f(x, acc, k):
        def body(i, a):
            return i + 1, a + tw.unsorted_segment_sum(x * tw.cast(i + 1, x.dtype), i + k, 3)
        return tw.while_loop(lambda i, a: i < 2, body, (tw.constant(0), acc))[1]

    cpu, ref = _both(f)
    x, acc = np.array([[1.0, 2.0]]), np.ones((3, 1, 2))
    for k in (-1, -2, 0, 1):
        _close(cpu(x, acc, np.int32(k)), ref(x, acc, np.int32(k)))
    loop = _loop_actions(_step(cpu, x, acc, np.int32(0)).plan)[0]
    assert loop.in_place.get(1) == "row_add"
    with pytest.raises(tw.errors.InvalidArgumentError,
                       match=r"(?s)UnsortedSegmentSum.*test_native_loops.*segment id"):
        cpu(x, acc, np.int32(2))


def test_a_workspace_header_without_an_arena_becomes_an_empty_arena():
    # (a workspace made elsewhere, e.g. np.empty by another entry point: the arena's
    # magic is missing, so the step starts an arena instead of trusting the bytes)
    grad = tw.compile(lambda x, n: tw.gradients(tw.reduce_sum(_power_loop(x, n)), [x])[0],
                      target="cpu")
    x = np.random.default_rng(9).standard_normal((8, 8))
    want = tw.compile(lambda x, n: tw.gradients(tw.reduce_sum(_power_loop(x, n)), [x])[0],
                      target="reference")(x, np.int32(30))
    step = _step(grad, x, np.int32(30))
    _close(step([x, np.array(30, np.int32)])[0], want)
    for ws in step._workspaces:
        ws[:64] = np.frombuffer(b"\xab" * 64, np.uint8)
    _close(step([x, np.array(30, np.int32)])[0], want)
    _close(step([x, np.array(30, np.int32)])[0], want)


@pytest.mark.parametrize("bounded", [True, False])
def test_weight_gradients_of_a_loop_sum_outer_products_after_the_loop(bounded):
    # bounded (maximum_iterations): the backward loop appends h and dg to histories and
    # one GEMM after the loop sums their products; unbounded: one product per iteration
    def loss(x, w, n):
        def body(i, h):
            return i + 1, tw.tanh(tw.matmul(h, w) + 0.1)
        h = tw.while_loop(lambda i, h: i < n, body, (tw.constant(0), x),
                          maximum_iterations=6 if bounded else None)[1]
        return tw.reduce_sum(h * h)

    grad = lambda x, w, n: tw.gradients(loss(x, w, n), [x, w])  # noqa: E731
    cpu, ref = _both(grad)
    rng = np.random.default_rng(10)
    x, w = rng.standard_normal((3, 4)), rng.standard_normal((4, 4)) * 0.5
    for n in (0, 1, 4, 6, 9):  # (9: the bounded loop stops at 6)
        _close(cpu(x, w, np.int32(n)), ref(x, w, np.int32(n)))
    loops = _loop_actions(_step(cpu, x, w, np.int32(2)).plan)
    kinds = {how for a in loops for how in a.in_place.values()}
    assert ("outer_acc" in kinds) == bounded, [a.in_place for a in loops]
    check_gradients(lambda x, w: loss(x, w, tw.constant(3)), x, w, target="cpu")


def test_lstm_gradients_are_identical_on_one_and_two_threads(monkeypatch):
    # (sizes where the logits' products and the fused loops are split over threads; the
    # loop's weight gradient is one serial GEMM: nothing depends on the thread count)
    V, E, H, T, B = 2048, 32, 64, 4, 32
    rng = np.random.default_rng(11)
    params = [rng.uniform(-0.2, 0.2, s).astype(np.float32) for s in
              [(V, E), (E, 4 * H), (H, 4 * H), (4 * H,), (H, V), (V,)]]
    tok, tgt = (rng.integers(0, V, (B, T)).astype(np.int32) for _ in range(2))
    results = []
    for threads in (1, 2):
        monkeypatch.setenv("TW_NUM_THREADS", str(threads))
        fn, vs = _lstm_step(params, 0.5)
        step = tw.compile(fn, target="cpu")
        loss = step(tok, tgt)
        _assert_native_with_stacks(step, tok, tgt)
        results.append([loss, *(v.numpy() for v in vs)])
    for one, two in zip(*results):
        np.testing.assert_array_equal(one, two)


def test_scaled_variable_updates_skip_the_product_and_keep_its_bits():
    def make(target):
        v, w, u = _vars(np.linspace(-1.0, 1.0, 12).reshape(3, 4).astype(np.float32),
                        np.arange(5.0, dtype=np.float32), np.ones(2, np.float32))

        @tw.compile(target=target)
        def step(x, c):
            v.assign_sub(0.1 * x)             # constant scale, folded into the update
            w.assign_add(tw.reduce_sum(x, axis=0)[:1] * c + tw.zeros([5]))  # not c * x
            shown = c * tw.ones([2])          # also returned: computed on its own
            u.assign_sub(shown)
            return shown
        return step, (v, w, u)

    (cpu, vs_cpu), (ref, vs_ref) = make("cpu"), make("reference")
    rng = np.random.default_rng(12)
    for _ in range(2):
        x, c = rng.standard_normal((3, 4)).astype(np.float32), np.float32(rng.standard_normal())
        np.testing.assert_array_equal(cpu(x, c), ref(x, c))
        for a, b in zip(vs_cpu, vs_ref):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    plan = _step(cpu, x, c).plan
    scaled = [a for a in plan.actions if a.kind == "assign" and len(a.ins) == 2]
    assert len(scaled) == 1 and scaled[0].node.op == "AssignSubVariable"


def test_a_cond_reading_a_weight_gradient_accumulator_keeps_it_per_iteration():
    # (a hand-written loop whose condition reads its own outer-product accumulator: the
    # products must be added every iteration, not after the loop)
    def f(p, g):
        def body(i, acc):
            return i + 1, acc + tw.matmul(p * tw.cast(i + 1, p.dtype), g, transpose_a=True)
        return tw.while_loop(lambda i, acc: tw.reduce_sum(acc) < 40.0, body,
                             (tw.constant(0), tw.zeros([3, 2], tw.float64)),
                             maximum_iterations=10)

    cpu, ref = _both(f)
    p, g = np.ones((4, 3)), np.full((4, 2), 0.5)
    _close(cpu(p, g), ref(p, g))
    loop = _loop_actions(_step(cpu, p, g).plan)[0]
    assert "outer_acc" not in loop.in_place.values()


@settings(max_examples=8, deadline=None)
@given(rows=st.integers(0, 12), n=st.integers(1, 7), width=st.integers(1, 5),
       lr=st.sampled_from([0.1, 0.5, -0.25]), seed=st.integers(0, 99))
def test_sparse_segment_sum_updates_change_only_named_rows_bitwise(rows, n, width, lr, seed):
    # var -= lr * unsorted_segment_sum(data, ids, n) with repeated and negative ids: with
    # lr > 0 only the named rows are touched (sums in data order, as the segment sum);
    # lr < 0 takes the dense path; both bitwise the reference, -0.0 entries included
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((rows, width)).astype(np.float32)
    ids = rng.integers(-2, n, rows).astype(np.int32)
    init = rng.standard_normal((n, width)).astype(np.float32)
    init[0, 0] = -0.0

    def make(target):
        (v,) = _vars(init)

        @tw.compile(target=target)
        def step(data, ids):
            v.assign_sub(lr * tw.unsorted_segment_sum(data, ids, n))
            return tw.reduce_sum(data)
        return step, v

    (cpu, v1), (ref, v2) = make("cpu"), make("reference")
    for _ in range(2):
        np.testing.assert_array_equal(cpu(data, ids), ref(data, ids))
        np.testing.assert_array_equal(v1.numpy(), v2.numpy())
        assert np.signbit(v1.numpy()[0, 0]) == np.signbit(v2.numpy()[0, 0])
    kinds = [a.kind for a in _step(cpu, data, ids).plan.actions]
    assert ("sparse_update" in kinds) == (lr > 0), kinds


def test_a_sparse_update_with_an_id_out_of_range_names_the_segment_sum():
    (v,) = _vars(np.zeros((3, 2), np.float32))
    @tw.compile(target="cpu")
    def f(d, i):
        v.assign_sub(0.5 * tw.unsorted_segment_sum(d, i, 3))
        return d * 1.0

    d = np.ones((2, 2), np.float32)
    f(d, np.array([2, 2], np.int32))
    np.testing.assert_array_equal(v.numpy(), [[0, 0], [0, 0], [-1, -1]])
    assert "sparse_update" in [a.kind for a in _step(f, d, np.array([0, 1], np.int32)).plan.actions]
    with pytest.raises(tw.errors.InvalidArgumentError,
                       match=r"(?s)UnsortedSegmentSum.*test_native_loops.*segment id"):
        f(d, np.array([0, 3], np.int32))


def test_a_segment_sum_also_returned_keeps_the_dense_update():
    def make(target):
        (v,) = _vars(np.ones((4, 2), np.float32))

        @tw.compile(target=target)
        def f(d, i):
            g = tw.unsorted_segment_sum(d, i, 4)
            v.assign_sub(0.5 * g)
            return g
        return f, v

    (cpu, v1), (ref, v2) = make("cpu"), make("reference")
    d, i = np.arange(6, dtype=np.float32).reshape(3, 2), np.array([1, 3, 1], np.int32)
    np.testing.assert_array_equal(cpu(d, i), ref(d, i))
    np.testing.assert_array_equal(v1.numpy(), v2.numpy())
    assert "sparse_update" not in [a.kind for a in _step(cpu, d, i).plan.actions]


def test_branches_read_and_assign_variables_natively():
    def make(target):
        v, w = _vars(np.arange(3.0), np.ones(3))

        @tw.compile(target=target)
        def f(x, n):
            before = v.read_value()

            def body(i, a):
                def grow():
                    v.assign_add(a)
                    return a * w.read_value()

                def shrink():
                    w.assign(w * 0.5)
                    return a - v.read_value()
                return i + 1, tw.cond(tw.reduce_sum(a) > 0, grow, shrink)
            a = tw.while_loop(lambda i, a: i < n, body, (tw.constant(0), x))[1]
            return a, before, v.read_value(), w.read_value()
        return f, (v, w)

    (cpu, vs1), (ref, vs2) = make("cpu"), make("reference")
    for x, n in ((np.array([1.0, -2.0, 0.5]), 3), (np.array([-1.0, -2.0, 0.5]), 4),
                 (np.array([0.1, 0.2, 0.3]), 0)):
        _close(cpu(x, np.int32(n)), ref(x, np.int32(n)))
        _close([v.numpy() for v in vs1], [v.numpy() for v in vs2])
    plan = _step(cpu, x, np.int32(1)).plan
    assert not [a for a in _all_actions(plan) if a.kind == "callback"]
    assert {a.node.op for a in _all_actions(plan) if a.kind == "region"} == {"While", "If"}
